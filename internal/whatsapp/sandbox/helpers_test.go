package sandbox

import (
	"bufio"
	"bytes"
	"container/heap"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	token   = "test-token"
	phoneID = "106540352242922"
	path    = "/v23.0/" + phoneID + "/messages"
)

// clock is a settable Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 9, 11, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// timers is an afterFunc on a clock that the test moves: a timer set at
// the clock's time t for d is due at t+d, and advance fires it then.
type timers struct {
	clk *clock
	// settle, if set, is called after each timer fires, to wait for what
	// it started (the outbox's emitter) to be done.
	settle func()
	mu     sync.Mutex
	seq    int
	h      timerHeap // not yet fired or stopped
}

type timer struct {
	at    time.Time
	seq   int
	f     func()
	index int // in the heap; -1 when out
}

func (tm *timers) after(d time.Duration, f func()) func() bool {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.seq++
	t := &timer{at: tm.clk.Now().Add(d), seq: tm.seq, f: f}
	heap.Push(&tm.h, t)
	return func() bool {
		tm.mu.Lock()
		defer tm.mu.Unlock()
		if t.index < 0 {
			return false
		}
		heap.Remove(&tm.h, t.index)
		return true
	}
}

// advance moves the clock d on, firing on the way each timer due, at its
// own time, earliest first: those the fired ones set included. A perfect
// clock: every timer fires exactly when it is due.
func (tm *timers) advance(d time.Duration) {
	to := tm.clk.Now().Add(d)
	for {
		tm.mu.Lock()
		if len(tm.h) == 0 || tm.h[0].at.After(to) {
			tm.mu.Unlock()
			break
		}
		next := heap.Pop(&tm.h).(*timer)
		tm.mu.Unlock()
		if next.at.After(tm.clk.Now()) {
			tm.clk.Set(next.at)
		}
		next.f()
		if tm.settle != nil {
			tm.settle()
		}
	}
	tm.clk.Set(to)
}

// pending is how many timers are set and not yet fired or stopped.
func (tm *timers) pending() int {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return len(tm.h)
}

// timerHeap orders timers by time, then by the order set.
type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	return h[i].at.Before(h[j].at) || (h[i].at.Equal(h[j].at) && h[i].seq < h[j].seq)
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// stampedBuffer is a Webhooks writer, safe for concurrent use, that notes
// by now when each line was written (when its newline was).
type stampedBuffer struct {
	now func() time.Time
	mu  sync.Mutex
	b   bytes.Buffer
	at  []time.Time
}

func (s *stampedBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.now()
	for range bytes.Count(p, []byte("\n")) {
		s.at = append(s.at, t)
	}
	return s.b.Write(p)
}

// written is one webhook line and when it was written.
type written struct {
	status
	at time.Time
}

// lines parses what was written so far.
func (s *stampedBuffer) lines(t *testing.T) []written {
	t.Helper()
	s.mu.Lock()
	b, at := bytes.Clone(s.b.Bytes()), slices.Clone(s.at)
	s.mu.Unlock()
	var out []written
	for i, l := range lines(t, b) {
		out = append(out, written{parseWebhook(t, l), at[i]})
	}
	return out
}

// msg is a template send request, conformant to Meta's Message schema.
func msg(to, cbd, name, lang string, params int) string {
	var ps []string
	for i := range params {
		ps = append(ps, fmt.Sprintf(`{"type":"text","text":"p%d"}`, i))
	}
	cb := ""
	if cbd != "" {
		cb = fmt.Sprintf(`"biz_opaque_callback_data":%q,`, cbd)
	}
	return fmt.Sprintf(`{"messaging_product":"whatsapp","recipient_type":"individual","to":%q,"type":"template",%s
		"template":{"name":%q,"language":{"policy":"deterministic","code":%q},
		"components":[{"type":"body","parameters":[%s]}]}}`, to, cb, name, lang, strings.Join(ps, ","))
}

// answer is a decoded sandbox response.
type answer struct {
	status int
	body   []byte
	code   int    // error.code, 0 on success
	wamid  string // messages[0].id on success
}

func (a answer) String() string { return fmt.Sprintf("HTTP %d %s", a.status, a.body) }

func decode(status int, body []byte) answer {
	a := answer{status: status, body: body}
	var v struct {
		Error    struct{ Code int }
		Messages []struct{ ID string }
	}
	json.Unmarshal(body, &v)
	a.code = v.Error.Code
	if len(v.Messages) > 0 {
		a.wamid = v.Messages[0].ID
	}
	return a
}

// do calls the handler directly, without a network.
func do(h http.Handler, method, path, tok, body string) answer {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return decode(w.Code, w.Body.Bytes())
}

func send(h http.Handler, to, cbd string) answer {
	return do(h, http.MethodPost, path, token, msg(to, cbd, "welcome", "en_US", 0))
}

// lines splits NDJSON output.
func lines(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// status is one status of a webhook line, with its line's metadata.
type status struct {
	whStatus
	PhoneNumberID string
	line          []byte
}

func parseWebhook(t *testing.T, line []byte) status {
	t.Helper()
	var b webhookBody
	if err := json.Unmarshal(line, &b); err != nil {
		t.Fatalf("webhook line %s: %v", line, err)
	}
	if b.Object != "whatsapp_business_account" || len(b.Entry) != 1 || len(b.Entry[0].Changes) != 1 ||
		len(b.Entry[0].Changes[0].Value.Statuses) != 1 || b.Entry[0].Changes[0].Field != "messages" {
		t.Fatalf("webhook line has an unexpected shape: %s", line)
	}
	v := b.Entry[0].Changes[0].Value
	return status{whStatus: v.Statuses[0], PhoneNumberID: v.Metadata.PhoneNumberID, line: line}
}

// signedReceiver is a webhook receiver that keeps the bodies POSTed with
// a good X-Hub-Signature-256 (and Content-Type application/json) and
// counts, and answers 403 to, the others.
type signedReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	bad    int
}

func newSignedReceiver(t *testing.T, secret string) *signedReceiver {
	rc := &signedReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, _ := strings.CutPrefix(r.Header.Get("X-Hub-Signature-256"), "sha256=")
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if !hmac.Equal([]byte(got), []byte(Sign(secret, b))) || r.Header.Get("Content-Type") != "application/json" {
			rc.bad++
			w.WriteHeader(http.StatusForbidden)
			return
		}
		rc.bodies = append(rc.bodies, b)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// got returns the bodies kept so far and the count of bad signatures.
func (rc *signedReceiver) got() ([][]byte, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.bodies), rc.bad
}
