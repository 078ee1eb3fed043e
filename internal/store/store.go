// Package store is bulksend's checkpoint: one SQLite file per campaign that
// holds every recipient's state, the campaign's settings, and the lock that
// keeps two runs apart. It is the only package that speaks SQL.
//
// Every method returns errors; none logs. Times are stored as Unix
// milliseconds.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3" // the SQLite driver, registered as "sqlite3"

	"github.com/bulksend/bulksend/internal/campaign"
)

// Store is an open checkpoint. It is safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string

	// Prepared once: a claim runs ten times a second per sender number.
	claimSelect, claimUpdate *sql.Stmt
}

const schema = `
CREATE TABLE IF NOT EXISTS meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS recipients (
	row          INTEGER PRIMARY KEY, -- data row number, 1 for the first row after the header
	line         INTEGER NOT NULL,    -- CSV line the row starts on
	ext_id       TEXT,                -- the CSV's id column
	phone        TEXT NOT NULL,       -- E.164, or as written when invalid
	sender       TEXT NOT NULL,       -- sender phone-number ID
	params       TEXT NOT NULL,       -- JSON array of body parameters
	status       TEXT NOT NULL,
	attempts     INTEGER NOT NULL DEFAULT 0,
	next_at      INTEGER NOT NULL DEFAULT 0, -- pending rows are due from this instant
	attempted_at INTEGER,
	wamid        TEXT,
	error_code   INTEGER,
	error_title  TEXT,
	reason       TEXT,                -- why a row was skipped
	sent_at      INTEGER,
	delivered_at INTEGER,
	read_at      INTEGER,
	updated_at   INTEGER NOT NULL
);
-- Partial indexes that no imported row enters: made with the table, they
-- cost the import nothing.
CREATE INDEX IF NOT EXISTS recipients_wamid ON recipients(wamid) WHERE wamid IS NOT NULL;
CREATE INDEX IF NOT EXISTS recipients_sending ON recipients(row) WHERE status = 'sending';
CREATE INDEX IF NOT EXISTS recipients_in_doubt ON recipients(row) WHERE status = 'in_doubt';
`

// dueIndex orders each sender's pending rows for claims (an index ends with
// the rowid, row, so ORDER BY next_at, row needs no sort). It is built after
// the first import: building it once is much faster than keeping it up to
// date during a million inserts. Phones have no index: duplicates are found
// at import without one (see Import) and --exclude scans once per run.
const dueIndex = `CREATE INDEX IF NOT EXISTS recipients_due ON recipients(sender, next_at) WHERE status = 'pending'`

// Open opens the checkpoint at path, creating it (mode 0600: it holds phone
// numbers) if it does not exist.
func Open(path string) (*Store, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	f.Close()
	dsn := "file:" + path + "?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000&_txlock=immediate"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	// One writer at a time is SQLite's rule; a single connection also
	// keeps the WAL and temp tables simple.
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	s := &Store{db: db, path: path}
	if s.claimSelect, err = db.Prepare(`SELECT row, phone, params, attempts FROM recipients
		WHERE status = 'pending' AND sender = ? AND next_at <= ? ORDER BY next_at, row LIMIT ?`); err != nil {
		db.Close()
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	if s.claimUpdate, err = db.Prepare(`UPDATE recipients SET status = 'sending', attempts = attempts + 1, attempted_at = ?1, updated_at = ?1
		WHERE row IN (SELECT value FROM json_each(?2))`); err != nil {
		db.Close()
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	return s, nil
}

// Close closes the checkpoint.
func (s *Store) Close() error {
	s.claimSelect.Close()
	s.claimUpdate.Close()
	return s.db.Close()
}

// Path is the checkpoint's file name.
func (s *Store) Path() string { return s.path }

// Settings are what the first run was given; later runs reuse them.
type Settings struct {
	CampaignID    string    `json:"campaign_id"`
	Template      string    `json:"template"`
	Lang          string    `json:"lang"`
	Senders       []string  `json:"senders,omitempty"` // --from; empty when the CSV has a from column
	Rate          float64   `json:"rate"`
	Concurrency   int       `json:"concurrency"` // 0: derived from rate and latency
	MaxAttempts   int       `json:"max_attempts"`
	DefaultRegion string    `json:"default_region,omitempty"`
	Params        []string  `json:"params"` // parameter column names
	CSVHash       string    `json:"csv_sha256"`
	CSVSize       int64     `json:"csv_size"`
	CreatedAt     time.Time `json:"created_at"`
}

// ErrNoSettings means the checkpoint has not been set up by a first run.
var ErrNoSettings = errors.New("checkpoint has no campaign yet")

// Settings returns the stored settings, or ErrNoSettings.
func (s *Store) Settings(ctx context.Context) (Settings, error) {
	var st Settings
	v, err := s.meta(ctx, "settings")
	if err != nil {
		return st, err
	}
	if v == "" {
		return st, ErrNoSettings
	}
	if err := json.Unmarshal([]byte(v), &st); err != nil {
		return st, fmt.Errorf("read settings: %w", err)
	}
	return st, nil
}

// SaveSettings stores st. Rows waiting for a retry that have already used
// st.MaxAttempts (it was lowered) are failed in the same transaction, so a
// lower limit never allows one more send. It returns how many it failed.
func (s *Store) SaveSettings(ctx context.Context, st Settings) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("save settings: %w", err)
	}
	defer tx.Rollback()
	if err := writeSettings(ctx, tx, st); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `UPDATE recipients SET status = 'failed', updated_at = ?2,
		error_title = COALESCE(error_title, 'not sent') || ' (after ' || attempts || ' attempts; --max-attempts is now ' || ?1 || ')'
		WHERE status = 'pending' AND attempts >= ?1`, st.MaxAttempts, ms(time.Now()))
	if err != nil {
		return 0, fmt.Errorf("save settings: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, tx.Commit()
}

func writeSettings(ctx context.Context, e execer, st Settings) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("write settings: %w", err)
	}
	return setMeta(ctx, e, "settings", string(b))
}

func (s *Store) meta(ctx context.Context, key string) (string, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", key, err)
	}
	return v, nil
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func setMeta(ctx context.Context, e execer, key, value string) error {
	_, err := e.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
	if err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v sql.NullInt64) time.Time {
	if !v.Valid || v.Int64 == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64)
}

// placeholdersWith returns rows copies of one, comma-separated.
func placeholdersWith(rows int, one string) string {
	return strings.TrimSuffix(strings.Repeat(one+",", rows), ",")
}

// Counts returns the number of rows in each status.
func (s *Store) Counts(ctx context.Context) (campaign.Counts, error) {
	var c campaign.Counts
	rows, err := s.db.QueryContext(ctx, `SELECT status, COUNT(*) FROM recipients GROUP BY status`)
	if err != nil {
		return c, fmt.Errorf("count rows: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return c, fmt.Errorf("count rows: %w", err)
		}
		c.Add(campaign.Status(st), n)
	}
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("count rows: %w", err)
	}
	return c, nil
}
