package store

import (
	"context"
	"database/sql"
	"fmt"
)

// This file lists the phones that a rate card prices: the rows Meta
// billed (what a campaign cost so far) and the rows still to send (a
// ceiling on what the rest may cost). Both come streaming, or grouped by
// the start of the phone, so that memory does not grow with the campaign.

// billableRows are the rows Meta bills (Report.Billable): a status webhook
// said billable, and the message was delivered.
const billableRows = `(billable IS 1 AND status IN ('delivered', 'read'))`

// toSendRows are the rows a run may still send: pending (due or waiting
// for a retry), sending (a stopped run's) and in doubt (a resend policy
// sends them again). Each may be sent, so each may be billed.
const toSendRows = `status IN ('pending', 'sending', 'in_doubt')`

// EachBillable calls fn with the phone and pricing category ("" when no
// status said one) of every row Meta bills (Report.Billable), in row
// order. An error from fn stops the walk and is returned as it is.
func (s *Store) EachBillable(ctx context.Context, fn func(phone, category string) error) error {
	return s.each(ctx, "billable rows", `SELECT phone, COALESCE(pricing_category, '') FROM recipients WHERE `+billableRows+` ORDER BY row`,
		func(rows *sql.Rows) error {
			var phone, category string
			if err := rows.Scan(&phone, &category); err != nil {
				return fmt.Errorf("list billable rows: %w", err)
			}
			return fn(phone, category)
		})
}

// EachToSend calls fn with the phone of every row a run may still send
// (pending, sending or in doubt), in row order: what a cost ceiling
// counts. An error from fn stops the walk and is returned as it is.
func (s *Store) EachToSend(ctx context.Context, fn func(phone string) error) error {
	return s.each(ctx, "rows to send", `SELECT phone FROM recipients WHERE `+toSendRows+` ORDER BY row`,
		func(rows *sql.Rows) error {
			var phone string
			if err := rows.Scan(&phone); err != nil {
				return fmt.Errorf("list rows to send: %w", err)
			}
			return fn(phone)
		})
}

// PhoneGroup is the rows whose phones begin alike, of one pricing
// category.
type PhoneGroup struct {
	Category string // the pricing category; "" when none is known (rows to send)
	Prefix   string // the phones' first characters, "+" included
	// Sample is the least of the phones, for what needs a whole number:
	// the country of +1 numbers is in the area code (csvin.Region).
	Sample string
	Rows   int64
}

// BillableByPrefix counts the rows Meta bills (Report.Billable) by pricing
// category and the first prefixLen characters of their phone, in that
// order. With prefixLen 5 ("+1201", "+4477", "+9198") each group falls in
// one country but for a few that share a country code past its area code
// (Guernsey in +44 1481, …): where that matters, use EachBillable.
func (s *Store) BillableByPrefix(ctx context.Context, prefixLen int) ([]PhoneGroup, error) {
	return s.groups(ctx, "billable rows", `COALESCE(pricing_category, '')`, billableRows, prefixLen)
}

// ToSendByPrefix counts the rows a run may still send (as EachToSend) by
// the first prefixLen characters of their phone; see BillableByPrefix.
// Their Category is "".
func (s *Store) ToSendByPrefix(ctx context.Context, prefixLen int) ([]PhoneGroup, error) {
	return s.groups(ctx, "rows to send", `''`, toSendRows, prefixLen)
}

func (s *Store) groups(ctx context.Context, what, category, where string, prefixLen int) ([]PhoneGroup, error) {
	if prefixLen < 1 {
		return nil, fmt.Errorf("%s by prefix: prefix length %d, want at least 1", what, prefixLen)
	}
	var out []PhoneGroup
	err := s.each(ctx, what+" by prefix", `SELECT `+category+`, substr(phone, 1, ?), MIN(phone), COUNT(*) FROM recipients
		WHERE `+where+` GROUP BY 1, 2 ORDER BY 1, 2`, func(rows *sql.Rows) error {
		var g PhoneGroup
		if err := rows.Scan(&g.Category, &g.Prefix, &g.Sample, &g.Rows); err != nil {
			return fmt.Errorf("list %s by prefix: %w", what, err)
		}
		out = append(out, g)
		return nil
	}, prefixLen)
	return out, err
}

// each runs a read-only query and calls scan for each row, streaming; an
// error of scan is returned as it is (scan wraps its own).
func (s *Store) each(ctx context.Context, what, query string, scan func(*sql.Rows) error, args ...any) error {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("list %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list %s: %w", what, err)
	}
	return nil
}
