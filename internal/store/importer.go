package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
)

// Row is one recipient as imported from the CSV.
type Row struct {
	Row    int64
	Line   int
	ExtID  string
	Phone  string // E.164, or as written when Skip is set
	Sender string
	Params []string
	Skip   string // why the row will not be sent; "" to send it
}

const importBatch = 64 // rows per INSERT: fewer cgo calls, under SQLite's variable limit

// Import loads the campaign into an empty checkpoint in one transaction,
// with its settings: a crash during import leaves nothing behind, so the
// next run imports again. Rows whose phone appeared on an earlier row are
// skipped as duplicates. next returns io.EOF after the last row; any other
// error from it aborts the import and is returned as is. settings is
// called after the last row, so it can include what reading the rows
// learnt (the file's hash).
func (s *Store) Import(ctx context.Context, next func() (Row, error), settings func() Settings) (int64, error) {
	if _, err := s.Settings(ctx); err == nil {
		return 0, errors.New("import: checkpoint already holds a campaign")
	} else if !errors.Is(err, ErrNoSettings) {
		return 0, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer tx.Rollback()
	const cols = 9
	full, err := tx.PrepareContext(ctx, `INSERT INTO recipients(row, line, ext_id, phone, sender, params, status, reason, updated_at) VALUES `+placeholders(importBatch, cols))
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer full.Close()
	now := ms(time.Now())
	args := make([]any, 0, importBatch*cols)
	var n int64
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		var err error
		if len(args) == cap(args) {
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, `INSERT INTO recipients(row, line, ext_id, phone, sender, params, status, reason, updated_at) VALUES `+placeholders(len(args)/cols, cols), args...)
		}
		args = args[:0]
		return err
	}
	for {
		r, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		params, err := json.Marshal(r.Params)
		if err != nil {
			return 0, fmt.Errorf("import row %d: %w", r.Row, err)
		}
		status, reason := campaign.Pending, sql.NullString{}
		if r.Skip != "" {
			status, reason = campaign.Skipped, sql.NullString{String: r.Skip, Valid: true}
		}
		var ext sql.NullString
		if r.ExtID != "" {
			ext = sql.NullString{String: r.ExtID, Valid: true}
		}
		args = append(args, r.Row, r.Line, ext, r.Phone, r.Sender, string(params), string(status), reason, now)
		n++
		if len(args) == cap(args) {
			if err := flush(); err != nil {
				return 0, fmt.Errorf("import row %d: %w", r.Row, err)
			}
		}
	}
	if err := flush(); err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	if _, err := tx.ExecContext(ctx, indexes); err != nil {
		return 0, fmt.Errorf("import: index: %w", err)
	}
	// The first row with a phone is the one sent; later ones are skipped.
	// One pass over the phone index, not a lookup per row.
	if _, err := tx.ExecContext(ctx, `
		UPDATE recipients SET status = 'skipped', reason = 'duplicate of row ' || d.first
		FROM (SELECT row, MIN(row) OVER (PARTITION BY phone) AS first FROM recipients WHERE status = 'pending') AS d
		WHERE recipients.row = d.row AND d.row <> d.first`); err != nil {
		return 0, fmt.Errorf("import: duplicates: %w", err)
	}
	b, err := json.Marshal(settings())
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	if err := s.setMeta(ctx, tx, "settings", string(b)); err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	return n, nil
}

// Exclude marks rows not yet sent whose phone is in the suppression list
// skipped ("excluded"). next returns io.EOF after the last phone. It
// returns how many rows it skipped.
func (s *Store) Exclude(ctx context.Context, next func() (string, error)) (int64, error) {
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
	res, err := tx.ExecContext(ctx, `UPDATE recipients SET status = 'skipped', reason = 'excluded', updated_at = ?
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
