package store

import (
	"context"
	"database/sql"
	"maps"
	"slices"
	"sort"

	"github.com/bulksend/bulksend/internal/campaign"
)

// importTally counts an import's rows as they go in, into the Breakdown a
// scan of the new checkpoint would return: a dry run plans from it
// without reading a million rows back twice. It is not safe for
// concurrent use.
type importTally struct {
	bySender map[string]*campaign.Counts
	sender   string           // the last row's sender
	counts   *campaign.Counts // and its counts: rows of one sender come in runs
	skipped  map[campaign.SkipKind]int64
	first    map[campaign.SkipKind]SkipExample // the first row of each kind
}

func newImportTally() *importTally {
	return &importTally{bySender: map[string]*campaign.Counts{}, skipped: map[campaign.SkipKind]int64{},
		first: map[campaign.SkipKind]SkipExample{}}
}

// add counts r as Import writes it: pending, or skipped as r.SkipKind.
func (t *importTally) add(r *Row) {
	c := t.of(r.Sender)
	if r.Skip == "" {
		c.Add(campaign.Pending, 1)
		return
	}
	c.Add(campaign.Skipped, 1)
	t.skip(r.SkipKind, SkipExample{Row: r.Row, Line: int64(r.Line), Phone: r.Phone, Reason: r.Skip})
}

// duplicate moves row e, of sender, from pending to skipped as a
// duplicate.
func (t *importTally) duplicate(sender string, e SkipExample) {
	c := t.of(sender)
	c.Add(campaign.Pending, -1)
	c.Add(campaign.Skipped, 1)
	t.skip(campaign.SkipDuplicate, e)
}

func (t *importTally) of(sender string) *campaign.Counts {
	if t.counts == nil || sender != t.sender {
		t.sender, t.counts = sender, t.bySender[sender]
		if t.counts == nil {
			t.counts = &campaign.Counts{}
			t.bySender[sender] = t.counts
		}
	}
	return t.counts
}

func (t *importTally) skip(k campaign.SkipKind, e SkipExample) {
	t.skipped[k]++
	if f, ok := t.first[k]; !ok || e.Row < f.Row {
		t.first[k] = e
	}
}

// report is the tally as Breakdown reports it.
func (t *importTally) report() Report {
	r := Report{Skipped: t.skipped, SkipExamples: t.first, FailedByReason: map[string]int64{}, ByPricingCategory: map[string]int64{}}
	for sender, c := range t.bySender {
		r.Counts.Add(campaign.Pending, c.Pending)
		r.Counts.Add(campaign.Skipped, c.Skipped)
		r.BySender = append(r.BySender, SenderCount{Sender: sender, Counts: *c})
	}
	sort.Slice(r.BySender, func(i, j int) bool { return r.BySender[i].Sender < r.BySender[j].Sender })
	return r
}

// imported is the Breakdown of a checkpoint as its import left it, with
// the writes of the store's connection at that moment: while they are
// the same, no row has changed since.
type imported struct {
	report Report
	writes writes
}

// writes identifies the state of the checkpoint as one connection sees
// it: the rows the connection has changed since it opened (SQLite's
// total_changes) and what other connections have committed
// (data_version, which changes with each of their commits).
type writes struct{ changes, version int64 }

func writesOf(ctx context.Context, q queryer) (writes, error) {
	var w writes
	err := q.QueryRowContext(ctx, `SELECT total_changes(), data_version FROM pragma_data_version`).Scan(&w.changes, &w.version)
	return w, err
}

// importedBreakdown returns the import's tally as Breakdown reports it,
// if this store imported the checkpoint and nothing has written a row
// since, on its connection or another.
func (s *Store) importedBreakdown(ctx context.Context) (Report, bool) {
	im := s.imported.Load()
	if im == nil || s.db == nil {
		return Report{}, false
	}
	w, err := writesOf(ctx, s.db)
	if err != nil || w != im.writes {
		return Report{}, false
	}
	r := im.report
	r.BySender = slices.Clone(r.BySender)
	r.Skipped, r.SkipExamples = maps.Clone(r.Skipped), maps.Clone(r.SkipExamples)
	r.FailedByReason, r.ByPricingCategory = map[string]int64{}, map[string]int64{}
	return r, true
}

// skipDuplicates runs update, an UPDATE of recipients that skips rows as
// duplicates, and moves each row it skipped from pending to skipped in t.
func skipDuplicates(ctx context.Context, tx *sql.Tx, t *importTally, update string) error {
	rows, err := tx.QueryContext(ctx, update+` RETURNING row, line, phone, sender, reason`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var e SkipExample
		var sender string
		if err := rows.Scan(&e.Row, &e.Line, &e.Phone, &sender, &e.Reason); err != nil {
			return err
		}
		t.duplicate(sender, e)
	}
	return rows.Err()
}
