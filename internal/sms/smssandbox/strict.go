package smssandbox

import (
	"math"
	"time"
)

// strictWindow is one origination identity's MPS counted the strictest way
// (Config.StrictWindow): every part of a send counts at the send's
// arrival, a k-part message adding k at that instant, whatever the send's
// answer; a send is throttled when its parts, added to those that arrived
// in the second before it, would make more than L = max(1, floor(MPS)).
// The window is one second, whatever MPS: at MPS 2.5 it holds two parts.
//
// A message of more than L parts (three parts at 1 MPS) could never fit:
// it passes an empty window, and it stays in the window for k/MPS seconds
// instead of one, as long as the limit takes to pass its parts, so that
// the identity still sends no more than MPS parts a second.
//
// What the default budget (budget.go) forgives and this does not: it
// charges sent messages only (a throttled send, an opt-out or a dry run
// leave no trace); it charges a k-part message's parts 1/MPS apart, so
// its later parts are counted after older ones have left (at 10 MPS, nine
// one-part sends at 0 and a three-part one at 0.9 s all pass there, not
// here); and it counts at the instant the send is checked, after its body
// is read and validated.
//
// The zero value is unusable; it is not safe for concurrent use: the
// identity's lock guards it.
type strictWindow struct {
	limit int     // L; 0: unlimited (sends are still counted, for the figures)
	step  float64 // 1/MPS in nanoseconds; 0 when unlimited

	held   []heldSend // sends still in the window, in arrival order
	parts  int        // their parts
	latest int64      // the latest arrival seen: the clock never steps back here

	maxParts int // most parts held at once
	maxSends int // most sends held at once
}

// heldSend is a send in the window: its parts, and until when they count.
type heldSend struct {
	until int64 // unix nanos; the send has left the window at until
	parts int
}

// newStrictWindow returns the window of an identity allowed mps parts a
// second; mps ≤ 0 (or absurdly high, NaN) means unlimited.
func newStrictWindow(mps float64) *strictWindow {
	if !(mps > 0) || mps > 1e9 {
		return &strictWindow{}
	}
	return &strictWindow{limit: max(1, int(math.Floor(mps))), step: 1e9 / mps}
}

// arrive counts a send of k parts (k ≥ 1) arriving at t and reports
// whether it is throttled. It returns the instant it counted the send at:
// t, or the latest arrival already seen if t is earlier.
func (w *strictWindow) arrive(t time.Time, k int) (at int64, throttled bool) {
	k = max(k, 1)
	w.latest = max(w.latest, t.UnixNano())
	at = w.latest
	kept := w.held[:0]
	w.parts = 0
	for _, h := range w.held {
		if h.until > at {
			kept = append(kept, h)
			w.parts += h.parts
		}
	}
	clear(w.held[len(kept):])
	w.held = kept
	throttled = w.limit > 0 && w.parts > 0 && w.parts+k > w.limit
	hold := int64(time.Second)
	if w.limit > 0 && k > w.limit {
		hold = max(hold, int64(math.Round(float64(k)*w.step)))
	}
	w.held = append(w.held, heldSend{until: at + hold, parts: k})
	w.parts += k
	w.maxParts = max(w.maxParts, w.parts)
	w.maxSends = max(w.maxSends, len(w.held))
	return at, throttled
}
