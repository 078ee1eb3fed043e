package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"
)

// SetLearned records that sender (a sender number's ID) was learned at at
// to accept perSecond messages per second, so that the next campaign on it
// starts there. Of two records, the later at is kept: a process that
// learned earlier cannot overwrite what another learned since.
func (l *Ledger) SetLearned(ctx context.Context, sender string, perSecond float64, at time.Time) error {
	if sender == "" {
		return errors.New("ledger: learned limit of an empty sender")
	}
	if !(perSecond > 0) || math.IsInf(perSecond, 1) {
		return fmt.Errorf("ledger: learned limit of %s: %v per second is not a rate", sender, perSecond)
	}
	_, err := l.db.ExecContext(ctx, `INSERT INTO learned (sender, per_second, at) VALUES (?1, ?2, ?3)
		ON CONFLICT (sender) DO UPDATE SET per_second = excluded.per_second, at = excluded.at WHERE excluded.at >= at`,
		sender, perSecond, ms(at))
	if err != nil {
		return fmt.Errorf("record learned limit of %s: %w", sender, err)
	}
	return nil
}

// Learned returns what sender was learned to accept, and when; ok is false
// when nothing was, or when it was learned more than 30 days before now
// (a number's limits change with its quality and tier).
func (l *Ledger) Learned(ctx context.Context, sender string, now time.Time) (perSecond float64, at time.Time, ok bool, err error) {
	var a int64
	err = l.db.QueryRowContext(ctx, `SELECT per_second, at FROM learned WHERE sender = ?`, sender).Scan(&perSecond, &a)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, time.Time{}, false, nil
	}
	if err != nil {
		return 0, time.Time{}, false, fmt.Errorf("read learned limit of %s: %w", sender, err)
	}
	if a < ms(now.Add(-retention)) {
		return 0, time.Time{}, false, nil
	}
	return perSecond, fromMS(a), true, nil
}

// ClearLearned forgets what sender was learned to accept (the operator
// knows better: a new tier, a fixed number).
func (l *Ledger) ClearLearned(ctx context.Context, sender string) error {
	if _, err := l.db.ExecContext(ctx, `DELETE FROM learned WHERE sender = ?`, sender); err != nil {
		return fmt.Errorf("clear learned limit of %s: %w", sender, err)
	}
	return nil
}

// Campaign is where a campaign's checkpoint is, and what it sends.
type Campaign struct {
	Checkpoint string // the checkpoint's absolute, resolved path: the campaign's identity
	CSV        string // the CSV it was imported from
	Channel    string // "whatsapp", "sms"
	ID         string // what the campaign calls itself (a template, a name)
	LastRun    time.Time
}

// NoteCampaign records c, replacing what was recorded of the same
// checkpoint. A relative Checkpoint is made absolute against the working
// folder; the caller passes the checkpoint's resolved name (the store's
// Path), so that one campaign is one entry. LastRun must be set: it is
// what the entry is pruned by.
func (l *Ledger) NoteCampaign(ctx context.Context, c Campaign) error {
	if c.Checkpoint == "" {
		return errors.New("ledger: campaign without a checkpoint")
	}
	if c.LastRun.IsZero() {
		return fmt.Errorf("ledger: campaign %s without a last run", c.Checkpoint)
	}
	cp, err := filepath.Abs(c.Checkpoint)
	if err != nil {
		return fmt.Errorf("note campaign %s: %w", c.Checkpoint, err)
	}
	_, err = l.db.ExecContext(ctx, `INSERT INTO campaigns (checkpoint, csv, channel, id, last_run) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (checkpoint) DO UPDATE SET csv = excluded.csv, channel = excluded.channel, id = excluded.id, last_run = excluded.last_run`,
		cp, c.CSV, c.Channel, c.ID, ms(c.LastRun))
	if err != nil {
		return fmt.Errorf("note campaign %s: %w", cp, err)
	}
	return nil
}

// Campaigns returns the campaigns recorded in the last 30 days (as of the
// last Prune), the most recently run first; of equal last runs, by
// checkpoint.
func (l *Ledger) Campaigns(ctx context.Context) ([]Campaign, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT checkpoint, csv, channel, id, last_run FROM campaigns ORDER BY last_run DESC, checkpoint`)
	if err != nil {
		return nil, fmt.Errorf("read campaigns: %w", err)
	}
	defer rows.Close()
	var out []Campaign
	for rows.Next() {
		var c Campaign
		var last int64
		if err := rows.Scan(&c.Checkpoint, &c.CSV, &c.Channel, &c.ID, &last); err != nil {
			return nil, fmt.Errorf("read campaigns: %w", err)
		}
		c.LastRun = fromMS(last)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read campaigns: %w", err)
	}
	return out, nil
}
