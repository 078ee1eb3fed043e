package store

import (
	"context"
	"fmt"
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

// BenchmarkClaimScale is the checkpoint's share of a scale run: five
// sender numbers with their rows interleaved (as a CSV lists them), each
// claimed 100 at a time (a tenth of a second at 1,000/s), and the results
// of all five recorded together, 500 at a time, with their attempts.
// cpu-µs/row is the process's CPU time per row, claim and record.
func BenchmarkClaimScale(b *testing.B) {
	const senders, claim, perSender = 5, 100, 4000
	ctx := context.Background()
	var rows []Row
	for i := 1; i <= senders*perSender; i++ {
		rows = append(rows, Row{Row: int64(i), Line: i + 1, Phone: fmt.Sprintf("+4477009%05d", i),
			Sender: fmt.Sprint("S", i%senders), Params: []string{"Customer", fmt.Sprint(i), "https://cdn.example.com/img/1.jpg"}})
	}
	var cpu time.Duration
	n := 0
	for range b.N {
		b.StopTimer()
		s := newStore(b, rows...)
		b.StartTimer()
		c0 := cpuTime()
		for range perSender / claim {
			var res []engine.Result
			now := time.Now()
			for k := range senders {
				jobs, err := s.Claim(ctx, fmt.Sprint("S", k), now, claim)
				if err != nil || len(jobs) != claim {
					b.Fatalf("claim: %d rows, %v", len(jobs), err)
				}
				for _, j := range jobs {
					res = append(res, engine.Result{Row: j.Row, Outcome: engine.OutcomeSent, MessageID: "wamid.HBgLMTU1NTAxMjM0NTYVAgARGBI" + fmt.Sprint(j.Row), At: now,
						Attempt: engine.Attempt{Row: j.Row, Sender: j.Sender, At: now, Latency: 80 * time.Millisecond, Class: engine.Accepted}})
				}
			}
			if err := s.Record(ctx, res); err != nil {
				b.Fatal(err)
			}
		}
		cpu += cpuTime() - c0
		n += senders * perSender
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/row")
}
