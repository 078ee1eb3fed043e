package store

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/engine"
)

// BenchmarkClaimRecord is the checkpoint's share of a send: a claim of 256
// rows, then their results recorded in one batch. rows/cpu-s is rows per
// second of the process's CPU time, steadier on a busy machine.
//
// Sub-benchmark attempts records each send's attempt too (issue 13: the
// attempts record must cost under 5% of this); without records none.
func BenchmarkClaimRecord(b *testing.B) {
	for _, attempts := range []bool{false, true} {
		name := "without"
		if attempts {
			name = "attempts"
		}
		b.Run(name, func(b *testing.B) { benchClaimRecord(b, attempts) })
	}
}

func benchClaimRecord(b *testing.B, attempts bool) {
	ctx := context.Background()
	s := newStore(b, phones(200000, "A")...)
	b.ResetTimer()
	c0 := cpuTime()
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
			res[k] = engine.Result{Row: j.Row, Outcome: engine.OutcomeSent, MessageID: "wamid.x", At: now}
			if attempts {
				res[k].Attempt = engine.Attempt{Row: j.Row, Sender: "A", At: now, Latency: 80 * time.Millisecond, Class: engine.Accepted}
			}
		}
		if err := s.Record(ctx, res); err != nil {
			b.Fatal(err)
		}
		rows += len(jobs)
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(rows)/(cpuTime()-c0).Seconds(), "rows/cpu-s")
}

// cpuTime is the CPU time the process has used, in user and system mode.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
