package smssandbox

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/pace"
)

const from = "+12065550100"

// sendAt sends a message of parts parts from identity at t0+at.
func sendAt(s *Server, c *clock, identity string, at time.Duration, parts, i int) answer {
	c.Set(t0.Add(at))
	return send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: identity, MessageBody: text(parts), Context: row(i)})
}

func TestBudgetExamples(t *testing.T) {
	type step struct {
		at    time.Duration
		parts int
		ok    bool
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		mps   float64
		steps []step
	}{
		{"1 MPS: one part a second", 1, []step{
			{0, 1, true}, {999 * ms, 1, false}, {time.Second, 1, true}, {1500 * ms, 1, false}, {2 * time.Second, 1, true},
		}},
		{"1 MPS: a 3-part message holds the next until 3 s", 1, []step{
			{0, 3, true}, {2999 * ms, 1, false}, {3 * time.Second, 1, true},
		}},
		{"1 MPS: ten parts at once pass, one a second", 1, []step{
			{0, 10, true}, {9999 * ms, 1, false}, {10 * time.Second, 2, true},
		}},
		{"1 MPS: a throttled message leaves no trace", 1, []step{
			{0, 1, true}, {500 * ms, 1, false}, {999 * ms, 1, false}, {time.Second, 1, true},
		}},
		{"1 MPS: a clock stepping back does not reopen the window", 1, []step{
			{time.Second, 1, true}, {0, 1, false}, {1999 * ms, 1, false}, {2 * time.Second, 1, true},
		}},
		{"10 MPS: the client's 3-part message at 0 and the next at 0.3 s", 10, []step{
			{0, 3, true}, {300 * ms, 3, true},
		}},
		{"10 MPS: ten parts in any second, however they came", 10, []step{
			{0, 3, true}, {300 * ms, 3, true}, {600 * ms, 3, true}, {900 * ms, 1, true},
			{999 * ms, 1, false}, {time.Second, 1, true}, {1050 * ms, 1, false}, {1100 * ms, 1, true},
		}},
		{"10 MPS: a burst of ten single parts", 10, []step{
			{0, 1, true}, {0, 1, true}, {0, 1, true}, {0, 1, true}, {0, 1, true},
			{0, 1, true}, {0, 1, true}, {0, 1, true}, {0, 1, true}, {0, 1, true},
			{0, 1, false}, {999 * ms, 1, false}, {time.Second, 1, true},
		}},
		{"10 MPS: a message whose later parts would overflow the window", 10, []step{
			{0, 1, true}, {0, 1, true}, {0, 1, true}, {0, 1, true}, {0, 1, true},
			{0, 1, true}, {0, 1, true}, {0, 1, true}, {0, 1, true},
			// charges 0 and 0.1: ten parts in (−1, 0], eleven in (−0.9, 0.1]
			{0, 2, false}, {0, 1, true},
		}},
		{"2.5 MPS: two parts per 0.8 s", 2.5, []step{
			{0, 1, true}, {400 * ms, 1, true}, {799 * ms, 1, false}, {800 * ms, 1, true}, {1199 * ms, 1, false}, {1200 * ms, 5, true},
		}},
		{"0.5 MPS: one part per 2 s", 0.5, []step{
			{0, 1, true}, {1999 * ms, 1, false}, {2 * time.Second, 2, true}, {5999 * ms, 1, false}, {6 * time.Second, 1, true},
		}},
		{"unlimited", -1, []step{
			{0, 5, true}, {0, 5, true}, {0, 5, true}, {0, 5, true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			s := New(Config{MPS: tc.mps, Now: c.Now})
			defer s.Close()
			throttles := 0
			for i, st := range tc.steps {
				a := sendAt(s, c, from, st.at, st.parts, i)
				switch {
				case st.ok && a.status != 200:
					t.Errorf("step %d (%d parts at %v): %v, want accepted", i, st.parts, st.at, a)
				case !st.ok && a.typ != "ThrottlingException":
					t.Errorf("step %d (%d parts at %v): %v, want ThrottlingException", i, st.parts, st.at, a)
				}
				if !st.ok {
					throttles++
				}
			}
			is := s.Stats().Identities[from]
			if is.BudgetThrottles != int64(throttles) || is.Throttled != int64(throttles) {
				t.Errorf("BudgetThrottles %d, Throttled %d, want %d", is.BudgetThrottles, is.Throttled, throttles)
			}
			if l := max(1, int(math.Floor(tc.mps))); tc.mps > 0 && is.MaxWindowParts > l {
				t.Errorf("MaxWindowParts %d > %d", is.MaxWindowParts, l)
			}
		})
	}
}

// patterns are the parts of successive messages, repeated.
var patterns = map[string][]int{
	"single parts": {1},
	"3 parts":      {3},
	"mixed":        {1, 3, 2, 1, 5, 1, 1, 4, 10, 1},
}

// TestBudgetAgreesWithClient plays a client that paces by parts as the
// engine does — a k-part message leaves when its first token is due and
// owes the other k−1 after it, at rate r, burst one — against the sandbox
// at MPS, with the sandbox's clock stepped to each send. At 98% of MPS
// (the engine's headroom) and at MPS itself it must never be throttled;
// 1% faster, it must be, first at the message that takes the charges past
// L = max(1, floor(MPS)).
func TestBudgetAgreesWithClient(t *testing.T) {
	for _, mps := range []float64{1, 3, 10, 100, 2.5, 0.5, 0.2} {
		for pname, pattern := range patterns {
			for _, speed := range []float64{0.98, 1, 1.01} {
				t.Run(fmt.Sprintf("%v MPS, %s, at %v×", mps, pname, speed), func(t *testing.T) {
					c := newClock()
					s := New(Config{MPS: mps, Now: c.Now})
					defer s.Close()
					rate := speed * mps
					limit := max(1, int(math.Floor(mps)))
					next := 0.0 // seconds after t0 the next message may leave
					sum, first, throttles := 0, -1, 0
					n := 300
					for i := range n {
						k := pattern[i%len(pattern)]
						a := sendAt(s, c, from, time.Duration(math.Round(next*1e9)), k, i)
						next += float64(k) / rate
						if sum += k; a.status != 200 {
							if a.typ != "ThrottlingException" {
								t.Fatalf("message %d: %v", i, a)
							}
							throttles++
							if first < 0 {
								first = i
							}
						}
					}
					if speed <= 1 {
						if throttles > 0 {
							t.Fatalf("%d of %d messages throttled, the first #%d", throttles, n, first)
						}
						return
					}
					want, cum := -1, pattern[0]
					for i := 1; want < 0; i++ {
						if cum += pattern[i%len(pattern)]; cum > limit {
							want = i
						}
					}
					if first != want {
						t.Errorf("first throttle at message %d, want %d", first, want)
					}
					if is := s.Stats().Identities[from]; is.BudgetThrottles != int64(throttles) {
						t.Errorf("BudgetThrottles %d, throttles seen %d", is.BudgetThrottles, throttles)
					}
				})
			}
		}
	}
}

// TestStrictWindowAgreesWithPacer drives the sandbox's strict window with
// the engine's own pacer (internal/pace, 98% of MPS, parts as cost): no
// throttle, ever. The pacer keeps to the strict count (a message's parts
// all at once, in a sliding second); the default budget, which charges a
// message's parts 1/MPS apart, may throttle the second's worth of parts
// it lets go together after waiting for room.
func TestStrictWindowAgreesWithPacer(t *testing.T) {
	for _, mps := range []float64{1, 3, 10, 2.5, 0.5} {
		t.Run(fmt.Sprint(mps, " MPS"), func(t *testing.T) {
			c := newClock()
			s := New(Config{MPS: mps, Now: c.Now, StrictWindow: true})
			defer s.Close()
			p := pace.New(mps)
			now := t0
			pattern := patterns["mixed"]
			for i := range 200 {
				k := pattern[i%len(pattern)]
				var slot pace.Send
				for {
					var wait time.Duration
					var ok bool
					slot, wait, ok = p.ReserveN(from, now, k)
					now = now.Add(wait)
					if ok {
						break
					}
				}
				// As the engine does: the send left at its slot, and its
				// answer came.
				p.Left(slot, now)
				a := sendAt(s, c, from, now.Sub(t0), k, i)
				if a.status != 200 {
					t.Fatalf("message %d (%d parts at %v): %v", i, k, now.Sub(t0), a)
				}
				p.Answered(slot, pace.Counted, now)
			}
			// A message of more than L parts is held alone in the window
			// for k/MPS seconds: what strict mode promises is no more than
			// max(L, the largest message) at once, and no throttle.
			is := s.Stats().Identities[from]
			if is.Accepted != 200 || is.BudgetThrottles != 0 || is.Throttled != 0 {
				t.Errorf("Accepted %d, BudgetThrottles %d, Throttled %d, want 200, 0, 0", is.Accepted, is.BudgetThrottles, is.Throttled)
			}
			if most := max(1, int(math.Floor(mps)), slices.Max(pattern)); is.MaxArrivalParts > most || is.MaxWindowParts > most {
				t.Errorf("MaxArrivalParts %d, MaxWindowParts %d, want ≤ %d", is.MaxArrivalParts, is.MaxWindowParts, most)
			}
		})
	}
}

func TestBudgetPerIdentity(t *testing.T) {
	c := newClock()
	s := New(Config{Now: c.Now, Numbers: []Number{
		{PhoneNumber: "+12065550100"},
		{PhoneNumber: "+18885550100", Type: "TOLL_FREE", MPS: 3},
	}})
	defer s.Close()
	for i := range 3 {
		if a := sendAt(s, c, "+18885550100", 0, 1, i); a.status != 200 {
			t.Fatalf("toll-free send %d: %v", i, a)
		}
	}
	if a := sendAt(s, c, "+18885550100", 0, 1, 3); a.typ != "ThrottlingException" {
		t.Errorf("fourth toll-free part in the second: %v", a)
	}
	// Another number's budget is its own: 1 MPS, Config.MPS's default.
	if a := sendAt(s, c, "+12065550100", 0, 1, 4); a.status != 200 {
		t.Errorf("10DLC send: %v", a)
	}
	if a := sendAt(s, c, "+12065550100", 0, 1, 5); a.typ != "ThrottlingException" {
		t.Errorf("second 10DLC part in the second: %v", a)
	}
	st := s.Stats()
	if st.Identities["+18885550100"].MaxWindowParts != 3 || st.Identities["+12065550100"].MaxWindowParts != 1 {
		t.Errorf("identities: %+v", st.Identities)
	}
}

func TestThrottleAlways(t *testing.T) {
	c := newClock()
	s := New(Config{Now: c.Now, ThrottleAlways: []string{from}})
	defer s.Close()
	// The engine's five tries, 2 s … 128 s apart: every one throttled.
	at := time.Duration(0)
	for i, wait := range []time.Duration{0, 2, 8, 32, 128} {
		at += wait * time.Second
		if a := sendAt(s, c, from, at, 1, 0); a.typ != "ThrottlingException" || a.status != 400 {
			t.Fatalf("try %d: %v", i+1, a)
		}
	}
	is := s.Stats().Identities[from]
	if is.Throttled != 5 || is.BudgetThrottles != 0 || is.Accepted != 0 {
		t.Errorf("identity stats %+v", is)
	}
	// Other identities are not affected.
	if a := sendAt(s, c, "+12065550199", at, 1, 0); a.status != 200 {
		t.Errorf("another identity: %v", a)
	}
}
