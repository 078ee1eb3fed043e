package fake

import (
	"testing"
	"time"
)

// A fate depends on its seed, keys and attempt alone, and its draws are
// uniform in [0, 1).
func TestDraws(t *testing.T) {
	a := Draws(7, []string{"+447400123456", "bulksend:c:1"}, 1)
	b := Draws(7, []string{"+447400123456", "bulksend:c:1"}, 1)
	for i := range uint64(100) {
		if a(i) != b(i) {
			t.Fatalf("draw %d differs for the same fate", i)
		}
		if x := a(i); x < 0 || x >= 1 {
			t.Fatalf("draw %d = %v, outside [0, 1)", i, x)
		}
	}
	for _, other := range []func(uint64) float64{
		Draws(8, []string{"+447400123456", "bulksend:c:1"}, 1),
		Draws(7, []string{"+447400123457", "bulksend:c:1"}, 1),
		Draws(7, []string{"+447400123456", "bulksend:c:1"}, 2),
		Draws(7, []string{"+447400123456bulksend:c:1", ""}, 1), // keys are kept apart
	} {
		if other(0) == a(0) && other(1) == a(1) {
			t.Error("another seed, key or attempt draws the same fate")
		}
	}
	var sum float64
	for i := range uint64(10000) {
		sum += Stream(42)(i)
	}
	if mean := sum / 10000; mean < 0.48 || mean > 0.52 {
		t.Errorf("mean of 10,000 draws = %v, want about 0.5", mean)
	}
}

func TestLatency(t *testing.T) {
	for range 1000 {
		if d := Latency(100*time.Millisecond, 30*time.Millisecond); d < 70*time.Millisecond || d > 130*time.Millisecond {
			t.Fatalf("Latency = %v, outside 100ms ± 30ms", d)
		}
		if d := Latency(10*time.Millisecond, 50*time.Millisecond); d < 0 {
			t.Fatalf("Latency = %v below 0", d)
		}
	}
	if got := LongestLatency(100*time.Millisecond, 30*time.Millisecond); got != 130*time.Millisecond {
		t.Errorf("LongestLatency = %v", got)
	}
}
