package smssandbox

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestStrictWindow: the same sends, at the same instants, against the
// default budget and the strict window: what each throttles.
func TestStrictWindow(t *testing.T) {
	type step struct {
		at     time.Duration
		parts  int
		dry    bool // a DryRun send: answered, never sent
		def    bool // sent by default
		strict bool // sent in strict mode
	}
	ms := time.Millisecond
	pacer := func(at float64) time.Duration { return time.Duration(at / 9.8 * float64(time.Second)) }
	for _, tc := range []struct {
		name  string
		mps   float64
		steps []step
	}{
		{"1 MPS: one part a second", 1, []step{
			{0, 1, false, true, true}, {999 * ms, 1, false, false, false}, {2 * time.Second, 1, false, true, true},
		}},
		{"1 MPS: a throttled send counts, so sends that keep coming keep the second full", 1, []step{
			{0, 1, false, true, true}, {500 * ms, 1, false, false, false},
			{1000 * ms, 1, false, true, false}, {1500 * ms, 1, false, false, false},
			{2000 * ms, 1, false, true, false}, {3000 * ms, 1, false, true, true},
		}},
		{"1 MPS: a dry run counts", 1, []step{
			{0, 1, true, false, false}, {500 * ms, 1, false, true, false}, {1500 * ms, 1, false, true, true},
		}},
		{"1 MPS: a 3-part message holds the window 3 s", 1, []step{
			{0, 3, false, true, true}, {2000 * ms, 1, false, false, false}, {3 * time.Second, 1, false, true, true},
		}},
		{"10 MPS: all of a message's parts count at its arrival", 10, []step{
			{0, 1, false, true, true}, {0, 1, false, true, true}, {0, 1, false, true, true},
			{0, 1, false, true, true}, {0, 1, false, true, true}, {0, 1, false, true, true},
			{0, 1, false, true, true}, {0, 1, false, true, true}, {0, 1, false, true, true},
			// By default charged 0.9, 1.0 and 1.1 s: ten parts in any
			// second. Strictly, twelve parts arrived within one.
			{900 * ms, 3, false, true, false},
			{1000 * ms, 1, false, true, true},
		}},
		{"10 MPS: spaced k/9.8 s after a k-part message, as the pacer spaces them", 10, []step{
			{pacer(0), 1, false, true, true}, {pacer(1), 1, false, true, true}, {pacer(2), 1, false, true, true},
			{pacer(3), 1, false, true, true}, {pacer(4), 1, false, true, true}, {pacer(5), 1, false, true, true},
			{pacer(6), 1, false, true, true}, {pacer(7), 1, false, true, true}, {pacer(8), 1, false, true, true},
			// Nine parts arrived in the second before it, and three with it.
			{pacer(9), 3, false, true, false},
		}},
		{"2.5 MPS: two parts in any second", 2.5, []step{
			{0, 1, false, true, true}, {400 * ms, 1, false, true, true}, {800 * ms, 1, false, true, false},
			{1400 * ms, 1, false, true, true},
		}},
		{"unlimited", -1, []step{
			{0, 5, false, true, true}, {0, 5, false, true, true}, {0, 5, false, true, true},
		}},
	} {
		for _, strict := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/strict=%v", tc.name, strict), func(t *testing.T) {
				c := newClock()
				s := New(Config{MPS: tc.mps, Now: c.Now, StrictWindow: strict})
				defer s.Close()
				throttles := 0
				for i, st := range tc.steps {
					c.Set(t0.Add(st.at))
					a := send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: from, MessageBody: text(st.parts),
						Context: row(i), DryRun: st.dry})
					want := st.def
					if strict {
						want = st.strict
					}
					switch {
					case st.dry && a.status != http.StatusOK:
						t.Errorf("step %d (dry run at %v): %v, want 200", i, st.at, a)
					case !st.dry && want && a.status != http.StatusOK:
						t.Errorf("step %d (%d parts at %v): %v, want it sent", i, st.parts, st.at, a)
					case !st.dry && !want && a.typ != typeThrottling:
						t.Errorf("step %d (%d parts at %v): %v, want ThrottlingException", i, st.parts, st.at, a)
					}
					if !st.dry && !want {
						throttles++
					}
				}
				is := s.Stats().Identities[from]
				if is.Throttled != int64(throttles) || is.BudgetThrottles != int64(throttles) {
					t.Errorf("throttled %d (by the limit %d), want %d", is.Throttled, is.BudgetThrottles, throttles)
				}
			})
		}
	}
}

// TestStrictWindowFigures: what the strict window saw, in parts and in
// sends, throttled ones included, beside the sent messages' own.
func TestStrictWindowFigures(t *testing.T) {
	c := newClock()
	s := New(Config{MPS: 10, Now: c.Now, StrictWindow: true})
	defer s.Close()
	for i := range 9 {
		sendAt(s, c, from, 0, 1, i)
	}
	if a := sendAt(s, c, from, 900*time.Millisecond, 3, 9); a.typ != typeThrottling {
		t.Fatalf("3 parts after 9: %v, want ThrottlingException", a)
	}
	st := s.Stats()
	is := st.Identities[from]
	if !st.StrictWindow || is.MaxArrivalParts != 12 || is.MaxArrivals != 10 || is.MaxWindowParts != 9 {
		t.Errorf("strict %v, max arrival parts %d, arrivals %d, window parts %d: want true, 12, 10, 9",
			st.StrictWindow, is.MaxArrivalParts, is.MaxArrivals, is.MaxWindowParts)
	}

	def := New(Config{MPS: 10, Now: c.Now})
	defer def.Close()
	sendAt(def, c, from, 0, 1, 0)
	if st := def.Stats(); st.StrictWindow || st.Identities[from].MaxArrivalParts != 0 || st.Identities[from].MaxArrivals != 0 {
		t.Errorf("default mode reports strict figures: %+v", st)
	}
}

// TestStrictWindowBeforeLatency: over HTTP, with answers a second late,
// the send that takes the second past MPS is throttled while the earlier
// ones' answers are still on their way: each is counted when it arrives,
// its latency comes after.
func TestStrictWindowBeforeLatency(t *testing.T) {
	const mps = 3
	c := newClock() // frozen: every send arrives in one second
	sent := make(chan struct{}, mps)
	after := func(d time.Duration, f func()) func() bool {
		sent <- struct{}{} // an event scheduled: the message was sent
		return realAfter(d, f)
	}
	s := newServer(Config{MPS: mps, Now: c.Now, StrictWindow: true, Latency: time.Second, Events: &lockedBuffer{}}, after)
	srv := httptest.NewServer(s)
	defer srv.Close()
	defer s.Close()
	post := func(i int) answer {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(
			fmt.Sprintf(`{"DestinationPhoneNumber":"+12065551000","OriginationIdentity":%q,"MessageBody":"Hello %d"}`, from, i)))
		req.Header.Set("Authorization", sigv4)
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("X-Amz-Target", "PinpointSMSVoiceV2.SendTextMessage")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Error(err)
			return answer{}
		}
		defer resp.Body.Close()
		rec := httptest.NewRecorder()
		for k, v := range resp.Header {
			rec.Header()[k] = v
		}
		rec.WriteHeader(resp.StatusCode)
		rec.Body.ReadFrom(resp.Body)
		return decode(rec)
	}
	var answered atomic.Int32
	first := make(chan answer, mps)
	for i := range mps {
		go func() {
			a := post(i)
			answered.Add(1)
			first <- a
		}()
	}
	for range mps {
		<-sent
	}
	if n := answered.Load(); n != 0 {
		t.Fatalf("%d answers came before the last send was even made: latency did not hold them", n)
	}
	if a := post(mps); a.typ != typeThrottling {
		t.Errorf("send %d in the second: %v, want ThrottlingException", mps+1, a)
	}
	for range mps {
		if a := <-first; a.status != http.StatusOK {
			t.Errorf("one of the first %d: %v, want 200", mps, a)
		}
	}
	if is := s.Stats().Identities[from]; is.MaxArrivalParts != mps+1 || is.MaxWindowParts != mps {
		t.Errorf("max arrival parts %d, window parts %d: want %d and %d", is.MaxArrivalParts, is.MaxWindowParts, mps+1, mps)
	}
}

// TestStrictWindowKeepsFates: with no limit to hit, the strict window
// changes no answer: every send's fate is the same in both modes.
func TestStrictWindowKeepsFates(t *testing.T) {
	answers := map[bool][]string{}
	for _, strict := range []bool{false, true} {
		c := newClock()
		s := New(Config{Seed: 7, MPS: -1, Now: c.Now, StrictWindow: strict,
			ThrottleRate: 0.2, InternalRate: 0.2, FailRate: 0.3})
		for i := range 200 {
			// Retries of the same row draw again: attempts, not only rows.
			a := send(s, msg{DestinationPhoneNumber: fmt.Sprint("+1206555", 1000+i%50), OriginationIdentity: from,
				MessageBody: text(1 + i%3), Context: row(i % 50)})
			answers[strict] = append(answers[strict], fmt.Sprint(a.status, " ", a.typ))
		}
		st := s.Stats()
		answers[strict] = append(answers[strict], fmt.Sprint("delivered ", st.Delivered, " failed ", st.Failed))
		s.Close()
	}
	if fmt.Sprint(answers[false]) != fmt.Sprint(answers[true]) {
		t.Errorf("fates differ:\ndefault %v\nstrict  %v", answers[false], answers[true])
	}
}
