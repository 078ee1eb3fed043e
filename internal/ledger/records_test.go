package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestLearned(t *testing.T) {
	const sender = "106540352242922"
	for _, tc := range []struct {
		name   string
		sets   []time.Duration // instants of SetLearned, perSecond 10, 20, 30...
		now    time.Duration
		want   float64 // 0: not ok
		wantAt time.Duration
	}{
		{"never learned", nil, 0, 0, 0},
		{"just learned", []time.Duration{0}, 0, 10, 0},
		{"30 days old", []time.Duration{0}, 30 * 24 * h, 10, 0},
		{"older than 30 days", []time.Duration{0}, 30*24*h + time.Millisecond, 0, 0},
		{"learned again", []time.Duration{0, 2 * h}, 3 * h, 20, 2 * h},
		{"an earlier learning does not overwrite a later one", []time.Duration{2 * h, 1 * h}, 3 * h, 10, 2 * h},
		{"renewed before it expired", []time.Duration{0, 29 * 24 * h}, 40 * 24 * h, 20, 29 * 24 * h},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			l := newLedger(t)
			for i, d := range tc.sets {
				must(t, l.SetLearned(ctx, sender, float64(10*(i+1)), at(d)))
			}
			ps, when, ok, err := l.Learned(ctx, sender, at(tc.now))
			must(t, err)
			if ok != (tc.want > 0) || ps != tc.want || (ok && !when.Equal(at(tc.wantAt))) {
				t.Errorf("Learned(+%v) = %v, %v, %v; want %v at +%v", tc.now, ps, when, ok, tc.want, tc.wantAt)
			}
		})
	}
}

func TestLearnedClearedAndPruned(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t)
	must(t, l.SetLearned(ctx, "A", 40, t0))
	must(t, l.SetLearned(ctx, "B", 50, at(20*24*h)))
	must(t, l.ClearLearned(ctx, "A"))
	if _, _, ok, err := l.Learned(ctx, "A", t0); err != nil || ok {
		t.Errorf("cleared limit still learned (%v)", err)
	}
	must(t, l.ClearLearned(ctx, "never"))
	must(t, l.Prune(ctx, at(51*24*h)))
	var n int
	must(t, l.db.QueryRow(`SELECT COUNT(*) FROM learned`).Scan(&n))
	if n != 0 {
		t.Errorf("%d learned limits left after Prune, want 0", n)
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if err := l.SetLearned(ctx, "A", bad, t0); err == nil {
			t.Errorf("SetLearned(%v) succeeded", bad)
		}
	}
}

func TestCampaigns(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t)
	dir := t.TempDir()
	cp := func(name string) string { return filepath.Join(dir, name+".bulksend.db") }
	for _, c := range []Campaign{
		{Checkpoint: cp("spring"), CSV: "spring.csv", Channel: "whatsapp", ID: "spring_sale", LastRun: at(2 * h)},
		{Checkpoint: cp("sms"), CSV: "sms.csv", Channel: "sms", ID: "reminder", LastRun: at(5 * h)},
		{Checkpoint: cp("old"), CSV: "old.csv", Channel: "whatsapp", ID: "old", LastRun: at(-40 * 24 * h)},
		{Checkpoint: cp("tie"), CSV: "tie.csv", Channel: "whatsapp", ID: "tie", LastRun: at(2 * h)},
		// Run again: replaces, and moves first.
		{Checkpoint: cp("spring"), CSV: "moved/spring.csv", Channel: "whatsapp", ID: "spring_sale", LastRun: at(6 * h)},
	} {
		must(t, l.NoteCampaign(ctx, c))
	}
	must(t, l.Prune(ctx, t0))
	got, err := l.Campaigns(ctx)
	must(t, err)
	var names []string
	for _, c := range got {
		names = append(names, fmt.Sprintf("%s %s +%v", filepath.Base(c.Checkpoint), c.CSV, c.LastRun.Sub(t0)))
	}
	want := []string{
		"spring.bulksend.db moved/spring.csv +6h0m0s",
		"sms.bulksend.db sms.csv +5h0m0s",
		"tie.bulksend.db tie.csv +2h0m0s",
	}
	if !slices.Equal(names, want) {
		t.Errorf("Campaigns:\n got %q\nwant %q", names, want)
	}
	if err := l.NoteCampaign(ctx, Campaign{Checkpoint: cp("x")}); err == nil {
		t.Error("a campaign without a last run was noted")
	}
	if err := l.NoteCampaign(ctx, Campaign{LastRun: t0}); err == nil {
		t.Error("a campaign without a checkpoint was noted")
	}
}

func TestOptOuts(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t)
	for _, tc := range []struct {
		name string
		add  []OptOut
		want int
	}{
		{"new", []OptOut{
			{Phone: "+15550001", Channel: "sms", Source: "reply STOP", At: t0},
			{Phone: "+15550002", Channel: "whatsapp", Source: "131050", At: t0},
		}, 2},
		{"again: the first is kept", []OptOut{
			{Phone: "+15550001", Channel: "whatsapp", Source: "user_preferences webhook", At: at(h)},
		}, 0},
		{"repeats within one call", []OptOut{
			{Phone: "+15550003", Channel: "sms", Source: "import", At: at(h)},
			{Phone: "+15550003", Channel: "sms", Source: "reply STOP", At: at(2 * h)},
		}, 1},
		{"none", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			added, err := l.AddOptOuts(ctx, tc.add)
			if err != nil || added != tc.want {
				t.Fatalf("AddOptOuts = %d, %v; want %d", added, err, tc.want)
			}
		})
	}
	// Committed with synchronous=FULL, and the connection set back after.
	var sync int
	if err := l.db.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil || sync != 1 {
		t.Errorf("synchronous = %d (%v) after AddOptOuts, want 1 (NORMAL)", sync, err)
	}
	o, ok, err := l.OptedOut(ctx, "+15550001")
	must(t, err)
	if want := (OptOut{Phone: "+15550001", Channel: "sms", Source: "reply STOP", At: t0}); !ok || o.Phone != want.Phone || o.Channel != want.Channel || o.Source != want.Source || !o.At.Equal(want.At) {
		t.Errorf("OptedOut = %+v, %v; want %+v", o, ok, want)
	}
	if o, _, _ := l.OptedOut(ctx, "+15550003"); o.Source != "import" {
		t.Errorf("repeat within a call replaced the first: %+v", o)
	}

	// Opt-outs outlive every Prune.
	must(t, l.Prune(ctx, at(10*365*24*h)))
	if _, ok, err := l.OptedOut(ctx, "+15550002"); err != nil || !ok {
		t.Errorf("opt-out pruned (%v)", err)
	}

	must(t, l.RemoveOptOut(ctx, "+15550002"))
	must(t, l.RemoveOptOut(ctx, "+15550002")) // twice is no error
	if _, ok, err := l.OptedOut(ctx, "+15550002"); err != nil || ok {
		t.Errorf("opted back in, still opted out (%v)", err)
	}
	if _, ok, err := l.OptedOut(ctx, "+19999999"); err != nil || ok {
		t.Errorf("a phone never opted out is (%v)", err)
	}
	if _, err := l.AddOptOuts(ctx, []OptOut{{Phone: ""}}); err == nil {
		t.Error("an opt-out without a phone was added")
	}
}

// EachOptOut walks every opt-out in pages, and fn may use the ledger as
// it goes.
func TestEachOptOut(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t)
	const n = 2*optOutPage + 17
	var add []OptOut
	for i := range n {
		add = append(add, OptOut{Phone: fmt.Sprintf("+1555%07d", i), Channel: "sms", Source: "import", At: t0})
	}
	added, err := l.AddOptOuts(ctx, add)
	if err != nil || added != n {
		t.Fatalf("AddOptOuts = %d, %v", added, err)
	}
	var seen []string
	err = l.EachOptOut(ctx, func(o OptOut) error {
		if _, ok, err := l.OptedOut(ctx, o.Phone); err != nil || !ok {
			return fmt.Errorf("inside EachOptOut: %s, %v, %v", o.Phone, ok, err)
		}
		seen = append(seen, o.Phone)
		return nil
	})
	must(t, err)
	if len(seen) != n || !slices.IsSorted(seen) || seen[0] != add[0].Phone || seen[n-1] != add[n-1].Phone {
		t.Errorf("EachOptOut saw %d phones (sorted %v), want %d", len(seen), slices.IsSorted(seen), n)
	}
	stop := errors.New("stop")
	calls := 0
	err = l.EachOptOut(ctx, func(OptOut) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("EachOptOut = %v after %d calls, want fn's error after 1", err, calls)
	}
}

// An opt-out only widens: one of marketing only gives way to one of
// everything, never the other way round.
func TestOptOutsWiden(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t)
	steps := []struct {
		add       OptOut
		marketing bool   // what the phone's opt-out covers after
		source    string // and whose it is
	}{
		{OptOut{Phone: "+15550001", Channel: "whatsapp", Source: "131050", At: t0, MarketingOnly: true}, true, "131050"},
		{OptOut{Phone: "+15550001", Channel: "whatsapp", Source: "user_preferences webhook", At: at(h), MarketingOnly: true}, true, "131050"},
		{OptOut{Phone: "+15550001", Channel: "sms", Source: "reply STOP", At: at(2 * h)}, false, "reply STOP"},
		{OptOut{Phone: "+15550001", Channel: "whatsapp", Source: "131050", At: at(3 * h), MarketingOnly: true}, false, "reply STOP"},
	}
	for i, st := range steps {
		if _, err := l.AddOptOuts(ctx, []OptOut{st.add}); err != nil {
			t.Fatal(err)
		}
		o, ok, err := l.OptedOut(ctx, st.add.Phone)
		if err != nil || !ok || o.MarketingOnly != st.marketing || o.Source != st.source {
			t.Fatalf("step %d: %+v, %v, %v; want marketing only %v from %q", i, o, ok, err, st.marketing, st.source)
		}
	}
}
