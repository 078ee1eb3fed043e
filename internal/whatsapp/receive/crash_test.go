package receive_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/listen"
	"github.com/bulksend/bulksend/internal/whatsapp/receive"
)

// childEnv switches the test binary into a receiver serving the folder it
// names, for TestKill9.
const childEnv = "BULKSEND_RECEIVE_TEST_CHILD"

// childSize is the child's rotation size: small, so that files are being
// compressed when it is killed.
const childSize = 32 << 10

// TestKill9 runs a receiver in a child process, POSTs to it from 8
// clients, and kills it with SIGKILL the moment the 600th 200 comes back,
// with POSTs still in flight. Every body answered 200 is in the log
// exactly once; the log is read whole by reconcile's reader (a cut
// compression leaves the plain file, which is listed); and once a new
// receiver has recovered the folder, no partial line or temporary file is
// left. (A kill keeps what the kernel has; a power cut would need the
// fsync, which no test here can cut.)
func TestKill9(t *testing.T) {
	if dir := os.Getenv(childEnv); dir != "" {
		child(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the child's address: %v", err)
	}
	url := "http://" + strings.TrimSpace(addr) + "/"

	const n, clients = 600, 8
	c := client(clients)
	var (
		next    atomic.Int64
		mu      sync.Mutex
		acked   []string
		inLimbo atomic.Int64 // POSTs sent but not answered when the child died
		wg      sync.WaitGroup
		kill    sync.Once
	)
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				code, err := post(c, url, statusBody(i))
				if err != nil {
					inLimbo.Add(1)
					return // the child is dead
				}
				if code != 200 {
					t.Errorf("POST %d: %d", i, code)
					return
				}
				mu.Lock()
				acked = append(acked, wamid(i))
				last := len(acked) == n
				mu.Unlock()
				if last {
					kill.Do(func() {
						cmd.Process.Signal(syscall.SIGKILL)
					})
				}
			}
		})
	}
	wg.Wait()
	killed = true
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the child: %v, want killed", err)
	}
	t.Logf("%d POSTs answered 200 before the kill, %d in flight at it; folder: %q", len(acked), inLimbo.Load(), dirNames(t, dir))
	if len(acked) < n {
		t.Fatalf("only %d POSTs answered", len(acked))
	}

	// As the kill left it.
	readLog(t, dir).once(t, acked)

	// Recovered by the next receiver.
	r, err := receive.New(receive.Config{VerifyToken: testToken, AppSecret: []byte(testSecret), Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	k := readLog(t, dir)
	k.once(t, acked)
	if k.counts.Invalid != 0 {
		t.Errorf("%d invalid records after recovery, want 0", k.counts.Invalid)
	}
	for i, f := range k.files {
		if gz := strings.HasSuffix(f, ".gz"); gz != (i < len(k.files)-1) {
			t.Errorf("%s after recovery: only the last file should be plain", f)
		}
	}
	for _, name := range dirNames(t, dir) {
		if strings.HasSuffix(name, ".tmp") {
			t.Errorf("%s left after recovery", name)
		}
	}
}

// child serves a receiver on dir until it is killed, after printing its
// address.
func child(dir string) {
	r, err := receive.New(receive.Config{VerifyToken: testToken, AppSecret: []byte(testSecret), Dir: dir, Rotate: receive.RotatePolicy{Size: childSize}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv, err := listen.Loopback(r, receive.Limits, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(srv.Addr().String())
	time.Sleep(10 * time.Minute) // until the parent kills it
	os.Exit(2)
}
