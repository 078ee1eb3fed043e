// Package reconcile applies exported status webhooks to a checkpoint: it
// settles rows whose send outcome is unknown (in doubt) and records sent,
// delivered, read and failed for the rest.
//
// Statuses apply as a join over a lattice, so duplicates, out-of-order
// delivery and the order of several logs make no difference to the end
// state (but see matching by wamid below), and running again with the same
// logs changes nothing. A row moves up this order and never down:
//
//	pending, sending, in_doubt, failed without a wamid  <  sent  <  failed (by a webhook)  <  delivered  <  read
//
// A failed row without a wamid failed before Meta answered (synchronously,
// or by the in-doubt policy); a status proves it did reach Meta, so it
// moves like an in-doubt row. Skipped rows never change. Timestamps keep
// the earliest instant seen for each status.
//
// A status matches a row by its biz_opaque_callback_data when bulksend
// wrote it, else by its wamid: the one the send recorded, or one that a
// status with callback data recorded earlier (in an earlier batch, or in
// the same one). Meta includes the callback data in every status of a
// message sent with it, so the order of the statuses matters here only for
// a log that lost it from some statuses of a message and not others.
//
// Statuses are read in batches: each batch is reduced to one merged
// evidence per row, the rows' current states are loaded in one go, and
// only the rows that change are written, in one transaction per batch.
// Memory is bounded by the batch size, not by the size of the logs. A
// goroutine decodes the log while the batch is applied.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/webhook"
)

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
	// ("bulksend:<id>:<row>") matches rows. "": the checkpoint's.
	CampaignID string
	// Senders are our sender phone-number IDs. A status from another
	// number without our callback data is foreign without a lookup.
	// Empty: any number's statuses are looked up by wamid.
	Senders []string
	// Unmatched says what to do with rows still in doubt after the logs:
	// hold (""), resend or fail.
	Unmatched campaign.Policy
	// Grace spares rows whose last attempt is more recent than now-Grace
	// from the Unmatched policy: their statuses may not be logged yet.
	Grace time.Duration
	// MaxAttempts: with Unmatched resend, rows that used this many
	// attempts are failed instead. 0: the checkpoint's max_attempts, and
	// no limit if it has none.
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
	Foreign   int64 `json:"foreign"`    // statuses of another campaign, another number, or a wamid we do not have
	Invalid   int64 `json:"invalid"`    // records that are not JSON, not a webhook body, or hold a malformed status
	NotStatus int64 `json:"not_status"` // webhook bodies without statuses (incoming messages, …)
	Unknown   int64 `json:"unknown"`    // statuses with a value reconcile ignores ("deleted", "warning", …)

	// FirstInvalidLines are the first few invalid record numbers of the
	// first log that has any (Logs says which, when there are several).
	FirstInvalidLines []int `json:"first_invalid_lines"`

	// Settled counts the rows this reconcile settled that were pending,
	// sending or in doubt before it, by outcome: sent, delivered, read and
	// failed by the statuses, "resent", "failed_by_policy" and
	// "failed_last_attempt" by the Unmatched policy.
	Settled map[string]int64 `json:"settled"`
	// Corrected counts the rows that were failed without a wamid (before
	// Meta answered, or by the in-doubt policy) and that a status proved
	// went out, by their new status.
	Corrected    map[string]int64 `json:"corrected"`
	StillInDoubt int64            `json:"still_in_doubt"` // rows in doubt after the policy
	Changed      int64            `json:"changed"`        // rows whose state changed; 0 when the logs were applied before

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

// Apply reads r to its end, applies its statuses to the checkpoint, then
// the Unmatched policy to the rows still in doubt. It is Run for one log
// that is already open.
//
// If reading the log or the checkpoint fails, or ctx is done, Apply
// returns the error and the summary so far without applying the policy:
// the batches already written stay (they are true whatever comes next),
// and running again with the same logs completes the work.
func Apply(ctx context.Context, st *store.Store, r *webhook.Reader, opt Options) (Summary, error) {
	rc, err := newReconciler(ctx, st, opt)
	if err != nil {
		return Summary{}, err
	}
	if _, err := rc.read(ctx, r); err != nil {
		return rc.summary(), err
	}
	return rc.finish(ctx)
}

// Run is Apply for the webhook logs at paths, read in turn with
// webhook.Open ("-" is stdin, gzip is detected). The policy is applied once,
// after the last log. Each log is opened only when its turn comes.
func Run(ctx context.Context, st *store.Store, paths []string, stdin io.Reader, opt Options) (Summary, error) {
	rc, err := newReconciler(ctx, st, opt)
	if err != nil {
		return Summary{}, err
	}
	for _, p := range paths {
		f, err := webhook.Open(p, stdin)
		if err != nil {
			return rc.summary(), err
		}
		l, err := rc.read(ctx, webhook.NewReader(f))
		f.Close() // a read-only file: its close error says nothing
		l.Name = p
		rc.logs = append(rc.logs, l)
		if err != nil {
			if ctx.Err() == nil {
				err = fmt.Errorf("webhook log %s: %w", p, err)
			}
			return rc.summary(), err
		}
	}
	return rc.finish(ctx)
}

// origin is what a row was before this reconcile first changed it.
type origin uint8

const (
	fromUnsettled origin = iota + 1 // pending, sending, in doubt
	fromFailed                      // failed without a wamid
)

type touched struct {
	from origin
	now  campaign.Status
}

// reconciler is one reconcile in progress.
type reconciler struct {
	st       *store.Store
	opt      Options
	senders  map[string]bool
	sum      Summary // counts so far, without Changed by statuses, Settled and Corrected
	logs     []Log
	b        batch
	changed  bitset                   // rows the statuses changed
	touched  map[int64]touched        // rows that settled or were corrected, by their status now
	policy   map[string]int64         // rows the Unmatched policy settled, by outcome
	save     []store.Delivery         // scratch for flush: changed rows
	saveIDs  []store.Delivery         // scratch for flush: changed rows whose wamid, code or title changed
	keys     []int64                  // scratch for flush
	wamids   []string                 // scratch for flush
	moves    []move                   // scratch for flush
	resolved map[string]int64         // scratch for flush: wamid → row
	states   map[int64]store.Delivery // the rows of the batch; between batches, as the last one left them
}

func newReconciler(ctx context.Context, st *store.Store, opt Options) (*reconciler, error) {
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
	if opt.CampaignID == "" || opt.MaxAttempts <= 0 {
		set, err := st.Settings(ctx)
		if err != nil {
			return nil, fmt.Errorf("reconcile: %w", err)
		}
		if opt.CampaignID == "" {
			opt.CampaignID = set.CampaignID
		}
		if opt.MaxAttempts <= 0 {
			opt.MaxAttempts = set.MaxAttempts
		}
		if opt.CampaignID == "" {
			return nil, errors.New("reconcile: the checkpoint has no campaign ID")
		}
	}
	if opt.MaxAttempts <= 0 {
		opt.MaxAttempts = math.MaxInt32
	}
	rc := &reconciler{
		st: st, opt: opt,
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

// read applies the statuses of r, batch by batch, and returns what the log
// held. It returns when it has stopped using r.
func (rc *reconciler) read(ctx context.Context, r *webhook.Reader) (Log, error) {
	// A goroutine decodes the log, a third of the work, while this one
	// applies what it has decoded so far.
	full := make(chan chunk, chunks)
	free := make(chan []webhook.Status, chunks)
	for range chunks {
		free <- make([]webhook.Status, 0, chunkSize)
	}
	stop := make(chan struct{})
	go decode(r, full, free, stop)
	var err error
loop:
	for {
		var c chunk
		select {
		case c = <-full:
		case <-ctx.Done():
			err = ctx.Err()
			break loop
		}
		for _, s := range c.statuses {
			rc.add(s)
			if rc.b.events >= rc.opt.Batch {
				if err = rc.flush(ctx); err != nil {
					break loop
				}
			}
		}
		free <- c.statuses
		if c.err != nil {
			err = c.err
			break
		}
	}
	close(stop)
	for range full { // until decode has returned: then r is ours again
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	// What was read before a read error is still true: apply it.
	if ferr := rc.flush(ctx); err == nil {
		err = ferr
	}
	c := r.Counts()
	l := Log{Events: c.Statuses, Invalid: c.Invalid, NotStatus: c.NotStatus, FirstInvalidLines: c.FirstInvalid}
	if l.FirstInvalidLines == nil {
		l.FirstInvalidLines = []int{}
	}
	rc.sum.Events += c.Statuses
	rc.sum.Invalid += c.Invalid
	rc.sum.NotStatus += c.NotStatus
	if len(rc.sum.FirstInvalidLines) == 0 {
		rc.sum.FirstInvalidLines = l.FirstInvalidLines
	}
	return l, err
}

// chunk is what decode hands over: statuses, and after the last of them
// the error that ended the log (io.EOF at its end).
type chunk struct {
	statuses []webhook.Status
	err      error
}

const (
	chunkSize = 512 // statuses per chunk
	chunks    = 4   // chunks in use at a time: the memory of decoding ahead
)

// decode reads r into buffers taken from free and hands them over on full,
// until the log ends or stop is closed; then it closes full.
func decode(r *webhook.Reader, full chan<- chunk, free <-chan []webhook.Status, stop <-chan struct{}) {
	defer close(full)
	for {
		var buf []webhook.Status
		select {
		case buf = <-free:
		case <-stop:
			return
		}
		var err error
		for buf = buf[:0]; len(buf) < cap(buf); {
			var s webhook.Status
			if s, err = r.Next(); err != nil {
				break
			}
			buf = append(buf, s)
			if len(buf)%64 == 0 {
				select {
				case <-stop:
					return
				default:
				}
			}
		}
		select {
		case full <- chunk{buf, err}:
		case <-stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// add puts one status into the batch, by row when its callback data is
// ours, else by wamid for flush to look up.
func (rc *reconciler) add(s webhook.Status) {
	e, ok := proof(s.Status, s.WAMID, s.Timestamp, s.ErrorCode, s.ErrorTitle)
	if !ok {
		rc.sum.Unknown++
		return
	}
	rc.b.events++
	if id, row, ours := campaign.ParseCallbackData(s.CallbackData); ours {
		if id != rc.opt.CampaignID {
			rc.sum.Foreign++
			return
		}
		rc.b.byRow(row).add(&rc.b, e, 1)
		return
	}
	if rc.senders != nil && s.PhoneNumberID != "" && !rc.senders[s.PhoneNumberID] {
		rc.sum.Foreign++
		return
	}
	rc.b.byWAMID(s.WAMID).add(&rc.b, e, 1)
}

// flush applies the batch: one lookup for its rows and wamids, one
// transaction for the rows that change.
func (rc *reconciler) flush(ctx context.Context) error {
	b := &rc.b
	defer b.reset()
	if len(b.rows) == 0 && len(b.wamids) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The rows of the last batch need no lookup: it left them as
	// rc.states says, and nothing else writes the checkpoint meanwhile.
	states := rc.states
	for row := range states {
		if _, ok := b.rows[row]; !ok {
			delete(states, row)
		}
	}
	if len(states) == 0 { // sized once rather than grown
		states = make(map[int64]store.Delivery, len(b.rows)+len(b.wamids))
		rc.states = states
	}
	rc.keys, rc.wamids = rc.keys[:0], rc.wamids[:0]
	for row := range b.rows {
		if _, ok := states[row]; !ok {
			rc.keys = append(rc.keys, row)
		}
	}
	for w := range b.wamids {
		rc.wamids = append(rc.wamids, w)
	}
	// Sorted, each lookup of a chunk of rows reads neighbouring pages.
	slices.Sort(rc.keys)
	if err := rc.st.Deliveries(ctx, rc.keys, rc.wamids, states); err != nil {
		clear(states) // some may be stale now
		return err
	}

	// Statuses without our callback data: by the wamid stored on a row,
	// else by one a status with callback data records in this batch.
	if len(b.wamids) > 0 {
		clear(rc.resolved)
		for row, s := range states {
			if _, ok := b.wamids[s.WAMID]; ok && s.WAMID != "" {
				rc.resolved[s.WAMID] = row
			}
		}
		for row, i := range b.rows {
			for j := b.aggs.at(i).first; j >= 0; j = b.seen.at(j).next {
				w := b.seen.at(j).e.wamid
				if _, done := rc.resolved[w]; done {
					continue
				}
				if _, ok := b.wamids[w]; ok {
					rc.resolved[w] = row
				}
			}
		}
		for w, i := range b.wamids {
			row, ok := rc.resolved[w]
			if !ok {
				rc.sum.Foreign += b.aggs.at(i).n
				continue
			}
			b.byRow(row).merge(b, i)
		}
	}

	// In row order, the writes go through the table's pages in order.
	rc.keys = rc.keys[:0]
	for row := range b.rows {
		rc.keys = append(rc.keys, row)
	}
	slices.Sort(rc.keys)
	rc.save, rc.saveIDs = slices.Grow(rc.save[:0], len(rc.keys)), rc.saveIDs[:0]
	rc.moves = rc.moves[:0]
	for _, row := range rc.keys {
		a := b.aggs.at(b.rows[row])
		old, ok := states[row]
		if !ok {
			rc.sum.Foreign += a.n // our callback data, but no such row
			continue
		}
		rc.sum.Matched += a.n
		s := apply(old, a.ev)
		if s == old {
			continue
		}
		for j := a.first; j >= 0; j = b.seen.at(j).next {
			if changes(&old, &b.seen.at(j).e) {
				rc.sum.Applied++
			}
		}
		states[row] = s
		if s.WAMID != old.WAMID || s.Code != old.Code || s.Title != old.Title {
			rc.saveIDs = append(rc.saveIDs, s)
		} else {
			rc.save = append(rc.save, s)
		}
		if m, ok := rc.move(old, s); ok {
			rc.moves = append(rc.moves, m)
		}
	}
	if err := rc.st.SaveDeliveries(ctx, rc.saveIDs, rc.save, rc.opt.Now()); err != nil {
		clear(states) // not written after all
		return err
	}
	for _, s := range rc.saveIDs {
		rc.changed.set(s.Row)
	}
	for _, s := range rc.save {
		rc.changed.set(s.Row)
	}
	for _, m := range rc.moves {
		rc.touched[m.row] = m.touched
	}
	return nil
}

// move says how a change of a row from old to s counts in Summary.Settled
// or Corrected; ok is false if it does not.
func (rc *reconciler) move(old, s store.Delivery) (m move, ok bool) {
	t, ok := rc.touched[s.Row] // changed by an earlier batch: it counts as it was then
	switch {
	case ok:
	case old.Status == campaign.Failed && old.WAMID == "":
		t.from = fromFailed
	case !old.Status.Settled():
		t.from = fromUnsettled
	default:
		return m, false
	}
	t.now = s.Status
	return move{s.Row, t}, true
}

// move is a row that settles or is corrected, for Summary.Settled and
// Corrected.
type move struct {
	row int64
	touched
}

// finish applies the Unmatched policy and completes the summary.
func (rc *reconciler) finish(ctx context.Context) (Summary, error) {
	now := rc.opt.Now()
	cutoff := now.Add(-rc.opt.Grace)
	if rc.opt.Unmatched != campaign.Hold {
		doubt, err := rc.st.InDoubt(ctx)
		if err != nil {
			return rc.summary(), err
		}
		// The same choice as store.ApplyPolicy's, to name the outcomes.
		var resent, failed, last int64
		for _, s := range doubt {
			if unixMS(s.AttemptedAt) > cutoff.UnixMilli() {
				continue
			}
			switch {
			case rc.opt.Unmatched == campaign.Fail:
				failed++
			case s.Attempts >= rc.opt.MaxAttempts:
				last++
			default:
				resent++
			}
		}
		n, err := rc.st.ApplyPolicy(ctx, rc.opt.Unmatched, cutoff, now, rc.opt.MaxAttempts)
		if err != nil {
			return rc.summary(), err
		}
		rc.sum.Changed += n
		for k, v := range map[string]int64{SettledResent: resent, SettledFailed: failed, SettledLastFailed: last} {
			if v > 0 {
				rc.policy[k] = v
			}
		}
	}
	c, err := rc.st.Counts(ctx)
	if err != nil {
		return rc.summary(), err
	}
	rc.sum.StillInDoubt = c.InDoubt
	return rc.summary(), nil
}

// summary is the summary so far.
func (rc *reconciler) summary() Summary {
	s := rc.sum
	s.Changed += rc.changed.count()
	s.Logs = rc.logs
	if s.FirstInvalidLines == nil {
		s.FirstInvalidLines = []int{}
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

// batch holds the statuses of one batch, merged per row (statuses with our
// callback data) or per wamid (the others, until flush finds their row).
// Each entry also keeps its distinct statuses, to count Applied.
type batch struct {
	events int
	rows   map[int64]int32  // row → aggs index
	wamids map[string]int32 // wamid → aggs index
	aggs   blocks[agg]
	seen   blocks[seen]
}

// agg is the merged evidence of one row or wamid.
type agg struct {
	ev    evidence
	n     int64 // statuses merged, duplicates included
	first int32 // first of its distinct statuses in batch.seen, -1 if none
}

// seen is one distinct status of an agg, in a list linked by next.
type seen struct {
	e    evidence
	next int32
}

func newBatch() batch {
	return batch{rows: map[int64]int32{}, wamids: map[string]int32{}}
}

func (b *batch) reset() {
	b.events = 0
	clear(b.rows)
	clear(b.wamids)
	b.aggs.reset()
	b.seen.reset()
}

func (b *batch) newAgg() int32 {
	return b.aggs.push(agg{first: -1})
}

func (b *batch) byRow(row int64) *agg {
	i, ok := b.rows[row]
	if !ok {
		i = b.newAgg()
		b.rows[row] = i
	}
	return b.aggs.at(i)
}

func (b *batch) byWAMID(w string) *agg {
	i, ok := b.wamids[w]
	if !ok {
		i = b.newAgg()
		b.wamids[w] = i
	}
	return b.aggs.at(i)
}

// add merges e, which stands for n statuses, into a.
func (a *agg) add(b *batch, e evidence, n int64) {
	a.n += n
	for j := a.first; j >= 0; j = b.seen.at(j).next {
		if b.seen.at(j).e == e {
			return
		}
	}
	a.ev = a.ev.join(e)
	a.first = b.seen.push(seen{e: e, next: a.first})
}

// merge merges the agg at index src into a.
func (a *agg) merge(b *batch, src int32) {
	s := *b.aggs.at(src)
	first := true
	for j := s.first; j >= 0; j = b.seen.at(j).next {
		n := int64(0)
		if first {
			n, first = s.n, false
		}
		a.add(b, b.seen.at(j).e, n)
	}
}

// blocks is an append-only list kept in blocks of blockSize: growing it
// never copies what it holds, and reset keeps the blocks for the next
// batch. Its zero value is empty.
type blocks[T any] struct {
	b [][]T
	n int32
}

const blockSize = 4096

func (l *blocks[T]) at(i int32) *T { return &l.b[i/blockSize][i%blockSize] }

// push appends v and returns its index.
func (l *blocks[T]) push(v T) int32 {
	if int(l.n) == len(l.b)*blockSize {
		l.b = append(l.b, make([]T, blockSize))
	}
	i := l.n
	l.n++
	*l.at(i) = v
	return i
}

func (l *blocks[T]) reset() { l.n = 0 }

// bitset is a set of row numbers.
type bitset []uint64

func (s *bitset) set(row int64) {
	if row < 0 {
		return
	}
	i := int(row / 64)
	if i >= len(*s) {
		*s = slices.Grow(*s, i+1-len(*s))[:i+1]
	}
	(*s)[i] |= 1 << (row % 64)
}

func (s bitset) count() int64 {
	var n int
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return int64(n)
}
