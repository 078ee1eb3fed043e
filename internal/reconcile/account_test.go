package reconcile_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/reconcile"
	"github.com/bulksend/bulksend/internal/store"
)

// statuses is a log of statuses as a Source, for what a webhook log
// carries beyond the fields webhook.Body writes (failure reasons,
// pricing).
type statuses struct {
	list []reconcile.Status
	read int64
}

func (s *statuses) Next() (reconcile.Status, error) {
	if int(s.read) == len(s.list) {
		return reconcile.Status{}, io.EOF
	}
	s.read++
	return s.list[s.read-1], nil
}

func (s *statuses) Counts() reconcile.SourceCounts { return reconcile.SourceCounts{Statuses: s.read} }

// rs is a status of testCampaign's row (no callback data if row is 0) at
// base+sec.
func rs(kind, wamid string, sec float64, row int64) reconcile.Status {
	s := reconcile.Status{MessageID: wamid, Status: kind, Timestamp: at(sec)}
	if row > 0 {
		s.Ref = campaign.Ref{Campaign: testCampaign, Row: row}
	}
	return s
}

func failedWith(s reconcile.Status, code int, title, reason string) reconcile.Status {
	s.ErrorCode, s.ErrorTitle, s.ErrorReason = code, title, reason
	return s
}

func priced(s reconcile.Status, p campaign.Pricing) reconcile.Status {
	s.Price = p
	return s
}

var (
	yes, no   = true, false
	marketing = campaign.Pricing{Category: "marketing", Type: "regular", Billable: &yes}
	utility   = campaign.Pricing{Category: "utility", Type: "free_customer_service", Billable: &no}
)

const (
	pacingTitle = "Message failed due to template pacing"
	capTitle    = "Message failed to send because of marketing messages per-user limit"
)

func heldRow(wamid string, sentAt float64) seed {
	sd := sentRow(wamid, sentAt)
	sd.held = true
	return sd
}

// row is what the account rules add to a row, in one line: status, code,
// fail reason, held flag and pricing.
func row(r store.ExportRow) string {
	return fmt.Sprintf("%s #%d reason=%q held=%v %s", r.Status, r.ErrorCode, r.FailReason, r.Held, pricing(r.Price))
}

// TestAccountRules: held rows a later webhook settles, failures that carry
// their reason (a 131049 its marketing_cap), and the first pricing of a
// row.
func TestAccountRules(t *testing.T) {
	tests := []struct {
		name   string
		rows   []seed
		logs   [][]reconcile.Status // applied by one reconcile each, in turn
		want   []string
		report store.Report // Held, FailedByReason, ByPricingCategory, Billable
	}{
		{
			name:   "a 132015 failed status turns a held row failed",
			rows:   []seed{heldRow("w1", 1), heldRow("w2", 1)},
			logs:   [][]reconcile.Status{{failedWith(rs("failed", "w1", 30, 1), 132015, pacingTitle, "")}},
			want:   []string{`failed #132015 reason="" held=true -/-/-`, `sent #0 reason="" held=true -/-/-`},
			report: store.Report{Held: 1},
		},
		{
			name: "a held row delivered or read is held no more",
			rows: []seed{heldRow("w1", 1), heldRow("w2", 1), heldRow("w3", 1)},
			logs: [][]reconcile.Status{{rs("delivered", "w1", 20, 1), rs("read", "w2", 20, 0)}},
			want: []string{
				`delivered #0 reason="" held=true -/-/-`, `read #0 reason="" held=true -/-/-`, `sent #0 reason="" held=true -/-/-`,
			},
			report: store.Report{Held: 1},
		},
		{
			name: "a 131049 failed status carries marketing_cap",
			rows: []seed{sentRow("w1", 1), inDoubt(at(0), 1), sentRow("w3", 1)},
			logs: [][]reconcile.Status{{
				failedWith(rs("failed", "w1", 20, 1), 131049, capTitle, campaign.FailMarketingCap),
				failedWith(rs("failed", "w2", 20, 2), 131049, capTitle, campaign.FailMarketingCap),
				failedWith(rs("failed", "w3", 20, 3), 131026, "Message undeliverable", ""),
			}},
			want: []string{
				`failed #131049 reason="marketing_cap" held=false -/-/-`,
				`failed #131049 reason="marketing_cap" held=false -/-/-`,
				`failed #131026 reason="" held=false -/-/-`,
			},
			report: store.Report{FailedByReason: map[string]int64{campaign.FailMarketingCap: 2}},
		},
		{
			name: "the reason of the failure that wins",
			rows: []seed{sentRow("w1", 1)},
			logs: [][]reconcile.Status{{
				failedWith(rs("failed", "w1", 20, 1), 131049, capTitle, campaign.FailMarketingCap),
				failedWith(rs("failed", "w1", 21, 1), 131026, "Message undeliverable", ""),
			}},
			want: []string{`failed #131026 reason="" held=false -/-/-`},
		},
		{
			name: "a failed row that a later log delivers loses its reason",
			rows: []seed{sentRow("w1", 1)},
			logs: [][]reconcile.Status{
				{failedWith(rs("failed", "w1", 20, 1), 131049, capTitle, campaign.FailMarketingCap)},
				{rs("delivered", "w1", 25, 1)},
			},
			want: []string{`delivered #0 reason="" held=false -/-/-`},
		},
		{
			name: "the earliest status's pricing, billed once delivered",
			rows: []seed{sentRow("w1", 1), sentRow("w2", 1), sentRow("w3", 1)},
			logs: [][]reconcile.Status{{
				priced(rs("delivered", "w1", 20, 1), utility), priced(rs("sent", "w1", 10, 1), marketing),
				priced(rs("sent", "w2", 10, 2), marketing),
				priced(rs("read", "w3", 30, 0), utility),
			}},
			want: []string{
				`delivered #0 reason="" held=false marketing/regular/true`,
				`sent #0 reason="" held=false marketing/regular/true`,
				`read #0 reason="" held=false utility/free_customer_service/false`,
			},
			report: store.Report{ByPricingCategory: map[string]int64{"marketing": 2, "utility": 1}, Billable: 1},
		},
		{
			name: "a row's pricing is never replaced",
			rows: []seed{sentRow("w1", 1)},
			logs: [][]reconcile.Status{
				{priced(rs("delivered", "w1", 20, 1), marketing)},
				{priced(rs("sent", "w1", 10, 1), utility), priced(rs("read", "w1", 30, 1), utility)},
			},
			want:   []string{`read #0 reason="" held=false marketing/regular/true`},
			report: store.Report{ByPricingCategory: map[string]int64{"marketing": 1}, Billable: 1},
		},
		{
			name:   "pricing alone changes a row",
			rows:   []seed{sentRow("w1", 1)},
			logs:   [][]reconcile.Status{{priced(rs("sent", "w1", 1, 1), marketing)}},
			want:   []string{`sent #0 reason="" held=false marketing/regular/true`},
			report: store.Report{ByPricingCategory: map[string]int64{"marketing": 1}},
		},
		{
			name: "skipped rows take no pricing",
			rows: []seed{skipped()},
			logs: [][]reconcile.Status{{priced(rs("delivered", "w1", 20, 1), marketing)}},
			want: []string{`skipped #0 reason="" held=false -/-/-`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st := checkpoint(t, tt.rows)
			for i, l := range tt.logs {
				if _, err := apply(ctx, st, reconcile.Options{}, &statuses{list: l}); err != nil {
					t.Fatalf("log %d: %v", i+1, err)
				}
			}
			var got []string
			for _, r := range export(t, st, len(tt.rows)) {
				got = append(got, row(r))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("rows\n%q\nwant\n%q", got, tt.want)
			}
			r, err := st.Breakdown(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.report
			for _, m := range []*map[string]int64{&want.FailedByReason, &want.ByPricingCategory} {
				if *m == nil {
					*m = map[string]int64{}
				}
			}
			if r.Held != want.Held || r.Billable != want.Billable || fmt.Sprint(r.FailedByReason) != fmt.Sprint(want.FailedByReason) ||
				fmt.Sprint(r.ByPricingCategory) != fmt.Sprint(want.ByPricingCategory) {
				t.Errorf("report: held %d, billable %d, failed by reason %v, by pricing category %v; want %d, %d, %v, %v",
					r.Held, r.Billable, r.FailedByReason, r.ByPricingCategory, want.Held, want.Billable, want.FailedByReason, want.ByPricingCategory)
			}
			// Applying the logs again changes nothing.
			for i, l := range tt.logs {
				sum, err := apply(ctx, st, reconcile.Options{}, &statuses{list: l})
				if err != nil {
					t.Fatal(err)
				}
				if sum.Changed != 0 || sum.Applied != 0 {
					t.Errorf("log %d again: changed %d, applied %d", i+1, sum.Changed, sum.Applied)
				}
			}
		})
	}
}

// TestPermutationsWithPricing is TestPermutations for what statuses carry
// besides their kind: failure reasons, and pricing (each message's own, on
// some of its statuses, as Meta sends it). The end state, pricing and
// reasons included, is the same whatever the order and the batches.
func TestPermutationsWithPricing(t *testing.T) {
	const nRows = 12
	kinds := []string{"sent", "delivered", "read", "failed"}
	for round := range 6 {
		r := rand.New(rand.NewPCG(uint64(round), 11))
		rows := make([]seed, nRows)
		var log []reconcile.Status
		for i := range rows {
			row := int64(i + 1)
			w := fmt.Sprintf("wamid.%d", row)
			switch r.IntN(4) {
			case 0:
				rows[i] = heldRow(w, 1)
			case 1:
				rows[i] = sentRow(w, 1)
			default:
				rows[i] = inDoubt(at(0), 1)
			}
			p := []campaign.Pricing{{}, marketing, utility}[r.IntN(3)]
			for range r.IntN(6) {
				s := rs(kinds[r.IntN(len(kinds))], w, float64(r.IntN(30)), row)
				switch {
				case s.Status == "failed" && r.IntN(2) == 0:
					s = failedWith(s, 131049, capTitle, campaign.FailMarketingCap)
				case s.Status == "failed":
					s = failedWith(s, 132015, pacingTitle, "")
				case r.IntN(3) > 0:
					s.Price = p
				}
				log = append(log, s, s)
			}
		}
		var first []string
		for perm := range 6 {
			l := slices.Clone(log)
			r.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
			st := checkpoint(t, rows)
			opt := reconcile.Options{Batch: 1 + r.IntN(8), Now: func() time.Time { return at(0) }}
			if _, err := apply(context.Background(), st, opt, &statuses{list: l}); err != nil {
				t.Fatal(err)
			}
			got := full(t, st, nRows)
			if perm == 0 {
				first = got
			} else if !slices.Equal(got, first) {
				t.Fatalf("round %d permutation %d (batch %d): end state differs:\n%q\n%q", round, perm, opt.Batch, first, got)
			}
		}
	}
}
