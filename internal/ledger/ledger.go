// Package ledger is the operator's ledger: one small SQLite file in the
// user's state folder (DefaultPath) that outlives every campaign and is
// shared by every bulksend process of the user. It holds what no one
// checkpoint can know:
//
//   - sends: the recipients each budget key (a WhatsApp business
//     portfolio, an SMS origination identity) sent to, for the moving
//     24-hour limit of unique recipients that all its numbers and
//     campaigns share (Admit);
//   - learned limits: what each sender number was found to accept, so a
//     new campaign starts there (SetLearned);
//   - campaigns: where each campaign's checkpoint is (NoteCampaign);
//   - opt-outs: recipients no later campaign may message, whatever channel
//     they opted out on (AddOptOuts).
//
// A checkpoint never needs the ledger to be read: the ledger only adds
// what spans campaigns. Sends, learned limits and campaigns older than 30
// days are pruned; opt-outs never are.
//
// Times are explicit arguments and stored as Unix milliseconds. Every
// method returns errors; none logs.
package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-sqlite3" // the SQLite driver, registered as "sqlite3"
)

var (
	// ErrSymlink refuses a ledger path that is a symbolic link: the
	// ledger, its WAL and its shared memory are named after one name, and
	// a link planted in its place must not make bulksend write elsewhere.
	ErrSymlink = errors.New("the ledger is a symbolic link")
	// ErrHardLinked refuses a ledger file with more than one name: each
	// name would get a WAL of its own, and two processes would write one
	// database through two journals.
	ErrHardLinked = errors.New("the ledger has more than one hard link")
	// ErrNotLedger refuses a SQLite database of another program (a
	// checkpoint included), which Open leaves as it was.
	ErrNotLedger = errors.New("not a bulksend ledger")
	// ErrNotSQLite refuses a file that is not a SQLite database at all,
	// which Open leaves as it was.
	ErrNotSQLite = errors.New("not a SQLite database")
	// ErrNewerSchema refuses a ledger written by a newer bulksend: this one
	// cannot know what its columns mean.
	ErrNewerSchema = errors.New("ledger written by a newer bulksend")
)

// Ledger is an open ledger, made by Open (the zero value is not one). It
// is safe for concurrent use by goroutines, and several processes may have
// the same file open: every change is one transaction, and a write waits
// for another process's (busy timeout) rather than failing.
type Ledger struct {
	db   *sql.DB
	path string

	// Prepared once: Admit runs about ten times a second per sender.
	budget, existing, upsertSends, upsertBudget *sql.Stmt
}

// applicationID marks a SQLite file as a ledger (PRAGMA application_id,
// in the file's header): "BSLG".
const applicationID = 0x42534c47

// busyTimeout is how long a write waits for another process's: writes
// are short (an Admit takes well under a millisecond, a Prune on open a
// few), so only a stuck process makes one fail.
const busyTimeout = 10 * time.Second

// Open opens the ledger at path, creating it if it does not exist: its
// folder (and missing parents) with mode 0700 and the file with mode 0600,
// as it holds phone numbers; existing ones keep their modes. It brings the
// schema up to date (one transaction; see migrations) and prunes what is
// older than 30 days (Prune, at the wall clock).
//
// It refuses, leaving the file as it was: a path that is a symbolic link
// (ErrSymlink; the folders above may be links), a file with other hard
// links (ErrHardLinked), a SQLite database of another program
// (ErrNotLedger), a file that is not SQLite (ErrNotSQLite), and a ledger
// of a newer bulksend (ErrNewerSchema).
func Open(ctx context.Context, path string) (*Ledger, error) {
	// Two processes that open a new ledger at once race to make it WAL and
	// to migrate it; SQLite answers the loser "database is locked" at once,
	// busy timeout or not. It tries again: the winner is done in moments.
	deadline := time.Now().Add(busyTimeout)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		l, err := openAt(ctx, path, time.Now())
		if !busy(err) || time.Now().After(deadline) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// busy reports whether err is SQLite's "database is locked" or "busy".
func busy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// openAt is Open pruning at now, for tests with explicit times.
func openAt(ctx context.Context, path string, now time.Time) (*Ledger, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open ledger %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		target, _ := os.Readlink(path)
		return nil, fmt.Errorf("open ledger %q: %w (to %q): name the file itself", path, ErrSymlink, target)
	}
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
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
	q := fmt.Sprintf("_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=%d&_txlock=immediate", busyTimeout.Milliseconds())
	db, err := sql.Open("sqlite3", uri(path, q))
	if err != nil {
		return nil, fmt.Errorf("open ledger %q: %w", path, err)
	}
	// SQLite has one writer at a time; one connection makes a process's
	// writers queue in Go instead of polling SQLite's busy handler.
	db.SetMaxOpenConns(1)
	l := &Ledger{db: db, path: path}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open ledger %q: %w", path, err)
	}
	if err := l.prepare(ctx); err != nil {
		l.Close()
		return nil, fmt.Errorf("open ledger %q: %w", path, err)
	}
	if err := l.Prune(ctx, now); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// prepare makes the statements Admit repeats.
func (l *Ledger) prepare(ctx context.Context) (err error) {
	for _, s := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&l.budget, budgetSelect},
		{&l.existing, existingSelect},
		{&l.upsertSends, sendsUpsert},
		{&l.upsertBudget, budgetUpsert},
	} {
		if *s.stmt, err = l.db.PrepareContext(ctx, s.sql); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the ledger.
func (l *Ledger) Close() error {
	for _, s := range []*sql.Stmt{l.budget, l.existing, l.upsertSends, l.upsertBudget} {
		if s != nil {
			s.Close()
		}
	}
	return l.db.Close()
}

// Path is the ledger's absolute file name.
func (l *Ledger) Path() string { return l.path }

// checkInfo refuses a ledger that is not a regular file of one name.
func checkInfo(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("open ledger %q: not a regular file (%s)", path, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fmt.Errorf("open ledger %q: %w (%d names): remove the other names", path, ErrHardLinked, st.Nlink)
	}
	return nil
}

// foreign refuses the file at path unless it is a ledger, or a SQLite
// database with no tables and no application's mark yet (a first Open
// that stopped before its schema). It reads only the header and the
// schema.
func foreign(path string) error {
	// Read-write, so that a journal left by a killed writer is rolled
	// back as SQLite requires (a read-only connection fails on it).
	db, err := sql.Open("sqlite3", uri(path, fmt.Sprintf("mode=rw&_busy_timeout=%d", busyTimeout.Milliseconds())))
	if err != nil {
		return fmt.Errorf("open ledger %q: %w", path, err)
	}
	defer db.Close()
	var app int64
	var tables int
	err = db.QueryRow(`SELECT (SELECT application_id FROM pragma_application_id), (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table')`).Scan(&app, &tables)
	var se sqlite3.Error
	switch {
	case errors.As(err, &se) && se.Code == sqlite3.ErrNotADB:
		return fmt.Errorf("open ledger %q: %w (left as it was): move it away or name another file", path, ErrNotSQLite)
	case err != nil:
		return fmt.Errorf("open ledger %q: %w", path, err)
	case app != applicationID && (tables > 0 || app != 0):
		return fmt.Errorf("open ledger %q: %w (a SQLite database of another program, left as it was): name another file", path, ErrNotLedger)
	}
	return nil
}

// uri is the SQLite URI of the file at the absolute path, with query. The
// path is percent-encoded (net/url), so that every byte a file name may
// hold ('?', '#', '%', spaces) lands in that file and no other.
func uri(path, query string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive: file:///C:/...
	}
	u := url.URL{Scheme: "file", Path: p, RawQuery: query}
	return u.String()
}

// day is the moving window of a budget.
const day = 24 * time.Hour

// retention is how long sends, learned limits and campaigns are kept.
const retention = 30 * 24 * time.Hour

// ms is t in Unix milliseconds, 0 for the zero time (fromMS's inverse).
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}
