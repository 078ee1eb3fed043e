package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// OptOut is a recipient who asked to receive nothing more. It holds for
// every later campaign, on every channel, whichever it came from.
type OptOut struct {
	Phone   string // E.164, compared byte for byte
	Channel string // where it came from: "whatsapp", "sms"
	Source  string // how: "reply STOP", "user_preferences webhook", "131050", "import"
	Sender  string // the business number it reached ("" when not known)
	At      time.Time
	// MarketingOnly: the recipient stopped marketing messages only (a
	// WhatsApp "stop promotions", 131050); other messages may still go.
	MarketingOnly bool
}

// AddOptOuts records o in one transaction and returns how many phones were
// new. It is idempotent per phone: the first opt-out recorded of a phone
// is kept, later ones (in o or since) change nothing, but for one that
// covers everything where the kept one covered marketing only: it
// replaces it (an opt-out only ever widens). An opt-out that Lift lifted
// comes back only with one made after the lift. The transaction is
// committed with synchronous=FULL, so that a power cut right after never
// loses an opt-out (a send recorded so may be lost; an opt-out lost would
// be messaged again).
func (l *Ledger) AddOptOuts(ctx context.Context, o []OptOut) (added int, err error) {
	for _, x := range o {
		if x.Phone == "" {
			return 0, errors.New("ledger: opt-out without a phone")
		}
	}
	if len(o) == 0 {
		return 0, nil
	}
	err = l.durably(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO optouts (phone, channel, source, at, marketing_only, sender) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (phone) DO UPDATE SET channel = excluded.channel, source = excluded.source, at = excluded.at,
				marketing_only = excluded.marketing_only, sender = excluded.sender, lifted_at = NULL, lifted_by = NULL
			WHERE (optouts.lifted_at IS NULL AND optouts.marketing_only = 1 AND excluded.marketing_only = 0)
				OR (optouts.lifted_at IS NOT NULL AND excluded.at > optouts.lifted_at)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, x := range o {
			res, err := stmt.ExecContext(ctx, x.Phone, x.Channel, x.Source, ms(x.At), x.MarketingOnly, x.Sender)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			added += int(n)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("record opt-outs: %w", err)
	}
	return added, nil
}

// durably runs fn in a transaction committed with synchronous=FULL (the
// WAL is synced at the commit), on a connection set back to NORMAL after.
func (l *Ledger) durably(ctx context.Context, fn func(*sql.Tx) error) error {
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = FULL`); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), `PRAGMA synchronous = NORMAL`)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// RemoveOptOut drops phone's opt-out: the recipient opted back in. A phone
// without one is no error.
func (l *Ledger) RemoveOptOut(ctx context.Context, phone string) error {
	if _, err := l.db.ExecContext(ctx, `DELETE FROM optouts WHERE phone = ?`, phone); err != nil {
		return fmt.Errorf("remove opt-out of %s: %w", phone, err)
	}
	return nil
}

// Lift lifts phone's opt-out made before at, as a recipient's resume or
// START does: with marketingOnly (a resume of marketing messages) only an
// opt-out of marketing; else any. It reports whether one was lifted. The
// opt-out stays on record, lifted (see AddOptOuts); one made after at is
// not touched, so a log replayed in any order ends the same.
func (l *Ledger) Lift(ctx context.Context, phone string, marketingOnly bool, at time.Time, by string) (bool, error) {
	var lifted bool
	err := l.durably(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE optouts SET lifted_at = ?2, lifted_by = ?3
			WHERE phone = ?1 AND lifted_at IS NULL AND at <= ?2 AND (marketing_only = 1 OR NOT ?4)`, phone, ms(at), by, marketingOnly)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		lifted = n > 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("lift opt-out of %s: %w", phone, err)
	}
	return lifted, nil
}

// OptedOut returns phone's opt-out, and whether it has one (that holds).
func (l *Ledger) OptedOut(ctx context.Context, phone string) (OptOut, bool, error) {
	o := OptOut{Phone: phone}
	var at int64
	err := l.db.QueryRowContext(ctx, `SELECT channel, source, at, marketing_only, sender FROM optouts WHERE phone = ? AND lifted_at IS NULL`, phone).Scan(&o.Channel, &o.Source, &at, &o.MarketingOnly, &o.Sender)
	if errors.Is(err, sql.ErrNoRows) {
		return OptOut{}, false, nil
	}
	if err != nil {
		return OptOut{}, false, fmt.Errorf("read opt-out of %s: %w", phone, err)
	}
	o.At = fromMS(at)
	return o, true, nil
}

// optOutPage is how many opt-outs EachOptOut reads at a time.
const optOutPage = 1000

// EachOptOut calls fn with every opt-out that holds, in phone order, and stops at
// fn's first error, which it returns as it is. It reads a page at a time
// and holds no connection while fn runs, so fn may call the Ledger (and a
// long walk never holds up an Admit); an opt-out added or removed
// meanwhile may or may not be seen.
func (l *Ledger) EachOptOut(ctx context.Context, fn func(OptOut) error) error {
	after := ""
	for {
		page, err := l.optOutsAfter(ctx, after)
		if err != nil {
			return err
		}
		for _, o := range page {
			if err := fn(o); err != nil {
				return err
			}
		}
		if len(page) < optOutPage {
			return nil
		}
		after = page[len(page)-1].Phone
	}
}

// optOutsAfter reads the page of opt-outs whose phones follow after.
func (l *Ledger) optOutsAfter(ctx context.Context, after string) ([]OptOut, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT phone, channel, source, at, marketing_only, sender FROM optouts WHERE phone > ? AND lifted_at IS NULL ORDER BY phone LIMIT ?`, after, optOutPage)
	if err != nil {
		return nil, fmt.Errorf("read opt-outs: %w", err)
	}
	defer rows.Close()
	page := make([]OptOut, 0, optOutPage)
	for rows.Next() {
		var o OptOut
		var at int64
		if err := rows.Scan(&o.Phone, &o.Channel, &o.Source, &at, &o.MarketingOnly, &o.Sender); err != nil {
			return nil, fmt.Errorf("read opt-outs: %w", err)
		}
		o.At = fromMS(at)
		page = append(page, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read opt-outs: %w", err)
	}
	return page, nil
}
