package sandbox

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Delay is a random delay: Mean ± a uniform Jitter, never below zero. The
// zero Delay stands for a default where Config says so; a negative Mean
// means no delay at all.
type Delay struct {
	Mean, Jitter time.Duration
}

// The default timing of status webhooks (Config.SentDelay…): sent 0–1 s
// after acceptance, delivered 1–3 s after sent, read 5–30 s after
// delivered.
var (
	defaultSentDelay      = Delay{Mean: 500 * time.Millisecond, Jitter: 500 * time.Millisecond}
	defaultDeliveredDelay = Delay{Mean: 2 * time.Second, Jitter: time.Second}
	defaultReadDelay      = Delay{Mean: 17500 * time.Millisecond, Jitter: 12500 * time.Millisecond}
	// What a recipient sends back comes 2–10 s after the last status.
	defaultReplyDelay = Delay{Mean: 6 * time.Second, Jitter: 4 * time.Second}
)

// or is d, def when d is zero, or no delay when d's Mean is negative.
func (d Delay) or(def Delay) Delay {
	switch {
	case d == Delay{}:
		return def
	case d.Mean < 0:
		return Delay{}
	}
	return d
}

// at is the delay for a uniform draw u in [0, 1): Mean-Jitter at 0,
// Mean+Jitter towards 1, clamped at zero.
func (d Delay) at(u float64) time.Duration {
	return max(d.Mean+time.Duration((2*u-1)*float64(d.Jitter)), 0)
}

// afterFunc runs f after d in its own goroutine and returns what stops it,
// as time.AfterFunc does. Tests fire them by hand.
type afterFunc func(d time.Duration, f func()) (stop func() bool)

func realAfter(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// outbox emits status webhooks when they happen and writes Accepted
// records as messages are accepted. Each message with deliveries to come
// has one timer, set for its next delivery; when it fires, the emitter
// goroutine emits that delivery (and any others of the message already
// due) and sets the next. So the bodies of one message arrive in their
// planned order, and the serialising is done by one long-lived goroutine;
// the lock keeps lines whole and in the order emitted.
type outbox struct {
	now    func() time.Time
	after  afterFunc // sets the timers
	stats  *counters
	wabaID string
	hooks  bool    // Webhooks or WebhookURL: statuses are emitted
	post   *poster // nil without WebhookURL

	pending atomic.Int64 // deliveries planned, not yet emitted (Stats)

	mu                 sync.Mutex
	webhooks, accepted *bufio.Writer
	err                error // the first write error
	closed             bool  // Close has emitted everything; later adds are dropped
	seq                uint64
	plans              map[uint64]*plan // messages with deliveries to come

	due     chan due      // from the timers to the emitter goroutine
	quit    chan struct{} // closed by close: the emitter and timers stop
	stopped chan struct{} // closed when the emitter goroutine has returned
}

// due is a plan whose timer fired, or a barrier (settle).
type due struct {
	seq     uint64
	barrier chan struct{}
}

func newOutbox(cfg Config, now func() time.Time, after afterFunc, st *counters) *outbox {
	o := &outbox{
		now: now, after: after, stats: st,
		wabaID:  cmp.Or(cfg.WABAID, DefaultWABAID),
		hooks:   cfg.Webhooks != nil || cfg.WebhookURL != "",
		plans:   map[uint64]*plan{},
		due:     make(chan due, 4096),
		quit:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	if o.hooks {
		go o.emitter()
	} else {
		close(o.stopped) // Accepted only: nothing is timed
	}
	if cfg.Webhooks != nil {
		o.webhooks = bufio.NewWriter(cfg.Webhooks)
	}
	if cfg.Accepted != nil {
		o.accepted = bufio.NewWriter(cfg.Accepted)
	}
	if cfg.WebhookURL != "" {
		o.post = newPoster(cfg, after, st)
	}
	return o
}

// add writes an accepted message's record (if rec is not nil) and
// schedules its webhooks (if p is not nil). After close it does nothing:
// the message was accepted as the sandbox stopped.
func (o *outbox) add(rec []byte, p *plan) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	if rec != nil {
		o.write(o.accepted, rec)
		o.flush()
	}
	if p == nil || len(p.arrivals) == 0 {
		return
	}
	o.seq++
	p.seq = o.seq
	o.plans[p.seq] = p
	o.pending.Add(int64(len(p.arrivals)))
	o.arm(p, o.now())
}

// arm sets p's timer for its next delivery. Called with o.mu held.
func (o *outbox) arm(p *plan, now time.Time) {
	d := due{seq: p.seq}
	p.stop = o.after(max(p.arrivals[p.next].at.Sub(now), 0), func() {
		select {
		case o.due <- d:
		case <-o.quit:
		}
	})
}

// emitter fires the plans whose timers fired, in the order they did.
func (o *outbox) emitter() {
	defer close(o.stopped)
	for {
		select {
		case d := <-o.due:
			if d.barrier != nil {
				close(d.barrier)
				continue
			}
			o.fire(d.seq)
		case <-o.quit:
			return
		}
	}
}

// settle returns once the emitter has fired every timer that fired before
// it was called: for tests, whose timers fire when the test says.
func (o *outbox) settle() {
	b := make(chan struct{})
	select {
	case o.due <- due{barrier: b}:
	case <-o.quit:
		return
	}
	select {
	case <-b:
	case <-o.quit:
	}
}

// fire emits the next delivery of plan seq, its time having come, and the
// others of the message already due, then sets the timer for the rest.
func (o *outbox) fire(seq uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p, ok := o.plans[seq]
	if !ok {
		return // close took it
	}
	now := o.now()
	o.deliver(p, now)
	for p.next < len(p.arrivals) && !p.arrivals[p.next].at.After(now) {
		o.deliver(p, now)
	}
	if p.next < len(p.arrivals) {
		o.arm(p, now)
	} else {
		delete(o.plans, seq)
	}
	o.flush()
}

// deliver emits p's next delivery at now: the status's body, stamped with
// the time the status happened or, if that is still to come (a timer
// ahead of the clock, or close), with now; a duplicate is the same body
// again. It is written to Webhooks and handed to the poster, which never
// blocks (so a receiver that never answers holds up no send). Called with
// o.mu held.
func (o *outbox) deliver(p *plan, now time.Time) {
	a := p.arrivals[p.next]
	p.next++
	o.pending.Add(-1)
	body := p.statuses[a.status].body
	if !a.dup || body == nil {
		stamp := p.statuses[a.status].at
		if stamp.After(now) {
			stamp = now
		}
		body = p.body(a.status, stamp, o.wabaID)
	}
	o.stats.webhooks.Add(1)
	o.write(o.webhooks, body)
	if o.post != nil {
		o.post.send(body, p.seq)
	}
}

// close emits every delivery still to come at once, earliest planned
// first (so each message's in its order), then waits for the poster until
// ctx is done (see Server.Shutdown): handing the bodies to the poster
// never blocks, whatever the receiver does. It returns the first write
// error.
func (o *outbox) close(ctx context.Context) error {
	o.mu.Lock()
	o.closed = true
	type next struct {
		at  time.Time
		seq uint64
		p   *plan
	}
	var all []next
	for _, p := range o.plans {
		if p.stop != nil {
			p.stop()
		}
		for _, a := range p.arrivals[p.next:] {
			all = append(all, next{a.at, p.seq, p})
		}
	}
	// Stable within a plan: its arrivals are already in order.
	slices.SortStableFunc(all, func(a, b next) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.seq, b.seq))
	})
	now := o.now()
	for _, n := range all {
		o.deliver(n.p, now)
	}
	clear(o.plans)
	o.flush()
	err := o.err
	close(o.quit)
	o.mu.Unlock()
	select {
	case <-o.stopped: // at once: the emitter finds nothing left to fire
	case <-ctx.Done(): // drain gives up the POSTs at once too
	}
	if o.post != nil {
		o.post.drain(ctx)
	}
	return err
}

// write writes one line to w (if set). Called with o.mu held.
func (o *outbox) write(w *bufio.Writer, line []byte) {
	if w == nil || o.err != nil {
		return
	}
	w.Write(line)
	if err := w.WriteByte('\n'); err != nil {
		o.err = fmt.Errorf("write sandbox output: %w", err)
	}
}

// flush flushes what is written, so a reader of the file sees each line
// when it is emitted. Called with o.mu held.
func (o *outbox) flush() {
	for _, w := range []*bufio.Writer{o.webhooks, o.accepted} {
		if w != nil && o.err == nil {
			if err := w.Flush(); err != nil {
				o.err = fmt.Errorf("write sandbox output: %w", err)
			}
		}
	}
}
