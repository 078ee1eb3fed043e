package campaign

import (
	"errors"
	"testing"
	"time"
)

func TestRefRoundTrip(t *testing.T) {
	want := Ref{Campaign: "a1b2c3", Row: 42}
	if got, ok := ParseRef(want.String()); !ok || got != want {
		t.Fatalf("ParseRef(%q) = %+v, %v", want.String(), got, ok)
	}
	if got, ok := ParseRefKey(want.Key()); !ok || got != want || want.Key() != "a1b2c3:42" {
		t.Fatalf("ParseRefKey(%q) = %+v, %v", want.Key(), got, ok)
	}
	if (Ref{}).String() != "" || !(Ref{}).IsZero() {
		t.Error("the zero Ref is not none")
	}
	for _, bad := range []string{"", "campaign42:row17", "bulksend:", "bulksend::1", "bulksend:x:0", "bulksend:x:-3", "bulksend:x:1a"} {
		if _, ok := ParseRef(bad); ok {
			t.Errorf("ParseRef(%q) accepted", bad)
		}
	}
}

// A pair-limited row waits 4^(n-1) times the base, without jitter or cap.
func TestBackoffPairLimit(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 4 * time.Second, 3: 16 * time.Second, 6: 1024 * time.Second} {
		if got := Backoff(n, time.Second, 0, 4, 1); got != want {
			t.Errorf("Backoff(%d, no cap, growth 4, no jitter) = %v, want %v", n, got, want)
		}
	}
}

func TestBackoffFullJitter(t *testing.T) {
	base, max := 2*time.Second, 5*time.Minute
	for _, tc := range []struct {
		attempt int
		u       float64
		want    time.Duration
	}{
		{1, 0.5, time.Second},
		{2, 1, 4 * time.Second},
		{4, 0.25, 4 * time.Second},
		{30, 1, max},
		{3, 0, 0},
	} {
		if got := Backoff(tc.attempt, base, max, 2, tc.u); got != tc.want {
			t.Errorf("Backoff(%d, u=%v) = %v, want %v", tc.attempt, tc.u, got, tc.want)
		}
	}
}

func TestCountsAddUp(t *testing.T) {
	var c Counts
	for i, s := range Statuses {
		c.Add(s, int64(i+1))
	}
	sum := c.Pending + c.Sending + c.InDoubt + c.Sent + c.Delivered + c.Read + c.Failed + c.Skipped
	if sum != c.Total || c.Total != 36 {
		t.Fatalf("counts %+v: parts %d, total %d", c, sum, c.Total)
	}
	if !c.Unfinished() {
		t.Fatal("pending rows but not unfinished")
	}
}

// TestSendErrorUnwraps: the adapter's own error stays reachable (the CLI
// finds its hint through it), and an unclassified send error is in doubt.
func TestSendErrorUnwraps(t *testing.T) {
	cause := errors.New("(#131026) Message undeliverable")
	e := &SendError{Class: Permanent, Code: 131026, Title: "Message undeliverable", Err: cause}
	if !errors.Is(e, cause) || e.Error() != cause.Error() {
		t.Fatalf("SendError %v does not carry its cause", e)
	}
	if got := (SendError{}).Class; got != Unanswered {
		t.Fatalf("zero Class = %v, want %v: an unclassified error must never be resent", got, Unanswered)
	}
}

func TestThrottleBackoff(t *testing.T) {
	for try, want := range map[int]time.Duration{1: 2 * time.Second, 2: 8 * time.Second, 3: 32 * time.Second, 4: 128 * time.Second, 5: 256 * time.Second, 9: 256 * time.Second} {
		if got := Backoff(try, 2*time.Second, 256*time.Second, 4, 1); got != want {
			t.Errorf("Backoff(%d, growth 4) bound = %v, want %v", try, got, want)
		}
		if got := Backoff(try, 2*time.Second, 256*time.Second, 4, 0.5); got != want/2 {
			t.Errorf("Backoff(%d, growth 4) at 0.5 = %v, want %v (full jitter)", try, got, want/2)
		}
	}
}

func TestBucketsAddUp(t *testing.T) {
	c := Counts{Total: 100, Pending: 5, Sending: 1, InDoubt: 2, Sent: 40, Delivered: 30, Read: 2, Failed: 15, Skipped: 5}
	b := BucketsOf(c, 6)
	want := Buckets{Success: 72, HardThrottle: 6, Other: 14, Unfinished: 8}
	if b != want {
		t.Fatalf("buckets = %+v, want %+v", b, want)
	}
	if b.Success+b.HardThrottle+b.Other+b.Unfinished != c.Total {
		t.Fatalf("buckets %+v do not add up to %d", b, c.Total)
	}
}
