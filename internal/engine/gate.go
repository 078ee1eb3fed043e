package engine

import (
	"context"
	"math"
	"sync"
	"time"
)

// gate bounds the requests in flight. Its limit can change while it is in
// use: with auto concurrency it follows Little's law, rate × latency.
type gate struct {
	mu      sync.Mutex
	limit   int
	used    int
	wake    chan struct{}
	auto    bool
	rate    float64 // total sends per second, for auto
	latency float64 // moving average, seconds
}

const (
	minAuto = 8
	maxAuto = 4096
)

func newGate(fixed int, rate float64) *gate {
	g := &gate{limit: fixed, wake: make(chan struct{}, 1), rate: rate}
	if fixed <= 0 {
		g.auto = true
		// Until the first answers tell the latency, assume half a second:
		// starting small would send below the rate for the first round trip.
		g.limit = min(maxAuto, max(minAuto, int(math.Ceil(rate*0.5))+4))
		if rate <= 0 {
			g.limit = 64
		}
	}
	return g
}

func (g *gate) acquire(ctx context.Context) error {
	for {
		g.mu.Lock()
		if g.used < g.limit {
			g.used++
			more := g.used < g.limit
			g.mu.Unlock()
			if more {
				g.signal() // pass a wake-up on to the next waiter
			}
			return nil
		}
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-g.wake:
		}
	}
}

// release frees a slot and, for auto concurrency, folds in the latency of
// the request that held it.
func (g *gate) release(latency time.Duration) {
	g.mu.Lock()
	g.used--
	if g.auto && g.rate > 0 {
		s := latency.Seconds()
		if g.latency == 0 {
			g.latency = s
		} else {
			g.latency += (s - g.latency) / 32
		}
		// 1.5× headroom so latency spikes do not starve the pacer.
		g.limit = min(maxAuto, max(minAuto, int(math.Ceil(g.rate*g.latency*1.5))+4))
	}
	g.mu.Unlock()
	g.signal()
}

// giveBack frees a slot that sent nothing.
func (g *gate) giveBack() {
	g.mu.Lock()
	g.used--
	g.mu.Unlock()
	g.signal()
}

func (g *gate) signal() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func (g *gate) snapshot() (limit, used int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limit, g.used
}
