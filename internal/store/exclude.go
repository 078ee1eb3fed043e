package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
)

// Exclude marks rows not yet sent whose phone is in the suppression list
// skipped ("excluded"). next returns io.EOF after the last phone. It
// returns how many rows it skipped.
func (s *Store) Exclude(ctx context.Context, next func() (string, error)) (_ int64, err error) {
	return s.suppress(ctx, withReason(next, "excluded"), "", campaign.SkipExcluded)
}

// OptOut marks rows not yet sent from sender whose phone is on sender's
// opt-out list skipped ("opted_out"): a send would fail and may cost.
// next returns io.EOF after the last phone.
func (s *Store) OptOut(ctx context.Context, sender string, next func() (string, error)) (_ int64, err error) {
	return s.suppress(ctx, withReason(next, "on the opt-out list of "+sender), sender, campaign.SkipOptedOut)
}

// OptOutEach marks rows not yet sent whose phone next lists skipped
// ("opted_out"), each with the reason next gives with it (how and when
// the recipient opted out): the operator ledger's opt-outs, which every
// campaign honours. next returns io.EOF after the last one.
func (s *Store) OptOutEach(ctx context.Context, next func() (phone, reason string, err error)) (_ int64, err error) {
	return s.suppress(ctx, next, "", campaign.SkipOptedOut)
}

// withReason gives every phone of next the same reason.
func withReason(next func() (string, error), reason string) func() (string, string, error) {
	return func() (string, string, error) {
		p, err := next()
		return p, reason, err
	}
}

// suppress skips the rows not yet sent (of sender, "" for any) whose
// phone next lists, as kind with the reason next gives with the phone
// (the first one given, for a phone listed twice).
func (s *Store) suppress(ctx context.Context, next func() (phone, reason string, err error), sender string, kind campaign.SkipKind) (_ int64, err error) {
	defer mark(&err)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("exclude: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE IF NOT EXISTS excluded(phone TEXT PRIMARY KEY, reason TEXT NOT NULL) WITHOUT ROWID; DELETE FROM excluded;`); err != nil {
		return 0, fmt.Errorf("exclude: %w", err)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO excluded(phone, reason) VALUES(?, ?)`)
	if err != nil {
		return 0, fmt.Errorf("exclude: %w", err)
	}
	defer ins.Close()
	listed := false
	for {
		p, reason, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		if _, err := ins.ExecContext(ctx, p, reason); err != nil {
			return 0, fmt.Errorf("exclude: %w", err)
		}
		listed = true
	}
	if !listed {
		// The UPDATE below would scan every row for nothing: with an
		// operator ledger that holds no opt-out, a tenth of a million-row
		// dry run.
		return 0, nil
	}
	// A row with attempts behind it may have reached the recipient before:
	// its reason says so, rather than claim it was never sent.
	res, err := tx.ExecContext(ctx, `UPDATE recipients SET status = 'skipped', skip_kind = ?1, wait = NULL, updated_at = ?2,
		reason = (SELECT CASE WHEN recipients.attempts > 0 THEN e.reason || ' after an attempt with no answer' ELSE e.reason END
			FROM excluded e WHERE e.phone = recipients.phone)
		WHERE status = 'pending' AND (?3 = '' OR sender = ?3) AND phone IN (SELECT phone FROM excluded)`, string(kind), ms(time.Now()), sender)
	if err != nil {
		return 0, fmt.Errorf("exclude: %w", err)
	}
	n, _ := res.RowsAffected()
	if _, err := tx.ExecContext(ctx, `DROP TABLE excluded`); err != nil {
		return 0, fmt.Errorf("exclude: %w", err)
	}
	return n, tx.Commit()
}
