package smssandbox

import (
	"math"
	"time"
)

// grace forgives charges rounded to the nanosecond (1/3 s is not a whole
// number of them): spans short of W by less than a microsecond pass. A
// client even 0.1% too fast falls short by far more.
const grace = int64(time.Microsecond)

// budget is one origination identity's throughput limit, counted in message
// parts (MPS) over a sliding window. It is not safe for concurrent use: the
// identity's lock guards it.
//
// The model. A carrier passes a multi-part message on one part every 1/MPS
// seconds, so an accepted message of k parts at t charges the instants
//
//	t, t + 1/MPS, …, t + (k−1)/MPS
//
// With L = max(1, floor(MPS)) and W = L/MPS (one second whenever MPS is a
// whole number), a message is throttled when, its charges added to those of
// the messages already accepted, some window (u−W, u] would hold more than L
// charges: equivalently, when any L+1 consecutive charges in time order
// would span less than W (less a microsecond's grace for rounding). Only
// accepted messages charge; a throttled one leaves no trace.
//
// Why W = L/MPS and not always one second: with a one-second window and
// MPS = 2.5 a client at 2.45 parts/s would be throttled (three parts in some
// second, above floor(2.5)), and with MPS = 0.5 a client at 0.9 parts/s
// would not be (one part a second fits). With W = L/MPS the budget is exact
// for every MPS: a client that spaces its parts at least 1/MPS apart is
// never throttled; one that keeps spacing them closer is, as soon as L+1
// of its charges span a gap between two of its messages.
//
// What that means for a client that paces by parts (internal/pace: a k-part
// message leaves when its first token is due and owes the other k−1 after
// it, at r tokens a second, burst one): its next message leaves k/r after
// this one, so consecutive charges are never closer than 1/MPS when r ≤ MPS
// (within a message they are 1/MPS apart by construction; across two, the
// gap is k/r − (k−1)/MPS ≥ 1/MPS). Such a client, at 98% of MPS or at MPS
// exactly, is never throttled. At r > MPS every gap between messages is
// shorter than 1/MPS, so L+1 consecutive charges spanning one span less
// than W: throttled, first at the message that takes the charges past L,
// or at the second message when the first alone has more than L parts
// (TestBudgetAgreesWithClient). At 1 MPS a 3-part message at 0 charges 0, 1 and 2 s
// and the next may come at 3 s, not before; at 10 MPS (W = 1 s, L = 10)
// the window holds ten parts, however they came.
type budget struct {
	limit  int     // L; 0: unlimited (charges are still kept, for maxWindow)
	window int64   // W in nanoseconds
	step   float64 // 1/MPS in nanoseconds; 0 when unlimited

	charges []int64 // sorted instants (unix nanos) of charged parts newer than latest−W
	next    []int64 // charges with the candidate message merged in, set by fits
	latest  int64   // the latest t seen: the clock never steps back here

	maxWindow int // most charges in any window of W
}

// newBudget returns the budget of an identity allowed mps parts a second;
// mps ≤ 0 (or absurdly high, NaN) means unlimited, watched over one second.
func newBudget(mps float64) *budget {
	if !(mps > 0) || mps > 1e9 {
		return &budget{window: int64(time.Second)}
	}
	l := max(1, int(math.Floor(mps)))
	return &budget{
		limit:  l,
		window: int64(math.Round(float64(l) * 1e9 / mps)),
		step:   1e9 / mps,
	}
}

// clamp returns t, or the latest instant already seen if t is earlier, so
// a clock stepping back cannot reopen the window.
func (b *budget) clamp(t time.Time) int64 {
	b.latest = max(b.latest, t.UnixNano())
	return b.latest
}

// charge is the instant of part j of a message accepted at t.
func (b *budget) charge(t int64, j int) int64 {
	return t + int64(math.Round(float64(j)*b.step))
}

// fits reports whether a message of k parts (k ≥ 1) may be accepted at t, a
// clamped instant; when it may, commit accepts it. Charges that no window
// reaching t or later can hold are dropped here.
func (b *budget) fits(t int64, k int) bool {
	drop := 0
	for drop < len(b.charges) && b.charges[drop] <= t-b.window {
		drop++
	}
	b.charges = b.charges[drop:]

	// Merge the new charges (ascending) into a copy of the old.
	m := b.next[:0]
	i := 0
	for j := range max(k, 1) {
		c := b.charge(t, j)
		for i < len(b.charges) && b.charges[i] <= c {
			m = append(m, b.charges[i])
			i++
		}
		m = append(m, c)
	}
	m = append(m, b.charges[i:]...)
	b.next = m
	if b.limit == 0 {
		return true
	}
	for i := b.limit; i < len(m); i++ {
		if m[i]-m[i-b.limit] < b.window-grace {
			return false
		}
	}
	return true
}

// commit accepts the message fits last approved.
func (b *budget) commit() {
	// The two backing arrays take turns: no allocation once they are big
	// enough.
	old := b.charges
	b.charges, b.next = b.next, old[:0]
	// Windows as the check sees them: W less the grace.
	lo := 0
	for hi, c := range b.charges {
		for b.charges[lo] <= c-(b.window-grace) {
			lo++
		}
		b.maxWindow = max(b.maxWindow, hi-lo+1)
	}
}
