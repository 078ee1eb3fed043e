package engine_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/whatsapp"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

// TestAgainstSandbox runs the engine with the real client against the
// sandbox under trouble (throttling limit, transient and permanent errors):
// every row ends settled, none is accepted twice, no second of traffic
// goes over the number's limit.
func TestAgainstSandbox(t *testing.T) {
	const rows, rate = 400, 200
	cp := checkpoint(rows, "1000001", "1000002")
	sb, cfg := sandboxConfig(t, cp, sandbox.Config{Seed: 9, Rate: rate, PairInterval: -1, Latency: 20 * time.Millisecond,
		Jitter: 10 * time.Millisecond, TransientRate: 0.05, PermanentRate: 0.03}, rate)
	cfg.BackoffBase, cfg.BackoffMax = time.Millisecond, 5*time.Millisecond // real time here
	if err := engine.New(cfg).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := cp.Counts()
	stats := sb.Stats()
	if c.Sent+c.Failed != rows || c.Sent != stats.Accepted {
		t.Fatalf("counts %+v, sandbox accepted %d", c, stats.Accepted)
	}
	if c.Failed == 0 || stats.Errors[131026] == 0 {
		t.Fatalf("no permanent failures recorded (counts %+v, errors %v): the test proves little", c, stats.Errors)
	}
	if stats.Duplicates != 0 {
		t.Fatalf("%d duplicates", stats.Duplicates)
	}
	for n, w := range stats.MaxPerSecond {
		if w > rate {
			t.Fatalf("number %s: %d accepted in one second, limit %d", n, w, rate)
		}
	}
}

// TestLearnsWhatANumberAccepts: told 100/s, one number allows 40/s: it is
// paced at about 40/s after its first throttles, the log says so once, and
// Stats names it; the other number is never throttled nor named.
func TestLearnsWhatANumberAccepts(t *testing.T) {
	const rows, rate = 600, 100
	cp := checkpoint(rows, "1000001", "1000002")
	sb, cfg := sandboxConfig(t, cp, sandbox.Config{Seed: 9, Rates: map[string]float64{"1000001": 1000, "1000002": 40}, PairInterval: -1,
		Latency: 20 * time.Millisecond, Jitter: 5 * time.Millisecond}, rate)
	var logs bytes.Buffer
	cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
	sent := &departures{}
	cfg.Observer = sent
	eng := engine.New(cfg)
	if err := eng.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := cp.Counts(); c.Sent != rows {
		t.Fatalf("counts %+v", c)
	}
	// Once it has learned, the slow number keeps about its 40/s: the
	// median gap between its last 150 departures is under 1/32 s (the old
	// slow-down paced it at a few a second). A median, so that a stall of
	// this machine changes nothing.
	if gap := medianGap(sent.a, "1000002", 150); gap > time.Second/32 {
		t.Errorf("the slow number's last sends left %v apart (median), want at most %v: it crawls", gap, time.Second/32)
	}
	stats := sb.Stats()
	if stats.Throttled == 0 || stats.Throttled > 60 {
		t.Errorf("%d throttled", stats.Throttled)
	}
	learned := eng.Stats().Learned
	if l, ok := learned["1000002"]; !ok || l < 38 || l > 41 || len(learned) != 1 {
		t.Errorf("learned %v, want 1000002 at about 40", learned)
	}
	if n := strings.Count(logs.String(), "number 1000002 accepts about"); n != 1 {
		t.Errorf("the log says it %d times:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "number 1000001 accepts") {
		t.Errorf("the fast number named:\n%s", logs.String())
	}
}

// sandboxConfig serves a sandbox of sc for the test and returns it with an
// engine config for cp that sends to it from 1000001 and 1000002 at rate,
// its concurrency following the latency.
func sandboxConfig(t *testing.T, cp engine.Checkpoint, sc sandbox.Config, rate float64) (*sandbox.Server, engine.Config) {
	t.Helper()
	sb := sandbox.New(sc)
	srv := httptest.NewServer(sb)
	t.Cleanup(func() { srv.Close(); sb.Close() })
	client := &whatsapp.Client{BaseURL: srv.URL, Version: "v23.0", Token: "t", TemplateName: "welcome", TemplateLang: "en_US", Timeout: 5 * time.Second, HTTP: srv.Client()}
	cfg := config(cp, client, "1000001", "1000002")
	cfg.Rate, cfg.Concurrency = rate, 0
	return sb, cfg
}

// medianGap is the median time between the last n departures of sender.
func medianGap(as []engine.Attempt, sender string, n int) time.Duration {
	var at []time.Time
	for _, a := range as {
		if a.Sender == sender {
			at = append(at, a.At)
		}
	}
	slices.SortFunc(at, time.Time.Compare)
	if len(at) > n {
		at = at[len(at)-n:]
	}
	var gaps []time.Duration
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, at[i].Sub(at[i-1]))
	}
	if len(gaps) == 0 {
		return 0
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2]
}
