package receive_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/whatsapp/receive"
)

// The target: 3,000 signed POSTs a second (one status each)
// sustained, p99 under 50 ms, nothing lost.
const (
	targetRate = 3000
	targetP99  = 50 * time.Millisecond
	benchFor   = 5 * time.Second
)

// BenchmarkReceive POSTs signed status bodies (one delivered status each,
// shaped as the fact sheet's example, about 600 bytes) over loopback to a
// receiver serving with its own limits and writing to this machine's disk,
// for 5 s, and prints the figures beside the target:
//
//   - open/3000: POSTs sent on a fixed schedule of 3,000 a second, by
//     enough clients that a slow answer never delays the next send;
//     latency is from each POST's scheduled time to its answer, so that a
//     stall counts for every POST it delays (no coordinated omission).
//   - closed/64: 64 clients sending back to back: the most it takes.
//
// After each run the log is read back with reconcile's reader: every body
// answered 200 must be in it exactly once. The clients run on the same
// cores as the receiver, and bodies are signed before the clock starts.
//
//	go test -run '^$' -bench Receive -benchtime 1x ./internal/whatsapp/receive
func BenchmarkReceive(b *testing.B) {
	for _, tc := range []struct {
		name    string
		rate    float64 // 0: closed loop
		clients int
	}{
		{"open/3000", targetRate, 512},
		{"closed/64", 0, 64},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				benchOnce(b, tc.name, tc.rate, tc.clients)
			}
		})
	}
}

type shot struct {
	i  int
	at time.Time // when it is due (open loop) or was sent (closed loop)
}

func benchOnce(b *testing.B, name string, rate float64, clients int) {
	cfg := config(b)
	r, err := receive.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	url := serve(b, r)

	n := 200_000 // closed loop: more than it can in benchFor
	if rate > 0 {
		n = int(rate * benchFor.Seconds())
	}
	bodies, sigs := make([][]byte, n), make([]string, n)
	for i := range n {
		bodies[i] = statusBody(i)
		sigs[i] = sign(testSecret, bodies[i])
	}
	c := client(clients)
	shots := make(chan shot, n)
	lat := make([][]time.Duration, clients)
	acked := make([][]int, clients)
	failed := make([]int, clients)
	var wg sync.WaitGroup
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	deadline := start.Add(benchFor)
	for w := range clients {
		wg.Go(func() {
			for s := range shots {
				if rate == 0 {
					if time.Now().After(deadline) {
						continue // drain
					}
					s.at = time.Now()
				}
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(bodies[s.i]))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(receive.SignatureHeader, sigs[s.i])
				resp, err := c.Do(req)
				if err != nil {
					failed[w]++
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failed[w]++
					continue
				}
				lat[w] = append(lat[w], time.Since(s.at))
				acked[w] = append(acked[w], s.i)
			}
		})
	}
	if rate > 0 {
		interval := time.Duration(float64(time.Second) / rate)
		for i := range n {
			at := start.Add(time.Duration(i) * interval)
			if d := time.Until(at); d > 0 {
				time.Sleep(d)
			}
			shots <- shot{i: i, at: at}
		}
	} else {
		for i := range n {
			shots <- shot{i: i}
		}
	}
	close(shots)
	wg.Wait()
	elapsed := time.Since(start)
	if rate == 0 {
		elapsed = min(elapsed, benchFor)
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}

	var all []time.Duration
	var ids []string
	fails := 0
	for w := range clients {
		all = append(all, lat[w]...)
		for _, i := range acked[w] {
			ids = append(ids, wamid(i))
		}
		fails += failed[w]
	}
	slices.Sort(all)
	q := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(p*float64(len(all))))]
	}
	k := readLog(b, cfg.Dir)
	lost, twice := 0, 0
	for _, id := range ids {
		switch len(k.where[id]) {
		case 0:
			lost++
		case 1:
		default:
			twice++
		}
	}
	s := r.Stats()
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
	achieved := float64(len(all)) / elapsed.Seconds()
	b.ReportMetric(achieved, "POSTs/s")
	b.ReportMetric(float64(q(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(q(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lost), "lost")
	b.ReportMetric(float64(s.Kept)/float64(max(s.Fsyncs, 1)), "bodies/fsync")
	offered := "as fast as 64 clients go"
	if rate > 0 {
		offered = fmt.Sprintf("%.0f/s offered", rate)
	}
	fmt.Printf("receive %s (%s): %.0f POSTs/s answered 200 (target %d), p50 %v, p99 %v (target < %v), max %v; "+
		"%d kept, %d lost, %d kept twice, %d failed; %.1f bodies a fsync (%d fsyncs); CPU %.2f cores (clients included)\n",
		name, offered, achieved, targetRate, q(0.50).Round(10*time.Microsecond), q(0.99).Round(10*time.Microsecond), targetP99,
		q(1).Round(10*time.Microsecond), s.Kept, lost, twice, fails, float64(s.Kept)/float64(max(s.Fsyncs, 1)), s.Fsyncs,
		cpu.Seconds()/elapsed.Seconds())
	if lost > 0 || twice > 0 {
		b.Errorf("%d bodies answered 200 are not in the log, %d are twice", lost, twice)
	}
}
