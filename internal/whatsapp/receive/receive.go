// Package receive is the core of `bulksend receive`: an http.Handler that
// answers Meta's webhook handshake, checks every POST's signature and
// keeps each verified body in a log that `bulksend reconcile` reads as it
// is (internal/whatsapp/webhook: JSON lines, gzip accepted).
//
// The model. A POST is answered 200 only once its body is on disk: written
// and fsynced. One writer goroutine owns the log file; handlers queue their
// bodies to it and wait. The writer takes whatever is queued, writes it in
// one write and fsyncs once (group commit), then answers every waiting
// handler, so that under load many POSTs share one fsync and the disk's
// latency is paid once per batch, not once per POST. A body that cannot be
// kept (a full disk, a closed receiver) is answered 503, so that Meta sends
// it again; Meta retries for 7 days, so nothing is lost while the receiver
// is down or the disk is full. Duplicates are kept as they come: reconcile
// applies statuses monotonically, so a body applied twice changes nothing.
//
// The log. Files are named by the UTC day their bodies were kept on,
// webhooks-2026-12-02.jsonl, and numbered on when a size limit is set,
// webhooks-2026-12-02.1.jsonl, … A file that is closed (the day changed,
// it reached its size, a write to it failed) is compressed in the
// background to .jsonl.gz, written to a temporary file, fsynced and renamed,
// and only then is the plain file removed: a crash leaves the plain file,
// never a partial .gz as the only copy. New recovers what a crash left:
// temporary files are removed, a plain file whose .gz exists is removed,
// other closed plain files are compressed, and a partial last line (a
// write the crash cut, never answered 200) is cut off. Files lists the
// log's files in the order they were written.
package receive

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulksend/bulksend/internal/listen"
	"github.com/bulksend/bulksend/internal/logfile"
)

// DefaultMaxBody is the largest body kept when Config.MaxBody is 0. Meta
// documents bodies of up to 3 MB (1,000 updates); the margin is for
// escaping, which Meta applies before signing.
const DefaultMaxBody = 4 << 20

// SignatureHeader is the header Meta signs each POST in.
const SignatureHeader = "X-Hub-Signature-256"

// Errors New and Close return.
var (
	ErrNoSecret = errors.New("receive: no app secret: Meta signs every webhook with it, and a body whose signature cannot be checked is not kept")
	ErrNoToken  = errors.New("receive: no verify token: the handshake would accept anyone")
	ErrLocked   = errors.New("another receiver keeps its log in this folder")
	// ErrClosed is why a body that arrives after Close is answered 503.
	ErrClosed = errors.New("receiver closed")
)

// Limits are the listener limits of `bulksend receive`; serve a Receiver
// with listen.New(l, r, receive.Limits, log):
//
//   - ReadHeader 10s, Read 60s: a 4 MiB body through a laptop's tunnel
//     must arrive in a minute (70 KB/s), and a client that drips more
//     slowly than that is not Meta.
//   - Hold 30s: a POST waits for its fsync, at most AckTimeout, before it
//     is answered; the default Write (Read + Hold + 30s) lets that answer
//     out.
//   - Idle 2m: Meta keeps connections alive between its batches.
//   - MaxConns 1024: Meta delivers concurrently; 3,000 POSTs/s answered
//     within 50 ms keep about 150 connections busy, and a surge of
//     retries after an outage many more. Beyond the cap new connections
//     wait in the kernel's queue.
var Limits = listen.Limits{
	ReadHeader: 10 * time.Second,
	Read:       60 * time.Second,
	Hold:       AckTimeout,
	Idle:       2 * time.Minute,
	MaxConns:   1024,
}

// AckTimeout is the longest a POST waits for its body to be kept. A disk
// that takes longer (a hung network volume) gets the POST a 503, so that
// Meta sends it again and connections do not pile up; the body, still
// queued, may be kept later, and is then kept twice once Meta resends it.
const AckTimeout = 30 * time.Second

// RotatePolicy says when the log moves to a new file. The log always moves
// to a new file when the UTC day changes, so that a file's name says the
// day of every body in it; the zero RotatePolicy rotates daily only.
type RotatePolicy struct {
	// Size, if positive, also starts a new file of the same day before a
	// body that would take the current one beyond Size bytes. A body longer
	// than Size gets a file of its own. (--rotate-size: 256 MB is a day of
	// a busy account, about 400,000 status bodies.)
	Size int64
}

// Config configures a Receiver.
type Config struct {
	VerifyToken string // what the GET handshake's hub.verify_token must be; the caller reads it from a file
	AppSecret   []byte // the app secret: the HMAC-SHA256 key of X-Hub-Signature-256
	Dir         string // the log folder, made (0700) if it is not there
	MaxBody     int64  // the largest body kept, in bytes; 0 means DefaultMaxBody
	Rotate      RotatePolicy
	Log         *slog.Logger     // nil: nothing is logged
	Now         func() time.Time // the clock that names files; nil means time.Now

	// OnKept, if not nil, is given the bodies kept (each as written to the
	// log, without its newline), in the log's order, after their fsync and
	// after their 200s went out. It is called from one goroutine of its
	// own, with whatever was kept since its last call, so that a slow
	// OnKept never holds up a 200. The bodies are OnKept's to keep; it must
	// not modify them. If OnKept falls more than 64 MiB of bodies behind,
	// later bodies are not given to it until it catches up:
	// Stats.HookDropped counts them and a warning is logged. The log still
	// has them: replay it (reconcile) to apply them. Close returns after
	// OnKept's last call.
	OnKept func(bodies [][]byte)

	// NoWebhooks, with neither VerifyToken nor AppSecret, makes a
	// receiver of no Meta webhooks: its GETs and POSTs are answered 404,
	// and it keeps only what Keep is given (SNS subscriptions, an SQS
	// queue).
	NoWebhooks bool

	// For tests (export_test.go).
	wrap       func(file) file // wraps every log file opened
	ackTimeout time.Duration   // 0 means AckTimeout
	tick       time.Duration   // how often an idle writer checks the day; 0 means a minute
	backlog    int64           // OnKept's backlog; 0 means hookBacklog
}

// Stats are a Receiver's counts since New. Every POST is counted in
// Received and in exactly one of Kept, BadSignature, MissingSignature,
// TooLarge, ReadFailed, NotJSON and Unkept.
type Stats struct {
	Received         int64 `json:"received"`          // POSTs
	Kept             int64 `json:"kept"`              // bodies kept and answered 200
	BadSignature     int64 `json:"bad_signature"`     // POSTs whose signature is malformed, repeated or wrong: 403, not kept
	MissingSignature int64 `json:"missing_signature"` // POSTs without X-Hub-Signature-256: 401, not kept
	TooLarge         int64 `json:"too_large"`         // bodies over MaxBody: 413, not kept
	ReadFailed       int64 `json:"read_failed"`       // bodies the client did not send in full (it went away, or too slowly): 400
	NotJSON          int64 `json:"not_json"`          // correctly signed bodies that are not JSON: 400, not kept
	Unkept           int64 `json:"unkept"`            // verified bodies that could not be kept (see WriteErrors) or not in time: 503

	HandshakesOK      int64 `json:"handshakes_ok"`      // GET handshakes answered with their challenge
	HandshakesRefused int64 `json:"handshakes_refused"` // GETs refused: wrong verify token (403), not a subscribe or no challenge (400)

	Fsyncs      int64 `json:"fsyncs"`       // fsyncs of the log: Kept/Fsyncs bodies share one (group commit)
	Bytes       int64 `json:"bytes"`        // bytes written to the log, newlines included
	WriteErrors int64 `json:"write_errors"` // failed writes or fsyncs of the log, each answered 503 for all its bodies
	Files       int64 `json:"files"`        // log files opened
	Gzipped     int64 `json:"gzipped"`      // closed files compressed
	GzipFailed  int64 `json:"gzip_failed"`  // compressions that failed (the plain file is kept; New tries again)
	HookDropped int64 `json:"hook_dropped"` // kept bodies not given to OnKept because it was too far behind
}

// stats are the atomic counters behind Stats.
type stats struct {
	received, kept, badSig, missingSig, tooLarge, readFailed, notJSON, unkept atomic.Int64
	handshakeOK, handshakeRefused                                             atomic.Int64
	fsyncs, bytes, writeErrors, files, gzipped, gzipFailed, hookDropped       atomic.Int64
}

// Receiver answers Meta's webhooks and keeps the verified bodies; see the
// package documentation. Its methods are safe for concurrent use. Create
// one with New; the zero Receiver is not usable.
type Receiver struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	token   [sha256.Size]byte // sha256 of the verify token: compared in constant time whatever its length
	maxBody int64
	ack     time.Duration
	macs    sync.Pool // hash.Hash: HMAC-SHA256 keyed with the app secret
	budget  *budget   // bytes of bodies read and not yet kept
	st      stats

	mu     sync.RWMutex // held for reading while queueing, for writing by Close
	closed bool
	queue  chan *pending

	w        *writer
	gz       *compressor
	hook     *hook
	lockFile *os.File

	warnOnce  sync.Map // kind → struct{}: the first refusal of each kind is a warning
	closeOnce sync.Once
	closeErr  error
}

// pending is a body queued to the writer.
type pending struct {
	line []byte     // the body and its newline
	done chan error // buffered: the writer never waits for a handler that gave up
}

// bodyBudget bounds the memory held by bodies being read or waiting for
// their fsync. Bodies are read before their signature can be checked, so
// without it 1,024 connections sending 4 MiB each, signed or not, would
// hold 4 GiB; with it they wait their turn (and their read timeout).
const bodyBudget = 64 << 20

// New makes the log folder if it is not there, takes its lock (a second
// receiver on one folder gets an error wrapping ErrLocked), recovers what a
// crash left in it (see the package documentation), opens the day's file,
// and returns a Receiver ready to serve.
func New(cfg Config) (*Receiver, error) {
	switch {
	case cfg.NoWebhooks && (len(cfg.AppSecret) > 0 || cfg.VerifyToken != ""):
		return nil, errors.New("receive: no webhooks, but an app secret or a verify token")
	case cfg.NoWebhooks:
	case len(cfg.AppSecret) == 0:
		return nil, ErrNoSecret
	case cfg.VerifyToken == "":
		return nil, ErrNoToken
	case cfg.Dir == "":
		return nil, errors.New("receive: no log folder")
	case cfg.MaxBody < 0:
		return nil, fmt.Errorf("receive: max body %d: want 0 (the default) or more", cfg.MaxBody)
	case cfg.Rotate.Size < 0:
		return nil, fmt.Errorf("receive: rotate size %d: want 0 (daily only) or more", cfg.Rotate.Size)
	}
	r := &Receiver{cfg: cfg, log: cfg.Log, now: cfg.Now, maxBody: cfg.MaxBody, ack: cfg.ackTimeout}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.maxBody == 0 {
		r.maxBody = DefaultMaxBody
	}
	if r.ack <= 0 {
		r.ack = AckTimeout
	}
	r.token = sha256.Sum256([]byte(cfg.VerifyToken))
	secret := bytes.Clone(cfg.AppSecret)
	r.macs.New = func() any { return hmac.New(sha256.New, secret) }
	r.budget = newBudget(max(bodyBudget, 2*(r.maxBody+1)))

	_, statErr := os.Stat(cfg.Dir)
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("receive: log folder: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		syncDir(filepath.Dir(filepath.Clean(cfg.Dir))) // the new folder's name survives a crash too
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	r.lockFile = lock
	r.gz = newCompressor(cfg.Dir, r.log, &r.st)
	w, err := openWriter(r, cfg)
	if err != nil {
		r.gz.stop()
		lock.Close()
		return nil, err
	}
	r.w = w
	if cfg.OnKept != nil {
		backlog := cfg.backlog
		if backlog <= 0 {
			backlog = hookBacklog
		}
		r.hook = newHook(cfg.OnKept, backlog, r.log, &r.st)
	}
	r.queue = make(chan *pending, 1024)
	go r.w.run(r.queue, r.hook)
	return r, nil
}

// Stats returns the counts so far.
func (r *Receiver) Stats() Stats {
	s := &r.st
	return Stats{
		Received: s.received.Load(), Kept: s.kept.Load(), BadSignature: s.badSig.Load(),
		MissingSignature: s.missingSig.Load(), TooLarge: s.tooLarge.Load(), ReadFailed: s.readFailed.Load(),
		NotJSON: s.notJSON.Load(), Unkept: s.unkept.Load(),
		HandshakesOK: s.handshakeOK.Load(), HandshakesRefused: s.handshakeRefused.Load(),
		Fsyncs: s.fsyncs.Load(), Bytes: s.bytes.Load(), WriteErrors: s.writeErrors.Load(), Files: s.files.Load(),
		Gzipped: s.gzipped.Load(), GzipFailed: s.gzipFailed.Load(), HookDropped: s.hookDropped.Load(),
	}
}

// Close stops keeping bodies: POSTs from now on are answered 503. It waits
// for the bodies already queued to be written and fsynced (their POSTs get
// their 200), closes the log file, waits for OnKept's last call and for the
// compression of the files already closed (seconds for a large file), and
// releases the folder's lock. The current file stays plain: the next New
// appends to it, or compresses it if its day is over. Close may be called
// more than once; it returns the first call's error.
func (r *Receiver) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		close(r.queue)
		r.mu.Unlock()
		werr := r.w.wait()
		if r.hook != nil {
			r.hook.stop()
		}
		r.gz.stop()
		lerr := r.lockFile.Close()
		r.closeErr = errors.Join(werr, lerr)
	})
	return r.closeErr
}

// ServeHTTP answers a GET as Meta's handshake and keeps a POST's body if
// its signature is right; see the package documentation. It answers on any
// path.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if r.cfg.NoWebhooks {
		http.Error(w, "this receiver takes no Meta webhooks", http.StatusNotFound)
		return
	}
	switch req.Method {
	case http.MethodPost:
		r.receive(w, req)
	case http.MethodGet:
		r.handshake(w, req)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "webhooks are POSTed; GET is the handshake", http.StatusMethodNotAllowed)
	}
}

// handshake answers Meta's verification GET: hub.challenge, if
// hub.verify_token is right and hub.mode is subscribe. The token is checked
// first, so that a caller without it learns nothing else.
func (r *Receiver) handshake(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	got := sha256.Sum256([]byte(q.Get("hub.verify_token")))
	refuse := func(code int, why string) {
		r.st.handshakeRefused.Add(1)
		r.refused("handshake", why, "remote", req.RemoteAddr)
		http.Error(w, why, code)
	}
	challenge := q.Get("hub.challenge")
	switch {
	case !hmac.Equal(got[:], r.token[:]):
		refuse(http.StatusForbidden, "wrong verify token")
	case q.Get("hub.mode") != "subscribe":
		refuse(http.StatusBadRequest, "hub.mode is not subscribe")
	case challenge == "":
		refuse(http.StatusBadRequest, "no hub.challenge")
	default:
		r.st.handshakeOK.Add(1)
		r.log.Info("webhook handshake answered", "remote", req.RemoteAddr)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff") // the challenge is the caller's text, echoed
		io.WriteString(w, challenge)
	}
}

// receive keeps a POST's body if its signature is right.
func (r *Receiver) receive(w http.ResponseWriter, req *http.Request) {
	r.st.received.Add(1)
	// The header is checked before the body is read: a POST that cannot be
	// signed right costs no read.
	vals := req.Header.Values(SignatureHeader)
	if len(vals) == 0 || len(vals) == 1 && vals[0] == "" {
		r.st.missingSig.Add(1)
		r.refused("missing signature", "no "+SignatureHeader+" header", "remote", req.RemoteAddr)
		http.Error(w, "no "+SignatureHeader, http.StatusUnauthorized)
		return
	}
	if len(vals) > 1 {
		r.badSignature(w, req, "more than one "+SignatureHeader+" header")
		return
	}
	sig, err := parseSignature(vals[0])
	if err != nil {
		r.badSignature(w, req, err.Error())
		return
	}
	if req.ContentLength > r.maxBody {
		r.tooLarge(w, req.ContentLength)
		return
	}

	charge := r.maxBody + 1 // what a body of unknown length may grow to, with its newline
	if req.ContentLength >= 0 {
		charge = req.ContentLength + 1
	}
	if err := r.budget.acquire(req.Context(), charge); err != nil {
		r.st.readFailed.Add(1)
		http.Error(w, "the client went away", http.StatusBadRequest)
		return
	}
	defer r.budget.release(charge)

	body, err := readBody(w, req, r.maxBody)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		r.tooLarge(w, -1)
		return
	case err != nil:
		r.st.readFailed.Add(1)
		r.log.Debug("webhook body not read in full", "remote", req.RemoteAddr, "err", err)
		http.Error(w, "body not read in full", http.StatusBadRequest)
		return
	}
	if !r.verify(body, sig) {
		r.badSignature(w, req, "signature does not match the body (wrong app secret?)")
		return
	}
	line, ok := oneLine(body)
	if !ok {
		r.st.notJSON.Add(1)
		r.refused("not JSON", "a correctly signed body that is not JSON: not kept", "remote", req.RemoteAddr, "bytes", len(body))
		http.Error(w, "body is not JSON", http.StatusBadRequest)
		return
	}
	if err := r.keep(line); err != nil {
		r.st.unkept.Add(1)
		r.log.Debug("webhook not kept: answered 503, Meta will send it again", "err", err) // the writer logs why
		w.Header().Set("Retry-After", "10")
		http.Error(w, "not kept, send it again", http.StatusServiceUnavailable)
		return
	}
	r.st.kept.Add(1)
	w.WriteHeader(http.StatusOK)
}

func (r *Receiver) badSignature(w http.ResponseWriter, req *http.Request, why string) {
	r.st.badSig.Add(1)
	r.refused("bad signature", why, "remote", req.RemoteAddr)
	http.Error(w, "bad signature", http.StatusForbidden)
}

func (r *Receiver) tooLarge(w http.ResponseWriter, length int64) {
	r.st.tooLarge.Add(1)
	r.refused("too large", "a body over the limit: not kept", "max_bytes", r.maxBody, "content_length", length)
	http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
}

// refused logs a refusal: the first of each kind as a warning (a wrong app
// secret or token refuses every POST, and the operator must hear of it),
// the rest at debug level, so that a flood does not flood the log.
func (r *Receiver) refused(kind, why string, args ...any) {
	level := slog.LevelDebug
	if _, seen := r.warnOnce.LoadOrStore(kind, struct{}{}); !seen {
		level = slog.LevelWarn
		why += " (the first; the next are logged at debug level and counted)"
	}
	r.log.Log(context.Background(), level, "webhook refused: "+why, append([]any{"kind", kind}, args...)...)
}

// verify reports whether sig is the HMAC-SHA256 of the raw body under the
// app secret, in constant time.
func (r *Receiver) verify(body []byte, sig [sha256.Size]byte) bool {
	mac := r.macs.Get().(hash.Hash)
	mac.Reset()
	mac.Write(body)
	var sum [sha256.Size]byte
	ok := hmac.Equal(mac.Sum(sum[:0]), sig[:])
	r.macs.Put(mac)
	return ok
}

// readBody reads at most max bytes of req's body, into a slice with room
// for the newline the log adds.
func readBody(w http.ResponseWriter, req *http.Request, max int64) ([]byte, error) {
	size := int64(512)
	if req.ContentLength >= 0 {
		size = req.ContentLength + 1
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, req.Body, max))
	return buf.Bytes(), err
}

// oneLine is body as one line of the log, with its newline, and whether
// body is JSON. A body already on one line is kept byte for byte, as
// Meta signed it; one spread over lines (pretty-printed) is compacted,
// which only drops whitespace between tokens (JSON strings hold no raw
// newline). A body that is not JSON is not kept: a log line must be one
// JSON value for reconcile, and text that is not JSON cannot be made one
// without changing what was signed. Meta sends JSON only, so a signed body
// that is not JSON comes from another holder of the app secret (a script,
// a test), and the 400 tells it at once.
func oneLine(body []byte) ([]byte, bool) {
	if !json.Valid(body) {
		return nil, false
	}
	if bytes.ContainsAny(body, "\r\n") {
		var b bytes.Buffer
		b.Grow(len(body) + 1)
		json.Compact(&b, body) // cannot fail: body is valid
		body = b.Bytes()
	}
	return append(body, '\n'), true
}

// ErrNotJSON is Keep's error for a body that is not one JSON value.
var ErrNotJSON = errors.New("not JSON")

// Keep keeps body, one JSON value, in the log as a verified POST's body
// is kept (on one line: compacted if it spans lines), in the same group
// commit, and returns once it is on disk: nil, or why it could not be
// (ErrNotJSON, ErrClosed, a write error or the ack timeout). It is for
// the receiver's other front ends (SNS subscriptions, an SQS queue): what
// they keep, reconcile reads with the rest. Keep does not count in Stats'
// POSTs; its bodies count in Fsyncs and Bytes, and go to OnKept.
func (r *Receiver) Keep(body []byte) error {
	b := make([]byte, len(body), len(body)+1) // the caller's body is not written to
	copy(b, body)
	line, ok := oneLine(b)
	if !ok {
		return ErrNotJSON
	}
	return r.keep(line)
}

// keep queues line to the writer and waits until it is kept (nil) or
// cannot be (the error), at most the ack timeout.
func (r *Receiver) keep(line []byte) error {
	p := &pending{line: line, done: make(chan error, 1)}
	r.mu.RLock()
	if r.closed {
		r.mu.RUnlock()
		return ErrClosed
	}
	r.queue <- p // the writer drains the queue until it is closed, under mu
	r.mu.RUnlock()
	t := time.NewTimer(r.ack)
	defer t.Stop()
	select {
	case err := <-p.done:
		return err
	case <-t.C:
		return fmt.Errorf("not on disk after %v", r.ack)
	}
}

// lockDir takes the folder's lock without waiting: two receivers writing
// one folder would compress each other's open files.
func lockDir(dir string) (*os.File, error) {
	name := filepath.Join(dir, "receive.lock")
	f, err := logfile.Append(name)
	if err != nil {
		return nil, fmt.Errorf("receive: lock %s: %w", name, err)
	}
	if err := flock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("receive: %s: %w", dir, err)
	}
	return f, nil
}
