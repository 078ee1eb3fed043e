package run_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/ledger"
	"github.com/bulksend/bulksend/internal/run"
	"github.com/bulksend/bulksend/internal/store"
)

// These tests run campaigns on an injected clock: the schedule's, which
// a test moves from run to run; nothing waits for real.

func writeCSV(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func at(t *testing.T, v string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, v)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// runAt runs the campaign of o once with the schedule's clock at now and
// returns the outcome and the phones it sent to.
func runAt(t *testing.T, o run.Options, now time.Time) (*run.Outcome, []string) {
	t.Helper()
	start := time.Now() // the clock runs from now, as a real one does
	o.Now = func() time.Time { return now.Add(time.Since(start)) }
	ch := &channel{}
	res, done := runOnce(t, o, ch)
	defer done()
	var phones []string
	for _, m := range ch.sent {
		phones = append(phones, m.To)
	}
	slices.Sort(phones)
	return res.Outcome, phones
}

func schedOptions(csv string) run.Options {
	o := options(csv)
	o.From = []string{"s1"}
	return o
}

func given(names ...string) func(string) bool {
	return func(s string) bool { return slices.Contains(names, s) }
}

// Recipients in three zones, a window of 09:00-20:00 in each one's local
// time: each run sends only to those inside it, and says when the next
// window opens; a resume across the boundary sends the rest.
func TestWindowInEachRecipientsZone(t *testing.T) {
	csv := writeCSV(t, t.TempDir(), "c.csv", "phone,name\n+12125550101,NY\n+919876543210,IN\n+61291234567,AU\n+12125550102,NY\n+919876543211,IN\n+61291234568,AU\n")
	o := schedOptions(csv)
	o.Schedule.Window = []string{"09:00-20:00"}
	for _, step := range []struct {
		now    string
		sent   []string
		next   string // "" when finished
		window int64
	}{
		// Sydney (UTC+11) 14:00, Kolkata (UTC+5:30) 08:30, New York (UTC-5) 22:00.
		{"2026-12-02T03:00:00Z", []string{"+61291234567", "+61291234568"}, "2026-12-02T03:30:00Z", 4},
		{"2026-12-02T03:20:00Z", nil, "2026-12-02T03:30:00Z", 4},
		{"2026-12-02T03:30:00Z", []string{"+919876543210", "+919876543211"}, "2026-12-02T14:00:00Z", 2},
		{"2026-12-02T14:00:00Z", []string{"+12125550101", "+12125550102"}, "", 0},
	} {
		out, sent := runAt(t, o, at(t, step.now))
		if !slices.Equal(sent, step.sent) {
			t.Errorf("at %s sent %v, want %v", step.now, sent, step.sent)
		}
		if step.next == "" {
			if out.Unfinished() || !out.NextDue.IsZero() {
				t.Errorf("at %s: unfinished %v, next %v; want finished", step.now, out.Unfinished(), out.NextDue)
			}
			continue
		}
		if !out.NextDue.Equal(at(t, step.next)) || out.Waiting.Window != step.window {
			t.Errorf("at %s: next %v, %d waiting for the window; want %s, %d", step.now, out.NextDue.UTC(), out.Waiting.Window, step.next, step.window)
		}
	}
}

// A window is wall-clock time: on the days clocks change it opens at
// 09:00 local, an hour earlier or later in UTC than the day before.
func TestWindowAcrossDaylightSaving(t *testing.T) {
	for _, tc := range []struct {
		name, zone, phone string
		closed, open      string // an hour before the window's opening (beyond the run's horizon), and at it
	}{
		{"New York springs forward", "", "+12125550101", "2026-03-08T12:00:00Z", "2026-03-08T13:00:00Z"},
		{"New York the day before", "", "+12125550101", "2026-03-07T13:00:00Z", "2026-03-07T14:00:00Z"},
		{"New York falls back", "", "+12125550101", "2026-11-01T13:00:00Z", "2026-11-01T14:00:00Z"},
		{"New York the day before falling back", "", "+12125550101", "2026-10-31T12:00:00Z", "2026-10-31T13:00:00Z"},
		{"Berlin springs forward", "Europe/Berlin", "+12125550101", "2026-03-29T06:00:00Z", "2026-03-29T07:00:00Z"},
		{"Berlin falls back", "Europe/Berlin", "+12125550101", "2026-10-25T07:00:00Z", "2026-10-25T08:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csv := writeCSV(t, t.TempDir(), "c.csv", "phone,name\n"+tc.phone+",A\n")
			o := schedOptions(csv)
			o.Schedule.Window, o.Schedule.WindowTZ = []string{"09:00-17:00"}, tc.zone
			out, sent := runAt(t, o, at(t, tc.closed))
			if len(sent) != 0 || !out.NextDue.Equal(at(t, tc.open)) {
				t.Fatalf("at %s: sent %v, next %v; want nothing sent, next %s", tc.closed, sent, out.NextDue.UTC(), tc.open)
			}
			if out, sent = runAt(t, o, at(t, tc.open)); len(sent) != 1 || out.Unfinished() {
				t.Fatalf("at %s: sent %v; want the row sent", tc.open, sent)
			}
		})
	}
}

// A number that may be in several zones (US area code 208: Boise and Los
// Angeles time) is sent only when the window is open in both.
func TestWindowInEveryZoneOfANumber(t *testing.T) {
	csv := writeCSV(t, t.TempDir(), "c.csv", "phone,name\n+12085550199,ID\n")
	o := schedOptions(csv)
	o.Schedule.Window = []string{"09:00-20:00"}
	// 16:30Z: Boise (UTC-7) 09:30, Los Angeles (UTC-8) 08:30.
	out, sent := runAt(t, o, at(t, "2026-12-02T16:30:00Z"))
	if len(sent) != 0 || !out.NextDue.Equal(at(t, "2026-12-02T17:00:00Z")) {
		t.Fatalf("sent %v, next %v; want nothing until Los Angeles opens at 17:00Z", sent, out.NextDue.UTC())
	}
	// 03:30Z: Boise 20:30 is closed although Los Angeles' 19:30 is open.
	if _, sent = runAt(t, o, at(t, "2026-12-03T03:30:00Z")); len(sent) != 0 {
		t.Fatalf("sent %v while Boise's window was closed", sent)
	}
	// Another campaign at 02:30Z, when both are open, sends it.
	o = schedOptions(writeCSV(t, t.TempDir(), "c.csv", "phone,name\n+12085550199,ID\n"))
	o.Schedule.Window = []string{"09:00-20:00"}
	if _, sent = runAt(t, o, at(t, "2026-12-03T02:30:00Z")); len(sent) != 1 {
		t.Fatalf("sent %v at 02:30Z, when both are open", sent)
	}
}

// The daily limit is kept in the operator ledger: it rolls over 24 hours
// after the first sends, and two campaigns of one sender share it.
func TestDailyLimitSharedThroughTheLedger(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := ledger.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var rows strings.Builder
	rows.WriteString("phone,name\n")
	for i := range 5 {
		rows.WriteString("+1201555" + string(rune('0'+i)) + "100,A\n")
	}
	a := schedOptions(writeCSV(t, dir, "a.csv", rows.String()))
	b := schedOptions(writeCSV(t, dir, "b.csv", strings.ReplaceAll(rows.String(), "100,", "200,")))
	for _, o := range []*run.Options{&a, &b} {
		o.Ledger, o.Schedule.DailyLimit = l, "3"
	}
	t0 := at(t, "2026-12-02T10:00:00Z")
	out, sent := runAt(t, a, t0)
	if len(sent) != 3 || out.Waiting.Budget != 2 || out.NextDue.Sub(t0.Add(24*time.Hour)).Abs() > time.Second {
		t.Fatalf("campaign a: sent %d, %d waiting for the budget, next %v; want 3, 2, %v", len(sent), out.Waiting.Budget, out.NextDue, t0.Add(24*time.Hour))
	}
	// The other campaign of the same sender an hour later finds it spent.
	out, sent = runAt(t, b, t0.Add(time.Hour))
	if len(sent) != 0 || out.Waiting.Budget != 5 {
		t.Fatalf("campaign b: sent %d, %d waiting for the budget; want 0, 5", len(sent), out.Waiting.Budget)
	}
	// A day later the limit has room again: a sends its last two, b one.
	if _, sent = runAt(t, a, t0.Add(24*time.Hour+time.Second)); len(sent) != 2 {
		t.Fatalf("campaign a a day later: sent %d, want 2", len(sent))
	}
	out, sent = runAt(t, b, t0.Add(24*time.Hour+time.Minute))
	if len(sent) != 1 || out.Waiting.Budget != 4 {
		t.Fatalf("campaign b a day later: sent %d, %d waiting; want 1, 4", len(sent), out.Waiting.Budget)
	}
	used, _, err := l.Used(ctx, "test:s1", t0.Add(24*time.Hour+time.Minute))
	if err != nil || used != 3 {
		t.Fatalf("the ledger counts %d unique recipients in the last 24 h (%v), want 3", used, err)
	}
}

// send_at: a past instant sends now, a future one waits, a local date-time
// is read in the recipient's zone.
func TestSendAt(t *testing.T) {
	csv := writeCSV(t, t.TempDir(), "c.csv", "phone,send_at,name\n"+
		"+12125550101,2026-12-01T09:00:00Z,past\n"+
		"+12125550102,2026-12-03T09:00:00Z,future\n"+
		"+12125550103,2026-12-02 09:00,local\n")
	o := schedOptions(csv)
	now := at(t, "2026-12-02T12:00:00Z") // New York 07:00
	out, sent := runAt(t, o, now)
	if !slices.Equal(sent, []string{"+12125550101"}) || out.Waiting.SendAt != 2 {
		t.Fatalf("sent %v, %d waiting for send_at; want the past row, 2", sent, out.Waiting.SendAt)
	}
	if want := at(t, "2026-12-02T14:00:00Z"); !out.NextDue.Equal(want) {
		t.Fatalf("next %v, want %v: 09:00 in New York", out.NextDue.UTC(), want)
	}
	if _, sent = runAt(t, o, at(t, "2026-12-02T14:00:00Z")); !slices.Equal(sent, []string{"+12125550103"}) {
		t.Fatalf("at 09:00 New York sent %v", sent)
	}
	if out, sent = runAt(t, o, at(t, "2026-12-03T09:00:00Z")); !slices.Equal(sent, []string{"+12125550102"}) || out.Unfinished() {
		t.Fatalf("at the future send_at sent %v", sent)
	}
}

// --end-at: nothing after it; the rows left stay pending, or with --expire
// end skipped (expired). --start-at: nothing before it.
func TestStartAndEnd(t *testing.T) {
	body := "phone,send_at,name\n+12125550101,,a\n+12125550102,2026-12-05T00:00:00Z,b\n"
	for _, expire := range []bool{false, true} {
		o := schedOptions(writeCSV(t, t.TempDir(), "c.csv", body))
		o.Schedule.StartAt, o.Schedule.EndAt, o.Schedule.Expire = at(t, "2026-12-02T09:00:00Z"), at(t, "2026-12-04T00:00:00Z"), expire
		out, sent := runAt(t, o, at(t, "2026-12-02T08:00:00Z"))
		if len(sent) != 0 || out.Waiting.Start != 1 || !out.NextDue.Equal(o.Schedule.StartAt) {
			t.Fatalf("before the start: sent %v, %d waiting for the start, next %v", sent, out.Waiting.Start, out.NextDue)
		}
		out, sent = runAt(t, o, at(t, "2026-12-02T09:00:00Z"))
		if len(sent) != 1 || !out.Ended {
			t.Fatalf("expire %v: sent %v, ended %v; want one sent and the other after the end", expire, sent, out.Ended)
		}
		if expire {
			if out.Expired != 1 || out.Counts.Skipped != 1 || out.Counts.Pending != 0 || out.Unfinished() {
				t.Fatalf("with --expire: %d expired, counts %+v", out.Expired, out.Counts)
			}
		} else if out.Expired != 0 || out.Counts.Pending != 1 || !out.Unfinished() {
			t.Fatalf("without --expire: %d expired, counts %+v", out.Expired, out.Counts)
		}
	}
}

// A later run may widen the window: rows an earlier run made wait for it
// are due at once.
func TestWindowWidenedOnResume(t *testing.T) {
	csv := writeCSV(t, t.TempDir(), "c.csv", "phone,name\n+12125550101,NY\n")
	o := schedOptions(csv)
	o.Schedule.Window = []string{"09:00-10:00"}
	now := at(t, "2026-12-02T16:00:00Z") // New York 11:00
	if _, sent := runAt(t, o, now); len(sent) != 0 {
		t.Fatalf("sent %v outside the window", sent)
	}
	o.Schedule.Window, o.Given = []string{"09:00-20:00"}, given("window")
	if out, sent := runAt(t, o, now); len(sent) != 1 || out.Unfinished() {
		t.Fatalf("the widened window sent %v", sent)
	}
	st, err := store.OpenRead(o.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := st.Settings(context.Background())
	if err != nil || !slices.Equal(s.Window, []string{"09:00-20:00"}) {
		t.Fatalf("stored window %v (%v)", s.Window, err)
	}
}

// A send that fails because the recipient stopped marketing messages puts
// the phone in the operator ledger, marketing only: a later marketing
// campaign skips it, a utility one sends to it.
func TestStoppedMarketingKeptInTheLedger(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := ledger.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o := schedOptions(writeCSV(t, dir, "a.csv", "phone,name\n+12015550100,Ann\n+12015550101,stops marketing\n"))
	o.Ledger = l
	if out, sent := runAt(t, o, time.Now()); len(sent) != 1 || out.Counts.Failed != 1 {
		t.Fatalf("first campaign: sent %v, counts %+v", sent, out.Counts)
	}
	got, ok, err := l.OptedOut(ctx, "+12015550101")
	if err != nil || !ok || !got.MarketingOnly || got.Channel != "test" {
		t.Fatalf("the ledger holds %+v, %v, %v; want a marketing-only opt-out", got, ok, err)
	}
	body := "phone,name\n+12015550101,Bo\n+12015550102,Cy\n"
	for _, tc := range []struct {
		name string
		ch   run.Channel
		sent int
	}{{"marketing", &channel{}, 1}, {"utility", utility{&channel{}}, 2}} {
		o := schedOptions(writeCSV(t, t.TempDir(), "b.csv", body))
		o.Ledger = l
		c, err := run.Open(ctx, o, tc.ch)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Run(ctx, ctx, run.Hooks{})
		c.Close()
		if err != nil || res.Outcome.Counts.Sent != int64(tc.sent) {
			t.Fatalf("a %s campaign: %v, counts %+v; want %d sent", tc.name, err, res.Outcome.Counts, tc.sent)
		}
	}
}

// What a number was learned to accept is kept in the operator ledger: a
// new campaign starts there, and a rehearsal's scope keeps its own.
func TestLearnedLimitAcrossCampaigns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := ledger.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.SetLearned(ctx, "s1", 50, time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	o := schedOptions(writeCSV(t, dir, "c.csv", "phone,name\n+12015550100,Ann\n+12015550101,Bo\n"))
	o.Ledger, o.Log = l, slog.New(slog.NewTextHandler(&logs, nil))
	if out, _ := runAt(t, o, time.Now()); out.Counts.Sent != 2 {
		t.Fatalf("counts %+v", out.Counts)
	}
	if !strings.Contains(logs.String(), "number s1 starts at 50/s, what a campaign found it accepts") {
		t.Fatalf("the run did not start at the learned 50/s:\n%s", logs.String())
	}
	// Two sends taught nothing new: the limit stays.
	if v, _, ok, err := l.Learned(ctx, "s1", time.Now()); err != nil || !ok || v > 50 {
		t.Fatalf("the ledger holds %v, %v (%v); want what was learned kept", v, ok, err)
	}
	// A rehearsal's scope keeps its own.
	o.LedgerScope = "sandbox"
	if err := l.SetLearned(ctx, "s1", 40, time.Now()); err != nil {
		t.Fatal(err)
	}
	o.CSV = writeCSV(t, dir, "d.csv", "phone,name\n+12015550102,Cy\n")
	o.DB = strings.TrimSuffix(o.CSV, ".csv") + ".bulksend.db"
	logs.Reset()
	runAt(t, o, time.Now())
	if strings.Contains(logs.String(), "starts at 40/s") {
		t.Fatalf("a sandbox run took the real number's learned limit:\n%s", logs.String())
	}
}

// A window given on a later run places the rows in their zones then
// (FillZones): the import, without one, did not.
func TestWindowAddedOnResume(t *testing.T) {
	csv := writeCSV(t, t.TempDir(), "c.csv", "phone,name\n+12125550101,NY\n+61291234567,AU\n")
	o := schedOptions(csv)
	now := at(t, "2026-12-02T03:00:00Z") // Sydney 14:00, New York 22:00
	o.Schedule.StartAt = now.Add(time.Hour)
	if _, sent := runAt(t, o, now); len(sent) != 0 {
		t.Fatalf("sent %v before the start", sent)
	}
	o.Schedule = run.Schedule{Window: []string{"09:00-20:00"}}
	o.Given = given("window", "start-at")
	out, sent := runAt(t, o, now)
	if !slices.Equal(sent, []string{"+61291234567"}) || out.Waiting.Window != 1 {
		t.Fatalf("sent %v, %d waiting for the window; want Sydney sent, New York waiting", sent, out.Waiting.Window)
	}
}

// The dry run's estimate under a window waits for the last zone set whose
// window is closed: with New York open and Sydney closed until 22:00Z, the
// Sydney rows go no sooner, however fast the rate.
func TestPlanWaitsForTheLastWindow(t *testing.T) {
	o := schedOptions(writeCSV(t, t.TempDir(), "c.csv", "phone,name\n+12125550101,NY\n+61291234567,AU\n"))
	o.Schedule.Window = []string{"09:00-20:00"}
	now := at(t, "2026-12-02T14:20:00Z") // New York 09:20, Sydney 01:20
	sp := planAt(t, o, now)
	if want := at(t, "2026-12-02T22:00:00Z").Sub(now); sp.ETA < want {
		t.Fatalf("estimate %v; want at least %v, until Sydney's window opens", sp.ETA, want)
	}
}

// The dry run's plan under send_at and a daily limit: the estimate waits
// for the last row's own send time, and the limit's days say how many
// rows go on each.
func TestPlanSendAtAndDays(t *testing.T) {
	body := "phone,send_at,name\n"
	for _, r := range []string{"+12125550101,,a", "+12125550102,2026-12-04T09:00:00Z,b", "+12125550103,2026-12-02T15:00:00Z,c",
		"+12125550104,,d", "+12125550105,,e"} {
		body += r + "\n"
	}
	o := schedOptions(writeCSV(t, t.TempDir(), "c.csv", body))
	o.Schedule.DailyLimit = "2"
	now := at(t, "2026-12-02T14:00:00Z")
	sp := planAt(t, o, now)
	if last := at(t, "2026-12-04T09:00:00Z"); sp.SendAt != 2 || !sp.LastSendAt.Equal(last) {
		t.Fatalf("send_at rows %d, the last at %v; want 2, %v", sp.SendAt, sp.LastSendAt, last)
	}
	if want := at(t, "2026-12-04T09:00:00Z").Sub(now); sp.ETA < want {
		t.Fatalf("estimate %v; want at least %v, until the last send_at", sp.ETA, want)
	}
	if got := sp.PerDay(); !slices.Equal(got, []int64{2, 2, 1}) || sp.Days != 3 {
		t.Fatalf("rows a day %v over %d days; want [2 2 1] over 3", got, sp.Days)
	}
}

// planAt dry-runs the campaign of o at now and returns its schedule's plan.
func planAt(t *testing.T, o run.Options, now time.Time) *run.SchedulePlan {
	t.Helper()
	o.DryRun = true
	o.Now = func() time.Time { return now }
	res, done := runOnce(t, o, &channel{})
	defer done()
	if res.Plan.Schedule == nil {
		t.Fatal("no schedule in the plan")
	}
	return res.Plan.Schedule
}

// runOnce opens the campaign of o on ch and runs it once; done closes it
// (a dry run's plan and its checkpoint are valid until then).
func runOnce(t *testing.T, o run.Options, ch *channel) (res run.Result, done func()) {
	t.Helper()
	ctx := context.Background()
	c, err := run.Open(ctx, o, ch)
	if err != nil {
		t.Fatal(err)
	}
	if res, err = c.Run(ctx, ctx, run.Hooks{}); err != nil {
		c.Close()
		t.Fatal(err)
	}
	return res, func() { c.Close() }
}
