package receive_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/listen"
	"github.com/bulksend/bulksend/internal/logfile"
	"github.com/bulksend/bulksend/internal/whatsapp/receive"
	"github.com/bulksend/bulksend/internal/whatsapp/webhook"
)

const (
	testSecret = "9f2b6c1e8d0a4f73b5e1c2d3a4b5c6d7" // an app secret is 32 hex digits
	testToken  = "verify-me-7Qk2"
	phoneID    = "106540352242922" // the fact sheet's phone_number_id
)

// sign is X-Hub-Signature-256 for body under secret, written here again
// rather than taken from the package, so that a wrong signer there cannot
// agree with itself.
func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// wamid is the message ID of the i-th test body.
func wamid(i int) string {
	return fmt.Sprintf("wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI%010dQjZFOURFNjhCMUY3NTA0OAA=", i)
}

// statusBody is a delivered status for message i, as Meta sends it (the
// fact sheet's example: one status, its pricing and conversation), about
// 600 bytes.
func statusBody(i int) []byte {
	return webhook.Body(phoneID, webhook.Status{
		WAMID: wamid(i), Status: "delivered", Timestamp: time.Unix(1750030073+int64(i), 0),
		RecipientID: "16505551234", CallbackData: fmt.Sprintf("bulksend:01J9ZK3X8W2Q:%d", i),
	})
}

// config is a receiver's config for a test: its own folder, the test's
// secret and token.
func config(t testing.TB) receive.Config {
	return receive.Config{VerifyToken: testToken, AppSecret: []byte(testSecret), Dir: t.TempDir()}
}

// open starts a receiver of cfg that the test closes when it ends.
func open(t testing.TB, cfg receive.Config) *receive.Receiver {
	t.Helper()
	r, err := receive.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// serve serves r on loopback with the receiver's limits until the test
// ends, and returns its URL.
func serve(t testing.TB, r *receive.Receiver) string {
	t.Helper()
	srv, err := listen.Loopback(r, receive.Limits, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return "http://" + srv.Addr().String() + "/webhook"
}

// client is an HTTP client that keeps up to n connections alive.
func client(n int) *http.Client {
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxIdleConns: n}}
}

// post POSTs body signed with the test's secret and returns the status
// code.
func post(c *http.Client, url string, body []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(receive.SignatureHeader, sign(testSecret, body))
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// kept is what the log's files hold, as reconcile reads them.
type kept struct {
	where  map[string][]string // WAMID → the files it is in, once per time
	counts webhook.Counts      // summed over the files
	files  []string            // Files' list
}

// readLog reads every file of the log in dir with the webhook reader that
// `bulksend reconcile` uses, gzip or not. A file it cannot read to the end
// fails the test.
func readLog(t testing.TB, dir string) kept {
	t.Helper()
	files, err := receive.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := kept{where: map[string][]string{}, files: files}
	for _, path := range files {
		f, err := logfile.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := webhook.NewReader(f)
		for {
			st, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("read %s: %v", path, err)
			}
			k.where[st.WAMID] = append(k.where[st.WAMID], filepath.Base(path))
		}
		f.Close()
		c := r.Counts()
		k.counts.Lines += c.Lines
		k.counts.Statuses += c.Statuses
		k.counts.Invalid += c.Invalid
		k.counts.NotStatus += c.NotStatus
	}
	return k
}

// once fails the test unless each of ids is in the log exactly once.
func (k kept) once(t testing.TB, ids []string) {
	t.Helper()
	var missing, twice []string
	for _, id := range ids {
		switch n := len(k.where[id]); {
		case n == 0:
			missing = append(missing, id)
		case n > 1:
			twice = append(twice, fmt.Sprintf("%s in %v", id, k.where[id]))
		}
	}
	if len(missing) > 0 || len(twice) > 0 {
		t.Fatalf("of %d bodies, %d missing from the log (%.3q…), %d kept more than once (%.3q…)",
			len(ids), len(missing), missing, len(twice), twice)
	}
}

// accounted fails the test unless every POST is counted once.
func accounted(t testing.TB, s receive.Stats) {
	t.Helper()
	if sum := s.Kept + s.BadSignature + s.MissingSignature + s.TooLarge + s.ReadFailed + s.NotJSON + s.Unkept; sum != s.Received {
		t.Errorf("stats %+v: %d POSTs received, %d counted by outcome", s, s.Received, sum)
	}
}

// dirNames lists dir, sorted.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// clock is a settable Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// faultyFile is a log file that fails when its function fields say so;
// nil fields pass through.
type faultyFile struct {
	receive.File
	write func(f receive.File, p []byte) (int, error)
	sync  func(f receive.File) error
}

func (f *faultyFile) Write(p []byte) (int, error) {
	if f.write != nil {
		return f.write(f.File, p)
	}
	return f.File.Write(p)
}

func (f *faultyFile) Sync() error {
	if f.sync != nil {
		return f.sync(f.File)
	}
	return f.File.Sync()
}

// waitFor polls cond until it holds, failing the test after a minute:
// for what happens in another goroutine with no event to wait on.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
	}
}

// lines reads the plain file at path as lines.
func lines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")
}
