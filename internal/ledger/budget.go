package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// A budget is the moving 24-hour limit of unique recipients of one key:
// Meta's messaging limit is a business portfolio's, shared by all its
// numbers and campaigns ("whatsapp:<portfolio or WABA id>"); for SMS the
// key is an origination identity ("sms:<identity>"). Keys and phones are
// compared byte for byte: the caller normalizes them (E.164).
//
// The window of key at now is its sends later than now-24h: those in
// (now-24h, now], and any recorded after now (by a clock since stepped
// back, or a call given an earlier now), so that a clock going back never
// lets the limit be overrun. A phone counts once however often it was sent
// to: each phone keeps the last instant it was sent to. Instants are kept
// to the millisecond.

// dayMS is day in milliseconds; the SQL writes it 86400000
// (TestQueryPlans checks they agree).
const dayMS = int64(day / time.Millisecond)

// windowCount is the count of key ?1's sends later than ?2, read off its
// budget row b: the budget's count corrected by the sends between its
// cutoff and ?2 (a range as wide as the time since the last Admit) rather
// than a count of the whole window, which takes milliseconds at 100,000
// sends. A key without a budget row is counted.
const windowCount = `CASE
	WHEN b.key IS NULL THEN (SELECT COUNT(*) FROM sends WHERE key = ?1 AND at > ?2)
	WHEN ?2 >= b.as_of - 86400000 THEN b.used - (SELECT COUNT(*) FROM sends WHERE key = ?1 AND at > b.as_of - 86400000 AND at <= ?2)
	ELSE b.used + (SELECT COUNT(*) FROM sends WHERE key = ?1 AND at > ?2 AND at <= b.as_of - 86400000) END`

const (
	budgetSelect   = `SELECT b.as_of, b.used, ` + windowCount + ` FROM (SELECT 1) LEFT JOIN budgets b ON b.key = ?1`
	existingSelect = `SELECT j.value, s.at FROM json_each(?2) j LEFT JOIN sends s ON s.key = ?1 AND s.phone = j.value`
	// A send only moves forward: a phone recorded later (a clock ahead)
	// keeps that time.
	sendsUpsert = `INSERT INTO sends (key, phone, at) SELECT ?1, value, ?2 FROM json_each(?3) WHERE true
		ON CONFLICT (key, phone) DO UPDATE SET prev = at, at = excluded.at WHERE excluded.at > at`
	budgetUpsert = `INSERT INTO budgets (key, as_of, used) VALUES (?1, ?2, ?3)
		ON CONFLICT (key) DO UPDATE SET as_of = excluded.as_of, used = excluded.used`

	usedSelect = `SELECT ` + windowCount + `, (SELECT MIN(at) FROM sends WHERE key = ?1 AND at > ?2)
		FROM (SELECT 1) LEFT JOIN budgets b ON b.key = ?1`
	// With u sends in the window, room for one more opens when the oldest
	// u-limit+1 have left it: at the (u-limit+1)th oldest plus 24 hours,
	// a walk of u-limit index entries.
	freeAtSelect = `WITH w(u) AS MATERIALIZED (SELECT ` + windowCount + ` FROM (SELECT 1) LEFT JOIN budgets b ON b.key = ?1)
		SELECT (SELECT u FROM w),
			(SELECT at FROM sends WHERE key = ?1 AND at > ?2 ORDER BY at LIMIT 1 OFFSET max((SELECT u FROM w) - ?3, 0))`

	// Forget's statements: ?1 key, ?2 the instant, ?3 the phones (JSON),
	// ?4 the budget's cutoff.
	forgetMatch  = `key = ?1 AND at = ?2 AND phone IN (SELECT value FROM json_each(?3))`
	forgetCount  = `SELECT COUNT(*), COUNT(*) FILTER (WHERE prev > ?4) FROM sends WHERE ` + forgetMatch
	forgetDelete = `DELETE FROM sends WHERE prev IS NULL AND ` + forgetMatch
	forgetUndo   = `UPDATE sends SET at = prev, prev = NULL WHERE prev IS NOT NULL AND ` + forgetMatch
)

// Admit takes key's budget for phones at now, in one transaction (BEGIN
// IMMEDIATE), so that processes admitting at once never exceed limit
// between them. For each phone in order: one already in key's window (or
// earlier in phones) is admitted free, and its time becomes now; another
// is admitted while the window's unique phones stay within limit, and
// recorded at now; the rest are refused. admitted[i] tells phones[i].
// limit <= 0 admits and records every phone.
//
// An admitted phone counts as sent until Forget gives it back: a caller
// admits a claim's phones before sending them, and forgets those it never
// sent.
func (l *Ledger) Admit(ctx context.Context, key string, phones []string, now time.Time, limit int) (admitted []bool, err error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	distinct, err := distinctPhones(phones)
	if err != nil {
		return nil, err
	}
	admitted = make([]bool, len(phones))
	if len(phones) == 0 {
		return admitted, nil
	}
	list, err := json.Marshal(distinct)
	if err != nil {
		return nil, fmt.Errorf("admit %s: %w", key, err)
	}
	n := ms(now)
	cut := n - dayMS
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("admit %s: %w", key, err)
	}
	defer tx.Rollback()

	var asOf, used sql.NullInt64
	var u int64 // the window at now
	if err := tx.StmtContext(ctx, l.budget).QueryRowContext(ctx, key, cut).Scan(&asOf, &used, &u); err != nil {
		return nil, fmt.Errorf("admit %s: %w", key, err)
	}
	// The budget row stays as of the latest instant given: a now behind it
	// (a process whose clock is late) leaves it there.
	b, s := n, u
	if asOf.Valid && asOf.Int64 >= n {
		b, s = asOf.Int64, used.Int64
	}
	w := b - dayMS

	old := make(map[string]sql.NullInt64, len(distinct))
	rows, err := tx.StmtContext(ctx, l.existing).QueryContext(ctx, key, list)
	if err != nil {
		return nil, fmt.Errorf("admit %s: %w", key, err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		var at sql.NullInt64
		if err := rows.Scan(&p, &at); err != nil {
			return nil, fmt.Errorf("admit %s: %w", key, err)
		}
		old[p] = at
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("admit %s: %w", key, err)
	}
	rows.Close()

	in := make(map[string]bool, len(distinct)) // admitted by this call
	var write []string
	for i, p := range phones {
		if in[p] {
			admitted[i] = true
			continue
		}
		o := old[p]
		if !o.Valid || o.Int64 <= cut {
			if limit > 0 && u >= int64(limit) {
				continue
			}
			u++
		}
		in[p], admitted[i] = true, true
		write = append(write, p)
		s += above(max(o.Int64, n), w)
		if o.Valid {
			s -= above(o.Int64, w)
		}
	}
	if len(write) == 0 && asOf.Valid && asOf.Int64 == b {
		return admitted, nil // nothing to write: the transaction rolls back
	}
	if len(write) > 0 {
		list, err := json.Marshal(write)
		if err != nil {
			return nil, fmt.Errorf("admit %s: %w", key, err)
		}
		if _, err := tx.StmtContext(ctx, l.upsertSends).ExecContext(ctx, key, n, list); err != nil {
			return nil, fmt.Errorf("admit %s: %w", key, err)
		}
	}
	if _, err := tx.StmtContext(ctx, l.upsertBudget).ExecContext(ctx, key, b, s); err != nil {
		return nil, fmt.Errorf("admit %s: %w", key, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("admit %s: %w", key, err)
	}
	return admitted, nil
}

// above is 1 when a send at at is in the window whose cutoff is w.
func above(at, w int64) int64 {
	if at > w {
		return 1
	}
	return 0
}

// Used returns how many unique phones are in key's window at now, and
// when that count next drops: the oldest of them plus 24 hours (the zero
// time when used is 0). It reads one snapshot and walks the sends_at index
// over at most the time since the last Admit.
func (l *Ledger) Used(ctx context.Context, key string, now time.Time) (used int, nextFree time.Time, err error) {
	if err := checkKey(key); err != nil {
		return 0, time.Time{}, err
	}
	var oldest sql.NullInt64
	err = l.db.QueryRowContext(ctx, usedSelect, key, ms(now)-dayMS).Scan(&used, &oldest)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("read budget %s: %w", key, err)
	}
	if used == 0 || !oldest.Valid {
		return used, time.Time{}, nil
	}
	return used, time.UnixMilli(oldest.Int64 + dayMS), nil
}

// FreeAt returns the earliest instant from now on at which key's window
// has room for one more new phone under limit: now itself when it has
// room now (or limit <= 0), else the instant enough of its oldest sends
// leave it. Admitting nothing meanwhile is assumed; a concurrent Admit may
// take the room first.
func (l *Ledger) FreeAt(ctx context.Context, key string, now time.Time, limit int) (time.Time, error) {
	if err := checkKey(key); err != nil {
		return time.Time{}, err
	}
	if limit <= 0 {
		return now, nil
	}
	var u int
	var at sql.NullInt64
	err := l.db.QueryRowContext(ctx, freeAtSelect, key, ms(now)-dayMS, limit).Scan(&u, &at)
	if err != nil {
		return time.Time{}, fmt.Errorf("read budget %s: %w", key, err)
	}
	if u < limit || !at.Valid {
		return now, nil
	}
	return time.UnixMilli(at.Int64 + dayMS), nil
}

// Forget gives back key's budget for phones admitted at exactly at (a
// claim admitted but never sent): a phone that was new then is removed, one
// that was already in the window gets its previous time back. Phones not
// recorded at at are left alone.
func (l *Ledger) Forget(ctx context.Context, key string, phones []string, at time.Time) error {
	if err := checkKey(key); err != nil {
		return err
	}
	distinct, err := distinctPhones(phones)
	if err != nil {
		return err
	}
	if len(distinct) == 0 {
		return nil
	}
	list, err := json.Marshal(distinct)
	if err != nil {
		return fmt.Errorf("forget %s: %w", key, err)
	}
	a := ms(at)
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("forget %s: %w", key, err)
	}
	defer tx.Rollback()
	var asOf, used sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT as_of, used FROM budgets WHERE key = ?`, key).Scan(&asOf, &used)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("forget %s: %w", key, err)
	}
	// The budget's change: a removed send leaves its window, a restored
	// one may be back in it.
	var gone, back int64
	err = tx.QueryRowContext(ctx, forgetCount, key, a, list, asOf.Int64-dayMS).Scan(&gone, &back)
	if err != nil {
		return fmt.Errorf("forget %s: %w", key, err)
	}
	if gone == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, forgetDelete, key, a, list); err != nil {
		return fmt.Errorf("forget %s: %w", key, err)
	}
	if _, err := tx.ExecContext(ctx, forgetUndo, key, a, list); err != nil {
		return fmt.Errorf("forget %s: %w", key, err)
	}
	if asOf.Valid {
		s := used.Int64 - gone*above(a, asOf.Int64-dayMS) + back
		if _, err := tx.ExecContext(ctx, `UPDATE budgets SET used = ? WHERE key = ?`, s, key); err != nil {
			return fmt.Errorf("forget %s: %w", key, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("forget %s: %w", key, err)
	}
	return nil
}

func checkKey(key string) error {
	if key == "" {
		return errors.New("ledger: empty budget key")
	}
	return nil
}

// distinctPhones returns phones without repeats, in order. It refuses an
// empty phone and one that is not UTF-8 (JSON, which carries lists to
// SQLite, would change it).
func distinctPhones(phones []string) ([]string, error) {
	seen := make(map[string]bool, len(phones))
	out := make([]string, 0, len(phones))
	for _, p := range phones {
		if p == "" || !utf8.ValidString(p) {
			return nil, fmt.Errorf("ledger: phone %q: empty or not UTF-8", p)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}
