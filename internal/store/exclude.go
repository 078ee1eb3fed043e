package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Exclude marks rows not yet sent whose phone is in the suppression list
// skipped ("excluded"). next returns io.EOF after the last phone. It
// returns how many rows it skipped.
func (s *Store) Exclude(ctx context.Context, next func() (string, error)) (_ int64, err error) {
	defer full(&err)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("exclude: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE IF NOT EXISTS excluded(phone TEXT PRIMARY KEY) WITHOUT ROWID; DELETE FROM excluded;`); err != nil {
		return 0, fmt.Errorf("exclude: %w", err)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO excluded(phone) VALUES(?)`)
	if err != nil {
		return 0, fmt.Errorf("exclude: %w", err)
	}
	defer ins.Close()
	for {
		p, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		if _, err := ins.ExecContext(ctx, p); err != nil {
			return 0, fmt.Errorf("exclude: %w", err)
		}
	}
	// A row with attempts behind it may have reached the recipient before:
	// its reason says so, rather than claim it was never sent.
	res, err := tx.ExecContext(ctx, `UPDATE recipients SET status = 'skipped', skip_kind = 'excluded',
		reason = CASE WHEN attempts > 0 THEN 'excluded after an attempt with no answer' ELSE 'excluded' END, updated_at = ?
		WHERE status = 'pending' AND phone IN (SELECT phone FROM excluded)`, ms(time.Now()))
	if err != nil {
		return 0, fmt.Errorf("exclude: %w", err)
	}
	n, _ := res.RowsAffected()
	if _, err := tx.ExecContext(ctx, `DROP TABLE excluded`); err != nil {
		return 0, fmt.Errorf("exclude: %w", err)
	}
	return n, tx.Commit()
}
