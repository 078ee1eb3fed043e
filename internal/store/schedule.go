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

// This file is the checkpoint's side of when rows may be sent (issue 25):
// a row that may not be sent now is not claimed, and its next_at says from
// when it may; wait says why, so that status can tell without the
// operator ledger.

// Wait is why a pending row's next_at is in the future.
type Wait string

const (
	WaitWindow Wait = "window"  // its send window is closed in its zones
	WaitSendAt Wait = "send_at" // its own send_at is later
	WaitBudget Wait = "budget"  // the moving 24-hour limit is spent
	WaitStart  Wait = "start"   // the campaign's start is later
)

// ZoneGroup is the pending rows of one set of time zones.
type ZoneGroup struct {
	Zones string // schedule.Zones.Key; "" for rows without zones
	Rows  int64
}

// ZoneGroups returns the zone sets of the pending rows.
func (s *Store) ZoneGroups(ctx context.Context) (_ []ZoneGroup, err error) {
	defer mark(&err)
	rows, err := s.q.QueryContext(ctx, `SELECT COALESCE(zones, ''), COUNT(*) FROM recipients WHERE status = 'pending' GROUP BY 1 ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("zone groups: %w", err)
	}
	defer rows.Close()
	var out []ZoneGroup
	for rows.Next() {
		var g ZoneGroup
		if err := rows.Scan(&g.Zones, &g.Rows); err != nil {
			return nil, fmt.Errorf("zone groups: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// FillZones sets the zones of pending rows that have none, from zonesOf
// (which returns "" for a phone it cannot place): a campaign that gets a
// window after its import. It returns the rows it filled. It goes in
// chunks of rows, in one transaction, so memory stays flat.
func (s *Store) FillZones(ctx context.Context, zonesOf func(phone string) string) (_ int64, err error) {
	defer mark(&err)
	const chunk = 10_000
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("fill zones: %w", err)
	}
	defer tx.Rollback()
	upd, err := tx.PrepareContext(ctx, `UPDATE recipients SET zones = ? WHERE row = ?`)
	if err != nil {
		return 0, fmt.Errorf("fill zones: %w", err)
	}
	defer upd.Close()
	type rz struct {
		row   int64
		zones string
	}
	var filled int64
	todo := make([]rz, 0, chunk)
	for after := int64(0); ; {
		// Read a chunk, then write it: one connection cannot step a query
		// and write beside it.
		rows, err := tx.QueryContext(ctx, `SELECT row, phone FROM recipients WHERE row > ? AND status = 'pending' AND zones IS NULL ORDER BY row LIMIT ?`, after, chunk)
		if err != nil {
			return 0, fmt.Errorf("fill zones: %w", err)
		}
		todo = todo[:0]
		n := 0
		for rows.Next() {
			var r rz
			var phone string
			if err := rows.Scan(&r.row, &phone); err != nil {
				rows.Close()
				return 0, fmt.Errorf("fill zones: %w", err)
			}
			n, after = n+1, r.row
			if r.zones = zonesOf(phone); r.zones != "" {
				todo = append(todo, r)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, fmt.Errorf("fill zones: %w", err)
		}
		for _, r := range todo {
			if _, err := upd.ExecContext(ctx, r.zones, r.row); err != nil {
				return 0, fmt.Errorf("fill zones: %w", err)
			}
		}
		filled += int64(len(todo))
		if n < chunk {
			break
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("fill zones: %w", err)
	}
	return filled, nil
}

// WaitZones makes the pending rows of the zone set zones ("" for rows
// without zones) wait for their window until until, unless they already
// wait longer; it returns the rows it changed.
func (s *Store) WaitZones(ctx context.Context, zones string, until time.Time) (_ int64, err error) {
	defer mark(&err)
	res, err := s.db.ExecContext(ctx, `UPDATE recipients SET next_at = ?1, wait = 'window'
		WHERE status = 'pending' AND COALESCE(zones, '') = ?2 AND next_at < ?1`, ms(until), zones)
	if err != nil {
		return 0, fmt.Errorf("wait for the window: %w", err)
	}
	return res.RowsAffected()
}

// WaitAll makes every pending row (of senders, when given) wait until
// until for w (the budget, the campaign's start), unless it already
// waits longer.
func (s *Store) WaitAll(ctx context.Context, until time.Time, w Wait, senders ...string) (_ int64, err error) {
	defer mark(&err)
	q := `UPDATE recipients SET next_at = ?1, wait = ?2 WHERE status = 'pending' AND next_at < ?1`
	args := []any{ms(until), string(w)}
	if len(senders) > 0 {
		list, _ := json.Marshal(senders)
		q += ` AND sender IN (SELECT value FROM json_each(?3))`
		args = append(args, string(list))
	}
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("wait for the %s: %w", w, err)
	}
	return res.RowsAffected()
}

// Unwait makes the rows an earlier run's schedule made wait for w due
// again at their own time (their send_at, else now): this run's schedule
// decides afresh (a window widened, a start moved, a limit raised). A
// retry's backoff that a wait had replaced is not restored: the row is
// due at once.
func (s *Store) Unwait(ctx context.Context, w Wait) (_ int64, err error) {
	defer mark(&err)
	res, err := s.db.ExecContext(ctx, `UPDATE recipients SET next_at = COALESCE(send_at, 0),
		wait = CASE WHEN send_at IS NOT NULL THEN 'send_at' END
		WHERE status = 'pending' AND wait = ?`, string(w))
	if err != nil {
		return 0, fmt.Errorf("reschedule: %w", err)
	}
	return res.RowsAffected()
}

// Release puts claimed rows back unsent, no attempt spent, waiting until
// until for w: rows a claim took that the budget then refused.
func (s *Store) Release(ctx context.Context, rows []int64, until time.Time, w Wait) (err error) {
	defer mark(&err)
	if len(rows) == 0 {
		return nil
	}
	ids := make([]byte, 0, 8*len(rows))
	ids = append(ids, '[')
	for i, r := range rows {
		if i > 0 {
			ids = append(ids, ',')
		}
		ids = strconv.AppendInt(ids, r, 10)
	}
	ids = append(ids, ']')
	_, err = s.db.ExecContext(ctx, `UPDATE recipients SET status = 'pending', attempts = attempts - 1, next_at = ?1, wait = ?2, updated_at = ?3
		WHERE row IN (SELECT value FROM json_each(?4)) AND status = 'sending'`, ms(until), nullText(string(w)), ms(time.Now()), string(ids))
	if err != nil {
		return fmt.Errorf("release rows: %w", err)
	}
	return nil
}

// Expire ends every pending row skipped (kind expired) with reason: the
// campaign's end passed before they could be sent.
func (s *Store) Expire(ctx context.Context, reason string, now time.Time) (_ int64, err error) {
	defer mark(&err)
	res, err := s.db.ExecContext(ctx, `UPDATE recipients SET status = 'skipped', skip_kind = ?1, reason = ?2, wait = NULL, updated_at = ?3
		WHERE status = 'pending'`, string(campaign.SkipExpired), reason, ms(now))
	if err != nil {
		return 0, fmt.Errorf("expire rows: %w", err)
	}
	return res.RowsAffected()
}

// SkipZones ends the pending rows of a zone set skipped (kind no window)
// with reason: their window never opens in all their zones at once.
func (s *Store) SkipZones(ctx context.Context, zones, reason string, now time.Time) (_ int64, err error) {
	defer mark(&err)
	res, err := s.db.ExecContext(ctx, `UPDATE recipients SET status = 'skipped', skip_kind = ?1, reason = ?2, wait = NULL, updated_at = ?3
		WHERE status = 'pending' AND COALESCE(zones, '') = ?4`, string(campaign.SkipNoWindow), reason, ms(now), zones)
	if err != nil {
		return 0, fmt.Errorf("skip rows: %w", err)
	}
	return res.RowsAffected()
}

// Waiting is what the pending rows wait for, as the last run's schedule
// left them: the rows not due at the instant asked, by reason, and when
// the first falls due.
type Waiting struct {
	Window, SendAt, Budget, Start, Retry int64
	Next                                 time.Time // zero: nothing waits
}

// Total is every waiting row.
func (w Waiting) Total() int64 { return w.Window + w.SendAt + w.Budget + w.Start + w.Retry }

// Waiting counts the pending rows not due at now.
func (s *Store) Waiting(ctx context.Context, now time.Time) (_ Waiting, err error) {
	defer mark(&err)
	var w Waiting
	rows, err := s.q.QueryContext(ctx, `SELECT COALESCE(wait, ''), COUNT(*), MIN(next_at) FROM recipients
		WHERE status = 'pending' AND next_at > ? GROUP BY 1`, ms(now))
	if err != nil {
		return w, fmt.Errorf("waiting rows: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var reason string
		var n int64
		var next sql.NullInt64
		if err := rows.Scan(&reason, &n, &next); err != nil {
			return w, fmt.Errorf("waiting rows: %w", err)
		}
		switch Wait(reason) {
		case WaitWindow:
			w.Window += n
		case WaitSendAt:
			w.SendAt += n
		case WaitBudget:
			w.Budget += n
		case WaitStart:
			w.Start += n
		default:
			w.Retry += n
		}
		if t := time.UnixMilli(next.Int64); next.Valid && (w.Next.IsZero() || t.Before(w.Next)) {
			w.Next = t
		}
	}
	return w, rows.Err()
}

// LastSendAt is the latest send_at of a pending row, zero when none has
// one: no schedule can send them all before it.
func (s *Store) LastSendAt(ctx context.Context) (_ time.Time, err error) {
	defer mark(&err)
	var last sql.NullInt64
	if err := s.q.QueryRowContext(ctx, `SELECT MAX(send_at) FROM recipients WHERE status = 'pending'`).Scan(&last); err != nil {
		return time.Time{}, fmt.Errorf("last send_at: %w", err)
	}
	if !last.Valid {
		return time.Time{}, nil
	}
	return time.UnixMilli(last.Int64), nil
}

// AreaCodes counts the pending rows of North American (+1) phones by area
// code, for the quiet hours of the markets they fall under.
func (s *Store) AreaCodes(ctx context.Context) (_ map[string]int64, err error) {
	defer mark(&err)
	rows, err := s.q.QueryContext(ctx, `SELECT substr(phone, 3, 3), COUNT(*) FROM recipients
		WHERE status = 'pending' AND phone LIKE '+1%' GROUP BY 1`)
	if err != nil {
		return nil, fmt.Errorf("area codes: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var ac string
		var n int64
		if err := rows.Scan(&ac, &n); err != nil {
			return nil, fmt.Errorf("area codes: %w", err)
		}
		out[ac] = n
	}
	return out, rows.Err()
}
