package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/reconcile"
)

// This file is reconcile's side of the checkpoint (reconcile.Checkpoint):
// the columns a status webhook changes, read and written in bulk.

// deliveryChunk is how many keys one query of Deliveries looks up.
const deliveryChunk = 500

const deliveryCols = `row, status, COALESCE(wamid, ''), COALESCE(error_code, 0), COALESCE(error_title, ''), COALESCE(fail_reason, ''),
	COALESCE(sent_at, 0), COALESCE(delivered_at, 0), COALESCE(read_at, 0), COALESCE(pricing_category, ''), COALESCE(pricing_type, ''), billable,
	COALESCE(billed_parts, 0), charged`

// Deliveries puts into out the deliveries of the given rows and of the
// rows holding the given wamids, keyed by row; it leaves the other entries
// of out alone. Unknown rows and wamids are absent.
func (s *Store) Deliveries(ctx context.Context, rows []int64, wamids []string, out map[int64]reconcile.Delivery) error {
	keys := make([]any, 0, min(max(len(rows), len(wamids)), deliveryChunk))
	load := func(col string, n int, key func(int) any) error {
		var full *sql.Stmt // for chunks of deliveryChunk keys
		defer func() {
			if full != nil {
				full.Close()
			}
		}()
		for i := 0; i < n; i += deliveryChunk {
			keys = keys[:0]
			for j := i; j < min(n, i+deliveryChunk); j++ {
				keys = append(keys, key(j))
			}
			q := `SELECT ` + deliveryCols + ` FROM recipients WHERE ` + col + ` IN (` + strings.TrimSuffix(strings.Repeat("?,", len(keys)), ",") + `)` + s.liveGuard("")
			var rs *sql.Rows
			var err error
			switch {
			case len(keys) < deliveryChunk:
				rs, err = s.db.QueryContext(ctx, q, keys...)
			case full == nil:
				if full, err = s.db.PrepareContext(ctx, q); err == nil {
					rs, err = full.QueryContext(ctx, keys...)
				}
			default:
				rs, err = full.QueryContext(ctx, keys...)
			}
			if err == nil {
				err = scanDeliveries(rs, out)
			}
			if err != nil {
				return fmt.Errorf("load states: %w", err)
			}
		}
		return nil
	}
	if err := load("row", len(rows), func(i int) any { return rows[i] }); err != nil {
		return err
	}
	return load("wamid", len(wamids), func(i int) any { return wamids[i] })
}

func scanDeliveries(rs *sql.Rows, out map[int64]reconcile.Delivery) error {
	defer rs.Close()
	var status sql.RawBytes
	var billable sql.NullBool
	var charged sql.NullFloat64
	for rs.Next() {
		var d reconcile.Delivery
		if err := rs.Scan(&d.Row, &status, &d.MessageID, &d.Code, &d.Title, &d.Reason, &d.SentAt, &d.DeliveredAt, &d.ReadAt,
			&d.Price.Category, &d.Price.Type, &billable, &d.Price.Parts, &charged); err != nil {
			return err
		}
		if charged.Valid {
			c := charged.Float64
			d.Price.Charge = &c
		}
		if billable.Valid {
			b := billable.Bool
			d.Price.Billable = &b
		}
		d.Status = ""
		for _, known := range campaign.Statuses { // the constant: no allocation
			if string(status) == string(known) {
				d.Status = known
			}
		}
		if d.Status == "" {
			d.Status = campaign.Status(status)
		}
		out[d.Row] = d
	}
	return rs.Err()
}

// deliveryBatch is how many rows one UPDATE of SaveDeliveries writes.
const deliveryBatch = 128

// SaveDeliveries writes deliveries in one transaction: the status,
// sent_at, delivered_at, read_at and pricing of all of them, and also the
// wamid, error_code, error_title and fail_reason of those in withIDs.
// Leaving the wamid of the others alone spares its index. Reading the rows
// half as wide as a full row, and writing them in multi-row statements,
// halves reconcile's cost (BenchmarkReconcile).
//
// Each pricing column is written only where it is NULL: the first pricing
// stored for a row stays (reconcile gives a row pricing only when it has
// none, so this guards the rule rather than making it).
func (s *Store) SaveDeliveries(ctx context.Context, withIDs, others []reconcile.Delivery, now time.Time) (err error) {
	defer mark(&err)
	if len(withIDs)+len(others) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save states: %w", err)
	}
	defer tx.Rollback()
	at := now.UnixMilli()
	if len(withIDs) > 0 {
		up, err := tx.PrepareContext(ctx, `UPDATE recipients SET status = ?2, wamid = ?3, error_code = ?4, error_title = ?5, fail_reason = ?6,
			sent_at = ?7, delivered_at = ?8, read_at = ?9, updated_at = ?10,
			pricing_category = COALESCE(pricing_category, ?11), pricing_type = COALESCE(pricing_type, ?12), billable = COALESCE(billable, ?13),
			billed_parts = COALESCE(billed_parts, ?14), charged = COALESCE(charged, ?15)
			WHERE row = ?1`+s.liveGuard(""))
		if err != nil {
			return fmt.Errorf("save states: %w", err)
		}
		defer up.Close()
		for _, d := range withIDs {
			if _, err := up.ExecContext(ctx, d.Row, string(d.Status), nullText(d.MessageID), nullInt(int64(d.Code)), nullText(d.Title), nullText(d.Reason),
				nullInt(d.SentAt), nullInt(d.DeliveredAt), nullInt(d.ReadAt), at,
				nullText(d.Price.Category), nullText(d.Price.Type), nullBool(d.Price.Billable),
				nullInt(int64(d.Price.Parts)), nullFloat(d.Price.Charge)); err != nil {
				return fmt.Errorf("save state of row %d: %w", d.Row, err)
			}
		}
	}
	// The others, deliveryBatch rows per statement: a third of the cost
	// of a statement per row. Those without a pricing to write (reconcile
	// gives one only to a row that has none) go in statements that leave
	// it alone, a third narrower.
	for _, priced := range []bool{false, true} {
		if err := saveOthers(ctx, tx, others, priced, at, s.liveGuard("recipients.")); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save states: %w", err)
	}
	return nil
}

// saveOthers writes the status, times and, if priced, pricing of the
// deliveries that have a pricing (priced) or none (!priced), deliveryBatch
// rows per statement.
func saveOthers(ctx context.Context, tx *sql.Tx, others []reconcile.Delivery, priced bool, at int64, guard string) error {
	width, set := 5, ``
	if priced {
		width, set = 10, `, pricing_category = COALESCE(recipients.pricing_category, v.column6),
			pricing_type = COALESCE(recipients.pricing_type, v.column7), billable = COALESCE(recipients.billable, v.column8),
			billed_parts = COALESCE(recipients.billed_parts, v.column9), charged = COALESCE(recipients.charged, v.column10)`
	}
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", width), ",") + "),"
	var full *sql.Stmt // for statements of deliveryBatch rows
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	args := make([]any, 0, 1+width*deliveryBatch)
	var n int
	var first, last int64
	flush := func() error {
		q := `UPDATE recipients SET status = v.column2, sent_at = v.column3, delivered_at = v.column4, read_at = v.column5, updated_at = ?1` + set + `
			FROM (VALUES ` + strings.TrimSuffix(strings.Repeat(one, n), ",") + `) AS v WHERE recipients.row = v.column1` + guard
		var err error
		if n == deliveryBatch {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, q); err != nil {
					return fmt.Errorf("save states: %w", err)
				}
			}
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, q, args...)
		}
		if err != nil {
			return fmt.Errorf("save states of rows %d to %d: %w", first, last, err)
		}
		n = 0
		return nil
	}
	for i := range others {
		d := &others[i]
		if unpriced(d.Price) == priced {
			continue
		}
		if n == 0 {
			args, first = append(args[:0], at), d.Row
		}
		last = d.Row
		args = append(args, d.Row, statusArg(d.Status), nullInt(d.SentAt), nullInt(d.DeliveredAt), nullInt(d.ReadAt))
		if priced {
			args = append(args, nullText(d.Price.Category), nullText(d.Price.Type), nullBool(d.Price.Billable),
				nullInt(int64(d.Price.Parts)), nullFloat(d.Price.Charge))
		}
		if n++; n == deliveryBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if n > 0 {
		return flush()
	}
	return nil
}

// liveGuard is the condition that keeps a live store's statuses off the
// rows a run may be writing (see OpenLive); "" for a store that holds the
// checkpoint.
func (s *Store) liveGuard(table string) string {
	if !s.live {
		return ""
	}
	return ` AND ` + table + `status NOT IN ('pending', 'sending')`
}

// unpriced reports whether p says nothing.
func unpriced(p campaign.Pricing) bool { return p.Unpriced() }

// nullFloat is *v as a query argument, NULL for nil.
func nullFloat(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

// nullInt is v as a query argument, NULL for 0.
func nullInt(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

// nullText is v as a query argument, NULL for "".
func nullText(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// nullBool is *v as a query argument, NULL for nil.
func nullBool(v *bool) any {
	if v == nil {
		return nil
	}
	return *v
}

// statusArgs are the statuses as query arguments, made once: converting a
// string to an interface allocates.
var statusArgs = func() map[campaign.Status]any {
	m := map[campaign.Status]any{}
	for _, s := range campaign.Statuses {
		m[s] = string(s)
	}
	return m
}()

func statusArg(s campaign.Status) any {
	if a, ok := statusArgs[s]; ok {
		return a
	}
	return string(s)
}
