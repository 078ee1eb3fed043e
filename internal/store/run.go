package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
)

// Job is a claimed row: it is `sending` in the checkpoint.
type Job struct {
	Row      int64
	Phone    string
	Sender   string
	Params   []string
	Attempts int // including this one
}

// Claim marks up to limit due pending rows of sender as sending, in one
// committed transaction, and returns them. The write comes first so that
// a crash after a request leaves can never make its row look unsent.
func (s *Store) Claim(ctx context.Context, sender string, now time.Time, limit int) ([]Job, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.StmtContext(ctx, s.claimSelect).QueryContext(ctx, sender, ms(now), limit)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	var jobs []Job
	ids := make([]byte, 0, 8*limit)
	ids = append(ids, '[')
	for rows.Next() {
		var j Job
		var params []byte
		if err := rows.Scan(&j.Row, &j.Phone, &params, &j.Attempts); err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim: %w", err)
		}
		if err := json.Unmarshal(params, &j.Params); err != nil {
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

// Senders returns the distinct sender numbers of rows still to send.
func (s *Store) Senders(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT sender FROM recipients WHERE status = 'pending' ORDER BY sender`)
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
	if err := s.db.QueryRowContext(ctx, q, args...).Scan(&v); err != nil {
		return time.Time{}, false, fmt.Errorf("next due: %w", err)
	}
	if !v.Valid {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(v.Int64), true, nil
}

// Outcome is what became of one claimed row.
type Outcome int

const (
	OutcomeSent    Outcome = iota + 1 // accepted: WAMID set
	OutcomeFailed                     // permanent: Code and Title set
	OutcomeRetry                      // pending again from NextAt; the attempt counts
	OutcomeInDoubt                    // request left, no answer
	OutcomeRelease                    // not the row's doing: pending again from NextAt, the attempt does not count
)

// Result is the outcome of one claimed row.
type Result struct {
	Row     int64
	Outcome Outcome
	WAMID   string
	Code    int
	Title   string
	NextAt  time.Time
	At      time.Time
}

// Record writes results in one transaction. Only rows still `sending` are
// changed, so a result can never overwrite a settled row.
func (s *Store) Record(ctx context.Context, results []Result) error {
	if len(results) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record results: %w", err)
	}
	defer tx.Rollback()
	// Each statement takes the arguments it names, in this order.
	stmts := map[Outcome]string{
		OutcomeSent:    `UPDATE recipients SET status = 'sent', wamid = ?, sent_at = ?, updated_at = ?, error_code = NULL, error_title = NULL WHERE row = ? AND status = 'sending'`,
		OutcomeFailed:  `UPDATE recipients SET status = 'failed', error_code = ?, error_title = ?, updated_at = ? WHERE row = ? AND status = 'sending'`,
		OutcomeRetry:   `UPDATE recipients SET status = 'pending', error_code = ?, error_title = ?, next_at = ?, updated_at = ? WHERE row = ? AND status = 'sending'`,
		OutcomeInDoubt: `UPDATE recipients SET status = 'in_doubt', error_code = ?, error_title = ?, updated_at = ? WHERE row = ? AND status = 'sending'`,
		OutcomeRelease: `UPDATE recipients SET status = 'pending', attempts = attempts - 1, next_at = ?, updated_at = ? WHERE row = ? AND status = 'sending'`,
	}
	prepared := map[Outcome]*sql.Stmt{}
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
		case OutcomeSent:
			args = []any{r.WAMID, ms(r.At), ms(r.At), r.Row}
		case OutcomeFailed, OutcomeInDoubt:
			args = []any{code, nullString(r.Title), ms(r.At), r.Row}
		case OutcomeRetry:
			args = []any{code, nullString(r.Title), ms(r.NextAt), ms(r.At), r.Row}
		case OutcomeRelease:
			args = []any{ms(r.NextAt), ms(r.At), r.Row}
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("record row %d: %w", r.Row, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record results: %w", err)
	}
	return nil
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// RecoverSending marks rows a previous run left `sending` (it crashed or
// was killed) as in doubt: their requests may have reached the API.
func (s *Store) RecoverSending(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE recipients SET status = 'in_doubt', error_title = 'run ended while sending', updated_at = ? WHERE status = 'sending'`, ms(now))
	if err != nil {
		return 0, fmt.Errorf("recover sending rows: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// ApplyPolicy applies p to rows in doubt whose last attempt was at or
// before cutoff: Resend makes them pending (due now), Fail fails them,
// Hold changes nothing. Rows that already used maxAttempts are failed
// rather than resent. It returns how many rows changed.
func (s *Store) ApplyPolicy(ctx context.Context, p campaign.Policy, cutoff, now time.Time, maxAttempts int) (int64, error) {
	var q string
	switch p {
	case campaign.Hold:
		return 0, nil
	case campaign.Resend:
		q = `UPDATE recipients SET
			status = CASE WHEN attempts >= ?3 THEN 'failed' ELSE 'pending' END,
			error_title = CASE WHEN attempts >= ?3 THEN 'in doubt after the last attempt' ELSE error_title END,
			next_at = ?2, updated_at = ?2
			WHERE status = 'in_doubt' AND COALESCE(attempted_at, 0) <= ?1`
	case campaign.Fail:
		q = `UPDATE recipients SET status = 'failed', error_title = 'in doubt: failed by policy', updated_at = ?2
			WHERE status = 'in_doubt' AND COALESCE(attempted_at, 0) <= ?1`
	default:
		return 0, fmt.Errorf("apply policy: unknown policy %q", p)
	}
	res, err := s.db.ExecContext(ctx, q, ms(cutoff), ms(now), maxAttempts)
	if err != nil {
		return 0, fmt.Errorf("apply policy %s: %w", p, err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
