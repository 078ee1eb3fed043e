package smssandbox

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// stampedBuffer is an Events writer that notes the sandbox clock's time at
// each write, so each line's eventTimestamp can be held against the moment
// it was written.
type stampedBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	now  func() time.Time
	ends []int       // offset after each write
	at   []time.Time // the clock at each write
}

func (s *stampedBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := s.b.Write(p)
	s.ends = append(s.ends, s.b.Len())
	s.at = append(s.at, s.now())
	return n, nil
}

// lines returns each line with the clock's time when its end was written.
func (s *stampedBuffer) lines(t *testing.T) ([]eventRecord, []time.Time) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := parseEvents(t, s.b.Bytes())
	var when []time.Time
	off := 0
	for _, line := range bytes.SplitAfter(s.b.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		off += len(line)
		for i, end := range s.ends {
			if end >= off {
				when = append(when, s.at[i])
				break
			}
		}
	}
	return recs, when
}

func TestEvents(t *testing.T) {
	c := newClock()
	ev := &stampedBuffer{now: c.Now}
	var tm timers
	s := newServer(Config{
		Now: c.Now, Events: ev, MPS: -1, EventDelay: 2 * time.Second,
		PricePerPart: map[string]float64{"1": 0.00581, "44": 0.0463},
	}, tm.after)
	defer s.Close()

	cases := []struct {
		dest, body  string
		ctx         map[string]string
		mtype       string
		parts       int
		enc         string
		iso         string
		price, fees float64
	}{
		{"+12065551000", "Hello Maria, your code is 1234.", row(1), "TRANSACTIONAL", 1, "GSM", "US", 0.00581, 0.0025},
		{"+447700900123", strings.Repeat("ж", 71), map[string]string{"bulksend": "spring:2", "team": "growth"}, "PROMOTIONAL", 2, "UCS2", "GB", 0.0926, 0},
		{"+12065551001", text(3), nil, "", 3, "GSM", "US", 0.01743, 0.0075},
	}
	ids := map[string]time.Time{} // message id -> when sent
	for i, m := range cases {
		c.Add(time.Second)
		a := send(s, msg{DestinationPhoneNumber: m.dest, OriginationIdentity: from, MessageBody: m.body, Context: m.ctx, MessageType: m.mtype})
		if a.status != 200 {
			t.Fatalf("send %d: %v", i, a)
		}
		ids[a.messageID] = c.Now()
	}
	if len(ev.b.Bytes()) != 0 {
		t.Fatalf("events written before their time: %s", ev.b.Bytes())
	}
	// One timer per message, EventDelay from half to one and a half of it.
	for _, tt := range tm.ts {
		if tt.d < time.Second || tt.d >= 3*time.Second {
			t.Errorf("event delay %v", tt.d)
		}
	}
	c.Add(10 * time.Second) // past every event's time
	if n := tm.fire(); n != 3 {
		t.Fatalf("%d timers, want 3", n)
	}
	recs, when := ev.lines(t)
	if len(recs) != 3 {
		t.Fatalf("%d events", len(recs))
	}
	for i, e := range recs {
		m := cases[i] // timers fire in the order set
		sent, ok := ids[e.MessageID]
		if !ok {
			t.Fatalf("event %d: unknown messageId %q", i, e.MessageID)
		}
		mtype := cmpOr(m.mtype, "TRANSACTIONAL")
		if e.EventType != "TEXT_DELIVERED" || e.EventVersion != "1.0" || !e.IsFinal ||
			e.OriginationPhoneNumber != from || e.DestinationPhoneNumber != m.dest || e.IsoCountryCode != m.iso ||
			e.MessageRequestTimestamp != sent.UnixMilli() || e.MessageEncoding != m.enc || e.MessageType != mtype ||
			e.MessageStatus != "DELIVERED" || e.MessageStatusDescription == "" || !maps.Equal(e.Context, m.ctx) ||
			e.TotalMessageParts != m.parts || e.TotalMessagePrice != m.price || e.TotalCarrierFee != m.fees {
			t.Errorf("event %d: %+v", i, e)
		}
		// Stamped at its own time: acceptance plus the timer's delay.
		if want := sent.Add(tm.ts[i].d).UnixMilli(); e.EventTimestamp != want {
			t.Errorf("event %d stamped %d, want %d", i, e.EventTimestamp, want)
		}
		if e.EventTimestamp > when[i].UnixMilli() {
			t.Errorf("event %d stamped %d, after it was written (%d)", i, e.EventTimestamp, when[i].UnixMilli())
		}
	}
	// The raw line keeps AWS's member names, the context as sent.
	if line := strings.SplitN(ev.b.String(), "\n", 2)[0]; !strings.Contains(line, `"context":{"bulksend":"spring:1"}`) ||
		!strings.HasPrefix(line, `{"eventType":"TEXT_DELIVERED","eventVersion":"1.0","eventTimestamp":`) {
		t.Errorf("line %s", line)
	}
	if st := s.Stats(); st.Events != 3 || st.Delivered != 3 {
		t.Errorf("stats %+v", st)
	}
}

// TestEventsNeverInTheFuture fires event timers while the sandbox clock
// has not reached the events' times (it is stepped by hand, the timers run
// on real time): they are stamped with the time of writing.
func TestEventsNeverInTheFuture(t *testing.T) {
	c := newClock()
	ev := &stampedBuffer{now: c.Now}
	var tm timers
	s := newServer(Config{Now: c.Now, Events: ev, MPS: -1, EventDelay: time.Minute}, tm.after)
	for i := range 4 {
		send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: from, MessageBody: "x", Context: row(i)})
	}
	c.Add(time.Second)
	tm.ts = tm.ts[:2] // fire the first two, leave the rest to Close
	tm.fire()
	c.Add(time.Second)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	recs, when := ev.lines(t)
	if len(recs) != 4 {
		t.Fatalf("%d events, want 4", len(recs))
	}
	for i, e := range recs {
		if e.EventTimestamp != when[i].UnixMilli() || e.EventTimestamp < e.MessageRequestTimestamp {
			t.Errorf("event %d stamped %d, written at %d, sent at %d", i, e.EventTimestamp, when[i].UnixMilli(), e.MessageRequestTimestamp)
		}
	}
	if recs[0].EventTimestamp != t0.Add(time.Second).UnixMilli() || recs[3].EventTimestamp != t0.Add(2*time.Second).UnixMilli() {
		t.Errorf("stamps %d, %d", recs[0].EventTimestamp, recs[3].EventTimestamp)
	}
}

// TestCloseFlushesPending uses real timers an hour out: Close writes every
// event at once, none stamped after the moment it was written.
func TestCloseFlushesPending(t *testing.T) {
	ev := &stampedBuffer{now: time.Now}
	s := New(Config{Events: ev, MPS: -1, EventDelay: time.Hour, FailRate: 0.3, Seed: 7})
	const n = 50
	for i := range n {
		if a := send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: from, MessageBody: "x", Context: row(i)}); a.status != 200 {
			t.Fatal(a)
		}
	}
	if len(ev.b.Bytes()) != 0 {
		t.Fatal("events written before Close")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	recs, when := ev.lines(t)
	if len(recs) != n {
		t.Fatalf("%d events, want %d", len(recs), n)
	}
	failed := 0
	for i, e := range recs {
		if e.EventTimestamp > when[i].UnixMilli() {
			t.Errorf("event %d stamped %d, written at %d", i, e.EventTimestamp, when[i].UnixMilli())
		}
		if e.EventType != "TEXT_DELIVERED" {
			failed++
			if !strings.HasPrefix(e.EventType, "TEXT_") || statuses[e.EventType].status != e.MessageStatus {
				t.Errorf("event %+v", e)
			}
		}
	}
	if st := s.Stats(); st.Failed != int64(failed) || st.Delivered != int64(n-failed) || failed == 0 || failed == n {
		t.Errorf("%d failed; stats %+v", failed, st)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestCloseReportsWriteError(t *testing.T) {
	s := New(Config{Events: failingWriter{}, EventDelay: time.Hour})
	send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: from, MessageBody: "x"})
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Close() = %v", err)
	}
}

func TestInternalErrors(t *testing.T) {
	ev := &stampedBuffer{now: time.Now}
	s := New(Config{Events: ev, MPS: -1, InternalRate: 1, EventDelay: time.Hour})
	const n = 200
	for i := range n {
		a := send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: from, MessageBody: "x", Context: row(i)})
		if a.status != 500 || a.typ != "InternalServerException" || a.requestID == "" {
			t.Fatalf("send %d: %v", i, a)
		}
	}
	s.Close()
	recs, _ := ev.lines(t)
	st := s.Stats()
	// Half of them, by the seed, went out all the same.
	if st.InternalSent != int64(len(recs)) || st.Accepted != st.InternalSent || st.InternalSent < n/3 || st.InternalSent > 2*n/3 {
		t.Errorf("%d events; stats %+v", len(recs), st)
	}
	if is := st.Identities[from]; is.Accepted != st.InternalSent {
		t.Errorf("identity %+v", is)
	}
}

func TestLate(t *testing.T) {
	var tm timers
	ev := &stampedBuffer{now: time.Now}
	s := newServer(Config{Events: ev, LateRate: 1, LateDelay: time.Hour}, tm.after)
	// The client gave up before the answer: none is written, yet the
	// message went out.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(good)).WithContext(ctx)
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Body.Len() != 0 {
		t.Errorf("answer written to a client gone: %s", w.Body)
	}
	st := s.Stats()
	if st.Accepted != 1 || st.Late != 1 || st.Identities["+12065550100"].Accepted != 1 {
		t.Errorf("stats %+v", st)
	}
	// Close releases a held answer: it is written, 200.
	done := make(chan answer)
	go func() {
		done <- send(s, msg{DestinationPhoneNumber: "+12065551001", OriginationIdentity: "+12065550101", MessageBody: "x"})
	}()
	for deadline := time.Now().Add(30 * time.Second); s.Stats().Late < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s the second late send has not reached its wait: stats %+v", s.Stats())
		}
		time.Sleep(time.Millisecond) // the send is on its way to its wait
	}
	s.Close()
	if a := <-done; a.status != 200 || a.messageID == "" {
		t.Errorf("released answer: %v", a)
	}
	if recs, _ := ev.lines(t); len(recs) != 2 {
		t.Errorf("%d events, want 2", len(recs))
	}
}
