package reconcile

import (
	"context"
	"slices"

	"github.com/bulksend/bulksend/internal/campaign"
)

// add puts one status into the batch, by row when its callback data is
// ours, else by message ID for flush to look up.
func (rc *Reconciler) add(s Status) {
	e, ok := proof(&s, rc.b.prices)
	if !ok {
		rc.sum.Unknown++
		return
	}
	rc.b.events++
	if !s.Ref.IsZero() {
		if s.Ref.Campaign != rc.opt.CampaignID {
			rc.sum.Foreign++
			return
		}
		rc.b.byRow(s.Ref.Row).add(&rc.b, e, 1)
		return
	}
	if rc.senders != nil && s.Sender != "" && !rc.senders[s.Sender] {
		rc.sum.Foreign++
		return
	}
	rc.b.byID(s.MessageID).add(&rc.b, e, 1)
}

// flush applies the batch: one lookup for its rows and message IDs, one
// transaction for the rows that change.
func (rc *Reconciler) flush(ctx context.Context) error {
	b := &rc.b
	defer b.reset()
	if len(b.rows) == 0 && len(b.ids) == 0 {
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
		states = make(map[int64]Delivery, len(b.rows)+len(b.ids))
		rc.states = states
	}
	rc.keys, rc.ids = rc.keys[:0], rc.ids[:0]
	for row := range b.rows {
		if _, ok := states[row]; !ok {
			rc.keys = append(rc.keys, row)
		}
	}
	for w := range b.ids {
		rc.ids = append(rc.ids, w)
	}
	// Sorted, each lookup of a chunk of rows reads neighbouring pages.
	slices.Sort(rc.keys)
	if err := rc.cp.Deliveries(ctx, rc.keys, rc.ids, states); err != nil {
		clear(states) // some may be stale now
		return err
	}

	// Statuses without our callback data: by the message ID stored on a row,
	// else by one a status with callback data records in this batch.
	if len(b.ids) > 0 {
		clear(rc.resolved)
		for row, s := range states {
			if _, ok := b.ids[s.MessageID]; ok && s.MessageID != "" {
				rc.resolved[s.MessageID] = row
			}
		}
		for row, i := range b.rows {
			for j := b.aggs.at(i).first; j >= 0; j = b.seen.at(j).next {
				w := b.seen.at(j).e.id
				if _, done := rc.resolved[w]; done {
					continue
				}
				if _, ok := b.ids[w]; ok {
					rc.resolved[w] = row
				}
			}
		}
		for w, i := range b.ids {
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
		d := s
		if !unpriced(old.Price) {
			d.Price = campaign.Pricing{} // stored already, and never replaced: nothing to write
		}
		if s.MessageID != old.MessageID || s.Code != old.Code || s.Title != old.Title || s.Reason != old.Reason {
			rc.saveIDs = append(rc.saveIDs, d)
		} else {
			rc.save = append(rc.save, d)
		}
		if m, ok := rc.move(old, s); ok {
			rc.moves = append(rc.moves, m)
		}
	}
	if err := rc.cp.SaveDeliveries(ctx, rc.saveIDs, rc.save, rc.opt.Now()); err != nil {
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
func (rc *Reconciler) move(old, s Delivery) (m move, ok bool) {
	t, ok := rc.touched[s.Row] // changed by an earlier batch: it counts as it was then
	switch {
	case ok:
	case old.Status == campaign.Failed && old.MessageID == "":
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

// batch holds the statuses of one batch, merged per row (statuses with our
// callback data) or per message ID (the others, until flush finds their row).
// Each entry also keeps its distinct statuses, to count Applied.
type batch struct {
	events int
	rows   map[int64]int32  // row → aggs index
	ids    map[string]int32 // message ID → aggs index
	aggs   blocks[agg]
	seen   blocks[seen]
	prices prices // the pricings of its statuses
}

// agg is the merged evidence of one row or message ID.
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
	return batch{rows: map[int64]int32{}, ids: map[string]int32{}, prices: prices{}}
}

func (b *batch) reset() {
	b.events = 0
	clear(b.rows)
	clear(b.ids)
	b.aggs.reset()
	b.seen.reset()
	clear(b.prices)
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

func (b *batch) byID(w string) *agg {
	i, ok := b.ids[w]
	if !ok {
		i = b.newAgg()
		b.ids[w] = i
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
