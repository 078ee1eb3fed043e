package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/budget"
	"github.com/bulksend/bulksend/internal/budget/redistest"
	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/pace"
)

// sharedRate is the number's limit in BenchmarkSharedBudget: the strict
// window's, and every process's --rate.
const sharedRate = 400

// BenchmarkSharedBudget: `bulksend run` processes sending from the same
// numbers with --budget through a real redis-server on 127.0.0.1,
// against a `bulksend sandbox --strict-window --rate 400` process (every
// request counts at its arrival in its number's sliding second), each
// process told --rate 400. Three cases: three campaigns from one number
// started together; three campaigns from two numbers started 2 s apart;
// three campaigns from one number, one killed -9 after 4 s. For each, from
// the sandbox's record of acceptances: each number's rate from its first
// acceptance to its last against 400/s (target ≥ 0.97), the 130429
// answers (target 0), the largest second of arrivals the strict window
// saw (≤ 400), whether every campaign completed; for the kill, the rate
// in the 3 s after it, when the others take its share. Beside them the
// cost of a booking, measured alone: its round trip's p50 and p99 and
// the CPU per booking of the client and of redis-server.
func BenchmarkSharedBudget(b *testing.B) {
	bin := buildBinary(b)
	rs := redistest.Start(b)
	for range b.N {
		b.Logf("load average %s", loadAvg())
		sharedCase(b, bin, rs, "3 processes, 1 number, together", []string{"1000001"}, sharedRate, 0, -1)
		sharedCase(b, bin, rs, "3 processes, 2 numbers, started 2 s apart", []string{"1000001", "1000002"}, sharedRate, 2*time.Second, -1)
		sharedCase(b, bin, rs, "3 processes, 1 number, one killed -9 after 4 s", []string{"1000001"}, sharedRate, 0, 4*time.Second)
		sharedCase(b, bin, rs, "3 processes, 1 number that accepts 300/s where they are told 400", []string{"1000001"}, 300, 0, -1)
		bookingCost(b, rs)
	}
}

// sharedCase runs three campaigns from numbers, started apart, with one
// killed at kill (< 0: none), and prints the figures.
func sharedCase(b *testing.B, bin string, rs *redistest.Server, name string, numbers []string, accepts int, apart, kill time.Duration) {
	dir := b.TempDir()
	accepted := filepath.Join(dir, "accepted.jsonl")
	sb := exec.Command(bin, "sandbox", "--template", "t:1", "--rate", strconv.Itoa(accepts), "--strict-window",
		"--latency", "50ms", "--jitter", "10ms", "--transient-rate", "0", "--permanent-rate", "0", "--late-rate", "0",
		"--held-rate", "0", "--pair-interval", "-1s", "--accepted", accepted, "--log-level", "warn")
	var sbOut bytes.Buffer
	sb.Stdout = &sbOut
	url := startSandboxProcess(b, sb, nil)
	defer sb.Process.Kill()

	// 10 s of sends at the limit between the three; a killed one's rest
	// is sent by its resume.
	rows := 10 * sharedRate * len(numbers) / 3
	env := append(os.Environ(), "BULKSEND_API_URL="+url, "WHATSAPP_TOKEN=bench", "BULKSEND_LEDGER="+filepath.Join(dir, "ledger.db"))
	args := func(i int) []string {
		return []string{"run", filepath.Join(dir, fmt.Sprintf("c%d.csv", i)), "--template", "t", "--from", strings.Join(numbers, ","),
			"--rate", strconv.Itoa(sharedRate), "--budget", rs.URL(), "--no-preflight", "--log-level", "warn", "--progress-interval", "1h"}
	}
	cmds := make([]*exec.Cmd, 3)
	errs := make([]*bytes.Buffer, 3)
	done := make([]chan error, 3)
	var killedAt time.Time
	for i := range cmds {
		writeSharedCampaign(b, filepath.Join(dir, fmt.Sprintf("c%d.csv", i)), i*rows, rows)
		if i > 0 {
			time.Sleep(apart)
		}
		cmds[i] = exec.Command(bin, args(i)...)
		cmds[i].Env, errs[i] = env, &bytes.Buffer{}
		cmds[i].Stderr = errs[i]
		if err := cmds[i].Start(); err != nil {
			b.Fatal(err)
		}
		done[i] = make(chan error, 1)
		go func() { done[i] <- cmds[i].Wait() }()
	}
	if kill >= 0 {
		time.Sleep(kill - 2*apart)
		cmds[2].Process.Signal(syscall.SIGKILL)
		killedAt = time.Now()
	}
	complete := true
	for i := range cmds {
		err := <-done[i]
		if kill >= 0 && i == 2 {
			continue
		}
		if err != nil {
			complete = false
			b.Logf("run %d: %v\n%s", i, err, errs[i])
		}
	}
	resumed := ""
	if kill >= 0 {
		// The killed campaign's rows left sending are in doubt: its resume
		// sends the rest, and they are told apart.
		resume := exec.Command(bin, append(args(2), "--json")...)
		var out, stderr bytes.Buffer
		resume.Env, resume.Stdout, resume.Stderr = env, &out, &stderr
		err := resume.Run()
		var c campaign.Counts
		json.Unmarshal(out.Bytes(), &c)
		resumed = fmt.Sprintf("; the killed campaign's resume: exit %d, %d sent, %d pending, %d in doubt (what the kill left in flight, held for reconcile)",
			exitOf(err), c.Sent, c.Pending, c.InDoubt)
		if c.Pending != 0 {
			complete = false
			b.Logf("resume: %s", stderr.Bytes())
		}
	}
	st := sharedStats(b, url)
	sb.Process.Signal(syscall.SIGTERM)
	sb.Wait()
	spans, _ := acceptedSpans(b, accepted)
	fmt.Printf("shared budget, %s (%d rows each, --rate %d, --budget):\n", name, rows, sharedRate)
	for _, n := range numbers {
		s := spans[n]
		fmt.Printf("  number %s: %d accepted, %.1f/s from first to last = %.3f of %d/s (target ≥ 0.97); most arrivals in a sliding second %d (≤ %d)\n",
			n, s.n, s.rate(), s.rate()/float64(accepts), accepts, st.MaxArrivals[n], accepts)
	}
	target := "target 0"
	if accepts < sharedRate {
		target = "they teach the processes the limit"
	}
	fmt.Printf("  130429 answers: %d (%s); duplicates %d; every campaign complete: %v%s\n", st.Throttled, target, st.Duplicates, complete, resumed)
	if !killedAt.IsZero() {
		before, after := windowRate(b, accepted, killedAt.Add(-3*time.Second), killedAt), windowRate(b, accepted, killedAt.Add(time.Second), killedAt.Add(4*time.Second))
		fmt.Printf("  around the kill: %.1f/s in the 3 s before, %.1f/s from 1 s to 4 s after (%.3f of %d/s): the others took its share\n",
			before, after, after/sharedRate, sharedRate)
	}
}

func exitOf(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// writeSharedCampaign writes rows recipients from the sample number first
// on: the campaigns have recipients of their own.
func writeSharedCampaign(b *testing.B, path string, first, rows int) {
	b.Helper()
	var w strings.Builder
	w.WriteString("phone,name\n")
	for i := first; i < first+rows; i++ {
		fmt.Fprintf(&w, "%s,N%d\n", csvin.SampleNumber(i), i)
	}
	if err := os.WriteFile(path, []byte(w.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}

type sandboxStats struct {
	Accepted    int64          `json:"accepted"`
	Throttled   int64          `json:"throttled"`
	Duplicates  int64          `json:"duplicates"`
	MaxArrivals map[string]int `json:"max_arrivals_per_second"`
}

func sharedStats(b *testing.B, url string) sandboxStats {
	b.Helper()
	resp, err := http.Get(url + "/_sandbox/stats")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var st sandboxStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		b.Fatal(err)
	}
	return st
}

// windowRate is the acceptances per second in [from, to).
func windowRate(b *testing.B, path string, from, to time.Time) float64 {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			Time time.Time `json:"time"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			b.Fatal(err)
		}
		if !r.Time.Before(from) && r.Time.Before(to) {
			n++
		}
	}
	return float64(n) / to.Sub(from).Seconds()
}

// bookingCost measures what --budget adds to a send: a booking's round
// trip (p50, p99) and the CPU per booking of this process and of
// redis-server, over 20,000 bookings of one number by one client, each
// waited for as a run waits.
func bookingCost(b *testing.B, rs *redistest.Server) {
	ctx := context.Background()
	bk, err := budget.Open(ctx, budget.Options{URL: rs.URL(), Namespace: "cost"})
	if err != nil {
		b.Fatal(err)
	}
	defer bk.Close()
	const n = 20000
	terms := pace.Terms{Interval: 0, Allowed: 1 << 30, Hold: time.Second}
	lat := make([]time.Duration, 0, n)
	cpu0, srv0 := selfCPU(), rs.CPU()
	for range n {
		start := time.Now()
		if _, err := bk.Book(ctx, "1000001", 1, terms); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	cpu, srv := selfCPU()-cpu0, rs.CPU()-srv0
	slices.Sort(lat)
	fmt.Printf("shared budget, the cost of a booking (%d bookings, one client, redis-server on 127.0.0.1): added latency p50 %v, p99 %v; CPU per booking %.1f µs in bulksend's process, %.1f µs in redis-server\n",
		n, lat[n/2].Round(time.Microsecond), lat[n*99/100].Round(time.Microsecond), cpu/n*1e6, srv/n*1e6)
}
