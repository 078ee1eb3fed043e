package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/pace"
	"github.com/bulksend/bulksend/internal/whatsapp"
)

// limitRun is one campaign against the sandbox's strict window (every
// request counted at its arrival in a sliding second, whatever its
// answer: --strict-window), with the figures issue 14 asks for.
type limitRun struct {
	rows      int
	elapsed   time.Duration      // the engine's run, first claim to last answer
	achieved  map[string]float64 // accepted per second per number, over its first to last acceptance
	throttled int64              // 130429 answers
	sent      int64              // rows the checkpoint holds sent
	accepted  int64              // messages the sandbox accepted
	dups      int64              // messages the sandbox accepted twice for a row
	limits    map[string]float64 // what the engine learned each number accepts
	arrivals  map[string]int     // the most requests that arrived in any sliding second, per number (the strict window)
}

type limitCase struct {
	told    float64            // --rate
	allows  map[string]float64 // the sandbox's limit per number
	rows    int
	arrival time.Duration // the sandbox's arrival jitter (±)
	faults  float64       // the sandbox's transient error share
}

// runLimits runs the campaign of c with the engine in this process and
// the sandbox in a process of its own, as the API is: a sandbox that
// shared this process's garbage collector would stall with it and bunch
// arrivals that left evenly spaced.
func runLimits(b *testing.B, c limitCase) limitRun {
	var senders []string
	for s := range c.allows {
		senders = append(senders, s)
	}
	st := checkpoint(b, c.rows, senders...)
	accepted := filepath.Join(b.TempDir(), "accepted.jsonl")
	args := []string{"sandbox", "--seed", "1", "--template", "welcome:2", "--pair-interval", "-1s", "--strict-window",
		"--transient-rate", strconv.FormatFloat(c.faults, 'f', -1, 64), "--permanent-rate", "0", "--late-rate", "0", "--held-rate", "0",
		"--latency", "200ms", "--jitter", "10ms", "--arrival-jitter", c.arrival.String(), "--accepted", accepted, "--log-level", "warn"}
	for n, r := range c.allows {
		args = append(args, "--number-rate", fmt.Sprintf("%s=%g", n, r))
	}
	sb := exec.Command(limitsBinary(b), args...)
	var sbOut bytes.Buffer
	sb.Stdout = &sbOut
	url := startSandboxProcess(b, sb, nil)
	b.Cleanup(func() { sb.Process.Kill() }) // a Fatal before the SIGTERM below
	client := &whatsapp.Client{BaseURL: url, Version: "v23.0", Token: "t", TemplateName: "welcome", TemplateLang: "en_US", Timeout: 10 * time.Second, HTTP: whatsapp.NewHTTPClient(1024)}
	// Only when asked: the campaigns measured are the same without it.
	var obs engine.Observer
	if os.Getenv("BULKSEND_BENCH_THROTTLES") != "" {
		thr := &throttleLog{}
		obs = thr
		defer thr.print()
	}
	eng := engine.New(engine.Config{Checkpoint: st, Sender: client, Senders: senders, CampaignID: "bench", Standard: whatsapp.StandardThroughput,
		Rate: c.told, Observer: obs})
	start := time.Now()
	runErr := eng.Run(context.Background())
	elapsed := time.Since(start)
	sb.Process.Signal(syscall.SIGTERM)
	if err := sb.Wait(); err != nil {
		b.Fatalf("sandbox: %v", err)
	}
	if runErr != nil {
		b.Fatal(runErr)
	}
	r := limitRun{rows: c.rows, elapsed: elapsed, achieved: map[string]float64{}, limits: eng.Limits()}
	var stats struct {
		Accepted    int64          `json:"accepted"`
		Throttled   int64          `json:"throttled"`
		Duplicates  int64          `json:"duplicates"`
		MaxArrivals map[string]int `json:"max_arrivals_per_second"`
	}
	if err := json.Unmarshal(sbOut.Bytes(), &stats); err != nil {
		b.Fatalf("sandbox stats: %v\n%s", err, sbOut.Bytes())
	}
	if stats.MaxArrivals == nil {
		b.Fatalf("the sandbox reported no strict window (max_arrivals_per_second):\n%s", sbOut.Bytes())
	}
	r.throttled, r.accepted, r.dups, r.arrivals = stats.Throttled, stats.Accepted, stats.Duplicates, stats.MaxArrivals
	log, err := os.ReadFile(accepted)
	if err != nil {
		b.Fatal(err)
	}
	byNumber := map[string][]time.Time{}
	for _, a := range acceptances(b, &lockedBuffer{b: *bytes.NewBuffer(log)}) {
		byNumber[a.number] = append(byNumber[a.number], a.at)
	}
	for n, ts := range byNumber {
		r.achieved[n] = float64(len(ts)-1) / ts[len(ts)-1].Sub(ts[0]).Seconds()
	}
	counts, err := st.Counts(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	r.sent = counts.Sent
	return r
}

var limitsBin struct {
	once sync.Once
	path string
	err  error
}

// limitsBinary builds bulksend once for every limits campaign of this
// process.
func limitsBinary(b *testing.B) string {
	b.Helper()
	limitsBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "bulksend-bench-")
		if err != nil {
			limitsBin.err = err
			return
		}
		limitsBin.path = filepath.Join(dir, "bulksend")
		out, err := exec.Command("go", "build", "-o", limitsBin.path, "github.com/bulksend/bulksend/cmd/bulksend").CombinedOutput()
		if err != nil {
			limitsBin.err = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if limitsBin.err != nil {
		b.Fatal(limitsBin.err)
	}
	return limitsBin.path
}

// share is the lowest achieved rate as a share of each number's real limit.
func (r limitRun) share(allows map[string]float64) float64 {
	low := 2.0
	for n, a := range r.achieved {
		low = min(low, a/allows[n])
	}
	return low
}

func (r limitRun) perNumber(allows map[string]float64) string {
	var parts []string
	for n, a := range r.achieved {
		parts = append(parts, fmt.Sprintf("%s %.1f/s of %.0f (limit at the end %.1f, largest second by arrival %d)", n, a, allows[n], r.limits[n], r.arrivals[n]))
	}
	return strings.Join(parts, ", ")
}

// maxArrivals is the largest second by arrival of any number.
func (r limitRun) maxArrivals() int {
	most := 0
	for _, a := range r.arrivals {
		most = max(most, a)
	}
	return most
}

// once reports whether every row was sent once (all sent, none accepted
// twice), and says so.
func (r limitRun) once() (bool, string) {
	if r.sent == int64(r.rows) && r.accepted == int64(r.rows) && r.dups == 0 {
		return true, "none lost or sent twice"
	}
	return false, fmt.Sprintf("SENT %d of %d rows, %d accepted, %d accepted twice", r.sent, r.rows, r.accepted, r.dups)
}

// BenchmarkLimits: the pacer against numbers whose real limit it is told,
// or not (issue 14). The sandbox counts every request at its arrival over
// a sliding second, throttled and failed ones too (its strict window,
// issue 28), and answers after 200 ms ± 10 ms. Beside each number's rate
// it prints the strict window's largest second (the most requests that
// arrived in any sliding second: over the limit by the throttled ones).
// Targets, per case (issue 28):
//   - exact: told exactly 400/s: ≥ 99% of it, 0 throttled;
//   - lower: told 400/s, allowing 300/s: ≥ 98% of 300, ≤ 1% of rows
//     answered 130429, nothing lost or sent twice. The first throttle's
//     answer comes a round trip (200 ms) after the number's second filled:
//     the 80 requests that left meanwhile at 400/s are throttled, and under
//     the strict window they count, so the pacer waits until they have
//     left the second too. That is 160 of the 180 throttles the target
//     allows, for the two numbers; a trial of a higher limit that fails
//     costs one or two more;
//   - tier: told 1000/s, allowing Meta's default 80/s: ≥ 98% of 80, ≤ 3%
//     of rows throttled. Until the first throttle's answer about 280
//     requests would go at the told rate, all but the first 80 throttled:
//     4% of the 5,000 rows. The engine is told WhatsApp's standard rate
//     (engine.Config.Standard, as a run is): a number not yet seen to
//     accept more than 80 in a second has at most 80 sends beyond them in
//     flight, so the first throttle costs 80;
//   - jitter: told exactly 400/s, requests bunched by ±10 ms on the way:
//     ≥ 95%, a handful of throttles at most.
func BenchmarkLimits(b *testing.B) {
	two := func(r float64) map[string]float64 { return map[string]float64{"1000001": r, "1000002": r} }
	for _, tc := range []struct {
		name      string
		c         limitCase
		share     float64 // of the real limit, at least
		throttled float64 // share of rows answered 130429, at most
	}{
		{"exact", limitCase{told: 400, allows: two(400), rows: 2 * 400 * 12}, 0.99, 0},
		{"lower", limitCase{told: 400, allows: two(300), rows: 2 * 300 * 30}, 0.98, 0.01},
		{"tier", limitCase{told: 1000, allows: map[string]float64{"1000001": 80}, rows: 5000}, 0.98, 0.03},
		{"jitter", limitCase{told: 400, allows: two(400), rows: 2 * 400 * 15, arrival: 10 * time.Millisecond}, 0.95, 0.002},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				r := runLimits(b, tc.c)
				share := r.share(tc.c.allows)
				thr := float64(r.throttled) / float64(r.rows)
				most := r.maxArrivals()
				b.ReportMetric(100*share, "%-of-limit")
				b.ReportMetric(float64(r.throttled), "throttled")
				b.ReportMetric(float64(most), "max-1s-arrivals")
				once, lost := r.once()
				verdict := "ok"
				if share < tc.share || thr > tc.throttled || !once {
					verdict = "MISSED"
				}
				fmt.Printf("limits %s: told %.0f/s; %s; lowest %.1f%% of the real limit (target ≥ %.0f%%); 130429 answers %d = %.2f%% of %d rows (target ≤ %.1f%%); %s; run in %.1f s [%s]\n",
					tc.name, tc.c.told, r.perNumber(tc.c.allows), 100*share, 100*tc.share, r.throttled, 100*thr, r.rows, 100*tc.throttled,
					lost, r.elapsed.Seconds(), verdict)
			}
		})
	}
}

// BenchmarkRetryTail: 100,000 rows at 500/s on one number whose limit is
// 500/s, 5% of requests answered with a transient error. The strict window
// counts the failed requests too (a slot an error took is not given back
// within its second), so the campaign needs rows ÷ (1 − 5%) requests, and
// no pacer can send them faster than the limit: the ideal is
// rows ÷ (0.95 × 500) = 210.5 s, not rows ÷ 500 = 200 s. Target: within
// 2% of that, no throttle. A pacer that books retries as if the errors
// had not counted (in the slots they would have given back under a kinder
// count) is throttled here, and each throttle keeps the second full.
// BULKSEND_BENCH_ROWS shrinks it.
func BenchmarkRetryTail(b *testing.B) {
	rows := 100_000
	if n := rowsFromEnv(); n < millionRows {
		rows = n
	}
	const rate = 500
	for range b.N {
		const faults = 0.05
		r := runLimits(b, limitCase{told: rate, allows: map[string]float64{"1000001": rate}, rows: rows, faults: faults})
		bare := time.Duration(float64(rows) / rate * float64(time.Second))
		ideal := time.Duration(float64(rows) / (1 - faults) / rate * float64(time.Second))
		ratio := r.elapsed.Seconds() / ideal.Seconds()
		most := r.maxArrivals()
		b.ReportMetric(ratio, "x-ideal")
		b.ReportMetric(float64(r.throttled), "throttled")
		b.ReportMetric(float64(most), "max-1s-arrivals")
		once, lost := r.once()
		verdict := "ok"
		if ratio > 1.02 || r.throttled > 0 || !once {
			verdict = "MISSED"
		}
		fmt.Printf("retry tail: %d rows at %d/s with 5%% transient errors took %.1f s = %.3f× the ideal %.1f s of rows ÷ (0.95 × rate) (target ≤ 1.02×; pace %.1f/s), %.3f× rows ÷ rate; 130429 answers %d (target 0); largest second by arrival %d (limit %d; the strict window counts the failed requests too); %s [%s]\n",
			rows, rate, r.elapsed.Seconds(), ratio, ideal.Seconds(), pace.Paced(rate), r.elapsed.Seconds()/bare.Seconds(), r.throttled, most, rate, lost, verdict)
	}
}

// throttleLog keeps when each throttled request left, for
// BULKSEND_BENCH_THROTTLES: which episodes a campaign's throttles came in.
type throttleLog struct {
	mu    sync.Mutex
	first time.Time // the first request's departure
	at    map[string][]time.Time
}

func (l *throttleLog) Attempted(a engine.Attempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first.IsZero() || a.At.Before(l.first) {
		l.first = a.At
	}
	if a.Class == campaign.Throttled.String() {
		if l.at == nil {
			l.at = map[string][]time.Time{}
		}
		l.at[a.Sender] = append(l.at[a.Sender], a.At)
	}
}

func (l *throttleLog) Waited(string, time.Duration) {}

// print writes each number's throttles by the tenth of a second of the
// run they left in: "0.7:16" is 16 throttled requests that left from 0.7 s.
func (l *throttleLog) print() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for n, ts := range l.at {
		tenths := map[int]int{}
		last := 0
		for _, t := range ts {
			k := int(t.Sub(l.first) / (100 * time.Millisecond))
			tenths[k]++
			last = max(last, k)
		}
		var b strings.Builder
		for k := 0; k <= last; k++ {
			if tenths[k] > 0 {
				fmt.Fprintf(&b, " %.1f:%d", float64(k)/10, tenths[k])
			}
		}
		fmt.Printf("  throttles of %s by when they left (s:count):%s\n", n, b.String())
	}
}
