package smssandbox

import (
	"testing"
	"time"
)

// TestLongestHold: the longest a SendTextMessage answer is kept back on
// purpose, which a server's write timeout must exceed: the most latency
// draws and LateDelay (60s when unset).
func TestLongestHold(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want time.Duration
	}{
		{"zero: the default late delay", Config{}, 60 * time.Second},
		{"latency and jitter", Config{Latency: 80 * time.Millisecond, Jitter: 40 * time.Millisecond, LateDelay: 10 * time.Second}, 10120 * time.Millisecond},
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
