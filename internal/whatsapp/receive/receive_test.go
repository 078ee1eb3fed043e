package receive_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/listen"
	"github.com/bulksend/bulksend/internal/listen/listentest"
	"github.com/bulksend/bulksend/internal/whatsapp/receive"
)

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*receive.Config)
		want error // errors.Is target; nil: any error
	}{
		{"no secret", func(c *receive.Config) { c.AppSecret = nil }, receive.ErrNoSecret},
		{"no token", func(c *receive.Config) { c.VerifyToken = "" }, receive.ErrNoToken},
		{"no folder", func(c *receive.Config) { c.Dir = "" }, nil},
		{"no webhooks, but a secret", func(c *receive.Config) { c.NoWebhooks, c.VerifyToken = true, "" }, nil},
		{"negative size", func(c *receive.Config) { c.Rotate.Size = -1 }, nil},
		{"negative max body", func(c *receive.Config) { c.MaxBody = -1 }, nil},
		{"a folder that is a file", func(c *receive.Config) {
			c.Dir = filepath.Join(c.Dir, "file")
			os.WriteFile(c.Dir, nil, 0o600)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(t)
			tc.edit(&cfg)
			r, err := receive.New(cfg)
			if err == nil {
				r.Close()
				t.Fatal("New: no error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("New: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestKeep: a receiver of no webhooks answers Meta's GETs and POSTs 404,
// and keeps what Keep is given, one line each (a pretty-printed body
// compacted), in the log reconcile reads; what is not JSON it refuses, and
// once closed it keeps nothing.
func TestKeep(t *testing.T) {
	cfg := receive.Config{NoWebhooks: true, Dir: t.TempDir()}
	r := open(t, cfg)
	url := serve(t, r)
	body := statusBody(1)
	if code, err := post(client(1), url, body); err != nil || code != http.StatusNotFound {
		t.Errorf("POST: %d %v, want 404", code, err)
	}
	pretty := &bytes.Buffer{}
	json.Indent(pretty, statusBody(2), "", "  ")
	orig := bytes.Clone(pretty.Bytes())
	for _, b := range [][]byte{statusBody(1), pretty.Bytes()} {
		if err := r.Keep(b); err != nil {
			t.Fatalf("Keep: %v", err)
		}
	}
	if !bytes.Equal(pretty.Bytes(), orig) {
		t.Error("Keep wrote to its argument")
	}
	if err := r.Keep([]byte("STOP")); !errors.Is(err, receive.ErrNotJSON) {
		t.Errorf("Keep(not JSON): %v, want %v", err, receive.ErrNotJSON)
	}
	if s := r.Stats(); s.Received != 0 || s.Fsyncs == 0 {
		t.Errorf("stats %+v: want no POSTs, and fsyncs", s)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Keep(statusBody(3)); !errors.Is(err, receive.ErrClosed) {
		t.Errorf("Keep after Close: %v, want %v", err, receive.ErrClosed)
	}
	readLog(t, cfg.Dir).once(t, []string{wamid(1), wamid(2)})
}

// TestNewMakesPrivateFiles: bodies hold phone numbers: the folder is 0700
// and the log 0600, whatever the umask.
func TestNewMakesPrivateFiles(t *testing.T) {
	cfg := config(t)
	cfg.Dir = filepath.Join(cfg.Dir, "log", "webhooks")
	cfg.Now = func() time.Time { return time.Date(2026, 12, 2, 23, 30, 0, 0, time.FixedZone("UTC-5", -5*3600)) }
	r := open(t, cfg)
	url := serve(t, r)
	if code, err := post(client(1), url, statusBody(1)); err != nil || code != http.StatusOK {
		t.Fatalf("POST: %d, %v", code, err)
	}
	for path, want := range map[string]os.FileMode{
		cfg.Dir: 0o700 | os.ModeDir,
		filepath.Join(cfg.Dir, "webhooks-2026-12-03.jsonl"): 0o600, // the UTC day, not the local one
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
	}
}

// TestHandshake: the challenge comes back only with the right token and
// mode; the token is checked first, so that a caller without it learns
// nothing of the rest.
func TestHandshake(t *testing.T) {
	const odd = "tok en+/&é=" // a token as an operator might write it, escaped in the URL
	cfg := config(t)
	cfg.VerifyToken = odd
	r := open(t, cfg)
	for _, tc := range []struct {
		name  string
		query url.Values
		code  int
		body  string
	}{
		{"right", url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {odd}, "hub.challenge": {"1158201444"}}, 200, "1158201444"},
		{"wrong token", url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {"tok en"}, "hub.challenge": {"1"}}, 403, ""},
		{"the token with a byte more", url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {odd + "x"}, "hub.challenge": {"1"}}, 403, ""},
		{"no token", url.Values{"hub.mode": {"subscribe"}, "hub.challenge": {"1"}}, 403, ""},
		{"wrong token and mode", url.Values{"hub.mode": {"unsubscribe"}, "hub.verify_token": {"x"}, "hub.challenge": {"1"}}, 403, ""},
		{"wrong mode", url.Values{"hub.mode": {"unsubscribe"}, "hub.verify_token": {odd}, "hub.challenge": {"1"}}, 400, ""},
		{"no mode", url.Values{"hub.verify_token": {odd}, "hub.challenge": {"1"}}, 400, ""},
		{"no challenge", url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {odd}}, 400, ""},
		{"empty challenge", url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {odd}, "hub.challenge": {""}}, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := r.Stats()
			w := httptest.NewRecorder()
			r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/webhook?"+tc.query.Encode(), nil))
			if w.Code != tc.code {
				t.Fatalf("GET ?%s: %d, want %d", tc.query.Encode(), w.Code, tc.code)
			}
			after := r.Stats()
			ok, refused := after.HandshakesOK-before.HandshakesOK, after.HandshakesRefused-before.HandshakesRefused
			if tc.code != 200 {
				if ok != 0 || refused != 1 {
					t.Errorf("refused handshake counted %d ok, %d refused", ok, refused)
				}
				return
			}
			if got := w.Body.String(); got != tc.body {
				t.Errorf("body %q, want %q", got, tc.body)
			}
			if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("Content-Type %q, want text/plain", ct)
			}
			if ok != 1 || refused != 0 {
				t.Errorf("handshake counted %d ok, %d refused", ok, refused)
			}
		})
	}
}

// TestSignatures POSTs over real HTTP, so that the header's case is the
// wire's: only a body whose signature is the HMAC of its raw bytes under
// the app secret is kept.
func TestSignatures(t *testing.T) {
	cfg := config(t)
	r := open(t, cfg)
	url := serve(t, r)
	c := client(1)
	compact := statusBody(1)
	var pretty bytes.Buffer
	json.Indent(&pretty, statusBody(2), "", "  ")
	spaced := bytes.Replace(statusBody(3), []byte(`,"entry"`), []byte(`, "entry"`), 1)

	type outcome int
	const (
		kept outcome = iota
		bad
		missing
		notJSON
	)
	var want []string // bodies that must be kept, by their WAMID
	for _, tc := range []struct {
		name   string
		body   []byte
		header map[string][]string // as sent, key case included
		code   int
		out    outcome
		id     int // the body's message number, if it is kept
	}{
		{"right", compact, map[string][]string{"X-Hub-Signature-256": {sign(testSecret, compact)}}, 200, kept, 1},
		{"header name in lowercase", statusBody(4), map[string][]string{"x-hub-signature-256": {sign(testSecret, statusBody(4))}}, 200, kept, 4},
		{"header name in capitals", statusBody(5), map[string][]string{"X-HUB-SIGNATURE-256": {sign(testSecret, statusBody(5))}}, 200, kept, 5},
		{"hex in capitals", statusBody(6), map[string][]string{"X-Hub-Signature-256": {"sha256=" + strings.ToUpper(strings.TrimPrefix(sign(testSecret, statusBody(6)), "sha256="))}}, 200, kept, 6},
		{"pretty-printed, signed as sent", pretty.Bytes(), map[string][]string{"X-Hub-Signature-256": {sign(testSecret, pretty.Bytes())}}, 200, kept, 2},
		{"whitespace added after signing", spaced, map[string][]string{"X-Hub-Signature-256": {sign(testSecret, statusBody(3))}}, 403, bad, 0},
		{"pretty-printed after signing", pretty.Bytes(), map[string][]string{"X-Hub-Signature-256": {sign(testSecret, statusBody(2))}}, 403, bad, 0},
		{"signed with another secret", statusBody(7), map[string][]string{"X-Hub-Signature-256": {sign("another-app-secret", statusBody(7))}}, 403, bad, 0},
		{"a hash, not an HMAC", statusBody(8), map[string][]string{"X-Hub-Signature-256": {"sha256=" + strings.Repeat("0", 64)}}, 403, bad, 0},
		{"one digit changed", statusBody(9), map[string][]string{"X-Hub-Signature-256": {flip(sign(testSecret, statusBody(9)))}}, 403, bad, 0},
		{"not hex", statusBody(10), map[string][]string{"X-Hub-Signature-256": {"sha256=" + strings.Repeat("zz", 32)}}, 403, bad, 0},
		{"no prefix", statusBody(11), map[string][]string{"X-Hub-Signature-256": {strings.TrimPrefix(sign(testSecret, statusBody(11)), "sha256=")}}, 403, bad, 0},
		{"the old SHA-1 header only", statusBody(12), map[string][]string{"X-Hub-Signature": {"sha1=0123456789abcdef0123456789abcdef01234567"}}, 401, missing, 0},
		{"twice", statusBody(13), map[string][]string{"X-Hub-Signature-256": {sign(testSecret, statusBody(13)), sign(testSecret, statusBody(13))}}, 403, bad, 0},
		{"missing", statusBody(14), nil, 401, missing, 0},
		{"empty", statusBody(15), map[string][]string{"X-Hub-Signature-256": {""}}, 401, missing, 0},
		{"signed, not JSON", []byte("entry=1&object=whatsapp"), map[string][]string{"X-Hub-Signature-256": {sign(testSecret, []byte("entry=1&object=whatsapp"))}}, 400, notJSON, 0},
		{"signed, empty", []byte{}, map[string][]string{"X-Hub-Signature-256": {sign(testSecret, nil)}}, 400, notJSON, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := r.Stats()
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				req.Header[k] = v // not canonicalised: sent as written
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("POST: %s, want %d", resp.Status, tc.code)
			}
			a := r.Stats()
			d := map[outcome]int64{
				kept: a.Kept - before.Kept, bad: a.BadSignature - before.BadSignature,
				missing: a.MissingSignature - before.MissingSignature, notJSON: a.NotJSON - before.NotJSON,
			}
			for o, n := range d {
				if w := map[bool]int64{true: 1, false: 0}[o == tc.out]; n != w {
					t.Errorf("outcome %d counted %d times, want %d (stats %+v)", o, n, w, a)
				}
			}
			if tc.out == kept {
				want = append(want, wamid(tc.id))
			}
		})
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	k := readLog(t, cfg.Dir)
	k.once(t, want)
	if k.counts.Statuses != int64(len(want)) || k.counts.Invalid != 0 {
		t.Errorf("the log holds %d statuses and %d invalid records; want the %d kept and nothing else", k.counts.Statuses, k.counts.Invalid, len(want))
	}
	accounted(t, r.Stats())

	// A body on one line is kept byte for byte (as signed); a pretty-printed
	// one compacted to one line.
	got := lines(t, k.files[0])
	if got[0] != string(compact)+"\n" {
		t.Errorf("first line %q\nwant the body as sent %q", got[0], compact)
	}
	var c2 bytes.Buffer
	json.Compact(&c2, pretty.Bytes())
	if !slices.Contains(got, c2.String()+"\n") {
		t.Errorf("the pretty-printed body is not kept as one compact line")
	}
}

// flip changes the last hex digit of a signature.
func flip(sig string) string {
	last := sig[len(sig)-1]
	if last == '0' {
		return sig[:len(sig)-1] + "1"
	}
	return sig[:len(sig)-1] + "0"
}

// TestTooLarge: a body over MaxBody is answered 413 and not kept, whether
// it says its length or not; one of MaxBody bytes is kept.
func TestTooLarge(t *testing.T) {
	body := statusBody(1)
	cfg := config(t)
	cfg.MaxBody = int64(len(body))
	r := open(t, cfg)
	url := serve(t, r)
	c := client(1)
	big := append(bytes.Clone(body[:len(body)-1]), []byte(`,"x":1}`)...)
	for _, tc := range []struct {
		name    string
		body    []byte
		chunked bool // no Content-Length: the limit is found while reading
		code    int
	}{
		{"at the limit", body, false, 200},
		{"over, with its length", big, false, 413},
		{"over, chunked", big, true, 413},
		{"at the limit, chunked", statusBody(2), true, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rd io.Reader = bytes.NewReader(tc.body)
			if tc.chunked {
				rd = io.MultiReader(rd) // hides the length from net/http
			}
			req, _ := http.NewRequest(http.MethodPost, url, rd)
			req.Header.Set(receive.SignatureHeader, sign(testSecret, tc.body))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Errorf("POST of %d bytes (limit %d): %s, want %d", len(tc.body), cfg.MaxBody, resp.Status, tc.code)
			}
		})
	}
	r.Close()
	if s := r.Stats(); s.TooLarge != 2 || s.Kept != 2 {
		t.Errorf("stats %+v: want 2 too large, 2 kept", s)
	}
	k := readLog(t, cfg.Dir)
	k.once(t, []string{wamid(1), wamid(2)})
	if k.counts.Statuses != 2 {
		t.Errorf("%d statuses in the log, want 2", k.counts.Statuses)
	}
}

func TestMethods(t *testing.T) {
	r := open(t, config(t))
	for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodHead, http.MethodPatch} {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(m, "/", nil))
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, POST" {
			t.Errorf("%s: %d, Allow %q", m, w.Code, w.Header().Get("Allow"))
		}
	}
}

// TestConcurrentPOSTs: 200 POSTs at once, each on its connection: every
// body kept exactly once, and fewer fsyncs than bodies (group commit), on
// this machine's disk and on one that takes 5 ms an fsync, as a cloud
// volume may, where nearly all of them must share.
func TestConcurrentPOSTs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		slow      time.Duration // added to each fsync
		maxFsyncs int64
	}{
		{"this disk", 0, 199},
		{"a 5 ms disk", 5 * time.Millisecond, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(t)
			if tc.slow > 0 {
				cfg = receive.WithFile(cfg, func(f receive.File) receive.File {
					return &faultyFile{File: f, sync: func(f receive.File) error { time.Sleep(tc.slow); return f.Sync() }}
				})
			}
			r := open(t, cfg)
			url := serve(t, r)
			const n = 200
			c := client(n)
			start := make(chan struct{})
			codes := make([]int, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					codes[i], errs[i] = post(c, url, statusBody(i))
				})
			}
			close(start)
			wg.Wait()
			ids := make([]string, n)
			for i := range n {
				if errs[i] != nil || codes[i] != 200 {
					t.Fatalf("POST %d: %d, %v", i, codes[i], errs[i])
				}
				ids[i] = wamid(i)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			s := r.Stats()
			t.Logf("%d bodies kept with %d fsyncs (%.1f a fsync)", s.Kept, s.Fsyncs, float64(s.Kept)/float64(s.Fsyncs))
			if s.Kept != n || s.Fsyncs > tc.maxFsyncs || s.Fsyncs < 1 {
				t.Errorf("%d kept with %d fsyncs: want %d kept with at most %d fsyncs", s.Kept, s.Fsyncs, n, tc.maxFsyncs)
			}
			k := readLog(t, cfg.Dir)
			k.once(t, ids)
			if k.counts.Statuses != n || k.counts.Invalid != 0 {
				t.Errorf("log: %d statuses, %d invalid; want %d, 0", k.counts.Statuses, k.counts.Invalid, n)
			}
		})
	}
}

// TestGroupCommit: while one fsync is under way, the bodies that arrive
// wait for the next, and share it: 1 + 49 bodies, 2 fsyncs. None is
// answered before its own fsync.
func TestGroupCommit(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var syncs atomic.Int64
	cfg := receive.WithFile(config(t), func(f receive.File) receive.File {
		return &faultyFile{File: f, sync: func(f receive.File) error {
			if syncs.Add(1) == 1 {
				close(entered)
				<-release
			}
			return f.Sync()
		}}
	})
	r := open(t, cfg)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before Close, which waits for the fsync
	url := serve(t, r)
	c := client(64)
	var answered atomic.Int64
	var wg sync.WaitGroup
	postOne := func(i int) {
		wg.Go(func() {
			if code, err := post(c, url, statusBody(i)); err != nil || code != 200 {
				t.Errorf("POST %d: %d, %v", i, code, err)
			}
			answered.Add(1)
		})
	}
	postOne(0)
	<-entered
	for i := 1; i < 50; i++ {
		postOne(i)
	}
	waitFor(t, "49 bodies queued behind the fsync", func() bool { return r.Queued() == 49 })
	if n := answered.Load(); n != 0 {
		t.Fatalf("%d POSTs answered before their fsync", n)
	}
	unblock()
	wg.Wait()
	if s := r.Stats(); s.Fsyncs != 2 || s.Kept != 50 {
		t.Errorf("%d bodies kept with %d fsyncs, want 50 with 2", s.Kept, s.Fsyncs)
	}
}

// TestWriteFailure: a body that cannot be kept is answered 503 and
// counted; what a failed write left in the file is cut off, so that the
// next body, kept, is read whole (a line appended to a partial one would
// be skipped with it).
func TestWriteFailure(t *testing.T) {
	enospc := func(f receive.File, p []byte) (int, error) { return 0, syscall.ENOSPC }
	half := func(f receive.File, p []byte) (int, error) { // a disk that fills up mid-write
		n, _ := f.Write(p[:len(p)/2])
		return n, syscall.ENOSPC
	}
	eio := func(f receive.File) error { f.Sync(); return syscall.EIO }
	for _, tc := range []struct {
		name  string
		write func(receive.File, []byte) (int, error)
		sync  func(receive.File) error
	}{
		{"write fails", enospc, nil},
		{"write fails halfway", half, nil},
		{"fsync fails", nil, eio},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fail atomic.Bool
			cfg := receive.WithFile(config(t), func(f receive.File) receive.File {
				ff := &faultyFile{File: f}
				ff.write = func(f receive.File, p []byte) (int, error) {
					if fail.Load() && tc.write != nil {
						return tc.write(f, p)
					}
					return f.Write(p)
				}
				ff.sync = func(f receive.File) error {
					if fail.Load() && tc.sync != nil {
						return tc.sync(f)
					}
					return f.Sync()
				}
				return ff
			})
			r := open(t, cfg)
			url := serve(t, r)
			c := client(1)
			for i, want := range []int{200, 503, 200} {
				fail.Store(want == 503)
				if code, err := post(c, url, statusBody(i)); err != nil || code != want {
					t.Fatalf("POST %d: %d, %v; want %d", i, code, err, want)
				}
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			s := r.Stats()
			if s.Unkept != 1 || s.WriteErrors != 1 || s.Kept != 2 {
				t.Errorf("stats %+v: want 1 unkept, 1 write error, 2 kept", s)
			}
			accounted(t, s)
			k := readLog(t, cfg.Dir)
			k.once(t, []string{wamid(0), wamid(2)})
			if len(k.where[wamid(1)]) != 0 || k.counts.Invalid != 0 {
				t.Errorf("log: the failed body %d times, %d invalid records; want neither", len(k.where[wamid(1)]), k.counts.Invalid)
			}
		})
	}
}

// TestAfterClose: a POST after Close gets 503 (Meta sends it again to
// the next receiver) and is counted.
func TestAfterClose(t *testing.T) {
	r := open(t, config(t))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(statusBody(1)))
	req.Header.Set(receive.SignatureHeader, sign(testSecret, statusBody(1)))
	r.ServeHTTP(w, req)
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("POST after Close: %d, want 503", w.Code)
	}
	if s := r.Stats(); s.Unkept != 1 {
		t.Errorf("stats %+v: want 1 unkept", s)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestAckTimeout: a disk that does not answer gets the POST a 503 in
// bounded time; the body, still queued, is kept when the disk comes back.
func TestAckTimeout(t *testing.T) {
	release := make(chan struct{})
	cfg := receive.WithAckTimeout(config(t), 50*time.Millisecond)
	cfg = receive.WithFile(cfg, func(f receive.File) receive.File {
		return &faultyFile{File: f, sync: func(f receive.File) error { <-release; return f.Sync() }}
	})
	r := open(t, cfg)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before Close, which waits for the fsync
	url := serve(t, r)
	if code, err := post(client(1), url, statusBody(1)); err != nil || code != 503 {
		t.Fatalf("POST to a hung disk: %d, %v; want 503", code, err)
	}
	unblock()
	r.Close()
	if s := r.Stats(); s.Unkept != 1 || s.Kept != 0 || s.Fsyncs != 1 {
		t.Errorf("stats %+v: want 1 unkept, 0 kept, 1 fsync", s)
	}
	readLog(t, cfg.Dir).once(t, []string{wamid(1)})
}

// TestOnKept: the hook gets every kept body, in the log's order, after its
// 200; a hook that does not return holds up no 200, and one too far behind
// misses bodies (counted) that the log still has.
func TestOnKept(t *testing.T) {
	t.Run("in order, all of them", func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		cfg := config(t)
		cfg.OnKept = func(bodies [][]byte) {
			mu.Lock()
			defer mu.Unlock()
			for _, b := range bodies {
				got = append(got, string(b)+"\n")
			}
		}
		r := open(t, cfg)
		url := serve(t, r)
		c := client(8)
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Go(func() { post(c, url, statusBody(i)) })
		}
		wg.Wait()
		r.Close() // returns after the hook's last call
		files, _ := receive.Files(cfg.Dir)
		if want := lines(t, files[0]); !slices.Equal(got, want[:len(want)-1]) {
			t.Errorf("the hook got %d bodies, the log has %d, or not in its order", len(got), len(want)-1)
		}
	})
	t.Run("a stuck hook holds up no 200", func(t *testing.T) {
		release := make(chan struct{})
		var calls atomic.Int64
		cfg := receive.WithBacklog(config(t), 3*int64(len(statusBody(0))))
		cfg.OnKept = func(bodies [][]byte) {
			if calls.Add(1) == 1 {
				<-release
			}
		}
		r := open(t, cfg)
		var once sync.Once
		unblock := func() { once.Do(func() { close(release) }) }
		t.Cleanup(unblock) // before Close, which waits for the hook
		url := serve(t, r)
		c := client(1)
		for i := range 20 {
			if code, err := post(c, url, statusBody(i)); err != nil || code != 200 {
				t.Fatalf("POST %d with the hook stuck: %d, %v", i, code, err)
			}
		}
		unblock()
		r.Close()
		s := r.Stats()
		// The first body is in the hook's hands, two more wait: the rest are
		// dropped. (16 once in CI, under load: the hook's goroutine may
		// take the first batch before its bytes are counted against the
		// backlog; what matters is that no 200 waited and the rest were
		// dropped, not given.)
		if s.HookDropped < 16 || s.HookDropped > 17 || s.Kept != 20 {
			t.Errorf("stats %+v: want 20 kept, 16 or 17 not given to the hook", s)
		}
		ids := make([]string, 20)
		for i := range ids {
			ids[i] = wamid(i)
		}
		readLog(t, cfg.Dir).once(t, ids)
	})
}

// TestLocked: two receivers never write one folder.
func TestLocked(t *testing.T) {
	cfg := config(t)
	r := open(t, cfg)
	if r2, err := receive.New(cfg); !errors.Is(err, receive.ErrLocked) {
		if r2 != nil {
			r2.Close()
		}
		t.Fatalf("a second receiver on one folder: %v, want ErrLocked", err)
	}
	r.Close()
	r2, err := receive.New(cfg)
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	r2.Close()
}

// TestListener runs the listeners' suite against the receiver: idle,
// dripping and slow clients are cut off, a flood waits.
func TestListener(t *testing.T) {
	listentest.Run(t, func(t *testing.T, lim listen.Limits) listentest.Target {
		r := open(t, config(t))
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := listen.New(l, r, lim, nil)
		go s.Serve()
		t.Cleanup(func() { s.Close() })
		q := url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {testToken}, "hub.challenge": {"1"}}
		return listentest.Target{Server: s, Get: "/?" + q.Encode(), Post: "/",
			// Well formed, so that the body is read (and can be dripped).
			Header: http.Header{receive.SignatureHeader: {"sha256=" + strings.Repeat("0", 64)}}}
	})
}

// TestLimits: an answer held for as long as a POST may wait for its fsync
// still gets out, and a maximal body has time to arrive.
func TestLimits(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lim := listen.New(l, http.NotFoundHandler(), receive.Limits, nil).Limits()
	if lim.Write < lim.Read+receive.AckTimeout {
		t.Errorf("write timeout %v: a POST read in %v and held %v for its fsync is cut off", lim.Write, lim.Read, receive.AckTimeout)
	}
	if rate := float64(receive.DefaultMaxBody) / lim.Read.Seconds(); rate > 100_000 {
		t.Errorf("a %d-byte body must arrive at %.0f B/s: too fast for a tunnel", receive.DefaultMaxBody, rate)
	}
}
