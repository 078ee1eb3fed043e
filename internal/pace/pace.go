// Package pace spaces sends per sender phone number. Each number has its
// own token bucket (golang.org/x/time/rate) with a burst of one, so sends
// leave evenly spaced and no one-second window holds more than the rate.
// A number that the API throttles is paused briefly and slowed, then
// recovers step by step; other numbers are not affected.
package pace

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

const (
	// Headroom is the share of the configured rate actually used. Requests
	// spaced exactly 1/rate apart reach the API with a little jitter
	// (scheduling, new connections), and the API counts arrivals over a
	// sliding second: 2% of slack absorbs ~20 ms of bunching per second
	// without a 130429.
	Headroom = 0.98

	minFactor     = 0.1                    // never slower than a tenth of the rate
	slowFactor    = 0.9                    // each throttle episode multiplies the rate by this
	recoverStep   = 0.02                   // each recovery step adds this fraction back
	recoverEvery  = 2 * time.Second        // quiet time between recovery steps
	firstPause    = 500 * time.Millisecond // pause after a first throttle: the window drains
	maxPause      = 30 * time.Second       // pauses double while throttles keep coming
	throttleReset = 10 * time.Second       // a throttle after this much quiet starts over
)

// Pacer hands out send slots per sender number. The zero value is not
// usable; call New. It is safe for concurrent use.
type Pacer struct {
	mu      sync.Mutex
	base    rate.Limit
	numbers map[string]*number
}

type number struct {
	lim          *rate.Limiter
	factor       float64   // current share of the base rate
	pausedUntil  time.Time // no sends before this
	pause        time.Duration
	lastThrottle time.Time
	lastChange   time.Time
}

// New returns a Pacer allowing perSecond·Headroom sends per number;
// perSecond ≤ 0 means no limit.
func New(perSecond float64) *Pacer {
	return &Pacer{base: limit(perSecond), numbers: map[string]*number{}}
}

func limit(perSecond float64) rate.Limit {
	if perSecond <= 0 {
		return rate.Inf
	}
	return rate.Limit(perSecond * Headroom)
}

func (p *Pacer) number(from string, now time.Time) *number {
	n, ok := p.numbers[from]
	if !ok {
		n = &number{lim: rate.NewLimiter(p.base, 1), factor: 1, lastChange: now}
		p.numbers[from] = n
	}
	return n
}

// Reserve books the next send slot for from at instant now and returns
// how long to wait before using it. While the number is paused it books
// nothing and returns the rest of the pause with ok false: call again
// after waiting.
func (p *Pacer) Reserve(from string, now time.Time) (wait time.Duration, ok bool) {
	return p.ReserveN(from, now, 1)
}

// ReserveN is Reserve for a send that costs cost tokens (an SMS of cost
// parts). The send leaves when its first token is due and the others are
// owed after it, so the next send waits for them: with a burst of one a
// 3-part SMS at 1 part/s leaves at once and the next one 3 s later, as
// the carrier passes the parts on one a second. A cost below 1 is 1.
func (p *Pacer) ReserveN(from string, now time.Time, cost int) (wait time.Duration, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.number(from, now)
	if now.Before(n.pausedUntil) {
		return n.pausedUntil.Sub(now), false
	}
	wait = n.lim.ReserveN(now, 1).DelayFrom(now)
	for range cost - 1 {
		n.lim.ReserveN(now, 1)
	}
	return wait, true
}

// Wait blocks until from may send, or ctx is done.
func (p *Pacer) Wait(ctx context.Context, from string) error {
	return p.WaitN(ctx, from, 1)
}

// WaitN blocks until a send of cost tokens from from may leave (see
// ReserveN), or ctx is done. Tokens booked are not given back when ctx
// ends first: the pacer errs on the slow side.
func (p *Pacer) WaitN(ctx context.Context, from string, cost int) error {
	for {
		d, ok := p.ReserveN(from, time.Now(), cost)
		if d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		} else if err := ctx.Err(); err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
}

// Throttled records that the API throttled from at now: the number pauses
// (500ms, doubling while throttles keep coming, at most 30s) and its rate
// drops by a tenth. Throttles also come from traffic bulksend does not see
// (inbound messages count against the same limit), hence the slow-down.
func (p *Pacer) Throttled(from string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.number(from, now)
	if n.pause != 0 && now.Before(n.pausedUntil.Add(time.Second)) {
		// Answers to requests that were in flight when the pause began
		// belong to the same episode.
		n.lastThrottle = now
		return
	}
	if n.pause == 0 || now.Sub(n.lastThrottle) > throttleReset {
		n.pause = firstPause
	} else if n.pause *= 2; n.pause > maxPause {
		n.pause = maxPause
	}
	n.lastThrottle = now
	n.pausedUntil = now.Add(n.pause)
	n.factor = max(minFactor, n.factor*slowFactor)
	n.lastChange = now
	n.lim.SetLimitAt(now, p.base*rate.Limit(n.factor))
}

// Succeeded records a send the API accepted from from at now; after a
// quiet spell it gives back part of the rate taken by throttles.
func (p *Pacer) Succeeded(from string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.number(from, now)
	if n.factor >= 1 || now.Sub(n.lastChange) < recoverEvery || now.Sub(n.lastThrottle) < recoverEvery {
		return
	}
	n.factor = min(1, n.factor+recoverStep)
	n.lastChange = now
	n.lim.SetLimitAt(now, p.base*rate.Limit(n.factor))
}

// Rate returns the current sends per second allowed for from; +Inf
// when unlimited.
func (p *Pacer) Rate(from string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.number(from, time.Now()).lim.Limit()
	if l == rate.Inf {
		return math.Inf(1) // rate.Inf is MaxFloat64: arithmetic on it overflows
	}
	return float64(l)
}
