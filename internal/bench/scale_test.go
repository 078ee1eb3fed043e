package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/pace"
	"github.com/bulksend/bulksend/internal/store"
)

// The scale campaign: 5 sender numbers told --rate 1000, 10,000 rows
// each (10 s at the limit).
const (
	scaleNumbers = 5
	scaleRate    = 1000
	scaleSeconds = 10 // of rows per number at the limit
)

// BenchmarkScale: `bulksend run` with 5 sender numbers at --rate 1000
// against a `bulksend sandbox --strict-window` process on 127.0.0.1 that
// allows 1,000 requests per number over a sliding second counted at each
// request's arrival, answering in 100 ms ± 10 ms, with no injected
// failures (5,000 msg/s, both processes on this machine). From the
// sandbox's record of acceptances: each number's achieved rate (its
// acceptances over the span from its first to its last) against 1,000/s,
// target ≥ 0.99, and against the pacer's own rate (pace.Paced: 1,000 less
// its headroom); the largest one-second window of acceptances and the
// strict window's own, by arrival (both ≤ 1,000), the 130429 answers
// (0), and how long after the run recorded each request leaving the
// sandbox stamped its arrival (see arrivalDelays). From the processes'
// rusage: the run's CPU per 1,000 messages (and without the import,
// measured by a dry run of the same CSV), its peak RSS, and the sandbox's
// CPU apart. Beside them, the floor: the CPU of a bare net/http client
// sending the same load to another sandbox process, and that sandbox's
// (see bareLoop).
//
// BULKSEND_BENCH_ROWS below 100,000 makes it shorter. BULKSEND_BENCH_PROFILE
// names a directory for CPU profiles of both processes (run-N.pprof,
// sandbox-N.pprof), and execution traces beside them (run-N.trace) when
// BULKSEND_BENCH_TRACE is set; BULKSEND_BENCH_KEEP a directory to keep the
// sandbox's record of acceptances in (accepted-N.jsonl), with the run's
// checkpoint (scale-N.db) and stderr (run-N.stderr).
// BULKSEND_BENCH_NUMBERS runs another count of numbers (at 1,000/s each,
// 10 s): what the machine sustains when it is not the bound.
// BULKSEND_BENCH_PIN keeps the run on CPU 0 and the sandbox on CPU 1
// (taskset): what one core sustains.
func BenchmarkScale(b *testing.B) {
	numbers := scaleNumbers
	if v, err := strconv.Atoi(os.Getenv("BULKSEND_BENCH_NUMBERS")); err == nil && v > 0 {
		numbers = v
	}
	n := min(numbers*scaleRate*scaleSeconds, rowsFromEnv())
	bin := buildBinary(b)
	dir := b.TempDir()
	senders := make([]string, numbers)
	for i := range senders {
		senders[i] = strconv.Itoa(1000001 + i)
	}
	csvPath := filepath.Join(dir, "scale.csv")
	writeScaleCampaign(b, csvPath, n, senders)
	profiles := os.Getenv("BULKSEND_BENCH_PROFILE")

	// The import's share of the run's CPU: a dry run imports the same CSV
	// into a checkpoint of its own and sends nothing.
	dry := exec.Command(bin, "run", csvPath, "--dry-run", "--template", "t", "--log-level", "warn")
	if out, err := dry.CombinedOutput(); err != nil {
		b.Fatalf("dry run: %v\n%s", err, out)
	}
	importCPU := cpuSeconds(dry.ProcessState)

	for i := range b.N {
		load := loadAvg()
		// The floor, measured beside the run: the same load from a bare
		// net/http client.
		bareClient, bareSandbox, barePerSec := bareLoop(b, bin, n, senders)
		accepted := filepath.Join(dir, fmt.Sprintf("accepted-%d.jsonl", i))
		sb := exec.Command(bin, "sandbox", "--template", "t:2", "--rate", strconv.Itoa(scaleRate), "--strict-window",
			"--latency", "100ms", "--jitter", "10ms", "--transient-rate", "0", "--permanent-rate", "0", "--late-rate", "0",
			"--held-rate", "0", "--pair-interval", "-1s", "--accepted", accepted, "--log-level", "warn")
		var sbOut bytes.Buffer
		sb.Stdout = &sbOut
		url := startSandboxProcess(b, sb, profileEnv(profiles, "sandbox", i))

		run := exec.Command(bin, "run", csvPath, "--db", filepath.Join(dir, fmt.Sprintf("scale-%d.db", i)),
			"--template", "t", "--rate", strconv.Itoa(scaleRate),
			"--log-level", "warn", "--progress-interval", "1h", "--json")
		run.Env = append(os.Environ(), "BULKSEND_API_URL="+url, "WHATSAPP_TOKEN=bench")
		run.Env = append(run.Env, profileEnv(profiles, "run", i)...)
		var runOut, runErr bytes.Buffer
		run.Stdout, run.Stderr = &runOut, &runErr
		start := time.Now()
		err := run.Start()
		if err == nil && os.Getenv("BULKSEND_BENCH_PIN") != "" {
			pin(b, run.Process.Pid, "0")
			pin(b, sb.Process.Pid, "1")
		}
		if err == nil {
			err = run.Wait()
		}
		wall := time.Since(start)
		sb.Process.Signal(syscall.SIGTERM)
		if werr := sb.Wait(); werr != nil {
			b.Fatalf("sandbox: %v", werr)
		}
		if err != nil {
			b.Fatalf("run: %v\n%s", err, runErr.Bytes())
		}
		var counts struct{ Sent int64 }
		if err := json.Unmarshal(runOut.Bytes(), &counts); err != nil || counts.Sent != int64(n) {
			b.Fatalf("run sent %d of %d rows (%v)\n%s", counts.Sent, n, err, runErr.Bytes())
		}
		var stats struct {
			Accepted     int64          `json:"accepted"`
			Throttled    int64          `json:"throttled"`
			Duplicates   int64          `json:"duplicates"`
			MaxPerSecond map[string]int `json:"max_per_second"`
			MaxArrivals  map[string]int `json:"max_arrivals_per_second"`
		}
		if err := json.Unmarshal(sbOut.Bytes(), &stats); err != nil {
			b.Fatalf("sandbox stats: %v\n%s", err, sbOut.Bytes())
		}
		if stats.Accepted != int64(n) || stats.Duplicates != 0 {
			b.Fatalf("sandbox accepted %d of %d rows, %d twice", stats.Accepted, n, stats.Duplicates)
		}

		checkpoint := filepath.Join(dir, fmt.Sprintf("scale-%d.db", i))
		if keep := os.Getenv("BULKSEND_BENCH_KEEP"); keep != "" {
			err := os.WriteFile(filepath.Join(keep, fmt.Sprintf("run-%d.stderr", i)), runErr.Bytes(), 0o644)
			for _, f := range []string{accepted, checkpoint} {
				var data []byte
				if err == nil {
					data, err = os.ReadFile(f)
				}
				if err == nil {
					err = os.WriteFile(filepath.Join(keep, filepath.Base(f)), data, 0o644)
				}
			}
			if err != nil {
				b.Fatalf("keeping the run's record: %v", err)
			}
		}
		spans, arrived := acceptedSpans(b, accepted)
		delays := arrivalDelays(b, checkpoint, arrived)
		minRate, sumRate := math.Inf(1), 0.0
		for _, s := range senders {
			r := spans[s].rate()
			minRate, sumRate = min(minRate, r), sumRate+r
		}
		meanRate := sumRate / float64(len(senders))
		if stats.MaxArrivals == nil {
			b.Fatalf("the sandbox reported no strict window (max_arrivals_per_second):\n%s", sbOut.Bytes())
		}
		maxWin, maxArrivals := 0, 0
		for _, w := range stats.MaxPerSecond {
			maxWin = max(maxWin, w)
		}
		for _, w := range stats.MaxArrivals {
			maxArrivals = max(maxArrivals, w)
		}
		first, last := bounds(spans)
		total := float64(stats.Accepted-1) / last.Sub(first).Seconds()

		runCPU, sbCPU := cpuSeconds(run.ProcessState), cpuSeconds(sb.ProcessState)
		per1k := func(s float64) float64 { return 1000 * s / float64(n) }
		rss := float64(run.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024 // KiB
		// The pacer's rate before any throttle.
		pacer := pace.Paced(scaleRate)

		b.ReportMetric(minRate/scaleRate, "min-share-of-limit")
		b.ReportMetric(meanRate/scaleRate, "mean-share-of-limit")
		b.ReportMetric(minRate/pacer, "min-share-of-pacer")
		b.ReportMetric(float64(maxWin), "max-1s-window")
		b.ReportMetric(float64(maxArrivals), "max-1s-arrivals")
		b.ReportMetric(float64(stats.Throttled), "throttled")
		b.ReportMetric(ms(quantile(delays, 0.99)), "arrival-p99-ms")
		b.ReportMetric(ms(quantile(delays, 0.999)), "arrival-p99.9-ms")
		b.ReportMetric(per1k(runCPU), "run-CPU-s/1k")
		b.ReportMetric(per1k(runCPU-importCPU), "send-CPU-s/1k")
		b.ReportMetric(per1k(sbCPU), "sandbox-CPU-s/1k")
		b.ReportMetric(rss, "peak-RSS-MB")
		b.ReportMetric(total, "msg/s")
		b.ReportMetric(bareClient, "bare-client-CPU-s/1k")
		b.ReportMetric(per1k(runCPU-importCPU)/bareClient, "x-bare-client")

		fmt.Printf("scale %d×%d/s, %d rows, load average %s → %s\n", numbers, scaleRate, n, load, loadAvg())
		fmt.Printf("scale: achieved per number min %.1f, mean %.1f msg/s = %.4f (min) %.4f (mean) of %d/s (target ≥ 0.99); of the pacer's %.0f/s %.4f (min)\n",
			minRate, meanRate, minRate/scaleRate, meanRate/scaleRate, scaleRate, pacer, minRate/pacer)
		fmt.Printf("scale: all numbers %.0f msg/s from the first acceptance to the last (target %d); run wall time %.1fs\n",
			total, numbers*scaleRate, wall.Seconds())
		fmt.Printf("scale: largest one-second window %d (limit %d), by arrival (the strict window: every request) %d; 130429 answers %d (target 0)\n",
			maxWin, scaleRate, maxArrivals, stats.Throttled)
		fmt.Printf("scale: each request reached the sandbox p50 %.1f, p90 %.1f, p99 %.1f, p99.9 %.1f, max %.1f ms after the run recorded it leaving (to the ms); "+
			"at %d/s each ms of spread lets a second by arrival hold one more than the pacer's own, whose headroom is %.0f\n",
			ms(quantile(delays, 0.5)), ms(quantile(delays, 0.9)), ms(quantile(delays, 0.99)), ms(quantile(delays, 0.999)), ms(quantile(delays, 1)),
			scaleRate, scaleRate-pacer)
		fmt.Printf("scale: run CPU %.2fs = %.3fs per 1,000 messages (import alone %.2fs by a dry run; sending %.3fs per 1,000); peak RSS %.0f MB\n",
			runCPU, per1k(runCPU), importCPU, per1k(runCPU-importCPU), rss)
		fmt.Printf("scale: sandbox CPU %.2fs = %.3fs per 1,000 messages; both processes %.3fs per 1,000 (2 cores at %d/s allow %.3f)\n",
			sbCPU, per1k(sbCPU), per1k(runCPU+sbCPU), numbers*scaleRate, 2000.0/float64(numbers*scaleRate))
		fmt.Printf("scale: the floor, a bare net/http client posting the same load to a sandbox: client %.3fs, sandbox %.3fs per 1,000 requests, %.0f requests/s; the run's sending %.2f× the bare client's CPU\n",
			bareClient, bareSandbox, barePerSec, per1k(runCPU-importCPU)/bareClient)
	}
}

// bareLoop posts n requests to a sandbox process without a rate limit
// (counting them in its strict window all the same, as the run's does),
// at the run's 5,000/s (each millisecond the ones due since the start)
// spread over senders, from a plain net/http client (a goroutine per
// request, as many in flight as the engine allows, bodies like the run's
// pasted together) and returns this process's CPU and the
// sandbox's per 1,000 requests, and the requests per second: what HTTP
// alone costs at the run's rate, the floor under the run's figures.
func bareLoop(b *testing.B, bin string, n int, senders []string) (client, server, perSec float64) {
	b.Helper()
	sb := exec.Command(bin, "sandbox", "--template", "t:2", "--rate", "-1", "--strict-window",
		"--latency", "100ms", "--jitter", "10ms", "--transient-rate", "0", "--permanent-rate", "0", "--late-rate", "0",
		"--held-rate", "0", "--pair-interval", "-1s", "--log-level", "warn")
	url := startSandboxProcess(b, sb, nil)
	var heads [4][]byte // the recipients' mix of countries, as in the campaign
	for i := range heads {
		heads[i] = fmt.Appendf(nil, `{"messaging_product":"whatsapp","recipient_type":"individual","to":%q,"type":"template","biz_opaque_callback_data":"bare:`,
			csvin.SampleNumber(i))
	}
	const tail = `","template":{"name":"t","language":{"policy":"deterministic","code":"en_US"},"components":[` +
		`{"type":"header","parameters":[{"type":"image","image":{"link":"https://cdn.example.com/img/1.jpg"}}]},` +
		`{"type":"body","parameters":[{"type":"text","text":"Customer 1"},{"type":"text","text":"CODE0000001"}]},` +
		`{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"c0000001"}]}]}}`
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	hc.Transport.(*http.Transport).MaxIdleConnsPerHost = len(senders) * scaleRate
	var wg sync.WaitGroup
	var failed atomic.Int64
	// In flight at most what the engine's gate allows at this rate and
	// latency (rate × latency × 1.5): unbounded, a client that falls
	// behind opens ever more connections.
	slots := make(chan struct{}, len(senders)*scaleRate*15/100+4)
	c0, start := selfCPU(), time.Now()
	tick := time.NewTicker(time.Millisecond)
	perSecond := float64(len(senders) * scaleRate)
	for i := 0; i < n; {
		<-tick.C
		// As many as are due since the start: a tick that comes late (a
		// busy machine) sends the ones it was late for too.
		for due := min(n, int(time.Since(start).Seconds()*perSecond)); i < due; {
			slots <- struct{}{}
			wg.Add(1)
			go func(i int) {
				defer func() { <-slots; wg.Done() }()
				body := append(strconv.AppendInt(append(make([]byte, 0, 640), heads[i%len(heads)]...), int64(i), 10), tail...)
				req, _ := http.NewRequest(http.MethodPost, url+"/v23.0/"+senders[i%len(senders)]+"/messages", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer bench")
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				if err != nil {
					failed.Add(1)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
			}(i)
			i++
		}
	}
	tick.Stop()
	wg.Wait()
	client, perSec = 1000*(selfCPU()-c0)/float64(n), float64(n)/time.Since(start).Seconds()
	hc.CloseIdleConnections()
	sb.Process.Signal(syscall.SIGTERM)
	if err := sb.Wait(); err != nil {
		b.Fatalf("sandbox: %v", err)
	}
	if f := failed.Load(); f > 0 {
		b.Fatalf("bare client: %d of %d requests failed", f, n)
	}
	return client, 1000 * cpuSeconds(sb.ProcessState) / float64(n), perSec
}

// selfCPU is this process's user plus system CPU time in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// writeScaleCampaign writes n rows spread round-robin over senders (a
// from column), with writeCampaign's template columns.
func writeScaleCampaign(b *testing.B, path string, n int, senders []string) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("phone,from,name,code,header.image,button.0.url\n")
	for i := range n {
		fmt.Fprintf(w, "%s,%s,Customer %d,CODE%07d,https://cdn.example.com/img/%d.jpg,c%07d\n",
			csvin.SampleNumber(i), senders[i%len(senders)], i, i, i%100, i)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// startSandboxProcess starts sb with env added and returns the URL it
// prints; its stderr is drained until it exits.
func startSandboxProcess(b *testing.B, sb *exec.Cmd, env []string) string {
	b.Helper()
	sb.Env = append(os.Environ(), env...)
	stderr, err := sb.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := sb.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	url := ""
	for url == "" && sc.Scan() {
		if m := sandboxURL.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		sb.Process.Kill()
		b.Fatal("the sandbox printed no URL")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return url
}

// profileEnv asks a child for a CPU profile in dir (none when dir is "").
func profileEnv(dir, name string, i int) []string {
	if dir == "" {
		return nil
	}
	env := []string{"BULKSEND_CPUPROFILE=" + filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", name, i))}
	if os.Getenv("BULKSEND_BENCH_TRACE") != "" {
		env = append(env, "BULKSEND_TRACE="+filepath.Join(dir, fmt.Sprintf("%s-%d.trace", name, i)))
	}
	return env
}

// pin keeps every thread of process pid on the CPUs of list (taskset's
// form): the threads it starts later inherit it from the thread that
// starts them.
func pin(b *testing.B, pid int, list string) {
	b.Helper()
	if out, err := exec.Command("taskset", "-a", "-p", "-c", list, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		b.Fatalf("taskset: %v\n%s", err, out)
	}
}

// span is one number's acceptances: how many, the first and the last.
type span struct {
	n           int
	first, last time.Time
}

// rate is the acceptances per second between the first and the last.
func (s span) rate() float64 {
	if s.n < 2 {
		return 0
	}
	return float64(s.n-1) / s.last.Sub(s.first).Seconds()
}

// acceptedSpans reads the sandbox's accepted log into a span per number,
// and when each row was accepted (its last acceptance).
func acceptedSpans(b *testing.B, path string) (map[string]span, map[int64]time.Time) {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	out, rows := map[string]span{}, map[int64]time.Time{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r struct {
			Number string    `json:"phone_number_id"`
			Time   time.Time `json:"time"`
			Ref    string    `json:"biz_opaque_callback_data"` // bulksend:<campaign>:<row>
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			b.Fatal(err)
		}
		if row, err := strconv.ParseInt(r.Ref[strings.LastIndexByte(r.Ref, ':')+1:], 10, 64); err == nil {
			rows[row] = r.Time
		}
		s := out[r.Number]
		if s.n == 0 || r.Time.Before(s.first) {
			s.first = r.Time
		}
		if r.Time.After(s.last) {
			s.last = r.Time
		}
		s.n++
		out[r.Number] = s
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return out, rows
}

// arrivalDelays returns, sorted, how long after the run recorded each
// accepted request leaving (its attempt in the checkpoint, kept to the
// millisecond) the sandbox stamped its arrival: the strict window counts
// at the stamp, the pacer at the departure, and what comes between (the
// run's write, the kernel, the sandbox's read, on a busy machine) is what
// the pacer's headroom must cover.
func arrivalDelays(b *testing.B, checkpoint string, arrived map[int64]time.Time) []time.Duration {
	b.Helper()
	st, err := store.OpenRead(checkpoint)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var out []time.Duration
	err = st.EachAttempt(context.Background(), func(a store.AttemptRow) error {
		if t, ok := arrived[a.Row]; ok && a.Class == engine.Accepted {
			out = append(out, t.Sub(a.At))
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if len(out) == 0 {
		b.Fatal("no accepted attempt in the checkpoint matches the sandbox's record")
	}
	slices.Sort(out)
	return out
}

// quantile is the q-quantile of sorted (q = 1: the largest).
func quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// bounds is the first and the last acceptance of any number.
func bounds(spans map[string]span) (first, last time.Time) {
	for _, s := range spans {
		if first.IsZero() || s.first.Before(first) {
			first = s.first
		}
		if s.last.After(last) {
			last = s.last
		}
	}
	return first, last
}

// cpuSeconds is a finished process's user plus system CPU time.
func cpuSeconds(ps *os.ProcessState) float64 {
	return (ps.UserTime() + ps.SystemTime()).Seconds()
}

// loadAvg is the machine's load average (1, 5, 15 minutes): others work
// on it too.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
