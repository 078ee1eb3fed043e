package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/ledger"
	"github.com/bulksend/bulksend/internal/optout"
	"github.com/bulksend/bulksend/internal/reconcile"
	smschannel "github.com/bulksend/bulksend/internal/sms/channel"
	"github.com/bulksend/bulksend/internal/store"
	wachannel "github.com/bulksend/bulksend/internal/whatsapp/channel"
	"github.com/bulksend/bulksend/internal/whatsapp/receive"
	"github.com/bulksend/bulksend/internal/whatsapp/webhook"
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
	lock, err := store.Acquire(o.db, "reconcile")
	if err != nil {
		return err
	}
	defer lock.Release()
	st, err := openForReading(o.db)
	if err != nil {
		return err
	}
	defer st.Close()
	// Rows are found by message id: a run killed while sending left the
	// index dropped.
	if err := st.IndexMessageIDs(ctx); err != nil {
		return err
	}
	s, err := st.Settings(ctx)
	if err != nil {
		return err
	}
	ch := channelOf(s.Channel)
	senders := s.Senders
	if !ch.eachSender {
		senders = nil
	} else if len(senders) == 0 { // the CSV has a from column
		r, err := st.Breakdown(ctx)
		if err != nil {
			return err
		}
		for _, sc := range r.BySender {
			senders = append(senders, sc.Sender)
		}
	}
	rc, err := reconcile.New(st, reconcile.Options{
		CampaignID: s.CampaignID, Senders: senders, Unmatched: policy, Grace: o.grace,
		MaxAttempts: s.MaxAttempts, Now: time.Now,
	})
	if err != nil {
		return err
	}
	logs, err := expandLogs(o.logs)
	if err != nil {
		return err
	}
	led, err := o.hearing.open(ctx, log)
	if err != nil {
		return err
	}
	if led != nil {
		defer led.Close()
	}
	h := newHearer(ctx, led, st)
	keywords := o.hearing.keywords()
	for _, path := range logs {
		if err := ch.reconcile(ctx, rc, path, ios.In, log, keywords, h.hear); err != nil {
			return err
		}
	}
	heard, err := h.Flush()
	if err != nil {
		return err
	}
	sum, err := rc.Finish(ctx)
	if err != nil {
		return err
	}
	counts, err := st.Counts(ctx)
	if err != nil {
		return err
	}
	if o.json {
		out := struct {
			reconcile.Summary
			Heard heardSummary `json:"heard"`
		}{sum, heard}
		if err := json.NewEncoder(ios.Out).Encode(out); err != nil {
			return err
		}
	} else {
		printReconcile(ios, sum, counts)
		printHeard(ios, heard, led != nil)
	}
	if counts.InDoubt > 0 {
		return &unfinishedError{
			reason: fmt.Sprintf("unfinished: %d rows still in doubt", counts.InDoubt),
			hint:   "add later webhook logs, or decide with --unmatched resend|fail (after --grace)",
		}
	}
	return nil
}

// readWebhookLog applies the webhook log at path ("-": stdin, gzip
// detected). A log with bytes and no webhook body at all is not the log
// meant: saying "nothing changed" with exit 0 would tell cron all is well.
// One of webhook bodies without statuses (messages, template or account
// updates: a quiet hour of a receiver's log) is counted, and is no error.
func readWebhookLog(ctx context.Context, rc *reconcile.Reconciler, path string, stdin io.Reader, log *slog.Logger, k optout.Keywords, hear func(optout.Heard)) error {
	log.Debug("reading webhook log", "path", path)
	c, err := wachannel.ReadLog(ctx, rc, path, stdin, wachannel.Hearing(k, hear))
	if err != nil {
		return err
	}
	switch {
	case c.Bytes > 0 && c.Statuses == 0 && c.NotStatus == 0:
		return usagef("reconcile reads the webhooks your receiver logged (a JSON body per line, pretty-printed, or an array of them)",
			"webhook log %s: no webhook body in it: %s", path, describeLog(c))
	case c.Statuses == 0 && c.NotStatus > 0:
		log.Info(fmt.Sprintf("webhook log %s: %s: nothing to apply", path, describeLog(c)))
	}
	return nil
}

// readSMSEventLog applies the AWS SMS event records at path: JSON lines from
// Firehose or a CloudWatch Logs export (see package smsevent).
func readSMSEventLog(ctx context.Context, rc *reconcile.Reconciler, path string, stdin io.Reader, log *slog.Logger, k optout.Keywords, hear func(optout.Heard)) error {
	log.Debug("reading SMS event log", "path", path)
	c, err := smschannel.ReadLog(ctx, rc, path, stdin, smschannel.Hearing(k, hear))
	if err != nil {
		return err
	}
	if c.Events == 0 && c.Invalid+c.NotEvent > 0 {
		where := ""
		if len(c.FirstInvalid) > 0 {
			where = fmt.Sprintf(" (first invalid at line %d)", c.FirstInvalid[0])
		}
		return usagef("reconcile reads the SMS event records of your configuration set's event destination (Firehose or CloudWatch Logs exports, JSON lines)",
			"SMS event log %s: no SMS event in it: %d records not SMS events, %d invalid%s", path, c.NotEvent, c.Invalid, where)
	}
	return nil
}

// describeLog says what a log held instead of statuses, e.g. "39 lines,
// none a webhook body".
func describeLog(c webhook.Counts) string {
	n := func(v int64, one, many string) string {
		if v == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", v, many)
	}
	lines := n(c.TextLines, "line", "lines")
	switch {
	case c.NotStatus > 0 && c.Invalid > 0:
		return fmt.Sprintf("%s: %s without statuses (messages, not statuses?) and %s (first at line %d)", lines,
			n(c.NotStatus, "webhook body", "webhook bodies"), n(c.Invalid, "record that is not a webhook body", "records that are not webhook bodies"), c.FirstInvalid[0])
	case c.NotStatus > 0:
		return fmt.Sprintf("%s: %s, none with statuses (messages, not statuses?)", lines, n(c.NotStatus, "webhook body", "webhook bodies"))
	default:
		return lines + ", none a webhook body"
	}
}

// kindsOtherThanStatuses lists what the logs held besides statuses, by
// kind ("messages 3, user_preferences 1"), in name order; "" for nothing.
func kindsOtherThanStatuses(kinds map[string]int64) string {
	var out []string
	for k, n := range kinds {
		if k != "statuses" {
			out = append(out, fmt.Sprintf("%s %d", esc(cmp.Or(k, "(no field)")), n))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// printHeard says what recipients said back, when they said anything.
func printHeard(ios *IO, h heardSummary, kept bool) {
	if h == (heardSummary{}) {
		return
	}
	fmt.Fprintf(ios.Err, "bulksend: reconcile: %d replies (%d rows took their first), %d opt-outs (%d new), %d opt-ins (%d lifted)\n",
		h.Replies, h.Recorded, h.Stops, h.Added, h.Lifts, h.Lifted)
	if !kept && h.Stops+h.Lifts > 0 {
		fmt.Fprintln(ios.Err, "bulksend: reconcile: no operator ledger: those opt-outs were not kept")
	}
}

func printReconcile(ios *IO, s reconcile.Summary, c campaign.Counts) {
	w := ios.Err
	fmt.Fprintf(w, "bulksend: reconcile: %d events read: %d matched (%d applied), %d foreign, %d not statuses, %d invalid, %d unknown status values\n",
		s.Events, s.Matched, s.Applied, s.Foreign, s.NotStatus, s.Invalid, s.Unknown)
	if kinds := kindsOtherThanStatuses(s.Kinds); kinds != "" {
		fmt.Fprintf(w, "bulksend: reconcile: by kind: %s\n", kinds)
	}
	if len(s.FirstInvalidLines) > 0 {
		lines := make([]string, len(s.FirstInvalidLines))
		for i, l := range s.FirstInvalidLines {
			lines[i] = fmt.Sprint(l)
		}
		fmt.Fprintf(w, "bulksend: reconcile: first invalid lines: %s\n", strings.Join(lines, ", "))
	}
	if len(s.Settled) > 0 {
		keys := make([]string, 0, len(s.Settled))
		for k := range s.Settled {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %d", k, s.Settled[k])
		}
		fmt.Fprintf(w, "bulksend: reconcile: rows in doubt settled: %s\n", strings.Join(parts, ", "))
	}
	if s.Recovered > 0 {
		fmt.Fprintf(w, "bulksend: reconcile: %d rows a stopped run left sending had no status: in doubt, then --unmatched applied\n", s.Recovered)
	}
	switch {
	case s.Changed > 0 || s.Recovered > 0:
		fmt.Fprintf(w, "bulksend: reconcile: %d rows changed, %d still in doubt\n", s.Changed, s.StillInDoubt)
	case s.Matched > 0:
		fmt.Fprintf(w, "bulksend: reconcile: nothing changed: these logs were applied before\n")
	default:
		fmt.Fprintf(w, "bulksend: reconcile: nothing changed: no status of this campaign in these logs\n")
	}
	fmt.Fprintf(w, "bulksend: campaign: %s\n", countsLine(c))
}

// expandLogs replaces a folder among the logs by the files of the webhook
// log bulksend receive keeps there, in the order they were written.
func expandLogs(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() {
			out = append(out, p) // the reader names what is wrong with it
			continue
		}
		files, err := receive.Files(p)
		if err != nil {
			return nil, usagef("", "%w", err)
		}
		if len(files) == 0 {
			return nil, usagef("name a folder bulksend receive keeps its log in, or the log files", "%s holds no webhook log of bulksend receive", p)
		}
		out = append(out, files...)
	}
	return out, nil
}
