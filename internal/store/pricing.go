package store

import (
	"context"
	"database/sql"
	"fmt"
)

// This file lists the phones that a rate card prices: the rows Meta
// billed (what a campaign cost so far) and the rows still to send (a
// ceiling on what the rest may cost). Both come streaming, so that memory
// does not grow with the campaign.

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

// each runs a read-only query and calls scan for each row, streaming; an
// error of scan is returned as it is (scan wraps its own).
func (s *Store) each(ctx context.Context, what, query string, scan func(*sql.Rows) error, args ...any) error {
	rows, err := s.q.QueryContext(ctx, query, args...)
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
