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
	// immutable: opened read-only on a file this process cannot write
	// (OpenRead); its read pool is opened so too.
	immutable bool

	readMu   sync.Mutex
	readOnly *sql.DB // the read-only pool, opened by the first View; nil before
	closed   bool

	// Prepared once: a claim runs ten times a second per sender number.
	claimSelect, claimUpdate *sql.Stmt
	attemptsInsert           *sql.Stmt // attemptsBatch attempts

	run atomic.Int64 // the run BeginRun recorded: its attempts are its; 0 before

	// imported is the Breakdown this store's Import left, nil before.
	imported atomic.Pointer[imported]

	// live: opened by OpenLive, beside a run that may hold the checkpoint.
	// Statuses then leave the rows a run may be writing alone (see
	// OpenLive).
	live bool
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

// Open opens the checkpoint at path for a run, creating it (mode 0600: it
// holds phone numbers) if it does not exist, and brings its schema up to
// date (see migrate). Every name of the file opens it under its resolved
// name (Resolve). It refuses: a checkpoint written by a newer bulksend
// (ErrNewerSchema), a SQLite file that is not a checkpoint, or not SQLite
// at all, which it leaves as it was (ErrNotCheckpoint), a file with other
// hard links (ErrHardLinked), and one it cannot write (ErrReadOnly: see
// OpenRead).
func Open(path string) (*Store, error) { return open(path, false) }

// OpenLive opens the checkpoint at path for a receiver that applies
// statuses while a run may hold it (bulksend receive). It takes no lock
// and migrates nothing: a checkpoint of an older schema is refused (a run
// or reconcile migrates it). Its writes leave alone the rows a run may be
// writing: those pending or sending are not read as deliveries, and a
// delivery is saved only to a row that is neither, so a claim or an
// answer recorded meanwhile wins (the run's own writes are conditional on
// the row's status as well). A status so left out is applied by the next
// reconcile of the receiver's log, which stays the source of truth.
func OpenLive(path string) (*Store, error) { return open(path, true) }

func open(path string, live bool) (*Store, error) {
	path, err := Resolve(path)
	if err != nil {
		return nil, err
	}
	if err := checkFile(path); err != nil {
		return nil, err
	}
	if ok, why := writable(path); !ok {
		return nil, fmt.Errorf("open checkpoint %q: %w (%v): a run writes it; status, export and report can read it", path, ErrReadOnly, why)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	if err := checkInfo(path, fi); err != nil {
		return nil, err
	}
	if fi.Size() > 0 {
		// Before the connection below switches the file to WAL.
		if err := foreign(path); err != nil {
			return nil, err
		}
	}
	db, err := sql.Open("sqlite3", uri(path, "_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000&_txlock=immediate"))
	if err != nil {
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	// One writer at a time is SQLite's rule; a single connection also
	// keeps the WAL and temp tables simple.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, q: db, path: path, live: live}
	if live {
		if v, err := userVersion(context.Background(), db); err != nil || v != schemaVersion {
			db.Close()
			if err == nil {
				err = fmt.Errorf("its schema is version %d, not %d: run bulksend reconcile on it once", v, schemaVersion)
			}
			return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
		}
	}
	if err := migrate(context.Background(), db); err != nil {
		db.Close()
		mark(&err)
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	if err := s.prepare(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	return s, nil
}

// OpenRead opens the checkpoint at path for the commands that read it
// (status, export, report). It creates nothing: a missing file is an
// error. A checkpoint this process may write is opened as Open does. One
// it cannot write (read-only media, a backup or an auditor's copy without
// write permission) is opened read-only and immutable, so that SQLite
// makes no WAL beside it: its writes fail, and one that holds an older
// schema, which would need migrating, is refused with ErrReadOnly.
func OpenRead(path string) (*Store, error) {
	path, err := Resolve(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint: %w", err)
	}
	if err := checkInfo(path, fi); err != nil {
		return nil, err
	}
	ok, why := writable(path)
	if ok {
		return Open(path)
	}
	if err := check(path, true); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite3", uri(path, "mode=ro&immutable=1"))
	if err != nil {
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	v, err := userVersion(context.Background(), db)
	if err == nil && v < schemaVersion {
		err = fmt.Errorf("%w (%v), and written by an older bulksend (schema %d, this one reads %d): copy it to a writable folder to read it", ErrReadOnly, why, v, schemaVersion)
	}
	if err != nil {
		db.Close()
		mark(&err)
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	s := &Store{db: db, q: db, path: path, immutable: true}
	if err := s.prepare(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	return s, nil
}

// prepare makes the statements a run repeats.
func (s *Store) prepare() (err error) {
	if s.claimSelect, err = s.db.Prepare(claimSelect); err != nil {
		return err
	}
	if s.claimUpdate, err = s.db.Prepare(`UPDATE recipients SET status = 'sending', attempts = attempts + 1, attempted_at = ?1, updated_at = ?1, wait = NULL
		WHERE row IN (SELECT value FROM json_each(?2))`); err != nil {
		s.claimSelect.Close()
		return err
	}
	if s.attemptsInsert, err = s.db.Prepare(attemptsInsert(attemptsBatch)); err != nil {
		s.claimSelect.Close()
		s.claimUpdate.Close()
		return err
	}
	return nil
}

// foreign refuses the SQLite file at path when it holds tables and not
// bulksend's (another program's database), or is not SQLite at all; one
// without tables (a first run that stopped before its schema) passes.
func foreign(path string) error {
	db, err := sql.Open("sqlite3", uri(path, readQuery(true)))
	if err != nil {
		return fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	defer db.Close()
	var all, ours int
	err = db.QueryRow(`SELECT COUNT(*), COUNT(*) FILTER (WHERE name IN ('meta', 'recipients')) FROM sqlite_master WHERE type = 'table'`).Scan(&all, &ours)
	switch {
	case isNotADB(err):
		return notADB(path, err)
	case err != nil:
		mark(&err)
		return fmt.Errorf("open checkpoint %q: %w", path, err)
	case all > 0 && ours < 2:
		return fmt.Errorf("%q: %w (a SQLite database of another program, left as it was)", path, ErrNotCheckpoint)
	}
	return nil
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
		q := "mode=ro&_busy_timeout=5000&_txlock=deferred"
		if s.immutable {
			q = "mode=ro&immutable=1"
		}
		db, err := sql.Open("sqlite3", uri(s.path, q))
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

// ErrCorrupt marks a checkpoint SQLite found damaged. The file must be
// kept: a new checkpoint would send every row again, and most of a
// damaged one can be read back (sqlite3's .recover).
var ErrCorrupt = errors.New("the checkpoint is damaged")

type corruptError struct{ error }

func (e corruptError) Is(target error) bool { return target == ErrCorrupt }
func (e corruptError) Unwrap() error        { return e.error }

// mark marks err as ErrDiskFull when SQLite or the system says the disk is
// full, and as ErrCorrupt when SQLite finds the file damaged; the caller
// defers it: defer mark(&err).
func mark(err *error) {
	var se sqlite3.Error
	switch {
	case *err == nil:
	case (errors.As(*err, &se) && se.Code == sqlite3.ErrFull) || errors.Is(*err, syscall.ENOSPC):
		*err = diskFullError{*err}
	case errors.As(*err, &se) && (se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB):
		*err = corruptError{*err}
	}
}

func isNotADB(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrNotADB
}

// notADB is the error for a file that is not SQLite: a file of another
// kind, or a checkpoint whose first page is damaged (the hint says to
// keep it).
func notADB(path string, err error) error {
	return fmt.Errorf("%q: %w (not a SQLite database): %w", path, ErrNotCheckpoint, err)
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
