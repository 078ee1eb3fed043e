// Package pace spaces sends per sender phone number and learns each
// number's real throughput from the API's answers.
//
// Each number has a token bucket (golang.org/x/time/rate) with a burst of
// one, so sends leave evenly spaced, at the number's limit less a headroom
// of about one message. The limit starts at the configured rate (the
// ceiling, never exceeded). The API counts accepted messages over a sliding
// second; the pacer keeps the same record of its own sends, so that:
//   - on a throttle it knows how many of its sends the API took in the
//     second before, and sets the limit there at once (the number allows
//     less than the ceiling: inbound traffic, a standard tier, a shared
//     number); or, when that count is already at its pace, widens the
//     headroom (the path bunches arrivals more than one message);
//   - after a throttle it rests only until that second has drained;
//   - a send the API refused (an error) does not count: while answers
//     show a share r refused, sends are booked at the pace ÷ (1 − 2r) and
//     the second's room holds them, so that the accepted ones keep the
//     pace and retries ride in the room the errors left;
//   - while no throttle comes it probes the limit back up, never above the
//     ceiling;
//   - it records when each send really left (Left): sends that waited for
//     a new connection, or that a stalled process let go late, and left
//     together hold the sends a second later, so
//     no second of departures holds more than the pace rounded up (the
//     limit itself below 50/s, where the headroom is under a message),
//     with sends all but sure to be refused on top;
//   - the first second goes with twice the headroom: its requests wait for
//     new connections and arrive bunched.
//
// Numbers learn independently.
package pace

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

const (
	probeAfter = 3 * time.Second // quiet time after a throttle before probing up
	probeEvery = time.Second     // between probe steps; each step doubles
	maxWiden   = 16              // headroom grows at most this many times
	maxRefusal = 0.25            // sends are booked at most 1/(1-2×this) = twice as fast for refusals
	warmUp     = time.Second     // the first sends' wider headroom lasts this long

	// A throttle that the number's own pace does not explain rests it:
	// 500 ms, doubling while they keep coming, at most 30 s; after 10 s
	// without one it starts over.
	firstPause = 500 * time.Millisecond
	maxPause   = 30 * time.Second
	quietReset = 10 * time.Second
)

// Verdict is what an answer says about a send's place in the number's
// window at the API.
type Verdict int

const (
	// Counted: accepted, or no answer (assume it counted).
	Counted Verdict = iota
	// NotCounted: refused with an error other than a throttle: the API
	// did not count it, and the share refused rises (see booked).
	NotCounted
	// Throttled: refused for the number's throughput (130429).
	Throttled
	// Unsent: never reached the API (a stop came first, the network
	// failed): it did not count, and says nothing of the share refused.
	Unsent
)

// Send is a send slot handed out by the pacer: pass it back to Answered
// with the API's verdict.
type Send struct {
	From string
	At   time.Time // when the send may leave
	Cost int
	seq  uint64
	step time.Duration // between its tokens (the parts of an SMS)
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
	mu      sync.Mutex
	ceiling float64 // +Inf: no limit until the API shows one
	numbers map[string]*number
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

const (
	pending  state = iota // no answer yet: counts
	accepted              // counts
	refused               // does not count
	presumed              // no answer yet, presumed throttled: does not count until accepted
)

type entry struct {
	at    time.Time
	cost  int
	state state
}

type number struct {
	lim     *rate.Limiter
	ceiling float64
	limit   float64 // what it is sent at, before headroom; ≤ ceiling
	learned float64 // what throttles showed twice it accepts (limit less any probe since)
	shown   float64 // what the last throttle episode showed, if less than the ceiling; 0: none since the ceiling
	widen   float64 // headroom multiplier, raised by bunching
	// The first second's sends wait for new connections (a TCP, with
	// Meta a TLS handshake each) and arrive bunched: until warmUntil the
	// headroom is doubled. warmed is when that ended.
	warmUntil, warmed time.Time

	clock time.Time // the latest instant given to lim

	log     []entry // sends of the last two seconds, oldest first
	head    int     // log[head:] is kept
	win     int     // log[win:] left within the last second
	first   uint64  // seq of log[head]
	next    uint64  // seq of the next send
	counted int     // cost of the sends within the last second that count
	waiting int     // of which not answered yet
	refusal float64 // share of answers that were refused (not counted), a moving average

	pausedUntil  time.Time
	pause        time.Duration // the last rest for a throttle not of its pace
	adjusted     time.Time     // sends that left before this belong to the last throttle episode
	lastThrottle time.Time
	lastRaise    time.Time
	raises       int

	open       bool      // a throttle episode has no answer yet from a send after it
	throttles  int       // throttled answers in the episode
	bunched    bool      // the episode may be bunching, not a lower limit
	before     float64   // the limit before the episode
	lowered    time.Time // when a throttle last lowered the limit
	unreported bool      // a lowered limit not yet reported
}

func (p *Pacer) number(from string) *number {
	n, ok := p.numbers[from]
	if !ok {
		n = &number{ceiling: p.ceiling, limit: p.ceiling, learned: p.ceiling, widen: 1}
		n.lim = rate.NewLimiter(n.booked(), 1)
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
	return max(n.limit-headroom(n.limit, widen), n.limit*0.5)
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

// booked is the rate sends are booked at: the pace ÷ (1 − 2r), r the
// share of sends refused (at most maxRefusal). Refused sends leave room in
// the second that the accepted ones may take; booking at the pace ÷ (1 − r)
// would leave none to spare, so the room check (not the booking) holds
// sends at the pace.
func (n *number) booked() rate.Limit {
	p := n.pace()
	if p == rate.Inf {
		return p
	}
	return p / rate.Limit(1-2*min(n.refusal, maxRefusal))
}

// rebook sets the token bucket to booked, if it moved.
func (n *number) rebook(now time.Time) {
	if b := n.booked(); math.Abs(float64(b-n.lim.Limit())) > 0.001*float64(b) {
		n.setLimit(now)
	}
}

// setLimit sets the token bucket to booked at now, or at the latest
// instant it was given if later: callers take now before the pacer's lock,
// so instants may come out of order, and the bucket would count the time
// between them twice.
func (n *number) setLimit(now time.Time) {
	if now.Before(n.clock) {
		now = n.clock
	}
	n.clock = now
	n.lim.SetLimitAt(now, n.booked())
}

// paceCeil is the pace rounded up: evenly spaced sends at a fractional
// pace put its ceiling in some second.
func (n *number) paceCeil() float64 {
	return math.Ceil(float64(n.pace()) - 1e-9)
}

// interval is the time between two sends at the pace.
func (n *number) interval() time.Duration {
	l := n.pace()
	if l == rate.Inf || l <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / float64(l))
}

// expire moves the sends that left a second or more before now out of
// the count, and drops those older than two seconds (a throttle answered
// late still finds the second before its send). Sends refused are passed
// over whenever they left: Left can put a late one after sends booked
// behind it, and once it counts no more it must not keep them counted.
func (n *number) expire(now time.Time) {
	cut := now.Add(-time.Second)
	for n.win < len(n.log) && (n.log[n.win].state == refused || !n.log[n.win].at.After(cut)) {
		if e := n.log[n.win]; e.counts() {
			n.counted -= e.cost
			if e.state == pending {
				n.waiting -= e.cost
			}
		}
		n.win++
	}
	cut = cut.Add(-time.Second)
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

// record books a send of cost tokens leaving at at: one entry per token,
// the later ones owed an interval apart, as a carrier passes the parts of
// an SMS on.
func (n *number) record(from string, at time.Time, cost int) Send {
	step := n.interval()
	s := Send{From: from, At: at, Cost: cost, seq: n.next, step: step}
	for k := range cost {
		n.log = append(n.log, entry{at: at.Add(time.Duration(k) * step), cost: 1})
	}
	n.counted += cost
	n.waiting += cost
	n.next += uint64(cost)
	return s
}

// room reports whether a send of cost tokens leaving at leave keeps the
// second before each of its tokens within the number's pace; if not, when
// to try again. The tokens after the first are owed an interval apart (the
// parts of an SMS, which the carrier passes on one by one), so each is
// looked at in its own second. A lone send larger than the pace still
// goes. This check, not the token bucket, is what holds sends at the pace
// while some are refused (see booked); it also holds the ones that would
// follow sends that left late and together (a stalled process) into an
// over-full second.
func (n *number) room(leave time.Time, cost int) (bool, time.Time) {
	if math.IsInf(n.limit, 1) {
		return true, time.Time{}
	}
	step := n.interval()
	for k := range cost {
		at := leave.Add(time.Duration(k) * step)
		count, waiting, i := n.window(at)
		// The pace rounded up must pass. Sends not answered yet that will all
		// but surely be refused leave room too, up to the limit: as many
		// as the refusal share makes certain, not as many as it makes
		// likely, or the headroom would be gone whenever fewer were
		// refused, and bunched arrivals throttled (and the headroom
		// widened for nothing).
		allowed := n.paceCeil() + float64(surelyRefused(float64(waiting)*n.refusal))
		// This send's own tokens in that second: k and those before it
		// less than a second earlier.
		own := k + 1
		if step > 0 {
			own = min(k, int(math.Ceil(float64(time.Second)/float64(step)))-1) + 1
		}
		if count == 0 || float64(count+own) <= min(allowed, n.limit) {
			continue
		}
		for ; i < len(n.log); i++ {
			if e := n.log[i]; e.counts() {
				// When the oldest of that second has left it.
				return false, e.at.Add(time.Second - time.Duration(k)*step)
			}
		}
	}
	return true, time.Time{}
}

// surelyRefused is how many of the sends not answered yet are refused
// with 99% certainty, when mean of them are on average: the 1% quantile
// of a Poisson distribution of that mean (its normal approximation over
// 100).
func surelyRefused(mean float64) int {
	switch {
	case !(mean > 0): // NaN too
		return 0
	case mean > 100:
		mean = min(mean, 1e12)
		return int(mean - 2.33*math.Sqrt(mean))
	}
	p := math.Exp(-mean) // of none
	k, below := 0, p     // below: of k or fewer
	for below <= 0.01 {
		k++
		p *= mean / float64(k)
		below += p
	}
	return k
}

// window returns the cost of the sends that count in the second before
// leave, of which not answered yet, and the index of the first after it.
func (n *number) window(leave time.Time) (count, waiting, i int) {
	cut := leave.Add(-time.Second)
	count, waiting, i = n.counted, n.waiting, n.win
	for ; i < len(n.log) && (n.log[i].state == refused || !n.log[i].at.After(cut)); i++ {
		if e := n.log[i]; e.counts() {
			count -= e.cost
			if e.state == pending {
				waiting -= e.cost
			}
		}
	}
	return count, waiting, i
}

func (e entry) counts() bool { return e.state == pending || e.state == accepted }

// set moves log[i] to state to, keeping the counts of the last second.
func (n *number) set(i int, to state) {
	e := &n.log[i]
	if i < n.win {
		e.state = to
		return
	}
	if e.counts() {
		n.counted -= e.cost
	}
	if e.state == pending {
		n.waiting -= e.cost
	}
	e.state = to
	if e.counts() {
		n.counted += e.cost
	}
	if e.state == pending {
		n.waiting += e.cost
	}
}

// ReserveN books the next send slot for from at instant now for a send of
// cost tokens (an SMS of cost parts; below 1 is 1) and returns how long to
// wait before using it. The send leaves when its first token is due and
// the others are owed after it, an interval of the pace apart: with a
// burst of one, a 3-part SMS at 1 part/s leaves at once and the next one
// 3 s later (sooner while some sends are refused: see booked). While the number rests
// (after a throttle, or its last second is full) it books nothing and
// returns ok false with the rest: call again after waiting.
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
	if now.Before(n.pausedUntil) {
		return Send{}, n.pausedUntil.Sub(now), false
	}
	first := n.lim.ReserveN(now, 1)
	leave := now.Add(first.DelayFrom(now))
	if fits, retry := n.room(leave, cost); !fits {
		// Held less than a slot (sends a second ago left late): it leaves
		// when the second has room and the next slot keeps its time, so
		// lateness does not carry over. Held longer (a rest after a
		// throttle), it books nothing; so does a send of several tokens
		// (an SMS of several parts), whose later parts the carrier passes
		// on an interval apart: kept, the next slot would squeeze them.
		if again, _ := n.room(retry, cost); !again || cost > 1 || retry.Sub(leave) >= n.interval() {
			first.CancelAt(now)
			return Send{}, max(retry.Sub(now), time.Millisecond), false
		}
		leave = retry
	}
	for range cost - 1 {
		n.lim.ReserveN(now, 1)
	}
	return n.record(from, leave, cost), leave.Sub(now), true
}

// Reserve is ReserveN for a send of one token.
func (p *Pacer) Reserve(from string, now time.Time) (Send, time.Duration, bool) {
	return p.ReserveN(from, now, 1)
}

// WaitN blocks until a send of cost tokens from from may leave (see
// ReserveN), or ctx is done. A slot booked is not given back when ctx
// ends first: the pacer errs on the slow side.
func (p *Pacer) WaitN(ctx context.Context, from string, cost int) (Send, error) {
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
		if part := at.Add(time.Duration(k) * s.step); part.After(n.log[i].at) {
			n.log[i].at = part
		}
	}
}

// Answered records the API's verdict on s, answered at now. It reports a
// Change when a number has shown twice that it accepts less than its
// ceiling.
func (p *Pacer) Answered(s Send, v Verdict, now time.Time) (Change, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.number(s.From)
	if n.open && !s.At.Before(n.adjusted) {
		n.settle(now)
	}
	switch v {
	case Counted:
		n.mark(s, accepted)
		n.refusal -= n.refusal / 256
		n.rebook(now)
		n.probe(now)
	case Unsent:
		n.mark(s, refused)
	case NotCounted:
		n.mark(s, refused)
		n.refusal += (1 - n.refusal) / 256
		n.rebook(now)
	case Throttled:
		n.throttled(s, now)
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

// seen is what the API took from this number in the second before s left,
// as far as the answers tell: sends accepted, or not answered yet.
func (n *number) seen(s Send) int {
	i := n.index(s.seq)
	if i < 0 {
		return n.counted
	}
	left := n.log[i].at
	cut := left.Add(-time.Second)
	count := 0
	// Left makes the log's order by departure differ from its order by
	// booking (a late send before sends that left earlier): all of it is
	// looked at.
	for j := n.head; j < len(n.log); j++ {
		if e := n.log[j]; j != i && e.counts() && e.at.After(cut) && e.at.Before(left) {
			count += e.cost
		}
	}
	return count
}

// throttled starts a throttle episode, or counts one more throttle of the
// current one (a send that left before the last adjustment).
func (n *number) throttled(s Send, now time.Time) {
	n.mark(s, refused)
	prev := n.lastThrottle
	n.lastThrottle = now
	if s.At.Before(n.adjusted) {
		n.throttles++
		return
	}
	seen := n.seen(s)
	if seen == 0 {
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
	// The pace the second before s was sent at: a second after the warm
	// up it still holds sends of its wider headroom.
	paced, left := float64(n.pace()), s.At
	if i := n.index(s.seq); i >= 0 {
		left = n.log[i].at
	}
	if !n.warmUntil.IsZero() || left.Sub(n.warmed) < time.Second {
		paced = n.paced(2 * n.widen)
	}
	if n.limit >= n.ceiling && float64(seen) > n.paceCeil() {
		// The second held more than the pace by this number's own
		// departures: a send that left late, recorded (Left) after later
		// ones were booked, or sends the room check counted as all but
		// sure to be refused that were not. That shows nothing of the
		// limit or of the path: no episode, no wider headroom. A
		// 100,000-row run at 500/s had about one such throttle, and
		// doubling the headroom for it cost the rest of the run 0.5%.
		// Below the ceiling (a limit learned, probes above it) the count
		// of the second may hold sends not answered yet that the API
		// throttled too: those throttles still teach the limit.
		n.presume(left)
		n.adjusted = now
		return
	}
	n.open, n.throttles, n.bunched = true, 1, false
	if n.raises == 0 && now.Sub(n.lowered) > 2*time.Second && float64(seen) >= paced-1 {
		// This number sent no more than its pace at a limit that neither a
		// probe raised nor a throttle just lowered, yet the API had its
		// fill: either arrivals bunch more than the headroom absorbs, or
		// the limit just fell. Slow down as if it fell; the episode's end
		// tells which (settle).
		n.bunched, n.before = true, n.limit
	}
	if l := max(1, float64(seen)); l < n.limit {
		n.limit, n.lowered = l, now
		if !n.bunched {
			n.showed(n.limit)
		}
	}
	n.presume(left)
	n.adjusted, n.lastRaise, n.raises = now, now, 0
	n.setLimit(now)
}

// presume marks the sends not answered yet that left at or after left, a
// throttled send's departure: they went into the same full second, and
// count again only if they are accepted.
func (n *number) presume(left time.Time) {
	for i := n.win; i < len(n.log); i++ {
		if x := n.log[i]; x.state == pending && !x.at.Before(left) {
			n.set(i, presumed)
		}
	}
}

// settle ends a throttle episode at the first answer to a send that left
// after it began. An episode at the number's pace with no more throttles
// than a bunch explains was bunching: the limit is restored and the
// headroom doubled, for the rest of the run.
func (n *number) settle(now time.Time) {
	n.open = false
	if !n.bunched {
		return
	}
	if float64(n.throttles) > max(3, 0.01*n.before) {
		n.showed(n.limit) // the limit fell
		return
	}
	n.widen = min(n.widen*2, maxWiden)
	n.limit, n.lowered = n.before, time.Time{}
	n.setLimit(now)
}

// showed records a limit below the ceiling that a throttle episode
// showed. It is learned once the next episode agrees within 5%: a throttle
// at random (a burst of other traffic on the number) shows a limit once, a
// real limit shows again as soon as probing passes it, and a limit falling
// (other traffic starting) shows ever less until it settles. Of the two
// that agree, the lower is learned: a show counts the sends of its second
// not answered yet as accepted, and the last few before a throttle are
// often throttled too, so a show errs high (307 for 300 in a benchmark).
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

// probe raises a lowered limit after a quiet spell, in doubling steps,
// never above the ceiling.
func (n *number) probe(now time.Time) {
	if n.limit >= n.ceiling || n.open || now.Sub(n.lastThrottle) < probeAfter || now.Sub(n.lastRaise) < probeEvery {
		return
	}
	step := max(0.5, 0.01*n.limit) * math.Pow(2, float64(n.raises))
	n.limit = min(n.ceiling, n.limit+step)
	if n.limit >= n.ceiling {
		n.learned, n.shown = n.ceiling, 0 // it takes the ceiling again
	}
	n.raises++
	n.lastRaise = now
	n.setLimit(now)
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
	n.lastThrottle, n.lastRaise, n.adjusted = now, now, now
	n.setLimit(now)
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
// after throttles showed bunching (1: never widened).
func (p *Pacer) Headroom(from string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.number(from).widen
}
