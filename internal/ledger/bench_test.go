package ledger

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkAdmit is one claim's Admit: a batch of 100 phones into a ledger
// already holding 100,000 sends of the same key, all in its window (the
// worst case: a portfolio at Meta's 100K tier), the clock moving 100 ms a
// claim. µs/batch is the figure to compare with its budget of 5,000 µs
// (µs/batch-budget).
//
// new: 100 phones never sent to, room for all; scattered: the same, but
// each far from the last in the ledger's index, as a CSV's phones are
// (most land on a page of their own, which the commit writes); resend: 100
// phones in the window (admitted free); full: 100 new phones with the
// window over the limit (all refused).
func BenchmarkAdmit(b *testing.B) {
	for _, tc := range []struct {
		name  string
		batch func(i int) []string
		limit int
	}{
		{"new", func(i int) []string { return phones("+1666", i*100, 100) }, 10_000_000},
		{"scattered", func(i int) []string { return scattered("+1555", i*100, 100) }, 10_000_000},
		{"resend", func(i int) []string { return phones("+1555", (i*100)%100_000, 100) }, 10_000_000},
		{"full", func(i int) []string { return phones("+1666", i*100, 100) }, 1000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			l := newLedger(b)
			// 100,000 sends over the 24 hours before t0, 1,000 at a time.
			for k := range 100 {
				when := t0.Add(-24*h + time.Duration(k+1)*24*h/100)
				if _, err := l.Admit(ctx, portfolio, phones("+1555", k*1000, 1000), when, 0); err != nil {
					b.Fatal(err)
				}
			}
			now := t0
			i := 0
			for b.Loop() {
				now = now.Add(100 * time.Millisecond)
				got, err := l.Admit(ctx, portfolio, tc.batch(i), now, tc.limit)
				if err != nil {
					b.Fatal(err)
				}
				if (tc.name == "full") == got[0] {
					b.Fatalf("batch %d: admitted %v under limit %d", i, got[0], tc.limit)
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/batch")
			b.ReportMetric(5000, "µs/batch-budget")
		})
	}
}

// scattered is n phones never sent to, the from-th to the from+n-1-th of
// a sequence that puts each next to a different one of the 100,000 phones
// sent to before (phones(prefix, 0, 100_000) with a digit more), far from
// the last, as a CSV's phones land in the ledger's index: in no order of
// theirs, on pages that hold the window already.
func scattered(prefix string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		k := from + i
		out[i] = fmt.Sprintf("%s%07d%d", prefix, k*7_919%100_000, k/100_000)
	}
	return out
}

func phones(prefix string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%07d", prefix, from+i)
	}
	return out
}
