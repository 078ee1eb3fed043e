package metrics

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/pace"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

// checkpoint is a SQLite checkpoint of n rows spread over senders.
func checkpoint(t *testing.T, n int, senders ...string) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "campaign.bulksend.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	i := 0
	_, err = st.Import(context.Background(), func() (store.Row, error) {
		if i == n {
			return store.Row{}, io.EOF
		}
		i++
		return store.Row{Row: int64(i), Line: i + 1, Phone: csvin.SampleNumber(i), Sender: senders[i%len(senders)], Params: []string{"Ana", "X1"}}, nil
	}, func() store.Settings { return store.Settings{CampaignID: "c1"} })
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestAfterSandboxCampaign runs the engine with the real client against
// the sandbox under trouble (one number throttled, transient and permanent
// errors, late answers) with the metrics attached, and checks every metric
// against what the sandbox answered, the checkpoint recorded and the
// engine counted.
func TestAfterSandboxCampaign(t *testing.T) {
	const rows, rate = 200, 100
	const slow, fast = "1000001", "1000002" // slow: the sandbox allows it 40/s
	st := checkpoint(t, rows, slow, fast)
	sb := sandbox.New(sandbox.Config{Seed: 3, Rate: -1, Rates: map[string]float64{slow: 40}, PairInterval: -1,
		Latency: 20 * time.Millisecond, Jitter: 10 * time.Millisecond,
		TransientRate: 0.05, PermanentRate: 0.03, LateRate: 0.04, LateDelay: 5 * time.Second})
	srv := httptest.NewServer(sb)
	defer srv.Close()
	defer sb.Close()
	client := &whatsapp.Client{BaseURL: srv.URL, Version: "v23.0", Token: "t", TemplateName: "welcome", TemplateLang: "en_US", Timeout: time.Second, HTTP: srv.Client()}

	m := New("c1", "whatsapp")
	senders := []string{slow, fast}
	m.Configure(senders, rate)
	m.CountRows(st.Counts)
	cfg := engine.Config{Checkpoint: st, Sender: client, Senders: senders, CampaignID: "c1",
		Rate: rate, MaxAttempts: 5, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, Observer: m}
	eng := engine.New(cfg)
	m.Watch(eng)
	began := time.Now()
	m.Began(began)
	if _, err := st.BeginRun(context.Background(), store.Run{StartedAt: began, Senders: senders, Rate: rate}); err != nil {
		t.Fatal(err)
	}
	if err := eng.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	m.Ended(ended)

	stats := sb.Stats()
	counts, err := st.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if counts.Failed == 0 || counts.InDoubt == 0 || stats.Throttled == 0 || eng.Stats().Retries == 0 {
		t.Fatalf("the campaign met too little trouble to prove much: counts %+v, sandbox %+v, engine %+v", counts, stats, eng.Stats())
	}

	t.Run("names and series", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			n    int
		}{
			{Sends, 2 * 10}, // each sender × accepted and the nine classes
			{Latency, 2}, {LimiterWait, 2}, {ConfiguredRate, 2}, {CurrentRate, 2},
			{Rows, len(campaign.Statuses)}, {RowsInDoubt, 1}, {Retries, 1},
			{LastSuccess, 1}, {RunStart, 1}, {RunEnd, 1},
			{Answers, len(stats.Errors) + 1}, // every code the sandbox answered, and 0
		} {
			if got := testutil.CollectAndCount(m.reg, tc.name); got != tc.n {
				t.Errorf("%s: %d series, want %d", tc.name, got, tc.n)
			}
		}
		problems, err := promlint.NewWithMetricFamilies(gather(t, m)).Lint()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	})

	t.Run("sends by sender and outcome", func(t *testing.T) {
		sum := func(outcome string) float64 {
			return testutil.ToFloat64(m.sends.WithLabelValues(slow, outcome)) + testutil.ToFloat64(m.sends.WithLabelValues(fast, outcome))
		}
		for _, tc := range []struct {
			outcome string
			want    int64
		}{
			{"accepted", counts.Sent},
			{"accepted", stats.Accepted - stats.Late},
			{"in_doubt", counts.InDoubt},
			{"in_doubt", stats.Late},
			{"permanent", stats.Errors[131026]},
			{"transient", stats.Errors[131000] + stats.Errors[131016] + stats.Errors[2]},
			{"throttled", stats.Throttled},
			{"pair-limited", 0},
			{"never_left", 0},
		} {
			if got := sum(tc.outcome); got != float64(tc.want) {
				t.Errorf("%s{outcome=%q}: %v, want %d", Sends, tc.outcome, got, tc.want)
			}
		}
		if got := testutil.ToFloat64(m.sends.WithLabelValues(fast, "throttled")); got != 0 {
			t.Errorf("the unthrottled number has %v throttled sends", got)
		}
	})

	t.Run("answers by code", func(t *testing.T) {
		if got := testutil.ToFloat64(m.answers.WithLabelValues("0")); got != float64(stats.Accepted-stats.Late) {
			t.Errorf(`%s{code="0"}: %v, want %d accepted with an answer`, Answers, got, stats.Accepted-stats.Late)
		}
		for code, n := range stats.Errors {
			if got := testutil.ToFloat64(m.answers.WithLabelValues(strconv.Itoa(code))); got != float64(n) {
				t.Errorf("%s{code=%q}: %v, want %d", Answers, strconv.Itoa(code), got, n)
			}
		}
	})

	t.Run("latency and waits against the attempts record", func(t *testing.T) {
		attempts := map[string]int{}
		latency := map[string]time.Duration{}
		if err := st.EachAttempt(context.Background(), func(a store.AttemptRow) error {
			attempts[a.Sender]++
			latency[a.Sender] += a.Latency
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, s := range senders {
			h := histogram(t, m, Latency, s)
			if int(h.GetSampleCount()) != attempts[s] {
				t.Errorf("%s{sender=%s}: %d samples, the attempts record has %d", Latency, s, h.GetSampleCount(), attempts[s])
			}
			// The record keeps microseconds.
			if d := math.Abs(h.GetSampleSum() - latency[s].Seconds()); d > float64(attempts[s])*1e-6 {
				t.Errorf("%s{sender=%s}: sum %.6f s, the attempts record %.6f s", Latency, s, h.GetSampleSum(), latency[s].Seconds())
			}
			if w := histogram(t, m, LimiterWait, s); int(w.GetSampleCount()) < attempts[s] {
				t.Errorf("%s{sender=%s}: %d waits for %d attempts", LimiterWait, s, w.GetSampleCount(), attempts[s])
			}
		}
		// The throttled number waited longer for its pacer.
		if slowWait, fastWait := histogram(t, m, LimiterWait, slow), histogram(t, m, LimiterWait, fast); slowWait.GetSampleSum()/float64(slowWait.GetSampleCount()) <= fastWait.GetSampleSum()/float64(fastWait.GetSampleCount()) {
			t.Errorf("mean wait of the throttled number %.4f s, of the other %.4f s", slowWait.GetSampleSum()/float64(slowWait.GetSampleCount()), fastWait.GetSampleSum()/float64(fastWait.GetSampleCount()))
		}
	})

	t.Run("rates", func(t *testing.T) {
		want := fmt.Sprintf(`
# HELP bulksend_configured_rate_per_second The rate a run was given per sender, per second (SMS: message parts); +Inf: unlimited.
# TYPE bulksend_configured_rate_per_second gauge
bulksend_configured_rate_per_second{campaign="c1",channel="whatsapp",sender="1000001"} %d
bulksend_configured_rate_per_second{campaign="c1",channel="whatsapp",sender="1000002"} %d
`, rate, rate)
		if err := testutil.CollectAndCompare(m.state, strings.NewReader(want), ConfiguredRate); err != nil {
			t.Error(err)
		}
		current := gauges(t, m, CurrentRate)
		if got := current[fast]; got != pace.Paced(rate) {
			t.Errorf("%s{sender=%s}: %v, want %v (never throttled)", CurrentRate, fast, got, pace.Paced(rate))
		}
		if got := current[slow]; got >= pace.Paced(rate) {
			t.Errorf("%s{sender=%s}: %v, want it slowed below %v", CurrentRate, slow, got, pace.Paced(rate))
		}
	})

	t.Run("rows, retries and timestamps", func(t *testing.T) {
		var want strings.Builder
		want.WriteString("# HELP bulksend_rows Rows of the campaign by state (pending, sending, in_doubt, sent, delivered, read, failed, skipped), as the checkpoint holds them.\n# TYPE bulksend_rows gauge\n")
		for _, s := range campaign.Statuses {
			fmt.Fprintf(&want, "bulksend_rows{campaign=\"c1\",channel=\"whatsapp\",state=%q} %d\n", s, count(counts, s))
		}
		fmt.Fprintf(&want, "# HELP bulksend_rows_in_doubt Rows whose request may have reached the provider with no answer: settle them with bulksend reconcile.\n# TYPE bulksend_rows_in_doubt gauge\nbulksend_rows_in_doubt{campaign=\"c1\",channel=\"whatsapp\"} %d\n", counts.InDoubt)
		fmt.Fprintf(&want, "# HELP bulksend_retries_scheduled_total Retries this run scheduled: transient errors, pair limits, throttled SMS.\n# TYPE bulksend_retries_scheduled_total counter\nbulksend_retries_scheduled_total{campaign=\"c1\",channel=\"whatsapp\"} %d\n", eng.Stats().Retries)
		if err := testutil.CollectAndCompare(m.state, strings.NewReader(want.String()), Rows, RowsInDoubt, Retries); err != nil {
			t.Error(err)
		}
		g := gauges(t, m, LastSuccess, RunStart, RunEnd)
		last, ok, err := st.LastSent(context.Background())
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		// The checkpoint keeps milliseconds.
		if d := g[LastSuccess] - float64(last.UnixMilli())/1e3; d < 0 || d >= 1e-3 {
			t.Errorf("%s %.6f, the checkpoint's last sent_at %.3f", LastSuccess, g[LastSuccess], float64(last.UnixMilli())/1e3)
		}
		if g[RunStart] != float64(began.UnixNano())/1e9 || g[RunEnd] != float64(ended.UnixNano())/1e9 {
			t.Errorf("run %.3f–%.3f, want %.3f–%.3f", g[RunStart], g[RunEnd], float64(began.UnixNano())/1e9, float64(ended.UnixNano())/1e9)
		}
		if g[LastSuccess] < g[RunStart] || g[LastSuccess] > g[RunEnd] {
			t.Errorf("last success %.3f outside the run %.3f–%.3f", g[LastSuccess], g[RunStart], g[RunEnd])
		}
	})

	t.Run("the checkpoint alone gives the same gauges", func(t *testing.T) {
		runs, err := st.Runs(context.Background())
		if err != nil || len(runs) != 1 {
			t.Fatal(runs, err)
		}
		last, _, _ := st.LastSent(context.Background())
		cp := FromCheckpoint("c1", "whatsapp", State{Counts: counts, LastSuccess: last, RunStart: runs[0].StartedAt, Senders: runs[0].Senders, Rate: runs[0].Rate})
		if err := testutil.GatherAndCompare(cp.reg, exposition(t, m, Rows, RowsInDoubt, ConfiguredRate), Rows, RowsInDoubt, ConfiguredRate); err != nil {
			t.Error(err)
		}
		for _, name := range []string{Sends, Answers, Latency, LimiterWait, CurrentRate, Retries, RunEnd} {
			if n := testutil.CollectAndCount(cp.reg, name); n != 0 {
				t.Errorf("%s: %d series from a checkpoint, want none", name, n)
			}
		}
	})
}
