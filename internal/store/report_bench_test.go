package store

import (
	"context"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/engine"
)

// BenchmarkBreakdown is what `status` and a dry run read first, on a
// campaign of 300,000 rows: a third pending, then sent rows (one in ten of
// them held, half of the rest delivered with a pricing) and one in ten
// failed. It reports rows per second.
func BenchmarkBreakdown(b *testing.B) {
	ctx := context.Background()
	const n = 300_000
	s := newStore(b, phones(n, "A")...)
	now := time.Now()
	jobs, err := s.Claim(ctx, "A", now, n*2/3)
	if err != nil {
		b.Fatal(err)
	}
	res := make([]engine.Result, len(jobs))
	for k, j := range jobs {
		res[k] = engine.Result{Row: j.Row, Outcome: engine.OutcomeSent, MessageID: "w", Held: k%10 == 1, At: now}
		if k%10 == 0 {
			res[k] = engine.Result{Row: j.Row, Outcome: engine.OutcomeFailed, Code: 131026, Title: "x", At: now}
		}
	}
	if err := s.Record(ctx, res); err != nil {
		b.Fatal(err)
	}
	if _, err := s.db.Exec(`UPDATE recipients SET status = 'delivered', pricing_category = 'marketing', pricing_type = 'regular', billable = 1
		WHERE status = 'sent' AND held = 0 AND row % 2 = 0`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := s.Breakdown(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
