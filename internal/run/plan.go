package run

import (
	"context"
	"time"

	"github.com/bulksend/bulksend/internal/pace"
	"github.com/bulksend/bulksend/internal/store"
)

// Plan is what a dry run found: what a run would send, from whom, and how
// long it would take at the campaign's rate.
type Plan struct {
	Settings  store.Settings
	Breakdown store.Report
	// Pending is what is left to send per sender, in the rate's units:
	// messages, or an SMS campaign's parts.
	Pending map[string]int64
	// Binding is the first run's (an SMS import's measures), nil when the
	// campaign existed.
	Binding Binding
	// Store is the checkpoint planned from, for what a front end adds to
	// the plan (a cost ceiling); valid until the Campaign is closed.
	Store *store.Store
	// Schedule is when the rows may be sent, nil when nothing bounds it.
	Schedule *SchedulePlan
}

// Plan plans the campaign as it stands.
func (c *Campaign) Plan(ctx context.Context) (*Plan, error) {
	r, err := c.Store.Breakdown(ctx)
	if err != nil {
		return nil, err
	}
	var pending map[string]int64
	if c.bound != nil && !c.severalParts {
		// Imported by this run, every row one part: the breakdown's
		// pending rows, without a second scan of a million rows.
		pending = map[string]int64{}
		for _, sc := range r.BySender {
			if sc.Counts.Pending > 0 {
				pending[sc.Sender] = sc.Counts.Pending
			}
		}
	} else if pending, err = c.Store.PendingParts(ctx); err != nil {
		return nil, err
	}
	sp, err := c.planSchedule(ctx, r.Counts.Pending)
	if err != nil {
		return nil, err
	}
	p := &Plan{Settings: c.Settings, Breakdown: r, Pending: pending, Binding: c.bound, Store: c.Store, Schedule: sp}
	if sp != nil {
		sp.ETA = sp.eta(p.Longest())
	}
	return p, nil
}

// Duration is how long n of the rate's units take to send from one
// sender at the pace the engine keeps (the rate less its headroom); 0
// without a rate.
func (p *Plan) Duration(n int64) time.Duration {
	if p.Settings.Rate <= 0 {
		return 0
	}
	return time.Duration(float64(n) / pace.Paced(p.Settings.Rate) * float64(time.Second))
}

// Longest is the time the slowest sender takes: the campaign's estimate.
func (p *Plan) Longest() time.Duration {
	var d time.Duration
	for _, n := range p.Pending {
		d = max(d, p.Duration(n))
	}
	return d
}
