package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/bulksend/bulksend/internal/atomicfile"
	"github.com/bulksend/bulksend/internal/report"
	"github.com/bulksend/bulksend/internal/store"
)

type reportOptions struct {
	db   string
	out  string
	json bool
}

func newReportCmd(ios *IO) *cobra.Command {
	o := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report CAMPAIGN.csv | --db PATH [-o report.html] [--json]",
		Short: "Write a campaign's report: one self-contained HTML page with its rates, errors, latency, delivery and runs",
		Long: `Report reads the checkpoint (it works while a run is going on) and writes one
HTML page that needs nothing else to open, print or forward: no script, no
font or image fetched, charts drawn in the page. It shows the campaign
(channel, template or text, numbers, rows, runs); each number's achieved send
rate over time against its configured rate, with the throttled answers on the
same time axis; outcomes and error codes with their titles; the requests'
latency (p50, p90, p99); accepted → delivered → read and the time to
delivered; skipped rows by reason; every run and resume on a timeline (a
killed run is marked); pricing categories that reconcile recorded, and an SMS
campaign's parts.

With -o the page is written to FILE, which appears only when complete;
without it, to stdout. --json prints the same figures as one JSON object on
stdout instead (with -o, the page goes to FILE as well); its fields are only
ever added to.

Exit status: 0 written; 1 I/O error; 2 no checkpoint, or a file that is not a
bulksend checkpoint.`,
		Example: `  bulksend report campaign.csv -o report.html
  bulksend report --db /var/lib/bulksend/spring.bulksend.db --json | jq .funnel`,
		Args: checkpointArgs(&o.db),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.Context(), ios, o)
		},
	}
	cmd.Flags().StringVar(&o.db, "db", "", "checkpoint file (default: beside the CSV)")
	cmd.Flags().StringVarP(&o.out, "output", "o", "", "write the HTML page to FILE instead of stdout")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the figures as one JSON object on stdout")
	return cmd
}

func runReport(ctx context.Context, ios *IO, o *reportOptions) error {
	st, err := openForReading(o.db)
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := report.Gather(ctx, st, now())
	if err != nil {
		return err
	}
	if o.out != "" {
		if err := atomicfile.Write(o.out, 0o644, func(w *bufio.Writer) error { return report.Render(w, r) }); err != nil {
			return err
		}
	}
	switch {
	case o.json:
		return json.NewEncoder(ios.Out).Encode(r)
	case o.out == "":
		bw := bufio.NewWriter(ios.Out)
		if err := report.Render(bw, r); err != nil {
			return err
		}
		return bw.Flush()
	}
	return nil
}

// openForReading opens the checkpoint of a campaign that exists, for
// status, export, report and reconcile: a missing file, or one that is not
// a bulksend checkpoint, is a usage error (exit 2) and is left as it was.
// A checkpoint this process cannot write (read-only media, an auditor's
// copy) is read as it is (store.OpenRead).
func openForReading(db string) (*store.Store, error) {
	fi, err := os.Stat(db)
	if err != nil {
		return nil, usagef("run 'bulksend run CAMPAIGN.csv' first, or point --db at the checkpoint", "no checkpoint: %w", err)
	}
	if fi.IsDir() {
		return nil, usagef("point --db at the CAMPAIGN.bulksend.db file", "no checkpoint: %s is a directory", db)
	}
	switch err := store.Check(db); {
	case errors.Is(err, store.ErrNotCheckpoint):
		return nil, usagef("name the campaign CSV (its checkpoint is CAMPAIGN.bulksend.db beside it) or point --db at the checkpoint", "%w", err)
	case errors.Is(err, store.ErrCorrupt):
		return nil, err
	case errors.Is(err, store.ErrNoSettings):
		return nil, usagef("run 'bulksend run CAMPAIGN.csv' first: this checkpoint was made but no campaign was set up in it", "%s: %w", db, err)
	case err != nil:
		return nil, err
	}
	return store.OpenRead(db)
}
