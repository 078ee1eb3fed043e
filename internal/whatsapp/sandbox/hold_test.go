package sandbox

import (
	"testing"
	"time"
)

// TestLongestHold: the longest an answer is kept back on purpose, which a
// server's write timeout must exceed: arrival jitter (up to twice it),
// the most latency draws, and LateDelay (60s when unset).
func TestLongestHold(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want time.Duration
	}{
		{"zero: the default late delay", Config{}, 60 * time.Second},
		{"latency and jitter", Config{Latency: 120 * time.Millisecond, Jitter: 80 * time.Millisecond, LateDelay: 10 * time.Second}, 10200 * time.Millisecond},
		{"arrival jitter counts twice", Config{ArrivalJitter: time.Second, LateDelay: time.Second}, 3 * time.Second},
		{"jitter beyond latency draws no negative", Config{Latency: time.Millisecond, Jitter: -time.Second, LateDelay: time.Second}, time.Second + time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.cfg)
			defer s.Close()
			if got := s.LongestHold(); got != tc.want {
				t.Errorf("LongestHold %v, want %v", got, tc.want)
			}
		})
	}
}
