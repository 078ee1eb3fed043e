package reconcile

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/webhook"
)

func TestExpMem(t *testing.T) {
	if os.Getenv("EXP") == "" {
		t.Skip()
	}
	const rows = 100_000
	dir := t.TempDir()
	logPath := filepath.Join(dir, "log.ndjson")
	f, _ := os.Create(logPath)
	w := bufio.NewWriter(f)
	for i := range 3 {
		for row := int64(1); row <= rows; row++ {
			w.Write(webhook.Body(ourNumber, status([]string{"sent", "delivered", "read"}[i], fmt.Sprintf("wamid.%d", row), float64(i*10), row)))
			w.WriteByte('\n')
		}
	}
	w.Flush()
	f.Close()
	for _, batch := range []int{10_000, 50_000, 200_000} {
		p := filepath.Join(dir, fmt.Sprintf("c%d.db", batch))
		st, _ := store.Open(p)
		n := 0
		st.Import(context.Background(), func() (store.Row, error) {
			if n == rows {
				return store.Row{}, io.EOF
			}
			n++
			return store.Row{Row: int64(n), Line: n + 1, Phone: fmt.Sprintf("+1555%07d", n), Sender: ourNumber}, nil
		}, func() store.Settings { return store.Settings{CampaignID: testCampaign} })
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		var peak atomic.Uint64
		done := make(chan struct{})
		go func() {
			var m runtime.MemStats
			for {
				select {
				case <-done:
					return
				case <-time.After(2 * time.Millisecond):
				}
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}()
		t0 := time.Now()
		sum, err := Run(context.Background(), st, []string{logPath}, nil, Options{Batch: batch})
		close(done)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("batch %d: %v, changed %d, peak heap in use %.1f MB above %.1f MB", batch, time.Since(t0), sum.Changed, float64(peak.Load()-base.HeapInuse)/1e6, float64(base.HeapInuse)/1e6)
		st.Close()
	}
}
