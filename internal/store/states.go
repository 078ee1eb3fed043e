package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
)

// State is the delivery state of one row, as reconcile reads and writes it.
type State struct {
	Row         int64
	Sender      string
	Status      campaign.Status
	Attempts    int
	AttemptedAt time.Time
	WAMID       string
	Code        int
	Title       string
	SentAt      time.Time
	DeliveredAt time.Time
	ReadAt      time.Time
}

const stateCols = `row, sender, status, attempts, attempted_at, COALESCE(wamid, ''), COALESCE(error_code, 0), COALESCE(error_title, ''), sent_at, delivered_at, read_at`

func scanState(rows *sql.Rows) (State, error) {
	var st State
	var status string
	var attempted, sent, delivered, read sql.NullInt64
	err := rows.Scan(&st.Row, &st.Sender, &status, &st.Attempts, &attempted, &st.WAMID, &st.Code, &st.Title, &sent, &delivered, &read)
	st.Status = campaign.Status(status)
	st.AttemptedAt, st.SentAt, st.DeliveredAt, st.ReadAt = fromMS(attempted), fromMS(sent), fromMS(delivered), fromMS(read)
	return st, err
}

const lookupChunk = 500

// States returns the states of the given rows and of the rows holding the
// given wamids, keyed by row. Unknown rows and wamids are absent.
func (s *Store) States(ctx context.Context, rows []int64, wamids []string) (map[int64]State, error) {
	out := make(map[int64]State, len(rows)+len(wamids))
	load := func(col string, keys []any) error {
		for len(keys) > 0 {
			n := min(len(keys), lookupChunk)
			q := `SELECT ` + stateCols + ` FROM recipients WHERE ` + col + ` IN (` + strings.TrimSuffix(strings.Repeat("?,", n), ",") + `)`
			rs, err := s.db.QueryContext(ctx, q, keys[:n]...)
			if err != nil {
				return fmt.Errorf("load states: %w", err)
			}
			for rs.Next() {
				st, err := scanState(rs)
				if err != nil {
					rs.Close()
					return fmt.Errorf("load states: %w", err)
				}
				out[st.Row] = st
			}
			rs.Close()
			if err := rs.Err(); err != nil {
				return fmt.Errorf("load states: %w", err)
			}
			keys = keys[n:]
		}
		return nil
	}
	keys := make([]any, 0, max(len(rows), len(wamids)))
	for _, r := range rows {
		keys = append(keys, r)
	}
	if err := load("row", keys); err != nil {
		return nil, err
	}
	keys = keys[:0]
	for _, w := range wamids {
		keys = append(keys, w)
	}
	if err := load("wamid", keys); err != nil {
		return nil, err
	}
	return out, nil
}

// InDoubt returns the rows in doubt, in row order.
func (s *Store) InDoubt(ctx context.Context) ([]State, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT `+stateCols+` FROM recipients WHERE status = 'in_doubt' ORDER BY row`)
	if err != nil {
		return nil, fmt.Errorf("list rows in doubt: %w", err)
	}
	defer rs.Close()
	var out []State
	for rs.Next() {
		st, err := scanState(rs)
		if err != nil {
			return nil, fmt.Errorf("list rows in doubt: %w", err)
		}
		out = append(out, st)
	}
	return out, rs.Err()
}

// SaveStates writes states in one transaction.
func (s *Store) SaveStates(ctx context.Context, states []State, now time.Time) error {
	if len(states) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save states: %w", err)
	}
	defer tx.Rollback()
	up, err := tx.PrepareContext(ctx, `UPDATE recipients SET status = ?2, wamid = ?3, error_code = ?4, error_title = ?5,
		sent_at = ?6, delivered_at = ?7, read_at = ?8, updated_at = ?9 WHERE row = ?1`)
	if err != nil {
		return fmt.Errorf("save states: %w", err)
	}
	defer up.Close()
	opt := func(t time.Time) sql.NullInt64 {
		return sql.NullInt64{Int64: ms(t), Valid: !t.IsZero()}
	}
	for _, st := range states {
		code := sql.NullInt64{Int64: int64(st.Code), Valid: st.Code != 0}
		if _, err := up.ExecContext(ctx, st.Row, string(st.Status), nullString(st.WAMID), code, nullString(st.Title),
			opt(st.SentAt), opt(st.DeliveredAt), opt(st.ReadAt), ms(now)); err != nil {
			return fmt.Errorf("save state of row %d: %w", st.Row, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save states: %w", err)
	}
	return nil
}
