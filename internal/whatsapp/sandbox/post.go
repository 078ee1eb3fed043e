package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// posters is how many POSTs to WebhookURL may be in flight at once: Meta
// delivers webhooks concurrently.
const posters = 4

// backlog bounds the bodies waiting for each worker. Handing a body over
// never waits: Meta's send API answers whatever the webhook receiver
// does, and Meta keeps what it could not deliver yet (retrying for up to
// seven days) rather than slowing down. So a slow receiver gets every
// body, late; only past this backlog (a receiver that has stopped
// answering for long, some 200 MB of bodies) is a body given up at once
// and counted failed (Stats.WebhookFailed), as Meta gives up after its
// seven days, rather than the sandbox's memory growing without end.
const backlog = 1 << 16

// poster delivers webhook bodies to WebhookURL: each message's bodies
// through one of a few workers (so one at a time, in order), a failed
// POST again by a timer (Config.WebhookTries, WebhookBackoff). Handing a
// body over (send) never blocks, so the outbox may do it under its lock.
type poster struct {
	url, secret string
	client      *http.Client
	tries       int
	backoff     time.Duration
	after       afterFunc
	stats       *counters
	ctx         context.Context // cancelled to abandon the POSTs in flight
	cancel      context.CancelFunc
	queues      [posters]*queue
	workers     sync.WaitGroup

	mu        sync.Mutex
	idle      *sync.Cond // signalled when inflight drops to zero
	inflight  int        // bodies handed over and neither acknowledged nor given up
	abandoned bool
	timerSeq  uint64
	retries   map[uint64]func() bool // retries waiting for their timer
}

// job is one body to POST and the tries it has had.
type job struct {
	body  []byte
	queue int
	tries int
}

func newPoster(cfg Config, after afterFunc, st *counters) *poster {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = posters
	p := &poster{
		url: cfg.WebhookURL, secret: cfg.AppSecret,
		client:  &http.Client{Transport: tr, Timeout: 10 * time.Second},
		tries:   cfg.WebhookTries,
		backoff: cfg.WebhookBackoff,
		after:   after, stats: st,
		retries: map[uint64]func() bool{},
	}
	if p.tries <= 0 {
		p.tries = 6
	}
	if p.backoff <= 0 {
		p.backoff = time.Second
	}
	p.idle = sync.NewCond(&p.mu)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for i := range p.queues {
		q := newQueue(backlog)
		p.queues[i] = q
		p.workers.Add(1)
		go func() {
			defer p.workers.Done()
			for {
				j, ok := q.take()
				if !ok {
					return
				}
				p.attempt(j)
			}
		}()
	}
	return p
}

// queue is a worker's bodies to POST, first in first out: put never
// blocks (it refuses a body past the limit), take waits for one.
type queue struct {
	mu     sync.Mutex
	jobs   []job
	limit  int
	closed bool
	ready  chan struct{} // holds a token when jobs or closed may have changed
}

func newQueue(limit int) *queue {
	return &queue{limit: limit, ready: make(chan struct{}, 1)}
}

// put appends j; false when the queue is full or closed.
func (q *queue) put(j job) bool {
	q.mu.Lock()
	if q.closed || len(q.jobs) >= q.limit {
		q.mu.Unlock()
		return false
	}
	q.jobs = append(q.jobs, j)
	q.mu.Unlock()
	q.wake()
	return true
}

// take returns the first job, waiting for one; false once the queue is
// closed and empty.
func (q *queue) take() (job, bool) {
	for {
		q.mu.Lock()
		if len(q.jobs) > 0 {
			j := q.jobs[0]
			q.jobs[0] = job{} // let its body go
			q.jobs = q.jobs[1:]
			q.mu.Unlock()
			return j, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return job{}, false
		}
		<-q.ready
	}
}

// close makes take return false once the queue is empty.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wake()
}

func (q *queue) wake() {
	select {
	case q.ready <- struct{}{}:
	default: // a token is waiting already
	}
}

// wait is how long after try n (1-based) failed the next comes: at once
// after the first, as Meta says, then the backoff, doubling.
func (p *poster) wait(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	return p.backoff << min(n-2, 30)
}

// send hands body over for POSTing; key (the message) picks its worker.
// It never blocks: past the worker's backlog the body is given up and
// counted failed.
func (p *poster) send(body []byte, key uint64) {
	p.mu.Lock()
	p.inflight++
	p.mu.Unlock()
	q := int(key % posters)
	p.enqueue(job{body: body, queue: q})
}

// enqueue puts j on its worker's queue, or gives it up when the queue is
// full. j is counted in inflight.
func (p *poster) enqueue(j job) {
	if p.queues[j.queue].put(j) {
		return
	}
	p.mu.Lock()
	p.stats.whFailed.Add(1)
	p.done()
	p.mu.Unlock()
}

// attempt POSTs j once and, if that fails, sets a timer to try again or
// gives the body up.
func (p *poster) attempt(j job) {
	j.tries++
	if j.tries > 1 {
		p.stats.whRetries.Add(1)
	}
	err := p.post(j.body)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil:
		p.stats.whPosted.Add(1)
		p.done()
		return
	case p.abandoned || j.tries >= p.tries:
		p.stats.whPostErrors.Add(1)
		p.stats.whFailed.Add(1)
		p.done()
		return
	}
	p.stats.whPostErrors.Add(1)
	p.timerSeq++
	id := p.timerSeq
	p.retries[id] = p.after(p.wait(j.tries), func() {
		p.mu.Lock()
		_, ok := p.retries[id]
		delete(p.retries, id)
		p.mu.Unlock()
		if ok { // not taken by drain meanwhile
			p.enqueue(j)
		}
	})
}

// done counts a body finished. Called with p.mu held.
func (p *poster) done() {
	p.inflight--
	if p.inflight == 0 {
		p.idle.Broadcast()
	}
}

// drain waits until every body handed over is acknowledged or given up,
// or until ctx is done: then it cancels the POSTs in flight and drops the
// retries still waiting, counting them failed. Then it stops the workers.
// Nothing may be sent after drain begins.
func (p *poster) drain(ctx context.Context) {
	finished := make(chan struct{})
	go func() {
		p.mu.Lock()
		for p.inflight > 0 {
			p.idle.Wait()
		}
		p.mu.Unlock()
		close(finished)
	}()
	select {
	case <-finished:
	case <-ctx.Done():
		p.mu.Lock()
		p.abandoned = true
		// Whoever takes a retry out of the map owns it: a timer that
		// fires now finds it gone and does nothing.
		for id, stop := range p.retries {
			delete(p.retries, id)
			stop()
			p.stats.whFailed.Add(1)
			p.done()
		}
		p.mu.Unlock()
		p.cancel()
		<-finished
	}
	for _, q := range p.queues {
		q.close()
	}
	p.workers.Wait()
	p.cancel()
	p.client.CloseIdleConnections()
}

// post delivers one body to WebhookURL, signed as Meta signs it: the hex
// HMAC-SHA256 of the raw body keyed with the app secret.
func (p *poster) post(body []byte) error {
	req, err := http.NewRequestWithContext(p.ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if p.secret != "" {
		req.Header.Set("X-Hub-Signature-256", "sha256="+Sign(p.secret, body))
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("post webhook: %w", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post webhook: %s", resp.Status)
	}
	return nil
}
