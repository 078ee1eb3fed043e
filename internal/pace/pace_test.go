package pace

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// sends simulates a sender that sends as soon as the pacer allows, from t0
// for d, and returns the send instants.
func sends(p *Pacer, from string, start time.Time, d time.Duration) []time.Time {
	var out []time.Time
	now := start
	for now.Before(start.Add(d)) {
		_, wait, ok := p.Reserve(from, now)
		now = now.Add(wait)
		if ok {
			out = append(out, now)
		}
	}
	return out
}

// maxWindow is the most sends in any half-open one-second window.
func maxWindow(ts []time.Time) int {
	best, j := 0, 0
	for i := range ts {
		for ts[i].Sub(ts[j]) >= time.Second {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

func TestEvenSpacingNeverExceedsRate(t *testing.T) {
	for _, rate := range []float64{1, 10, 80, 400, 1000} {
		p := New(rate)
		ts := sends(p, "A", t0, 10*time.Second)
		if w := maxWindow(ts); w > int(rate) {
			t.Errorf("rate %v: %d sends in one second", rate, w)
		}
		// +1: the first send needs no wait; the first second is sent with
		// twice the headroom.
		if got, want := len(ts), int(Paced(rate)*10); got < want-int(rate-Paced(rate)) || got > want+2 {
			t.Errorf("rate %v: %d sends in 10s, want about %d", rate, got, want)
		}
	}
}

// TestHeadroomIsAboutOneMessage: the pace before any throttle leaves one
// message of a second (2% at low rates, 0.5% at high ones).
func TestHeadroomIsAboutOneMessage(t *testing.T) {
	for _, tc := range []struct{ limit, want float64 }{
		{1, 0.98}, {10, 9.8}, {50, 49}, {80, 79}, {200, 199}, {400, 398}, {1000, 995},
	} {
		if got := Paced(tc.limit); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Paced(%v) = %v, want %v", tc.limit, got, tc.want)
		}
	}
	if !math.IsInf(Paced(0), 1) {
		t.Error("Paced(0) is not unlimited")
	}
}

func TestUnlimited(t *testing.T) {
	p := New(0)
	if r := p.Rate("A"); !math.IsInf(r, 1) {
		t.Fatalf("unlimited Rate() = %v, want +Inf", r)
	}
	for i := 0; i < 1000; i++ {
		if _, wait, ok := p.Reserve("A", t0); !ok || wait != 0 {
			t.Fatalf("unlimited pacer made send %d wait %v", i, wait)
		}
	}
}

// TestReserveNOwesTheRest: a send of several tokens leaves when its first
// is due; the next send waits for the rest.
func TestReserveNOwesTheRest(t *testing.T) {
	p := New(1 / 0.98) // one token a second
	t0 := time.Unix(1_750_000_000, 0)
	for i, tc := range []struct {
		at   time.Duration
		cost int
		wait time.Duration
	}{
		{0, 3, 0},                             // leaves at once, owes 2 s
		{0, 1, 3 * time.Second},               // after the 3 parts
		{3 * time.Second, 2, time.Second},     // the token at 3 s was booked: 4 s
		{4 * time.Second, 0, 2 * time.Second}, // cost 0 counts as 1: after 4 s + 2 parts
	} {
		_, d, ok := p.ReserveN("A", t0.Add(tc.at), tc.cost)
		if !ok || d.Round(time.Millisecond) != tc.wait {
			t.Errorf("reservation %d at %v of %d: wait %v (ok %v), want %v", i, tc.at, tc.cost, d, ok, tc.wait)
		}
	}
}

// TestLargeSendsHoldTheSecond: under the strict count, a send of more
// parts than a second at the limit holds (L = floor(limit)) goes alone
// into an empty window and stays k ÷ limit seconds in it (at 2.5/s a
// 3-part SMS counts 1.2 s). No send may arrive while the window has no
// room for its parts, at whole and fractional limits, with a burst after
// each hold.
func TestLargeSendsHoldTheSecond(t *testing.T) {
	pattern := []int{1, 3, 2, 1, 5, 1, 1, 4, 10, 1}
	for _, limit := range []float64{0.5, 1, 1.5, 2.5, 3, 3.7, 7.5, 10} {
		p := New(limit)
		l := max(1, int(math.Floor(limit)))
		type held struct {
			until time.Time
			parts int
		}
		var window []held
		now := t0
		for i := range 200 {
			k := pattern[i%len(pattern)]
			var s Send
			for {
				var wait time.Duration
				var ok bool
				s, wait, ok = p.ReserveN("A", now, k)
				now = now.Add(wait)
				if ok {
					break
				}
			}
			window = slices.DeleteFunc(window, func(h held) bool { return !h.until.After(s.At) })
			parts := 0
			for _, h := range window {
				parts += h.parts
			}
			if parts > 0 && parts+k > l {
				t.Fatalf("%v/s: send %d of %d parts at %v finds %d parts in the window, allowed %d", limit, i, k, s.At.Sub(t0), parts, l)
			}
			hold := max(time.Second, time.Duration(math.Round(float64(k)*float64(time.Second)/limit)))
			window = append(window, held{s.At.Add(hold), k})
			p.Left(s, s.At)
			p.Answered(s, Counted, s.At.Add(50*time.Millisecond))
		}
	}
}

// TestPartsFitTheWindow: SMS of 1, 2 and 3 parts at random, at 10
// parts/s, every part of a send counted at its departure (as the strict
// window counts them at the send's arrival): no sliding second holds more
// than 10 parts, and the sends keep up with the best that any pacer that
// sends them in order could do within a second of 10 parts (bestInOrder).
func TestPartsFitTheWindow(t *testing.T) {
	for _, seed := range []uint64{3, 4, 5, 6} {
		p := New(10)
		rng := rand.New(rand.NewPCG(seed, 4))
		now := t0
		var charges []time.Time
		var costs []int
		first, last, lastCost, parts := time.Time{}, time.Time{}, 0, 0
		for now.Before(t0.Add(120 * time.Second)) {
			cost := 1 + rng.IntN(3)
			if seed%2 == 0 && rng.IntN(2) == 0 {
				cost = 1 // a mix of mostly one part, as a campaign's
			}
			var s Send
			for {
				var wait time.Duration
				var ok bool
				s, wait, ok = p.ReserveN("A", now, cost)
				if ok {
					now = now.Add(wait)
					break
				}
				now = now.Add(wait)
			}
			p.Answered(s, Counted, s.At.Add(75*time.Millisecond))
			for range cost {
				charges = append(charges, s.At)
			}
			if first.IsZero() {
				first = s.At
			}
			last, lastCost = s.At, cost
			parts += cost
			costs = append(costs, cost)
		}
		sortTimes(charges)
		if w := maxWindow(charges); w > 10 {
			t.Errorf("seed %d: a second held %d parts, want ≤ 10", seed, w)
		}
		r := float64(parts-lastCost) / last.Sub(first).Seconds()
		best := bestInOrder(costs, 10)
		if r < 0.985*best {
			t.Errorf("seed %d: %.3f parts/s, want ≥ 98.5%% of %.3f, the best in order", seed, r, best)
		}
		t.Logf("seed %d: %.3f parts/s, the best in order %.3f (%.1f%%), the pace %.1f", seed, r, best, 100*r/best, Paced(10))
	}
}

// bestInOrder is the most parts per second that sends of costs, in that
// order, can keep when no sliding second may hold more than limit parts:
// each send leaves as soon as the second before it has room for its
// parts, which is the earliest any schedule can send it.
func bestInOrder(costs []int, limit int) float64 {
	var at []time.Duration
	var now time.Duration
	for i, c := range costs {
		for {
			held, oldest := 0, -1
			for j := i - 1; j >= 0 && at[j] > now-time.Second; j-- {
				held += costs[j]
				if held+c > limit && oldest < 0 {
					oldest = j
				}
			}
			if held == 0 || oldest < 0 {
				break
			}
			now = at[oldest] + time.Second
		}
		at = append(at, now)
	}
	n := len(costs) - 1
	parts := 0
	for _, c := range costs[:n] {
		parts += c
	}
	return float64(parts) / (at[n] - at[0]).Seconds()
}

// api is a strict sliding-second limit per number, fed by senders that send
// whenever the pacer allows, in simulated time, as the sandbox's strict
// window does it: requests arrive a millisecond after they leave (plus up
// to ±jitter), are admitted or throttled on arrival and answered latency
// later; every request counts in its second at its arrival, whatever its
// answer (throttled and failed ones too).
type api struct {
	t       *testing.T
	p       *Pacer
	latency time.Duration
	jitter  time.Duration
	// dial delays each request of a number's first second by up to this
	// much more, at random: the new connections of a run's start, which
	// make requests reach the API in another order than they left.
	dial  time.Duration
	limit func(from string, at time.Duration) int     // accepted per sliding second
	other func(from string, at time.Duration) float64 // another sender's messages per second on the number
	fail  float64                                     // share of requests refused with a transient error (counted all the same)
	rng   *rand.Rand

	events      eventQueue
	windows     map[string][]time.Time
	accepted    map[string][]time.Time // arrival of each accepted request
	throttle    map[string]int
	throttledAt map[string][]time.Time
	lastOther   map[string]time.Time
	failed      map[string]int
	changes     []Change
}

type event struct {
	at     time.Time
	arrive bool // else: answered
	send   Send
	v      Verdict
}

type eventQueue []event

func (q eventQueue) Len() int           { return len(q) }
func (q eventQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q eventQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)        { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func newAPI(t *testing.T, ceiling float64, latency time.Duration, limit func(string, time.Duration) int) *api {
	return &api{t: t, p: New(ceiling), latency: latency, limit: limit, rng: rand.New(rand.NewPCG(1, 2)),
		windows: map[string][]time.Time{}, accepted: map[string][]time.Time{}, throttle: map[string]int{}, throttledAt: map[string][]time.Time{}, lastOther: map[string]time.Time{}, failed: map[string]int{}}
}

// run sends from each number for d.
func (a *api) run(d time.Duration, numbers ...string) {
	next := map[string]time.Time{}
	for _, n := range numbers {
		next[n] = t0
	}
	end := t0.Add(d)
	for {
		// The earliest sender due.
		from := ""
		for _, n := range numbers {
			if from == "" || next[n].Before(next[from]) {
				from = n
			}
		}
		now := next[from]
		for a.events.Len() > 0 && !a.events[0].at.After(now) {
			a.handle(heap.Pop(&a.events).(event))
		}
		if !now.Before(end) {
			break
		}
		s, wait, ok := a.p.Reserve(from, now)
		if !ok {
			next[from] = now.Add(wait)
			continue
		}
		arrive := s.At.Add(time.Millisecond)
		if a.jitter > 0 {
			arrive = arrive.Add(time.Duration((2*a.rng.Float64() - 1) * float64(a.jitter)))
		}
		if a.dial > 0 && s.At.Sub(t0) < time.Second {
			arrive = arrive.Add(time.Duration(a.rng.Float64() * float64(a.dial)))
		}
		heap.Push(&a.events, event{at: arrive, arrive: true, send: s})
		next[from] = s.At
	}
	for a.events.Len() > 0 {
		a.handle(heap.Pop(&a.events).(event))
	}
}

// handle admits or throttles an arrival, or passes an answer to the pacer.
func (a *api) handle(e event) {
	if !e.arrive {
		if c, ok := a.p.Answered(e.send, e.v, e.at); ok {
			a.changes = append(a.changes, c)
		}
		return
	}
	from := e.send.From
	w := a.windows[from]
	if a.other != nil {
		// The other traffic since the last arrival (inbound messages),
		// evenly spaced.
		last := a.lastOther[from]
		if last.IsZero() {
			last = t0
		}
		for {
			r := a.other(from, last.Sub(t0))
			if r <= 0 {
				last = last.Add(10 * time.Millisecond)
			} else {
				next := last.Add(time.Duration(float64(time.Second) / r))
				if next.After(e.at) {
					break
				}
				last = next
				for len(w) > 0 && !w[0].After(last.Add(-time.Second)) {
					w = w[1:]
				}
				w = append(w, last) // inbound: it counts whatever the window holds
				continue
			}
			if last.After(e.at) {
				break
			}
		}
		a.lastOther[from] = last
	}
	for len(w) > 0 && !w[0].After(e.at.Add(-time.Second)) {
		w = w[1:]
	}
	v := Counted
	switch {
	case len(w) >= a.limit(from, e.at.Sub(t0)):
		v = Throttled
		a.throttle[from]++
		a.throttledAt[from] = append(a.throttledAt[from], e.at)
	case a.fail > 0 && a.rng.Float64() < a.fail:
		v = NotCounted
		a.failed[from]++
	default:
		a.accepted[from] = append(a.accepted[from], e.at)
	}
	a.windows[from] = append(w, e.at) // whatever its answer
	heap.Push(&a.events, event{at: e.at.Add(a.latency), send: e.send, v: v})
}

// rate is the accepted messages per second of from between two instants
// of the run.
func (a *api) rate(from string, start, end time.Duration) float64 {
	n := 0
	for _, at := range a.accepted[from] {
		if d := at.Sub(t0); d >= start && d < end {
			n++
		}
	}
	return float64(n) / (end - start).Seconds()
}

// trace logs accepted and throttled requests per second of the run.
func (a *api) trace(from string) {
	acc, thr := map[int]int{}, map[int]int{}
	last := 0
	for _, at := range a.accepted[from] {
		sec := int(at.Sub(t0) / time.Second)
		acc[sec]++
		last = max(last, sec)
	}
	for _, at := range a.throttledAt[from] {
		thr[int(at.Sub(t0)/time.Second)]++
	}
	for sec := 0; sec <= last; sec++ {
		a.t.Logf("%s second %d: %d accepted, %d throttled", from, sec, acc[sec], thr[sec])
	}
	a.t.Logf("changes: %+v", a.changes)
}

func fixed(limits map[string]int) func(string, time.Duration) int {
	return func(from string, _ time.Duration) int { return limits[from] }
}

// TestToldTheLimit: a number told exactly its limit sends at 99% of it and
// is never throttled.
func TestToldTheLimit(t *testing.T) {
	for _, limit := range []int{80, 400, 1000} {
		a := newAPI(t, float64(limit), 200*time.Millisecond, fixed(map[string]int{"A": limit}))
		a.run(20*time.Second, "A")
		if a.throttle["A"] != 0 {
			t.Errorf("limit %d: %d throttled", limit, a.throttle["A"])
		}
		// 99% of the limit at 400/s and above; one message under it below.
		want := min(0.99*float64(limit), 0.999*Paced(float64(limit)))
		if r := a.rate("A", 2*time.Second, 20*time.Second); r < want {
			t.Errorf("limit %d: %.1f/s accepted, want ≥ %.1f", limit, r, want)
		}
	}
}

// TestLearnsALowerLimit: told more than the number allows, the pacer
// learns the real limit from the first throttle, sends within a few
// percent of it, and is throttled only now and then as it probes.
func TestLearnsALowerLimit(t *testing.T) {
	for _, tc := range []struct {
		told, real int
	}{{400, 300}, {1000, 80}, {80, 20}, {1000, 400}} {
		a := newAPI(t, float64(tc.told), 200*time.Millisecond, fixed(map[string]int{"A": tc.real}))
		a.run(30*time.Second, "A")
		r := a.rate("A", 2*time.Second, 30*time.Second)
		if r < 0.95*float64(tc.real) || r > float64(tc.real) {
			a.trace("A")
			t.Errorf("told %d, allows %d: %.1f/s accepted after the first 2 s, want ≥ %.1f", tc.told, tc.real, r, 0.95*float64(tc.real))
		}
		// The first throttle costs what was in flight beyond the limit
		// (latency × excess); the probes a handful each.
		sent := len(a.accepted["A"])
		if th := a.throttle["A"]; float64(th) > 0.25*float64(tc.told)+0.03*float64(sent) {
			t.Errorf("told %d, allows %d: %d throttled of %d accepted", tc.told, tc.real, th, sent)
		}
		if len(a.changes) == 0 || math.Abs(a.changes[0].Limit-float64(tc.real)) > 0.02*float64(tc.real)+1 {
			t.Errorf("told %d, allows %d: first learned %v", tc.told, tc.real, a.changes)
		}
		if l := a.p.Limit("A"); l > float64(tc.told) || l < 0.9*float64(tc.real) {
			t.Errorf("told %d, allows %d: limit at the end %.1f", tc.told, tc.real, l)
		}
	}
}

// TestLimitDropsAndComesBack: other traffic starts on the number (150
// of its 400 messages a second, inbound or another sender) and stops again: the pacer follows the
// share left down at once and probes back up to the ceiling.
func TestLimitDropsAndComesBack(t *testing.T) {
	a := newAPI(t, 400, 200*time.Millisecond, fixed(map[string]int{"A": 400}))
	a.other = func(_ string, at time.Duration) float64 {
		if at >= 10*time.Second && at < 20*time.Second {
			return 150
		}
		return 0
	}
	a.run(40*time.Second, "A")
	if r := a.rate("A", 2*time.Second, 10*time.Second); r < 0.99*400 {
		t.Errorf("before: %.1f/s, want ≥ 396", r)
	}
	if r := a.rate("A", 12*time.Second, 20*time.Second); r < 0.93*250 || r > 250 {
		t.Errorf("while the other sends: %.1f/s, want ≥ %.1f", r, 0.93*250)
	}
	if r := a.rate("A", 30*time.Second, 40*time.Second); r < 0.99*400 {
		t.Errorf("after it stopped: %.1f/s, want ≥ 396", r)
	}
	if len(a.changes) == 0 {
		t.Error("no change reported")
	}
	// A show errs low by the sends throttled with it: they took their
	// slots.
	for _, c := range a.changes {
		if math.Abs(c.Limit-250) > 0.06*250 {
			t.Errorf("change %+v, want about 250/s", c)
		}
	}
	// The window is full when the other traffic starts: what is in flight
	// until the first throttle's answer is refused (latency × rate, 80),
	// and about as many again at each of the next two throttles, which
	// show the limit lower still while the other traffic fills the second.
	if th := a.throttle["A"]; th > 3*80+20 {
		t.Errorf("%d throttled", th)
	}
	if t.Failed() {
		a.trace("A")
	}
}

// TestNumbersLearnOnTheirOwn: two numbers told 1000/s, one allowing 80/s:
// the slow one learns its limit, the other is never throttled.
func TestNumbersLearnOnTheirOwn(t *testing.T) {
	a := newAPI(t, 1000, 100*time.Millisecond, fixed(map[string]int{"slow": 80, "fast": 1000}))
	a.run(20*time.Second, "slow", "fast")
	if a.throttle["fast"] != 0 {
		t.Errorf("fast: %d throttled", a.throttle["fast"])
	}
	if r := a.rate("fast", 2*time.Second, 20*time.Second); r < 0.99*1000 {
		t.Errorf("fast: %.1f/s", r)
	}
	if r := a.rate("slow", 2*time.Second, 20*time.Second); r < 0.95*80 {
		t.Errorf("slow: %.1f/s", r)
	}
	if l := a.p.Limit("fast"); l != 1000 {
		t.Errorf("fast: limit %v", l)
	}
	if l := a.p.Limit("slow"); l < 76 || l > 90 {
		t.Errorf("slow: limit %v", l)
	}
}

// TestBunchingWidensHeadroom: with arrivals spread ±10 ms, one message of
// headroom is not enough; throttles that come while the number sends at
// its pace widen it, and after a few the number runs clean at ≥ 95%.
func TestBunchingWidensHeadroom(t *testing.T) {
	a := newAPI(t, 400, 200*time.Millisecond, fixed(map[string]int{"A": 400}))
	a.jitter = 10 * time.Millisecond
	a.run(30*time.Second, "A")
	if th := a.throttle["A"]; th > 40 {
		t.Errorf("%d throttled", th)
	}
	if r := a.rate("A", 2*time.Second, 30*time.Second); r < 0.95*400 {
		t.Errorf("%.1f/s, want ≥ 380", r)
	}
	if w := a.p.Headroom("A"); w <= 1 {
		t.Errorf("headroom never widened (%v)", w)
	}
	if l := a.p.Limit("A"); l != 400 {
		t.Errorf("bunching lowered the limit to %v", l)
	}
	if len(a.changes) != 0 {
		t.Errorf("bunching reported as a lower limit: %v", a.changes)
	}
}

// TestRefusedSendsStillCount: a share of requests is refused with an
// error; under the strict count they took their slots all the same. The
// number's second holds the pace of requests, refused ones included, and
// nothing is throttled; with arrivals bunched by ±10 ms a handful at most.
func TestRefusedSendsStillCount(t *testing.T) {
	for _, tc := range []struct {
		fail   float64
		jitter time.Duration
		d      time.Duration
		thr    int // throttled, at most
	}{
		{0.05, 0, 20 * time.Second, 0},
		{0.20, 0, 20 * time.Second, 0},
		{0.05, 10 * time.Millisecond, time.Minute, 10},
	} {
		a := newAPI(t, 500, 200*time.Millisecond, fixed(map[string]int{"A": 500}))
		a.fail, a.jitter = tc.fail, tc.jitter
		a.run(tc.d, "A")
		if th := a.throttle["A"]; th > tc.thr {
			t.Errorf("%.0f%% refused, jitter %v: %d throttled, want ≤ %d", 100*tc.fail, tc.jitter, th, tc.thr)
		}
		// Requests, whatever their answer: the pace.
		requests := a.rate("A", 2*time.Second, tc.d) + float64(a.failed["A"])/tc.d.Seconds()
		if want := 0.98 * Paced(500); requests < want {
			t.Errorf("%.0f%% refused, jitter %v: %.1f requests/s, want ≥ %.0f", 100*tc.fail, tc.jitter, requests, want)
		}
		if a.failed["A"] == 0 {
			t.Errorf("%.0f%% refused: no request was refused", 100*tc.fail)
		}
	}
}

// TestUnsentGivesItsSlotBack: a send that never reached the API (a stop,
// a network failure) leaves room for another in its second; one refused
// with an error, or throttled, does not: the API counted it.
func TestUnsentGivesItsSlotBack(t *testing.T) {
	for _, tc := range []struct {
		v    Verdict
		room bool
	}{{Unsent, true}, {NotCounted, false}, {Counted, false}} {
		p := New(10)
		n := p.number("A")
		var ss []Send
		for i := range 10 { // the second full: 10 sends in 0.9 s
			ss = append(ss, n.record("A", t0.Add(time.Duration(i)*100*time.Millisecond), 1))
		}
		p.Answered(ss[5], tc.v, t0.Add(950*time.Millisecond))
		at := t0.Add(950 * time.Millisecond)
		if fits, _ := n.room(at, 1); fits != tc.room {
			t.Errorf("verdict %d: room for one more in the second: %v, want %v", tc.v, fits, tc.room)
		}
	}
}

// TestOverFullSecondOfItsOwnIsNotBunching: a throttle of a send whose
// second held more than the room check lets in, by this number's own
// departures (a send that left late, recorded after later ones were
// booked), shows nothing of the limit or of the path: no episode, no
// lower limit, no wider headroom. One whose second held what the room
// check allows, no more, opens an episode of bunching; so does one below
// the ceiling (a limit learned), whose throttles still teach the limit.
// A send of several parts brings them all into its second.
func TestOverFullSecondOfItsOwnIsNotBunching(t *testing.T) {
	for _, tc := range []struct {
		ceiling float64
		held    int // parts in the second before the throttled send
		cost    int
		episode bool
	}{{100, 100, 1, false}, {100, 99, 1, false}, {100, 98, 1, true}, {200, 100, 1, true},
		{100, 97, 3, false}, {100, 96, 3, true}} { // the pace is 99/s: the room check lets 99 parts in a second
		p := New(tc.ceiling)
		n := p.number("A")
		n.limit = 100
		step := 900 * time.Millisecond / time.Duration(tc.held)
		for i := range tc.held {
			n.mark(n.record("A", t0.Add(time.Duration(i)*step), 1), answered)
		}
		leave := t0.Add(900 * time.Millisecond)
		s := n.record("A", leave, tc.cost)
		p.Answered(s, Throttled, leave.Add(200*time.Millisecond))
		if n.open != tc.episode {
			t.Errorf("ceiling %v, %d held, %d parts: episode %v, want %v", tc.ceiling, tc.held, tc.cost, n.open, tc.episode)
		}
		if !tc.episode && (n.limit != 100 || n.widen != 1) {
			t.Errorf("ceiling %v, %d held: limit %v, headroom ×%v; want 100 and ×1", tc.ceiling, tc.held, n.limit, n.widen)
		}
	}
}

// TestThrottleRestsUntilTheSecondDrains: after a throttle shows a lower
// limit, the next send waits until the API's window has room again: the
// sends in flight when the throttle was answered went at the rate before,
// were throttled too, and count; so the window drains only when enough of
// them have left it, not when the ones accepted have.
func TestThrottleRestsUntilTheSecondDrains(t *testing.T) {
	p := New(100)
	var slots []Send
	now := t0
	for range 100 { // 100 sends over about a second
		s, wait, ok := p.Reserve("A", now)
		if !ok {
			t.Fatal("refused a send")
		}
		now = now.Add(wait)
		slots = append(slots, s)
	}
	// The API took the first 50 and throttled the 51st.
	answer := slots[50].At.Add(100 * time.Millisecond)
	for _, s := range slots[:50] {
		p.Answered(s, Counted, s.At.Add(100*time.Millisecond))
	}
	if _, ok := p.Answered(slots[50], Throttled, answer); ok {
		t.Fatal("a change reported before the limit settled")
	}
	if l := p.Limit("A"); l != 50 {
		t.Fatalf("limit %v after the throttle, want 50", l)
	}
	_, wait, ok := p.Reserve("A", answer)
	if ok {
		t.Fatal("sent at once into a full second")
	}
	// The limit 50 less its headroom lets 49 in a second: the second has
	// room for one when 52 of the 100 have left it.
	if got, want := answer.Add(wait), slots[51].At.Add(time.Second); !got.Equal(want) {
		t.Fatalf("rests until +%v, want +%v", got.Sub(t0), want.Sub(t0))
	}
	// Later throttles of sends that left before the change are the same
	// episode.
	for _, s := range slots[51:] {
		if _, ok := p.Answered(s, Throttled, s.At.Add(100*time.Millisecond)); ok {
			t.Fatal("a send of the same episode lowered the limit again")
		}
	}
	if l := p.Limit("A"); l != 50 {
		t.Fatalf("limit %v, want 50", l)
	}
	// One episode is not learned yet: it may have been a burst of other
	// traffic.
	if l := p.Learned("A"); l != 100 {
		t.Fatalf("learned %v after one episode, want the ceiling", l)
	}
	// Quiet for a few seconds, the number at its pace: a trial of a limit
	// a step higher. The API throttles its first send over what the limit
	// allows: the limit stays, and that shows it again: learned, and
	// reported once.
	now = answer.Add(2 * probeAfter)
	over := func(v Verdict) (c Change, ok bool) {
		n := p.numbers["A"]
		for range 1000 {
			s, wait, sent := p.Reserve("A", now)
			now = now.Add(wait)
			if !sent {
				continue
			}
			if n.trial && slices.Contains(n.trialSeqs, s.seq) {
				return p.Answered(s, v, now.Add(100*time.Millisecond))
			}
			if c, ok := p.Answered(s, Counted, now.Add(100*time.Millisecond)); ok {
				t.Fatalf("reported %+v before a trial", c)
			}
		}
		t.Fatal("no trial in 1000 sends")
		return
	}
	c, ok := over(Throttled)
	if !ok || c.Limit != 50 || c.Ceiling != 100 || c.From != "A" {
		t.Fatalf("change = %+v, %v; want A's limit 50 of 100", c, ok)
	}
	if l := p.Limit("A"); l != 50 {
		t.Fatalf("limit %v after a trial that failed, want 50", l)
	}
	if l := p.Learned("A"); l != 50 {
		t.Fatalf("learned %v, want 50", l)
	}
	// The next trial waits twice as long, and when the API accepts what
	// it tries, the limit is raised.
	if q := p.numbers["A"].quiet; q != 2*probeAfter {
		t.Fatalf("quiet before the next trial %v, want %v", q, 2*probeAfter)
	}
	now = now.Add(2 * probeAfter)
	over(Counted)
	for range 20 { // the trial's other sends
		s, wait, ok := p.Reserve("A", now)
		now = now.Add(wait)
		if ok {
			p.Answered(s, Counted, now)
		}
	}
	if l := p.Limit("A"); l <= 50 {
		t.Fatalf("limit %v after a trial that passed, want it raised", l)
	}
}

// TestSeed: a limit learned by an earlier run is where the number starts;
// it is probed up after a quiet spell, and a seed at or above the ceiling
// changes nothing.
func TestSeed(t *testing.T) {
	p := New(400)
	p.Seed("A", 300, t0)
	p.Seed("B", 500, t0)
	if l := p.Limit("A"); l != 300 {
		t.Fatalf("seeded limit %v, want 300", l)
	}
	if r := p.Rate("A"); r != Paced(300) {
		t.Fatalf("seeded pace %v, want %v", r, Paced(300))
	}
	if l := p.Limit("B"); l != 400 {
		t.Fatalf("a seed above the ceiling made the limit %v", l)
	}
	a := newAPI(t, 400, 200*time.Millisecond, fixed(map[string]int{"A": 400}))
	a.p = p
	a.run(20*time.Second, "A")
	if a.throttle["A"] != 0 {
		t.Errorf("%d throttled", a.throttle["A"])
	}
	if r := a.rate("A", 0, 2*time.Second); r > 300 {
		t.Errorf("first 2 s at %.1f/s, want the seeded 300", r)
	}
	if r := a.rate("A", 12*time.Second, 20*time.Second); r < 0.99*400 {
		t.Errorf("after probing: %.1f/s, want ≥ 396", r)
	}
}

// TestThrottleNotOfItsPace: a number throttled although the API took
// nothing of it in the second before (another sender's traffic, an
// account's limit) rests 500 ms, doubling while it lasts, and keeps its
// limit: there is nothing to learn.
func TestThrottleNotOfItsPace(t *testing.T) {
	p := New(100)
	now := t0
	for i, want := range []time.Duration{firstPause, 2 * firstPause, 4 * firstPause} {
		s, wait, ok := p.Reserve("A", now)
		if !ok {
			t.Fatalf("throttle %d: no slot", i)
		}
		now = now.Add(wait + 100*time.Millisecond)
		p.Answered(s, Throttled, now)
		_, rest, ok := p.Reserve("A", now)
		if ok || rest != want {
			t.Fatalf("throttle %d: rest %v (ok %v), want %v", i, rest, ok, want)
		}
		// Answers within a second of its end are the same episode.
		now = now.Add(rest)
		s, _, _ = p.Reserve("A", now)
		p.Answered(s, Throttled, now.Add(500*time.Millisecond))
		s2, wait, ok := p.Reserve("A", now.Add(500*time.Millisecond))
		if !ok || wait > 20*time.Millisecond {
			t.Fatalf("throttle %d: a throttle of the same episode rests %v (ok %v)", i, wait, ok)
		}
		p.Answered(s2, NotCounted, now.Add(600*time.Millisecond))
		now = now.Add(1100 * time.Millisecond)
	}
	if l := p.Limit("A"); l != 100 {
		t.Fatalf("limit %v, want 100 still", l)
	}
	// After 10 s without one, the rest starts over.
	now = now.Add(quietReset + time.Second)
	s, wait, _ := p.Reserve("A", now)
	now = now.Add(wait + 100*time.Millisecond)
	p.Answered(s, Throttled, now)
	if _, rest, _ := p.Reserve("A", now); rest != firstPause {
		t.Fatalf("after a quiet spell: rest %v, want %v", rest, firstPause)
	}
}

// TestLateSendsHoldTheOnesASecondLater: a process that stalls sends late
// and together. Recorded as they left, those sends fill a later second
// more than their booked times say, and the sends of that second wait for
// room: no second of real departures holds more than the pace's ceiling.
func TestLateSendsHoldTheOnesASecondLater(t *testing.T) {
	for _, stall := range []time.Duration{10 * time.Millisecond, 30 * time.Millisecond} {
		p := New(400)
		var left []time.Time
		now := t0
		for now.Before(t0.Add(4 * time.Second)) {
			s, wait, ok := p.Reserve("A", now)
			now = now.Add(wait)
			if !ok {
				continue
			}
			at := now
			// From 2 s the process stalls: what was due in the stall
			// leaves together at its end.
			if start := t0.Add(2 * time.Second); !at.Before(start) && at.Before(start.Add(stall)) {
				at = start.Add(stall)
			}
			p.Left(s, at)
			left = append(left, at)
		}
		sortTimes(left)
		if w, want := maxWindow(left), int(math.Ceil(Paced(400))); w > want {
			t.Errorf("stall %v: %d sends left within one second, want ≤ %d", stall, w, want)
		}
		if n := len(left); n < 4*396-int(stall.Seconds()*400) {
			t.Errorf("stall %v: %d sends in 4 s", stall, n)
		}
	}
}

// TestLeftKeepsTheLatestDeparture: a send is told left twice, as its
// goroutine starts and again when its request was written. The later
// instant counts, whatever the order of the calls; the calls do not add up.
// The parts of a send count together.
func TestLeftKeepsTheLatestDeparture(t *testing.T) {
	p := New(10)
	s, wait, ok := p.ReserveN("A", t0, 3)
	if !ok || wait != 0 {
		t.Fatalf("no slot at once: wait %v, ok %v", wait, ok)
	}
	n := p.number("A")
	for _, tc := range []struct {
		left, want time.Duration
	}{{0, 0}, {50 * time.Millisecond, 50 * time.Millisecond}, {20 * time.Millisecond, 50 * time.Millisecond}, {80 * time.Millisecond, 80 * time.Millisecond}} {
		p.Left(s, t0.Add(tc.left))
		for k := range 3 {
			if got, want := n.log[n.index(s.seq+uint64(k))].at, t0.Add(tc.want); !got.Equal(want) {
				t.Errorf("told left at +%v: part %d at +%v, want +%v", tc.left, k, got.Sub(t0), want.Sub(t0))
			}
		}
	}
}

// TestLearnsTheLowerOfTwoShows: a limit is learned when two throttle
// episodes in a row show it within 5%, and it is the lower of the two (a
// show errs high); two that disagree teach nothing yet.
func TestLearnsTheLowerOfTwoShows(t *testing.T) {
	for _, tc := range []struct {
		shows []float64
		want  float64
	}{
		{[]float64{307, 300}, 300},
		{[]float64{300, 307}, 300},
		{[]float64{300, 350}, 400},
		{[]float64{350, 300, 303}, 300},
	} {
		n := New(400).number("A")
		for _, l := range tc.shows {
			n.showed(l)
		}
		if n.learned != tc.want {
			t.Errorf("shows %v: learned %v, want %v", tc.shows, n.learned, tc.want)
		}
	}
}

// TestLateUnsentSendHoldsNothing: a send that left late (a dial) is
// moved after the sends booked behind it. Unsent (the dial failed), it
// counts no more, and
// the sends behind it leave the count a second after they left: the next
// send goes then, not when the late one's second ends. An answer to a send
// holds its instant: a report of its write that comes after the answer
// (HTTP/2 tells it on another goroutine) moves nothing.
func TestLateUnsentSendHoldsNothing(t *testing.T) {
	p := New(10)
	var ss []Send
	now := t0
	for len(ss) < 11 {
		s, wait, ok := p.Reserve("A", now)
		now = now.Add(wait)
		if ok {
			ss = append(ss, s)
		}
	}
	p.Left(ss[0], t0.Add(600*time.Millisecond))
	p.Answered(ss[0], Unsent, t0.Add(700*time.Millisecond))
	for _, s := range ss[1:] {
		p.Answered(s, Counted, s.At.Add(100*time.Millisecond))
		p.Left(s, s.At.Add(900*time.Millisecond)) // after its answer: ignored
	}
	// Held by the late send, the next one would wait for its second to
	// end, at +1.6 s (and poll every millisecond until then). Not held, it
	// goes within two intervals of the last, when the second holds ss[2:],
	// 9 sends: room for one.
	want := ss[10].At.Add(2 * p.number("A").interval())
	polls := 0
	for {
		s, wait, ok := p.Reserve("A", now)
		now = now.Add(wait)
		if ok {
			if now.After(want.Add(time.Millisecond)) {
				t.Errorf("the next send left at +%v, want by +%v", now.Sub(t0), want.Sub(t0))
			}
			p.Answered(s, Counted, now)
			break
		}
		if polls++; polls > 20 {
			t.Fatalf("still no room at +%v after %d tries", now.Sub(t0), polls)
		}
	}
}

// TestFirstSecondHasWiderHeadroom: the first second's sends open new
// connections and arrive bunched, so they go with twice the headroom; the
// seconds after at the pace.
func TestFirstSecondHasWiderHeadroom(t *testing.T) {
	p := New(400)
	sends(p, "A", t0, 100*time.Millisecond)
	// What the rate gauge and the claims are sized by: the pace after the
	// warm up, even within it (a short campaign may end there).
	if r := p.Rate("A"); r != Paced(400) {
		t.Errorf("rate within the first second %v, want %v", r, Paced(400))
	}
	p = New(400)
	ts := sends(p, "A", t0, 3*time.Second)
	count := func(from, to time.Duration) int {
		n := 0
		for _, at := range ts {
			if d := at.Sub(t0); d >= from && d < to {
				n++
			}
		}
		return n
	}
	if got := count(0, time.Second); got < 395 || got > 397 {
		t.Errorf("first second: %d sends, want 396 (400 less twice the headroom)", got)
	}
	if got := count(time.Second, 2*time.Second); got < 397 || got > 399 {
		t.Errorf("second second: %d sends, want 398", got)
	}
	if r := p.Rate("A"); r != Paced(400) {
		t.Errorf("rate after the first second %v, want %v", r, Paced(400))
	}
	// Slow numbers (fewer than ten sends a second) have no warm up.
	slow := New(5)
	sends(slow, "A", t0, 100*time.Millisecond)
	if r := slow.Rate("A"); r != Paced(5) {
		t.Errorf("rate of a 5/s number in its first second %v, want %v", r, Paced(5))
	}
}

func sortTimes(ts []time.Time) {
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
}

// throttledAtRandom sends from a 10/s number for d, each answered 50 ms
// after it leaves, and throttles the sends numbered in at: each after a
// 600 ms gap in sending, so that the second before it holds 4 sends, not
// the pace. before is called before each throttle, after after it. No
// answer may report a learned limit.
func throttledAtRandom(t *testing.T, d time.Duration, at []int, before, after func(p *Pacer)) *Pacer {
	t.Helper()
	p := New(10)
	now := t0
	for sent := 0; now.Before(t0.Add(d)); {
		s, wait, ok := p.Reserve("A", now)
		now = now.Add(wait)
		if !ok {
			continue
		}
		sent++
		if slices.Contains(at, sent+5) {
			now = now.Add(600 * time.Millisecond) // nothing to send for a while
		}
		v := Counted
		if slices.Contains(at, sent) {
			v = Throttled
			before(p)
		}
		if c, ok := p.Answered(s, v, now.Add(50*time.Millisecond)); ok {
			t.Fatalf("reported %+v", c)
		}
		if v == Throttled {
			after(p)
		}
	}
	return p
}

// TestOneThrottleAtRandomIsNotLearned: a throttle that has nothing to do
// with the number's pace (a burst of other traffic on it, as the SMS
// sandbox rehearses) lowers the limit for a while, but is neither learned
// nor reported, and probing takes the number back to its ceiling.
func TestOneThrottleAtRandomIsNotLearned(t *testing.T) {
	p := throttledAtRandom(t, 30*time.Second, []int{60}, func(*Pacer) {}, func(p *Pacer) {
		if p.Limit("A") >= 10 {
			t.Fatalf("the throttle left the limit at %v", p.Limit("A"))
		}
	})
	if l := p.Learned("A"); l != 10 {
		t.Errorf("learned %v, want the ceiling", l)
	}
	if l := p.Limit("A"); l != 10 {
		t.Errorf("limit %v after 24 s without a throttle, want it probed back to 10", l)
	}
}

// TestShowingsApartByACeilingDoNotAgree: two throttles at random that
// happen to show the same limit, with the number back at its ceiling in
// between, are two first showings, not a limit learned.
func TestShowingsApartByACeilingDoNotAgree(t *testing.T) {
	first := true
	p := throttledAtRandom(t, 60*time.Second, []int{60, 460}, func(p *Pacer) {
		if !first && p.Limit("A") != 10 {
			t.Fatalf("limit %v before the second throttle, want back at the ceiling", p.Limit("A"))
		}
		first = false
	}, func(*Pacer) {})
	if l := p.Learned("A"); l != 10 {
		t.Errorf("learned %v, want the ceiling", l)
	}
}

// TestOneThrottleDoesNotSlowTheRest: a throttle of a number at its pace
// (a stall, a bunch on the path) widens its headroom; after a quiet spell
// it narrows back, and the number is sent at its pace again, not at the
// wider headroom's for the rest of its run.
func TestOneThrottleDoesNotSlowTheRest(t *testing.T) {
	p := New(10)
	now := t0
	throttle := t0.Add(5 * time.Second)
	var after []time.Time
	for now.Before(t0.Add(40 * time.Second)) {
		s, wait, ok := p.Reserve("A", now)
		now = now.Add(wait)
		if !ok {
			continue
		}
		v := Counted
		if !throttle.IsZero() && !now.Before(throttle) {
			v, throttle = Throttled, time.Time{}
		}
		p.Answered(s, v, now.Add(50*time.Millisecond))
		if v == Throttled {
			if l := p.Limit("A"); l >= 10 {
				t.Fatalf("limit %v after a throttle at the pace, want it lowered until the episode ends", l)
			}
		}
		if now.After(t0.Add(30 * time.Second)) {
			after = append(after, now)
		}
		if now.After(t0.Add(7*time.Second)) && now.Before(t0.Add(8*time.Second)) && p.Headroom("A") <= 1 {
			t.Fatalf("headroom ×%v after the episode, want it widened", p.Headroom("A"))
		}
	}
	if w := p.Headroom("A"); w != 1 {
		t.Errorf("headroom ×%v 35 s after one throttle, want ×1", w)
	}
	if r := p.Rate("A"); r != Paced(10) {
		t.Errorf("rate %v, want %v", r, Paced(10))
	}
	if r := float64(len(after)-1) / after[len(after)-1].Sub(after[0]).Seconds(); r < 0.999*Paced(10) {
		t.Errorf("%.3f sends/s in the last 10 s, want ≥ %.3f", r, 0.999*Paced(10))
	}
}

// TestDueBooksNothing: Due says when a send would leave, the same as the
// ReserveN after it, and a send of fewer parts is due no later than one
// of more; asking books nothing.
func TestDueBooksNothing(t *testing.T) {
	p := New(10)
	now := t0
	if d := p.Due("A", now, 3); d != 0 {
		t.Fatalf("an idle number: due in %v, want 0", d)
	}
	// A second's sends of 1 part, then one of 3: the second is full.
	for range 12 {
		s, wait, ok := p.ReserveN("A", now, 1)
		now = now.Add(wait)
		if ok {
			p.Answered(s, Counted, now.Add(50*time.Millisecond))
		}
	}
	for range 3 {
		d3, d1 := p.Due("A", now, 3), p.Due("A", now, 1)
		if d3 <= d1 {
			t.Fatalf("a full second: 3 parts due in %v, 1 part in %v, want the larger later", d3, d1)
		}
	}
	due := p.Due("A", now, 3)
	var waited time.Duration
	for {
		_, wait, ok := p.ReserveN("A", now.Add(waited), 3)
		waited += wait
		if ok {
			break
		}
	}
	if diff := waited - due; diff < -time.Millisecond || diff > time.Millisecond {
		t.Fatalf("Due said %v, ReserveN left after %v", due, waited)
	}
}

// TestStandardBoundsTheFirstRoundTrip: told 1,000/s on a number of
// WhatsApp's standard 80/s, the sends of the round trip before the first
// throttle's answer are all throttled; with Standard(80) at most 80 of
// them go beyond the standard second before one is answered. Told the
// truth, the hold costs about one round trip of sends at 1,000/s, and
// nothing at 400/s, whose round trip of sends fits in the standard
// second's worth.
func TestStandardBoundsTheFirstRoundTrip(t *testing.T) {
	run := func(told, real int, standard float64, d time.Duration) *api {
		a := newAPI(t, float64(told), 200*time.Millisecond, fixed(map[string]int{"A": real}))
		a.p.Standard(standard)
		a.run(d, "A")
		return a
	}
	if a := run(1000, 80, 0, 3*time.Second); a.throttle["A"] < 150 {
		t.Fatalf("without a standard rate: %d throttled, want the round trip's ~200 (the case this guards)", a.throttle["A"])
	}
	a := run(1000, 80, 80, 30*time.Second)
	if th := a.throttle["A"]; th > 80+10 {
		a.trace("A")
		t.Errorf("told 1000 on 80: %d throttled, want ≤ 90 (80 in the first round trip, the trials after)", th)
	}
	if r := a.rate("A", 2*time.Second, 30*time.Second); r < 0.98*80 {
		t.Errorf("told 1000 on 80: %.1f/s after the first 2 s, want ≥ 78.4", r)
	}
	for _, tc := range []struct {
		rate int
		lost float64 // sends of the first 2 s the hold may cost
	}{{1000, 130}, {400, 1}} {
		bare, held := run(tc.rate, tc.rate, 0, 2*time.Second), run(tc.rate, tc.rate, 80, 2*time.Second)
		if held.throttle["A"] != 0 {
			t.Errorf("told the truth at %d/s: %d throttled", tc.rate, held.throttle["A"])
		}
		if lost := len(bare.accepted["A"]) - len(held.accepted["A"]); float64(lost) > tc.lost {
			t.Errorf("told the truth at %d/s: the hold cost %d sends of the first 2 s, want ≤ %.0f", tc.rate, lost, tc.lost)
		}
	}
}

// TestStandardProof: only an accepted send beyond the standard second
// proves a number; one refused with an error does not. A limit an earlier
// run learned above the standard rate is proof already, and so is Prove
// (a throughput level of HIGH).
func TestStandardProof(t *testing.T) {
	send := func(p *Pacer, n int) (sent []Send, held int) {
		now := t0
		for len(sent) < n {
			s, wait, ok := p.Reserve("A", now)
			if !ok {
				held++
				now = now.Add(wait)
				continue
			}
			sent = append(sent, s)
			now = s.At
		}
		return sent, held
	}
	p := New(1000)
	p.Standard(80)
	sent, held := send(p, 160)
	if held != 0 {
		t.Fatalf("%d of the first 160 sends held", held)
	}
	if _, held := send(p, 1); held == 0 {
		t.Fatal("the 161st send, with 80 beyond the standard second in flight, was not held")
	}
	p.Answered(sent[100], NotCounted, sent[100].At.Add(200*time.Millisecond))
	p.Answered(sent[10], Counted, sent[10].At.Add(200*time.Millisecond))
	if p.numbers["A"].proven {
		t.Error("proven by a refused send beyond the standard second, or an accepted one within it")
	}
	p.Answered(sent[101], Counted, sent[101].At.Add(200*time.Millisecond))
	if !p.numbers["A"].proven {
		t.Error("an accepted send beyond the standard second did not prove the number")
	}

	p = New(1000)
	p.Standard(80)
	p.Seed("A", 500, t0)
	if _, held := send(p, 300); held != 0 {
		t.Errorf("a number seeded at 500/s held %d sends", held)
	}
	p = New(1000)
	p.Standard(80)
	p.Prove("A")
	p.Seed("B", 60, t0)
	p.Prove("B")
	p.Seed("B", 70, t0) // a later seed below the standard rate
	if _, held := send(p, 300); held != 0 {
		t.Errorf("a proven number held %d sends", held)
	}
	if !p.numbers["B"].proven {
		t.Error("a seed below the standard rate undid Prove")
	}
}

// A caller woken late, by up to 1.3 ms (a timer fires up to a millisecond
// late, more on a busy core; at 1,000/s a slot is one), still sends at the
// pace, and no second holds more than the record allows. With a bucket of
// one token this sent at 0.969 of the pace at 1,000/s.
func TestLateWakeUpsKeepThePace(t *testing.T) {
	for _, limit := range []float64{80, 400, 1000} {
		p := New(limit)
		r := rand.New(rand.NewPCG(1, uint64(limit)))
		now := t0
		var left []time.Time
		for now.Before(t0.Add(10 * time.Second)) {
			s, wait, ok := p.Reserve("A", now)
			if !ok {
				now = now.Add(wait)
				continue
			}
			now = s.At.Add(time.Duration(r.Float64() * 1.3 * float64(time.Millisecond)))
			p.Left(s, now)
			p.Answered(s, Counted, now.Add(50*time.Millisecond))
			left = append(left, now)
		}
		got := float64(len(left)-1) / left[len(left)-1].Sub(left[0]).Seconds()
		if got < 0.98*Paced(limit) {
			t.Errorf("%v/s: woken late it sent at %.1f/s, %.3f of the pace %.0f", limit, got, got/Paced(limit), Paced(limit))
		}
		if w := maxWindow(left); w > p.number("A").allowed(limit) {
			t.Errorf("%v/s: %d sends left in one second", limit, w)
		}
	}
}

// Only a number proven above the standard rate catches up a late slot:
// one that may be at that level keeps a bucket of one.
func TestCatchUpWaitsForProof(t *testing.T) {
	p := New(1000)
	p.Standard(80)
	p.Reserve("A", t0)
	if b := p.numbers["A"].lim.Burst(); b != 1 {
		t.Errorf("unproven at 1,000/s: a bucket of %d", b)
	}
	p.Prove("A")
	if b := p.numbers["A"].lim.Burst(); b != catchUp {
		t.Errorf("proven at 1,000/s: a bucket of %d, want %d", b, catchUp)
	}
	q := New(400)
	q.Reserve("A", t0)
	if b := q.numbers["A"].lim.Burst(); b != 1 {
		t.Errorf("at 400/s: a bucket of %d", b)
	}
}

// TestFirstEpisodeCountsWhatTheAPIAccepted: told 1,000 on a number of
// 80, with the requests of the first second reaching the API up to 5 ms
// later than they left, at random (new connections), so that some that
// left before the first throttled one arrive after it. The first
// episode's count of the sends before it then says 81 or more; the
// accepted ones, counted again at its end, say 80. Before the recount,
// two of these six seeds kept 81: every second at that pace was the
// API's fill.
func TestFirstEpisodeCountsWhatTheAPIAccepted(t *testing.T) {
	for seed := range uint64(6) {
		a := newAPI(t, 1000, 200*time.Millisecond, fixed(map[string]int{"A": 80}))
		a.rng = rand.New(rand.NewPCG(seed, 9))
		a.dial = 5 * time.Millisecond
		a.p.Standard(80)
		a.run(5*time.Second, "A")
		if l := a.p.Limit("A"); l > 80 {
			a.trace("A")
			t.Errorf("seed %d: limit %.1f after 5 s, want ≤ 80", seed, l)
		}
		if th := a.throttle["A"]; th > 85 {
			t.Errorf("seed %d: %d throttled, want ≤ 85 (the first round trip's 80 and a few)", seed, th)
		}
	}
}

// TestLeftoversOfAnEpisodeAreNotAShare: told more than the limit, with
// the first second's requests up to 20 ms late on the way. The record
// lets their slots go before the API does, and a throttle within two
// seconds of a lowering, with the record's second within the room, was
// taken for another sender's share (what the API kept of this number's):
// told 1,000 on 80 one seed of six fell to 1.5/s (a second of 77
// throttled leftovers and 1 kept send), told 400 on 300 all six to
// 211-215/s (the API still counting the accepted sends of the 20 ms
// before the record's second).
func TestLeftoversOfAnEpisodeAreNotAShare(t *testing.T) {
	for _, tc := range []struct{ told, real float64 }{{1000, 80}, {400, 300}} {
		for seed := range uint64(6) {
			a := newAPI(t, tc.told, 200*time.Millisecond, fixed(map[string]int{"A": int(tc.real)}))
			a.rng = rand.New(rand.NewPCG(seed, 9))
			a.dial = 20 * time.Millisecond
			a.p.Standard(80)
			a.run(5*time.Second, "A")
			if l := a.p.Limit("A"); l < 0.9*tc.real || l > tc.real {
				a.trace("A")
				t.Errorf("told %.0f on %.0f, seed %d: limit %.1f after 5 s, want %.0f to %.0f", tc.told, tc.real, seed, l, 0.9*tc.real, tc.real)
			}
		}
	}
}

// TestTrialsNearALearnedLimitCostOneEach: a number whose limit was learned
// three below its real one (seeded 297 on 300) probes back up a part a
// second at a time, and each trial over its real limit costs one
// throttle: a step that doubled after the first pass tested 305 and cost
// five.
func TestTrialsNearALearnedLimitCostOneEach(t *testing.T) {
	p := New(400)
	p.Seed("A", 297, t0)
	a := newAPI(t, 400, 200*time.Millisecond, fixed(map[string]int{"A": 300}))
	a.p = p
	a.run(60*time.Second, "A")
	// The throttles by the tenth of a second they came in: one each.
	tenths := map[int]int{}
	for _, at := range a.throttledAt["A"] {
		tenths[int(at.Sub(t0)/(100*time.Millisecond))]++
	}
	for k, c := range tenths {
		if c > 1 {
			t.Errorf("%d throttles at %.1f s, want a trial to cost one", c, float64(k)/10)
		}
	}
	if th := a.throttle["A"]; th == 0 || th > 8 {
		t.Errorf("%d throttled in 60 s, want a trial's one every 10 s or so", th)
	}
	if l := p.Limit("A"); l < 299 || l > 300 {
		t.Errorf("limit at the end %.1f, want 299-300", l)
	}
	if r := a.rate("A", 10*time.Second, 60*time.Second); r < 0.985*300 {
		t.Errorf("%.1f/s accepted after 10 s, want ≥ %.1f", r, 0.985*300)
	}
	if t.Failed() {
		a.trace("A")
	}
}

// TestTrialTestsTheNarrowestHeadroom: a number whose headroom is widened
// tests, in a trial, one part more than it will send at the higher limit
// once the headroom narrows again, not at the widened pace: a trial that
// passed at the widened pace raised it to its real limit plus one.
func TestTrialTestsTheNarrowestHeadroom(t *testing.T) {
	p := New(400)
	p.Seed("A", 300, t0)
	n := p.numbers["A"]
	n.widen = 2
	n.setLimit(t0)
	now := t0.Add(time.Minute)
	n.probe(now)
	if !n.trial {
		t.Fatal("no trial after a quiet minute")
	}
	if want := n.allowedAt(n.trialTo, 1) + 1; n.trialTarget != want {
		t.Errorf("trial of %.1f tests %d parts a second (widened pace %d), want %d", n.trialTo, n.trialTarget, n.allowed(n.trialTo), want)
	}
}

// TestThrottleDuringATrialIsTheTrials: a send that left after a trial's
// first one and was throttled went into the second the trial filled: the
// trial failed, the limit stays, and the headroom is not widened as if
// arrivals bunched.
func TestThrottleDuringATrialIsTheTrials(t *testing.T) {
	p := New(400)
	p.Seed("A", 300, t0)
	now := t0.Add(30 * time.Second)
	var trial []Send
	var after Send
	// Fill a second at the pace, then book what the trial lets over it and
	// one ordinary send after them.
	for end := now.Add(2 * time.Second); now.Before(end); {
		s, wait, ok := p.Reserve("A", now)
		now = now.Add(wait)
		if !ok {
			continue
		}
		n := p.numbers["A"]
		switch {
		case n.trial && slices.Contains(n.trialSeqs, s.seq):
			trial = append(trial, s)
		case len(trial) > 0 && after.At.IsZero():
			after = s
		default:
			p.Answered(s, Counted, now.Add(time.Millisecond))
		}
		if !after.At.IsZero() {
			break
		}
	}
	if len(trial) == 0 || after.At.IsZero() {
		t.Fatalf("no trial sends (%d) or none after them", len(trial))
	}
	limit := p.Limit("A")
	p.Answered(trial[0], Counted, now.Add(200*time.Millisecond))
	p.Answered(after, Throttled, now.Add(201*time.Millisecond))
	n := p.numbers["A"]
	if n.trial {
		t.Error("the trial is still open after a throttle in its second")
	}
	if l := p.Limit("A"); l != limit {
		t.Errorf("limit %v after the trial failed, want %v", l, limit)
	}
	if w := p.Headroom("A"); w != 1 {
		t.Errorf("headroom ×%v, want ×1: the trial's throttle is not bunching", w)
	}
}

// TestTrialSendsLeaveLast: a trial's sends leave after every send booked
// before them. A worker books its slot ahead of time; a trial send booked
// at once by another worker left before it, the API throttled the
// booked one in the trial's full second, and the pacer took that for a
// throttle of its pace (limit 80 → 79 told 1,000 on 80, headroom
// doubled) while the trial, its own sends accepted, passed.
func TestTrialSendsLeaveLast(t *testing.T) {
	p := New(400)
	p.Seed("A", 300, t0)
	start := t0.Add(30 * time.Second)
	// Two workers, each booking its next slot as soon as its last send
	// left, as the engine's do: one books ahead while the other asks.
	free := []time.Time{start, start.Add(time.Millisecond)}
	trials := 0
	var latest time.Time
	var inFlight []Send
	for {
		w := 0
		if free[1].Before(free[0]) {
			w = 1
		}
		now := free[w]
		if now.After(start.Add(3 * time.Second)) {
			break
		}
		inFlight = slices.DeleteFunc(inFlight, func(s Send) bool {
			if s.At.Add(200 * time.Millisecond).After(now) {
				return false
			}
			p.Answered(s, Counted, now)
			return true
		})
		s, wait, ok := p.Reserve("A", now)
		free[w] = now.Add(max(wait, time.Microsecond))
		if !ok {
			continue
		}
		if slices.Contains(p.numbers["A"].trialSeqs, s.seq) {
			trials++
			if !s.At.After(latest) {
				t.Fatalf("trial send %d leaves at %v, not after a send booked before it at %v", s.seq, s.At.Sub(t0), latest.Sub(t0))
			}
		} else if s.At.After(latest) {
			latest = s.At
		}
		inFlight = append(inFlight, s)
	}
	if trials == 0 {
		t.Fatal("no trial in 3 s")
	}
}
