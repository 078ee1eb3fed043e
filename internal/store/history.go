package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// This file is what a campaign report reads beyond status: the attempts
// record in bulk, quantiles of the durations the checkpoint keeps, and how
// far the accepted messages got. Every figure is computed by SQLite or
// streamed, so that a report's memory does not grow with the campaign.

// ErrNotCheckpoint marks a file that is not a bulksend checkpoint: not a
// SQLite database at all, or one without bulksend's tables.
var ErrNotCheckpoint = errors.New("not a bulksend checkpoint")

// Check says whether the file at path is a bulksend checkpoint, reading it
// only (no migration, nothing created, nothing written but the rollback of
// an import that was killed, see readQuery): nil when it is; an
// error wrapping ErrNotCheckpoint when it is not; one wrapping
// ErrNewerSchema for a checkpoint written by a newer bulksend; ErrNoSettings
// for one made but never set up.
func Check(path string) error {
	path, err := Resolve(path)
	if err != nil {
		return err
	}
	ok, _ := writable(path)
	return check(path, !ok)
}

// check is Check on a resolved path; immutable reads a file this process
// cannot write (see OpenRead).
//
// A file it may write is read through a read-write connection that
// changes nothing itself: a read-only one could not roll back the journal
// of an import that was killed, as any first connection must, and would
// fail ("attempt to write a readonly database").
func check(path string, immutable bool) error {
	db, err := sql.Open("sqlite3", uri(path, readQuery(!immutable)))
	if err != nil {
		return fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	defer db.Close()
	ctx := context.Background()
	var tables int
	err = db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('meta', 'recipients')`).Scan(&tables)
	switch {
	case isNotADB(err):
		return notADB(path, err)
	case err != nil:
		mark(&err)
		return fmt.Errorf("open checkpoint %q: %w", path, err)
	case tables < 2:
		return fmt.Errorf("%q: %w (a SQLite database without bulksend's tables)", path, ErrNotCheckpoint)
	}
	if v, err := userVersion(ctx, db); err != nil {
		mark(&err)
		return fmt.Errorf("open checkpoint %q: %w", path, err)
	} else if v > schemaVersion {
		return fmt.Errorf("open checkpoint %q: %w", path, newerSchema(v))
	}
	s := &Store{db: db, q: db, path: path}
	if _, err := s.Settings(ctx); err != nil {
		mark(&err)
		return fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	return nil
}

// RunSpan is one run's share of the attempts record.
type RunSpan struct {
	Run      int64
	Attempts int64
	First    time.Time // when its first request left
	Last     time.Time // when its last request left
	Answered time.Time // when the last of its answers came (or was given up)
}

// RunSpans returns, for each run with attempts, how many it made and when,
// ordered by run. Attempts recorded outside any run (run 0) have a span
// of their own.
func (s *Store) RunSpans(ctx context.Context) ([]RunSpan, error) {
	var out []RunSpan
	err := s.query(ctx, `SELECT run, COUNT(*), MIN(at), MAX(at), MAX(at + latency_us / 1000) FROM attempts GROUP BY run ORDER BY run`, func(rows *sql.Rows) error {
		var r RunSpan
		var first, last, answered int64
		if err := rows.Scan(&r.Run, &r.Attempts, &first, &last, &answered); err != nil {
			return err
		}
		r.First, r.Last, r.Answered = time.UnixMilli(first), time.UnixMilli(last), time.UnixMilli(answered)
		out = append(out, r)
		return nil
	})
	return out, err
}

// ScanAttempts calls fn for every attempt recorded, in the order they were
// stored (about the order they left, not exactly): cheaper than EachAttempt
// for figures that do not need the order, as it sorts nothing. With parts,
// each attempt carries its row's SMS message parts (1 for a WhatsApp row),
// at the cost of a lookup per attempt. An error from fn stops the scan and
// is returned as it is.
func (s *Store) ScanAttempts(ctx context.Context, parts bool, fn func(AttemptRow) error) error {
	q := `SELECT run, row, sender, at, latency_us, class, COALESCE(code, 0), COALESCE(error, ''), 1 FROM attempts`
	if parts {
		q = `SELECT a.run, a.row, a.sender, a.at, a.latency_us, a.class, COALESCE(a.code, 0), COALESCE(a.error, ''), COALESCE(r.parts, 1)
			FROM attempts a LEFT JOIN recipients r ON r.row = a.row`
	}
	return s.each(ctx, "attempts", q, func(rows *sql.Rows) error {
		var a AttemptRow
		var at, us int64
		if err := rows.Scan(&a.Run, &a.Row, &a.Sender, &at, &us, &a.Class, &a.Code, &a.Error, &a.Parts); err != nil {
			return fmt.Errorf("list attempts: %w", err)
		}
		a.At, a.Latency = time.UnixMilli(at), time.Duration(us)*time.Microsecond
		return fn(a)
	})
}

// Measure names a duration the checkpoint can give quantiles of.
type Measure int

const (
	// AttemptLatency: every attempt, from its request leaving to its answer
	// (or to the run giving it up).
	AttemptLatency Measure = iota
	// TimeToDelivered: rows with both, from sent_at to delivered_at.
	TimeToDelivered
	// TimeToRead: rows with both, from sent_at to read_at.
	TimeToRead
)

// measures are the query that lists each Measure's values (as v), and
// the unit of v.
var measures = map[Measure]struct {
	from string
	unit time.Duration
}{
	AttemptLatency:  {`SELECT latency_us AS v FROM attempts`, time.Microsecond},
	TimeToDelivered: {`SELECT delivered_at - sent_at AS v FROM recipients WHERE delivered_at IS NOT NULL AND sent_at IS NOT NULL AND delivered_at >= sent_at`, time.Millisecond},
	TimeToRead:      {`SELECT read_at - sent_at AS v FROM recipients WHERE read_at IS NOT NULL AND sent_at IS NOT NULL AND read_at >= sent_at`, time.Millisecond},
}

// Quantiles returns how many values m has, and the value at each quantile
// of qs (each in [0, 1]) as status computes them: the value at index
// min(n-1, ⌊q·n⌋) of the values sorted. With no values it returns 0 and
// zeros. SQLite sorts (spilling to a temporary file when large): memory
// does not grow with the campaign.
func (s *Store) Quantiles(ctx context.Context, m Measure, qs ...float64) (int64, []time.Duration, error) {
	def, ok := measures[m]
	if !ok {
		return 0, nil, fmt.Errorf("quantiles: unknown measure %d", m)
	}
	out := make([]time.Duration, len(qs))
	var n int64
	if err := s.q.QueryRowContext(ctx, `SELECT COUNT(*) FROM (`+def.from+`)`).Scan(&n); err != nil {
		return 0, nil, fmt.Errorf("quantiles: %w", err)
	}
	if n == 0 {
		return 0, out, nil
	}
	index := make([]int64, len(qs))
	var last int64
	for i, q := range qs {
		index[i] = min(n-1, int64(q*float64(n)))
		last = max(last, index[i])
	}
	rows, err := s.q.QueryContext(ctx, `SELECT v FROM (`+def.from+`) ORDER BY v LIMIT ?`, last+1)
	if err != nil {
		return 0, nil, fmt.Errorf("quantiles: %w", err)
	}
	defer rows.Close()
	for k := int64(0); rows.Next(); k++ {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return 0, nil, fmt.Errorf("quantiles: %w", err)
		}
		for i, at := range index {
			if at == k {
				out[i] = time.Duration(v) * def.unit
			}
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("quantiles: %w", err)
	}
	return n, out, nil
}

// Funnel is how far the messages the provider accepted got, by their rows'
// statuses now.
type Funnel struct {
	// Accepted: rows whose message the provider accepted: sent, delivered
	// or read, and the failed rows that have a message ID (a status
	// webhook failed them after acceptance).
	Accepted int64 `json:"accepted"`
	// Delivered: delivered or read (a read message was delivered).
	Delivered int64 `json:"delivered"`
	Read      int64 `json:"read"`
	// FailedAfterAccept: failed rows with a message ID.
	FailedAfterAccept int64 `json:"failed_after_accept"`
	// Unconfirmed: still sent; no status said delivered, read or failed.
	Unconfirmed int64 `json:"unconfirmed"`
	// Replied: rows whose recipient replied to the message (a text, a
	// tapped button), as reconcile or receive recorded it.
	Replied int64 `json:"replied"`
}

// Funnel counts the rows of each step of the funnel (one scan).
func (s *Store) Funnel(ctx context.Context) (Funnel, error) {
	var f Funnel
	err := s.q.QueryRowContext(ctx, `SELECT
		COALESCE(SUM(status IN ('sent', 'delivered', 'read') OR (status = 'failed' AND wamid IS NOT NULL)), 0),
		COALESCE(SUM(status IN ('delivered', 'read')), 0),
		COALESCE(SUM(status = 'read'), 0),
		COALESCE(SUM(status = 'failed' AND wamid IS NOT NULL), 0),
		COALESCE(SUM(status = 'sent'), 0),
		COALESCE(SUM(replied_at IS NOT NULL), 0)
		FROM recipients`).Scan(&f.Accepted, &f.Delivered, &f.Read, &f.FailedAfterAccept, &f.Unconfirmed, &f.Replied)
	if err != nil {
		return f, fmt.Errorf("report funnel: %w", err)
	}
	return f, nil
}
