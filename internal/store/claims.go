package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
)

// This file is the send loop's side of the checkpoint (engine.Checkpoint),
// and the recovery of rows a crashed run left sending.

// Claim marks up to limit due pending rows of sender as sending, in one
// committed transaction, and returns them. The write comes first so that
// a crash after a request leaves can never make its row look unsent.
func (s *Store) Claim(ctx context.Context, sender string, now time.Time, limit int) (_ []engine.Job, err error) {
	defer mark(&err)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.StmtContext(ctx, s.claimSelect).QueryContext(ctx, sender, ms(now), limit)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	var jobs []engine.Job
	ids := make([]byte, 0, 8*limit)
	ids = append(ids, '[')
	for rows.Next() {
		var j engine.Job
		var params []byte
		if err := rows.Scan(&j.Row, &j.Phone, &params, &j.Attempts, &j.Cost, &j.Throttles); err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim: %w", err)
		}
		if j.Params, err = decodeParams(params); err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim row %d: params: %w", j.Row, err)
		}
		j.Sender, j.Attempts = sender, j.Attempts+1
		if len(jobs) > 0 {
			ids = append(ids, ',')
		}
		ids = strconv.AppendInt(ids, j.Row, 10)
		jobs = append(jobs, j)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	ids = append(ids, ']')
	if _, err := tx.StmtContext(ctx, s.claimUpdate).ExecContext(ctx, ms(now), string(ids)); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return jobs, nil
}

// decodeParams decodes a row's params, a JSON array of strings. Those
// without escapes or spaces, as Import writes most, are split here, into
// substrings of one string: a claim decodes every row it takes, and
// encoding/json took a tenth of a claim's CPU. Anything else goes
// through encoding/json, with the same result.
func decodeParams(b []byte) ([]string, error) {
	if ps, ok := plainParams(b); ok {
		return ps, nil
	}
	var ps []string
	err := json.Unmarshal(b, &ps)
	return ps, err
}

// plainParams splits b, a JSON array of strings with no space between
// tokens, no escape, no control character and valid UTF-8; ok is false
// for anything else.
func plainParams(b []byte) (ps []string, ok bool) {
	end := len(b) - 1 // the closing bracket
	if end < 1 || b[0] != '[' || b[end] != ']' {
		return nil, false
	}
	s := string(b)
	ps = make([]string, 0, strings.Count(s, `","`)+1)
	for i := 1; i < end; {
		if s[i] != '"' {
			return nil, false
		}
		j := i + 1
		for j < end && s[j] != '"' {
			if s[j] == '\\' || s[j] < 0x20 {
				return nil, false
			}
			j++
		}
		if j == end || !utf8.ValidString(s[i+1:j]) {
			return nil, false
		}
		ps = append(ps, s[i+1:j])
		if i = j + 1; i < end {
			if s[i] != ',' || i+1 == end {
				return nil, false
			}
			i++
		}
	}
	return ps, true
}

// Senders returns the distinct sender numbers of rows still to send.
func (s *Store) Senders(ctx context.Context) ([]string, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT DISTINCT sender FROM recipients WHERE status = 'pending' ORDER BY sender`)
	if err != nil {
		return nil, fmt.Errorf("list senders: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("list senders: %w", err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// NextDue returns when the earliest pending row of sender falls due; ok is
// false when sender has no pending rows.
func (s *Store) NextDue(ctx context.Context, sender string) (t time.Time, ok bool, err error) {
	var v sql.NullInt64
	q := `SELECT MIN(next_at) FROM recipients WHERE status = 'pending'`
	args := []any{}
	if sender != "" {
		q += ` AND sender = ?`
		args = append(args, sender)
	}
	if err := s.q.QueryRowContext(ctx, q, args...).Scan(&v); err != nil {
		return time.Time{}, false, fmt.Errorf("next due: %w", err)
	}
	if !v.Valid {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(v.Int64), true, nil
}

// Record writes results in one transaction, one prepared statement per
// outcome. Only rows still `sending` are changed, so a result can never
// overwrite a settled row. A sent result keeps its Held flag (held), a
// failed one its Reason (fail_reason, NULL for ""); a throttled one counts
// one more throttled try (throttles).
func (s *Store) Record(ctx context.Context, results []engine.Result) (err error) {
	defer mark(&err)
	if len(results) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record results: %w", err)
	}
	defer tx.Rollback()
	// Each statement takes the arguments it names, in this order.
	stmts := map[engine.Outcome]string{
		engine.OutcomeSent:    `UPDATE recipients SET status = 'sent', wamid = ?, held = ?, sent_at = ?, updated_at = ?, error_code = NULL, error_title = NULL, fail_reason = NULL WHERE row = ? AND status = 'sending'`,
		engine.OutcomeFailed:  `UPDATE recipients SET status = 'failed', error_code = ?, error_title = ?, fail_reason = ?, throttles = throttles + ?, updated_at = ? WHERE row = ? AND status = 'sending'`,
		engine.OutcomeRetry:   `UPDATE recipients SET status = 'pending', error_code = ?, error_title = ?, next_at = ?, updated_at = ? WHERE row = ? AND status = 'sending'`,
		engine.OutcomeInDoubt: `UPDATE recipients SET status = 'in_doubt', error_code = ?, error_title = ?, updated_at = ? WHERE row = ? AND status = 'sending'`,
		engine.OutcomeRelease: `UPDATE recipients SET status = 'pending', attempts = attempts - 1, next_at = ?, updated_at = ? WHERE row = ? AND status = 'sending'`,
		engine.OutcomeThrottled: `UPDATE recipients SET status = 'pending', attempts = attempts - 1, throttles = throttles + 1, error_code = ?, error_title = ?,
			next_at = ?, updated_at = ? WHERE row = ? AND status = 'sending'`,
	}
	prepared := map[engine.Outcome]*sql.Stmt{}
	for _, r := range results {
		st, ok := prepared[r.Outcome]
		if !ok {
			q, known := stmts[r.Outcome]
			if !known {
				return fmt.Errorf("record row %d: unknown outcome %d", r.Row, r.Outcome)
			}
			if st, err = tx.PrepareContext(ctx, q); err != nil {
				return fmt.Errorf("record results: %w", err)
			}
			defer st.Close()
			prepared[r.Outcome] = st
		}
		code := sql.NullInt64{Int64: int64(r.Code), Valid: r.Code != 0}
		var args []any
		switch r.Outcome {
		case engine.OutcomeSent:
			args = []any{r.MessageID, r.Held, ms(r.At), ms(r.At), r.Row}
		case engine.OutcomeFailed:
			args = []any{code, nullString(r.Title), nullString(r.Reason), r.Throttled, ms(r.At), r.Row}
		case engine.OutcomeInDoubt:
			args = []any{code, nullString(r.Title), ms(r.At), r.Row}
		case engine.OutcomeRetry, engine.OutcomeThrottled:
			args = []any{code, nullString(r.Title), ms(r.NextAt), ms(r.At), r.Row}
		case engine.OutcomeRelease:
			args = []any{ms(r.NextAt), ms(r.At), r.Row}
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("record row %d: %w", r.Row, err)
		}
	}
	if err := s.recordAttempts(ctx, tx, results); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record results: %w", err)
	}
	return nil
}

// DropMessageIDIndex drops the index of message ids while a run sends. A
// message id is random, so every row recorded sent changed a page of that
// index of its own, and each batch's commit wrote those pages to the WAL
// again: half of Record's CPU at 50,000 rows, and the larger the campaign
// the more. Nothing a run does finds rows by message id; IndexMessageIDs
// builds the index again, in one pass, for reconcile. Until then a
// reconcile would scan the table for each id.
func (s *Store) DropMessageIDIndex(ctx context.Context) (err error) {
	defer mark(&err)
	if _, err := s.db.ExecContext(ctx, `DROP INDEX IF EXISTS recipients_wamid`); err != nil {
		return fmt.Errorf("drop the message id index: %w", err)
	}
	return nil
}

// IndexMessageIDs builds the index of message ids if DropMessageIDIndex dropped
// it: when a run stops, and before a reconcile (a killed run left it
// dropped). With the index in place it does nothing.
func (s *Store) IndexMessageIDs(ctx context.Context) (err error) {
	defer mark(&err)
	if _, err := s.db.ExecContext(ctx, wamidIndex); err != nil {
		return fmt.Errorf("index message ids: %w", err)
	}
	return nil
}

// RecoverSending marks rows a previous run left `sending` (it crashed or
// was killed) as in doubt: their requests may have reached the API.
func (s *Store) RecoverSending(ctx context.Context, now time.Time) (_ int64, err error) {
	defer mark(&err)
	res, err := s.db.ExecContext(ctx, `UPDATE recipients SET status = 'in_doubt', error_title = 'run ended while sending', updated_at = ? WHERE status = 'sending'`, ms(now))
	if err != nil {
		return 0, fmt.Errorf("recover sending rows: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// Defer makes every pending row due no sooner than until: a rest the API
// asked for outlives the run, so that a run started again at once (by
// cron, on exit 3) sends nothing before it ends. It returns the rows moved.
func (s *Store) Defer(ctx context.Context, until time.Time) (_ int64, err error) {
	defer mark(&err)
	res, err := s.db.ExecContext(ctx, `UPDATE recipients SET next_at = ?1 WHERE status = 'pending' AND next_at < ?1`, ms(until))
	if err != nil {
		return 0, fmt.Errorf("defer pending rows: %w", err)
	}
	return res.RowsAffected()
}

// Run is what a run records of itself in the checkpoint's history.
type Run struct {
	ID        int64
	StartedAt time.Time
	EndedAt   time.Time // zero: running, or killed
	PID       int
	Version   string
	Rate      float64
	Senders   []string
	// Learned: sender numbers that accepted less than Rate, with what
	// they accept per second, as the run's end found them.
	Learned map[string]float64
}

// BeginRun records that a run begins; the attempts Record writes from now
// on are this run's.
func (s *Store) BeginRun(ctx context.Context, r Run) (_ int64, err error) {
	defer mark(&err)
	senders, err := json.Marshal(r.Senders)
	if err != nil {
		return 0, err
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO runs(started_at, pid, version, rate, senders) VALUES (?, ?, ?, ?, ?)`,
		ms(r.StartedAt), r.PID, r.Version, r.Rate, string(senders))
	if err != nil {
		return 0, fmt.Errorf("record the run: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("record the run: %w", err)
	}
	s.run.Store(id)
	return id, nil
}

// EndRun records that run id ended at, and what it learned of its
// numbers' limits (nil: nothing).
func (s *Store) EndRun(ctx context.Context, id int64, at time.Time, learned map[string]float64) (err error) {
	defer mark(&err)
	var l any // NULL
	if len(learned) > 0 {
		b, err := json.Marshal(learned)
		if err != nil {
			return err
		}
		l = string(b)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET ended_at = ?, learned = ? WHERE id = ?`, ms(at), l, id); err != nil {
		return fmt.Errorf("record the end of the run: %w", err)
	}
	return nil
}

// ForgetRun deletes the record of run id: a run that sent nothing (a
// finished campaign run again from cron) is not part of its history.
func (s *Store) ForgetRun(ctx context.Context, id int64) (err error) {
	defer mark(&err)
	if _, err := s.db.ExecContext(ctx, `DELETE FROM runs WHERE id = ?`, id); err != nil {
		return fmt.Errorf("forget the run: %w", err)
	}
	return nil
}

// attemptsBatch is how many attempts one INSERT writes.
const attemptsBatch = 128

// attemptCols is how many columns an attempt's INSERT writes.
const attemptCols = 8

// attemptsInsert is the INSERT of n attempts.
func attemptsInsert(n int) string {
	return `INSERT INTO attempts(run, row, sender, at, latency_us, class, code, error) VALUES ` + strings.TrimSuffix(strings.Repeat("(?,?,?,?,?,?,?,?),", n), ",")
}

// recordAttempts writes the attempts of results (those with a request) in
// tx, attemptsBatch rows per statement.
func (s *Store) recordAttempts(ctx context.Context, tx *sql.Tx, results []engine.Result) error {
	run := s.run.Load()
	args := make([]any, 0, attemptCols*min(len(results), attemptsBatch))
	flush := func() error {
		var err error
		switch len(args) {
		case 0:
		case attemptCols * attemptsBatch:
			_, err = tx.StmtContext(ctx, s.attemptsInsert).ExecContext(ctx, args...)
		default:
			_, err = tx.ExecContext(ctx, attemptsInsert(len(args)/attemptCols), args...)
		}
		args = args[:0]
		return err
	}
	for _, r := range results {
		a := r.Attempt
		if a.At.IsZero() {
			continue
		}
		args = append(args, run, a.Row, a.Sender, ms(a.At), a.Latency.Microseconds(), a.Class,
			sql.NullInt64{Int64: int64(a.Code), Valid: a.Code != 0}, nullString(errorName(r)))
		if len(args) == attemptCols*attemptsBatch {
			if err := flush(); err != nil {
				return fmt.Errorf("record attempts: %w", err)
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("record attempts: %w", err)
	}
	return nil
}

// errorName is what the attempts record keeps of r's error when it has
// no numeric code: the title the provider's answer gave (AWS's exception
// and reason), without the note the engine adds to a row's last try
// ("… (after 5 attempts)"), so that every attempt of one error is
// counted under one name. It is "" for an accepted attempt, an answer
// with a code, and a request without an answer (in doubt, never left):
// those have no error name from the provider.
func errorName(r engine.Result) string {
	switch a := r.Attempt; {
	case a.Code != 0, a.Class == engine.Accepted, a.Class == campaign.Unanswered.String(), a.Class == campaign.NeverLeft.String():
		return ""
	}
	return retryNote.ReplaceAllString(r.Title, "")
}

// retryNote is the note the engine adds to the title of a row's last try
// (engine.Engine's result of a throttle or a retry given up).
var retryNote = regexp.MustCompile(` \((?:throttled [0-9]+ times|after [0-9]+ attempts)\)$`)

// AttemptRow is one request as the attempts record holds it.
type AttemptRow struct {
	Run     int64
	Row     int64
	Sender  string
	At      time.Time
	Latency time.Duration
	Class   string
	Code    int
	// Error is the provider's name of an error without a numeric code
	// (AWS's exception and reason); "" for none, and in checkpoints from
	// before schema version 7.
	Error string
	// Parts is the row's SMS message parts (1 for a WhatsApp row), what
	// the attempt cost its sender's pacer; filled by ScanAttempts with
	// parts only, else 0.
	Parts int
}

// EachAttempt calls fn for every attempt recorded, in the order they
// left, streaming.
func (s *Store) EachAttempt(ctx context.Context, fn func(AttemptRow) error) error {
	rows, err := s.q.QueryContext(ctx, `SELECT run, row, sender, at, latency_us, class, COALESCE(code, 0), COALESCE(error, '') FROM attempts ORDER BY at, rowid`)
	if err != nil {
		return fmt.Errorf("read attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a AttemptRow
		var at, us int64
		if err := rows.Scan(&a.Run, &a.Row, &a.Sender, &at, &us, &a.Class, &a.Code, &a.Error); err != nil {
			return fmt.Errorf("read attempts: %w", err)
		}
		a.At, a.Latency = time.UnixMilli(at), time.Duration(us)*time.Microsecond
		if err := fn(a); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read attempts: %w", err)
	}
	return nil
}

// Runs returns the runs recorded, oldest first.
func (s *Store) Runs(ctx context.Context) ([]Run, error) {
	var out []Run
	err := s.query(ctx, `SELECT id, started_at, COALESCE(ended_at, 0), pid, version, rate, senders, COALESCE(learned, '') FROM runs ORDER BY id`, func(rows *sql.Rows) error {
		var r Run
		var started, ended int64
		var senders, learned string
		if err := rows.Scan(&r.ID, &started, &ended, &r.PID, &r.Version, &r.Rate, &senders, &learned); err != nil {
			return err
		}
		if learned != "" {
			if err := json.Unmarshal([]byte(learned), &r.Learned); err != nil {
				return fmt.Errorf("run %d: learned: %w", r.ID, err)
			}
		}
		r.StartedAt = time.UnixMilli(started)
		if ended != 0 {
			r.EndedAt = time.UnixMilli(ended)
		}
		if err := json.Unmarshal([]byte(senders), &r.Senders); err != nil {
			return fmt.Errorf("run %d: senders: %w", r.ID, err)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}
