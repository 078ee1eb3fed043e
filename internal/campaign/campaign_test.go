package campaign

import (
	"errors"
	"testing"
	"time"
)

func TestCallbackDataRoundTrip(t *testing.T) {
	id, row, ok := ParseCallbackData(CallbackData("a1b2c3", 42))
	if !ok || id != "a1b2c3" || row != 42 {
		t.Fatalf("round trip = %q %d %v", id, row, ok)
	}
	for _, bad := range []string{"", "campaign42:row17", "bulksend:", "bulksend::1", "bulksend:x:0", "bulksend:x:-3", "bulksend:x:1a"} {
		if _, _, ok := ParseCallbackData(bad); ok {
			t.Errorf("ParseCallbackData(%q) accepted", bad)
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
		if got := Backoff(tc.attempt, base, max, tc.u); got != tc.want {
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
