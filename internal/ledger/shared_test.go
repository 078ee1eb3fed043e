package ledger

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// admitMany admits batches of batch phones named prefix0, prefix1, ...
// at t0 under limit, and returns how many it was given.
func admitMany(ctx context.Context, l *Ledger, prefix string, batches, batch, limit int) (int, error) {
	n := 0
	for b := range batches {
		phones := make([]string, batch)
		for i := range phones {
			phones[i] = fmt.Sprintf("%s%d", prefix, b*batch+i)
		}
		got, err := l.Admit(ctx, portfolio, phones, t0, limit)
		if err != nil {
			return n, err
		}
		for _, a := range got {
			if a {
				n++
			}
		}
	}
	return n, nil
}

// Two handles on one file, admitting at once, are given the limit between
// them, never more.
func TestTwoHandlesShareTheLimit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	const limit = 600
	handles := []*Ledger{openTest(t, path), openTest(t, path)}
	got := make([]int, len(handles))
	errs := make([]error, len(handles))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, l := range handles {
		wg.Go(func() {
			<-start
			got[i], errs[i] = admitMany(ctx, l, fmt.Sprintf("+1555%d", i), 200, 3, limit)
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		must(t, err)
	}
	if got[0]+got[1] != limit {
		t.Errorf("admitted %d + %d, want %d in all", got[0], got[1], limit)
	}
	if used, _, err := handles[0].Used(ctx, portfolio, t0); err != nil || used != limit {
		t.Errorf("used %d (%v), want %d", used, err, limit)
	}
	checkBudgets(t, handles[0])
}

// childEnv names the ledger a child process of TestProcessesShareTheLimit
// admits into; childPrefix its phones.
const (
	childEnv    = "BULKSEND_LEDGER_TEST_CHILD"
	childPrefix = "BULKSEND_LEDGER_TEST_PREFIX"
)

// Each process asks for 1,200 phones in small batches, so that the limit
// is reached while all of them are admitting.
const (
	childBatches = 400
	childBatch   = 3
	childLimit   = 1800
)

// Processes admitting into one ledger at once are given the limit between
// them, never more: the test binary runs itself as each process, which
// opens the ledger, says it is ready, and waits for a line on stdin, so
// that all admit together.
func TestProcessesShareTheLimit(t *testing.T) {
	if path := os.Getenv(childEnv); path != "" {
		child(t, path, os.Getenv(childPrefix))
		return
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	create(t, path)
	const processes = 3
	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
	}
	procs := make([]*proc, processes)
	for i := range procs {
		p := &proc{cmd: exec.Command(os.Args[0], "-test.run=^TestProcessesShareTheLimit$", "-test.count=1")}
		p.cmd.Env = append(os.Environ(), childEnv+"="+path, fmt.Sprintf("%s=+1666%d", childPrefix, i))
		p.cmd.Stderr = os.Stderr
		stdout, err := p.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		p.out = bufio.NewReader(stdout)
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
		procs[i] = p
	}
	for i, p := range procs {
		if line, err := p.out.ReadString('\n'); line != "ready\n" {
			t.Fatalf("process %d: %q, %v; want ready", i, line, err)
		}
	}
	for _, p := range procs {
		fmt.Fprintln(p.stdin, "go")
		p.stdin.Close()
	}
	total := 0
	for i, p := range procs {
		out, err := io.ReadAll(p.out)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, out)
		}
		n, ok := admittedLine(string(out))
		if !ok {
			t.Fatalf("process %d said no count:\n%s", i, out)
		}
		total += n
	}
	if total != childLimit {
		t.Errorf("%d processes admitted %d in all, want %d", processes, total, childLimit)
	}
	l := openTest(t, path)
	if used, _, err := l.Used(context.Background(), portfolio, t0); err != nil || used != childLimit {
		t.Errorf("used %d (%v), want %d", used, err, childLimit)
	}
	checkBudgets(t, l)
}

// child is one process of TestProcessesShareTheLimit.
func child(t *testing.T, path, prefix string) {
	l := openTest(t, path)
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	n, err := admitMany(context.Background(), l, prefix, childBatches, childBatch, childLimit)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("admitted %d\n", n)
}

func admittedLine(out string) (int, bool) {
	for line := range strings.Lines(out) {
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), "admitted "); ok {
			n, err := strconv.Atoi(s)
			return n, err == nil
		}
	}
	return 0, false
}
