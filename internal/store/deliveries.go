package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/reconcile"
)

// This file is reconcile's side of the checkpoint (reconcile.Checkpoint):
// the columns a status webhook changes, read and written in bulk.

// deliveryChunk is how many keys one query of Deliveries looks up.
const deliveryChunk = 500

const deliveryCols = `row, status, COALESCE(wamid, ''), COALESCE(error_code, 0), COALESCE(error_title, ''), COALESCE(sent_at, 0), COALESCE(delivered_at, 0), COALESCE(read_at, 0)`

// Deliveries puts into out the deliveries of the given rows and of the
// rows holding the given wamids, keyed by row; it leaves the other entries
// of out alone. Unknown rows and wamids are absent.
func (s *Store) Deliveries(ctx context.Context, rows []int64, wamids []string, out map[int64]reconcile.Delivery) error {
	keys := make([]any, 0, min(max(len(rows), len(wamids)), deliveryChunk))
	load := func(col string, n int, key func(int) any) error {
		var full *sql.Stmt // for chunks of deliveryChunk keys
		defer func() {
			if full != nil {
				full.Close()
			}
		}()
		for i := 0; i < n; i += deliveryChunk {
			keys = keys[:0]
			for j := i; j < min(n, i+deliveryChunk); j++ {
				keys = append(keys, key(j))
			}
			q := `SELECT ` + deliveryCols + ` FROM recipients WHERE ` + col + ` IN (` + strings.TrimSuffix(strings.Repeat("?,", len(keys)), ",") + `)`
			var rs *sql.Rows
			var err error
			switch {
			case len(keys) < deliveryChunk:
				rs, err = s.db.QueryContext(ctx, q, keys...)
			case full == nil:
				if full, err = s.db.PrepareContext(ctx, q); err == nil {
					rs, err = full.QueryContext(ctx, keys...)
				}
			default:
				rs, err = full.QueryContext(ctx, keys...)
			}
			if err == nil {
				err = scanDeliveries(rs, out)
			}
			if err != nil {
				return fmt.Errorf("load states: %w", err)
			}
		}
		return nil
	}
	if err := load("row", len(rows), func(i int) any { return rows[i] }); err != nil {
		return err
	}
	return load("wamid", len(wamids), func(i int) any { return wamids[i] })
}

func scanDeliveries(rs *sql.Rows, out map[int64]reconcile.Delivery) error {
	defer rs.Close()
	var status sql.RawBytes
	for rs.Next() {
		var d reconcile.Delivery
		if err := rs.Scan(&d.Row, &status, &d.WAMID, &d.Code, &d.Title, &d.SentAt, &d.DeliveredAt, &d.ReadAt); err != nil {
			return err
		}
		d.Status = ""
		for _, known := range campaign.Statuses { // the constant: no allocation
			if string(status) == string(known) {
				d.Status = known
			}
		}
		if d.Status == "" {
			d.Status = campaign.Status(status)
		}
		out[d.Row] = d
	}
	return rs.Err()
}

// deliveryBatch is how many rows one UPDATE of SaveDeliveries writes.
const deliveryBatch = 128

// SaveDeliveries writes deliveries in one transaction: the status,
// sent_at, delivered_at and read_at of all of them, and also the wamid,
// error_code and error_title of those in withIDs. Leaving the wamid of the
// others alone spares its index. Reading the rows half as wide as a full
// row, and writing them in multi-row statements, halves reconcile's cost
// (BenchmarkReconcile).
func (s *Store) SaveDeliveries(ctx context.Context, withIDs, others []reconcile.Delivery, now time.Time) (err error) {
	defer full(&err)
	if len(withIDs)+len(others) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save states: %w", err)
	}
	defer tx.Rollback()
	opt := func(v int64) any { // NULL for 0
		if v == 0 {
			return nil
		}
		return v
	}
	text := func(v string) any { // NULL for ""
		if v == "" {
			return nil
		}
		return v
	}
	at := now.UnixMilli()
	if len(withIDs) > 0 {
		up, err := tx.PrepareContext(ctx, `UPDATE recipients SET status = ?2, wamid = ?3, error_code = ?4, error_title = ?5,
			sent_at = ?6, delivered_at = ?7, read_at = ?8, updated_at = ?9 WHERE row = ?1`)
		if err != nil {
			return fmt.Errorf("save states: %w", err)
		}
		defer up.Close()
		for _, d := range withIDs {
			if _, err := up.ExecContext(ctx, d.Row, string(d.Status), text(d.WAMID), opt(int64(d.Code)), text(d.Title),
				opt(d.SentAt), opt(d.DeliveredAt), opt(d.ReadAt), at); err != nil {
				return fmt.Errorf("save state of row %d: %w", d.Row, err)
			}
		}
	}
	// The others, deliveryBatch rows per statement: a third of the cost
	// of a statement per row.
	var full *sql.Stmt
	args := make([]any, 0, 1+5*deliveryBatch)
	for len(others) > 0 {
		n := min(len(others), deliveryBatch)
		args = append(args[:0], at)
		for _, d := range others[:n] {
			args = append(args, d.Row, statusArg(d.Status), opt(d.SentAt), opt(d.DeliveredAt), opt(d.ReadAt))
		}
		q := `UPDATE recipients SET status = v.column2, sent_at = v.column3, delivered_at = v.column4, read_at = v.column5, updated_at = ?1
			FROM (VALUES ` + strings.TrimSuffix(strings.Repeat("(?,?,?,?,?),", n), ",") + `) AS v WHERE recipients.row = v.column1`
		var err error
		if n == deliveryBatch {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, q); err != nil {
					return fmt.Errorf("save states: %w", err)
				}
				defer full.Close()
			}
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, q, args...)
		}
		if err != nil {
			return fmt.Errorf("save states of rows %d to %d: %w", others[0].Row, others[n-1].Row, err)
		}
		others = others[n:]
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save states: %w", err)
	}
	return nil
}

// statusArgs are the statuses as query arguments, made once: converting a
// string to an interface allocates.
var statusArgs = func() map[campaign.Status]any {
	m := map[campaign.Status]any{}
	for _, s := range campaign.Statuses {
		m[s] = string(s)
	}
	return m
}()

func statusArg(s campaign.Status) any {
	if a, ok := statusArgs[s]; ok {
		return a
	}
	return string(s)
}
