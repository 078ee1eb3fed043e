package sandbox

import (
	"sync"
	"time"
)

// number is the state of one business phone number: its sliding throughput
// window and its pair-rate memory. Each number has its own lock, so senders
// using different numbers never contend.
//
// It counts the throughput limit one of two ways. By default the window
// holds accepted messages only, each at the instant it was accepted (its
// body read and checked): requests refused for any reason leave no trace.
// In strict mode (Config.StrictWindow) arrive counts every request at its
// arrival, whatever its answer, and decides then whether it is throttled;
// the window of accepted messages is still kept, for MaxPerSecond.
type number struct {
	id      string
	display string // display_phone_number in webhooks
	limit   int    // requests (strict) or accepted messages per sliding second; 0 = unlimited
	strict  bool   // Config.StrictWindow: the limit is decided by arrive

	mu        sync.Mutex
	window    ring             // unix nanos of accepted messages in the last second
	last      int64            // latest instant seen, so a clock stepping back cannot reopen the window
	maxWindow int              // most accepted messages in any one-second window
	pair      map[string]int64 // recipient -> unix nanos of the last accepted message
	sweep     int              // accepts since pair was last swept

	arrivals    ring  // strict: unix nanos of every request that arrived in the last second
	lastArrival int64 // strict: the latest arrival seen (the clock never steps back here)
	maxArrivals int   // strict: most requests arriving in any one-second window
}

// arrive counts, in strict mode, a request arriving at t, and reports
// whether it found the window full: limit requests had arrived in the
// second before it (accepted or not; a request exactly a second older has
// left). It is counted either way, so requests that keep coming while the
// window is full keep it full.
func (n *number) arrive(t time.Time) (full bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := max(t.UnixNano(), n.lastArrival)
	n.lastArrival = now
	for n.arrivals.len() > 0 && n.arrivals.front() <= now-int64(time.Second) {
		n.arrivals.pop()
	}
	full = n.limit > 0 && n.arrivals.len() >= n.limit
	n.arrivals.push(now)
	n.maxArrivals = max(n.maxArrivals, n.arrivals.len())
	return full
}

// admit applies the throughput and pair limits at t and, if both pass, calls
// verdict; when verdict reports the message accepted, it is recorded in the
// window and the pair memory. Doing all three under the number's lock makes
// the limits exact under concurrency. In strict mode the throughput limit
// was decided when the request arrived: full is what arrive answered.
func (n *number) admit(t time.Time, to string, pairInterval time.Duration, full bool, verdict func() bool) failure {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := t.UnixNano()
	if now < n.last {
		now = n.last
	}
	n.last = now
	for n.window.len() > 0 && n.window.front() <= now-int64(time.Second) {
		n.window.pop()
	}
	if n.strict {
		if full {
			return errThrottled
		}
	} else if n.limit > 0 && n.window.len() >= n.limit {
		return errThrottled
	}
	if pairInterval > 0 {
		if prev, ok := n.pair[to]; ok && now-prev < int64(pairInterval) {
			return errPairLimited
		}
	}
	if !verdict() {
		return failure{}
	}
	n.window.push(now)
	n.maxWindow = max(n.maxWindow, n.window.len())
	if pairInterval > 0 {
		if n.pair == nil {
			n.pair = map[string]int64{}
		}
		n.pair[to] = now
		// Forget recipients whose interval has passed, now and then, so the
		// map holds about one interval's worth of recipients.
		if n.sweep++; n.sweep >= 4096 && n.sweep >= len(n.pair) {
			n.sweep = 0
			for k, v := range n.pair {
				if now-v >= int64(pairInterval) {
					delete(n.pair, k)
				}
			}
		}
	}
	return failure{}
}

// max returns the most accepted messages, and in strict mode the most
// requests arriving, in any one-second window.
func (n *number) max() (accepted, arrivals int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.maxWindow, n.maxArrivals
}

// ring is a growable FIFO of instants; push and pop are O(1) amortised.
type ring struct {
	buf     []int64
	head, n int
}

func (r *ring) len() int     { return r.n }
func (r *ring) front() int64 { return r.buf[r.head] }
func (r *ring) pop()         { r.head = (r.head + 1) % len(r.buf); r.n-- }
func (r *ring) push(t int64) {
	if r.n == len(r.buf) {
		buf := make([]int64, max(16, 2*len(r.buf)))
		for i := range r.n {
			buf[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = buf, 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = t
	r.n++
}
