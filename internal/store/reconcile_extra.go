package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
)

// This file is what reconcile needs beyond States and SaveStates: the same
// read and write narrowed to the columns a status webhook changes. Reconcile
// does both for every row of every batch, and the narrowing halves their
// cost (BenchmarkReconcile).

// deliveryBatch is how many rows one UPDATE of SaveDeliveries writes.
const deliveryBatch = 64

const deliveryCols = `row, status, COALESCE(wamid, ''), COALESCE(error_code, 0), COALESCE(error_title, ''), COALESCE(sent_at, 0), COALESCE(delivered_at, 0), COALESCE(read_at, 0)`

// Deliveries is States narrowed to what a status webhook can change: the
// states it returns have Row, Status, WAMID, Code, Title, SentAt,
// DeliveredAt and ReadAt set, and Sender, Attempts and AttemptedAt zero.
func (s *Store) Deliveries(ctx context.Context, rows []int64, wamids []string) (map[int64]State, error) {
	out := make(map[int64]State, len(rows)+len(wamids))
	keys := make([]any, 0, min(max(len(rows), len(wamids)), lookupChunk))
	load := func(col string, n int, key func(int) any) error {
		for i := 0; i < n; i += lookupChunk {
			keys = keys[:0]
			for j := i; j < min(n, i+lookupChunk); j++ {
				keys = append(keys, key(j))
			}
			q := `SELECT ` + deliveryCols + ` FROM recipients WHERE ` + col + ` IN (` + strings.TrimSuffix(strings.Repeat("?,", len(keys)), ",") + `)`
			if err := s.scanDeliveries(ctx, q, keys, out); err != nil {
				return fmt.Errorf("load states: %w", err)
			}
		}
		return nil
	}
	if err := load("row", len(rows), func(i int) any { return rows[i] }); err != nil {
		return nil, err
	}
	if err := load("wamid", len(wamids), func(i int) any { return wamids[i] }); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) scanDeliveries(ctx context.Context, q string, args []any, out map[int64]State) error {
	rs, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	var status sql.RawBytes
	for rs.Next() {
		var st State
		var sent, delivered, read int64
		if err := rs.Scan(&st.Row, &status, &st.WAMID, &st.Code, &st.Title, &sent, &delivered, &read); err != nil {
			return err
		}
		st.Status = ""
		for _, known := range campaign.Statuses { // the constant: no allocation
			if string(status) == string(known) {
				st.Status = known
			}
		}
		if st.Status == "" {
			st.Status = campaign.Status(status)
		}
		st.SentAt, st.DeliveredAt, st.ReadAt = fromMSInt(sent), fromMSInt(delivered), fromMSInt(read)
		out[st.Row] = st
	}
	return rs.Err()
}

func fromMSInt(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// SaveDeliveries is SaveStates narrowed to what a status webhook changes,
// in one transaction: it writes the status, sent_at, delivered_at and
// read_at of all the states, and also the wamid, error_code and
// error_title of those in withIDs. Leaving the wamid of the others alone
// spares its index.
func (s *Store) SaveDeliveries(ctx context.Context, withIDs, others []State, now time.Time) error {
	if len(withIDs)+len(others) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save states: %w", err)
	}
	defer tx.Rollback()
	opt := func(t time.Time) sql.NullInt64 {
		return sql.NullInt64{Int64: ms(t), Valid: !t.IsZero()}
	}
	if len(withIDs) > 0 {
		up, err := tx.PrepareContext(ctx, `UPDATE recipients SET status = ?2, wamid = ?3, error_code = ?4, error_title = ?5,
			sent_at = ?6, delivered_at = ?7, read_at = ?8, updated_at = ?9 WHERE row = ?1`)
		if err != nil {
			return fmt.Errorf("save states: %w", err)
		}
		defer up.Close()
		for _, st := range withIDs {
			code := sql.NullInt64{Int64: int64(st.Code), Valid: st.Code != 0}
			if _, err := up.ExecContext(ctx, st.Row, string(st.Status), nullString(st.WAMID), code, nullString(st.Title),
				opt(st.SentAt), opt(st.DeliveredAt), opt(st.ReadAt), ms(now)); err != nil {
				return fmt.Errorf("save state of row %d: %w", st.Row, err)
			}
		}
	}
	// The others, deliveryBatch rows per statement: a third of the cost
	// of a statement per row.
	var full *sql.Stmt
	args := make([]any, 0, 1+5*deliveryBatch)
	for len(others) > 0 {
		n := min(len(others), deliveryBatch)
		args = append(args[:0], ms(now))
		for _, st := range others[:n] {
			args = append(args, st.Row, string(st.Status), opt(st.SentAt), opt(st.DeliveredAt), opt(st.ReadAt))
		}
		q := `UPDATE recipients SET status = v.column2, sent_at = v.column3, delivered_at = v.column4, read_at = v.column5, updated_at = ?1
			FROM (VALUES ` + placeholders(n, 5) + `) AS v WHERE recipients.row = v.column1`
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
