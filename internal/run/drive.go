package run

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/ledger"
	"github.com/bulksend/bulksend/internal/store"
)

// Hooks are what a front end adds to a run that sends.
type Hooks struct {
	// Configure, if not nil, may add to the engine's configuration (an
	// Observer) before the engine is made.
	Configure func(cfg *engine.Config)
	// Started, if not nil, is called once the engine is made and the run
	// recorded, before the first send, with the rows to send; the func it
	// returns, if not nil, is called when the engine has stopped.
	Started func(eng *engine.Engine, at time.Time, counts campaign.Counts) (stopped func())
}

// Result is what a run comes to: a dry run's Plan, or a run's Outcome.
type Result struct {
	Plan    *Plan
	Outcome *Outcome
}

// Outcome is what a run that sent did, and what is left.
type Outcome struct {
	Counts      campaign.Counts // the campaign's, at the end
	Stats       engine.Stats    // this run's
	Interrupted bool            // runCtx was cancelled
	// NextDue is when the next pending row is due, when that is later
	// than the end of the run (a retry scheduled); zero otherwise.
	NextDue time.Time
	// Waiting is what the pending rows wait for (a window, their
	// send_at, the daily limit, the start), as the run left them.
	Waiting store.Waiting
	// Ended: the campaign's end (EndAt) has come, or comes before any
	// pending row may be sent; Expired counts the rows it skipped then.
	Ended   bool
	EndAt   time.Time
	Expired int64
	// Rests are the sender numbers the provider restricted in this run;
	// RestUntil is when the provider asked to send again, when it did.
	Rests     []engine.Rest
	RestUntil time.Time
}

// Unfinished reports whether the campaign must run again.
func (o *Outcome) Unfinished() bool { return o.Interrupted || o.Counts.Unfinished() }

// Run runs the campaign: it prepares the rows (unless ReadOnly), lets the
// channel read its senders and opt-out lists, and then plans (a dry run,
// whose Plan comes even when the senders could not be read, with that
// error) or sends through the channel's Sender until every row is settled, the
// engine stops, or runCtx is cancelled (the Outcome says Interrupted).
// ctx, not cancelled by an interrupt, bounds what is recorded after.
// A run that sent returns its Outcome even with an error (fatal, the API
// unreachable).
func (c *Campaign) Run(ctx, runCtx context.Context, h Hooks) (Result, error) {
	if !c.ReadOnly {
		if err := c.Prepare(runCtx); err != nil {
			return Result{}, err
		}
	}
	// A dry run that cannot read its senders (no network, say) still
	// plans: the plan comes with the preflight's error.
	var preflightErr error
	if p, ok := c.ch.(Preflighter); ok {
		if err := p.Preflight(runCtx, c); err != nil {
			if !c.opts.DryRun || runCtx.Err() != nil {
				return Result{}, err
			}
			preflightErr = err
		}
	}
	if s, ok := c.ch.(OptOutSyncer); ok {
		if err := s.SyncOptOuts(runCtx, c); err != nil {
			return Result{}, err
		}
	}
	if c.opts.DryRun {
		p, err := c.Plan(runCtx)
		if err == nil {
			err = preflightErr
		}
		return Result{Plan: p}, err
	}
	sender, err := c.ch.Sender(runCtx, c)
	if err != nil {
		return Result{}, err
	}
	out, err := c.drive(ctx, runCtx, sender, h)
	if sender.Stop != nil {
		if serr := sender.Stop(); serr != nil {
			// A short sandbox log would leave rows wrongly in doubt at
			// reconcile: it is told whatever else happened.
			err = errors.Join(err, serr)
		}
	}
	return Result{Outcome: out}, err
}

// Prepare readies the checkpoint for sending: rows a stopped run left
// sending are in doubt, the in-doubt policy applies, then the
// suppression list (after the policy, so that rows it made pending again
// are excluded too).
func (c *Campaign) Prepare(ctx context.Context) error {
	o, st := &c.opts, c.Store
	now := time.Now()
	if n, err := st.RecoverSending(ctx, now); err != nil {
		return err
	} else if n > 0 {
		o.Log.Warn("the last run ended while sending: those rows are in doubt", "rows", n)
	}
	if r, err := st.ApplyPolicy(ctx, o.InDoubt, now.Add(-o.InDoubtGrace), now, c.Settings.MaxAttempts); err != nil {
		return err
	} else if r.Total() > 0 {
		o.Log.Warn("applied the in-doubt policy", "policy", o.InDoubt, "rows", r.Total(), "resent", r.Resent, "failed", r.Failed, "failed_last_attempt", r.LastAttempt)
	}
	if o.Exclude != "" {
		n, err := c.exclude(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			o.Log.Info("suppression list applied", "rows_skipped", n)
		}
	}
	if o.Ledger != nil {
		n, err := c.optOuts(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			o.Log.Info("the opt-outs of the operator ledger applied: those rows are skipped (opted_out)", "rows_skipped", n, "ledger", o.Ledger.Path())
		}
	}
	return nil
}

// optOuts skips the rows whose phone opted out, as the operator ledger
// knows from any campaign or channel, each with how and when.
func (c *Campaign) optOuts(ctx context.Context) (int64, error) {
	marketing := true
	if m, ok := c.ch.(Marketer); ok {
		marketing = m.Marketing(c.Settings)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	outs := make(chan ledger.OptOut, 256)
	errc := make(chan error, 1)
	go func() {
		defer close(outs)
		errc <- c.opts.Ledger.EachOptOut(ctx, func(o ledger.OptOut) error {
			if o.MarketingOnly && !marketing {
				return nil
			}
			select {
			case outs <- o:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return c.Store.OptOutEach(ctx, func() (string, string, error) {
		o, ok := <-outs
		if !ok {
			if err := <-errc; err != nil {
				return "", "", fmt.Errorf("operator ledger: %w", err)
			}
			return "", "", io.EOF
		}
		return o.Phone, OptOutReason(o), nil
	})
}

// OptOutReason is how a row skipped for an opt-out says why.
func OptOutReason(o ledger.OptOut) string {
	r := "opted out: " + o.Source
	if o.Channel != "" {
		r += " (" + o.Channel + ", " + o.At.UTC().Format(time.DateOnly) + ")"
	}
	return r
}

// ExcludeError is a suppression list that cannot be read.
type ExcludeError struct {
	Path string
	Err  error
}

func (e *ExcludeError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *ExcludeError) Unwrap() error { return e.Err }

// exclude skips the rows whose phone is on the suppression list; its
// unusable lines are logged (the first five) and passed over.
func (c *Campaign) exclude(ctx context.Context) (int64, error) {
	path := c.opts.Exclude
	f, err := os.Open(path)
	if err != nil {
		return 0, &ExcludeError{Path: path, Err: err}
	}
	defer f.Close()
	lr := csvin.NewListReader(bufio.NewReader(f), c.Settings.DefaultRegion)
	bad := 0
	return c.Store.Exclude(ctx, func() (string, error) {
		for {
			phone, line, err := lr.Next()
			if err == nil || errors.Is(err, io.EOF) {
				return phone, err
			}
			var lerr *csvin.LineError
			if !errors.As(err, &lerr) {
				return "", &ExcludeError{Path: path, Err: err}
			}
			if bad++; bad <= 5 {
				c.opts.Log.Warn("suppression list: unusable phone ignored", "file", path, "line", line, "err", err)
			}
		}
	})
}

// drive runs the engine over the checkpoint's due rows, recording the run
// in the campaign's history.
func (c *Campaign) drive(ctx, runCtx context.Context, sender *Sender, h Hooks) (*Outcome, error) {
	st, s := c.Store, c.Settings
	counts, err := st.Counts(runCtx)
	if err != nil {
		return nil, err
	}
	senders, err := st.Senders(runCtx)
	if err != nil {
		return nil, err
	}
	cfg := engine.Config{
		Checkpoint: st, Sender: sender.Sender, Senders: senders, CampaignID: s.CampaignID, Rate: s.Rate,
		Concurrency: s.Concurrency, MaxAttempts: s.MaxAttempts, ThrottleTries: s.ThrottleTries, Log: c.opts.Log,
		Book: c.opts.Book, Standard: sender.Standard, Proven: sender.Proven,
	}
	if h.Configure != nil {
		h.Configure(&cfg)
	}
	if err := c.seedLearned(ctx, &cfg); err != nil {
		return nil, err
	}
	g, err := c.schedule(runCtx)
	if err != nil {
		return nil, err
	}
	if g != nil {
		cfg.Checkpoint = g
	}
	eng := engine.New(cfg)
	// Sends record message ids faster without their index; it is built
	// again when the engine stops, or by reconcile if this process is
	// killed first.
	if err := st.DropMessageIDIndex(runCtx); err != nil {
		return nil, err
	}
	// The campaign's history: this run, and every request it makes.
	started := time.Now()
	run, err := st.BeginRun(runCtx, store.Run{StartedAt: started, PID: os.Getpid(), Version: c.opts.Version,
		Rate: cfg.Rate, Senders: cfg.Senders})
	if err != nil {
		return nil, err
	}
	if err := c.noteCampaign(runCtx, started); err != nil {
		c.opts.Log.Warn("the operator ledger cannot be written: bulksend receive will not find this campaign by itself ({apply} names it)", "err", err)
	}
	c.opts.Log.Info("sending", "rows", counts.Pending, "senders", len(cfg.Senders), "rate_per_sender", cfg.Rate, "api", sender.Name)
	var stopped func()
	if h.Started != nil {
		stopped = h.Started(eng, started, counts)
	}
	release := c.holdLeases(runCtx, eng, cfg.Senders, cfg.Rate)
	runErr := eng.Run(runCtx)
	release()
	if stopped != nil {
		stopped()
	}
	stats := eng.Stats()
	if stats.Requests == 0 {
		// Nothing left: a run of a finished campaign (from cron, say) is
		// not part of its history.
		if err := st.ForgetRun(ctx, run); err != nil {
			return nil, errors.Join(runErr, err)
		}
	} else if err := st.EndRun(ctx, run, time.Now(), stats.Learned); err != nil {
		return nil, errors.Join(runErr, err)
	}
	if err := st.IndexMessageIDs(ctx); err != nil {
		return nil, errors.Join(runErr, err)
	}
	if until := eng.RestUntil(); until.After(time.Now()) {
		// Rows the run never claimed are due now: keep the rest for them.
		if _, err := st.Defer(ctx, until); err != nil {
			return nil, err
		}
	}
	var expired int64
	if g != nil {
		if expired, err = c.endSchedule(ctx, g); err != nil {
			return nil, errors.Join(runErr, err)
		}
	}
	c.noteLedger(ctx, stats, cfg.Learned)
	final, err := st.Counts(ctx)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Counts: final, Stats: eng.Stats(), Interrupted: runErr != nil, Rests: eng.Rested(), RestUntil: eng.RestUntil(), Expired: expired}
	if final.Pending > 0 {
		now := c.now()
		if t, ok, err := st.NextDue(ctx, ""); err == nil && ok && t.After(now) {
			out.NextDue = t
		}
		if out.Waiting, err = st.Waiting(ctx, now); err != nil {
			return nil, errors.Join(runErr, err)
		}
	}
	// The end has come, or comes before the next row may go.
	if out.EndAt = c.Settings.EndAt; !out.EndAt.IsZero() {
		out.Ended = expired > 0 || !c.now().Before(out.EndAt) || (final.Pending > 0 && !out.NextDue.Before(out.EndAt))
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return out, runErr
	}
	return out, nil
}

// seedLearned starts each sender number at the limit the last run that
// learned one found, when it is below the rate: a resume is not throttled
// again to find it, and probes up from there.
func (c *Campaign) seedLearned(ctx context.Context, cfg *engine.Config) error {
	runs, err := c.Store.Runs(ctx)
	if err != nil {
		return err
	}
	for _, r := range slices.Backward(runs) {
		if r.Learned == nil {
			continue
		}
		for _, s := range cfg.Senders {
			if l, ok := r.Learned[s]; ok && cfg.Rate > 0 && l < cfg.Rate {
				if cfg.Learned == nil {
					cfg.Learned = map[string]float64{}
				}
				cfg.Learned[s] = l
				c.opts.Log.Info(fmt.Sprintf("number %s starts at %.0f/s, what run %d found it accepts; it is probed up to the rate %g", s, l, r.ID, cfg.Rate),
					"sender", s, "learned_per_second", math.Round(l), "run", r.ID)
			}
		}
		break
	}
	// What another campaign learned of a number, through the ledger.
	if l := c.opts.Ledger; l != nil && cfg.Rate > 0 {
		for _, s := range cfg.Senders {
			if _, ok := cfg.Learned[s]; ok {
				continue
			}
			v, at, ok, err := l.Learned(ctx, c.opts.ledgerKey(s), time.Now())
			if err != nil {
				c.opts.Log.Warn("the operator ledger could not be read", "ledger", l.Path(), "err", err)
				break
			}
			if ok && v < cfg.Rate {
				if cfg.Learned == nil {
					cfg.Learned = map[string]float64{}
				}
				cfg.Learned[s] = v
				c.opts.Log.Info(fmt.Sprintf("number %s starts at %.0f/s, what a campaign found it accepts on %s; it is probed up to the rate %g", s, v, at.Format(time.DateOnly), cfg.Rate),
					"sender", s, "learned_per_second", math.Round(v))
			}
		}
	}
	return nil
}

// KeepOptOuts records in the operator ledger phones a channel read on a
// provider's own opt-out list (an SMS identity's, --sync-opt-outs), so
// that every later campaign, on every channel and identity, honours them
// too. Without a ledger, or in a dry run, it does nothing; a ledger that
// cannot be written is logged, never the run's failure (the rows are
// skipped all the same).
func (c *Campaign) KeepOptOuts(ctx context.Context, channel campaign.Channel, sender, source string, phones []string) {
	l := c.opts.Ledger
	if l == nil || c.opts.DryRun || len(phones) == 0 || c.tmp != "" {
		return
	}
	now := time.Now()
	o := make([]ledger.OptOut, len(phones))
	for i, p := range phones {
		o[i] = ledger.OptOut{Phone: p, Channel: string(channel), Source: source, Sender: sender, At: now}
	}
	n, err := l.AddOptOuts(ctx, o)
	if err != nil {
		c.opts.Log.Warn("the operator ledger cannot be written: these opt-outs are honoured by this campaign only", "source", source, "err", err)
		return
	}
	if n > 0 {
		c.opts.Log.Info("opt-outs kept in the operator ledger for every later campaign", "source", source, "new", n)
	}
}
