package engine_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/sandbox"
	"github.com/bulksend/bulksend/internal/whatsapp"
)

// TestAgainstSandbox runs the engine with the real client against the
// sandbox under trouble (throttling limit, transient and permanent errors):
// every row ends settled, none is accepted twice, no second of traffic
// goes over the number's limit.
func TestAgainstSandbox(t *testing.T) {
	const rows, rate = 400, 200
	cp := checkpoint(rows, "1000001", "1000002")
	sb := sandbox.New(sandbox.Config{Seed: 9, Rate: rate, PairInterval: -1, Latency: 20 * time.Millisecond,
		Jitter: 10 * time.Millisecond, TransientRate: 0.05, PermanentRate: 0.03})
	srv := httptest.NewServer(sb)
	defer srv.Close()
	defer sb.Close()
	client := &whatsapp.Client{BaseURL: srv.URL, Version: "v23.0", Token: "t", Timeout: 5 * time.Second, HTTP: srv.Client()}
	cfg := config(cp, client, "1000001", "1000002")
	cfg.Rate, cfg.Concurrency = rate, 0
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
