package ledger

import (
	"context"
	"testing"
	"time"
)

// A resume lifts a stop of marketing, not a stop of everything; a START
// lifts either; a lift never reaches an opt-out made after it, and a STOP
// older than a lift does not put the opt-out back: a log replayed in any
// order ends as it was.
func TestLift(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	stop := func(m int, marketing bool) OptOut {
		return OptOut{Phone: "+447911000001", Channel: "whatsapp", Source: "reply STOP", Sender: "1000001", At: at(m), MarketingOnly: marketing}
	}
	type step struct {
		add      *OptOut
		lift     int  // minute of a lift, when add is nil
		resume   bool // the lift is a resume of marketing only
		wantLift bool
	}
	o := func(x OptOut) *OptOut { return &x }
	for _, tc := range []struct {
		name  string
		steps []step
		held  bool // an opt-out holds at the end
		mkt   bool // and covers marketing only
	}{
		{"resume lifts a marketing stop", []step{{add: o(stop(0, true))}, {lift: 1, resume: true, wantLift: true}}, false, false},
		{"resume leaves a stop of everything", []step{{add: o(stop(0, false))}, {lift: 1, resume: true}}, true, false},
		{"START lifts a stop of everything", []step{{add: o(stop(0, false))}, {lift: 1, wantLift: true}}, false, false},
		{"a lift before the stop does nothing", []step{{add: o(stop(5, false))}, {lift: 1}}, true, false},
		{"an older STOP replayed stays lifted", []step{{add: o(stop(0, false))}, {lift: 2, wantLift: true}, {add: o(stop(0, false))}, {add: o(stop(1, false))}}, false, false},
		{"a newer STOP comes back", []step{{add: o(stop(0, true))}, {lift: 2, resume: true, wantLift: true}, {add: o(stop(3, false))}}, true, false},
		{"a lifted one is lifted once", []step{{add: o(stop(0, false))}, {lift: 2, wantLift: true}, {lift: 3}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger(t)
			for i, s := range tc.steps {
				if s.add != nil {
					if _, err := l.AddOptOuts(ctx, []OptOut{*s.add}); err != nil {
						t.Fatal(err)
					}
					continue
				}
				got, err := l.Lift(ctx, "+447911000001", s.resume, at(s.lift), "reply START")
				if err != nil {
					t.Fatal(err)
				}
				if got != s.wantLift {
					t.Errorf("step %d: lifted %v, want %v", i, got, s.wantLift)
				}
			}
			got, held, err := l.OptedOut(ctx, "+447911000001")
			if err != nil {
				t.Fatal(err)
			}
			if held != tc.held || got.MarketingOnly != tc.mkt {
				t.Fatalf("held %v (marketing only %v), want %v (%v)", held, got.MarketingOnly, tc.held, tc.mkt)
			}
			if held && got.Sender != "1000001" {
				t.Errorf("sender %q, want the number it reached", got.Sender)
			}
			n := 0
			if err := l.EachOptOut(ctx, func(OptOut) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 1, false: 0}[tc.held]; n != want {
				t.Errorf("EachOptOut lists %d, want %d", n, want)
			}
		})
	}
}
