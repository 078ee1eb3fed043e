// Package store is bulksend's checkpoint: one SQLite file per campaign that
// holds every recipient's state, the campaign's settings, and the lock that
// keeps two runs apart. It is the only package that speaks SQL.
//
// A Store satisfies the interfaces of the packages that use it: the send
// loop's engine.Checkpoint and reconcile's reconcile.Checkpoint. Its files
// follow its concepts: the schema and its migrations, settings, import,
// exclude, claims (what a run takes and records), the in-doubt policy,
// deliveries (what status webhooks change), and report.
//
// Every method returns errors; none logs. Times are stored as Unix
// milliseconds.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mattn/go-sqlite3" // the SQLite driver, registered as "sqlite3"

	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/reconcile"
)

var (
	_ engine.Checkpoint    = (*Store)(nil)
	_ reconcile.Checkpoint = (*Store)(nil)
)

// Store is an open checkpoint. It is safe for concurrent use.
//
// It holds one read-write connection, on which the send loop claims and
// records (SQLite has one writer at a time), and, from the first View on,
// a pool of read-only connections beside it for reads that must not wait
// for the writer nor make it wait: in WAL mode a reader runs beside the
// writer and sees the last commit before its transaction's first read.
type Store struct {
	db   *sql.DB // the read-write connection; nil in a view
	q    reader  // what reads go through: db, or a view's transaction
	path string

	readMu   sync.Mutex
	readOnly *sql.DB // the read-only pool, opened by the first View; nil before
	closed   bool

	// Prepared once: a claim runs ten times a second per sender number.
	claimSelect, claimUpdate *sql.Stmt
	attemptsInsert           *sql.Stmt // attemptsBatch attempts

	run atomic.Int64 // the run BeginRun recorded: its attempts are its; 0 before
}

// claimSelect picks a claim's rows: retries that are due first (the rows
// an earlier answer put back, next_at > 0, oldest due first), then rows
// never tried (next_at 0 or below), in row order. Retries so ride in the
// main flow instead of waiting for its end and making a tail. Each half
// walks the recipients_due index.
const claimSelect = `SELECT * FROM (SELECT row, phone, params, attempts, COALESCE(parts, 1), throttles FROM recipients
		WHERE status = 'pending' AND sender = ?1 AND next_at > 0 AND next_at <= ?2 ORDER BY next_at, row LIMIT ?3)
	UNION ALL
	SELECT * FROM (SELECT row, phone, params, attempts, COALESCE(parts, 1), throttles FROM recipients
		WHERE status = 'pending' AND sender = ?1 AND next_at <= 0 ORDER BY next_at, row LIMIT ?3)
	LIMIT ?3`

// Open opens the checkpoint at path, creating it (mode 0600: it holds phone
// numbers) if it does not exist, and brings its schema up to date (see
// migrate). A checkpoint written by a newer bulksend is refused with an
// error wrapping ErrNewerSchema.
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
	s := &Store{db: db, q: db, path: path}
	if err := migrate(context.Background(), db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	if s.claimSelect, err = db.Prepare(claimSelect); err != nil {
		db.Close()
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	if s.claimUpdate, err = db.Prepare(`UPDATE recipients SET status = 'sending', attempts = attempts + 1, attempted_at = ?1, updated_at = ?1
		WHERE row IN (SELECT value FROM json_each(?2))`); err != nil {
		s.claimSelect.Close()
		db.Close()
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	if s.attemptsInsert, err = db.Prepare(attemptsInsert(attemptsBatch)); err != nil {
		s.claimSelect.Close()
		s.claimUpdate.Close()
		db.Close()
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	return s, nil
}

// Close closes the checkpoint, and its read-only pool if a View opened it.
func (s *Store) Close() error {
	s.readMu.Lock()
	s.closed = true
	if s.readOnly != nil {
		s.readOnly.Close()
	}
	s.readMu.Unlock()
	s.claimSelect.Close()
	s.claimUpdate.Close()
	s.attemptsInsert.Close()
	return s.db.Close()
}

// reader is what a read goes through: the store's connection, or a
// view's transaction.
type reader interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// View calls fn with a view of the checkpoint bound to one read-only
// transaction: what fn reads through it comes from one snapshot (the
// last commit before its first read), however many queries it takes and
// whatever a run commits meanwhile. The transaction runs on the read-only
// pool beside the store's connection, so a long read (counting millions
// of rows, a report) neither waits for the send loop's claims and records
// nor delays them.
//
// The view only reads: fn must not write through it, close it, or keep it
// after returning (its methods that write fail or panic). View on a view
// calls fn with the same view. The pool is opened at the first View; like
// any other connection it would hold up Import's change of journal mode,
// so a process views a checkpoint only once it is imported.
func (s *Store) View(ctx context.Context, fn func(v *Store) error) error {
	if s.db == nil {
		return fn(s)
	}
	db, err := s.readPool()
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("read checkpoint %q: %w", s.path, err)
	}
	defer tx.Rollback() // it wrote nothing
	return fn(&Store{q: tx, path: s.path})
}

// readPool returns the read-only pool, opening it at the first call.
// Its transactions are deferred (BEGIN): they take no lock until they
// read, and never the write lock.
func (s *Store) readPool() (*sql.DB, error) {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("read checkpoint %q: %w", s.path, errClosed)
	}
	if s.readOnly == nil {
		db, err := sql.Open("sqlite3", "file:"+s.path+"?mode=ro&_busy_timeout=5000&_txlock=deferred")
		if err != nil {
			return nil, fmt.Errorf("read checkpoint %q: %w", s.path, err)
		}
		db.SetMaxOpenConns(4)
		s.readOnly = db
	}
	return s.readOnly, nil
}

var errClosed = errors.New("checkpoint closed")

// Path is the checkpoint's file name.
func (s *Store) Path() string { return s.path }

// ErrDiskFull marks a write that failed for want of disk space: errors.Is
// finds it in the errors of every method that writes.
var ErrDiskFull = errors.New("disk full")

type diskFullError struct{ error }

func (e diskFullError) Is(target error) bool { return target == ErrDiskFull }
func (e diskFullError) Unwrap() error        { return e.error }

// full marks err as ErrDiskFull when SQLite or the system says the disk is
// full; the caller defers it: defer full(&err).
func full(err *error) {
	var se sqlite3.Error
	if *err != nil && ((errors.As(*err, &se) && se.Code == sqlite3.ErrFull) || errors.Is(*err, syscall.ENOSPC)) {
		*err = diskFullError{*err}
	}
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
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

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// placeholdersWith returns rows copies of one, comma-separated.
func placeholdersWith(rows int, one string) string {
	return strings.TrimSuffix(strings.Repeat(one+",", rows), ",")
}
