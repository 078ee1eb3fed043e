package pace

import (
	"context"
	"math"
	"time"
)

// Book is a book of send slots that every process sending from the same
// numbers shares (a Redis server's: internal/budget). The pacer's rules
// stay the pacer's: they decide each send's terms (its pace, what a second
// may hold, how long its parts count, a trial), and the book decides when
// the send leaves among all the processes' sends, as the pacer's own
// record does for one process. What the book tells back (the parts every
// process booked in the second before a slot, a limit another process
// learned) feeds the pacer's learning.
//
// Implementations must be safe for concurrent use. An error from Book or
// Tell means the book cannot be reached: the caller must stop sending,
// never send unbooked.
type Book interface {
	// Book books the earliest slot, from the book's own clock's now on,
	// for a send of cost parts from from, under t.
	Book(ctx context.Context, from string, cost int, t Terms) (Booking, error)
	// Tell shares what this process learned of from.
	Tell(ctx context.Context, from string, n News) (version int64, err error)
}

// Terms are the pacer's rules for one send, as a Book applies them.
type Terms struct {
	// Interval is the time between parts at the pace: a slot moves the
	// next one cost intervals on.
	Interval time.Duration
	// Allowed is how many parts any second may hold, the send's own
	// included (a send of more goes alone into an empty second).
	Allowed int
	// Over, when above Allowed, is a trial of a higher limit: a send that
	// finds the second full to Allowed but not to Over leaves at once.
	Over int
	// Hold is how long the send's parts count (see holdFor); Guard is how
	// long after the room is there a send held for it leaves.
	Hold, Guard time.Duration
}

// Booking is a slot a Book gave.
type Booking struct {
	Wait  time.Duration // from the book's now until the slot
	Seen  int           // parts every process booked in the second before the slot
	Trial bool          // booked over Allowed, within Over
	// Limit is what the last process that learned it shared of the
	// number's limit, per second, and Version orders such news (0: none).
	Limit   float64
	Version int64
}

// News is what a process learned of a number and shares.
type News struct {
	Limit float64       // the limit the number is now sent at (0: unchanged)
	Rest  time.Duration // from now, no process sends from the number (0: none)
}

// Shared returns a Pacer like New's that books every send in b as well:
// several processes sending from one number share its limit.
func Shared(perSecond float64, b Book) *Pacer {
	p := New(perSecond)
	p.book = b
	return p
}

// terms are n's rules for a send of cost parts.
func (n *number) terms(cost int) Terms {
	t := Terms{Interval: n.interval(), Allowed: n.allowed(n.limit), Hold: n.holdFor(cost) + max(n.late, minLate)}
	if n.parts {
		t.Guard = guard
	}
	if n.trial && !n.reached {
		t.Over = n.trialTarget
	}
	if math.IsInf(n.limit, 1) {
		t.Allowed = math.MaxInt32
	}
	return t
}

// share books s in the shared book and waits for its slot. A send the
// book cannot take is given back to the record, and the book's error
// returned. A send whose wait ctx ends is not given back in the book: the
// pacer errs on the slow side.
func (p *Pacer) share(ctx context.Context, s Send) (Send, error) {
	p.mu.Lock()
	t := p.number(s.From).terms(s.Cost)
	p.mu.Unlock()
	start := time.Now()
	b, err := p.book.Book(ctx, s.From, s.Cost, t)
	got := time.Now()
	if err != nil {
		p.Answered(s, Unsent, got)
		return Send{}, err
	}
	// The book's now was about halfway through the round trip.
	at := start.Add(got.Sub(start)/2 + b.Wait)
	p.mu.Lock()
	s = p.number(s.From).booked(s, at, b, got)
	p.mu.Unlock()
	if d := time.Until(at); d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-ctx.Done():
			tm.Stop()
			p.Answered(s, Unsent, time.Now())
			return Send{}, ctx.Err()
		case <-tm.C:
		}
	}
	// A stop that comes now is the caller's to see: it gives the slot
	// back (Answered, Unsent) as for any slot it does not use.
	return s, nil
}

// booked records what the book said of s: its slot, the parts booked
// before it, a trial, and a limit another process shared.
func (n *number) booked(s Send, at time.Time, b Booking, now time.Time) Send {
	s.At, s.seen, s.shared = at, b.Seen, true
	for k := range uint64(max(s.Cost, 1)) {
		if i := n.index(s.seq + k); i >= n.win && at.After(n.log[i].at) {
			n.log[i].at = at
		}
	}
	if b.Trial && n.trial {
		n.trialPending++
		n.trialSeqs = append(n.trialSeqs, s.seq)
		n.reached = b.Seen+max(s.Cost, 1) >= n.trialTarget
	}
	if b.Version > n.version {
		n.version = b.Version
		n.adopt(b.Limit, now)
	}
	return s
}

// adopt takes a limit another process learned of the number: lower, as
// if a throttle had shown it (probed up after a quiet spell); higher, as
// a trial that passed. Never above the ceiling.
func (n *number) adopt(limit float64, now time.Time) {
	if !(limit > 0) || limit == n.limit {
		return
	}
	l := min(limit, n.ceiling)
	if l < n.limit {
		n.lastThrottle, n.adjusted = now, now
	}
	n.endTrial()
	n.limit, n.learned, n.lastRaise = l, min(n.learned, l), now
	if l >= n.ceiling {
		n.learned, n.shown = n.ceiling, 0
	}
	n.setLimit(now)
}

// A shared send's booking counts for longer than its parts' hold: the
// other processes cannot know when this one's sends really leave (the
// pacer's own record moves a late send, Left; the book's does not), nor
// how far their arrivals spread on the way. It counts minLate longer, or
// as long as this process's sends have been late of late: the largest
// lateness, fading by a 512th at each send (about 5 s at 130 sends/s), at
// most maxLate (a process stalled longer is an accident, not a habit to
// book for). minLate costs a number about minLate a second of its sends,
// 0.3%; it buys two messages' spread at 400/s.
const (
	minLate = 3 * time.Millisecond
	maxLate = 20 * time.Millisecond
)

// lateBy records that a shared send left d after its slot.
func (n *number) lateBy(d time.Duration) {
	n.late -= n.late / 512
	if d > n.late {
		n.late = min(d, maxLate)
	}
}

// news is what Answered changed in n that other processes must know: a
// limit (before is the one before the answer), a rest.
func (n *number) news(before float64, paused time.Time, now time.Time) (News, bool) {
	var w News
	if n.limit != before && !math.IsInf(n.limit, 1) {
		w.Limit = n.limit
	}
	if n.pausedUntil.After(paused) && n.pausedUntil.After(now) {
		w.Rest = n.pausedUntil.Sub(now)
	}
	return w, w.Limit > 0 || w.Rest > 0
}

// tell shares w; a failed Tell is not reported here: the next Book meets
// the same book and stops the run.
func (p *Pacer) tell(from string, w News) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, err := p.book.Tell(ctx, from, w)
	if err != nil {
		return
	}
	p.mu.Lock()
	if n := p.number(from); v > n.version {
		n.version = v
	}
	p.mu.Unlock()
}
