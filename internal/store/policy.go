package store

import (
	"context"
	"fmt"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
)

// ApplyPolicy applies p to rows in doubt whose last attempt was at or
// before cutoff: Resend makes them pending (due now), Fail fails them,
// Hold changes nothing. Rows that already used maxAttempts are failed
// rather than resent. It returns how many rows became what: this is the
// one place the policy is written, for run and reconcile alike.
func (s *Store) ApplyPolicy(ctx context.Context, p campaign.Policy, cutoff, now time.Time, maxAttempts int) (_ campaign.PolicyResult, err error) {
	defer mark(&err)
	var r campaign.PolicyResult
	var q string
	switch p {
	case campaign.Hold:
		return r, nil
	case campaign.Resend:
		q = `UPDATE recipients SET
			status = CASE WHEN attempts >= ?3 THEN 'failed' ELSE 'pending' END,
			error_title = CASE WHEN attempts >= ?3 THEN 'in doubt after the last attempt' ELSE error_title END,
			next_at = ?2, updated_at = ?2
			WHERE status = 'in_doubt' AND COALESCE(attempted_at, 0) <= ?1
			RETURNING status`
	case campaign.Fail:
		q = `UPDATE recipients SET status = 'failed', error_title = 'in doubt: failed by policy', updated_at = ?2
			WHERE status = 'in_doubt' AND COALESCE(attempted_at, 0) <= ?1
			RETURNING status`
	default:
		return r, fmt.Errorf("apply policy: unknown policy %q", p)
	}
	// In a transaction: a statement whose rows are closed early (a
	// cancelled ctx) would commit in autocommit, with counts cut short.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return r, fmt.Errorf("apply policy %s: %w", p, err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, q, ms(cutoff), ms(now), maxAttempts)
	if err != nil {
		return r, fmt.Errorf("apply policy %s: %w", p, err)
	}
	defer rows.Close()
	var status []byte
	for rows.Next() {
		if err := rows.Scan(&status); err != nil {
			return campaign.PolicyResult{}, fmt.Errorf("apply policy %s: %w", p, err)
		}
		switch {
		case p == campaign.Fail:
			r.Failed++
		case string(status) == string(campaign.Pending):
			r.Resent++
		default:
			r.LastAttempt++
		}
	}
	if err := rows.Err(); err != nil {
		return campaign.PolicyResult{}, fmt.Errorf("apply policy %s: %w", p, err)
	}
	if err := rows.Close(); err != nil {
		return campaign.PolicyResult{}, fmt.Errorf("apply policy %s: %w", p, err)
	}
	if err := tx.Commit(); err != nil {
		return campaign.PolicyResult{}, fmt.Errorf("apply policy %s: %w", p, err)
	}
	return r, nil
}
