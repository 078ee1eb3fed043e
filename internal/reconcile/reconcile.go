// Package reconcile applies delivery statuses to a checkpoint: it settles
// rows whose send outcome is unknown (in doubt) and records sent,
// delivered, read and failed for the rest. The statuses come from a Source
// (exported WhatsApp status webhooks, through package webhook) and go to a
// Checkpoint (the SQLite store): both are this package's interfaces.
//
// Statuses apply as a join over a lattice, so duplicates, out-of-order
// delivery and the order of several logs make no difference to the end
// state (but see matching by message ID below), and running again with the same
// logs changes nothing. A row moves up this order and never down:
//
//	pending, sending, in_doubt, failed without a message ID  <  sent  <  failed (by a webhook)  <  delivered  <  read
//
// A failed row without a message ID failed before Meta answered (synchronously,
// or by the in-doubt policy); a status proves it did reach Meta, so it
// moves like an in-doubt row. Skipped rows never change. Timestamps keep
// the earliest instant seen for each status. A failed row keeps the
// failure's reason (campaign.FailMarketingCap) with its code and title. A
// row sent but held back (the store's held flag) is a sent row here: a
// failed status (132015) fails it, a delivered one delivers it.
//
// A row's pricing (category, type, billable) is the first one a status
// gave it and is never replaced: within a batch, that of the earliest
// status that carried one. Meta gives every status of a message the same
// pricing, so this too does not depend on the order of the statuses; for
// statuses of one row that disagree, it depends on where a batch ends.
//
// A status matches a row by its biz_opaque_callback_data when bulksend
// wrote it, else by its message ID: the one the send recorded, or one that a
// status with callback data recorded earlier (in an earlier batch, or in
// the same one). Meta includes the callback data in every status of a
// message sent with it, so the order of the statuses matters here only for
// a log that lost it from some statuses of a message and not others.
//
// Statuses are read in batches: each batch is reduced to one merged
// evidence per row, the rows' current states are loaded in one go, and
// only the rows that change are written, in one transaction per batch.
// Memory is bounded by the batch size, not by the size of the logs. A
// goroutine decodes the log while the batch is applied (decode.go); the
// batch and its application are in batch.go, the lattice in lattice.go.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
)

// Checkpoint is what reconcile reads rows from and writes them to. Its
// methods are called from one goroutine at a time.
type Checkpoint interface {
	// Deliveries puts into out the deliveries of the given rows and of
	// the rows holding the given message IDs, keyed by row, leaving the
	// other entries of out alone. Unknown rows and IDs are absent.
	Deliveries(ctx context.Context, rows []int64, ids []string, out map[int64]Delivery) error
	// SaveDeliveries writes, in one durable step, the status, times and
	// pricing of all the deliveries given, and also the message ID, code,
	// title and reason of those in withIDs. A row's pricing, once stored,
	// is never replaced: a delivery's applies only to a row that has none.
	SaveDeliveries(ctx context.Context, withIDs, others []Delivery, now time.Time) error
	// RecoverSending makes the rows a run left sending in doubt. Only
	// called while no run can be sending: the caller holds the checkpoint.
	RecoverSending(ctx context.Context, now time.Time) (int64, error)
	// ApplyPolicy applies p to the rows in doubt whose last attempt was at
	// or before cutoff (see campaign.Policy).
	ApplyPolicy(ctx context.Context, p campaign.Policy, cutoff, now time.Time, maxAttempts int) (campaign.PolicyResult, error)
	// Counts counts the rows by status.
	Counts(ctx context.Context) (campaign.Counts, error)
}

// Delivery is the part of a row's state that statuses change.
type Delivery struct {
	Row       int64
	Status    campaign.Status
	MessageID string // the provider's message ID
	Code      int
	Title     string
	Reason    string           // failed: a stable failure name (campaign.FailMarketingCap), "" for none
	Price     campaign.Pricing // the first pricing a status carried; zero when none
	// Unix milliseconds, 0 when unset.
	SentAt, DeliveredAt, ReadAt int64
}

// Status is one report of what happened to a message bulksend sent.
type Status struct {
	MessageID   string       // the provider's message ID, never empty
	Status      string       // "sent", "delivered", "read", "failed"; other values are counted Unknown
	Timestamp   time.Time    // when it happened
	Ref         campaign.Ref // the row bulksend attached to the message (zero: none, or not bulksend's)
	Sender      string       // the sender number it came for ("" if unknown)
	ErrorCode   int          // of a failed status, 0 if none
	ErrorTitle  string
	ErrorReason string           // of a failed status: a stable failure name (campaign.FailMarketingCap), "" for none
	Price       campaign.Pricing // how the message was billed, when the status says
}

// Source is a log of statuses, read once to its end.
type Source interface {
	// Next returns the next status, or io.EOF after the last.
	Next() (Status, error)
	// Counts says what the log held besides statuses, so far.
	Counts() SourceCounts
}

// SourceCounts is what a Source has read.
type SourceCounts struct {
	Statuses     int64 // statuses returned by Next
	Invalid      int64 // records that could not be read
	NotStatus    int64 // records that hold no status (incoming messages, …)
	FirstInvalid []int // the numbers (lines) of the first few invalid records
	// Kinds counts what the records held by kind (for a webhook log, its
	// changes by field, "statuses" for those that hold statuses); nil if
	// the source does not say.
	Kinds map[string]int64
}

// DefaultBatch is the number of statuses per batch when Options.Batch is
// 0. A batch holds, for each row it touches, the row's merged statuses and
// state. Bigger batches write a row once for all its statuses they hold: a
// shuffled log of three statuses per row applies about twice as fast in
// batches of 65,536 as in batches of 10,000 (BenchmarkReconcile), for a
// peak heap of about 120 MB instead of 30 MB when each status is of
// another row.
const DefaultBatch = 1 << 16

// Options configure a reconcile. The zero value of each field has the
// meaning its comment gives.
type Options struct {
	// CampaignID is the campaign whose biz_opaque_callback_data
	// ("bulksend:<id>:<row>") matches rows. Required.
	CampaignID string
	// Senders are our sender phone-number IDs. A status from another
	// number without our callback data is foreign without a lookup.
	// Empty: any number's statuses are looked up by message ID.
	Senders []string
	// Unmatched says what to do with rows still in doubt after the logs:
	// hold (""), resend or fail.
	Unmatched campaign.Policy
	// Grace spares rows whose last attempt is more recent than now-Grace
	// from the Unmatched policy: their statuses may not be logged yet.
	Grace time.Duration
	// MaxAttempts: with Unmatched resend, rows that used this many
	// attempts are failed instead. 0: no limit.
	MaxAttempts int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Batch is the number of statuses per batch: one lookup of the rows
	// they name and one transaction for those that change. 0 means
	// DefaultBatch.
	Batch int
}

// Summary is what a reconcile did. It is the output of `bulksend reconcile
// --json`: fields are only ever added.
//
// Every status read is counted in exactly one of Matched, Foreign and
// Unknown, so Events == Matched + Foreign + Unknown. Invalid and NotStatus
// count records (lines, or elements of a JSON array), not statuses.
type Summary struct {
	Events    int64 `json:"events"`     // statuses read
	Matched   int64 `json:"matched"`    // statuses of a row of this campaign
	Applied   int64 `json:"applied"`    // matched statuses that changed their row (duplicates within a batch once); the rest were already known
	Foreign   int64 `json:"foreign"`    // statuses of another campaign, another number, or a message ID we do not have
	Invalid   int64 `json:"invalid"`    // records that are not JSON, not a webhook body, or hold a malformed status
	NotStatus int64 `json:"not_status"` // webhook bodies without statuses (incoming messages, …)
	Unknown   int64 `json:"unknown"`    // statuses with a value reconcile ignores ("deleted", "warning", …)

	// FirstInvalidLines are the first few invalid record numbers of the
	// first log that has any (Logs says which, when there are several).
	FirstInvalidLines []int `json:"first_invalid_lines"`

	// Kinds counts what the logs held by kind, summed over the logs (see
	// SourceCounts.Kinds): "statuses", "messages", "user_preferences",
	// "message_template_status_update", …
	Kinds map[string]int64 `json:"kinds"`

	// Settled counts the rows this reconcile settled that were pending,
	// sending or in doubt before it, by outcome: sent, delivered, read and
	// failed by the statuses, "resent", "failed_by_policy" and
	// "failed_last_attempt" by the Unmatched policy.
	Settled map[string]int64 `json:"settled"`
	// Corrected counts the rows that were failed without a message ID (before
	// Meta answered, or by the in-doubt policy) and that a status proved
	// went out, by their new status.
	Corrected    map[string]int64 `json:"corrected"`
	StillInDoubt int64            `json:"still_in_doubt"` // rows in doubt after the policy
	Changed      int64            `json:"changed"`        // rows whose state the statuses or the policy changed; 0 when the logs were applied before
	// Recovered counts the rows a stopped run left sending that no status
	// settled: they were made in doubt, then the policy applied to them.
	Recovered int64 `json:"recovered_sending"`

	Logs []Log `json:"logs,omitempty"` // per log, from Run
}

// Log is what one log held.
type Log struct {
	Name              string `json:"name"`
	Events            int64  `json:"events"`
	Invalid           int64  `json:"invalid"`
	NotStatus         int64  `json:"not_status"`
	FirstInvalidLines []int  `json:"first_invalid_lines"`
}

// Settled keys for the Unmatched policy.
const (
	SettledResent     = "resent"
	SettledFailed     = "failed_by_policy"
	SettledLastFailed = "failed_last_attempt"
)

// origin is what a row was before this reconcile first changed it.
type origin uint8

const (
	fromUnsettled origin = iota + 1 // pending, sending, in doubt
	fromFailed                      // failed without a message ID
)

type touched struct {
	from origin
	now  campaign.Status
}

// Reconciler is one reconcile in progress: Read each log in turn, then
// Finish. Make it with New; it is not safe for concurrent use.
type Reconciler struct {
	cp       Checkpoint
	opt      Options
	senders  map[string]bool
	sum      Summary // counts so far, without Changed by statuses, Settled and Corrected
	logs     []Log
	b        batch
	changed  bitset             // rows the statuses changed
	touched  map[int64]touched  // rows that settled or were corrected, by their status now
	policy   map[string]int64   // rows the Unmatched policy settled, by outcome
	save     []Delivery         // scratch for flush: changed rows
	saveIDs  []Delivery         // scratch for flush: changed rows whose message ID, code or title changed
	keys     []int64            // scratch for flush
	ids      []string           // scratch for flush
	moves    []move             // scratch for flush
	resolved map[string]int64   // scratch for flush: message ID → row
	states   map[int64]Delivery // the rows of the batch; between batches, as the last one left them
}

// New starts a reconcile of cp's campaign.
func New(cp Checkpoint, opt Options) (*Reconciler, error) {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Batch <= 0 {
		opt.Batch = DefaultBatch
	}
	if opt.Unmatched == "" {
		opt.Unmatched = campaign.Hold
	}
	if _, err := campaign.ParsePolicy(string(opt.Unmatched)); err != nil {
		return nil, fmt.Errorf("reconcile: %w", err)
	}
	if opt.Grace < 0 {
		return nil, fmt.Errorf("reconcile: negative grace %s", opt.Grace)
	}
	if opt.CampaignID == "" {
		return nil, errors.New("reconcile: no campaign ID")
	}
	if opt.MaxAttempts <= 0 {
		opt.MaxAttempts = math.MaxInt32
	}
	rc := &Reconciler{
		cp: cp, opt: opt,
		touched:  map[int64]touched{},
		policy:   map[string]int64{},
		resolved: map[string]int64{},
		b:        newBatch(),
	}
	if len(opt.Senders) > 0 {
		rc.senders = make(map[string]bool, len(opt.Senders))
		for _, s := range opt.Senders {
			rc.senders[s] = true
		}
	}
	return rc, nil
}

// Read applies the statuses of the log called name, batch by batch.
//
// If reading the log or the checkpoint fails, Read returns the error: the
// batches already written stay (they are true whatever comes next), and
// running again with the same logs completes the work. If ctx is done or
// the checkpoint fails, Read returns without waiting for src: a goroutine
// may go on using src until its Next returns (closing src ends that).
func (rc *Reconciler) Read(ctx context.Context, name string, src Source) error {
	// A goroutine decodes the log, a third of the work, while this one
	// applies what it has decoded so far.
	full := make(chan chunk, chunks)
	free := make(chan []Status, chunks)
	for range chunks {
		free <- make([]Status, 0, chunkSize)
	}
	stop := make(chan struct{})
	go decode(src, full, free, stop)
	var err error
	for {
		var c chunk
		select {
		case c = <-full:
		case <-ctx.Done():
			close(stop) // src may block (stdin): do not wait for decode
			return ctx.Err()
		}
		for _, s := range c.statuses {
			rc.add(s)
			if rc.b.events >= rc.opt.Batch {
				if err := rc.flush(ctx); err != nil {
					close(stop) // as above: decode may be blocked in src
					return err
				}
			}
		}
		free <- c.statuses
		if c.err != nil {
			err = c.err
			break
		}
	}
	stopDecode(stop, full)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	// What was read before a read error is still true: apply it.
	if ferr := rc.flush(ctx); err == nil {
		err = ferr
	}
	c := src.Counts()
	l := Log{Name: name, Events: c.Statuses, Invalid: c.Invalid, NotStatus: c.NotStatus, FirstInvalidLines: c.FirstInvalid}
	if l.FirstInvalidLines == nil {
		l.FirstInvalidLines = []int{}
	}
	rc.sum.Events += c.Statuses
	rc.sum.Invalid += c.Invalid
	rc.sum.NotStatus += c.NotStatus
	for k, n := range c.Kinds {
		if rc.sum.Kinds == nil {
			rc.sum.Kinds = make(map[string]int64)
		}
		rc.sum.Kinds[k] += n
	}
	if len(rc.sum.FirstInvalidLines) == 0 {
		rc.sum.FirstInvalidLines = l.FirstInvalidLines
	}
	rc.logs = append(rc.logs, l)
	return err
}

// Finish applies the Unmatched policy to the rows still in doubt, once,
// after the last log, and returns the summary of the whole reconcile. Rows
// a stopped run left sending, that no status settled, are in doubt first:
// the caller holds the checkpoint, so no run is sending them, and a crash,
// a reconcile and a run then finish a campaign.
func (rc *Reconciler) Finish(ctx context.Context) (Summary, error) {
	now := rc.opt.Now()
	n, err := rc.cp.RecoverSending(ctx, now)
	if err != nil {
		return rc.summary(), err
	}
	rc.sum.Recovered = n
	p, err := rc.cp.ApplyPolicy(ctx, rc.opt.Unmatched, now.Add(-rc.opt.Grace), now, rc.opt.MaxAttempts)
	if err != nil {
		return rc.summary(), err
	}
	rc.sum.Changed += p.Total()
	for k, v := range map[string]int64{SettledResent: p.Resent, SettledFailed: p.Failed, SettledLastFailed: p.LastAttempt} {
		if v > 0 {
			rc.policy[k] = v
		}
	}
	c, err := rc.cp.Counts(ctx)
	if err != nil {
		return rc.summary(), err
	}
	rc.sum.StillInDoubt = c.InDoubt
	return rc.summary(), nil
}

// Summary is what the statuses read so far did, without Finish's policy:
// for a receiver that applies statuses while a run sends, which must not
// make the rows it is sending in doubt.
func (rc *Reconciler) Summary() Summary { return rc.summary() }

// summary is the summary so far.
func (rc *Reconciler) summary() Summary {
	s := rc.sum
	s.Changed += rc.changed.count()
	s.Logs = rc.logs
	if s.FirstInvalidLines == nil {
		s.FirstInvalidLines = []int{}
	}
	s.Kinds = maps.Clone(s.Kinds)
	if s.Kinds == nil {
		s.Kinds = map[string]int64{}
	}
	s.Settled, s.Corrected = maps.Clone(rc.policy), map[string]int64{}
	for _, t := range rc.touched {
		switch t.from {
		case fromUnsettled:
			s.Settled[string(t.now)]++
		case fromFailed:
			s.Corrected[string(t.now)]++
		}
	}
	return s
}
