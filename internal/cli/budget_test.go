package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/budget/redistest"
	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

// sandboxProc is `bulksend sandbox` run by a child of the test binary.
type sandboxProc struct {
	t   *testing.T
	url string
	cmd *exec.Cmd
}

// startSandboxProc starts `bulksend sandbox` with a welcome template of
// one parameter, token tok, no injected failures, and args.
func startSandboxProc(t *testing.T, args ...string) *sandboxProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"sandbox", "--template", "welcome:1", "--token", "tok",
		"--transient-rate", "0", "--permanent-rate", "0", "--late-rate", "0", "--pair-interval", "-1s"}, args...)...)
	cmd.Env = append(os.Environ(), "BULKSEND_TEST_MAIN=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	s := &sandboxProc{t: t, cmd: cmd}
	for s.url == "" && sc.Scan() {
		if _, u, ok := strings.Cut(sc.Text(), "BULKSEND_API_URL="); ok {
			s.url = strings.Fields(u)[0]
		}
	}
	if s.url == "" {
		t.Fatal("no URL line from bulksend sandbox")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return s
}

// stats reads the sandbox's counters.
func (s *sandboxProc) stats() sandbox.Stats {
	s.t.Helper()
	resp, err := http.Get(s.url + "/_sandbox/stats")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var st sandbox.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		s.t.Fatal(err)
	}
	return st
}

// run is a `bulksend run` child against s, in dir.
func (s *sandboxProc) run(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"run"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BULKSEND_TEST_MAIN=1", "BULKSEND_API_URL="+s.url, "WHATSAPP_TOKEN=tok")
	return cmd
}

// start starts a run child in dir; its output goes to the buffer, its
// exit to the channel.
func (s *sandboxProc) start(dir string, args ...string) (*exec.Cmd, *syncBuffer, <-chan error) {
	s.t.Helper()
	cmd := s.run(dir, args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	return cmd, out, waitChild(cmd)
}

// writeRows writes a campaign of rows recipients from the sample number
// first on: campaigns that share a number have recipients of their own.
func writeRows(t *testing.T, path string, first, rows int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("phone,name\n")
	for i := first; i < first+rows; i++ {
		fmt.Fprintf(&b, "%s,N%d\n", csvin.SampleNumber(i), i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// countsAt reads the counts of the checkpoint at path.
func countsAt(t *testing.T, path string) campaign.Counts {
	t.Helper()
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := st.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// acceptedRate is what the sandbox's accepted record shows: the messages
// of number from accepted per second from its first to its last.
func acceptedRate(t *testing.T, path, from string) (n int, perSecond float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var first, last time.Time
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			Number string    `json:"phone_number_id"`
			Time   time.Time `json:"time"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Number != from {
			continue
		}
		if n == 0 || r.Time.Before(first) {
			first = r.Time
		}
		if r.Time.After(last) {
			last = r.Time
		}
		n++
	}
	if n < 2 {
		return n, 0
	}
	return n, float64(n-1) / last.Sub(first).Seconds()
}

// TestBudgetSharedByProcesses: three processes, three campaigns, one
// number, --budget through a real redis-server, against a sandbox process
// whose strict window allows the number 100 requests a second: nothing
// throttled, every campaign complete, and together near the limit. The
// figures at 400/s, with two numbers, processes started apart and one
// killed, are BenchmarkSharedBudget's.
func TestBudgetSharedByProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("sends for several seconds")
	}
	rs := redistest.Start(t)
	dir := t.TempDir()
	accepted := filepath.Join(dir, "accepted.jsonl")
	sb := startSandboxProc(t, "--strict-window", "--rate", "100", "--latency", "20ms", "--jitter", "5ms", "--accepted", accepted)
	// Each process is told 96/s, 4% under the window: a booking counts
	// 20 ms (maxLate) past its slot, and a race-built child among five
	// processes on two busy cores leaves later than that now and then
	// (CI, and here: 1-2 throttles, 101-102 arrivals in a second, told
	// 100/s). Three unshared processes at 96/s would be throttled by the
	// hundred; exactness at the limit is BenchmarkSharedBudget's.
	const rows, told = 150, 96
	var exits []<-chan error
	var outs []*syncBuffer
	for i, name := range []string{"a", "b", "c"} {
		writeRows(t, filepath.Join(dir, name+".csv"), i*rows, rows)
		_, out, exited := sb.start(dir, name+".csv", "--from", "1000001", "--template", "welcome", "--rate", fmt.Sprint(told), "--budget", rs.URL(), "--log-level", "warn")
		exits, outs = append(exits, exited), append(outs, out)
	}
	for i, exited := range exits {
		if code := exitCodeOf(<-exited); code != ExitOK {
			t.Errorf("run %d: exit %d\n%s", i, code, outs[i])
		}
	}
	st := sb.stats()
	n, rate := acceptedRate(t, accepted, "1000001")
	t.Logf("%d accepted, %.1f/s together (%.3f of 100/s), %d throttled, at most %d arrivals in a sliding second",
		n, rate, rate/100, st.Throttled, st.MaxArrivals["1000001"])
	if st.Accepted != 3*rows || st.Duplicates != 0 || st.Throttled != 0 {
		t.Fatalf("sandbox: %d accepted, %d duplicates, %d throttled; want %d, 0, 0", st.Accepted, st.Duplicates, st.Throttled, 3*rows)
	}
	// A generous floor: the processes are the race detector's, on a
	// machine shared with others.
	if rate < 0.85*told {
		t.Errorf("together %.1f/s: the processes did not reach the number's limit", rate)
	}
}

// TestBudgetServerGone: Redis killed while three processes send: each
// stops booking, lets its requests in flight finish and exits 3 with the
// hint; nothing is left sending or in doubt, nothing was sent twice.
// Started again, the resumes finish.
func TestBudgetServerGone(t *testing.T) {
	if testing.Short() {
		t.Skip("sends for several seconds")
	}
	rs := redistest.Start(t)
	dir := t.TempDir()
	sb := startSandboxProc(t, "--strict-window", "--rate", "200", "--latency", "30ms", "--jitter", "5ms")
	const rows = 400
	names := []string{"a", "b", "c"}
	cmds := make([]*exec.Cmd, len(names))
	outs := make([]*syncBuffer, len(names))
	exits := make([]<-chan error, len(names))
	args := func(name string) []string {
		return []string{name + ".csv", "--from", "1000001", "--template", "welcome", "--rate", "200", "--budget", rs.URL(), "--log-level", "warn"}
	}
	for i, name := range names {
		writeRows(t, filepath.Join(dir, name+".csv"), i*rows, rows)
		cmds[i], outs[i], exits[i] = sb.start(dir, args(name)...)
	}
	deadline := time.Now().Add(30 * time.Second)
	for sb.stats().Accepted < 200 {
		if time.Now().After(deadline) {
			t.Fatal("no 200 accepted within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	rs.Stop()
	for i, cmd := range cmds {
		select {
		case err := <-exits[i]:
			if code := exitCodeOf(err); code != ExitUnfinished {
				t.Errorf("run %d: exit %d, want %d\n%s", i, code, ExitUnfinished, outs[i])
			}
			if !strings.Contains(outs[i].String(), "hint: the shared budget's Redis server does not answer") {
				t.Errorf("run %d: no hint:\n%s", i, outs[i])
			}
		case <-time.After(15 * time.Second):
			cmd.Process.Signal(syscall.SIGKILL)
			t.Fatalf("run %d still runs 15 s after Redis went away\n%s", i, outs[i])
		}
	}
	sent := int64(0)
	for _, name := range names {
		c := countsAt(t, filepath.Join(dir, name+".bulksend.db"))
		if c.Sending != 0 || c.InDoubt != 0 || c.Pending == 0 {
			t.Errorf("%s after Redis went away: %+v", name, c)
		}
		sent += c.Sent
	}
	if st := sb.stats(); st.Accepted != sent || st.Duplicates != 0 {
		t.Fatalf("sandbox accepted %d (%d twice); the checkpoints say %d sent", st.Accepted, st.Duplicates, sent)
	}

	rs.Restart()
	for i, name := range names {
		cmds[i], outs[i], exits[i] = sb.start(dir, args(name)...)
	}
	for i := range cmds {
		if code := exitCodeOf(<-exits[i]); code != ExitOK {
			t.Errorf("resume %d: exit %d\n%s", i, code, outs[i])
		}
	}
	st := sb.stats()
	// Nothing lost, nothing twice. A throttle or two is allowed: the
	// resumes start together on race-built children sharing two cores
	// (CI saw 1), and a throttled send is tried again, never lost.
	if st.Accepted != 3*rows || st.Duplicates != 0 || st.Throttled > 3 {
		t.Fatalf("after the resumes the sandbox has %d accepted, %d twice, %d throttled; want %d, 0, at most 3", st.Accepted, st.Duplicates, st.Throttled, 3*rows)
	}
}

// TestLeaseSplitsANumber: two runs on one machine, one number, no
// --budget: the second sees the first through the operator ledger's
// leases, both say so (the log, status), and together they keep within
// the number's limit: nothing throttled, both complete.
func TestLeaseSplitsANumber(t *testing.T) {
	if testing.Short() {
		t.Skip("sends for several seconds")
	}
	dir := t.TempDir()
	sb := startSandboxProc(t, "--strict-window", "--rate", "100", "--latency", "20ms", "--jitter", "5ms")
	// a outlasts b by about three seconds at the whole rate, so that it
	// sees b end even when b's start is slow (CI: a finished 0.2 s before).
	writeRows(t, filepath.Join(dir, "a.csv"), 0, 600)
	writeRows(t, filepath.Join(dir, "b.csv"), 600, 200)
	args := func(name string) []string {
		return []string{name + ".csv", "--from", "1000001", "--template", "welcome", "--rate", "100", "--log-level", "info", "--progress-interval", "1h"}
	}
	_, aOut, aDone := sb.start(dir, args("a")...)
	until(t, aDone, aOut, "50 accepted", func() bool { return sb.stats().Accepted >= 50 })
	_, bOut, bDone := sb.start(dir, args("b")...)
	until(t, bDone, bOut, "the split", func() bool { return strings.Contains(bOut.String(), "2 runs on this machine send from it") })
	status := exec.Command(os.Args[0], "status", "a.csv")
	status.Dir, status.Env = dir, append(os.Environ(), "BULKSEND_TEST_MAIN=1")
	out, err := status.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "number 1000001 is shared with 1 other run(s) on this machine") {
		t.Errorf("status while both run (%v):\n%s", err, out)
	}
	for name, done := range map[string]<-chan error{"a": aDone, "b": bDone} {
		if code := exitCodeOf(<-done); code != ExitOK {
			t.Errorf("run %s: exit %d\n%s%s", name, code, aOut, bOut)
		}
	}
	st := sb.stats()
	t.Logf("%d accepted, %d throttled, at most %d arrivals in a sliding second", st.Accepted, st.Throttled, st.MaxArrivals["1000001"])
	if st.Accepted != 800 || st.Throttled != 0 || st.Duplicates != 0 {
		t.Fatalf("sandbox: %d accepted, %d throttled, %d twice; want 800, 0, 0\n%s%s", st.Accepted, st.Throttled, st.Duplicates, aOut, bOut)
	}
	if !strings.Contains(aOut.String(), "2 runs on this machine send from it") || !strings.Contains(aOut.String(), "this run sends at the whole 100/s") {
		t.Errorf("run a did not say it split the number, then took it whole:\n%s", aOut)
	}
}

// TestBudgetFlags: each wrong --budget gets its own message and exit code
// before anything is sent; a server that does not answer is exit 3 with
// the hint.
func TestBudgetFlags(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "c.csv")
	writeRows(t, csv, 0, 3)
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	cases := []struct {
		name string
		args []string
		env  map[string]string
		code int
		want string
	}{
		{name: "not a Redis URL", args: []string{"--budget", "http://cache:6379"}, code: ExitUsage, want: "invalid --budget"},
		{name: "not a Redis URL, from the environment", env: map[string]string{"BULKSEND_BUDGET": "cache:6379"}, code: ExitUsage, want: "invalid $BULKSEND_BUDGET"},
		{name: "two passwords", args: []string{"--budget", "redis://:a@cache/0", "--budget-password-file", secret}, code: ExitUsage, want: "has a password, and another is given"},
		{name: "a password file without a budget", args: []string{"--budget-password-file", secret}, code: ExitUsage, want: "goes with --budget"},
		{name: "nobody answers", args: []string{"--budget", "redis://:s3cret@" + closed + "/0"}, code: ExitUnfinished, want: "hint: the shared budget's Redis server does not answer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"WHATSAPP_TOKEN": "tok", "BULKSEND_API_URL": "http://" + closed}
			for k, v := range tc.env {
				env[k] = v
			}
			var out, errOut bytes.Buffer
			args := append([]string{"run", csv, "--from", "1000001", "--template", "welcome", "--no-preflight"}, tc.args...)
			code := runMain(args, &IO{In: strings.NewReader(""), Out: &out, Err: &errOut, Getenv: func(k string) string { return env[k] }, Abort: func(int) {}})
			if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s", code, tc.code, tc.want, errOut.String())
			}
			if strings.Contains(errOut.String(), "s3cret") {
				t.Fatalf("the password shows:\n%s", errOut.String())
			}
		})
	}
}
