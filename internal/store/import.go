package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bulksend/bulksend/internal/bloom"
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
	// Parts and Encoding are an SMS row's rendered body measured (see
	// package segment); 0 and "" for a WhatsApp row.
	Parts    int
	Encoding string
	// Skip says why the row will not be sent, "" to send it; SkipKind
	// groups it and must be set with it.
	Skip     string
	SkipKind campaign.SkipKind

	maybeRepeat bool // the duplicate filter has maybe seen Phone before
}

const (
	importBatch = 128  // rows per INSERT: under SQLite's limit of bound values
	readBatch   = 1024 // rows per hand-over from the reading goroutine
)

// filterSize is the bytes of duplicate filter: 16 per row at a million
// rows, where a million distinct phones drew no false "maybe seen" in three
// runs, so such a file skips the duplicate search. (At 8 bytes per phone
// about one in five runs of 200,000 draws one.) A variable so that a test
// can make the filter wrong often.
var filterSize = 16 << 20

// Import loads the campaign into an empty checkpoint in one transaction,
// with its settings: a crash during import leaves nothing behind, so the
// next run imports again. Rows whose phone appeared on an earlier row to
// send are skipped as duplicates. next returns io.EOF after the last row;
// any other error from it aborts the import and is returned as is. next is
// called from another goroutine, so that reading overlaps with SQLite's
// work. settings is called after the last row, so it can include what
// reading the rows learnt (the file's hash).
func (s *Store) Import(ctx context.Context, next func() (Row, error), settings func() Settings) (_ int64, err error) {
	defer full(&err)
	if _, err := s.Settings(ctx); err == nil {
		return 0, errors.New("import: checkpoint already holds a campaign")
	} else if !errors.Is(err, ErrNoSettings) {
		return 0, err
	}
	// Into an empty file a rollback journal has next to nothing to save,
	// while WAL would write every page twice (WAL, then checkpoint).
	// The index build may sort with a second thread. (A larger cache for
	// the sort tripled peak memory and gained nothing measurable.) The
	// temporary tables that find duplicates get a cache of their own that
	// grows only as far as there are repeated phones: a file with 10%
	// duplicates imports a third faster with it.
	if _, err := s.db.ExecContext(ctx, `PRAGMA journal_mode=DELETE; PRAGMA threads=2; PRAGMA temp.cache_size=-32768`); err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer s.db.Exec(`PRAGMA journal_mode=WAL; PRAGMA threads=0; PRAGMA temp.cache_size=-2000`)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer tx.Rollback()
	// Rows to send whose phone the filter may have seen before: only these
	// are looked at for duplicates once all rows are in. A rollback drops
	// the temporary tables too.
	if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE import_repeats(row INTEGER PRIMARY KEY, phone TEXT NOT NULL)`); err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	repeats, err := newMultiRow(ctx, tx, `INSERT INTO import_repeats(row, phone) VALUES `, "(?,?)", 2)
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer repeats.close()
	// Each bound value is a cgo call, so the common row (to send, no id,
	// WhatsApp) binds five values and the rest are constants; rows with an
	// id, a skip reason or parts take the full row.
	now := strconv.FormatInt(ms(time.Now()), 10)
	common, err := newMultiRow(ctx, tx, `INSERT INTO recipients(row, line, phone, sender, params, status, updated_at) VALUES `,
		"(?,?,?,?,?,'pending',"+now+")", 5)
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer common.close()
	full, err := newMultiRow(ctx, tx, `INSERT INTO recipients(row, line, ext_id, phone, sender, params, status, reason, skip_kind, parts, encoding, updated_at) VALUES `,
		"(?,?,?,?,?,?,?,?,?,?,?,"+now+")", 11)
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer full.close()
	batches, stop := readAhead(next)
	defer stop()
	var n int64
	var params []byte
	for b := range batches {
		for _, r := range b.rows {
			n++
			if r.maybeRepeat {
				if err := repeats.add(r.Row, r.Phone); err != nil {
					return 0, fmt.Errorf("import row %d: %w", r.Row, err)
				}
			}
			params = appendParams(params[:0], r.Params)
			if r.Skip != "" || r.ExtID != "" || r.Parts != 0 {
				status := string(campaign.Pending)
				if r.Skip != "" {
					status = string(campaign.Skipped)
					if r.SkipKind == "" {
						return 0, fmt.Errorf("import row %d: skipped (%s) without a skip kind", r.Row, r.Skip)
					}
				}
				if err := full.add(r.Row, r.Line, nullString(r.ExtID), r.Phone, r.Sender, string(params), status, nullString(r.Skip), nullString(string(r.SkipKind)),
					nullInt(int64(r.Parts)), nullString(r.Encoding)); err != nil {
					return 0, fmt.Errorf("import row %d: %w", r.Row, err)
				}
				continue
			}
			if err := common.add(r.Row, r.Line, r.Phone, r.Sender, string(params)); err != nil {
				return 0, fmt.Errorf("import row %d: %w", r.Row, err)
			}
		}
		if b.err != nil {
			return 0, b.err
		}
	}
	for _, m := range []*multiRow{common, full, repeats} {
		if err := m.flush(); err != nil {
			return 0, fmt.Errorf("import: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if repeats.rows > 0 {
		if err := markDuplicates(ctx, tx); err != nil {
			return 0, fmt.Errorf("import: duplicates: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE import_repeats`); err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	if _, err := tx.ExecContext(ctx, dueIndex); err != nil {
		return 0, fmt.Errorf("import: index: %w", err)
	}
	if err := writeSettings(ctx, tx, settings()); err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	return n, nil
}

// markDuplicates skips every row to send whose phone an earlier row to
// send has, with the earlier row's number as the reason. Only phones in
// import_repeats (from the filter: every repeated phone, and a few more) are
// looked at: one scan of the table finds each one's first row, and the
// update then visits only the repeated rows.
func markDuplicates(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
		CREATE INDEX temp.import_repeats_phone ON import_repeats(phone);
		CREATE TEMP TABLE import_firsts(phone TEXT PRIMARY KEY, row INTEGER NOT NULL) WITHOUT ROWID;
		INSERT INTO import_firsts(phone, row)
			SELECT phone, row FROM recipients
			WHERE status = 'pending' AND phone IN (SELECT phone FROM import_repeats)
			ON CONFLICT(phone) DO UPDATE SET row = min(row, excluded.row);
		UPDATE recipients SET status = 'skipped', skip_kind = 'duplicate',
			reason = 'duplicate of row ' || (SELECT f.row FROM import_firsts f WHERE f.phone = recipients.phone)
			WHERE row IN (SELECT r.row FROM import_repeats r JOIN import_firsts f USING (phone) WHERE r.row > f.row);
		DROP TABLE import_firsts;`)
	return err
}

// multiRow inserts rows through one multi-row INSERT per importBatch rows:
// SQLite's per-statement work is paid once per batch.
type multiRow struct {
	ctx         context.Context
	tx          *sql.Tx
	prefix, one string // the statement up to VALUES, and one row's values
	width       int    // values bound per row
	full        *sql.Stmt
	args        []any
	rows        int64 // added so far
}

func newMultiRow(ctx context.Context, tx *sql.Tx, prefix, one string, width int) (*multiRow, error) {
	m := &multiRow{ctx: ctx, tx: tx, prefix: prefix, one: one, width: width, args: make([]any, 0, importBatch*width)}
	var err error
	m.full, err = tx.PrepareContext(ctx, prefix+placeholdersWith(importBatch, one))
	return m, err
}

func (m *multiRow) add(values ...any) error {
	m.rows++
	if m.args = append(m.args, values...); len(m.args) < cap(m.args) {
		return nil
	}
	return m.flush()
}

// flush inserts the rows added since the last flush.
func (m *multiRow) flush() error {
	var err error
	switch len(m.args) {
	case 0:
	case cap(m.args):
		_, err = m.full.ExecContext(m.ctx, m.args...)
	default:
		_, err = m.tx.ExecContext(m.ctx, m.prefix+placeholdersWith(len(m.args)/m.width, m.one), m.args...)
	}
	m.args = m.args[:0]
	return err
}

func (m *multiRow) close() { m.full.Close() }

type rowBatch struct {
	rows []Row
	err  error // after rows; ends the stream (io.EOF is not passed on)
}

// readAhead calls next in its own goroutine and hands its rows over in
// batches, marking the rows to send whose phone a Bloom filter may have
// seen before. The channel is closed after the last batch. stop ends the
// goroutine early and returns once it has: it is never left calling next.
func readAhead(next func() (Row, error)) (<-chan rowBatch, func()) {
	out := make(chan rowBatch, 4)
	done := make(chan struct{})
	go func() {
		defer close(out)
		seen := bloom.New(filterSize)
		b := make([]Row, 0, readBatch)
		stopped := func() bool {
			select {
			case <-done:
				return true
			default:
				return false
			}
		}
		send := func(err error) bool {
			if stopped() {
				return false
			}
			select {
			case out <- rowBatch{rows: b, err: err}:
				b = make([]Row, 0, readBatch)
				return true
			case <-done:
				return false
			}
		}
		for !stopped() {
			r, err := next()
			if errors.Is(err, io.EOF) {
				send(nil)
				return
			}
			if err != nil {
				send(err)
				return
			}
			if r.Skip == "" {
				r.maybeRepeat = seen.Add(r.Phone)
			}
			if b = append(b, r); len(b) == cap(b) && !send(nil) {
				return
			}
		}
	}()
	var once sync.Once
	return out, func() {
		once.Do(func() {
			close(done)
			for range out {
			}
		})
	}
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
