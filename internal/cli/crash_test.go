package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
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
	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

// syncBuffer is a concurrency-safe buffer for the sandbox's records.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// rig is a campaign against an in-process sandbox, run by child processes
// of the test binary that the test can kill.
type rig struct {
	t        *testing.T
	dir, csv string
	cfg      sandbox.Config
	url      string
	sb       *sandbox.Server
	srv      *httptest.Server
	accepted *syncBuffer
	webhooks *os.File
	whw      *bufio.Writer
}

func newRig(t *testing.T, rows int, cfg sandbox.Config) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{t: t, dir: dir, csv: filepath.Join(dir, "campaign.csv"), accepted: &syncBuffer{}}
	var b strings.Builder
	b.WriteString("phone,name,code\n")
	for i := 0; i < rows; i++ {
		fmt.Fprintf(&b, "%s,Name %d,C%d\n", csvin.SampleNumber(i), i, i)
	}
	if err := os.WriteFile(r.csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r.cfg = cfg
	r.startSandbox()
	t.Cleanup(r.stopSandbox)
	return r
}

// startSandbox starts a sandbox; its webhooks are appended to
// webhooks.jsonl and what it accepts to r.accepted.
func (r *rig) startSandbox() {
	f, err := os.OpenFile(filepath.Join(r.dir, "webhooks.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		r.t.Fatal(err)
	}
	r.webhooks, r.whw = f, bufio.NewWriter(f)
	cfg := r.cfg
	cfg.Token = "test-token"
	cfg.Templates = []sandbox.Template{{Name: "welcome", BodyParams: 2}}
	cfg.Accepted = r.accepted
	cfg.Webhooks = r.whw
	r.cfg.Seed++ // a new sandbox must not hand out the same wamids
	r.sb = sandbox.New(cfg)
	r.srv = httptest.NewServer(r.sb)
	r.url = r.srv.URL
}

func (r *rig) stopSandbox() {
	if r.srv == nil {
		return
	}
	r.srv.Close()
	r.sb.Close()
	r.whw.Flush()
	r.webhooks.Close()
	r.srv = nil
}

func (r *rig) command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "BULKSEND_TEST_MAIN=1", "BULKSEND_API_URL="+r.url, "WHATSAPP_TOKEN=test-token")
	return cmd
}

func exitCodeOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func (r *rig) counts() campaign.Counts {
	st, err := store.Open(filepath.Join(r.dir, "campaign.bulksend.db"))
	if err != nil {
		r.t.Fatal(err)
	}
	defer st.Close()
	c, err := st.Counts(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

// acceptedRows returns, per campaign row, how many times the sandbox
// accepted its message, and the wamid it gave.
func (r *rig) acceptedRows() (map[int64]int, map[int64]string) {
	n, wamids := map[int64]int{}, map[int64]string{}
	for _, line := range strings.Split(strings.TrimSpace(r.accepted.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			r.t.Fatalf("accepted record %q: %v", line, err)
		}
		cb, _ := rec["biz_opaque_callback_data"].(string)
		ref, ok := campaign.ParseRef(cb)
		row := ref.Row
		if !ok {
			r.t.Fatalf("accepted message without our callback data: %q", line)
		}
		n[row]++
		wamids[row], _ = rec["wamid"].(string)
	}
	return n, wamids
}

var runArgs = []string{"run", "campaign.csv", "--from", "1000001,1000002", "--template", "welcome", "--rate", "400", "--request-timeout", "400ms"}

// TestKillResume kills runs at random points with SIGKILL and resumes:
// no recipient gets two messages, none is lost; rows the kills left in
// doubt are settled by reconcile with the sandbox's webhook log.
func TestKillResume(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes for several seconds")
	}
	const rows = 3000
	r := newRig(t, rows, sandbox.Config{
		Seed: 3, Rate: 400, PairInterval: -1,
		Latency: 20 * time.Millisecond, Jitter: 15 * time.Millisecond,
		TransientRate: 0.02, PermanentRate: 0.01, LateRate: 0.01, LateDelay: time.Second,
	})
	rng := rand.New(rand.NewPCG(1, 2))
	kills := 0
	for i := 0; i < 40; i++ {
		// The kill clock starts when sending starts, whatever the import took.
		cmd := r.command(append(runArgs, "--log-level", "info")...)
		w := startWatched(t, cmd, "msg=sending")
		<-w.seen
		wait := time.Duration(50+rng.IntN(600)) * time.Millisecond
		select {
		case err := <-w.exited:
			code := exitCodeOf(err)
			if code != ExitOK && code != ExitUnfinished {
				t.Fatalf("run %d: exit %d\n%s", i, code, w.stderr.String())
			}
		case <-time.After(wait):
			cmd.Process.Signal(syscall.SIGKILL)
			<-w.exited
			kills++
			continue
		}
		c := r.counts()
		if c.Pending == 0 && c.Sending == 0 {
			break // only rows in doubt are left
		}
	}
	if kills < 3 {
		t.Fatalf("only %d kills landed: the test proves little", kills)
	}
	c := r.counts()
	if c.Pending != 0 || c.Sending != 0 {
		t.Fatalf("after the runs: %+v", c)
	}
	t.Logf("%d kills; before reconcile: %+v", kills, c)

	// Reconcile with everything the sandbox reported.
	r.stopSandbox()
	out, err := r.command("reconcile", "campaign.csv", "webhooks.jsonl", "--unmatched", "resend", "--grace", "0s").CombinedOutput()
	if code := exitCodeOf(err); code != ExitOK {
		t.Fatalf("reconcile: exit %d\n%s", code, out)
	}
	c = r.counts()
	if c.InDoubt != 0 {
		t.Fatalf("after reconcile: %+v", c)
	}
	t.Logf("after reconcile: %+v\n%s", c, out)

	// Rows that no webhook showed sent are pending again: send them, to a
	// sandbox that answers every request in time.
	r.cfg.LateRate = 0
	r.startSandbox()
	out, err = r.command(append(runArgs, "--request-timeout", "10s")...).CombinedOutput()
	if code := exitCodeOf(err); code != ExitOK {
		t.Fatalf("final run: exit %d\n%s", code, out)
	}
	r.stopSandbox()
	c = r.counts()
	if c.Pending+c.Sending+c.InDoubt != 0 {
		t.Fatalf("after the final run: %+v", c)
	}

	perRow, wamids := r.acceptedRows()
	for row, n := range perRow {
		if n > 1 {
			t.Errorf("row %d was accepted %d times", row, n)
		}
	}
	// Every row the sandbox accepted is settled with its wamid; every other
	// row failed by an API answer.
	st, err := store.Open(filepath.Join(r.dir, "campaign.bulksend.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = st.Export(context.Background(), func(e store.ExportRow) error {
		if w, ok := wamids[e.Row]; ok {
			if e.MessageID != w || !(e.Status == campaign.Sent || e.Status == campaign.Delivered || e.Status == campaign.Read || e.Status == campaign.Failed) {
				t.Errorf("row %d accepted as %s but recorded %s %q", e.Row, w, e.Status, e.MessageID)
			}
			return nil
		}
		if !(e.Status == campaign.Failed && e.ErrorCode != 0) {
			t.Errorf("row %d never accepted but recorded %s (%d %s)", e.Row, e.Status, e.ErrorCode, e.ErrorTitle)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(perRow) == 0 || len(perRow) > rows {
		t.Errorf("%d rows accepted of %d", len(perRow), rows)
	}
}

// TestInterruptDrains: SIGINT stops claiming, lets requests in flight
// finish and records them, exits 3 with no row left sending; the next run
// finishes the campaign without a duplicate.
func TestInterruptDrains(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			r := newRig(t, 600, sandbox.Config{Seed: 5, Rate: 200, PairInterval: -1, Latency: 150 * time.Millisecond})
			cmd := r.command("run", "campaign.csv", "--from", "1000001", "--template", "welcome", "--rate", "200", "--log-level", "warn")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := waitChild(cmd)
			// Interrupt once requests are in flight.
			until(t, exited, &stderr, "50 requests", func() bool { return r.sb.Stats().Requests >= 50 })
			cmd.Process.Signal(sig)
			err := <-exited
			if code := exitCodeOf(err); code != ExitUnfinished {
				t.Fatalf("exit %d, want %d\n%s", code, ExitUnfinished, stderr.String())
			}
			c := r.counts()
			if c.Sending != 0 || c.InDoubt != 0 {
				t.Fatalf("after interrupt: %+v\n%s", c, stderr.String())
			}
			if acc := r.sb.Stats().Accepted; acc != c.Sent {
				t.Fatalf("sandbox accepted %d, checkpoint says %d sent: an answer was not recorded", acc, c.Sent)
			}
			if c.Pending == 0 {
				t.Fatalf("the interrupt came too late to test a drain: %+v", c)
			}
			if !strings.Contains(stderr.String(), "stopping") {
				t.Errorf("no word of stopping on stderr:\n%s", stderr.String())
			}
			out, err := r.command("run", "campaign.csv", "--rate", "1000", "--log-level", "warn").CombinedOutput()
			if code := exitCodeOf(err); code != ExitOK {
				t.Fatalf("resume: exit %d\n%s", code, out)
			}
			if st := r.sb.Stats(); st.Duplicates != 0 || st.Accepted != 600 {
				t.Fatalf("sandbox: %d accepted, %d duplicates; want 600, 0", st.Accepted, st.Duplicates)
			}
		})
	}
}

// TestSecondInterruptAborts: a second signal ends the run at once.
func TestSecondInterruptAborts(t *testing.T) {
	r := newRig(t, 300, sandbox.Config{Seed: 5, Rate: 100, PairInterval: -1, Latency: 5 * time.Second})
	cmd := r.command("run", "campaign.csv", "--from", "1000001", "--template", "welcome", "--rate", "100", "--log-level", "warn")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := waitChild(cmd)
	until(t, exited, &stderr, "10 requests", func() bool { return r.sb.Stats().Requests >= 10 })
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(100 * time.Millisecond) // let the first signal land before the second
	cmd.Process.Signal(syscall.SIGINT)
	err := <-exited
	if code := exitCodeOf(err); code != ExitUnfinished {
		t.Fatalf("exit %d, want %d\n%s", code, ExitUnfinished, stderr.String())
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("took %v to abort: requests in flight were waited for", el)
	}
	if !strings.Contains(stderr.String(), "aborted") {
		t.Errorf("stderr: %s", stderr.String())
	}
	// The rows in flight are in doubt for the next run, not lost.
	if c := r.counts(); c.Sending == 0 {
		t.Fatalf("after abort: %+v: expected rows left sending", c)
	}
}

// watched is a child whose stderr is read line by line as it comes.
type watched struct {
	stderr *syncBuffer
	seen   chan struct{} // closed when a line holds the marker, or at exit
	exited chan error    // its exit, once its stderr is read to the end
}

// startWatched starts cmd, watching its stderr for marker.
func startWatched(t *testing.T, cmd *exec.Cmd, marker string) *watched {
	t.Helper()
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &watched{stderr: &syncBuffer{}, seen: make(chan struct{}), exited: make(chan error, 1)}
	go func() {
		once := sync.OnceFunc(func() { close(w.seen) })
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			w.stderr.Write(append(sc.Bytes(), '\n'))
			if strings.Contains(sc.Text(), marker) {
				once()
			}
		}
		once()
		w.exited <- cmd.Wait()
	}()
	return w
}

// waitChild waits for cmd, started, in the background: its exit arrives
// on the channel.
func waitChild(cmd *exec.Cmd) <-chan error {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return exited
}

// until polls cond until it holds. It fails the test if the child exits
// first, showing its stderr (read only once the child is gone), or if
// cond does not hold within a deadline.
func until(t *testing.T, exited <-chan error, stderr fmt.Stringer, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !cond() {
		select {
		case err := <-exited:
			t.Fatalf("the child exited (%v) before %s:\n%s", err, what, stderr)
		case <-deadline:
			t.Fatalf("no %s within 30 s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestInterruptReconcile: Ctrl-C stops a reconcile with exit 3, like a
// run, even while it waits for a log that has not ended (stdin): before its
// first bytes, or in the middle of it.
func TestInterruptReconcile(t *testing.T) {
	r := newRig(t, 50, sandbox.Config{Seed: 5, Rate: 1000, PairInterval: -1})
	if out, err := r.command(runArgs...).CombinedOutput(); exitCodeOf(err) != ExitOK {
		t.Fatalf("run: %v\n%s", err, out)
	}
	r.stopSandbox()
	hooks, err := os.ReadFile(filepath.Join(r.dir, "webhooks.jsonl"))
	if err != nil || len(hooks) == 0 {
		t.Fatalf("webhook log: %d bytes, %v", len(hooks), err)
	}
	for _, tc := range []struct {
		name  string
		input []byte // written to stdin, which then stays open
	}{{"waiting for the first bytes", nil}, {"in the middle of the log", hooks}} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := r.command("reconcile", "campaign.csv", "-", "--log-level", "debug")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			c := startWatched(t, cmd, "reading webhook log")
			if _, err := stdin.Write(tc.input); err != nil {
				t.Fatal(err)
			}
			select {
			case <-c.seen:
			case <-time.After(30 * time.Second):
				t.Fatal("reconcile never started reading")
			}
			cmd.Process.Signal(syscall.SIGINT)
			select {
			case err := <-c.exited:
				if code := exitCodeOf(err); code != ExitUnfinished {
					t.Fatalf("exit %d, want %d\n%s", code, ExitUnfinished, c.stderr.String())
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatal("reconcile did not stop on an interrupt")
			}
			if out := c.stderr.String(); !strings.Contains(out, "stopping: what was applied stays") || !strings.Contains(out, "run the same command again") {
				t.Errorf("stderr:\n%s", out)
			}
		})
	}
}

// TestSandboxCommand: `bulksend sandbox` prints the line to point a run
// at it, serves a campaign, and prints its counters as JSON when stopped.
func TestSandboxCommand(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "campaign.csv")
	var b strings.Builder
	b.WriteString("phone,name\n")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "%s,N%d\n", csvin.SampleNumber(i), i)
	}
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := exec.Command(os.Args[0], "sandbox", "--template", "welcome:1", "--token", "tok", "--rate", "200",
		"--latency", "1ms", "--jitter", "0", "--transient-rate", "0", "--permanent-rate", "0", "--late-rate", "0",
		"--webhooks", filepath.Join(dir, "hooks.jsonl"))
	sb.Env = append(os.Environ(), "BULKSEND_TEST_MAIN=1")
	var stdout bytes.Buffer
	sb.Stdout = &stdout
	stderr, err := sb.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Start(); err != nil {
		t.Fatal(err)
	}
	defer sb.Process.Kill()
	sc := bufio.NewScanner(stderr)
	url := ""
	for url == "" && sc.Scan() {
		if _, u, ok := strings.Cut(sc.Text(), "BULKSEND_API_URL="); ok {
			url = strings.TrimSpace(u)
		}
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("no URL line from bulksend sandbox (got %q)", url)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	run := exec.Command(os.Args[0], "run", csv, "--from", "1000001", "--template", "welcome", "--rate", "200")
	run.Env = append(os.Environ(), "BULKSEND_TEST_MAIN=1", "BULKSEND_API_URL="+url, "WHATSAPP_TOKEN=tok")
	if out, err := run.CombinedOutput(); exitCodeOf(err) != ExitOK {
		t.Fatalf("run against bulksend sandbox: %v\n%s", err, out)
	}
	sb.Process.Signal(syscall.SIGINT)
	if err := sb.Wait(); err != nil {
		t.Fatalf("sandbox exit: %v", err)
	}
	stopped := time.Now().Unix()
	var stats sandbox.Stats
	if err := json.Unmarshal(stdout.Bytes(), &stats); err != nil {
		t.Fatalf("stats on stdout: %v\n%s", err, stdout.String())
	}
	if stats.Accepted != 100 || stats.Duplicates != 0 || stats.MaxPerSecond["1000001"] > 200 {
		t.Fatalf("stats = %+v", stats)
	}
	hooks, err := os.ReadFile(filepath.Join(dir, "hooks.jsonl"))
	if err != nil || bytes.Count(hooks, []byte("\n")) < 100 {
		t.Fatalf("webhook log: %d lines, %v", bytes.Count(hooks, []byte("\n")), err)
	}
	// Statuses come when they happen (read up to 30 s later); stopping
	// wrote those still to come: every message has its final status, none
	// stamped after the sandbox stopped. The demo's recipients talk back
	// too: each reply, tap or stop of marketing is a body of its own.
	final := map[string]bool{}
	var backs int64
	for _, line := range bytes.Split(bytes.TrimSpace(hooks), []byte("\n")) {
		var b struct {
			Entry []struct {
				Changes []struct {
					Field string
					Value struct {
						Statuses        []struct{ ID, Status, Timestamp string }
						Messages        []struct{ From, Type string }
						UserPreferences []struct{ Value string } `json:"user_preferences"`
					}
				}
			}
		}
		if err := json.Unmarshal(line, &b); err != nil || len(b.Entry) != 1 || len(b.Entry[0].Changes) != 1 {
			t.Fatalf("webhook line %s: %v", line, err)
		}
		c := b.Entry[0].Changes[0]
		if len(c.Value.Messages)+len(c.Value.UserPreferences) == 1 && len(c.Value.Statuses) == 0 &&
			(c.Field == "messages" || c.Field == "user_preferences") {
			backs++
			continue
		}
		if len(c.Value.Statuses) != 1 {
			t.Fatalf("webhook line %s: neither one status nor what a recipient sent back", line)
		}
		st := c.Value.Statuses[0]
		if ts, err := strconv.ParseInt(st.Timestamp, 10, 64); err != nil || ts > stopped {
			t.Errorf("%s stamped %s, after the sandbox stopped (%d)", st.Status, st.Timestamp, stopped)
		}
		final[st.ID] = final[st.ID] || st.Status == "delivered" || st.Status == "read" || st.Status == "failed"
	}
	n := 0
	for _, ok := range final {
		if ok {
			n++
		}
	}
	if len(final) != 100 || n != 100 {
		t.Errorf("webhook log: %d messages, %d with a final status; want 100, 100", len(final), n)
	}
	if want := stats.Replies + stats.ButtonTaps + stats.PreferenceStops; backs != want {
		t.Errorf("webhook log: %d bodies sent back by recipients, stats count %d", backs, want)
	}
}
