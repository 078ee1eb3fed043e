package pace

import (
	"math"
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
		wait, ok := p.Reserve(from, now)
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
	for _, rate := range []float64{1, 80, 400, 1000} {
		p := New(rate)
		ts := sends(p, "A", t0, 10*time.Second)
		if w := maxWindow(ts); w > int(rate) {
			t.Errorf("rate %v: %d sends in one second", rate, w)
		}
		if got, want := len(ts), int(rate*Headroom*10); got < want || got > want+2 { // +1: the first send needs no wait
			t.Errorf("rate %v: %d sends in 10s, want about %d", rate, got, want)
		}
	}
}

func TestNumbersAreIndependent(t *testing.T) {
	p := New(10)
	p.Throttled("A", t0)
	if _, ok := p.Reserve("A", t0.Add(100*time.Millisecond)); ok {
		t.Fatal("A sends during its pause")
	}
	if wait, ok := p.Reserve("B", t0.Add(100*time.Millisecond)); !ok || wait != 0 {
		t.Fatalf("B waits %v (ok %v) because A was throttled", wait, ok)
	}
}

func TestThrottlePausesSlowsAndRecovers(t *testing.T) {
	p := New(100)
	p.Throttled("A", t0)
	wait, ok := p.Reserve("A", t0)
	if ok || wait != firstPause {
		t.Fatalf("after a throttle: wait %v ok %v, want a %v pause", wait, ok, firstPause)
	}
	// Answers from requests in flight during the pause are the same episode.
	p.Throttled("A", t0.Add(200*time.Millisecond))
	if r := p.Rate("A"); math.Abs(r-100*Headroom*slowFactor) > 1e-9 {
		t.Fatalf("rate after one episode = %v, want %v", r, 100*Headroom*slowFactor)
	}
	// A second episode doubles the pause and slows further.
	t1 := t0.Add(3 * time.Second)
	p.Throttled("A", t1)
	if wait, _ := p.Reserve("A", t1); wait != 2*firstPause {
		t.Fatalf("second pause = %v, want %v", wait, 2*firstPause)
	}
	if r, want := p.Rate("A"), 100*Headroom*slowFactor*slowFactor; math.Abs(r-want) > 1e-9 {
		t.Fatalf("rate after two episodes = %v, want %v", r, want)
	}
	// Quiet successes give the rate back step by step, never above the base.
	now := t1
	for i := 0; i < 100; i++ {
		now = now.Add(recoverEvery)
		p.Succeeded("A", now)
	}
	if r := p.Rate("A"); math.Abs(r-100*Headroom) > 1e-9 {
		t.Fatalf("rate after recovery = %v, want %v", r, 100*Headroom)
	}
}

func TestUnlimited(t *testing.T) {
	p := New(0)
	if r := p.Rate("A"); !math.IsInf(r, 1) {
		t.Fatalf("unlimited Rate() = %v, want +Inf", r)
	}
	for i := 0; i < 1000; i++ {
		if wait, ok := p.Reserve("A", t0); !ok || wait != 0 {
			t.Fatalf("unlimited pacer made send %d wait %v", i, wait)
		}
	}
}

// TestReserveNOwesTheRest: a send of several tokens leaves when its first
// is due; the next send waits for the rest.
func TestReserveNOwesTheRest(t *testing.T) {
	p := New(1 / Headroom) // one token a second
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
		d, ok := p.ReserveN("A", t0.Add(tc.at), tc.cost)
		if !ok || d.Round(time.Millisecond) != tc.wait {
			t.Errorf("reservation %d at %v of %d: wait %v (ok %v), want %v", i, tc.at, tc.cost, d, ok, tc.wait)
		}
	}
}
