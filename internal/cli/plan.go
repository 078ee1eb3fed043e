package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/bulksend/bulksend/internal/store"
)

// printPlan is --dry-run's output: what a run would send, and how long it
// would take at the configured rate.
func printPlan(ctx context.Context, ios *IO, st *store.Store, s store.Settings) error {
	r, err := st.Breakdown(ctx)
	if err != nil {
		return err
	}
	c := r.Counts
	w := ios.Out
	fmt.Fprintf(w, "plan: template %s/%s, %d parameter column(s) %v\n", s.Template, s.Lang, len(s.Params), s.Params)
	fmt.Fprintf(w, "rows: %d total, %d to send, %d skipped, %d in doubt, %d already settled\n",
		c.Total, c.Pending, c.Skipped, c.InDoubt, c.Sent+c.Delivered+c.Read+c.Failed)
	keys := slices.Sorted(maps.Keys(r.Skipped))
	for _, k := range keys {
		fmt.Fprintf(w, "  skipped %-10s %d\n", k, r.Skipped[k])
	}
	var slowest time.Duration
	for _, sc := range r.BySender {
		d := time.Duration(0)
		if s.Rate > 0 {
			d = time.Duration(float64(sc.Counts.Pending) / s.Rate * float64(time.Second))
		}
		slowest = max(slowest, d)
		fmt.Fprintf(w, "sender %s: %d to send at %g/s, about %s\n", sc.Sender, sc.Counts.Pending, s.Rate, d.Round(time.Second))
	}
	if s.Rate > 0 {
		fmt.Fprintf(w, "estimate: about %s at %g msg/s per sender (retries and throttling add to it)\n", slowest.Round(time.Second), s.Rate)
	}
	fmt.Fprintln(w, "dry run: nothing was sent")
	return nil
}
