package report

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/store"
)

// BenchmarkReport gathers and renders the report of a campaign of
// BULKSEND_BENCH_ROWS rows (default 200,000) over 2 numbers, every row sent
// once and one attempt in ten throttled first, and reports the rows per
// second and the peak heap: the heap must not grow with the campaign
// (attempts are streamed into buckets, quantiles are SQLite's).
func BenchmarkReport(b *testing.B) {
	n := 200_000
	if v := os.Getenv("BULKSEND_BENCH_ROWS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	st, err := store.Open(filepath.Join(b.TempDir(), "c.bulksend.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	senders := []string{"A", "B"}
	i := 0
	if _, err := st.Import(ctx, func() (store.Row, error) {
		if i == n {
			return store.Row{}, io.EOF
		}
		i++
		return store.Row{Row: int64(i), Line: i + 1, Phone: fmt.Sprintf("+4474%08d", i), Sender: senders[i%2], Params: []string{"p"}}, nil
	}, func() store.Settings {
		return store.Settings{CampaignID: "bench", Template: "t", Rate: 80, MaxAttempts: 5}
	}); err != nil {
		b.Fatal(err)
	}
	if _, err := st.BeginRun(ctx, store.Run{StartedAt: t0, PID: 1 << 30, Version: "bench", Rate: 80, Senders: senders}); err != nil {
		b.Fatal(err)
	}
	// 160 rows a second: each number at its rate of 80.
	left := func(row int64) time.Time { return t0.Add(time.Duration(row) * time.Second / 160) }
	for _, sender := range senders {
		for {
			jobs, err := st.Claim(ctx, sender, t0.Add(365*24*time.Hour), 5000)
			if err != nil {
				b.Fatal(err)
			}
			if len(jobs) == 0 {
				break
			}
			res := make([]engine.Result, 0, len(jobs)+len(jobs)/10)
			for _, j := range jobs {
				at := left(j.Row)
				res = append(res, engine.Result{Row: j.Row, Outcome: engine.OutcomeSent, MessageID: "w", At: at.Add(120 * time.Millisecond),
					Attempt: engine.Attempt{Row: j.Row, Sender: sender, At: at, Latency: time.Duration(40+j.Row%160) * time.Millisecond, Class: engine.Accepted}})
			}
			if err := st.Record(ctx, res); err != nil {
				b.Fatal(err)
			}
		}
	}
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		r, err := Gather(ctx, st, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		if err := Render(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
}
