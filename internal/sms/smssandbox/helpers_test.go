package smssandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 9, 11, 12, 0, 0, 0, time.UTC)

// sigv4 is an Authorization header as the SDK signs it (the sandbox does
// not check the signature).
const sigv4 = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260911/eu-west-1/sms-voice/aws4_request, " +
	"SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"

// clock is a settable Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *clock) Add(d time.Duration) { c.Set(c.Now().Add(d)) }

// timers is an afterFunc the test fires by hand.
type timers struct {
	mu sync.Mutex
	ts []*timer
}

type timer struct {
	d       time.Duration
	f       func()
	stopped bool
}

func (ts *timers) after(d time.Duration, f func()) func() bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := &timer{d: d, f: f}
	ts.ts = append(ts.ts, t)
	return func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// fire runs the timers not yet fired or stopped, in the order set.
func (ts *timers) fire() int {
	ts.mu.Lock()
	var run []*timer
	for _, t := range ts.ts {
		if !t.stopped {
			t.stopped = true
			run = append(run, t)
		}
	}
	ts.mu.Unlock()
	for _, t := range run {
		t.f()
	}
	return len(run)
}

// answer is a decoded response, read as the SDK reads it.
type answer struct {
	status    int
	header    http.Header
	body      []byte
	typ       string // error type: the header's, else the body's __type
	message   string
	reason    string
	resType   string
	resID     string
	fields    []fieldError
	requestID string // body's RequestId (InternalServerException)
	messageID string // SendTextMessage's MessageId
}

func (a answer) String() string { return fmt.Sprintf("HTTP %d %s", a.status, a.body) }

func decode(rec *httptest.ResponseRecorder) answer {
	a := answer{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	var v struct {
		Type         string `json:"__type"`
		Message      string `json:"Message"`
		Reason       string
		ResourceType string
		ResourceID   string `json:"ResourceId"`
		Fields       []fieldError
		RequestID    string `json:"RequestId"`
		MessageID    string `json:"MessageId"`
	}
	json.Unmarshal(a.body, &v)
	a.typ = rec.Header().Get("X-Amzn-ErrorType")
	if a.typ == "" {
		a.typ = v.Type
	}
	// The SDK's SanitizeErrorCode: "ns#Type:uri" is "Type".
	a.typ, _, _ = strings.Cut(a.typ, ":")
	if i := strings.LastIndexByte(a.typ, '#'); i >= 0 {
		a.typ = a.typ[i+1:]
	}
	a.message, a.reason, a.resType, a.resID = v.Message, v.Reason, v.ResourceType, v.ResourceID
	a.fields, a.requestID, a.messageID = v.Fields, v.RequestID, v.MessageID
	return a
}

// raw sends a request as built, without a network.
func raw(h http.Handler, method, path string, header map[string]string, body string) answer {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return decode(w)
}

// call invokes op as the SDK does; body is marshalled unless a string.
func call(h http.Handler, op string, body any) answer {
	b, ok := body.(string)
	if !ok {
		j, err := json.Marshal(body)
		if err != nil {
			panic(err)
		}
		b = string(j)
	}
	return raw(h, http.MethodPost, "/", map[string]string{
		"Authorization": sigv4,
		"Content-Type":  "application/x-amz-json-1.0",
		"X-Amz-Target":  "PinpointSMSVoiceV2." + op,
	}, b)
}

// msg is a SendTextMessage input.
type msg struct {
	DestinationPhoneNumber string            `json:",omitempty"`
	OriginationIdentity    string            `json:",omitempty"`
	MessageBody            string            `json:",omitempty"`
	MessageType            string            `json:",omitempty"`
	ConfigurationSetName   string            `json:",omitempty"`
	MaxPrice               string            `json:",omitempty"`
	TimeToLive             int               `json:",omitempty"`
	Context                map[string]string `json:",omitempty"`
	DryRun                 bool              `json:",omitempty"`
}

func send(h http.Handler, m msg) answer { return call(h, "SendTextMessage", m) }

// text is a body of n GSM-7 parts.
func text(n int) string {
	if n == 1 {
		return "Hello"
	}
	return strings.Repeat("a", gsmMulti*n)
}

// row is the Context bulksend sends.
func row(i int) map[string]string { return map[string]string{"bulksend": fmt.Sprintf("spring:%d", i)} }

// parseEvents reads event lines.
func parseEvents(t *testing.T, b []byte) []eventRecord {
	t.Helper()
	var out []eventRecord
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e eventRecord
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("event line %s: %v", sc.Bytes(), err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// lockedBuffer is an Events writer that may be read while the sandbox
// writes, and remembers the clock's time at each write.
type lockedBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	now   func() time.Time
	times []time.Time // one per Write call
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.now != nil {
		l.times = append(l.times, l.now())
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}
