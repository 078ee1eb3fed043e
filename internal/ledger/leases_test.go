package ledger

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// TestLeases: live leases are those renewed and whose process runs; a
// lease of a process that is gone, or not renewed in time, is stale and
// removed; Release removes a run's leases.
func TestLeases(t *testing.T) {
	ctx := context.Background()
	host, _ := os.Hostname()
	// A process that has ended: its pid is free (reused only rarely
	// within the test).
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("no true(1) to make a finished process")
	}
	now := time.UnixMilli(1_700_000_000_000)
	self := Lease{Holder: "self", Host: host, PID: os.Getpid(), Checkpoint: "/a.db", Rate: 80, Since: now}
	cases := []struct {
		name   string
		other  Lease
		until  time.Duration // the other's lease expires this long after now
		live   []string      // holders live at now, oldest first (then by name)
		remain []string      // after self's Release
	}{
		{name: "another run", other: Lease{Holder: "other", Host: host, PID: os.Getppid(), Checkpoint: "/b.db", Rate: 80, Since: now.Add(-time.Minute)},
			until: 5 * time.Second, live: []string{"other", "self"}, remain: []string{"other"}},
		{name: "a run that crashed on this host", other: Lease{Holder: "crashed", Host: host, PID: gone.Process.Pid, Checkpoint: "/b.db", Rate: 80, Since: now},
			until: 5 * time.Second, live: []string{"self"}},
		{name: "a lease not renewed", other: Lease{Holder: "late", Host: "elsewhere", PID: 1, Checkpoint: "/b.db", Rate: 80, Since: now},
			until: -time.Millisecond, live: []string{"self"}},
		{name: "another host's live run", other: Lease{Holder: "remote", Host: "elsewhere", PID: 1, Checkpoint: "/b.db", Rate: 80, Since: now},
			until: time.Second, live: []string{"remote", "self"}, remain: []string{"remote"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger(t)
			if err := l.Hold(ctx, self, []string{"sandbox|1000001"}, []string{"1000001"}, now.Add(5*time.Second)); err != nil {
				t.Fatal(err)
			}
			if err := l.Hold(ctx, tc.other, []string{"sandbox|1000001"}, []string{"1000001"}, now.Add(tc.until)); err != nil {
				t.Fatal(err)
			}
			live, err := l.Leases(ctx, "sandbox|1000001", now)
			if err != nil {
				t.Fatal(err)
			}
			if got := holders(live); !slices.Equal(got, tc.live) {
				t.Fatalf("live %v, want %v", got, tc.live)
			}
			if by, err := l.SenderLeases(ctx, "1000001", now); err != nil || !slices.Equal(holders(by), tc.live) {
				t.Fatalf("by sender: %v (%v), want %v", holders(by), err, tc.live)
			}
			if err := l.Release(ctx, "self"); err != nil {
				t.Fatal(err)
			}
			live, err = l.Leases(ctx, "sandbox|1000001", now)
			if err != nil {
				t.Fatal(err)
			}
			if got := holders(live); !slices.Equal(got, tc.remain) {
				t.Fatalf("after Release: %v, want %v", got, tc.remain)
			}
		})
	}
}

func holders(ls []Lease) []string {
	var out []string
	for _, x := range ls {
		out = append(out, x.Holder)
	}
	return out
}
