package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/metrics"
	"github.com/bulksend/bulksend/internal/report"
	"github.com/bulksend/bulksend/internal/store"
	wachannel "github.com/bulksend/bulksend/internal/whatsapp/channel"
	"github.com/bulksend/bulksend/internal/whatsapp/pricing"
)

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
		return metrics.WriteCheckpoint(ctx, ios.Out, st, settings)
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
	out, err := report.NewStatus(ctx, st, settings, ch.parts, now())
	if err != nil {
		return err
	}
	var sections bytes.Buffer // the channel's: what the rate card prices, the last preflight
	if card != nil {
		billed := card.NewTally()
		if err := st.EachBillable(ctx, func(phone, category string) error {
			billed.Add(phone, cmp.Or(category, settings.Category, "marketing"))
			return nil
		}); err != nil {
			return err
		}
		total := card.Round(billed.Total())
		out.BilledCost, out.Currency = &total, card.Currency
		fmt.Fprintf(&sections, "\nbilled so far: %s for %d messages (priced with %s; an estimate, not Meta's invoice)\n", card.Money(billed.Total()), billed.Priced(), esc(o.rateCard))
		billed.WriteLines(&sections, "  ")
	}
	if o.json {
		return json.NewEncoder(w).Encode(out)
	}
	if rec, ok := wachannel.Preflight(settings); ok {
		rec.WriteText(&sections)
	}
	out.WriteText(ctx, w, st, settings, report.StatusText{Channel: sections.String(), Setting: flagOf})
	return nil
}

// flagOf is the flag that sets a run's setting.
func flagOf(setting string) string { return "--" + setting }

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
				_, err = fmt.Fprintf(ios.Out, "%s %s\n", time.Now().Format(time.RFC3339), report.CountsLine(c))
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
