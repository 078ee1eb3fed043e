package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// A lease says that a run sends from a number now: runs on one machine
// that send from the same number see each other through their leases and
// split the number's rate. A run renews its leases while it sends and
// removes them when it ends; a run that crashed leaves leases that are
// stale as soon as its process is gone (same host) or, at the latest,
// when they expire.

// Lease is one run's lease of one number.
type Lease struct {
	Key        string // the number as the run's ledger scope keeps it
	Sender     string // the number
	Holder     string // the run: host, pid and start, unique
	Host       string
	PID        int
	Checkpoint string // the run's campaign
	Rate       float64
	Since      time.Time
	Expires    time.Time
}

// Hold renews (or takes) l's lease of each of keys, until expires: keys
// and senders are in step (the scoped and the plain number).
func (l *Ledger) Hold(ctx context.Context, lease Lease, keys, senders []string, expires time.Time) error {
	if len(keys) != len(senders) {
		return errors.New("ledger: hold: keys and senders differ in number")
	}
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("hold leases: %w", err)
	}
	defer tx.Rollback()
	for i, k := range keys {
		if _, err := tx.ExecContext(ctx, `INSERT INTO leases (key, holder, sender, host, pid, checkpoint, rate, since, expires)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
			ON CONFLICT (key, holder) DO UPDATE SET expires = excluded.expires, rate = excluded.rate`,
			k, lease.Holder, senders[i], lease.Host, lease.PID, lease.Checkpoint, lease.Rate, ms(lease.Since), ms(expires)); err != nil {
			return fmt.Errorf("hold lease of %s: %w", senders[i], err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("hold leases: %w", err)
	}
	return nil
}

// Release removes every lease of holder.
func (l *Ledger) Release(ctx context.Context, holder string) error {
	if _, err := l.db.ExecContext(ctx, `DELETE FROM leases WHERE holder = ?`, holder); err != nil {
		return fmt.Errorf("release leases: %w", err)
	}
	return nil
}

// Leases returns the live leases of key, oldest first: those not expired
// at now whose process, on this host, still runs. Stale ones are removed.
func (l *Ledger) Leases(ctx context.Context, key string, now time.Time) ([]Lease, error) {
	return l.leases(ctx, "key", key, now)
}

// SenderLeases is Leases of a number in every scope (for status).
func (l *Ledger) SenderLeases(ctx context.Context, sender string, now time.Time) ([]Lease, error) {
	return l.leases(ctx, "sender", sender, now)
}

// leases is Leases by column (key or sender).
func (l *Ledger) leases(ctx context.Context, column, value string, now time.Time) ([]Lease, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT key, sender, holder, host, pid, checkpoint, rate, since, expires
		FROM leases WHERE `+column+` = ? ORDER BY since, holder`, value)
	if err != nil {
		return nil, fmt.Errorf("read leases of %s: %w", value, err)
	}
	defer rows.Close()
	host, _ := os.Hostname()
	var live []Lease
	var stale []Lease
	for rows.Next() {
		var x Lease
		var since, expires int64
		if err := rows.Scan(&x.Key, &x.Sender, &x.Holder, &x.Host, &x.PID, &x.Checkpoint, &x.Rate, &since, &expires); err != nil {
			return nil, fmt.Errorf("read leases of %s: %w", value, err)
		}
		x.Since, x.Expires = fromMS(since), fromMS(expires)
		if !x.Expires.After(now) || (x.Host == host && !alive(x.PID)) {
			stale = append(stale, x)
			continue
		}
		live = append(live, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read leases of %s: %w", value, err)
	}
	rows.Close()
	for _, x := range stale {
		if _, err := l.db.ExecContext(ctx, `DELETE FROM leases WHERE key = ? AND holder = ?`, x.Key, x.Holder); err != nil {
			return nil, fmt.Errorf("remove a stale lease of %s: %w", x.Sender, err)
		}
	}
	return live, nil
}

// alive reports whether a process pid runs on this host (signal 0: EPERM
// is a process of another user, alive).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
