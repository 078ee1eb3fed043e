package cli

import (
	"testing"
	"time"

	wachannel "github.com/bulksend/bulksend/internal/whatsapp/channel"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

func TestDelayFlag(t *testing.T) {
	tests := []struct {
		in   string
		want sandbox.Delay
		out  string // String() after Set; "" when Set fails
	}{
		{"1s-3s", sandbox.Delay{Mean: 2 * time.Second, Jitter: time.Second}, "1s-3s"},
		{"5s-30s", sandbox.Delay{Mean: 17500 * time.Millisecond, Jitter: 12500 * time.Millisecond}, "5s-30s"},
		{"250ms", sandbox.Delay{Mean: 250 * time.Millisecond}, "250ms"},
		{"0s-1s", sandbox.Delay{Mean: 500 * time.Millisecond, Jitter: 500 * time.Millisecond}, "0s-1s"},
		{"0", sandbox.Delay{Mean: -1}, "0s"}, // none, not the default
		{"30s-5s", sandbox.Delay{}, ""},
		{"-1s", sandbox.Delay{}, ""},
		{"soon", sandbox.Delay{}, ""},
		{"1s-", sandbox.Delay{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var d sandbox.Delay
			f := &d
			err := f.Set(tc.in)
			if (err != nil) != (tc.out == "") {
				t.Fatalf("Set(%q) = %v", tc.in, err)
			}
			if d != tc.want || (err == nil && f.String() != tc.out) {
				t.Errorf("Set(%q): %+v, String %q; want %+v, %q", tc.in, d, f.String(), tc.want, tc.out)
			}
		})
	}
	// The demo's defaults, as help shows them.
	c := wachannel.DemoSandbox()
	for _, tc := range []struct {
		d    *sandbox.Delay
		want string
	}{{&c.SentDelay, "0s-1s"}, {&c.DeliveredDelay, "1s-3s"}, {&c.ReadDelay, "5s-30s"}} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("default %s, want %s", got, tc.want)
		}
	}
}
