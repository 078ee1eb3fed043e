// Package pace spaces sends per sender phone number and learns each
// number's real throughput from the API's answers.
//
// The pacer assumes the strictest count an API may keep, the one the
// project's sandboxes rehearse (--strict-window): every request counts in
// its number's sliding second at its arrival, whatever its answer (a
// request refused with an error, or throttled, took its slot all the
// same), and an SMS of k parts counts k at once. An API that counts more
// kindly (accepted messages only, the parts of an SMS one by one) loses a
// little throughput to it, never a message to a throttle.
//
// Each number has a token bucket (golang.org/x/time/rate), so sends leave
// evenly spaced, at the number's limit less a headroom of about one
// message. The limit starts at the configured rate (the ceiling, never
// exceeded). The pacer keeps its own record of the sliding second, in
// parts, of every send that left; so that:
//   - a send of k parts leaves only when the second before it holds no
//     more than the pace rounded up less k, never more than the limit
//     rounded down (the limit itself below 50/s, where the headroom is
//     under a message; 2 at 2.5/s): no second by arrival holds more than
//     the pace allows, whatever the mix of parts. A send of more parts
//     than that goes alone into an empty second and counts for k ÷ the
//     limit seconds, as long as the limit takes to pass its parts. A number that
//     sends SMS of several parts may send a second's worth of parts
//     together when a hold for room ends, so that the time a hold takes is
//     made up, not lost;
//   - on a throttle it knows how many of its sends the API counted in the
//     second before, and sets the limit there at once (the number allows
//     less than the ceiling: inbound traffic, a standard tier, a shared
//     number); or, when that count is already at its pace, widens the
//     headroom (the path bunches arrivals more than one message), for as
//     long as throttles keep coming: after a quiet spell it narrows again;
//   - once the sends that left just after a run's first throttled one
//     are answered, it counts what the API accepted before it, and lowers
//     the limit there if that is less: at a run's start, new connections
//     reorder requests, and some that left before the throttled one
//     arrived after it;
//   - the sends that were in flight when a throttle showed a lower limit
//     went at the rate before it and are throttled too; they still count,
//     so the next send waits until the API's second has really drained;
//   - while no throttle comes it probes the limit back up, never above the
//     ceiling, by trials: the window may hold a few sends more than the
//     limit once, and the limit is raised only when the API accepted them.
//     A trial that fails costs a throttle or two, not a round trip of
//     sends at a rate too high; after each that fails, the next waits
//     twice as long (3 s, then 6, then 10 at most);
//   - it records when each send really left (Left): sends that waited for
//     a new connection, or that a stalled process let go late, and left
//     together hold the sends a second later;
//   - the first second goes with twice the headroom: its requests wait for
//     new connections and arrive bunched;
//   - told more than the rate every number of the channel accepts
//     (Standard: WhatsApp's 80/s), a number not yet seen to accept more
//     has at most that many sends beyond it in flight: it may be at that
//     level, and its first throttle is answered a round trip late.
//
// Numbers learn independently.
package pace

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

const (
	probeAfter = 3 * time.Second      // quiet time after a throttle before the first trial
	probeEvery = time.Second          // between trials that pass; each step doubles
	maxQuiet   = 10 * time.Second     // the quiet time before a trial doubles after each that fails, up to this
	maxWiden   = 16                   // headroom grows at most this many times
	warmUp     = time.Second          // the first sends' wider headroom lasts this long
	guard      = 5 * time.Millisecond // a send of a number that sends parts, held for room, leaves this long after the room is there
	narrowLag  = 10 * time.Second     // widened headroom halves after this long without a throttle
	maxTrial   = 16                   // parts over the limit a trial may add, at most: a trial that fails costs as many throttles
	provePoll  = 5 * time.Millisecond // a send held for a number's proof asks again after this
	probeNear  = probeEvery / 4       // between trials that pass near a shown limit: a part a second each
	trialAfter = 5 * time.Millisecond // a trial send leaves this long after the latest send booked: that one may leave late (tryOver)

	// A throttle that the number's own pace does not explain rests it:
	// 500 ms, doubling while they keep coming, at most 30 s; after 10 s
	// without one it starts over.
	firstPause = 500 * time.Millisecond
	maxPause   = 30 * time.Second
	quietReset = 10 * time.Second
)

// Verdict is what an answer says about a send.
type Verdict int

const (
	// Counted: accepted, or no answer (assume it counted).
	Counted Verdict = iota
	// NotCounted: refused with an error other than a throttle. The name
	// is a kinder count's: under the strict count the pacer assumes, the
	// request took its slot in its second all the same; it says nothing
	// of the limit.
	NotCounted
	// Throttled: refused for the number's throughput (130429). It took
	// its slot too.
	Throttled
	// Unsent: never reached the API (a stop came first, the network
	// failed): its slot is given back.
	Unsent
)

// Send is a send slot handed out by the pacer: pass it back to Answered
// with the API's verdict.
type Send struct {
	From string
	At   time.Time // when the send may leave
	Cost int
	seq  uint64
	// shared: booked in a shared Book, which saw seen parts booked by
	// every process in the second before the slot.
	shared bool
	seen   int
}

// Change tells that throttles showed a number accepts less than its
// ceiling.
type Change struct {
	From    string
	Limit   float64 // what the number accepts, per second
	Ceiling float64 // the configured rate
}

// Pacer hands out send slots per sender number. The zero value is not
// usable; call New. It is safe for concurrent use.
type Pacer struct {
	mu       sync.Mutex
	ceiling  float64 // +Inf: no limit until the API shows one
	numbers  map[string]*number
	book     Book    // nil: the pacer's own record alone (Shared sets it)
	standard float64 // see Standard
}

// New returns a Pacer for numbers allowed perSecond sends each (the
// ceiling); perSecond ≤ 0 means no limit until a throttle shows one.
func New(perSecond float64) *Pacer {
	c := perSecond
	if c <= 0 {
		c = math.Inf(1)
	}
	return &Pacer{ceiling: c, numbers: map[string]*number{}}
}

// Paced is the pace a number of limit perSecond is sent at before any
// throttle: the limit less one message of headroom (1% and 0.5% of the
// limit bound it: at low rates one message is a large share, at high
// rates bunching grows with the rate).
func Paced(perSecond float64) float64 {
	if perSecond <= 0 || math.IsInf(perSecond, 1) {
		return math.Inf(1)
	}
	return perSecond - headroom(perSecond, 1)
}

func headroom(limit, widen float64) float64 {
	h := max(min(1, 0.02*limit), 0.005*limit)
	return min(h*widen, 0.25*limit)
}

type state uint8

// Every part that reached the API counts in its second, whatever its
// answer; what differs is what a part tells of the API's second when a
// throttle comes (seen).
const (
	pending   state = iota // no answer yet
	answered               // accepted
	refused                // refused with an error
	throttled              // throttled: the second was full when it came
	presumed               // no answer yet, left with or after a throttled one: presumed throttled
	unsent                 // never reached the API: does not count
)

// entry is one part (one token) of a send in the record.
type entry struct {
	at     time.Time
	hold   time.Duration // how long it counts after at: a second, or longer for a send larger than a second allows (see holdFor)
	state  state
	beyond bool // it left with the standard rate's worth or more in its second, before the number showed it accepts that (see Standard)
}

// until is when e leaves the record's window: it counts before leave
// while until is after leave.
func (e entry) until() time.Time { return e.at.Add(e.hold) }

type number struct {
	lim     *rate.Limiter
	ceiling float64
	limit   float64 // what it is sent at, before headroom; ≤ ceiling
	learned float64 // what throttles showed twice it accepts (limit less any probe since)
	shown   float64 // what the last throttle episode showed, if less than the ceiling; 0: none since the ceiling
	widen   float64 // headroom multiplier, raised by bunching
	parts   bool    // a send of several parts was booked: the bucket holds a second's worth
	// The first second's sends wait for new connections (a TCP, with
	// Meta a TLS handshake each) and arrive bunched: until warmUntil the
	// headroom is doubled. warmed is when that ended.
	warmUntil, warmed time.Time

	clock time.Time // the latest instant given to lim

	log     []entry // parts of the sends of the last two seconds, in booking order
	head    int     // log[head:] is kept
	win     int     // log[win:] left within the last second
	first   uint64  // seq of log[head]
	next    uint64  // seq of the next part
	counted int     // parts within the last second that count

	pausedUntil  time.Time
	pause        time.Duration // the last rest for a throttle not of its pace
	adjusted     time.Time     // sends that left before this belong to the last throttle episode
	lastThrottle time.Time
	lastRaise    time.Time
	narrowed     time.Time // when the headroom last narrowed
	raises       int

	// A trial of the limit (probe): the record may hold more parts than
	// the limit allows, up to trialTarget, once; the limit is raised to
	// trialTo once the second reached it and the API accepted them all.
	trial        bool
	trialTarget  int           // the parts in a second the trial tests
	reached      bool          // a trial send took the second to trialTarget
	trialPending int           // trial sends not answered yet
	trialSeqs    []uint64      // the trial's sends
	trialTo      float64       // the limit the trial tests
	quiet        time.Duration // quiet time after a throttle before a trial

	open      bool    // a throttle episode has no answer yet from a send after it
	throttles int     // throttled answers in the episode
	bunched   bool    // the episode may be bunching, not a lower limit
	before    float64 // the limit before the episode
	// When the send that began the run's first throttle episode left, if
	// within the first second of sends (zero: none, or a shared book's):
	// what the API accepted before it is counted again (recount).
	episodeLeft time.Time
	began       time.Time // the number's first send
	lowered     time.Time // when a throttle last lowered the limit
	unreported  bool      // a lowered limit not yet reported

	// standard is what every number of the channel accepts a second
	// (Standard); proven: this one was seen to accept more.
	standard float64
	proven   bool

	share   float64       // of the limit this process sends at: 1, or less when runs split the number (Split)
	version int64         // the latest news of a shared Book's taken or given
	late    time.Duration // how late this process's shared sends leave of late (see lateBy)
}

func (p *Pacer) number(from string) *number {
	n, ok := p.numbers[from]
	if !ok {
		n = &number{ceiling: p.ceiling, limit: p.ceiling, learned: p.ceiling, widen: 1, quiet: probeAfter, share: 1, standard: p.standard}
		n.lim = rate.NewLimiter(n.pace(), 1)
		p.numbers[from] = n
	}
	return n
}

func (n *number) pace() rate.Limit {
	if math.IsInf(n.limit, 1) {
		return rate.Inf
	}
	w := n.widen
	if !n.warmUntil.IsZero() {
		w *= 2
	}
	return rate.Limit(n.paced(w))
}

func (n *number) paced(widen float64) float64 {
	l := n.limit * n.share
	return max(l-headroom(l, widen), l*0.5)
}

// warm starts the first second's wider headroom at the first send, and
// ends it a second later.
func (n *number) warm(now time.Time) {
	switch {
	case n.next == 0 && n.warmUntil.IsZero() && n.limit >= 10/warmUp.Seconds():
		n.warmUntil = now.Add(warmUp) // worth it only for ten sends or more
	case n.warmUntil.IsZero() || now.Before(n.warmUntil):
		return
	default:
		n.warmUntil, n.warmed = time.Time{}, now
	}
	n.setLimit(now)
}

// setLimit sets the token bucket to the pace at now, or at the latest
// instant it was given if later: callers take now before the pacer's lock,
// so instants may come out of order, and the bucket would count the time
// between them twice. A number that sends parts has a burst of what its
// second allows; one of single sends, two at a pace of 500/s or more once
// the number is proven (see catchUp).
func (n *number) setLimit(now time.Time) {
	if now.Before(n.clock) {
		now = n.clock
	}
	n.clock = now
	n.lim.SetLimitAt(now, n.pace())
	b := 1
	if i := n.interval(); i > 0 && i <= catchUpBelow && (n.standard == 0 || n.proven) {
		b = catchUp
	}
	if n.parts {
		b = n.allowed(n.limit)
	}
	if b != n.lim.Burst() {
		n.lim.SetBurstAt(now, b)
	}
}

// A dispatcher woken late (a timer fires up to a millisecond late, a busy
// core) takes its slot late, and with a bucket of one token the time it
// lost is lost for good: at 1,000/s, where a slot is a millisecond, that
// was 9% of the rate. A bucket of two keeps the pace's phase through a
// lateness of up to a slot; the record's room, not the bucket, keeps each
// second within what it allows. Three kept a little more (0.97-0.98 of
// 1,000/s against 0.96-0.97) but bunched arrivals enough that one of two
// runs was throttled. At a slot of more than 2 ms a late timer seldom
// loses one, so the bucket there stays as it was. Nor does a number not yet
// proven above the standard rate (see Standard) catch up: it may be at
// that level, and sends made up back to back in its first round trip
// widened its headroom to the most (told 1,000 on 80: 64/s, not 78).
const (
	catchUp      = 2
	catchUpBelow = 2 * time.Millisecond
)

// allowed is how many parts the record may hold in a second at limit: the
// pace rounded up (evenly spaced sends at a fractional pace put its
// ceiling in some second), but never more than the limit rounded down,
// what a strict window of that limit holds (2 at 2.5/s; the limit itself
// below 50/s, where the headroom is less than a message).
func (n *number) allowed(limit float64) int {
	w := n.widen
	if !n.warmUntil.IsZero() {
		w *= 2
	}
	return n.allowedAt(limit, w)
}

// allowedAt is allowed with the headroom widened w times.
func (n *number) allowedAt(limit, w float64) int {
	if math.IsInf(limit, 1) {
		return math.MaxInt
	}
	limit *= n.share
	p := max(limit-headroom(limit, w), limit*0.5)
	return max(1, int(math.Floor(min(math.Ceil(p-1e-9), limit)+1e-9)))
}

// interval is the time between two sends at the pace.
func (n *number) interval() time.Duration {
	l := n.pace()
	if l == rate.Inf || l <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / float64(l))
}

// expire moves the parts whose hold (a second, for most) ended at or
// before now out of the count, and drops those older than two seconds (a
// throttle answered late still finds the second before its send). It
// stops at the first part still held: Left, and the longer hold of a send
// larger than a second allows, can keep parts booked after it counted a
// while longer than they do (room looks at each part's own hold). Unsent
// ones are passed over whenever they were booked: Left can put a late
// send after sends booked behind it, and once it counts no more it must
// not keep them counted.
func (n *number) expire(now time.Time) {
	for n.win < len(n.log) && (n.log[n.win].state == unsent || !n.log[n.win].until().After(now)) {
		if n.log[n.win].counts() {
			n.counted--
		}
		n.win++
	}
	cut := now.Add(-2 * time.Second)
	for n.head < n.win && !n.log[n.head].at.After(cut) {
		n.head++
		n.first++
	}
	if n.head > 1024 && n.head > len(n.log)/2 {
		n.log = append(n.log[:0], n.log[n.head:]...)
		n.win -= n.head
		n.head = 0
	}
}

// index returns where the entry of seq is in the log, or -1.
func (n *number) index(seq uint64) int {
	if seq < n.first || seq >= n.next {
		return -1
	}
	return n.head + int(seq-n.first)
}

// record books a send of cost parts leaving at at: all of them count at
// once, as a strict window counts an SMS at its arrival, for as long as
// holdFor says.
func (n *number) record(from string, at time.Time, cost int) Send {
	s := Send{From: from, At: at, Cost: cost, seq: n.next}
	if n.next == 0 {
		n.began = at
	}
	hold := n.holdFor(cost)
	for range cost {
		n.log = append(n.log, entry{at: at, hold: hold})
	}
	n.counted += cost
	n.next += uint64(cost)
	return s
}

// holdFor is how long a send of cost parts counts in the record: a
// second, or cost ÷ the limit when that is longer. A send of more parts
// than a second allows goes alone into an empty second (room), and a
// strict window keeps it as long as the limit takes to pass its parts
// (at 2.5/s, a 3-part SMS counts 1.2 s), or the number would send more
// than its limit: with a burst of more than one part, the bucket alone
// would let a second's worth follow a second after it. Rounded up to the
// nanosecond, so that the record never lets go before the API does.
func (n *number) holdFor(cost int) time.Duration {
	if math.IsInf(n.limit, 1) || !(n.limit > 0) {
		return time.Second
	}
	return max(time.Second, time.Duration(math.Ceil(float64(cost)*float64(time.Second)/(n.limit*n.share))))
}

// room reports whether a send of cost parts leaving at leave finds room
// for all of them in the second before it: the parts that count there and
// its own within what the number allows.
// If not, it returns when: the instant enough of the oldest parts have
// left that second; for a number that sends parts, a guard after, so that
// a request that takes a little less time to reach the API than the one
// it follows does not arrive while that one is still counted (held sends
// of one part are rare, and the headroom's spacing covers them). A lone send larger than the
// second allows goes into an empty one. This check, not the token bucket,
// is what keeps every second within the pace: the bucket spaces sends,
// but a k-part send's parts all count at once; it also holds the sends
// that would follow sends that left late and together (a stalled process)
// into an over-full second.
func (n *number) room(leave time.Time, cost int) (fits bool, retry time.Time) {
	if math.IsInf(n.limit, 1) {
		return true, time.Time{}
	}
	count, i := n.window(leave)
	allowed := n.allowed(n.limit)
	if count == 0 || count+cost <= allowed {
		return true, time.Time{}
	}
	// The parts still held at leave, by when they leave: Left makes the
	// log's order by departure differ from its order by booking, and a
	// send larger than a second allows is held longer than the sends
	// after it.
	var untils []time.Time
	for ; i < len(n.log); i++ {
		if e := n.log[i]; e.counts() && e.until().After(leave) {
			untils = append(untils, e.until())
		}
	}
	if len(untils) == 0 || len(untils)+cost <= allowed {
		return true, time.Time{}
	}
	slices.SortFunc(untils, time.Time.Compare)
	drop := min(len(untils)+cost-allowed, len(untils)) // parts that must leave first
	retry = untils[drop-1]
	if n.parts {
		retry = retry.Add(guard)
	}
	return false, retry
}

// window returns the parts that count at leave (an upper bound: see
// expire), and the index of the first after the ones that left.
func (n *number) window(leave time.Time) (count, i int) {
	count, i = n.counted, n.win
	for ; i < len(n.log) && (n.log[i].state == unsent || !n.log[i].until().After(leave)); i++ {
		if n.log[i].counts() {
			count--
		}
	}
	return count, i
}

func (e entry) counts() bool { return e.state != unsent }

// set moves log[i] to state to, keeping the count of the last second.
func (n *number) set(i int, to state) {
	e := &n.log[i]
	if i >= n.win && e.counts() != (to != unsent) {
		if e.counts() {
			n.counted--
		} else {
			n.counted++
		}
	}
	e.state = to
}

// ReserveN books the next send slot for from at instant now for a send of
// cost tokens (an SMS of cost parts; below 1 is 1) and returns how long to
// wait before using it. The send leaves when its first token is due and
// the second before it has room for all its parts (they count at once);
// the bucket's other tokens are owed after it, an interval of the pace
// apart: a 3-part SMS at 1 part/s leaves at once and the next one 3 s
// later. While the number rests (after a throttle, or its last second is
// full) it books nothing and returns ok false with the rest: call again
// after waiting.
func (p *Pacer) ReserveN(from string, now time.Time, cost int) (s Send, wait time.Duration, ok bool) {
	cost = max(cost, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.number(from)
	if now.After(n.clock) {
		n.clock = now
	}
	n.expire(now)
	n.warm(now)
	if cost > 1 && !n.parts {
		n.parts = true
		n.setLimit(now)
	}
	if now.Before(n.pausedUntil) {
		return Send{}, n.pausedUntil.Sub(now), false
	}
	// A shared book runs the trial: this process's record holds only
	// its own share of the second.
	if p.book == nil {
		if s, ok := n.tryOver(from, now, cost); ok {
			return s, s.At.Sub(now), true
		}
	}
	first := n.lim.ReserveN(now, 1)
	leave := now.Add(first.DelayFrom(now))
	if fits, retry := n.room(leave, cost); !fits {
		// Held less than a slot (sends a second ago left late): a send of
		// one part leaves when the second has room and the next slot keeps
		// its time, so lateness does not carry over. Held longer (a rest
		// after a throttle), it books nothing; nor does a send of several
		// parts: its number's bucket holds a second's worth, and the
		// tokens it would have used wait for it there.
		if again, _ := n.room(retry, cost); !again || cost > 1 || retry.Sub(leave) >= n.interval() {
			first.CancelAt(now)
			return Send{}, max(retry.Sub(now), time.Millisecond), false
		}
		leave = retry
	}
	beyond := false
	if p.book == nil && n.unproven(leave, cost) {
		if n.beyondInFlight() >= int(n.standard) {
			first.CancelAt(now)
			return Send{}, provePoll, false
		}
		beyond = true
	}
	for range cost - 1 {
		n.lim.ReserveN(now, 1)
	}
	s = n.record(from, leave, cost)
	if beyond {
		n.log[n.index(s.seq)].beyond = true
	}
	return s, leave.Sub(now), true
}

// unproven reports whether a send of cost parts leaving at leave would
// take its second beyond the standard rate before the number has shown it
// accepts more (see Standard).
func (n *number) unproven(leave time.Time, cost int) bool {
	if n.standard <= 0 || n.proven || n.limit <= n.standard {
		return false
	}
	count, _ := n.window(leave)
	return count+cost > int(n.standard)
}

// beyondInFlight counts the sends that left beyond the standard rate and
// have no answer yet. It reads the whole record, but only until the number
// is proven: for a run's first round trip past the standard rate.
func (n *number) beyondInFlight() int {
	c := 0
	for _, e := range n.log[n.head:] {
		if e.beyond && (e.state == pending || e.state == presumed) {
			c++
		}
	}
	return c
}

// tryOver books a trial's send (see probe): until a trial's sends have
// taken the second to what it tests, a send whose parts would take the
// second over what the limit allows leaves outside the token bucket,
// trialAfter after the latest send booked (at once if that left), as long
// as the second it leaves in holds no more than the trial tests.
// A worker books its slot ahead of time: a trial send that left before
// it put the booked send last in the trial's second, the API throttled
// that one, and the pacer took the throttle for its pace's (told 1,000 on
// 80: the limit fell to 79 and the headroom doubled) while the trial,
// its own sends accepted, passed.
func (n *number) tryOver(from string, now time.Time, cost int) (Send, bool) {
	if !n.trial || n.reached {
		return Send{}, false
	}
	if full, _ := n.window(now); full+cost <= n.allowed(n.limit) {
		return Send{}, false
	}
	// With the trial's first send, after the latest other send booked,
	// even one due before now: its worker may not have sent it yet.
	leave := now
	if len(n.trialSeqs) > 0 {
		if i := n.index(n.trialSeqs[0]); i >= 0 && n.log[i].at.After(leave) {
			leave = n.log[i].at
		}
	}
	for j := n.win; j < len(n.log); j++ {
		at := n.log[j].at.Add(trialAfter)
		if n.log[j].state == pending && at.After(leave) && !slices.Contains(n.trialSeqs, n.first+uint64(j-n.head)) {
			leave = at
		}
	}
	// What the second holds when the trial's sends leave: parts may have
	// left it since now.
	count, _ := n.window(leave)
	if count+cost > n.trialTarget {
		return Send{}, false
	}
	s := n.record(from, leave, cost)
	n.reached = count+cost == n.trialTarget
	n.trialPending++
	n.trialSeqs = append(n.trialSeqs, s.seq)
	return s, true
}

// Reserve is ReserveN for a send of one token.
func (p *Pacer) Reserve(from string, now time.Time) (Send, time.Duration, bool) {
	return p.ReserveN(from, now, 1)
}

// WaitN blocks until a send of cost tokens from from may leave (see
// ReserveN), or ctx is done. A slot booked is not given back when ctx
// ends first: the pacer errs on the slow side. A Shared pacer books the
// send in its Book too, and returns the Book's error when it cannot.
func (p *Pacer) WaitN(ctx context.Context, from string, cost int) (Send, error) {
	s, err := p.waitLocal(ctx, from, cost)
	if err != nil || p.book == nil {
		return s, err
	}
	return p.share(ctx, s)
}

// waitLocal is WaitN on the pacer's own record.
func (p *Pacer) waitLocal(ctx context.Context, from string, cost int) (Send, error) {
	for {
		s, d, ok := p.ReserveN(from, time.Now(), cost)
		if d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return Send{}, ctx.Err()
			case <-t.C:
			}
		} else if err := ctx.Err(); err != nil {
			return Send{}, err
		}
		if ok {
			return s, nil
		}
	}
}

// Left records that s left at at, if later than booked or than an earlier
// call said: a process that stalls (a garbage collection, a busy machine)
// sends late, and sends that left late together fill a later second more
// than their booked times say. Call it as the request leaves; again, later,
// when the request was written (a new connection's dial and handshake
// delay it): only the latest instant counts.
func (p *Pacer) Left(s Send, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.number(s.From)
	if s.shared {
		n.lateBy(at.Sub(s.At))
	}
	for k := range uint64(max(s.Cost, 1)) {
		// Only sends still in the last second's count: one booked more
		// than a second before it left is out of the count already, and
		// is not counted in the second it really left in (a process
		// suspended that long, a dial that slow; rare).
		// Nor sends answered: a report of the write that comes after the
		// answer (HTTP/2 makes it on another goroutine) is stale.
		i := n.index(s.seq + k)
		if i < n.win || (n.log[i].state != pending && n.log[i].state != presumed) {
			continue
		}
		if at.After(n.log[i].at) {
			n.log[i].at = at
		}
	}
}

// Answered records the API's verdict on s, answered at now. It reports a
// Change when a number has shown twice that it accepts less than its
// ceiling.
func (p *Pacer) Answered(s Send, v Verdict, now time.Time) (Change, bool) {
	p.mu.Lock()
	n := p.number(s.From)
	limit, paused := n.limit, n.pausedUntil
	c, ok := n.answered(s, v, now)
	var w News
	tell := false
	if p.book != nil {
		w, tell = n.news(limit, paused, now)
	}
	p.mu.Unlock()
	if tell {
		p.tell(s.From, w)
	}
	return c, ok
}

func (n *number) answered(s Send, v Verdict, now time.Time) (Change, bool) {
	if n.open && !s.At.Before(n.adjusted) {
		n.settle(now)
	}
	trial := n.trial && slices.Contains(n.trialSeqs, s.seq)
	// A send that left after a trial's first one, throttled, went into the
	// second the trial filled: the trial's failure, not bunching.
	duringTrial := n.trial && len(n.trialSeqs) > 0 && s.seq > n.trialSeqs[0]
	switch v {
	case Counted:
		if i := n.index(s.seq); i >= 0 && n.log[i].beyond && !n.proven {
			n.proven = true
			n.setLimit(now) // its bucket may catch up now
		}
		n.mark(s, answered)
		if trial {
			n.trialAnswered(now, true)
		}
		n.narrow(now)
		n.probe(now)
	case Unsent:
		n.mark(s, unsent)
		if trial {
			n.trialAnswered(now, true) // it told nothing: as if it had not gone over
		}
	case NotCounted:
		n.mark(s, refused)
		if trial {
			n.trialAnswered(now, true)
		}
	case Throttled:
		n.mark(s, throttled)
		if trial || duringTrial {
			// The trial went over the limit: the limit stays, and the next
			// trial waits twice as long. The sends that left with or after
			// this one went into the same full second: throttles of theirs
			// are the trial's.
			n.trialAnswered(now, false)
			if i := n.index(s.seq); i >= 0 {
				n.presume(n.log[i].at)
			}
			n.lastThrottle, n.adjusted = now, now
			break
		}
		n.throttled(s, now)
	}
	if !n.episodeLeft.IsZero() {
		n.recount(n.leftAt(s), now)
	}
	if n.unreported {
		n.unreported = false
		return Change{From: s.From, Limit: n.learned, Ceiling: n.ceiling}, true
	}
	return Change{}, false
}

// mark sets the state of s's entries still in the log.
func (n *number) mark(s Send, to state) {
	for k := range uint64(max(s.Cost, 1)) {
		if i := n.index(s.seq + k); i >= 0 {
			n.set(i, to)
		}
	}
}

// seen is what the API counted of this number in the second before s
// left, as far as the record tells: every part that left there, whatever
// its answer, but s's own. took is the part of it that was accepted or
// not answered yet; kept is took and the parts refused with an error, not
// those throttled or presumed throttled. Those took their slots too, but
// show the second was full, not what the number accepts: with another
// sender's traffic on the number, counting them would show the number's
// own pace as its limit while nothing of it is accepted (see throttled).
// Sends that left at the same instant count if they were booked before s.
func (n *number) seen(s Send) (seen, kept, took int) {
	if s.shared {
		// Every process's sends, as the book saw them: their answers are
		// the other processes' to know.
		return s.seen, s.seen, s.seen
	}
	i := n.index(s.seq)
	if i < 0 {
		return n.counted, n.counted, n.counted
	}
	left := n.log[i].at
	cut := left.Add(-time.Second)
	own := i + max(s.Cost, 1)
	// Left makes the log's order by departure differ from its order by
	// booking (a late send before sends that left earlier): all of it is
	// looked at.
	for j := n.head; j < len(n.log); j++ {
		if j >= i && j < own {
			continue
		}
		e := n.log[j]
		if !e.at.After(cut) || !(e.at.Before(left) || e.at.Equal(left) && j < i) {
			continue
		}
		if !e.counts() {
			continue
		}
		seen++
		switch e.state {
		case pending, answered:
			took++
			kept++
		case refused:
			kept++
		}
	}
	return seen, kept, took
}

// throttled starts a throttle episode, or counts one more throttle of the
// current one (a send that left before the last adjustment).
func (n *number) throttled(s Send, now time.Time) {
	prev := n.lastThrottle
	n.lastThrottle = now
	if s.At.Before(n.adjusted) {
		n.throttles++
		return
	}
	seen, kept, took := n.seen(s)
	if took == 0 {
		// Throttled with nothing of this number's taken in the second
		// before: not its pace (another sender's traffic, an account's
		// limit). Rest, longer while it lasts; the limit stays. Answers
		// within a second of the last rest's end are the same episode.
		if now.Before(n.pausedUntil.Add(time.Second)) {
			return
		}
		if n.pause == 0 || now.Sub(prev) > quietReset {
			n.pause = firstPause
		} else {
			n.pause = min(2*n.pause, maxPause)
		}
		n.pausedUntil, n.adjusted = now.Add(n.pause), now
		return
	}
	// What the API's second held with s, had it counted as the record
	// does: its window had no room for s's parts, so the number accepts
	// at most one part less. A throttle that comes within two seconds of
	// one that lowered the limit, the number's sends within it, shows
	// another sender's traffic in the second (or a limit still falling):
	// then what the API kept of this number's is the measure, not what it
	// was sent.
	full := seen + max(s.Cost, 1)
	left := n.leftAt(s)
	if now.Sub(n.lowered) < 2*time.Second && n.limit < n.ceiling && full <= n.allowed(n.limit)+1 {
		if held, lag := n.leftovers(left); held > kept || full+lag > n.allowed(n.limit)+1 {
			// Not another sender's share either when the API's second may
			// hold this number's own sends the record has let go: the
			// API counts a request until a second after it arrived, and
			// the first second's requests (new connections) can arrive
			// well after they left. Either the second is mostly the last
			// episode's throttled sends, or with the first second's sends
			// of the reorder before it the room is full. Taken as a
			// share (what the API kept of this number's), told 1,000 on
			// 80 with the first second's requests up to 20 ms late on the
			// way, the limit fell to 1.5 for one seed of six; told 400 on
			// 300, to 211-215 for all six. It shows nothing of the limit:
			// the sends booked until now are this throttle's.
			n.presume(left)
			n.adjusted = now
			return
		}
		full = kept + max(s.Cost, 1)
	}
	// The pace the second before s was sent at: a second after the warm
	// up it still holds sends of its wider headroom.
	paced := float64(n.pace())
	if !n.warmUntil.IsZero() || left.Sub(n.warmed) < time.Second {
		paced = n.paced(2 * n.widen)
	}
	if n.limit >= n.ceiling && full > n.allowed(n.limit) {
		// The second held more than the room check lets in by this
		// number's own departures: a send that left late, recorded (Left)
		// after later ones were booked. That shows nothing of the limit
		// or of the path: no episode, no wider headroom. A 100,000-row run
		// at 500/s had about one such throttle, and doubling the headroom
		// for it cost the rest of the run 0.5%. Below the ceiling (a
		// limit learned) the throttles still teach the limit.
		n.presume(left)
		n.adjusted = now
		return
	}
	n.open, n.throttles, n.bunched = true, 1, false
	if !s.shared && n.limit >= n.ceiling && left.Sub(n.began) < time.Second-reorder {
		n.episodeLeft = left
	}
	if n.raises == 0 && now.Sub(n.lowered) > 2*time.Second && float64(full-1) >= paced-1 {
		// This number sent no more than its pace at a limit that neither a
		// probe raised nor a throttle just lowered, yet the API had its
		// fill: either arrivals bunch more than the headroom absorbs, or
		// the limit just fell. Slow down as if it fell; the episode's end
		// tells which (settle).
		n.bunched, n.before = true, n.limit
	}
	// Counted in this process's share of the number (Split).
	if l := max(1, float64(full-1)) / n.share; l < n.limit {
		n.limit, n.lowered = l, now
		if !n.bunched {
			n.showed(n.limit)
		}
	}
	n.presume(left)
	n.endTrial()
	n.adjusted, n.lastRaise, n.raises = now, now, 0
	n.setLimit(now)
}

// reorder is how far apart in departure two requests of a number may be
// and still reach the API in the other order: a new connection's dial, a
// goroutine scheduled late.
const reorder = 25 * time.Millisecond

// recount counts again, once the API has answered the sends that left up
// to reorder after the one that began the run's first throttle episode,
// what it accepted of those that left before: the limit becomes that, if
// it is less. The episode's own count (seen) took every send that left
// before the throttled one, answered or not: that is all it could know
// when the throttle came, but at a run's start (new connections) sends
// that left before the throttled one can arrive after it, and be
// throttled. Told 1,000 on 80, the first episode showed 83, and the next,
// a second later, took 17 throttles to show 80; told 400 on 300, one
// number's second episode took 61. Only the first: later episodes start
// from a full second, in which the API takes a send as another leaves it,
// so the accepted sends around a throttled one tell less than seen does.
// last is when the send just answered left.
func (n *number) recount(last, now time.Time) {
	left := n.episodeLeft
	if left.IsZero() || !last.After(left.Add(reorder)) {
		return
	}
	n.episodeLeft = time.Time{}
	if n.bunched || now.Sub(n.began) >= 2*time.Second {
		// Bunching: the episode's end restores the limit. Or the record,
		// which holds two seconds, has lost some of the first.
		return
	}
	to := left.Add(reorder)
	took := 0
	for _, e := range n.log[n.head:] {
		if e.state == answered && !e.at.After(to) {
			took++
		}
	}
	if l := max(1, float64(took)) / n.share; l < n.limit {
		n.limit, n.lowered = l, now
		n.showed(l)
		n.setLimit(now)
	}
}

// leftAt is when s really left (Left), or was booked to if the record no
// longer holds it.
func (n *number) leftAt(s Send) time.Time {
	if i := n.index(s.seq); i >= 0 {
		return n.log[i].at
	}
	return s.At
}

// leftovers counts, for a send that left at left, the parts the API may
// still count that tell nothing of what it accepts: held, those in the
// second before left that left before the last throttle episode was
// answered (adjusted) and were throttled, or are presumed to be; lag,
// those of the run's first second (new connections) that left in the
// reorder before that second.
func (n *number) leftovers(left time.Time) (held, lag int) {
	cut := left.Add(-time.Second)
	first := n.began.Add(time.Second)
	for _, e := range n.log[n.head:] {
		switch {
		case e.at.After(cut) && e.at.Before(left):
			if (e.state == throttled || e.state == presumed) && e.at.Before(n.adjusted) {
				held++
			}
		case e.counts() && e.at.After(cut.Add(-reorder)) && !e.at.After(cut) && e.at.Before(first):
			lag++
		}
	}
	return held, lag
}

// presume marks the sends not answered yet that left at or after left, a
// throttled send's departure: they went into the same full second. They
// still count in the record's second (the API counted them), but tell
// nothing of what it accepts until they are answered.
func (n *number) presume(left time.Time) {
	for i := n.win; i < len(n.log); i++ {
		if x := n.log[i]; x.state == pending && !x.at.Before(left) {
			n.log[i].state = presumed
		}
	}
}

// settle ends a throttle episode at the first answer to a send that left
// after it began. An episode at the number's pace with no more throttles
// than a bunch explains was bunching: the limit is restored and the
// headroom doubled, until a quiet spell narrows it again (narrow).
func (n *number) settle(now time.Time) {
	n.open = false
	if !n.bunched {
		return
	}
	if float64(n.throttles) > max(3, 0.02*n.before) {
		n.showed(n.limit) // the limit fell
		return
	}
	n.widen = min(n.widen*2, maxWiden)
	n.narrowed = now
	n.limit, n.lowered = n.before, time.Time{}
	n.setLimit(now)
}

// narrow halves a widened headroom after narrowLag without a throttle (and
// as long again after each step): a throttle or two of a bunch, a stall,
// must not slow a number for the rest of its run. Bunching that lasts
// widens it again.
func (n *number) narrow(now time.Time) {
	if n.widen <= 1 || n.open || now.Sub(n.lastThrottle) < narrowLag || now.Sub(n.narrowed) < narrowLag {
		return
	}
	n.widen = max(1, n.widen/2)
	n.narrowed = now
	n.setLimit(now)
}

// showed records a limit below the ceiling that a throttle episode
// showed. It is learned once the next episode agrees within 5%: a throttle
// at random (a burst of other traffic on the number) shows a limit once, a
// real limit shows again as soon as probing passes it, and a limit falling
// (other traffic starting) shows ever less until it settles. Of the two
// that agree, the lower is learned: a show counts the sends of its second
// not answered yet, and the last few before a throttle are often
// throttled too, so a show errs high (307 for 300 in a benchmark).
func (n *number) showed(l float64) {
	if l >= n.ceiling {
		n.shown = 0
		return
	}
	if n.shown > 0 && math.Abs(l-n.shown) <= 0.05*n.shown {
		n.unreported, n.learned = true, min(l, n.shown)
	}
	n.shown = l
}

// probe starts a trial of a lowered limit after a quiet spell (n.quiet
// since the last throttle): the next sends that find the second full go
// outside the bucket, just after the sends booked before them, until the
// second holds what the limit a step higher allows (tryOver). When the API
// accepts them all, the limit is raised by the step (trialAnswered), and
// the next step, a second later, is twice as large, never above the
// ceiling; near a limit the
// last throttles showed, a step is one part a second (nearShown). When
// it throttles, or throttles a send that left after the trial's first,
// the limit stays, that counts as a show of it, and the next trial
// waits twice as long (up to maxQuiet). Raising the pace itself, as a
// kinder count allows, would send at a rate the number may not accept for
// the round trip until the first throttle's answer: under a strict count
// every send of that round trip is throttled (the throttled ones keep the
// second full), tens of them where a trial costs one or two.
func (n *number) probe(now time.Time) {
	every := probeEvery
	if n.nearShown() {
		every = probeNear
	}
	if n.trial || n.limit >= n.ceiling || n.open || now.Sub(n.lastThrottle) < n.quiet || now.Sub(n.lastRaise) < every {
		return
	}
	step := max(0.5, 0.01*n.limit) * math.Pow(2, float64(n.raises))
	to := min(n.ceiling, n.limit+step)
	// The trial tests one part more than pacing at the higher limit puts
	// in a second, so that it keeps a part of headroom once raised; at its
	// narrowest headroom, for a widened one narrows again (narrow): a
	// trial of what the widened pace puts there raised a number told 400
	// on 300 to 301, where pacing fills the API's second, and the first
	// throttle then came in a storm (every send of a round trip finds the
	// second full, its throttled ones keeping it so: 57-124 throttles a
	// number, and the limit learned at 174-240 after them).
	base, higher := n.allowedAt(n.limit, 1), n.allowedAt(to, 1)
	target := higher + 1
	if higher <= base {
		// Within the same sends a second: nothing to try.
		n.limit = to
		n.raised(now)
		return
	}
	if (n.raises == 0 || n.nearShown()) && higher > base+1 {
		// The first step after a throttle, and every step while the limit
		// is within a few parts of what the last throttles showed, tries
		// one part more a second, a quarter of a second after the last
		// that passed: a number at the limit it was learned at fails every
		// such trial, and each part over costs a throttle (told 400 on
		// 300 and learned 298, a trial passed at 299 and the doubled step
		// after it tested 305: five throttles). Further from it, the steps
		// after one that passed grow as before: the limit may have come
		// back.
		if one := min(n.ceiling, n.limit+1); n.allowedAt(one, 1) == base+1 {
			to, target = one, base+2
		}
	}
	n.trial, n.trialTo = true, to
	n.trialTarget, n.reached = min(target, n.allowed(n.limit)+maxTrial), false
	n.trialPending, n.trialSeqs = 0, n.trialSeqs[:0]
}

// nearShown reports whether the limit is within 2% (two parts at least)
// above what the last throttle episode showed, or below it.
func (n *number) nearShown() bool {
	return n.shown > 0 && n.limit < n.shown+max(2, 0.02*n.shown)
}

// trialAnswered counts a trial send's answer: passed, or throttled.
func (n *number) trialAnswered(now time.Time, passed bool) {
	if !passed {
		// The API took no more than the limit again: a show that agrees.
		n.showed(n.limit)
		n.quiet = min(2*n.quiet, maxQuiet)
		n.raises = 0
		n.lastRaise = now
		n.endTrial()
		return
	}
	if n.trialPending--; n.trialPending > 0 || !n.reached {
		return
	}
	n.endTrial()
	n.limit = n.trialTo
	n.raised(now)
}

// raised records a step of probing that passed.
func (n *number) raised(now time.Time) {
	if n.limit >= n.ceiling {
		n.learned, n.shown, n.quiet = n.ceiling, 0, probeAfter // it takes the ceiling again
	}
	n.raises++
	n.lastRaise = now
	n.setLimit(now)
}

// endTrial forgets a trial: its sends answered later are ordinary ones.
func (n *number) endTrial() {
	n.trial, n.trialTarget, n.reached, n.trialPending, n.trialSeqs = false, 0, false, 0, n.trialSeqs[:0]
}

// Standard says what every number accepts a second whatever its level
// (WhatsApp's standard throughput, 80/s): a number told more may be at
// that level. Until it has accepted a send that left with the standard
// rate's worth in its second before it (proven), the sends beyond that
// worth it has in flight are at most the standard rate's worth: the
// first throttle of such a number is answered a round trip after its
// second filled, and every send of that round trip is throttled too. Told
// 1,000/s on a number of 80 with 200 ms of latency, that is 80 throttles
// where it was 200; told the truth, it holds the sends of 1,000/s for
// about 120 ms once, those of 400/s not at all.
func (p *Pacer) Standard(perSecond float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.standard = perSecond
	for _, n := range p.numbers {
		n.standard = perSecond
	}
}

// Prove says from accepts more than the standard rate (its provider says
// so): its sends are not held for a proof.
func (p *Pacer) Prove(from string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.number(from)
	n.proven = true
	n.setLimit(n.clock) // its bucket may catch up now
}

// Seed starts from at a limit learned before (an earlier run of the
// campaign), below the ceiling: it is sent at that limit and probed up
// after a quiet spell, as if a throttle had just shown it.
func (p *Pacer) Seed(from string, limit float64, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.number(from)
	if limit <= 0 || limit >= n.ceiling {
		return
	}
	n.limit, n.learned, n.shown = limit, limit, limit
	n.proven = n.proven || limit > n.standard // an earlier run saw it accept that; a seed lower does not undo Prove
	n.lastThrottle, n.lastRaise, n.adjusted = now, now, now
	n.setLimit(now)
}

// Split makes this process send from from at share (0 to 1] of what the
// number accepts, from now: other runs send from it too. The limit, what
// is learned and the trials stay the number's own.
func (p *Pacer) Split(from string, share float64, now time.Time) {
	if !(share > 0) || share > 1 {
		share = 1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.number(from)
	if n.share != share {
		n.share = share
		n.setLimit(now)
	}
}

// Rate returns the pace from is sent at now, per second (headroom and
// learning included); +Inf when unlimited.
func (p *Pacer) Rate(from string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.number(from)
	if math.IsInf(n.limit, 1) {
		return math.Inf(1) // rate.Inf is MaxFloat64: arithmetic on it overflows
	}
	// Without the first second's wider headroom: it ends on the next
	// reservation after it, which a short campaign may never make.
	return n.paced(n.widen)
}

// Limit returns what from is believed to accept per second: the ceiling
// until a throttle shows less; +Inf when unlimited.
func (p *Pacer) Limit(from string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.number(from).limit
}

// Learned returns what throttles showed twice from accepts per second,
// without the probes since: the ceiling until two throttle episodes show
// less, and again once probes reach it.
func (p *Pacer) Learned(from string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.number(from).learned
}

// Headroom returns how many times the initial headroom from now keeps,
// after throttles showed bunching (1: never widened, or narrowed back).
func (p *Pacer) Headroom(from string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.number(from).widen
}

// Due returns how long from now a send of cost parts from from would wait
// to leave, booking nothing: until the bucket's next token and room in the
// second for all its parts (or the number's rest). A caller holding
// several sends of different sizes asks it to send first one that fits
// the room a larger one waits for.
func (p *Pacer) Due(from string, now time.Time, cost int) time.Duration {
	cost = max(cost, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.number(from)
	if now.Before(n.pausedUntil) {
		return n.pausedUntil.Sub(now)
	}
	if now.After(n.clock) {
		n.clock = now
	}
	n.expire(now)
	leave := now
	if l := n.lim.Limit(); l != rate.Inf && l > 0 {
		if t := n.lim.TokensAt(now); t < 1 {
			leave = now.Add(time.Duration((1 - t) / float64(l) * float64(time.Second)))
		}
	}
	if fits, retry := n.room(leave, cost); !fits {
		leave = retry
		if !n.parts && cost > 1 {
			leave = leave.Add(guard) // as room will once ReserveN books it
		}
	}
	return leave.Sub(now)
}
