package inbound

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/ledger"
	"github.com/bulksend/bulksend/internal/optout"
	"github.com/bulksend/bulksend/internal/reconcile"
	"github.com/bulksend/bulksend/internal/store"
)

// replyWindow is how long after its last run a campaign still takes the
// replies a receiver hears: later, a reply answers a later campaign, or
// none.
const replyWindow = 7 * 24 * time.Hour

// A status of a row a run is still writing (its answer not recorded yet:
// the webhook came first) is tried again every retryEvery for up to
// retryFor; at most retryMax wait, the oldest dropped first. What is
// dropped waits in the log for reconcile.
const (
	retryEvery = time.Second
	retryFor   = 2 * time.Minute
	retryMax   = 100_000
)

// refreshEvery bounds how often an unknown campaign makes the applier read
// the ledger's campaigns again.
const refreshEvery = 5 * time.Second

// LiveConfig is what an Applier applies to, and how it reads.
type LiveConfig struct {
	Log *slog.Logger
	// Ledger is where campaigns' checkpoints are found and opt-outs go;
	// nil: campaigns only from Checkpoints, opt-outs counted only.
	Ledger   *ledger.Ledger
	Keywords optout.Keywords // the stop and start words
	// Channels read the bodies kept, each body by the first that owns it.
	Channels []Channel
	// Checkpoints are campaigns' checkpoints named by the operator,
	// besides those the ledger knows.
	Checkpoints []string
}

// Applier applies what a receiver keeps while campaigns run: statuses
// to the checkpoints of the campaigns they name (their row tags), replies
// to the rows they answer, stops and lifts to the ledger's opt-outs. The
// log the receiver kept stays the source of truth: whatever this misses
// (a campaign it cannot find, a row a run was writing), a reconcile of
// the log applies, with the same result for what it did apply.
//
// It opens checkpoints live (store.OpenLive): it takes no lock, so a run
// goes on sending while its statuses come in.
type Applier struct {
	cfg LiveConfig

	mu        sync.Mutex
	named     map[string]string // campaign ID → checkpoint, from cfg.Checkpoints
	known     map[string]ledger.Campaign
	refreshed time.Time
	open      map[string]*store.Store // by checkpoint path
	stats     LiveStats
	later     []laterStatus // statuses to try again (see retryEvery)
	laterRe   []laterReply  // replies to try again
	stop      chan struct{}
	done      chan struct{}
}

// laterReply is a reply that found no row yet.
type laterReply struct {
	since time.Time
	r     campaign.Reply
}

// laterStatus is a status that found no row to change yet.
type laterStatus struct {
	since time.Time
	s     reconcile.Status
}

// LiveStats are what live apply did.
type LiveStats struct {
	Statuses  int64        `json:"statuses"`            // statuses read from kept bodies
	Applied   int64        `json:"applied"`             // of those, the ones that changed their row
	Unplaced  int64        `json:"unplaced"`            // statuses of a campaign not found (reconcile the log)
	Campaigns int          `json:"campaigns"`           // checkpoints written to
	Heard     HeardSummary `json:"heard"`               // replies and opt-outs
	Failed    int64        `json:"failed_applications"` // batches that could not be applied (logged)
}

// OpenError is a checkpoint named to apply to that could not be opened.
type OpenError struct {
	Checkpoint string
	Err        error
}

func (e *OpenError) Error() string { return fmt.Sprintf("checkpoint %s: %v", e.Checkpoint, e.Err) }
func (e *OpenError) Unwrap() error { return e.Err }

// NewApplier starts an applier; Close stops it.
func NewApplier(ctx context.Context, cfg LiveConfig) (*Applier, error) {
	a := &Applier{cfg: cfg, named: map[string]string{}, known: map[string]ledger.Campaign{}, open: map[string]*store.Store{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go a.retry()
	for _, db := range cfg.Checkpoints {
		st, err := store.OpenLive(db)
		if err != nil {
			a.Close()
			return nil, &OpenError{Checkpoint: db, Err: err}
		}
		s, err := st.Settings(ctx)
		if err != nil {
			st.Close()
			a.Close()
			return nil, err
		}
		a.open[st.Path()] = st
		a.named[s.CampaignID] = st.Path()
	}
	return a, nil
}

// retry tries the statuses waiting again, every retryEvery, until Close.
func (a *Applier) retry() {
	defer close(a.done)
	t := time.NewTicker(retryEvery)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
			a.Kept(nil)
		}
	}
}

// Close stops retrying and closes the checkpoints it opened.
func (a *Applier) Close() error {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	var err error
	for _, st := range a.open {
		err = errors.Join(err, st.Close())
	}
	a.open = map[string]*store.Store{}
	return err
}

// Stats returns what it did so far.
func (a *Applier) Stats() LiveStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.stats
	s.Campaigns = len(a.open)
	return s
}

// Kept is the receiver's OnKept: it applies bodies just kept. A failure is
// logged and counted: the bodies are in the log, for reconcile.
func (a *Applier) Kept(bodies [][]byte) {
	ctx := context.Background()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(bodies) == 0 && len(a.later) == 0 && len(a.laterRe) == 0 {
		return
	}
	if err := a.apply(ctx, bodies); err != nil {
		a.stats.Failed++
		a.cfg.Log.Warn("live apply failed: the bodies are kept; reconcile the log to apply them", "bodies", len(bodies), "err", err)
	}
}

func (a *Applier) apply(ctx context.Context, bodies [][]byte) error {
	byChannel := make([]bytes.Buffer, len(a.cfg.Channels))
	for _, b := range bodies {
		i := owner(a.cfg.Channels, b)
		if i < 0 {
			continue // no channel's: a reconcile of the log says what it is
		}
		buf := &byChannel[i]
		buf.Write(b)
		buf.WriteByte('\n')
	}
	h := newHearer(ctx, a.cfg.Ledger, nil)
	var replies []optout.Heard
	hear := func(x optout.Heard) {
		h.hear(x)
		if x.Reply {
			replies = append(replies, x)
		}
	}
	byCampaign := map[string][]reconcile.Status{}
	since := map[string]time.Time{} // when each campaign's oldest status waiting came
	now := time.Now()
	for _, l := range a.later {
		if now.Sub(l.since) > retryFor {
			continue
		}
		id := l.s.Ref.Campaign
		if t, ok := since[id]; !ok || l.since.Before(t) {
			since[id] = l.since
		}
		byCampaign[id] = append(byCampaign[id], l.s)
	}
	a.later = a.later[:0]
	for i := range byChannel {
		if byChannel[i].Len() == 0 {
			continue
		}
		if err := collect(a.cfg.Channels[i].Statuses(&byChannel[i], a.cfg.Keywords, hear), byCampaign, &a.stats); err != nil {
			return err
		}
	}
	for id, statuses := range byCampaign {
		st, err := a.checkpoint(ctx, id)
		if err != nil {
			return err
		}
		if st == nil {
			a.stats.Unplaced += int64(len(statuses))
			continue
		}
		rc, err := reconcile.New(st, reconcile.Options{CampaignID: id})
		if err != nil {
			return err
		}
		if err := rc.Read(ctx, "receive", &statusList{list: statuses}); err != nil {
			return err
		}
		// No Finish: it would make the rows a run is sending in doubt.
		sum := rc.Summary()
		a.stats.Applied += sum.Applied
		if sum.Foreign > 0 {
			// Rows a run was writing (or not of this campaign): again
			// later, all of them, which changes nothing twice.
			t, ok := since[id]
			if !ok {
				t = now
			}
			for _, s := range statuses {
				a.later = append(a.later, laterStatus{t, s})
			}
		}
	}
	if n := len(a.later) - retryMax; n > 0 {
		a.later = append(a.later[:0], a.later[n:]...)
	}
	heard, err := h.Flush()
	a.stats.Heard.add(heard)
	if err != nil {
		return err
	}
	return a.recordReplies(ctx, replies)
}

// collect reads src's statuses into byCampaign, by the campaign their row
// tag names; those without one are left to reconcile (found by message ID
// in one campaign's checkpoint, they need no live answer).
func collect(src reconcile.Source, byCampaign map[string][]reconcile.Status, st *LiveStats) error {
	for {
		s, err := src.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		st.Statuses++
		if s.Ref.IsZero() {
			st.Unplaced++
			continue
		}
		byCampaign[s.Ref.Campaign] = append(byCampaign[s.Ref.Campaign], s)
	}
}

// checkpoint is the open checkpoint of campaign id: named in the config,
// else found in the ledger's campaigns (read again when id is not there,
// at most every refreshEvery); nil when it is nowhere.
func (a *Applier) checkpoint(ctx context.Context, id string) (*store.Store, error) {
	path, ok := a.named[id]
	if !ok {
		c, found := a.known[id]
		if !found && a.cfg.Ledger != nil && time.Since(a.refreshed) >= refreshEvery {
			a.refreshed = time.Now()
			cs, err := a.cfg.Ledger.Campaigns(ctx)
			if err != nil {
				return nil, err
			}
			for _, c := range cs {
				a.known[c.ID] = c
			}
			c, found = a.known[id]
		}
		if !found {
			return nil, nil
		}
		path = c.Checkpoint
	}
	if st := a.open[path]; st != nil {
		return st, nil
	}
	st, err := store.OpenLive(path)
	if err != nil {
		// Moved or deleted since: its statuses wait in the log.
		a.cfg.Log.Warn("live apply: the campaign's checkpoint cannot be opened", "campaign", id, "checkpoint", path, "err", err)
		delete(a.known, id)
		return nil, nil
	}
	a.open[path] = st
	return st, nil
}

// recordReplies records replies on the rows they answer, in the
// checkpoints open and those the ledger knows ran in the last
// replyWindow: a reply names no campaign, only at most the message it
// answers.
func (a *Applier) recordReplies(ctx context.Context, heard []optout.Heard) error {
	now := time.Now()
	var replies []campaign.Reply
	var since []time.Time
	for _, l := range a.laterRe {
		if now.Sub(l.since) <= retryFor {
			replies, since = append(replies, l.r), append(since, l.since)
		}
	}
	a.laterRe = a.laterRe[:0]
	for _, x := range heard {
		replies = append(replies, replyOf(x))
		since = append(since, now)
	}
	if len(replies) == 0 {
		return nil
	}
	if a.cfg.Ledger != nil {
		cs, err := a.cfg.Ledger.Campaigns(ctx)
		if err != nil {
			return err
		}
		for _, c := range cs {
			if time.Since(c.LastRun) > replyWindow {
				break // newest first
			}
			a.known[c.ID] = c
			if _, err := a.checkpoint(ctx, c.ID); err != nil {
				return err
			}
		}
	}
	placed := make([]bool, len(replies))
	for _, st := range a.open {
		n, p, err := st.PlaceReplies(ctx, replies)
		a.stats.Heard.Recorded += n
		if err != nil {
			return err
		}
		for i := range p {
			placed[i] = placed[i] || p[i]
		}
	}
	// A reply that came before the run recorded the message it answers
	// (or that answers no campaign): again later, for a while.
	for i, ok := range placed {
		if !ok && len(a.laterRe) < retryMax {
			a.laterRe = append(a.laterRe, laterReply{since[i], replies[i]})
		}
	}
	return nil
}

// statusList is a reconcile.Source of statuses already read.
type statusList struct {
	list []reconcile.Status
	i    int
}

func (l *statusList) Next() (reconcile.Status, error) {
	if l.i == len(l.list) {
		return reconcile.Status{}, io.EOF
	}
	l.i++
	return l.list[l.i-1], nil
}

func (l *statusList) Counts() reconcile.SourceCounts {
	return reconcile.SourceCounts{Statuses: int64(l.i)}
}
