package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/csvin"
)

const millionRows = 1_000_000

// rowsFromEnv lets a quick run use fewer rows: BULKSEND_BENCH_ROWS=100000.
func rowsFromEnv() int {
	if n, err := strconv.Atoi(os.Getenv("BULKSEND_BENCH_ROWS")); err == nil && n > 0 {
		return n
	}
	return millionRows
}

// buildBinary builds bulksend once per benchmark run.
func buildBinary(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "bulksend")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/bulksend/bulksend/cmd/bulksend").CombinedOutput()
	if err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// writeCampaign writes an n-row campaign CSV with four parameter columns,
// as a marketing template takes them: two body parameters, a header image
// and a URL button's suffix, each checked against Meta's rules at import.
func writeCampaign(b *testing.B, path string, n int) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("phone,name,code,header.image,button.0.url\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "%s,Customer %d,CODE%07d,https://cdn.example.com/img/%d.jpg,c%07d\n", csvin.SampleNumber(i), i, i, i%100, i)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
}

// timed runs cmd and returns its wall time and peak RSS in MB. If cmd
// fails, what it wrote to stderr (and to stdout, unless cmd.Stdout is set)
// is shown.
func timed(b *testing.B, cmd *exec.Cmd) (time.Duration, float64) {
	b.Helper()
	var out bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	cmd.Stderr = &out
	start := time.Now()
	err := cmd.Run()
	el := time.Since(start)
	if err != nil {
		b.Fatalf("%v: %v\n%s", cmd.Args, err, out.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return el, float64(ru.Maxrss) / 1024 // Linux reports KiB
}

// Targets of issue 14 for BenchmarkImport.
const (
	importTargetRatio = 1.5 // bulksend's time ÷ sqlite3's
	importTargetRSS   = 64  // MB, bulksend's peak RSS
	importRounds      = 3
)

// BenchmarkImport: importing 1,000,000 rows against `sqlite3 .import` of
// the same file, measured side by side in the same run.
//
// What each side does, timed from process start:
//
//   - bulksend: `bulksend run CSV --dry-run` reads and hashes the CSV,
//     normalises and validates every phone, checks every row's parameters
//     against Meta's rules, writes every row into a new checkpoint with its
//     claim index (one transaction, synchronous=NORMAL), finds duplicate
//     phones and commits: the import, until it logs "imported". The dry
//     run then prints the plan, from the import's own count of its rows
//     (nothing has changed them since), and removes the checkpoint: the
//     time to exit. The
//     checkpoint is in the benchmark's temporary directory (TMPDIR),
//     beside sqlite3's database.
//   - sqlite3: `sqlite3 -csv DB ".import CSV t"` into a new database file in
//     the same directory, until it exits: one table made from the header,
//     so the CSV's columns as TEXT, every row inserted in one transaction,
//     committed with the shell's defaults (rollback journal,
//     synchronous=FULL).
//
// The target is for the import; the whole dry run is shown beside it.
// sqlite3 runs before and after bulksend, and the reference is the mean of
// the two: a machine whose load changes during the run slows both sides.
// That is done three times in a row (sqlite3 runs four times in all), and
// the round of median ratio is reported. Peak RSS is bulksend's (the whole
// dry run), the highest of the rounds, from the rusage of the child
// process.
func BenchmarkImport(b *testing.B) {
	n := rowsFromEnv()
	bin := buildBinary(b)
	dir := b.TempDir()
	csvPath := filepath.Join(dir, "big.csv")
	writeCampaign(b, csvPath, n)
	sq, err := exec.LookPath("sqlite3")
	if err != nil {
		b.Log("sqlite3 is not installed: no reference")
	}
	reference := func() time.Duration {
		if sq == "" {
			return 0
		}
		db := filepath.Join(dir, "ref.db")
		os.Remove(db)
		el, _ := timed(b, exec.Command(sq, "-csv", db, ".import "+csvPath+" t"))
		os.Remove(db)
		return el
	}
	for range b.N {
		// Three rounds, sqlite3 before and after each bulksend import; the
		// median round is reported: the first import of a session (cold
		// caches, a machine still busy with what ran before) took 1.8×
		// where the next two took 1.2× and 1.3×.
		type round struct {
			imported, el, ref time.Duration
			ratio             float64
		}
		var rounds []round
		peak := 0.0
		before := reference()
		for range importRounds {
			cmd := exec.Command(bin, "run", csvPath, "--dry-run", "--template", "t", "--from", "1000001", "--log-level", "info")
			cmd.Env = append(os.Environ(), "TMPDIR="+dir)
			imported, el, rss := timedImport(b, cmd, n)
			after := reference()
			r := round{imported: imported, el: el, ref: (before + after) / 2}
			if r.ref > 0 {
				r.ratio = imported.Seconds() / r.ref.Seconds()
			}
			rounds = append(rounds, r)
			peak = max(peak, rss)
			before = after
		}
		slices.SortFunc(rounds, func(x, y round) int {
			if sq == "" {
				return cmp.Compare(x.imported, y.imported)
			}
			return cmp.Compare(x.ratio, y.ratio)
		})
		m := rounds[len(rounds)/2]
		b.ReportMetric(m.imported.Seconds(), "import-s")
		b.ReportMetric(m.el.Seconds(), "dry-run-s")
		b.ReportMetric(peak, "peak-RSS-MB")
		if sq == "" {
			fmt.Printf("import %d rows: bulksend %.2fs (median of %d; dry run %.2fs; sqlite3 not installed: no reference); peak RSS %.0f MB (target ≤ %d MB)\n",
				n, m.imported.Seconds(), importRounds, m.el.Seconds(), peak, importTargetRSS)
			continue
		}
		var each []string
		for _, r := range rounds {
			each = append(each, fmt.Sprintf("%.2f×", r.ratio))
		}
		b.ReportMetric(m.ref.Seconds(), "sqlite3-s")
		b.ReportMetric(m.ratio, "x-sqlite3")
		b.ReportMetric(m.el.Seconds()/m.ref.Seconds(), "dry-run-x-sqlite3")
		fmt.Printf("import %d rows: bulksend %.2fs, sqlite3 .import %.2fs (mean of the runs before and after) = %.2f×, the median of %d rounds (%s) (target ≤ %.1f×); whole dry run %.2fs = %.2f×; peak RSS %.0f MB, the highest of the rounds (target ≤ %d MB)\n",
			n, m.imported.Seconds(), m.ref.Seconds(), m.ratio, importRounds, strings.Join(each, ", "), importTargetRatio,
			m.el.Seconds(), m.el.Seconds()/m.ref.Seconds(), peak, importTargetRSS)
	}
}

// timedImport runs cmd, a `bulksend run --dry-run` of n rows logging at
// info level, and returns how long it took to log "imported" and to exit,
// and its peak RSS in MB. It fails b unless the plan counts every row.
func timedImport(b *testing.B, cmd *exec.Cmd, n int) (imported, total time.Duration, rssMB float64) {
	b.Helper()
	var out, logs bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if imported == 0 && strings.Contains(sc.Text(), "msg=imported ") {
			imported = time.Since(start)
		}
		logs.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	total = time.Since(start)
	if err != nil {
		b.Fatalf("%v: %v\n%s%s", cmd.Args, err, out.String(), logs.String())
	}
	if want := fmt.Sprintf("rows: %d total", n); !strings.Contains(out.String(), want) || imported == 0 {
		b.Fatalf("bulksend did not log \"imported\" or its plan does not say %q:\n%s%s", want, out.String(), logs.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return imported, total, float64(ru.Maxrss) / 1024 // Linux reports KiB
}

var sandboxURL = regexp.MustCompile(`BULKSEND_API_URL=(http://[0-9.:]+)`)

// BenchmarkRunRSS: a 1,000,000-row run (no rate limit) against a
// `bulksend sandbox` process; the run's peak RSS. Target ≤ 150 MB.
// It takes minutes: BULKSEND_BENCH_ROWS makes it shorter.
func BenchmarkRunRSS(b *testing.B) {
	n := rowsFromEnv()
	bin := buildBinary(b)
	dir := b.TempDir()
	csvPath := filepath.Join(dir, "run.csv")
	writeCampaign(b, csvPath, n)
	for range b.N {
		sb := exec.Command(bin, "sandbox", "--template", "t:2", "--rate", "-1", "--latency", "0", "--jitter", "0", "--transient-rate", "0",
			"--permanent-rate", "0", "--late-rate", "0", "--pair-interval", "-1s")
		url := startSandboxProcess(b, sb, nil)
		cmd := exec.Command(bin, "run", csvPath, "--template", "t", "--from", "1000001", "--rate", "0", "--concurrency", "32", "--log-level", "warn", "--progress-interval", "1h")
		cmd.Env = append(os.Environ(), "BULKSEND_API_URL="+url, "WHATSAPP_TOKEN=bench")
		el, rss := timed(b, cmd)
		sb.Process.Signal(syscall.SIGTERM)
		sb.Wait()
		b.ReportMetric(rss, "peak-RSS-MB")
		b.ReportMetric(float64(n)/el.Seconds(), "msg/s")
		fmt.Printf("run %d rows: %.0fs (%.0f msg/s, no rate limit, concurrency 32), peak RSS %.0f MB (target ≤ 150 MB)\n", n, el.Seconds(), float64(n)/el.Seconds(), rss)
	}
}
