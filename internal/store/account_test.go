package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/reconcile"
)

// Tests of what Meta's account rules add to a row (issue 11): held sends,
// failure reasons and pricing.

var (
	yes, no   = true, false
	marketing = campaign.Pricing{Category: "marketing", Type: "regular", Billable: &yes}
	utility   = campaign.Pricing{Category: "utility", Type: "free_customer_service", Billable: &no}
)

// recorded makes a checkpoint of len(results) rows of sender A, claims
// them all and records results, the i-th for row i+1.
func recorded(t *testing.T, results ...engine.Result) *Store {
	t.Helper()
	ctx := context.Background()
	s := newStore(t, phones(len(results), "A")...)
	now := time.UnixMilli(1_750_000_000_000)
	if jobs, err := s.Claim(ctx, "A", now, len(results)); err != nil || len(jobs) != len(results) {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	for i := range results {
		results[i].Row, results[i].At = int64(i+1), now
	}
	if err := s.Record(ctx, results); err != nil {
		t.Fatal(err)
	}
	return s
}

// columns3 is what migration 3 added to a row, as stored: held, then
// fail_reason, pricing_category, pricing_type and billable, "NULL" for NULL.
func columns3(t *testing.T, s *Store, row int64) string {
	t.Helper()
	var held int
	var reason, category, typ sql.NullString
	var billable sql.NullInt64
	err := s.db.QueryRow(`SELECT held, fail_reason, pricing_category, pricing_type, billable FROM recipients WHERE row = ?`, row).
		Scan(&held, &reason, &category, &typ, &billable)
	if err != nil {
		t.Fatal(err)
	}
	v := func(ok bool, s any) string {
		if !ok {
			return "NULL"
		}
		return fmt.Sprint(s)
	}
	return fmt.Sprintf("%d %s %s %s %s", held, v(reason.Valid, reason.String), v(category.Valid, category.String),
		v(typ.Valid, typ.String), v(billable.Valid, billable.Int64))
}

func TestRecordHeldAndReason(t *testing.T) {
	tests := []struct {
		name   string
		result engine.Result
		status campaign.Status
		want   string // columns3
	}{
		{"sent", engine.Result{Outcome: engine.OutcomeSent, MessageID: "w1"}, campaign.Sent, "0 NULL NULL NULL NULL"},
		{"sent and held", engine.Result{Outcome: engine.OutcomeSent, MessageID: "w2", Held: true}, campaign.Sent, "1 NULL NULL NULL NULL"},
		{"failed with a reason", engine.Result{Outcome: engine.OutcomeFailed, Code: 131049, Title: "cap", Reason: campaign.FailMarketingCap},
			campaign.Failed, "0 marketing_cap NULL NULL NULL"},
		{"failed without one", engine.Result{Outcome: engine.OutcomeFailed, Code: 131026, Title: "undeliverable"}, campaign.Failed, "0 NULL NULL NULL NULL"},
		{"a retry keeps no reason", engine.Result{Outcome: engine.OutcomeRetry, Code: 131049, Reason: campaign.FailMarketingCap},
			campaign.Pending, "0 NULL NULL NULL NULL"},
		{"in doubt", engine.Result{Outcome: engine.OutcomeInDoubt, Title: "timeout"}, campaign.InDoubt, "0 NULL NULL NULL NULL"},
		{"released", engine.Result{Outcome: engine.OutcomeRelease}, campaign.Pending, "0 NULL NULL NULL NULL"},
	}
	// All in one batch, as the engine records them.
	results := make([]engine.Result, len(tests))
	for i, tt := range tests {
		results[i] = tt.result
	}
	s := recorded(t, results...)
	exported := map[int64]ExportRow{}
	if err := s.Export(context.Background(), func(r ExportRow) error { exported[r.Row] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := int64(i + 1)
			if got := columns3(t, s, row); got != tt.want {
				t.Errorf("held, fail_reason, pricing: %s, want %s", got, tt.want)
			}
			e := exported[row]
			if e.Status != tt.status {
				t.Errorf("status %s, want %s", e.Status, tt.status)
			}
			wantHeld := tt.result.Held
			wantReason := ""
			if tt.status == campaign.Failed {
				wantReason = tt.result.Reason
			}
			if e.Held != wantHeld || e.FailReason != wantReason {
				t.Errorf("exported held %v, reason %q; want %v, %q", e.Held, e.FailReason, wantHeld, wantReason)
			}
		})
	}
	// A result for a row no longer sending changes nothing, held or not.
	if err := s.Record(context.Background(), []engine.Result{{Row: 1, Outcome: engine.OutcomeSent, MessageID: "w9", Held: true}}); err != nil {
		t.Fatal(err)
	}
	if got := columns3(t, s, 1); got != tests[0].want {
		t.Errorf("row 1 recorded again: %s", got)
	}
}

func TestSaveDeliveriesReasonAndPricing(t *testing.T) {
	ctx := context.Background()
	sent := engine.Result{Outcome: engine.OutcomeSent, MessageID: "w"}
	tests := []struct {
		name  string
		saves [][]reconcile.Delivery // each saved in turn, as withIDs if the delivery has a wamid, else among the others
		want  string                 // columns3
		back  reconcile.Delivery     // the delivery read back, without Row, WAMID and times
	}{
		{
			name:  "a failure's reason",
			saves: [][]reconcile.Delivery{{{Status: campaign.Failed, MessageID: "w", Code: 131049, Title: "cap", Reason: campaign.FailMarketingCap}}},
			want:  "0 marketing_cap NULL NULL NULL",
			back:  reconcile.Delivery{Status: campaign.Failed, Code: 131049, Title: "cap", Reason: campaign.FailMarketingCap},
		},
		{
			name: "a reason cleared with its failure",
			saves: [][]reconcile.Delivery{
				{{Status: campaign.Failed, MessageID: "w", Code: 131049, Title: "cap", Reason: campaign.FailMarketingCap}},
				{{Status: campaign.Delivered, MessageID: "w"}},
			},
			want: "0 NULL NULL NULL NULL",
			back: reconcile.Delivery{Status: campaign.Delivered},
		},
		{
			name:  "pricing with the others",
			saves: [][]reconcile.Delivery{{{Status: campaign.Delivered, Price: marketing}}},
			want:  "0 NULL marketing regular 1",
			back:  reconcile.Delivery{Status: campaign.Delivered, Price: marketing},
		},
		{
			name:  "pricing with a wamid",
			saves: [][]reconcile.Delivery{{{Status: campaign.Read, MessageID: "w", Price: utility}}},
			want:  "0 NULL utility free_customer_service 0",
			back:  reconcile.Delivery{Status: campaign.Read, Price: utility},
		},
		{
			name: "the first pricing stays",
			saves: [][]reconcile.Delivery{
				{{Status: campaign.Sent, Price: marketing}},
				{{Status: campaign.Delivered, Price: utility}},
				{{Status: campaign.Read, MessageID: "w", Price: utility}},
			},
			want: "0 NULL marketing regular 1",
			back: reconcile.Delivery{Status: campaign.Read, Price: marketing},
		},
		{
			name: "no pricing clears none",
			saves: [][]reconcile.Delivery{
				{{Status: campaign.Sent, Price: marketing}},
				{{Status: campaign.Delivered}},
			},
			want: "0 NULL marketing regular 1",
			back: reconcile.Delivery{Status: campaign.Delivered, Price: marketing},
		},
		{
			name:  "billable not said",
			saves: [][]reconcile.Delivery{{{Status: campaign.Delivered, Price: campaign.Pricing{Category: "marketing_lite"}}}},
			want:  "0 NULL marketing_lite NULL NULL",
			back:  reconcile.Delivery{Status: campaign.Delivered, Price: campaign.Pricing{Category: "marketing_lite"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := recorded(t, sent)
			for _, save := range tt.saves {
				var withIDs, others []reconcile.Delivery
				for _, d := range save {
					d.Row = 1
					if d.MessageID != "" {
						withIDs = append(withIDs, d)
					} else {
						others = append(others, d)
					}
				}
				if err := s.SaveDeliveries(ctx, withIDs, others, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			if got := columns3(t, s, 1); got != tt.want {
				t.Errorf("held, fail_reason, pricing: %s, want %s", got, tt.want)
			}
			out := map[int64]reconcile.Delivery{}
			if err := s.Deliveries(ctx, []int64{1}, nil, out); err != nil {
				t.Fatal(err)
			}
			d := out[1]
			if d.Status != tt.back.Status || d.Code != tt.back.Code || d.Title != tt.back.Title || d.Reason != tt.back.Reason ||
				pricing(d.Price) != pricing(tt.back.Price) {
				t.Errorf("read back %+v (%s), want %+v (%s)", d, pricing(d.Price), tt.back, pricing(tt.back.Price))
			}
		})
	}
}

func pricing(p campaign.Pricing) string {
	b := "?"
	if p.Billable != nil {
		b = fmt.Sprint(*p.Billable)
	}
	return p.Category + "/" + p.Type + "/" + b
}

// accountRows is a campaign whose rows show each count of the account
// rules; TestReportAccountRules says what each is.
func accountRows(t *testing.T) *Store {
	t.Helper()
	sent := func(w string, held bool) engine.Result {
		return engine.Result{Outcome: engine.OutcomeSent, MessageID: w, Held: held}
	}
	s := recorded(t,
		sent("w1", true),  // 1: held
		sent("w2", true),  // 2: held, then delivered
		sent("w3", true),  // 3: held, then failed 132015
		sent("w4", false), // 4: sent
		engine.Result{Outcome: engine.OutcomeFailed, Code: 131049, Title: "cap", Reason: campaign.FailMarketingCap}, // 5
		sent("w6", false), // 6: failed 131049 by a webhook
		engine.Result{Outcome: engine.OutcomeFailed, Code: 131026, Title: "undeliverable"}, // 7: failed, no reason
		sent("w8", false),  // 8: delivered, marketing, billable
		sent("w9", false),  // 9: read, utility, not billable
		sent("w10", false), // 10: sent, marketing, billable: not billed yet
		sent("w11", false), // 11: failed after a billable sent status: never billed
		engine.Result{Outcome: engine.OutcomeRetry, Code: 131000, Title: "wrong"}, // 12: pending again
	)
	withIDs := []reconcile.Delivery{
		{Row: 3, Status: campaign.Failed, MessageID: "w3", Code: 132015, Title: "pacing"},
		{Row: 6, Status: campaign.Failed, MessageID: "w6", Code: 131049, Title: "cap", Reason: campaign.FailMarketingCap},
		{Row: 11, Status: campaign.Failed, MessageID: "w11", Code: 131026, Title: "undeliverable", Price: marketing},
	}
	others := []reconcile.Delivery{
		{Row: 2, Status: campaign.Delivered},
		{Row: 8, Status: campaign.Delivered, Price: marketing},
		{Row: 9, Status: campaign.Read, Price: utility},
		{Row: 10, Status: campaign.Sent, Price: marketing},
	}
	if err := s.SaveDeliveries(context.Background(), withIDs, others, time.Now()); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReportAccountRules(t *testing.T) {
	ctx := context.Background()
	s := accountRows(t)
	b, err := s.Breakdown(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Report(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]Report{"Breakdown": b, "Report": r} {
		t.Run(name, func(t *testing.T) {
			if want := (campaign.Counts{Total: 12, Pending: 1, Sent: 3, Delivered: 2, Read: 1, Failed: 5}); got.Counts != want {
				t.Errorf("counts %+v, want %+v", got.Counts, want)
			}
			if got.Held != 1 {
				t.Errorf("held %d, want 1 (row 1: rows 2 and 3 moved on)", got.Held)
			}
			if want := map[string]int64{campaign.FailMarketingCap: 2}; !maps.Equal(got.FailedByReason, want) {
				t.Errorf("failed by reason %v, want %v", got.FailedByReason, want)
			}
			if want := map[string]int64{"marketing": 3, "utility": 1}; !maps.Equal(got.ByPricingCategory, want) {
				t.Errorf("by pricing category %v, want %v", got.ByPricingCategory, want)
			}
			if got.Billable != 1 {
				t.Errorf("billable %d, want 1 (row 8)", got.Billable)
			}
		})
	}
}

func TestReportAccountRulesEmpty(t *testing.T) {
	r, err := newStore(t, phones(3, "A")...).Report(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r.Held != 0 || r.Billable != 0 || r.FailedByReason == nil || len(r.FailedByReason) != 0 || r.ByPricingCategory == nil || len(r.ByPricingCategory) != 0 {
		t.Fatalf("held %d, billable %d, failed by reason %#v, by pricing category %#v: want 0, 0 and empty maps",
			r.Held, r.Billable, r.FailedByReason, r.ByPricingCategory)
	}
}

func TestExportAccountColumns(t *testing.T) {
	s := accountRows(t)
	var got []string
	if err := s.Export(context.Background(), func(r ExportRow) error {
		got = append(got, fmt.Sprintf("%d %s held=%v reason=%q %s", r.Row, r.Status, r.Held, r.FailReason, pricing(r.Price)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`1 sent held=true reason="" //?`,
		`2 delivered held=true reason="" //?`,
		`3 failed held=true reason="" //?`,
		`4 sent held=false reason="" //?`,
		`5 failed held=false reason="marketing_cap" //?`,
		`6 failed held=false reason="marketing_cap" //?`,
		`7 failed held=false reason="" //?`,
		`8 delivered held=false reason="" marketing/regular/true`,
		`9 read held=false reason="" utility/free_customer_service/false`,
		`10 sent held=false reason="" marketing/regular/true`,
		`11 failed held=false reason="" marketing/regular/true`,
		`12 pending held=false reason="" //?`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("export\n%q\nwant\n%q", got, want)
	}
}

func TestPricingLists(t *testing.T) {
	ctx := context.Background()
	s := accountRows(t)
	// Rows 13 and 14: in doubt, and left sending by a run.
	more := phones(14, "A")[12:]
	if _, err := s.db.Exec(`INSERT INTO recipients(row, line, phone, sender, params, status, updated_at) VALUES
		(?, ?, ?, 'A', '[]', 'in_doubt', 0), (?, ?, ?, 'A', '[]', 'sending', 0)`,
		more[0].Row, more[0].Line, more[0].Phone, more[1].Row, more[1].Line, more[1].Phone); err != nil {
		t.Fatal(err)
	}
	phone := func(row int) string { return fmt.Sprintf("+4477009%05d", row) }

	var billed []string
	if err := s.EachBillable(ctx, func(p, category string) error { billed = append(billed, p+" "+category); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []string{phone(8) + " marketing"}; !slices.Equal(billed, want) {
		t.Errorf("EachBillable: %q, want %q", billed, want)
	}
	var toSend []string
	if err := s.EachToSend(ctx, func(p string) error { toSend = append(toSend, p); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []string{phone(12), phone(13), phone(14)}; !slices.Equal(toSend, want) {
		t.Errorf("EachToSend: %q, want %q", toSend, want)
	}

	stop := errors.New("stop")
	calls := 0
	if err := s.EachToSend(ctx, func(string) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("EachToSend with fn failing: %v after %d calls, want fn's error after 1", err, calls)
	}
	if err := s.EachBillable(ctx, func(string, string) error { return stop }); err != stop {
		t.Errorf("EachBillable with fn failing: %v, want fn's error", err)
	}
}
