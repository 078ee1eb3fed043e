package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/report"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp/pricing"
)

// reasonNote explains a failure reason in status.
func reasonNote(reason string) string {
	switch reason {
	case campaign.FailMarketingCap:
		return "  WhatsApp's per-user marketing cap: no run resends these (Meta: wait 24 h; resending makes it worse)"
	case campaign.FailThrottleExhausted:
		return "  throttled on every try: lower --rate, or ask AWS for more parts per second"
	case campaign.FailOptedOut:
		return "  the recipient replied STOP: never a success, never resent; the operator ledger keeps it for every later campaign"
	case campaign.FailStoppedMarketing:
		return "  the recipient stopped marketing messages: the operator ledger keeps it, later marketing campaigns skip them"
	}
	return ""
}

type statusOptions struct {
	db           string
	json         bool
	rateCard     string
	callingCodes string
	watch        bool
	interval     time.Duration
	metrics      bool
}

func newStatusCmd(ios *IO) *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status CAMPAIGN.csv | --db PATH",
		Short: "Show a campaign's counts: per state, error code and sender; retries, rows in doubt, rate and ETA",
		Long: `Status reads the checkpoint (it works while a run is going on) and shows how
many rows are in each state, the errors by code, each sender number's counts,
retries scheduled, rows in doubt, the rate achieved in the last minute and an
ETA. With --json it prints one object; its fields are only ever added to.
With --metrics it prints the checkpoint's gauges in the Prometheus text
format (rows by state, rows in doubt, the last successful send, the last
run's start, end and configured rate), e.g. for a cron job that writes
them for node_exporter's textfile collector.`,
		Args: checkpointArgs(&o.db),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStatus(cmd.Context(), ios, o)
		},
	}
	cmd.Flags().StringVar(&o.db, "db", "", "checkpoint file (default: beside the CSV)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object on stdout")
	cmd.Flags().StringVar(&o.rateCard, "rate-card", "", "Meta's rate-card CSV: price what was billed so far")
	cmd.Flags().StringVar(&o.callingCodes, "calling-codes", "", "Meta's country-calling-code to market list, for a --rate-card without codes")
	cmd.Flags().BoolVar(&o.watch, "watch", false, "show the status again every --interval until interrupted: redrawn on a terminal; otherwise a line (or with --json an object) each time")
	cmd.Flags().DurationVar(&o.interval, "interval", 5*time.Second, "with --watch, how often")
	cmd.Flags().BoolVar(&o.metrics, "metrics", false, "print the checkpoint's gauges in the Prometheus text format on stdout")
	return cmd
}

// checkpointArgs accepts CAMPAIGN.csv or --db, and resolves the CSV to
// its checkpoint.
func checkpointArgs(db *string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) >= 1 && *db == "":
			p, err := dbPath(args[0])
			if err != nil {
				return err
			}
			*db = p
		case len(args) == 0 && *db == "":
			return usagef("e.g. 'bulksend "+cmd.Name()+" campaign.csv'", "name the campaign CSV or its checkpoint with --db")
		}
		return nil
	}
}

func runStatus(ctx context.Context, ios *IO, o *statusOptions) error {
	if o.metrics && (o.json || o.rateCard != "" || o.watch) {
		return usagef("", "--metrics prints the Prometheus text format alone: drop --json, --rate-card and --watch")
	}
	st, err := openForReading(o.db)
	if err != nil {
		return err
	}
	settings, err := st.Settings(ctx)
	if err != nil || o.watch {
		// A watch opens it again for each view: it holds nothing open that
		// a run's import would wait for.
		st.Close()
	} else {
		defer st.Close()
	}
	if err != nil {
		return err
	}
	if o.metrics {
		return printMetrics(ctx, ios, st, settings)
	}
	if o.callingCodes != "" && o.rateCard == "" {
		return usagef("", "--calling-codes goes with --rate-card")
	}
	var card *pricing.Card
	if o.rateCard != "" {
		if card, err = loadRateCard(o.rateCard, o.callingCodes); err != nil {
			return err
		}
	}
	if !o.watch {
		return writeStatus(ctx, ios.Out, st, settings, card, o)
	}
	return watchStatus(ctx, ios, settings, card, o)
}

// writeStatus writes the status view (or its JSON) of st to w.
func writeStatus(ctx context.Context, w io.Writer, st *store.Store, settings store.Settings, card *pricing.Card, o *statusOptions) error {
	ch := channelOf(settings.Channel)
	out, r, err := report.NewStatus(ctx, st, settings, ch.parts, now())
	if err != nil {
		return err
	}
	var billed *pricing.Tally
	if card != nil {
		billed = card.NewTally()
		if err := st.EachBillable(ctx, func(phone, category string) error {
			billed.Add(phone, cmp.Or(category, settings.Category, "marketing"))
			return nil
		}); err != nil {
			return err
		}
		total := card.Round(billed.Total())
		out.BilledCost, out.Currency = &total, card.Currency
	}
	if o.json {
		return json.NewEncoder(w).Encode(out)
	}
	fmt.Fprintf(w, "campaign %s · %s\n", esc(out.CampaignID), ch.heading(settings))
	if out.LockedBy != "" {
		fmt.Fprintf(w, "running: %s\n", esc(out.LockedBy))
		writeShares(ctx, w, st, settings)
	}
	c := r.Counts
	fmt.Fprintf(w, "\n%-10s %10s\n", "state", "rows")
	for _, s := range []struct {
		name string
		n    int64
	}{{"pending", c.Pending}, {"sending", c.Sending}, {"in_doubt", c.InDoubt}, {"sent", c.Sent}, {"delivered", c.Delivered}, {"read", c.Read}, {"failed", c.Failed}, {"skipped", c.Skipped}, {"total", c.Total}} {
		fmt.Fprintf(w, "%-10s %10d\n", s.name, s.n)
	}
	b := out.Buckets
	fmt.Fprintf(w, "\n%-13s %10d  (sent, delivered or read)\n%-13s %10d  (failed: throttled on every try)\n%-13s %10d  (every other failure, and the skipped rows)\n%-13s %10d  (pending, sending or in doubt)\n",
		"success", b.Success, "hard throttle", b.HardThrottle, "other", b.Other, "unfinished", b.Unfinished)
	if out.Replied > 0 {
		fmt.Fprintf(w, "\nreplied: %d rows (the recipient answered: export shows the first reply of each)\n", out.Replied)
	}
	if p := out.Parts; p != nil {
		fmt.Fprintf(w, "\nparts: %d planned, %d in rows sent or delivered; %d rows need UCS-2; %d throttled tries\n", p.Planned, p.Sent, p.UCS2Rows, p.Throttled)
		if p.BilledRows > 0 {
			fmt.Fprintf(w, "billed (from events): %d parts, $%.4f with carrier fees, for %d rows\n", p.BilledParts, p.Charged, p.BilledRows)
		}
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "\nskipped by reason:\n")
		printSkipped(w, "  ", r)
	}
	if r.Held > 0 {
		fmt.Fprintf(w, "held       %10d  (sent, but held back by WhatsApp's template pacing: they may still fail with 132015)\n", r.Held)
	}
	if r.WasHeld > 0 {
		fmt.Fprintf(w, "\nheld at send (template pacing): %d rows, %d still held\n", r.WasHeld, r.Held)
	}
	if len(r.FailedByReason) > 0 {
		fmt.Fprintf(w, "\nfailed by reason:\n")
		for _, k := range slices.Sorted(maps.Keys(r.FailedByReason)) {
			fmt.Fprintf(w, "  %-20s %8d%s\n", esc(k), r.FailedByReason[k], reasonNote(k))
		}
	}
	if len(r.ByPricingCategory) > 0 {
		fmt.Fprintf(w, "\npricing (as status webhooks reported it), rows by category; %d billable: delivered or read and said billable (Meta bills a message when it is delivered: rows only sent, or failed, are not, nor free ones)\n", r.Billable)
		for _, k := range slices.Sorted(maps.Keys(r.ByPricingCategory)) {
			fmt.Fprintf(w, "  %-14s %8d\n", esc(k), r.ByPricingCategory[k])
		}
	}
	if settings.API == "marketing" {
		fmt.Fprintf(w, "\nmarketing messages API: %d billed marketing_lite, %d fell back to Cloud API (marketing)\n",
			r.ByPricingCategory["marketing_lite"], r.ByPricingCategory["marketing"])
	}
	if billed != nil {
		fmt.Fprintf(w, "\nbilled so far: %s for %d messages (priced with %s; an estimate, not Meta's invoice)\n", money(card, billed.Total()), billed.Priced(), esc(o.rateCard))
		printTally(w, "  ", card, billed)
	}
	printPreflight(w, settings)
	if len(r.ByError) > 0 {
		fmt.Fprintf(w, "\nerrors (last error of each row):\n")
		for _, e := range r.ByError {
			code := "" // AWS names its errors; it has no codes
			if e.Code != 0 {
				code = strconv.Itoa(e.Code)
			}
			fmt.Fprintf(w, "  %-9s %7s  %10d  %s\n", e.Status, code, e.Rows, esc(e.Title))
		}
	}
	fmt.Fprintf(w, "\nper sender:\n")
	for _, s := range r.BySender {
		fmt.Fprintf(w, "  %-20s %s\n", esc(s.Sender), countsLine(s.Counts))
	}
	if r.Retrying > 0 {
		fmt.Fprintf(w, "\nretries scheduled: %d, next due %s\n", r.Retrying, out.NextRetry)
	}
	printSchedule(w, out)
	if c.InDoubt > 0 {
		fmt.Fprintf(w, "\nrows in doubt: %d (settle them with 'bulksend reconcile')\n", c.InDoubt)
	}
	if out.RatePerSec > 0 {
		fmt.Fprintf(w, "\nrate (last minute): %.1f msg/s", out.RatePerSec)
		if out.ETASeconds > 0 {
			fmt.Fprintf(w, " · ETA %s", (time.Duration(out.ETASeconds) * time.Second).String())
		}
		fmt.Fprintln(w)
	}
	if out.Deliveries > 0 {
		fmt.Fprintf(w, "\ntime to delivered (%d messages): p50 %.1fs · p90 %.1fs · p99 %.1fs\n", out.Deliveries, out.DeliveryP50, out.DeliveryP90, out.DeliveryP99)
	}
	if len(out.Learned) > 0 {
		fmt.Fprintf(w, "\nnumbers slower than --rate %g (run %d found):\n", out.LearnedOf, out.LearnedRun)
		for _, n := range slices.Sorted(maps.Keys(out.Learned)) {
			fmt.Fprintf(w, "  %-20s accepts about %.0f/s\n", esc(n), out.Learned[n])
		}
	}
	return nil
}

// watchStatus shows the status every o.interval until interrupted (exit
// 0): on a terminal the whole view, redrawn in place; elsewhere (a log, a
// pipe) a line of counts each time, or with --json an object per line.
func watchStatus(ctx context.Context, ios *IO, settings store.Settings, card *pricing.Card, o *statusOptions) error {
	if o.interval < 100*time.Millisecond {
		return usagef("", "invalid --interval %v: want 100ms or more", o.interval)
	}
	ctx, stop := signalContext(ctx, ios, slog.New(slog.DiscardHandler), watchInterrupt)
	defer stop()
	f, isFile := ios.Out.(*os.File)
	redraw := isFile && isTerminal(f) && !o.json
	t := time.NewTicker(o.interval)
	defer t.Stop()
	for {
		st, err := openForReading(o.db)
		if err != nil {
			return err
		}
		switch {
		case redraw:
			var b bytes.Buffer
			b.WriteString("\x1b[H\x1b[2J") // home, clear: the view replaces the last one
			if err = writeStatus(ctx, &b, st, settings, card, o); err == nil {
				fmt.Fprintf(&b, "\n(every %s; Ctrl-C to stop)\n", o.interval)
				_, err = ios.Out.Write(b.Bytes())
			}
		case o.json:
			err = writeStatus(ctx, ios.Out, st, settings, card, o)
		default:
			var c campaign.Counts
			if c, err = st.Counts(ctx); err == nil {
				_, err = fmt.Fprintf(ios.Out, "%s %s\n", time.Now().Format(time.RFC3339), countsLine(c))
			}
		}
		st.Close()
		if err != nil && ctx.Err() == nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
