package ledger

import (
	"context"
	"fmt"
	"time"
)

// pruneStatements prune before ?1 (Unix ms). Each budget loses the sends
// it counted (none unless its key was idle for 29 days), and one whose
// latest Admit is before the cut goes, as all its sends do. Every key of
// sends has a budget row (Admit makes it), so the delete walks sends_at
// key by key rather than the whole table.
var pruneStatements = []string{
	`UPDATE budgets SET used = used - (SELECT COUNT(*) FROM sends s
		WHERE s.key = budgets.key AND s.at > budgets.as_of - 86400000 AND s.at < ?1)`,
	`DELETE FROM sends WHERE key IN (SELECT key FROM budgets) AND at < ?1`,
	`DELETE FROM budgets WHERE as_of < ?1`,
	`DELETE FROM learned WHERE at < ?1`,
	`DELETE FROM campaigns WHERE last_run < ?1`,
}

// Prune drops, in one transaction, the sends, learned limits and
// campaigns older than 30 days at now (their instant before now-30d).
// Opt-outs are never pruned: an opt-out holds until the recipient opts
// back in (RemoveOptOut). Open prunes at the wall clock.
func (l *Ledger) Prune(ctx context.Context, now time.Time) error {
	cut := ms(now.Add(-retention))
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("prune ledger: %w", err)
	}
	defer tx.Rollback()
	for _, q := range pruneStatements {
		if _, err := tx.ExecContext(ctx, q, cut); err != nil {
			return fmt.Errorf("prune ledger: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("prune ledger: %w", err)
	}
	return nil
}
