package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/reconcile"
	"github.com/bulksend/bulksend/internal/store"
)

// t0 is when the fixture's first run starts.
var t0 = time.UnixMilli(1_750_000_000_000).UTC()

func at(d time.Duration) time.Time { return t0.Add(d) }

const (
	ms = time.Millisecond
	s  = time.Second
)

func rowsOf(rows ...store.Row) func() (store.Row, error) {
	i := 0
	return func() (store.Row, error) {
		if i == len(rows) {
			return store.Row{}, io.EOF
		}
		i++
		return rows[i-1], nil
	}
}

// attempt is one request of the fixture and what it led to.
func attempt(row int64, sender string, left, latency time.Duration, class string, code int) engine.Attempt {
	return engine.Attempt{Row: row, Sender: sender, At: at(left), Latency: latency, Class: class, Code: code}
}

// fixture is a campaign of 8 rows, 2 numbers, 2 runs and a reconcile,
// with every figure known:
//
//	row 1 A  run 1: accepted                            → read (marketing, billable)
//	row 2 A  run 1: throttled 130429; run 2: accepted    → delivered (marketing, billable)
//	row 3 A  run 2: permanent 131026                     → failed
//	row 4 B  run 1: transient 131000; run 2: accepted    → failed after acceptance 131049 (utility)
//	row 5 B  run 1: in doubt                             → in doubt
//	row 6 B  run 2: accepted                             → sent
//	row 7    skipped: invalid;  row 8: skipped: duplicate
//
// Run 1 (rate 10) is killed: no end recorded, last answer at 7 s. Run 2
// (rate 20) runs from 20 s to 25 s.
func fixture(t testing.TB) (*store.Store, string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.bulksend.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	row := func(n int64, sender string) store.Row {
		return store.Row{Row: n, Line: int(n) + 1, Phone: fmt.Sprintf("+4474000000%02d", n), Sender: sender, Params: []string{"p"}}
	}
	skipped := func(n int64, reason string, kind campaign.SkipKind) store.Row {
		r := row(n, "A")
		r.Skip, r.SkipKind = reason, kind
		return r
	}
	if _, err := st.Import(ctx, rowsOf(row(1, "A"), row(2, "A"), row(3, "A"), row(4, "B"), row(5, "B"), row(6, "B"),
		skipped(7, "invalid phone number: too short", campaign.SkipInvalid), skipped(8, "duplicate of row 1", campaign.SkipDuplicate)),
		func() store.Settings {
			return store.Settings{CampaignID: "spring", Template: "spring_sale", Lang: "en_US", Category: "marketing", Rate: 20, MaxAttempts: 5, CreatedAt: t0.Add(-time.Minute)}
		}); err != nil {
		t.Fatal(err)
	}
	claim := func(sender string, now time.Time, n int) {
		t.Helper()
		jobs, err := st.Claim(ctx, sender, now, n)
		if err != nil || len(jobs) != n {
			t.Fatalf("claim %s: %d jobs, %v", sender, len(jobs), err)
		}
	}
	record := func(res ...engine.Result) {
		t.Helper()
		for i := range res {
			res[i].Row, res[i].At = res[i].Attempt.Row, res[i].Attempt.At.Add(res[i].Attempt.Latency)
		}
		if err := st.Record(ctx, res); err != nil {
			t.Fatal(err)
		}
	}
	// Run 1, killed.
	if _, err := st.BeginRun(ctx, store.Run{StartedAt: t0, PID: 1 << 30, Version: "v1.0.0", Rate: 10, Senders: []string{"A", "B"}}); err != nil {
		t.Fatal(err)
	}
	claim("A", t0, 2)
	claim("B", t0, 2)
	record(
		engine.Result{Outcome: engine.OutcomeSent, MessageID: "w1", Attempt: attempt(1, "A", 500*ms, 100*ms, engine.Accepted, 0)},
		engine.Result{Outcome: engine.OutcomeThrottled, Code: 130429, Title: "Rate limit hit", NextAt: at(20 * s), Attempt: attempt(2, "A", 1200*ms, 200*ms, "throttled", 130429)},
		engine.Result{Outcome: engine.OutcomeRetry, Code: 131000, Title: "Something went wrong", NextAt: at(20 * s), Attempt: attempt(4, "B", 1500*ms, 300*ms, "transient", 131000)},
		engine.Result{Outcome: engine.OutcomeInDoubt, Title: "request timed out", Attempt: attempt(5, "B", 2*s, 5*s, "in doubt", 0)},
	)
	// Run 2, ended.
	run2, err := st.BeginRun(ctx, store.Run{StartedAt: at(20 * s), PID: 1<<30 + 1, Version: "v1.0.1", Rate: 20, Senders: []string{"A", "B"}})
	if err != nil {
		t.Fatal(err)
	}
	claim("A", at(20*s), 2)
	claim("B", at(20*s), 2)
	record(
		engine.Result{Outcome: engine.OutcomeSent, MessageID: "w2", Attempt: attempt(2, "A", 20500*ms, 100*ms, engine.Accepted, 0)},
		engine.Result{Outcome: engine.OutcomeSent, MessageID: "w4", Attempt: attempt(4, "B", 21*s, 150*ms, engine.Accepted, 0)},
		engine.Result{Outcome: engine.OutcomeFailed, Code: 131026, Title: "Message undeliverable", Attempt: attempt(3, "A", 22*s, 120*ms, "permanent", 131026)},
		engine.Result{Outcome: engine.OutcomeSent, MessageID: "w6", Attempt: attempt(6, "B", 24200*ms, 110*ms, engine.Accepted, 0)},
	)
	if err := st.EndRun(ctx, run2, at(25*s), nil); err != nil {
		t.Fatal(err)
	}
	// Reconcile: what status webhooks said.
	yes, no := true, false
	sent := func(row int64) int64 {
		switch row {
		case 1:
			return at(600 * ms).UnixMilli()
		case 2:
			return at(20600 * ms).UnixMilli()
		}
		return at(21150 * ms).UnixMilli()
	}
	if err := st.SaveDeliveries(ctx, []reconcile.Delivery{
		{Row: 4, Status: campaign.Failed, MessageID: "w4", Code: 131049, Title: "This message was not delivered to maintain healthy ecosystem engagement.",
			Reason: campaign.FailMarketingCap, SentAt: sent(4), Price: campaign.Pricing{Category: "utility", Billable: &no}},
	}, []reconcile.Delivery{
		{Row: 1, Status: campaign.Read, SentAt: sent(1), DeliveredAt: sent(1) + 2000, ReadAt: sent(1) + 10000, Price: campaign.Pricing{Category: "marketing", Type: "regular", Billable: &yes}},
		{Row: 2, Status: campaign.Delivered, SentAt: sent(2), DeliveredAt: sent(2) + 4000, Price: campaign.Pricing{Category: "marketing", Type: "regular", Billable: &yes}},
	}, at(30*s)); err != nil {
		t.Fatal(err)
	}
	return st, path
}

func TestGather(t *testing.T) {
	st, _ := fixture(t)
	r, err := Gather(context.Background(), st, at(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s\n got %+v\nwant %+v", what, got, want)
		}
	}
	check("campaign", r.Campaign, Campaign{ID: "spring", Channel: campaign.WhatsApp, Template: "spring_sale", Lang: "en_US", Category: "marketing",
		API: "messages", Senders: []string{"A", "B"}, Rows: 8, Runs: 2, Rate: 20, RateUnit: "messages/s", CreatedAt: t0.Add(-time.Minute)})
	check("counts", r.Counts, campaign.Counts{Total: 8, InDoubt: 1, Sent: 1, Delivered: 1, Read: 1, Failed: 2, Skipped: 2})
	check("funnel", r.Funnel, store.Funnel{Accepted: 4, Delivered: 2, Read: 1, FailedAfterAccept: 1, Unconfirmed: 1})
	check("time to delivered", r.TimeToDelivered, Quantiles{N: 2, P50: 4, P90: 4, P99: 4})
	check("time to read", r.TimeToRead, Quantiles{N: 1, P50: 10, P90: 10, P99: 10})
	check("skipped", r.Skipped, []Skip{
		{Kind: campaign.SkipDuplicate, Rows: 1, Line: 9, Reason: "duplicate of row 1"},
		{Kind: campaign.SkipInvalid, Rows: 1, Line: 8, Reason: "invalid phone number: too short"},
	})
	check("failed by reason", r.FailedByReason, map[string]int64{campaign.FailMarketingCap: 1})
	check("pricing", r.Pricing, Pricing{Categories: []Category{{"marketing", 2}, {"utility", 1}}, Billable: 2})
	check("parts", r.Parts, (*store.Parts)(nil))

	errs := slices.Clone(r.Errors)
	slices.SortFunc(errs, func(a, b store.ErrorCount) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	check("errors", errs, []store.ErrorCount{
		{Status: campaign.Failed, Code: 131026, Title: "Message undeliverable", Rows: 1},
		{Status: campaign.Failed, Code: 131049, Title: "This message was not delivered to maintain healthy ecosystem engagement.", Rows: 1},
		{Status: campaign.InDoubt, Code: 0, Title: "request timed out", Rows: 1},
	})
	check("attempts", r.Attempts, Attempts{Total: 8,
		ByClass: []ClassCount{{"accepted", 4}, {"throttled", 1}, {"transient", 1}, {"permanent", 1}, {"in doubt", 1}},
		ByCode: []CodeCount{
			{Code: 130429, Class: "throttled", Attempts: 1}, // its row was sent later: no row keeps its title
			{Code: 131000, Class: "transient", Attempts: 1},
			{Code: 131026, Class: "permanent", Title: "Message undeliverable", Attempts: 1},
		}})

	lastAnswer1, end2 := at(7*s), at(25*s)
	first1, first2, last2 := at(500*ms), at(20500*ms), at(24310*ms)
	start2 := at(20 * s)
	check("runs", r.Runs, []Run{
		{ID: 1, StartedAt: t0, End: RunKilled, Version: "v1.0.0", PID: 1 << 30, Rate: 10, Senders: []string{"A", "B"},
			Attempts: 4, Accepted: 1, Throttled: 1, Other: 2, FirstAttempt: &first1, LastAnswer: &lastAnswer1},
		{ID: 2, StartedAt: start2, EndedAt: &end2, End: RunEnded, Version: "v1.0.1", PID: 1<<30 + 1, Rate: 20, Senders: []string{"A", "B"},
			Attempts: 4, Accepted: 3, Throttled: 0, Other: 1, FirstAttempt: &first2, LastAnswer: &last2},
	})
	// 12 s of runs: buckets of 1 s. Run 1 lasts to its last answer (7 s),
	// run 2 to its recorded end (5 s).
	check("rate", r.Rate, Series{BucketSeconds: 1, Unit: "messages/s", Segments: []Segment{
		{Run: 1, Start: t0, End: at(7 * s), Rate: 10, Senders: []SenderSeries{
			{Sender: "A", Accepted: []int64{1, 0, 0, 0, 0, 0, 0}, Throttled: []int64{0, 1, 0, 0, 0, 0, 0}},
			{Sender: "B", Accepted: []int64{0, 0, 0, 0, 0, 0, 0}, Throttled: []int64{0, 0, 0, 0, 0, 0, 0}},
		}},
		{Run: 2, Start: at(20 * s), End: at(25 * s), Rate: 20, Senders: []SenderSeries{
			{Sender: "A", Accepted: []int64{1, 0, 0, 0, 0}, Throttled: []int64{0, 0, 0, 0, 0}},
			{Sender: "B", Accepted: []int64{0, 1, 0, 0, 1}, Throttled: []int64{0, 0, 0, 0, 0}},
		}},
	}})
	check("senders", r.Senders, []Sender{
		{Sender: "A", Counts: campaign.Counts{Total: 5, Delivered: 1, Read: 1, Failed: 1, Skipped: 2}, Attempts: 4, Accepted: 2, Throttled: 1, MeanRate: 2.0 / 12, PeakRate: 1},
		{Sender: "B", Counts: campaign.Counts{Total: 3, InDoubt: 1, Sent: 1, Failed: 1}, Attempts: 4, Accepted: 2, MeanRate: 2.0 / 12, PeakRate: 1},
	})
	// Latencies 100 100 110 120 150 200 300 5000 ms: p50 is the 5th
	// (index ⌊0.5·8⌋), p90 and p99 the 8th. Bins of 200 ms (5000 × 1.25 /
	// 40 = 156 ms, rounded up to 1-2-5) up to the one holding the max.
	wantBins := make([]Bin, 26)
	for i := range wantBins {
		wantBins[i] = Bin{From: float64(200 * i), To: float64(200 * (i + 1))}
	}
	wantBins[0].Attempts, wantBins[1].Attempts, wantBins[25].Attempts = 5, 2, 1
	check("latency", r.Latency, Latency{Attempts: 8, P50: 150, P90: 5000, P99: 5000, Max: 5000, Histogram: wantBins})

	// The JSON has the figures under their documented names.
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"counts":{"total":8,`, `"funnel":{"accepted":4,"delivered":2,"read":1,"failed_after_accept":1,"unconfirmed":1,"replied":0}`,
		`"time_to_delivered":{"n":2,"p50_seconds":4,`, `"end":"killed"`, `"bucket_seconds":1,"unit":"messages/s"`, `"p50_ms":150,`,
		`"by_class":[{"class":"accepted","attempts":4}`, `{"kind":"invalid","rows":1,"example_line":8,"example_reason":"invalid phone number: too short"}`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("JSON lacks %s:\n%s", want, b)
		}
	}
}

// TestGatherRunning: the last run of a checkpoint whose lock its process
// holds is running, not killed.
func TestGatherRunning(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.bulksend.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Import(ctx, rowsOf(store.Row{Row: 1, Line: 2, Phone: "+447400000001", Sender: "A"}), func() store.Settings {
		return store.Settings{CampaignID: "c", Template: "t", MaxAttempts: 5}
	}); err != nil {
		t.Fatal(err)
	}
	lock, err := store.Acquire(path, "run")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if _, err := st.BeginRun(ctx, store.Run{StartedAt: t0, PID: os.Getpid(), Version: "v", Rate: 80, Senders: []string{"A"}}); err != nil {
		t.Fatal(err)
	}
	r, err := Gather(ctx, st, at(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 1 || r.Runs[0].End != RunRunning || r.Campaign.Running == "" {
		t.Fatalf("runs %+v, running %q: want the run running", r.Runs, r.Campaign.Running)
	}
	var page bytes.Buffer
	if err := Render(&page, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "a run is sending now") || !strings.Contains(page.String(), "▶ running") {
		t.Error("the page does not say a run is sending")
	}
}

// TestGatherSMS: an SMS campaign's rate is in parts per second (each
// accepted attempt counts its row's parts), and its parts are reported.
func TestGatherSMS(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "c.bulksend.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Import(ctx, rowsOf(
		store.Row{Row: 1, Line: 2, Phone: "+447400000001", Sender: "+12065550100", Parts: 3, Encoding: "GSM-7"},
		store.Row{Row: 2, Line: 3, Phone: "+447400000002", Sender: "+12065550100", Parts: 1, Encoding: "UCS-2"},
	), func() store.Settings {
		return store.Settings{CampaignID: "c", Channel: "sms", Text: "Hi {{name}}", Rate: 10, MaxAttempts: 5}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.BeginRun(ctx, store.Run{StartedAt: t0, PID: 1 << 30, Version: "v", Rate: 10, Senders: []string{"+12065550100"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, "+12065550100", t0, 2); err != nil {
		t.Fatal(err)
	}
	if err := st.Record(ctx, []engine.Result{
		{Row: 1, Outcome: engine.OutcomeSent, MessageID: "m1", At: at(1 * s), Attempt: attempt(1, "+12065550100", 100*ms, 50*ms, engine.Accepted, 0)},
		{Row: 2, Outcome: engine.OutcomeSent, MessageID: "m2", At: at(1 * s), Attempt: attempt(2, "+12065550100", 300*ms, 50*ms, engine.Accepted, 0)},
	}); err != nil {
		t.Fatal(err)
	}
	r, err := Gather(ctx, st, at(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if r.Campaign.Channel != campaign.SMS || r.Campaign.Text != "Hi {{name}}" || r.Campaign.Template != "" || r.Campaign.RateUnit != "parts/s" || r.Rate.Unit != "parts/s" {
		t.Errorf("campaign %+v, unit %q", r.Campaign, r.Rate.Unit)
	}
	if got := r.Rate.Segments[0].Senders[0].Accepted; !slices.Equal(got, []int64{4}) {
		t.Errorf("accepted parts per bucket %v, want [4]", got)
	}
	if r.Parts == nil || r.Parts.Planned != 4 || r.Parts.Sent != 4 || r.Parts.UCS2Rows != 1 {
		t.Errorf("parts %+v", r.Parts)
	}
	var page bytes.Buffer
	if err := Render(&page, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SMS (AWS End User Messaging)", "Hi {{name}}", "SMS message parts", "parts/s"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the SMS page lacks %q", want)
		}
	}
}

// TestGatherErrorNames: an SMS campaign's errors have no code, only the
// name AWS gives them: the attempts are counted by that name, in the JSON
// and in the page's error table.
func TestGatherErrorNames(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "c.bulksend.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const from = "+12065550100"
	if _, err := st.Import(ctx, rowsOf(
		store.Row{Row: 1, Line: 2, Phone: "+447400000001", Sender: from, Parts: 1, Encoding: "GSM-7"},
		store.Row{Row: 2, Line: 3, Phone: "+447400000002", Sender: from, Parts: 1, Encoding: "GSM-7"},
	), func() store.Settings {
		return store.Settings{CampaignID: "c", Channel: "sms", Text: "Hi", Rate: 10, MaxAttempts: 5}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.BeginRun(ctx, store.Run{StartedAt: t0, PID: 1 << 30, Version: "v", Rate: 10, Senders: []string{from}}); err != nil {
		t.Fatal(err)
	}
	const opted = "ConflictException: DESTINATION_PHONE_NUMBER_OPTED_OUT"
	for i, res := range [][]engine.Result{
		{
			{Row: 1, Outcome: engine.OutcomeThrottled, Title: "ThrottlingException", NextAt: t0, At: at(1 * s), Attempt: attempt(1, from, 100*ms, 50*ms, "throttled", 0)},
			{Row: 2, Outcome: engine.OutcomeFailed, Title: opted, Reason: "opted_out", At: at(1 * s), Attempt: attempt(2, from, 200*ms, 50*ms, "permanent", 0)},
		},
		{{Row: 1, Outcome: engine.OutcomeThrottled, Title: "ThrottlingException", NextAt: t0, At: at(2 * s), Attempt: attempt(1, from, 1100*ms, 50*ms, "throttled", 0)}},
		{{Row: 1, Outcome: engine.OutcomeSent, MessageID: "m1", At: at(3 * s), Attempt: attempt(1, from, 2100*ms, 50*ms, engine.Accepted, 0)}},
	} {
		if _, err := st.Claim(ctx, from, at(time.Duration(i)*s), 2); err != nil {
			t.Fatal(err)
		}
		if err := st.Record(ctx, res); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Gather(ctx, st, at(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := []CodeCount{
		{Error: "ThrottlingException", Class: "throttled", Title: "ThrottlingException", Attempts: 2},
		{Error: opted, Class: "permanent", Title: opted, Attempts: 1},
	}
	if !reflect.DeepEqual(r.Attempts.ByCode, want) {
		t.Errorf("attempts by code\n got %+v\nwant %+v", r.Attempts.ByCode, want)
	}
	b, err := json.Marshal(r.Attempts)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"by_code":[{"code":0,"error":"ThrottlingException","class":"throttled","title":"ThrottlingException","attempts":2},`; !bytes.Contains(b, []byte(want)) {
		t.Errorf("JSON lacks %s:\n%s", want, b)
	}
	var page bytes.Buffer
	if err := Render(&page, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<td>ThrottlingException</td><td class="n" data-figure="attempts.error.ThrottlingException.throttled" data-value="2">`,
		`<td>` + opted + `</td><td class="n" data-figure="attempts.error.` + opted + `.permanent" data-value="1">`} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

// TestEmptyCampaign: a checkpoint no run has sent from has a report.
func TestEmptyCampaign(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "c.bulksend.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Import(ctx, rowsOf(store.Row{Row: 1, Line: 2, Phone: "+447400000001", Sender: "A"}), func() store.Settings {
		return store.Settings{CampaignID: "c", Template: "t", MaxAttempts: 5}
	}); err != nil {
		t.Fatal(err)
	}
	r, err := Gather(ctx, st, t0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Counts.Pending != 1 || len(r.Runs) != 0 || r.Attempts.Total != 0 || len(r.Latency.Histogram) != 0 {
		t.Errorf("report %+v", r)
	}
	var page bytes.Buffer
	if err := Render(&page, r); err != nil {
		t.Fatal(err)
	}
	root, err := parseHTML(page.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, page.Bytes(), root)
	for _, want := range []string{"No run has sent yet", "No attempt recorded", "No row was skipped", "No pricing recorded"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	// Lists are empty, never null: a script can range over them.
	for _, want := range []string{`"errors":[]`, `"skipped":[]`, `"by_class":[]`, `"by_code":[]`, `"histogram":[]`, `"categories":[]`,
		`"runs":[]`, `"segments":[]`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
}

func TestRenderMatchesCheckpoint(t *testing.T) {
	st, path := fixture(t)
	r, err := Gather(context.Background(), st, at(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := Render(&page, r); err != nil {
		t.Fatal(err)
	}
	checkAgainstCheckpoint(t, page.Bytes(), path)
	// The header and sections a reader looks for.
	for _, want := range []string{"Campaign <code>spring</code>", "<code>spring_sale</code> / en_US (marketing)", "✕ killed",
		"Send rate per number", "Runs", "Outcomes", "Error codes", "Latency", "Delivery", "Skipped rows", "Pricing",
		"line 8: invalid phone number: too short", "configured 10 msg/s", "configured 20 msg/s", "p50 150 ms", "@media print"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

func TestDaysSpanned(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	for _, tc := range []struct {
		first, last time.Time
		want        int
	}{
		{time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 2, 23, 59, 0, 0, time.UTC), 1},
		{time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC), time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC), 2},
		{time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), time.Date(2026, 12, 8, 12, 0, 0, 0, time.UTC), 8},
		// Days are UTC's, whatever the zone a time is read in: 20:00 in
		// New York on the 2nd is the 3rd in UTC.
		{time.Date(2026, 12, 2, 20, 0, 0, 0, ny), time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC), 1},
	} {
		if got := DaysSpanned(tc.first, tc.last); got != tc.want {
			t.Errorf("DaysSpanned(%v, %v) = %d, want %d", tc.first, tc.last, got, tc.want)
		}
	}
}
