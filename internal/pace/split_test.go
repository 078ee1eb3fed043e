package pace

import (
	"testing"
	"time"
)

// TestSplit: a number split between runs is sent at its share of the
// limit, in its pace and in what a second holds; what the number is
// believed to accept, and learned, stay the number's.
func TestSplit(t *testing.T) {
	cases := []struct {
		name    string
		ceiling float64
		share   float64
		most    int // sends leaving within the first two seconds, at most
	}{
		{name: "whole", ceiling: 100, share: 1, most: 2 * 100},
		{name: "halves", ceiling: 100, share: 0.5, most: 2 * 50},
		{name: "thirds", ceiling: 400, share: 1.0 / 3, most: 2*133 + 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := New(tc.ceiling)
			start := time.Unix(1_700_000_000, 0)
			p.Split("n", tc.share, start)
			if got, want := p.Rate("n"), Paced(tc.ceiling*tc.share); got > want+1e-9 {
				t.Errorf("Rate %v, want at most %v", got, want)
			}
			if p.Limit("n") != tc.ceiling || p.Learned("n") != tc.ceiling {
				t.Errorf("Limit %v, Learned %v: want the number's %v", p.Limit("n"), p.Learned("n"), tc.ceiling)
			}
			// Sends as fast as the pacer lets them leave, each answered as
			// it leaves.
			sent, end := 0, start.Add(2*time.Second)
			for now := start; now.Before(end); {
				s, d, ok := p.Reserve("n", now)
				now = now.Add(d)
				if ok && now.Before(end) {
					sent++
					p.Answered(s, Counted, now)
				}
			}
			if sent > tc.most || sent < tc.most*9/10 {
				t.Errorf("%d sends in two seconds at %v of %v/s, want at most %d and near it", sent, tc.share, tc.ceiling, tc.most)
			}
		})
	}
}
