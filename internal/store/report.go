package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
)

// heldRows are the rows Report.Held counts: sent, and held back.
const heldRows = `(status = 'sent' AND held = 1)`

// Counts returns the number of rows in each status. It scans every row:
// a reader beside a run (metrics) calls it on a View, so as not to hold
// the run's connection meanwhile.
func (s *Store) Counts(ctx context.Context) (campaign.Counts, error) {
	var c campaign.Counts
	err := s.query(ctx, `SELECT status, COUNT(*) FROM recipients GROUP BY status`, func(rows *sql.Rows) error {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return err
		}
		c.Add(campaign.Status(st), n)
		return nil
	})
	return c, err
}

// LastSent returns when the provider last accepted a row of the campaign
// (the latest sent_at, kept when a webhook later delivers or reads the
// row); ok is false when it accepted none.
func (s *Store) LastSent(ctx context.Context) (t time.Time, ok bool, err error) {
	var v sql.NullInt64
	if err := s.q.QueryRowContext(ctx, `SELECT MAX(sent_at) FROM recipients`).Scan(&v); err != nil {
		return time.Time{}, false, fmt.Errorf("last sent: %w", err)
	}
	if !v.Valid {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(v.Int64), true, nil
}

// Report is what `bulksend status` shows.
type Report struct {
	Counts   campaign.Counts
	ByError  []ErrorCount  // failed, retrying and in-doubt rows by last error
	BySender []SenderCount // per sender number
	Skipped  map[campaign.SkipKind]int64
	// SkipExamples holds, for each kind in Skipped, its first row: what
	// an operator looks at to fix the file.
	SkipExamples map[campaign.SkipKind]SkipExample
	Retrying     int64     // pending rows with attempts or throttled tries behind them
	NextRetry    time.Time // when the earliest of them is due
	SentLast     int64     // rows accepted in the minute before At
	At           time.Time
	Deliveries   []time.Duration // sorted time from sent to delivered, for percentiles

	// Held counts the sent rows that WhatsApp holds back (template
	// pacing): accepted, and neither delivered nor failed yet. A held
	// row that a webhook delivers, reads or fails counts as such.
	Held int64
	// WasHeld counts the rows whose send was answered held, whatever
	// became of them since (delivered, read, failed 132015).
	WasHeld int64
	// FailedByReason counts failed rows by their stable reason
	// (campaign.FailMarketingCap); failed rows without one are not in it.
	FailedByReason map[string]int64
	// ByPricingCategory counts the rows a status webhook gave a pricing
	// category, by category (marketing, marketing_lite, utility, …).
	ByPricingCategory map[string]int64
	// Billable counts the rows Meta bills: a status webhook said billable,
	// and the row was delivered or read (a message is billed when it is
	// delivered, so a row still sent, or failed, is not counted).
	Billable int64
}

// SkipExample is one skipped row, to show what a kind of skip looks like.
type SkipExample struct {
	Row    int64  `json:"row"`
	Line   int64  `json:"line"`  // the CSV line it starts on
	Phone  string `json:"phone"` // as written when it was invalid
	Reason string `json:"reason"`
}

// ErrorCount counts rows by status and error code.
type ErrorCount struct {
	Status campaign.Status `json:"status"`
	Code   int             `json:"code"`
	Title  string          `json:"title"`
	Rows   int64           `json:"rows"`
}

// SenderCount is one sender number's counts.
type SenderCount struct {
	Sender string          `json:"from"`
	Counts campaign.Counts `json:"counts"`
}

// query runs a read-only query and scans each row; errors name the report.
func (s *Store) query(ctx context.Context, query string, scan func(*sql.Rows) error, args ...any) error {
	rows, err := s.q.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Breakdown is the cheap part of a report: the counts, each sender's
// counts, the skip and failure reasons, held rows and pricing. Pending
// rows are counted from the due index, so the sort that grouping needs
// covers only the rows past pending: before sending starts it costs next
// to nothing. Held and priced rows take a second scan, whose sort holds
// only the priced rows (BenchmarkBreakdown). Right after this store's
// Import, while no row has been written since, it is the import's own
// tally and reads no row.
func (s *Store) Breakdown(ctx context.Context) (Report, error) {
	if r, ok := s.importedBreakdown(ctx); ok {
		return r, nil
	}
	return s.breakdown(ctx)
}

// breakdown is Breakdown from a scan of the rows.
func (s *Store) breakdown(ctx context.Context) (Report, error) {
	r := Report{Skipped: map[campaign.SkipKind]int64{}, SkipExamples: map[campaign.SkipKind]SkipExample{},
		FailedByReason: map[string]int64{}, ByPricingCategory: map[string]int64{}}
	bySender := map[string]*campaign.Counts{}
	first := map[campaign.SkipKind]int64{} // the first row of each skip kind
	// The third column is a skipped row's skip kind, a failed row's
	// reason.
	err := s.query(ctx, `
		SELECT sender, status, '', COUNT(*), 0 FROM recipients WHERE status = 'pending' GROUP BY sender
		UNION ALL
		SELECT sender, status, CASE status WHEN 'skipped' THEN COALESCE(skip_kind, `+legacySkipKind+`) WHEN 'failed' THEN COALESCE(fail_reason, '') ELSE '' END,
			COUNT(*), MIN(row)
		FROM recipients WHERE status <> 'pending' GROUP BY 1, 2, 3`, func(rows *sql.Rows) error {
		var sender, st, kind string
		var n, row int64
		if err := rows.Scan(&sender, &st, &kind, &n, &row); err != nil {
			return err
		}
		if st == string(campaign.Failed) && kind != "" {
			r.FailedByReason[kind] += n
		}
		c := bySender[sender]
		if c == nil {
			c = &campaign.Counts{}
			bySender[sender] = c
		}
		c.Add(campaign.Status(st), n)
		r.Counts.Add(campaign.Status(st), n)
		if st == string(campaign.Skipped) {
			k := campaign.SkipKind(kind)
			r.Skipped[k] += n
			if f, ok := first[k]; !ok || row < f {
				first[k] = row
			}
		}
		return nil
	})
	// Held and priced rows, in a scan of their own: grouping the query
	// above by more columns, or summing in it, made it slower by more
	// than this scan costs.
	if err == nil {
		err = s.query(ctx, `SELECT COALESCE(pricing_category, ''), SUM(`+heldRows+`), SUM(held), SUM(`+billableRows+`), COUNT(*) FROM recipients
			WHERE held = 1 OR pricing_category IS NOT NULL OR billable IS NOT NULL GROUP BY 1`, func(rows *sql.Rows) error {
			var category string
			var held, wasHeld, billable, n int64
			if err := rows.Scan(&category, &held, &wasHeld, &billable, &n); err != nil {
				return err
			}
			r.Held += held
			r.WasHeld += wasHeld
			r.Billable += billable
			if category != "" {
				r.ByPricingCategory[category] += n
			}
			return nil
		})
	}
	for k, row := range first {
		if err != nil {
			break
		}
		e := SkipExample{Row: row}
		err = s.q.QueryRowContext(ctx, `SELECT line, phone, COALESCE(reason, '') FROM recipients WHERE row = ?`, row).Scan(&e.Line, &e.Phone, &e.Reason)
		if err != nil {
			err = fmt.Errorf("report: %w", err)
		}
		r.SkipExamples[k] = e
	}
	for sender, c := range bySender {
		r.BySender = append(r.BySender, SenderCount{Sender: sender, Counts: *c})
	}
	sort.Slice(r.BySender, func(i, j int) bool { return r.BySender[i].Sender < r.BySender[j].Sender })
	return r, err
}

// Report gathers the status report at instant now: the breakdown, errors
// by code, retries, the recent rate and delivery times.
func (s *Store) Report(ctx context.Context, now time.Time) (Report, error) {
	r, err := s.Breakdown(ctx)
	if err != nil {
		return r, err
	}
	r.At = now
	q := func(query string, scan func(*sql.Rows) error, args ...any) {
		if err == nil {
			err = s.query(ctx, query, scan, args...)
		}
	}
	if err == nil {
		r.ByError, err = s.ErrorCounts(ctx)
	}
	// A throttled try gives its attempt back: such a row waiting out its
	// backoff is retrying too.
	q(`SELECT COUNT(*), COALESCE(MIN(next_at), 0) FROM recipients WHERE status = 'pending' AND (attempts > 0 OR throttles > 0)`, func(rows *sql.Rows) error {
		var next int64
		if err := rows.Scan(&r.Retrying, &next); err != nil {
			return err
		}
		if next > 0 {
			r.NextRetry = time.UnixMilli(next)
		}
		return nil
	})
	q(`SELECT COUNT(*) FROM recipients WHERE sent_at >= ?`, func(rows *sql.Rows) error {
		return rows.Scan(&r.SentLast)
	}, ms(now.Add(-time.Minute)))
	q(`SELECT delivered_at - sent_at FROM recipients WHERE delivered_at IS NOT NULL AND sent_at IS NOT NULL AND delivered_at >= sent_at`, func(rows *sql.Rows) error {
		var d int64
		if err := rows.Scan(&d); err != nil {
			return err
		}
		r.Deliveries = append(r.Deliveries, time.Duration(d)*time.Millisecond)
		return nil
	})
	if err != nil {
		return r, err
	}
	sort.Slice(r.Deliveries, func(i, j int) bool { return r.Deliveries[i] < r.Deliveries[j] })
	return r, nil
}

// ErrorCounts counts the failed, retrying and in-doubt rows by status and
// last error, most rows first (Report.ByError).
func (s *Store) ErrorCounts(ctx context.Context) ([]ErrorCount, error) {
	var out []ErrorCount
	// A provider without error codes (AWS) names its failures by reason:
	// those group by it.
	err := s.query(ctx, `SELECT status, COALESCE(error_code, 0), COALESCE(MAX(error_title), ''), COUNT(*) FROM recipients
		WHERE error_code IS NOT NULL OR (error_title IS NOT NULL AND status IN ('failed', 'in_doubt', 'pending'))
		GROUP BY status, error_code, CASE WHEN error_code IS NULL THEN fail_reason END ORDER BY COUNT(*) DESC`, func(rows *sql.Rows) error {
		var e ErrorCount
		var st string
		if err := rows.Scan(&st, &e.Code, &e.Title, &e.Rows); err != nil {
			return err
		}
		e.Status = campaign.Status(st)
		out = append(out, e)
		return nil
	})
	return out, err
}

// ExportRow is one recipient as `bulksend export` writes it.
type ExportRow struct {
	Row         int64
	Line        int64
	ExtID       string
	Phone       string
	Sender      string
	Status      campaign.Status
	Attempts    int
	MessageID   string
	ErrorCode   int
	ErrorTitle  string
	Reason      string
	AttemptedAt time.Time
	SentAt      time.Time
	DeliveredAt time.Time
	ReadAt      time.Time
	UpdatedAt   time.Time

	// Added by schema version 3; zero for rows from before it.
	Held       bool             // accepted but held back by WhatsApp; kept when the row moves on
	FailReason string           // failed: a stable failure name (campaign.FailMarketingCap)
	Price      campaign.Pricing // the first pricing a status webhook gave; Billable nil when unknown

	// Added by schema version 4: an SMS row's parts and encoding (0 and ""
	// for WhatsApp), and the tries of the row that were throttled.
	Parts     int
	Encoding  string
	Throttles int

	// Added by schema version 9: the recipient's first reply; zero and ""
	// for none.
	RepliedAt time.Time
	Reply     string
}

// Export calls fn for every row in row order, streaming.
func (s *Store) Export(ctx context.Context, fn func(ExportRow) error) error {
	rows, err := s.q.QueryContext(ctx, `SELECT row, line, COALESCE(ext_id, ''), phone, sender, status, attempts,
		COALESCE(wamid, ''), COALESCE(error_code, 0), COALESCE(error_title, ''), COALESCE(reason, ''),
		attempted_at, sent_at, delivered_at, read_at, updated_at,
		held, COALESCE(fail_reason, ''), COALESCE(pricing_category, ''), COALESCE(pricing_type, ''), billable,
		COALESCE(parts, 0), COALESCE(encoding, ''), throttles, COALESCE(billed_parts, 0), charged,
		replied_at, COALESCE(reply, '')
		FROM recipients ORDER BY row`)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r ExportRow
		var st string
		var attempted, sent, delivered, read, replied sql.NullInt64
		var updated int64
		var billable sql.NullBool
		var charged sql.NullFloat64
		if err := rows.Scan(&r.Row, &r.Line, &r.ExtID, &r.Phone, &r.Sender, &st, &r.Attempts, &r.MessageID,
			&r.ErrorCode, &r.ErrorTitle, &r.Reason, &attempted, &sent, &delivered, &read, &updated,
			&r.Held, &r.FailReason, &r.Price.Category, &r.Price.Type, &billable,
			&r.Parts, &r.Encoding, &r.Throttles, &r.Price.Parts, &charged, &replied, &r.Reply); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if charged.Valid {
			r.Price.Charge = &charged.Float64
		}
		if billable.Valid {
			r.Price.Billable = &billable.Bool
		}
		r.Status = campaign.Status(st)
		r.AttemptedAt, r.SentAt, r.DeliveredAt, r.ReadAt = fromMS(attempted), fromMS(sent), fromMS(delivered), fromMS(read)
		r.RepliedAt = fromMS(replied)
		r.UpdatedAt = time.UnixMilli(updated)
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// Parts is what an SMS campaign's rows cost in message parts, and what
// its events said was billed.
type Parts struct {
	Planned     int64   `json:"planned"`      // parts of the rows not skipped
	Sent        int64   `json:"sent"`         // parts of the rows accepted (sent, delivered, read)
	UCS2Rows    int64   `json:"ucs2_rows"`    // rows not skipped whose body needs UCS-2
	Throttled   int64   `json:"throttled"`    // throttled tries, all rows
	BilledRows  int64   `json:"billed_rows"`  // rows an event gave billed parts or a price
	BilledParts int64   `json:"billed_parts"` // parts the events said were billed
	Charged     float64 `json:"charged_usd"`  // price with carrier fees the events said, in US dollars
}

// Parts sums the parts of an SMS campaign's rows (one scan). A WhatsApp
// campaign has none: every figure is 0 but Throttled.
func (s *Store) Parts(ctx context.Context) (Parts, error) {
	var p Parts
	err := s.q.QueryRowContext(ctx, `SELECT
		COALESCE(SUM(CASE WHEN status <> 'skipped' THEN parts END), 0),
		COALESCE(SUM(CASE WHEN status IN ('sent', 'delivered', 'read') THEN parts END), 0),
		COALESCE(SUM(status <> 'skipped' AND encoding = 'UCS-2'), 0),
		COALESCE(SUM(throttles), 0),
		COALESCE(SUM(billed_parts IS NOT NULL OR charged IS NOT NULL), 0),
		COALESCE(SUM(billed_parts), 0),
		COALESCE(SUM(charged), 0)
		FROM recipients`).Scan(&p.Planned, &p.Sent, &p.UCS2Rows, &p.Throttled, &p.BilledRows, &p.BilledParts, &p.Charged)
	// A sum of floats: to the millionth of a dollar, finer than AWS's
	// prices, so that 0.6053000000000001 is 0.6053.
	p.Charged = math.Round(p.Charged*1e6) / 1e6
	if err != nil {
		return p, fmt.Errorf("report parts: %w", err)
	}
	return p, nil
}

// PendingParts returns the parts of each sender's pending rows (rows
// without parts count one), for an SMS campaign's ETA.
func (s *Store) PendingParts(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.query(ctx, `SELECT sender, SUM(COALESCE(parts, 1)) FROM recipients WHERE status = 'pending' GROUP BY sender`, func(rows *sql.Rows) error {
		var sender string
		var n int64
		if err := rows.Scan(&sender, &n); err != nil {
			return err
		}
		out[sender] = n
		return nil
	})
	return out, err
}
