package store

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkImport is the checkpoint's share of an import (issue 14): rows
// made in memory, as the CLI hands them over, written into a new
// checkpoint, duplicates found, the claim index built, committed. Rows
// have four parameters like internal/bench's campaign; dups-1pct repeats
// one phone in a hundred. rows/cpu-s is rows per second of the process's
// CPU time, steadier on a busy machine. Run it with
//
//	go test -run '^$' -bench Import -benchtime 3x ./internal/store
//
// BULKSEND_BENCH_ROWS=100000 makes it shorter.
func BenchmarkImport(b *testing.B) {
	for _, bc := range []struct {
		name string
		dups int // one row in dups repeats an earlier phone; 0 for none
	}{
		{"distinct", 0},
		{"dups-1pct", 100},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := 1_000_000
			if v, err := strconv.Atoi(os.Getenv("BULKSEND_BENCH_ROWS")); err == nil && v > 0 {
				n = v
			}
			// Made as they are read, as the CLI does: a million rows held
			// in memory would have the garbage collector scan them.
			row := func(i int) Row {
				phone := i
				if bc.dups > 0 && i%bc.dups == bc.dups-1 {
					phone = i / 2
				}
				return Row{Row: int64(i + 1), Line: i + 2, Phone: "+4477" + strconv.Itoa(10_000_000+phone), Sender: "1000001",
					Params: []string{"Customer " + strconv.Itoa(i), "CODE" + strconv.Itoa(10_000_000 + i)[1:],
						"https://cdn.example.com/img/" + strconv.Itoa(i%100) + ".jpg", "c" + strconv.Itoa(10_000_000 + i)[1:]}}
			}
			b.ResetTimer()
			c0 := cpuTime()
			for range b.N {
				b.StopTimer()
				s, err := Open(filepath.Join(b.TempDir(), "c.db"))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				i := 0
				got, err := s.Import(context.Background(), func() (Row, error) {
					if i == n {
						return Row{}, io.EOF
					}
					i++
					return row(i - 1), nil
				}, func() Settings { return Settings{} })
				if err != nil || got != int64(n) {
					b.Fatalf("imported %d rows, %v", got, err)
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(n*b.N)/(cpuTime()-c0).Seconds(), "rows/cpu-s")
		})
	}
}
