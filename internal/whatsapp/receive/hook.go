package receive

import (
	"context"
	"log/slog"
	"sync"
)

// hookBacklog is how many bytes of kept bodies may wait for OnKept (or be
// in its hands) before later ones are not given to it.
const hookBacklog = 64 << 20

// hook gives kept bodies to Config.OnKept from a goroutine of its own.
type hook struct {
	fn      func([][]byte)
	backlog int64 // hookBacklog, but in tests
	log     *slog.Logger
	st      *stats

	mu       sync.Mutex
	bodies   [][]byte
	bytes    int64 // of bodies waiting or in fn's hands
	dropped  int64 // since the last time fn caught up
	stopping bool
	wake     chan struct{}
	done     chan struct{}
	once     sync.Once
}

func newHook(fn func([][]byte), backlog int64, log *slog.Logger, st *stats) *hook {
	h := &hook{fn: fn, backlog: backlog, log: log, st: st, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go h.run()
	return h
}

// add hands the bodies of ps, just kept, to the hook, or drops them if
// it is too far behind.
func (h *hook) add(ps []*pending) {
	var n int64
	for _, p := range ps {
		n += int64(len(p.line) - 1)
	}
	h.mu.Lock()
	if h.bytes+n > h.backlog {
		if h.dropped == 0 {
			h.log.Warn("OnKept is too far behind: kept bodies are not applied live until it catches up (the log has them: replay it)")
		}
		h.dropped += int64(len(ps))
		h.mu.Unlock()
		h.st.hookDropped.Add(int64(len(ps)))
		return
	}
	for _, p := range ps {
		body := p.line[:len(p.line)-1]
		h.bodies = append(h.bodies, body[:len(body):len(body)]) // an append by fn cannot reach the newline
	}
	h.bytes += n
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// stop gives fn what is waiting, then returns.
func (h *hook) stop() {
	h.once.Do(func() {
		h.mu.Lock()
		h.stopping = true
		h.mu.Unlock()
		select {
		case h.wake <- struct{}{}:
		default:
		}
	})
	<-h.done
}

func (h *hook) run() {
	defer close(h.done)
	for {
		h.mu.Lock()
		if len(h.bodies) == 0 {
			stopping := h.stopping
			h.mu.Unlock()
			if stopping {
				return
			}
			<-h.wake
			continue
		}
		batch := h.bodies
		h.bodies = nil
		h.mu.Unlock()

		h.fn(batch)

		var n int64
		for _, b := range batch {
			n += int64(len(b))
		}
		h.mu.Lock()
		h.bytes -= n
		if h.dropped > 0 && len(h.bodies) == 0 {
			h.log.Warn("OnKept caught up: some kept bodies were not applied live; replay the log to apply them", "bodies", h.dropped)
			h.dropped = 0
		}
		h.mu.Unlock()
	}
}

// budget is a pool of bytes that POSTs take their body's size from before
// reading it and give back once it is kept or refused.
type budget struct {
	mu      sync.Mutex
	free    int64
	waiting int
	changed chan struct{} // closed, and replaced, when bytes come back to waiters
}

func newBudget(n int64) *budget { return &budget{free: n, changed: make(chan struct{})} }

// acquire takes n bytes, waiting until they are free or ctx is done.
func (b *budget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.free >= n {
			b.free -= n
			b.mu.Unlock()
			return nil
		}
		b.waiting++
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		b.mu.Lock()
		b.waiting--
		b.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// release gives n bytes back.
func (b *budget) release(n int64) {
	b.mu.Lock()
	b.free += n
	if b.waiting > 0 {
		close(b.changed)
		b.changed = make(chan struct{})
	}
	b.mu.Unlock()
}
