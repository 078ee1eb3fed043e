package listen

import "time"

// Metrics are the limits of --metrics-addr, which Prometheus scrapes
// with one GET every 15 s to 1 min, waiting 10 s at most by default:
//
//   - ReadHeader 5s, Read 10s: a GET has no body and its headers come in
//     one packet; a client still sending after that is not Prometheus.
//   - Write 30s: collecting counts the checkpoint's rows (about a second
//     on millions), three times Prometheus' own scrape timeout.
//   - Idle 90s: more than a 1-minute scrape interval, so that Prometheus
//     keeps its connection from one scrape to the next.
//   - MaxConns 64: a scraper or two and a curl need a handful; 64 is
//     nothing to the run's file descriptors, and a flood beyond it waits
//     in the kernel's queue while the campaign goes on.
var Metrics = Limits{
	ReadHeader: 5 * time.Second,
	Read:       10 * time.Second,
	Write:      30 * time.Second,
	Idle:       90 * time.Second,
	MaxConns:   64,
}

// Sandbox are the limits of a server of sandboxes whose handlers keep an
// answer back for up to the longest of holds (their latency and late
// answers: the sandboxes' LongestHold), in the run's process (run
// --sandbox) or its own (bulksend sandbox):
//
//   - ReadHeader 10s, Read 30s: requests come over loopback and a body is
//     at most a few kilobytes; the margin is for a machine loaded by a
//     benchmark, where a sender may not be scheduled for a while.
//   - Write: Read + hold + 30s (the default), so that no answer the
//     sandbox holds on purpose is cut off, and the client, not the
//     sandbox, decides when a late answer is too late (in doubt).
//   - Idle 2m: more than the 90 s after which the run's clients
//     (net/http's transport) drop a kept-alive connection themselves, so
//     the sandbox never closes one a send is about to reuse (a POST lost
//     that way would leave its row in doubt).
//   - MaxConns 4096: a run keeps about rate × latency connections open
//     (1,000/s × 200 ms = 200; a benchmark's 10 numbers × 1,000/s × 100 ms,
//     with the engine's 1.5 margin, 1,500) and keeps them alive, well
//     under the cap: a flood of idle connections on the sandbox's port
//     leaves them untouched, waits in the kernel's queue beyond the cap,
//     and holds at most 4,096 of the process's descriptors (half its
//     limit where that is under 8,192).
func Sandbox(holds ...time.Duration) Limits {
	var hold time.Duration
	for _, h := range holds {
		hold = max(hold, h)
	}
	return Limits{
		ReadHeader: 10 * time.Second,
		Read:       30 * time.Second,
		Hold:       hold,
		Idle:       2 * time.Minute,
		MaxConns:   4096,
	}
}
