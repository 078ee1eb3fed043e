package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/reconcile"
)

func rowsOf(rows ...Row) func() (Row, error) {
	i := 0
	return func() (Row, error) {
		if i == len(rows) {
			return Row{}, io.EOF
		}
		i++
		return rows[i-1], nil
	}
}

func phones(n int, sender string) []Row {
	var out []Row
	for i := 1; i <= n; i++ {
		out = append(out, Row{Row: int64(i), Line: i + 1, Phone: fmt.Sprintf("+4477009%05d", i), Sender: sender, Params: []string{"p", fmt.Sprint(i)}})
	}
	return out
}

func newStore(t testing.TB, rows ...Row) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "c.bulksend.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Import(context.Background(), rowsOf(rows...), func() Settings { return Settings{CampaignID: "c1", Template: "t", MaxAttempts: 5} }); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOpenCreatesPrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("checkpoint mode = %v, want 0600", fi.Mode().Perm())
	}
}

func TestImportSkipsDuplicatesAndKeepsSettings(t *testing.T) {
	ctx := context.Background()
	rows := []Row{
		{Row: 1, Line: 2, Phone: "+447700900001", Sender: "1"},
		{Row: 2, Line: 3, Phone: "+447700900002", Sender: "1"},
		{Row: 3, Line: 4, Phone: "+447700900001", Sender: "1"},
		{Row: 4, Line: 5, Phone: "12ab", Sender: "1", Skip: "invalid phone: letters", SkipKind: campaign.SkipInvalid},
		{Row: 5, Line: 6, Phone: "+447700900001", Sender: "1"},
	}
	s := newStore(t, rows...)
	c, err := s.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := campaign.Counts{Total: 5, Pending: 2, Skipped: 3}
	if c != want {
		t.Fatalf("counts = %+v, want %+v", c, want)
	}
	var reasons []string
	s.Export(ctx, func(r ExportRow) error { reasons = append(reasons, r.Reason); return nil })
	wantReasons := []string{"", "", "duplicate of row 1", "invalid phone: letters", "duplicate of row 1"}
	if fmt.Sprint(reasons) != fmt.Sprint(wantReasons) {
		t.Fatalf("reasons = %q, want %q", reasons, wantReasons)
	}
	st, err := s.Settings(ctx)
	if err != nil || st.CampaignID != "c1" {
		t.Fatalf("settings = %+v, %v", st, err)
	}
	if _, err := s.Import(ctx, rowsOf(rows...), func() Settings { return st }); err == nil {
		t.Fatal("second import into the same checkpoint succeeded")
	}
}

func TestImportAbortLeavesNothing(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	boom := errors.New("line 3: bad quoting")
	i := 0
	_, err = s.Import(ctx, func() (Row, error) {
		i++
		if i == 3 {
			return Row{}, boom
		}
		return Row{Row: int64(i), Phone: fmt.Sprint(i), Sender: "1"}, nil
	}, func() Settings { return Settings{} })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	if _, err := s.Settings(ctx); !errors.Is(err, ErrNoSettings) {
		t.Fatalf("settings after failed import: %v", err)
	}
	c, _ := s.Counts(ctx)
	if c.Total != 0 {
		t.Fatalf("%d rows left by a failed import", c.Total)
	}
}

func TestClaimRecordCycle(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, append(phones(5, "A"), Row{Row: 6, Line: 7, Phone: "+447700800001", Sender: "B"})...)
	now := time.Now()
	jobs, err := s.Claim(ctx, "A", now, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 || jobs[0].Row != 1 || jobs[0].Attempts != 1 || jobs[0].Params[1] != "1" {
		t.Fatalf("jobs = %+v", jobs)
	}
	if c, _ := s.Counts(ctx); c.Sending != 3 {
		t.Fatalf("sending = %d, want 3 (claims must be committed before sending)", c.Sending)
	}
	err = s.Record(ctx, []engine.Result{
		{Row: 1, Outcome: engine.OutcomeSent, MessageID: "wamid.1", At: now},
		{Row: 2, Outcome: engine.OutcomeRetry, Code: 131000, Title: "Something went wrong", NextAt: now.Add(time.Hour), At: now},
		{Row: 3, Outcome: engine.OutcomeRelease, At: now},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A result for a row no longer sending changes nothing.
	if err := s.Record(ctx, []engine.Result{{Row: 1, Outcome: engine.OutcomeFailed, Code: 1, At: now}}); err != nil {
		t.Fatal(err)
	}
	next, err := s.Claim(ctx, "A", now, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, j := range next {
		got = append(got, j.Row)
		if j.Row == 3 && j.Attempts != 1 {
			t.Errorf("released row attempts = %d, want 1 (a release does not spend an attempt)", j.Attempts)
		}
	}
	if fmt.Sprint(got) != "[3 4 5]" {
		t.Fatalf("second claim = %v, want [3 4 5] (row 2 is not due, row 6 is B's)", got)
	}
	due, ok, err := s.NextDue(ctx, "A")
	if err != nil || !ok || due.UnixMilli() != now.Add(time.Hour).UnixMilli() {
		t.Fatalf("next due = %v %v %v", due, ok, err)
	}
	states := map[int64]reconcile.Delivery{}
	if err := s.Deliveries(ctx, nil, []string{"wamid.1"}, states); err != nil || states[1].Status != campaign.Sent {
		t.Fatalf("deliveries by wamid = %+v, %v", states, err)
	}
}

func TestRecoverAndPolicies(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		policy      campaign.Policy
		maxAttempts int
		want        campaign.Counts
		result      campaign.PolicyResult
	}{
		{campaign.Hold, 5, campaign.Counts{Total: 3, InDoubt: 2, Pending: 1}, campaign.PolicyResult{}},
		{campaign.Resend, 5, campaign.Counts{Total: 3, Pending: 3}, campaign.PolicyResult{Resent: 2}},
		{campaign.Resend, 1, campaign.Counts{Total: 3, Failed: 2, Pending: 1}, campaign.PolicyResult{LastAttempt: 2}},
		{campaign.Fail, 5, campaign.Counts{Total: 3, Failed: 2, Pending: 1}, campaign.PolicyResult{Failed: 2}},
	} {
		t.Run(fmt.Sprintf("%s/max%d", tc.policy, tc.maxAttempts), func(t *testing.T) {
			s := newStore(t, phones(3, "A")...)
			now := time.Now()
			if _, err := s.Claim(ctx, "A", now.Add(-time.Hour), 2); err != nil {
				t.Fatal(err)
			}
			n, err := s.RecoverSending(ctx, now)
			if err != nil || n != 2 {
				t.Fatalf("recovered %d, %v", n, err)
			}
			// Grace: a cutoff before the attempt leaves rows alone.
			if r, err := s.ApplyPolicy(ctx, tc.policy, now.Add(-2*time.Hour), now, tc.maxAttempts); err != nil || r.Total() != 0 {
				t.Fatalf("policy applied to %+v rows attempted after the cutoff (%v)", r, err)
			}
			r, err := s.ApplyPolicy(ctx, tc.policy, now, now, tc.maxAttempts)
			if err != nil || r != tc.result {
				t.Fatalf("policy result %+v (%v), want %+v", r, err, tc.result)
			}
			if c, _ := s.Counts(ctx); c != tc.want {
				t.Fatalf("counts = %+v, want %+v", c, tc.want)
			}
		})
	}
}

func TestExclude(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, phones(4, "A")...)
	list := []string{"+447700900002", "+447700900004", "+449999999999"}
	n, err := s.Exclude(ctx, func() (string, error) {
		if len(list) == 0 {
			return "", io.EOF
		}
		p := list[0]
		list = list[1:]
		return p, nil
	})
	if err != nil || n != 2 {
		t.Fatalf("excluded %d, %v; want 2", n, err)
	}
	if c, _ := s.Counts(ctx); c.Skipped != 2 || c.Pending != 2 {
		t.Fatalf("counts = %+v", c)
	}
}

func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	l, err := Acquire(path, "run")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(path, "run")
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("second acquire: %v, want *LockedError", err)
	}
	if want := fmt.Sprintf("pid %d", os.Getpid()); len(le.Holder) < len(want) || le.Holder[:len(want)] != want {
		t.Fatalf("holder = %q, want it to name %s", le.Holder, want)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := Acquire(path, "run")
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	l2.Release()
}

// TestLowerMaxAttemptsFailsExhaustedRows: a row waiting for its third
// attempt must not be sent again once --max-attempts is lowered to 2.
func TestLowerMaxAttemptsFailsExhaustedRows(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, append(phones(2, "A"), Row{Row: 3, Line: 4, Phone: "+447700800001", Sender: "B"})...)
	now := time.Now()
	for attempt := 1; attempt <= 2; attempt++ {
		jobs, err := s.Claim(ctx, "A", now, 2) // rows 1 and 2
		if err != nil || len(jobs) != 2 {
			t.Fatalf("claim %d: %v %v", attempt, jobs, err)
		}
		if err := s.Record(ctx, []engine.Result{
			{Row: 1, Outcome: engine.OutcomeRetry, Code: 131000, Title: "Something went wrong", NextAt: now, At: now},
			{Row: 2, Outcome: engine.OutcomeRelease, NextAt: now, At: now}, // no attempt spent
		}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Settings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st.MaxAttempts = 2
	n, err := s.SaveSettings(ctx, st)
	if err != nil || n != 1 {
		t.Fatalf("SaveSettings failed %d rows (%v), want 1", n, err)
	}
	if got, _ := s.Settings(ctx); got.MaxAttempts != 2 {
		t.Fatalf("stored max attempts = %d, want 2", got.MaxAttempts)
	}
	var rows []ExportRow
	s.Export(ctx, func(r ExportRow) error { rows = append(rows, r); return nil })
	want := []struct {
		status campaign.Status
		title  string
	}{
		{campaign.Failed, "Something went wrong (after 2 attempts; the limit is now 2)"},
		{campaign.Pending, ""},
		{campaign.Pending, ""},
	}
	for i, w := range want {
		if rows[i].Status != w.status || rows[i].ErrorTitle != w.title {
			t.Errorf("row %d: %s %q, want %s %q", i+1, rows[i].Status, rows[i].ErrorTitle, w.status, w.title)
		}
	}
}

// TestImportKeepsEveryColumn mixes the three kinds of row (to send, with an
// id, skipped) over several batches and checks each one reads back whole.
func TestImportKeepsEveryColumn(t *testing.T) {
	ctx := context.Background()
	var rows []Row
	for i := int64(1); i <= 3*importBatch+7; i++ {
		r := Row{Row: i, Line: int(2 * i), Phone: fmt.Sprintf("+4477009%05d", i), Sender: fmt.Sprint(i % 3), Params: []string{"p", fmt.Sprint(i)}}
		switch i % 5 {
		case 1:
			r.ExtID = fmt.Sprintf("id-%d", i)
		case 2:
			r.Skip, r.SkipKind = fmt.Sprintf("invalid phone: %d", i), campaign.SkipInvalid
		}
		rows = append(rows, r)
	}
	s := newStore(t, rows...)
	readsBackWhole(t, s, rows)
	jobs, err := s.Claim(ctx, "1", time.Now(), 1) // the first row to send of sender 1: row 1, with an id
	if err != nil || len(jobs) != 1 || jobs[0].Row != 1 || fmt.Sprint(jobs[0].Params) != "[p 1]" {
		t.Fatalf("claim = %+v, %v; want row 1 with params [p 1]", jobs, err)
	}
}

// TestPolicyIsAllOrNothing: a policy stopped by its context (at whatever
// point: timeouts from very short to long enough) changes no row, and one
// that returns no error reports every row it changed.
func TestPolicyIsAllOrNothing(t *testing.T) {
	const n = 50_000
	s := newStore(t, phones(n, "A")...)
	ctx := context.Background()
	now := time.Now()
	if _, err := s.Claim(ctx, "A", now.Add(-time.Hour), n); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecoverSending(ctx, now); err != nil {
		t.Fatal(err)
	}
	for timeout := 100 * time.Microsecond; ; timeout *= 2 {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		r, err := s.ApplyPolicy(tctx, campaign.Fail, now, now, 5)
		cancel()
		c, cerr := s.Counts(ctx)
		if cerr != nil {
			t.Fatal(cerr)
		}
		if err != nil {
			if r.Total() != 0 || c.InDoubt != n {
				t.Fatalf("stopped after %v (%v), reporting %+v, with counts %+v: a stopped policy must change nothing", timeout, err, r, c)
			}
			continue
		}
		if r.Failed != n || c.Failed != n {
			t.Fatalf("applied within %v: reported %+v, counts %+v", timeout, r, c)
		}
		return
	}
}

// TestDiskFull: a write that fails for want of space says so, so that the
// CLI can tell the operator to free space rather than guess.
func TestDiskFull(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// SQLite's own limit stands in for a full disk: the same SQLITE_FULL.
	if _, err := s.db.Exec(`PRAGMA max_page_count = 16`); err != nil {
		t.Fatal(err)
	}
	_, err = s.Import(context.Background(), rowsOf(phones(20000, "A")...), func() Settings { return Settings{} })
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("import into a full checkpoint: %v, want ErrDiskFull", err)
	}
	if _, err := s.Settings(context.Background()); !errors.Is(err, ErrNoSettings) {
		t.Fatalf("a failed import left settings: %v", err)
	}
}

func TestDefer(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, phones(5, "1")...)
	until := time.Now().Add(30 * time.Minute).Truncate(time.Millisecond)
	n, err := st.Defer(ctx, until)
	if err != nil || n != 5 {
		t.Fatalf("Defer = %d, %v; want 5 rows", n, err)
	}
	if due, ok, err := st.NextDue(ctx, ""); err != nil || !ok || !due.Equal(until) {
		t.Fatalf("NextDue = %v, %v, %v; want %v", due, ok, err, until)
	}
	// A row due later keeps its time.
	if n, err := st.Defer(ctx, until.Add(-time.Minute)); err != nil || n != 0 {
		t.Fatalf("an earlier Defer moved %d rows (%v), want 0", n, err)
	}
}

// TestSMSRowsReport: an SMS row's parts and encoding are stored and
// summed; a row waiting out a throttle backoff counts as retrying (its
// throttled try gave its attempt back); billed parts and charges from
// events are summed once.
func TestSMSRowsReport(t *testing.T) {
	ctx := context.Background()
	s := newStore(t,
		Row{Row: 1, Line: 2, Phone: "+447700900001", Sender: "A", Parts: 3, Encoding: "UCS-2"},
		Row{Row: 2, Line: 3, Phone: "+447700900002", Sender: "A", Parts: 1, Encoding: "GSM-7"},
		Row{Row: 3, Line: 4, Phone: "+447700900003", Sender: "B", Parts: 2, Encoding: "GSM-7"},
		Row{Row: 4, Line: 5, Phone: "+447700900004", Sender: "B", Parts: 9, Encoding: "UCS-2", Skip: "too long", SkipKind: campaign.SkipTooLong},
	)
	now := time.UnixMilli(1_750_000_000_000)
	if _, err := s.Claim(ctx, "A", now, 10); err != nil {
		t.Fatal(err)
	}
	later := now.Add(8 * time.Second)
	if err := s.Record(ctx, []engine.Result{
		{Row: 1, Outcome: engine.OutcomeThrottled, Title: "ThrottlingException", NextAt: later, At: now},
		{Row: 2, Outcome: engine.OutcomeSent, MessageID: "m2", At: now},
	}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Parts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Parts{Planned: 6, Sent: 1, UCS2Rows: 1, Throttled: 1}); p != want {
		t.Fatalf("parts = %+v, want %+v (the skipped row counts nowhere)", p, want)
	}
	r, err := s.Report(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if r.Retrying != 1 || !r.NextRetry.Equal(later) {
		t.Fatalf("retrying %d, next %v; want 1 at %v: a row waiting out a throttle backoff", r.Retrying, r.NextRetry, later)
	}
	pending, err := s.PendingParts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pending["A"] != 3 || pending["B"] != 2 {
		t.Fatalf("pending parts = %v, want A 3, B 2", pending)
	}
	charge := 0.01743
	d := map[int64]reconcile.Delivery{}
	if err := s.Deliveries(ctx, []int64{2}, nil, d); err != nil {
		t.Fatal(err)
	}
	got := d[2]
	got.Status, got.DeliveredAt, got.Price = campaign.Delivered, now.UnixMilli(), campaign.Pricing{Parts: 1, Charge: &charge}
	for range 2 { // saved twice: the first pricing stays, nothing is summed twice
		if err := s.SaveDeliveries(ctx, nil, []reconcile.Delivery{got}, now); err != nil {
			t.Fatal(err)
		}
	}
	if p, err = s.Parts(ctx); err != nil {
		t.Fatal(err)
	}
	if p.BilledRows != 1 || p.BilledParts != 1 || p.Charged != charge {
		t.Fatalf("billed = %+v, want 1 row, 1 part, $%v", p, charge)
	}
}

// TestAttemptsRecord: every request is recorded with the results it led
// to, under the run that made it; a row released without a request is
// not an attempt; the record survives a second run.
func TestAttemptsRecord(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, Row{Row: 1, Line: 2, Phone: "+447700900001", Sender: "A"}, Row{Row: 2, Line: 3, Phone: "+447700900002", Sender: "A"})
	now := time.UnixMilli(1_750_000_000_000)
	run1, err := s.BeginRun(ctx, Run{StartedAt: now, PID: 42, Version: "test", Rate: 80, Senders: []string{"A"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "A", now, 10); err != nil {
		t.Fatal(err)
	}
	at := now.Add(10 * time.Millisecond)
	if err := s.Record(ctx, []engine.Result{
		{Row: 1, Outcome: engine.OutcomeRetry, Code: 131000, Title: "x", NextAt: now, At: at,
			Attempt: engine.Attempt{Row: 1, Sender: "A", At: now, Latency: 1500 * time.Microsecond, Class: "transient", Code: 131000}},
		{Row: 2, Outcome: engine.OutcomeRelease, NextAt: now, At: at}, // never sent
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRun(ctx, run1, at, map[string]float64{"A": 62.5}); err != nil {
		t.Fatal(err)
	}
	run2, err := s.BeginRun(ctx, Run{StartedAt: at, PID: 43, Version: "test", Rate: 80, Senders: []string{"A"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "A", at, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, []engine.Result{
		{Row: 1, Outcome: engine.OutcomeSent, MessageID: "w1", At: at, Attempt: engine.Attempt{Row: 1, Sender: "A", At: at, Latency: 80 * time.Millisecond, Class: engine.Accepted}},
		{Row: 2, Outcome: engine.OutcomeSent, MessageID: "w2", At: at, Attempt: engine.Attempt{Row: 2, Sender: "A", At: at.Add(time.Millisecond), Latency: 90 * time.Millisecond, Class: engine.Accepted}},
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := s.EachAttempt(ctx, func(a AttemptRow) error {
		got = append(got, fmt.Sprintf("run%d row%d %s %s %v #%d", a.Run-run1+1, a.Row, a.At.Sub(now), a.Class, a.Latency, a.Code))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"run1 row1 0s transient 1.5ms #131000", "run2 row1 10ms accepted 80ms #0", "run2 row2 11ms accepted 90ms #0"}
	if !slices.Equal(got, want) {
		t.Fatalf("attempts\n got %q\nwant %q", got, want)
	}
	runs, err := s.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].ID != run1 || !runs[0].EndedAt.Equal(at) || runs[1].ID != run2 || !runs[1].EndedAt.IsZero() || runs[1].PID != 43 {
		t.Fatalf("runs = %+v", runs)
	}
	if runs[0].Learned["A"] != 62.5 || runs[1].Learned != nil {
		t.Fatalf("learned: run 1 %v, run 2 (killed) %v", runs[0].Learned, runs[1].Learned)
	}
}

// TestAttemptErrorNames: an attempt answered with an error without a
// numeric code (AWS names its errors) keeps the provider's name, without
// the note the engine adds to a row's last try; an attempt with a code,
// an accepted one and one without an answer keep none. EachAttempt and
// ScanAttempts read it back.
func TestAttemptErrorNames(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, phones(7, "A")...)
	now := time.UnixMilli(1_750_000_000_000)
	if _, err := s.Claim(ctx, "A", now, 10); err != nil {
		t.Fatal(err)
	}
	attempt := func(row int64, class string, code int) engine.Attempt {
		return engine.Attempt{Row: row, Sender: "A", At: now.Add(time.Duration(row) * time.Millisecond), Latency: time.Millisecond, Class: class, Code: code}
	}
	if err := s.Record(ctx, []engine.Result{
		{Row: 1, Outcome: engine.OutcomeThrottled, Title: "ThrottlingException", NextAt: now, At: now, Attempt: attempt(1, "throttled", 0)},
		{Row: 2, Outcome: engine.OutcomeFailed, Title: "ThrottlingException (throttled 5 times)", Reason: campaign.FailThrottleExhausted, At: now, Attempt: attempt(2, "throttled", 0)},
		{Row: 3, Outcome: engine.OutcomeFailed, Title: "ConflictException: DESTINATION_PHONE_NUMBER_OPTED_OUT", Reason: "opted_out", At: now, Attempt: attempt(3, "permanent", 0)},
		{Row: 4, Outcome: engine.OutcomeFailed, Title: "HTTP 502 (after 5 attempts)", At: now, Attempt: attempt(4, "transient", 0)},
		{Row: 5, Outcome: engine.OutcomeFailed, Code: 131026, Title: "Message undeliverable", At: now, Attempt: attempt(5, "permanent", 131026)},
		{Row: 6, Outcome: engine.OutcomeInDoubt, Title: "no answer: timeout", At: now, Attempt: attempt(6, "in doubt", 0)},
		{Row: 7, Outcome: engine.OutcomeSent, MessageID: "m7", At: now, Attempt: attempt(7, engine.Accepted, 0)},
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"1 ThrottlingException", "2 ThrottlingException", "3 ConflictException: DESTINATION_PHONE_NUMBER_OPTED_OUT",
		"4 HTTP 502", "5 ", "6 ", "7 "}
	var got []string
	if err := s.EachAttempt(ctx, func(a AttemptRow) error {
		got = append(got, fmt.Sprintf("%d %s", a.Row, a.Error))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("EachAttempt errors\n got %q\nwant %q", got, want)
	}
	for _, parts := range []bool{false, true} {
		got = got[:0]
		if err := s.ScanAttempts(ctx, parts, func(a AttemptRow) error {
			got = append(got, fmt.Sprintf("%d %s", a.Row, a.Error))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("ScanAttempts (parts %v) errors\n got %q\nwant %q", parts, got, want)
		}
	}
}

func TestLastSent(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, phones(3, "A")...)
	if _, ok, err := s.LastSent(ctx); ok || err != nil {
		t.Fatalf("nothing sent yet: ok %v, err %v", ok, err)
	}
	now := time.UnixMilli(1_750_000_000_000)
	if _, err := s.Claim(ctx, "A", now, 3); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, []engine.Result{
		{Row: 1, Outcome: engine.OutcomeSent, MessageID: "w1", At: now.Add(2 * time.Second)},
		{Row: 2, Outcome: engine.OutcomeSent, MessageID: "w2", At: now.Add(time.Second)},
		{Row: 3, Outcome: engine.OutcomeFailed, Code: 131026, At: now.Add(3 * time.Second)}, // no success
	}); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.LastSent(ctx); !ok || err != nil || !got.Equal(now.Add(2*time.Second)) {
		t.Fatalf("LastSent = %v %v %v, want the later of two sends", got, ok, err)
	}
}

// TestClaimDueRetriesFirst: a retry that is due is claimed before rows
// never tried, so retries ride in the main flow instead of waiting for
// its end; one not due yet waits.
func TestClaimDueRetriesFirst(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, phones(6, "A")...)
	now := time.UnixMilli(1_750_000_000_000)
	jobs, err := s.Claim(ctx, "A", now, 2)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	if err := s.Record(ctx, []engine.Result{
		{Row: 1, Outcome: engine.OutcomeRetry, Code: 131000, Title: "x", NextAt: now.Add(time.Second), At: now},
		{Row: 2, Outcome: engine.OutcomeRetry, Code: 131000, Title: "x", NextAt: now.Add(time.Hour), At: now},
	}); err != nil {
		t.Fatal(err)
	}
	jobs, err = s.Claim(ctx, "A", now.Add(2*time.Second), 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, j := range jobs {
		got = append(got, j.Row)
	}
	if want := []int64{1, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("claimed rows %v, want %v (the due retry first, the one not due left)", got, want)
	}
}

// TestWAMIDIndexDroppedWhileSending: DropWAMIDIndex drops the index of
// message ids and IndexWAMIDs builds it again, each idempotent; rows are
// found by message id with it or without.
func TestWAMIDIndexDroppedWhileSending(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, phones(3, "A")...)
	now := time.UnixMilli(1_750_000_000_000)
	jobs, err := s.Claim(ctx, "A", now, 3)
	if err != nil {
		t.Fatal(err)
	}
	indexed := func() bool {
		t.Helper()
		var n int
		if err := s.db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'recipients_wamid'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	found := func() {
		t.Helper()
		out := map[int64]reconcile.Delivery{}
		if err := s.Deliveries(ctx, nil, []string{"w1", "w3"}, out); err != nil {
			t.Fatal(err)
		}
		if len(out) != 2 || out[1].MessageID != "w1" || out[3].MessageID != "w3" {
			t.Fatalf("rows found by message id: %+v", out)
		}
	}
	for range 2 {
		if err := s.DropMessageIDIndex(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if indexed() {
		t.Fatal("the message id index is still there")
	}
	var res []engine.Result
	for _, j := range jobs {
		res = append(res, engine.Result{Row: j.Row, Outcome: engine.OutcomeSent, MessageID: fmt.Sprint("w", j.Row), At: now})
	}
	if err := s.Record(ctx, res); err != nil {
		t.Fatal(err)
	}
	found()
	for range 2 {
		if err := s.IndexMessageIDs(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !indexed() {
		t.Fatal("no message id index after IndexWAMIDs")
	}
	found()
}
