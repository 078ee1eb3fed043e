package report

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/store"
)

// Status is a campaign's state as bulksend status shows it, and as
// status --json prints it: its JSON fields are only ever added.
type Status struct {
	campaign.Counts
	CampaignID   string                                  `json:"campaign_id"`
	Template     string                                  `json:"template"`
	Category     string                                  `json:"template_category,omitempty"`
	Retrying     int64                                   `json:"retrying"`
	NextRetry    string                                  `json:"next_retry,omitempty"`
	RatePerSec   float64                                 `json:"rate_last_minute"`
	ETASeconds   float64                                 `json:"eta_seconds,omitempty"`
	Errors       []store.ErrorCount                      `json:"errors"`
	Senders      []store.SenderCount                     `json:"senders"`
	Skipped      map[campaign.SkipKind]int64             `json:"skipped_by_reason"`
	SkipExamples map[campaign.SkipKind]store.SkipExample `json:"skipped_examples"`
	DeliveryP50  float64                                 `json:"time_to_delivered_p50_seconds,omitempty"`
	DeliveryP90  float64                                 `json:"time_to_delivered_p90_seconds,omitempty"`
	DeliveryP99  float64                                 `json:"time_to_delivered_p99_seconds,omitempty"`
	Deliveries   int                                     `json:"deliveries_timed"`
	LockedBy     string                                  `json:"running,omitempty"`
	// Added by issue 11.
	Held              int64            `json:"held"`
	WasHeld           int64            `json:"held_at_send"`
	FailedByReason    map[string]int64 `json:"failed_by_reason"`
	ByPricingCategory map[string]int64 `json:"by_pricing_category"`
	Billable          int64            `json:"billable"`
	API               string           `json:"api"`
	Preflight         json.RawMessage  `json:"preflight,omitempty"`
	BilledCost        *float64         `json:"billed_cost,omitempty"`
	Currency          string           `json:"currency,omitempty"`
	// Added by issue 12.
	Channel campaign.Channel `json:"channel"`
	Buckets campaign.Buckets `json:"buckets"`
	Parts   *store.Parts     `json:"parts,omitempty"` // SMS only

	// Learned: the sender numbers the last run that found one accepted
	// less than its rate, with what they accept per second.
	Learned    map[string]float64 `json:"learned_per_second,omitempty"`
	LearnedRun int64              `json:"learned_in_run,omitempty"`
	LearnedOf  float64            `json:"learned_rate,omitempty"` // that run's --rate

	// Added by issue 25: when the pending rows may be sent, as the last
	// run's schedule left them (they stay pending in the counts).
	// NextSendAt is the earliest a waiting row may be sent (RFC 3339),
	// null when none waits.
	NextSendAt    *string `json:"next_send_at"`
	WaitingWindow int64   `json:"waiting_window"`
	WaitingSendAt int64   `json:"waiting_send_at"`
	WaitingBudget int64   `json:"waiting_budget"`
	WaitingStart  int64   `json:"waiting_start"`
	// The schedule's settings.
	Window     []string `json:"window,omitempty"`
	WindowTZ   string   `json:"window_tz,omitempty"`
	StartAt    string   `json:"start_at,omitempty"`
	EndAt      string   `json:"end_at,omitempty"`
	DailyLimit string   `json:"daily_limit,omitempty"`

	// Added by issue 26: the rows whose recipient replied (first replies,
	// recorded by reconcile or receive).
	Replied int64 `json:"replied"`

	// Days is how many calendar days (UTC) the campaign's runs span, first
	// start to last end; 0 before any run.
	Days int `json:"days_spanned"`
}

// NewStatus reads the status of the campaign in st, whose settings are s,
// at now; parts: its channel counts message parts (SMS), and has no API
// choice.
func NewStatus(ctx context.Context, st *store.Store, s store.Settings, parts bool, now time.Time) (*Status, error) {
	r, err := st.Report(ctx, now)
	if err != nil {
		return nil, err
	}
	out := &Status{
		Counts: r.Counts, CampaignID: s.CampaignID, Template: s.Template, Category: s.Category,
		Retrying: r.Retrying, RatePerSec: float64(r.SentLast) / 60, Errors: r.ByError,
		Senders: r.BySender, Skipped: r.Skipped, SkipExamples: r.SkipExamples, Deliveries: len(r.Deliveries),
		Held: r.Held, WasHeld: r.WasHeld, FailedByReason: r.FailedByReason, ByPricingCategory: r.ByPricingCategory, Billable: r.Billable,
		API: cmp.Or(s.API, "messages"), Preflight: s.Preflight,
		Buckets: campaign.BucketsOf(r.Counts, r.FailedByReason[campaign.FailThrottleExhausted]),
	}
	if out.Channel, err = campaign.ParseChannel(s.Channel); err != nil {
		return nil, err
	}
	if parts {
		out.API = ""
		p, err := st.Parts(ctx)
		if err != nil {
			return nil, err
		}
		out.Parts = &p
	}
	if out.Errors == nil {
		out.Errors = []store.ErrorCount{}
	}
	if !r.NextRetry.IsZero() {
		out.NextRetry = r.NextRetry.Format(time.RFC3339)
	}
	if left := r.Counts.Pending + r.Counts.Sending; out.RatePerSec > 0 && left > 0 {
		out.ETASeconds = float64(left) / out.RatePerSec
	}
	if n := len(r.Deliveries); n > 0 {
		pct := func(p float64) float64 { return r.Deliveries[min(n-1, int(p*float64(n)))].Seconds() }
		out.DeliveryP50, out.DeliveryP90, out.DeliveryP99 = pct(0.5), pct(0.9), pct(0.99)
	}
	if h, ok := store.Holder(st.Path()); ok {
		out.LockedBy = h
	}
	if out.Replied, err = st.Replied(ctx); err != nil {
		return nil, err
	}
	w, err := st.Waiting(ctx, now)
	if err != nil {
		return nil, err
	}
	out.WaitingWindow, out.WaitingSendAt, out.WaitingBudget, out.WaitingStart = w.Window, w.SendAt, w.Budget, w.Start
	if !w.Next.IsZero() {
		t := w.Next.Format(time.RFC3339)
		out.NextSendAt = &t
	}
	if w.Total() >= r.Counts.Pending {
		out.ETASeconds = 0 // every pending row waits: the rate says nothing of when they go
	}
	out.Window, out.WindowTZ, out.DailyLimit = s.Window, s.WindowTZ, s.DailyLimit
	if !s.StartAt.IsZero() {
		out.StartAt = s.StartAt.Format(time.RFC3339)
	}
	if !s.EndAt.IsZero() {
		out.EndAt = s.EndAt.Format(time.RFC3339)
	}
	runs, err := st.Runs(ctx)
	if err != nil {
		return nil, err
	}
	if len(runs) > 0 {
		last := runs[len(runs)-1]
		out.Days = DaysSpanned(runs[0].StartedAt, cmp.Or(last.EndedAt, last.StartedAt))
	}
	for _, run := range slices.Backward(runs) {
		if run.Learned != nil {
			out.Learned, out.LearnedRun, out.LearnedOf = run.Learned, run.ID, run.Rate
			break
		}
	}
	return out, nil
}
