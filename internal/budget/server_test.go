package budget

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/budget/redistest"
	"github.com/bulksend/bulksend/internal/pace"
)

// TestPacersShareANumber: three pacers, each with its own connections as
// three processes would have, send from one number through a real
// redis-server for two seconds. Together they keep within the number's
// limit in every sliding second and reach nearly all of it. Real time: it
// measures a ratio, with a margin for a busy machine.
func TestPacersShareANumber(t *testing.T) {
	if testing.Short() {
		t.Skip("sends in real time for two seconds")
	}
	srv := redistest.Start(t)
	const limit, procs = 200.0, 3
	run := 2 * time.Second
	var mu sync.Mutex
	var sent []time.Time
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	for range procs {
		b, err := Open(context.Background(), Options{URL: srv.URL(), Namespace: t.Name()})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		p := pace.Shared(limit, b)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				s, err := p.WaitN(ctx, "1000001", 1)
				if err != nil {
					return
				}
				now := time.Now()
				p.Left(s, now)
				mu.Lock()
				sent = append(sent, now)
				mu.Unlock()
				p.Answered(s, pace.Counted, now)
			}
		}()
	}
	wg.Wait()
	sort.Slice(sent, func(i, j int) bool { return sent[i].Before(sent[j]) })
	most := 0
	for i, j := 0, 0; j < len(sent); j++ {
		for sent[j].Sub(sent[i]) >= time.Second {
			i++
		}
		most = max(most, j-i+1)
	}
	rate := float64(len(sent)-1) / sent[len(sent)-1].Sub(sent[0]).Seconds()
	t.Logf("%d sends by %d pacers: %.1f/s of %.0f/s (%.3f), at most %d in a sliding second", len(sent), procs, rate, limit, rate/limit, most)
	if most > int(limit) {
		t.Errorf("a sliding second held %d sends: over the limit %v", most, limit)
	}
	if rate < 0.95*limit {
		t.Errorf("together %.1f/s: under 0.95 of %v", rate, limit)
	}
}

// TestPacerStopsWhenTheServerGoes: a pacer whose server is killed
// returns ErrUnavailable from its next wait, and sends nothing unbooked.
func TestPacerStopsWhenTheServerGoes(t *testing.T) {
	srv := redistest.Start(t)
	b, err := Open(context.Background(), Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p := pace.Shared(100, b)
	ctx := context.Background()
	if _, err := p.WaitN(ctx, "1000001", 1); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	_, err = p.WaitN(ctx, "1000001", 1)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("after the server went: %v, want ErrUnavailable", err)
	}
	srv.Restart()
	if _, err := p.WaitN(ctx, "1000001", 1); err != nil {
		t.Fatalf("after the server came back: %v", err)
	}
}
