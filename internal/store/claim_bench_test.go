package store

import (
	"context"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/engine"
)

// BenchmarkClaimRecord is the checkpoint's share of a send: a claim of 256
// rows, then their results recorded in one batch.
func BenchmarkClaimRecord(b *testing.B) {
	ctx := context.Background()
	s := newStore(b, phones(200000, "A")...)
	b.ResetTimer()
	rows := 0
	for i := 0; i < b.N; i++ {
		now := time.Now()
		jobs, err := s.Claim(ctx, "A", now, 256)
		if err != nil {
			b.Fatal(err)
		}
		if len(jobs) == 0 {
			b.Fatal("checkpoint exhausted: lower -benchtime")
		}
		res := make([]engine.Result, len(jobs))
		for k, j := range jobs {
			res[k] = engine.Result{Row: j.Row, Outcome: engine.OutcomeSent, WAMID: "wamid.x", At: now}
		}
		if err := s.Record(ctx, res); err != nil {
			b.Fatal(err)
		}
		rows += len(jobs)
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}
