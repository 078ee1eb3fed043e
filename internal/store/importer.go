package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

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

const importBatch = 128 // rows per INSERT: under SQLite's limit of bound values

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
	// Into an empty file a rollback journal has next to nothing to save,
	// while WAL would write every page twice (WAL, then checkpoint).
	// The index builds may sort with a second thread. (A larger cache for
	// the sort tripled peak memory and gained nothing measurable.)
	if _, err := s.db.ExecContext(ctx, `PRAGMA journal_mode=DELETE; PRAGMA threads=2`); err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer s.db.Exec(`PRAGMA journal_mode=WAL; PRAGMA threads=0`)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer tx.Rollback()
	// Rows go in multi-row INSERTs: each bound value is a cgo call, so the
	// common row (to send, no id) binds five values and the rest are
	// constants; rows with an id or a skip reason take the full statement.
	now := ms(time.Now())
	common, err := tx.PrepareContext(ctx, `INSERT INTO recipients(row, line, phone, sender, params, status, updated_at) VALUES `+
		placeholdersWith(importBatch, "(?,?,?,?,?,'pending',"+strconv.FormatInt(now, 10)+")"))
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer common.Close()
	full, err := tx.PrepareContext(ctx, `INSERT INTO recipients(row, line, ext_id, phone, sender, params, status, reason, updated_at) VALUES (?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer full.Close()
	args := make([]any, 0, importBatch*5)
	var n int64
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		var err error
		if len(args) == cap(args) {
			_, err = common.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, `INSERT INTO recipients(row, line, phone, sender, params, status, updated_at) VALUES `+
				placeholdersWith(len(args)/5, "(?,?,?,?,?,'pending',"+strconv.FormatInt(now, 10)+")"), args...)
		}
		args = args[:0]
		return err
	}
	var params []byte
	for {
		r, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		n++
		params = appendParams(params[:0], r.Params)
		if r.Skip != "" || r.ExtID != "" {
			status, reason := string(campaign.Pending), sql.NullString{}
			if r.Skip != "" {
				status, reason = string(campaign.Skipped), sql.NullString{String: r.Skip, Valid: true}
			}
			if _, err := full.ExecContext(ctx, r.Row, r.Line, nullString(r.ExtID), r.Phone, r.Sender, string(params), status, reason, now); err != nil {
				return 0, fmt.Errorf("import row %d: %w", r.Row, err)
			}
			continue
		}
		args = append(args, r.Row, r.Line, r.Phone, r.Sender, string(params))
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
	// Only phones that occur more than once (found from the phone index
	// alone) are looked at row by row.
	if _, err := tx.ExecContext(ctx, `
		WITH repeated AS (SELECT phone FROM recipients GROUP BY phone HAVING COUNT(*) > 1),
		first AS (SELECT r.phone, MIN(r.row) AS row FROM recipients r JOIN repeated USING (phone) WHERE r.status = 'pending' GROUP BY r.phone)
		UPDATE recipients SET status = 'skipped', reason = 'duplicate of row ' || first.row
		FROM first WHERE recipients.phone = first.phone AND recipients.status = 'pending' AND recipients.row > first.row`); err != nil {
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
	// A row with attempts behind it may have reached the recipient before:
	// its reason says so, rather than claim it was never sent.
	res, err := tx.ExecContext(ctx, `UPDATE recipients SET status = 'skipped',
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

// appendParams appends params as a JSON array of strings.
func appendParams(b []byte, params []string) []byte {
	b = append(b, '[')
	for i, p := range params {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, p)
	}
	return append(b, ']')
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json does.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\\ufffd"...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
