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
// redis-server for two seconds: WhatsApp messages, and SMS of one to
// three parts that count at once. Together they keep within the number's
// limit in every sliding second and reach nearly all of it. Real time: it
// measures ratios, with a margin for a busy machine.
func TestPacersShareANumber(t *testing.T) {
	if testing.Short() {
		t.Skip("sends in real time for two seconds a case")
	}
	srv := redistest.Start(t)
	cases := []struct {
		name  string
		limit float64
		parts []int // the parts of each pacer's sends, in turn
		floor float64
	}{
		{name: "messages", limit: 200, parts: []int{1}, floor: 0.95},
		// SMS at 50 parts/s: a second holds what the limit allows, so the
		// pace loses some of it to sends that do not fit the second's end.
		{name: "SMS parts", limit: 50, parts: []int{1, 3, 2, 1, 2}, floor: 0.75},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			type sent struct {
				at    time.Time // when it left
				slot  time.Time // the slot it was booked (s.At)
				parts int
			}
			var mu sync.Mutex
			var all []sent
			var wg sync.WaitGroup
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			for i := range 3 {
				b, err := Open(context.Background(), Options{URL: srv.URL(), Namespace: t.Name()})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				p := pace.Shared(tc.limit, b)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := i; ; k++ {
						cost := tc.parts[k%len(tc.parts)]
						s, err := p.WaitN(ctx, "1000001", cost)
						if err != nil {
							return
						}
						now := time.Now()
						p.Left(s, now)
						mu.Lock()
						all = append(all, sent{now, s.At, cost})
						mu.Unlock()
						p.Answered(s, pace.Counted, now)
					}
				}()
			}
			wg.Wait()
			// The busiest sliding second by when of: the bookings must never
			// hold more than the limit; the departures, measured after a
			// goroutine is scheduled, may bunch by a loaded machine's delay
			// (the margin a booking keeps covers most of it: logged).
			busiest := func(when func(sent) time.Time) int {
				sort.Slice(all, func(i, j int) bool { return when(all[i]).Before(when(all[j])) })
				most, in := 0, 0
				for i, j := 0, 0; j < len(all); j++ {
					in += all[j].parts
					for when(all[j]).Sub(when(all[i])) >= time.Second {
						in -= all[i].parts
						i++
					}
					most = max(most, in)
				}
				return most
			}
			booked := busiest(func(s sent) time.Time { return s.slot })
			most := busiest(func(s sent) time.Time { return s.at })
			total := 0
			for _, s := range all[:len(all)-1] {
				total += s.parts
			}
			rate := float64(total) / all[len(all)-1].at.Sub(all[0].at).Seconds()
			t.Logf("%d sends by 3 pacers: %.1f parts/s of %.0f/s (%.3f), at most %d parts booked and %d left in a sliding second", len(all), rate, tc.limit, rate/tc.limit, booked, most)
			if booked > int(tc.limit) {
				t.Errorf("a sliding second of bookings held %d parts: over the limit %v", booked, tc.limit)
			}
			if rate < tc.floor*tc.limit {
				t.Errorf("together %.1f parts/s: under %v of %v", rate, tc.floor, tc.limit)
			}
		})
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
