package run

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/ledger"
)

// Runs on one machine that send from the same number, with no shared
// budget, see each other through their leases in the operator ledger and
// split the number's rate evenly.
const (
	leaseEvery = 250 * time.Millisecond // renew and look for other runs
	leaseTTL   = 5 * time.Second        // a lease not renewed for this long is stale (its process is checked first)
	// A run sends at a larger share only this long after it saw a run
	// end, and a run that joins others waits as long before its first
	// send: the sends of the other run's last second still count, and the
	// runs already sending must see the newcomer first.
	leaseSettle = time.Second + leaseEvery
)

// leases are a run's leases of its numbers, renewed until stop.
type leases struct {
	c       *Campaign
	l       *ledger.Ledger
	eng     *engine.Engine
	lease   ledger.Lease
	keys    []string
	senders []string
	rate    float64
	ways    map[string]int       // the runs each number is split between now
	widen   map[string]time.Time // when a number may go to fewer ways
	stop    chan struct{}
	done    chan struct{}
}

// holdLeases takes the run's leases of senders, splits each number's rate
// with the other runs sending from it, and keeps doing so until the
// returned func is called, which releases them. A run that joins others
// waits leaseSettle before it returns. A ledger that fails is logged: the
// run goes on unsplit.
func (c *Campaign) holdLeases(ctx context.Context, eng *engine.Engine, senders []string, rate float64) func() {
	l := c.opts.Ledger
	if l == nil || c.opts.Book != nil || !(rate > 0) || math.IsInf(rate, 1) {
		return func() {}
	}
	host, _ := os.Hostname()
	now := time.Now()
	checkpoint, err := filepath.Abs(c.Store.Path())
	if err != nil {
		checkpoint = c.Store.Path()
	}
	ls := &leases{
		c: c, l: l, eng: eng, senders: senders, rate: rate,
		lease: ledger.Lease{Holder: fmt.Sprintf("%s:%d:%d", host, os.Getpid(), now.UnixNano()), Host: host, PID: os.Getpid(),
			Checkpoint: checkpoint, Rate: rate, Since: now},
		ways: map[string]int{}, widen: map[string]time.Time{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	for _, s := range senders {
		ls.keys = append(ls.keys, c.opts.ledgerKey(s))
		ls.ways[s] = 1
	}
	if joined, err := ls.renew(ctx, now, true); err != nil {
		c.opts.Log.Warn("the operator ledger cannot hold this run's leases: runs sending from the same numbers do not split them", "ledger", l.Path(), "err", err)
		close(ls.done)
		return func() {}
	} else if joined {
		t := time.NewTimer(leaseSettle)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	go ls.keep(ctx)
	return func() {
		close(ls.stop)
		<-ls.done
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := l.Release(rctx, ls.lease.Holder); err != nil {
			c.opts.Log.Warn("the operator ledger could not release this run's leases: they go stale by themselves", "err", err)
		}
	}
}

// keep renews the leases every leaseEvery until stop.
func (ls *leases) keep(ctx context.Context) {
	defer close(ls.done)
	t := time.NewTicker(leaseEvery)
	defer t.Stop()
	for {
		select {
		case <-ls.stop:
			return
		case <-ctx.Done():
			return
		case now := <-t.C:
			if _, err := ls.renew(ctx, now, false); err != nil && ctx.Err() == nil {
				ls.c.opts.Log.Debug("the operator ledger could not renew this run's leases", "err", err)
			}
		}
	}
}

// renew renews the leases and splits each number between the runs whose
// leases are live: at once when there are more, leaseSettle after there
// are fewer. It reports whether another run sends from any of them
// (first: this run has not sent yet).
func (ls *leases) renew(ctx context.Context, now time.Time, first bool) (others bool, err error) {
	if err := ls.l.Hold(ctx, ls.lease, ls.keys, ls.senders, now.Add(leaseTTL)); err != nil {
		return false, err
	}
	for i, s := range ls.senders {
		live, err := ls.l.Leases(ctx, ls.keys[i], now)
		if err != nil {
			return false, err
		}
		n := max(len(live), 1)
		others = others || n > 1
		switch was := ls.ways[s]; {
		case n > was:
			delete(ls.widen, s)
		case n < was && ls.widen[s].IsZero():
			ls.widen[s] = now.Add(leaseSettle)
			continue
		case n < was && now.Before(ls.widen[s]):
			continue
		case n == was:
			delete(ls.widen, s)
			continue
		}
		delete(ls.widen, s)
		ls.ways[s] = n
		ls.eng.Split(s, 1/float64(n))
		ls.tell(s, n, live, first)
	}
	return others, nil
}

// tell logs a number's new split.
func (ls *leases) tell(sender string, n int, live []ledger.Lease, first bool) {
	log := ls.c.opts.Log
	if n == 1 {
		log.Info(fmt.Sprintf("number %s: no other run on this machine sends from it now: this run sends at the whole %g/s", sender, ls.rate), "sender", sender)
		return
	}
	var who []string
	for _, x := range live {
		if x.Holder != ls.lease.Holder {
			who = append(who, fmt.Sprintf("pid %d (%s)", x.PID, x.Checkpoint))
		}
	}
	msg := fmt.Sprintf("number %s: %d runs on this machine send from it (this one and %s): each sends at %.4g/s of %g/s; runs on several hosts share a number through {budget}",
		sender, n, strings.Join(who, ", "), ls.rate/float64(n), ls.rate)
	if first {
		msg += fmt.Sprintf("; this run starts in %v, once the others slowed down", leaseSettle)
	}
	log.Warn(msg, "sender", sender, "runs", n)
}
