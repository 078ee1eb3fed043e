package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/inbound"
	"github.com/bulksend/bulksend/internal/ledger"
	"github.com/bulksend/bulksend/internal/optout"
	"github.com/bulksend/bulksend/internal/report"
	"github.com/bulksend/bulksend/internal/whatsapp/receive"
)

type reconcileOptions struct {
	db        string
	logs      []string
	unmatched string
	grace     time.Duration
	json      bool
	hearing
}

// hearing are the flags of the commands that hear recipients back
// (reconcile, receive): the operator ledger their opt-outs go to, and
// the operator's own stop and start words.
type hearing struct {
	ledger                string
	stopWords, startWords []string
}

func (h *hearing) flags(f *pflag.FlagSet) {
	f.StringVar(&h.ledger, "ledger", "", "the operator ledger that keeps opt-outs (default $BULKSEND_LEDGER, else the user's state directory)")
	f.StringArrayVar(&h.stopWords, "stop-word", nil, "a reply that also opts out, besides STOP, UNSUBSCRIBE and the FCC's and AWS's words (repeatable)")
	f.StringArrayVar(&h.startWords, "start-word", nil, "a reply that also opts back in, besides START and UNSTOP (repeatable)")
}

func (h *hearing) keywords() optout.Keywords { return optout.New(h.stopWords, h.startWords) }

// open opens the operator ledger. Without one, what is heard is counted
// and replies recorded, but no opt-out is kept: said in the log.
func (h *hearing) open(ctx context.Context, log *slog.Logger) (*ledger.Ledger, error) {
	path := h.ledger
	if path == "" {
		p, err := ledger.DefaultPath()
		if err != nil {
			log.Warn("no operator ledger: opt-outs read are counted, not kept (pass --ledger PATH or set $BULKSEND_LEDGER)", "err", err)
			return nil, nil
		}
		path = p
	}
	l, err := ledger.Open(ctx, path)
	if err != nil {
		return nil, usagef("pass --ledger PATH (or $BULKSEND_LEDGER) to a file of your own", "operator ledger: %w", err)
	}
	return l, nil
}

func newReconcileCmd(ios *IO, logger func() (*slog.Logger, error)) *cobra.Command {
	o := &reconcileOptions{}
	cmd := &cobra.Command{
		Use:   "reconcile CAMPAIGN.csv|--db PATH LOGFILE... [flags]",
		Short: "Settle rows in doubt and record delivered/read from exported status-webhook logs",
		Long: `Reconcile reads status webhooks exported from your webhook receiver (Meta
webhook bodies one per line, pretty-printed, one after another, or in JSON
arrays; .gz read transparently; "-" is stdin) and applies them to the checkpoint: statuses match rows by
biz_opaque_callback_data, else by wamid; they apply monotonically
(sent < delivered < read), so duplicates and any order give the same result.

A row in doubt that a webhook shows was sent is never resent. Rows still in
doubt afterwards get the --unmatched policy once their last attempt is older
than --grace: hold (default) keeps them in doubt, resend makes them pending
for the next run (may duplicate), fail fails them (may miss).

Running it again with the same logs changes nothing.

Exit status: 0 done and no row in doubt; 1 error; 2 usage, or a log with no
status webhook in it; 3 rows still in doubt; 4 a run holds the checkpoint.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.db == "" {
				if len(args) < 2 {
					return usagef("e.g. 'bulksend reconcile campaign.csv webhooks.jsonl'", "reconcile takes the campaign CSV (or --db) and one or more webhook logs")
				}
				db, err := dbPath(args[0])
				if err != nil {
					return err
				}
				o.db, args = db, args[1:]
			}
			if len(args) == 0 {
				return usagef("e.g. 'bulksend reconcile --db campaign.bulksend.db webhooks.jsonl.gz'", "name one or more webhook logs")
			}
			o.logs = args
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			return runReconcile(cmd.Context(), ios, o, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.db, "db", "", "checkpoint file (default: beside the CSV)")
	f.StringVar(&o.unmatched, "unmatched", "hold", "rows still in doubt: hold, resend (may duplicate) or fail (may miss)")
	f.DurationVar(&o.grace, "grace", time.Hour, "apply --unmatched only to rows whose last attempt is older than this (webhooks can be late)")
	f.BoolVar(&o.json, "json", false, "print the summary as one JSON object on stdout")
	o.hearing.flags(f)
	return cmd
}

func runReconcile(ctx context.Context, ios *IO, o *reconcileOptions, log *slog.Logger) error {
	policy, err := campaign.ParsePolicy(o.unmatched)
	if err != nil {
		return usagef("", "invalid --unmatched: %w", err)
	}
	if _, err := os.Stat(o.db); err != nil {
		return usagef("run 'bulksend run CAMPAIGN.csv' first, or point --db at the checkpoint", "no checkpoint: %w", err)
	}
	ctx, stop := signalContext(ctx, ios, log, reconcileInterrupt)
	defer stop()
	var ch *channelEntry // the campaign's, once its checkpoint is read
	out, err := inbound.Reconcile(ctx, inbound.ReconcileOptions{
		DB: o.db, Logs: o.logs, Stdin: ios.In, Unmatched: policy, Grace: o.grace, Keywords: o.hearing.keywords(), Log: log,
		Open:      openForReading,
		Ledger:    func(ctx context.Context) (*ledger.Ledger, error) { return o.hearing.open(ctx, log) },
		LogFiles:  receive.Files,
		ChannelOf: func(stored string) inbound.Channel { ch = channelOf(stored); return ch.inbound },
	})
	var folder *inbound.LogFolderError
	switch {
	case errors.As(err, &folder) && folder.Err == nil:
		return usagef("name a folder bulksend receive keeps its log in, or the log files", "%w", err)
	case errors.As(err, &folder):
		return usagef("", "%w", err)
	case err != nil && ch != nil:
		return ch.channelWords(err)
	case err != nil:
		return err
	}
	if o.json {
		if err := json.NewEncoder(ios.Out).Encode(out); err != nil {
			return err
		}
	} else {
		for _, l := range report.ReconcileLines(out.Summary) {
			fmt.Fprintf(ios.Err, "bulksend: reconcile: %s\n", flagNames(l))
		}
		fmt.Fprintf(ios.Err, "bulksend: campaign: %s\n", report.CountsLine(out.Counts))
		for _, l := range out.Heard.Lines(out.Kept, out.Scope) {
			fmt.Fprintf(ios.Err, "bulksend: reconcile: %s\n", l)
		}
	}
	if out.Counts.InDoubt > 0 {
		return &unfinishedError{
			reason: fmt.Sprintf("unfinished: %d rows still in doubt", out.Counts.InDoubt),
			hint:   "add later webhook logs, or decide with --unmatched resend|fail (after --grace)",
		}
	}
	return nil
}
