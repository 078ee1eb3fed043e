package inbound

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/ledger"
	"github.com/bulksend/bulksend/internal/optout"
	"github.com/bulksend/bulksend/internal/reconcile"
	"github.com/bulksend/bulksend/internal/store"
)

// ReconcileOptions are a reconcile's inputs, parsed by the front end.
type ReconcileOptions struct {
	DB string // the campaign's checkpoint
	// Logs are the provider logs to read, in order ("-": stdin), or
	// folders bulksend receive keeps its log in (see LogFiles).
	Logs      []string
	Stdin     io.Reader
	Unmatched campaign.Policy // what becomes of rows still in doubt
	Grace     time.Duration   // after their last attempt
	Keywords  optout.Keywords // the stop and start words
	Log       *slog.Logger

	// Open opens the checkpoint once it is locked: the front end's, which
	// says what is wrong with a file that is not one.
	Open func(db string) (*store.Store, error)
	// Ledger opens the operator ledger, nil for none (opt-outs are then
	// counted, not kept); closed when the reconcile is done.
	Ledger func(ctx context.Context) (*ledger.Ledger, error)
	// LogFiles are the files of the log bulksend receive keeps in dir, in
	// the order they were written.
	LogFiles func(dir string) ([]string, error)
	// ChannelOf is the channel of a campaign, by the name its checkpoint
	// stores.
	ChannelOf func(stored string) Channel
}

// Outcome is what a reconcile did; its JSON is the summary's fields and
// "heard".
type Outcome struct {
	reconcile.Summary
	Heard  HeardSummary    `json:"heard"`
	Counts campaign.Counts `json:"-"` // the campaign's rows afterwards
	Kept   bool            `json:"-"` // an operator ledger kept the opt-outs heard
	Scope  string          `json:"-"` // a rehearsal's (store.Settings.Scope): its opt-outs are not kept
}

// Reconcile applies provider logs to a campaign's checkpoint, which it
// locks: statuses to its rows, the policy to rows still in doubt after
// the grace, replies to the rows they answer and opt-outs to the ledger.
// Reading the same logs again changes nothing.
func Reconcile(ctx context.Context, o ReconcileOptions) (*Outcome, error) {
	lock, err := store.Acquire(o.DB, "reconcile")
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	st, err := o.Open(o.DB)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	// Rows are found by message id: a run killed while sending left the
	// index dropped.
	if err := st.IndexMessageIDs(ctx); err != nil {
		return nil, err
	}
	s, err := st.Settings(ctx)
	if err != nil {
		return nil, err
	}
	ch := o.ChannelOf(s.Channel)
	senders, err := reconcileSenders(ctx, st, s, ch)
	if err != nil {
		return nil, err
	}
	rc, err := reconcile.New(st, reconcile.Options{
		CampaignID: s.CampaignID, Senders: senders, Unmatched: o.Unmatched, Grace: o.Grace,
		MaxAttempts: s.MaxAttempts, Now: time.Now,
	})
	if err != nil {
		return nil, err
	}
	logs, err := expandLogs(o.Logs, o.LogFiles)
	if err != nil {
		return nil, err
	}
	// The replies of a run --sandbox are the sandbox's inventions about
	// the CSV's phones, often real customers': its stops are counted,
	// never kept for the real campaigns to honour. (A run pointed at a URL
	// may reach the provider through a proxy: its stops are kept.)
	var led *ledger.Ledger
	scope := ""
	if s.Scope == store.SandboxScope {
		scope = s.Scope
	} else {
		if led, err = o.Ledger(ctx); err != nil {
			return nil, err
		}
	}
	if led != nil {
		defer led.Close()
	}
	h := newHearer(ctx, led, st)
	for _, path := range logs {
		if err := ch.ReadLog(ctx, rc, path, o.Stdin, o.Log, o.Keywords, h.hear); err != nil {
			return nil, err
		}
	}
	out := &Outcome{Kept: led != nil, Scope: scope}
	if out.Heard, err = h.Flush(); err != nil {
		return nil, err
	}
	if out.Summary, err = rc.Finish(ctx); err != nil {
		return nil, err
	}
	if out.Counts, err = st.Counts(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// reconcileSenders are the senders statuses are matched by: the
// campaign's, or those of its CSV's from column; none for a channel
// whose statuses are all looked up.
func reconcileSenders(ctx context.Context, st *store.Store, s store.Settings, ch Channel) ([]string, error) {
	if !ch.EachSender {
		return nil, nil
	}
	if len(s.Senders) > 0 {
		return s.Senders, nil
	}
	r, err := st.Breakdown(ctx)
	if err != nil {
		return nil, err
	}
	var senders []string
	for _, sc := range r.BySender {
		senders = append(senders, sc.Sender)
	}
	return senders, nil
}

// LogFolderError is a folder named among the logs that is not one of
// bulksend receive's: Err is why it could not be listed, nil when it
// holds no log.
type LogFolderError struct {
	Dir string
	Err error
}

func (e *LogFolderError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s holds no webhook log of bulksend receive", e.Dir)
}

func (e *LogFolderError) Unwrap() error { return e.Err }

// expandLogs replaces a folder among paths by the files of the log
// bulksend receive keeps there (files lists them), in the order they were
// written.
func expandLogs(paths []string, files func(dir string) ([]string, error)) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() {
			out = append(out, p) // the reader names what is wrong with it
			continue
		}
		fs, err := files(p)
		if err != nil {
			return nil, &LogFolderError{Dir: p, Err: err}
		}
		if len(fs) == 0 {
			return nil, &LogFolderError{Dir: p}
		}
		out = append(out, fs...)
	}
	return out, nil
}
