package reconcile_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/reconcile"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp/webhook"
)

const (
	testCampaign = "spring"
	ourNumber    = "106540352242922"
	base         = 1750030000 // unix seconds: "@n" in tests is base+n
)

// at is base+sec as an instant; fractional seconds are allowed.
func at(sec float64) time.Time {
	return time.UnixMilli(base*1000 + int64(sec*1000))
}

// state is what a row ends in before reconcile.
type state struct {
	Status campaign.Status
	WAMID  string
	Code   int
	Title  string
	SentAt time.Time
}

// seed is the state of one row before reconcile.
type seed struct {
	skip     bool      // imported as skipped
	attempts int       // claims made (0: a pending row never claimed)
	at       time.Time // instant of the claims; zero means at(0)
	held     bool      // sent (s.Status), and held back by WhatsApp
	s        state
}

func pending() seed { return seed{s: state{Status: campaign.Pending}} }
func skipped() seed { return seed{skip: true} }
func inDoubt(t time.Time, attempts int) seed {
	return seed{attempts: attempts, at: t, s: state{Status: campaign.InDoubt, Title: "context deadline exceeded"}}
}

// sendingRow is a row a stopped run left sending, claimed at t.
func sendingRow(t time.Time) seed {
	return seed{attempts: 1, at: t, s: state{Status: campaign.Sending}}
}
func sentRow(wamid string, sentAt float64) seed {
	return seed{attempts: 1, s: state{Status: campaign.Sent, WAMID: wamid, SentAt: at(sentAt)}}
}
func failedRow(code int, title string) seed {
	return seed{attempts: 1, s: state{Status: campaign.Failed, Code: code, Title: title}}
}

// checkpoint creates a checkpoint holding rows (row i+1 is rows[i]) of
// campaign testCampaign with max_attempts 3.
func checkpoint(t testing.TB, rows []seed) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	i := 0
	_, err = st.Import(ctx, func() (store.Row, error) {
		if i == len(rows) {
			return store.Row{}, io.EOF
		}
		i++
		r := store.Row{Row: int64(i), Line: i + 1, Phone: fmt.Sprintf("+1555%07d", i), Sender: ourNumber}
		if rows[i-1].skip {
			r.Skip, r.SkipKind = "excluded", campaign.SkipExcluded
		}
		return r, nil
	}, func() store.Settings { return store.Settings{CampaignID: testCampaign, MaxAttempts: 3} })
	if err != nil {
		t.Fatal(err)
	}
	// Rows are claimed one by one in row order: each Claim takes the
	// lowest due pending row, which is the current one.
	var final []reconcile.Delivery
	for i, sd := range rows {
		row := int64(i + 1)
		if sd.skip {
			continue
		}
		when := sd.at
		if when.IsZero() {
			when = at(0)
		}
		if sd.attempts == 0 {
			claim(t, st, row, when)
			record(t, st, engine.Result{Row: row, Outcome: engine.OutcomeRelease, NextAt: at(1e6), At: when})
			continue
		}
		for n := 1; n <= sd.attempts; n++ {
			claim(t, st, row, when)
			if n == sd.attempts && sd.s.Status == campaign.Sending {
				break // its answer never recorded
			}
			res := engine.Result{Row: row, Outcome: engine.OutcomeInDoubt, At: when, Title: sd.s.Title, Code: sd.s.Code}
			if n < sd.attempts {
				res.Outcome, res.NextAt = engine.OutcomeRetry, time.Unix(0, 0)
			}
			if n == sd.attempts && sd.s.Status == campaign.Pending {
				res.Outcome, res.NextAt = engine.OutcomeRetry, at(1e6)
			}
			if n == sd.attempts && sd.held {
				res = engine.Result{Row: row, Outcome: engine.OutcomeSent, MessageID: sd.s.WAMID, Held: true, At: when}
			}
			record(t, st, res)
		}
		if s := sd.s; s.Status != campaign.InDoubt && s.Status != campaign.Pending && s.Status != campaign.Sending {
			final = append(final, reconcile.Delivery{Row: row, Status: s.Status, MessageID: s.WAMID, Code: s.Code, Title: s.Title, SentAt: unixMS(s.SentAt)})
		}
	}
	if err := st.SaveDeliveries(ctx, final, nil, at(0)); err != nil {
		t.Fatal(err)
	}
	return st
}

func claim(t testing.TB, st *store.Store, row int64, when time.Time) {
	t.Helper()
	jobs, err := st.Claim(context.Background(), ourNumber, when, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Row != row {
		t.Fatalf("claim: got %+v, want row %d", jobs, row)
	}
}

func record(t testing.TB, st *store.Store, r engine.Result) {
	t.Helper()
	if err := st.Record(context.Background(), []engine.Result{r}); err != nil {
		t.Fatal(err)
	}
}

// status is one status webhook entry of testCampaign's row (no callback
// data if row is 0) at base+sec.
func status(kind, wamid string, sec float64, row int64) webhook.Status {
	s := webhook.Status{WAMID: wamid, Status: kind, Timestamp: at(sec), RecipientID: "15550001234"}
	if row > 0 {
		s.CallbackData = campaign.Ref{Campaign: testCampaign, Row: row}.String()
	}
	return s
}

func withError(s webhook.Status, code int, title string) webhook.Status {
	s.ErrorCode, s.ErrorTitle = code, title
	return s
}

func withCallback(s webhook.Status, data string) webhook.Status {
	s.CallbackData = data
	return s
}

// from marks s as received for sender number pnid.
func from(s webhook.Status, pnid string) webhook.Status {
	s.PhoneNumberID = pnid
	return s
}

// ndjson is a webhook log with one body per status, each for its
// PhoneNumberID (ourNumber if empty).
func ndjson(ss ...webhook.Status) []byte {
	var b bytes.Buffer
	for _, s := range ss {
		pn := s.PhoneNumberID
		if pn == "" {
			pn = ourNumber
		}
		b.Write(webhook.Body(pn, s))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// apply reconciles st with the logs, as `bulksend reconcile` does: the
// campaign is testCampaign and its max_attempts 3 unless opt says so.
func apply(ctx context.Context, st *store.Store, opt reconcile.Options, logs ...reconcile.Source) (reconcile.Summary, error) {
	if opt.CampaignID == "" {
		opt.CampaignID = testCampaign
	}
	if opt.MaxAttempts == 0 {
		opt.MaxAttempts = 3
	}
	rc, err := reconcile.New(st, opt)
	if err != nil {
		return reconcile.Summary{}, err
	}
	for i, l := range logs {
		if err := rc.Read(ctx, fmt.Sprintf("log%d", i+1), l); err != nil {
			return reconcile.Summary{}, err
		}
	}
	return rc.Finish(ctx)
}

// source is an NDJSON log as reconcile reads it.
func source(log []byte) reconcile.Source {
	return webhook.Statuses(webhook.NewReader(bytes.NewReader(log)))
}

func applyLog(t testing.TB, st *store.Store, log []byte, opt reconcile.Options) reconcile.Summary {
	t.Helper()
	sum, err := apply(context.Background(), st, opt, source(log))
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	checkInvariant(t, sum)
	return sum
}

func checkInvariant(t testing.TB, s reconcile.Summary) {
	t.Helper()
	if s.Events != s.Matched+s.Foreign+s.Unknown {
		t.Errorf("events %d != matched %d + foreign %d + unknown %d", s.Events, s.Matched, s.Foreign, s.Unknown)
	}
}

// export returns every stored field of rows 1..n.
func export(t testing.TB, st *store.Store, n int) []store.ExportRow {
	t.Helper()
	var out []store.ExportRow
	if err := st.Export(context.Background(), func(r store.ExportRow) error {
		if r.Row <= int64(n) {
			out = append(out, r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(out) != n {
		t.Fatalf("%d rows, want %d", len(out), n)
	}
	return out
}

// rowsOf returns the states of rows 1..n, briefly.
func rowsOf(t testing.TB, st *store.Store, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i, r := range export(t, st, n) {
		out[i] = brief(r)
	}
	return out
}

// brief is a state in one line: status, wamid, code and title, then the
// times relative to base, and the attempts.
func brief(s store.ExportRow) string {
	var b strings.Builder
	b.WriteString(string(s.Status))
	if s.MessageID != "" {
		b.WriteString(" " + s.MessageID)
	}
	if s.ErrorCode != 0 {
		fmt.Fprintf(&b, " #%d", s.ErrorCode)
	}
	if s.ErrorTitle != "" {
		fmt.Fprintf(&b, " %q", s.ErrorTitle)
	}
	for _, f := range []struct {
		name string
		t    time.Time
	}{{"sent", s.SentAt}, {"delivered", s.DeliveredAt}, {"read", s.ReadAt}} {
		if !f.t.IsZero() {
			fmt.Fprintf(&b, " %s@%g", f.name, float64(f.t.UnixMilli()-base*1000)/1000)
		}
	}
	return b.String()
}

// full is every stored field of every row, for comparing end states.
func full(t testing.TB, st *store.Store, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i, s := range export(t, st, n) {
		out[i] = fmt.Sprintf("%d %s %s %q %d %d %d %d %d %d %q %q %v %s", s.Row, s.Status, s.MessageID, s.ErrorTitle, s.ErrorCode,
			unixMS(s.SentAt), unixMS(s.DeliveredAt), unixMS(s.ReadAt), s.Attempts, unixMS(s.AttemptedAt), s.Sender,
			s.FailReason, s.Held, pricing(s.Price))
	}
	return out
}

// pricing is p in one word: category/type/billable, "-" for a part not
// said.
func pricing(p campaign.Pricing) string {
	b := "-"
	if p.Billable != nil {
		b = fmt.Sprint(*p.Billable)
	}
	or := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	return or(p.Category) + "/" + or(p.Type) + "/" + b
}

func unixMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
