package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// hungReceiver is a webhook receiver that never answers: each POST waits
// until the request is cancelled or the test ends. got counts the POSTs
// it has had.
func hungReceiver(t *testing.T) (*httptest.Server, *atomic.Int64) {
	release := make(chan struct{})
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before srv.Close, which waits for the handlers
	return srv, &got
}

// A receiver that never answers holds up no send, and Shutdown's deadline
// bounds the wait for it. The sandbox's webhooks for 2,600 messages (two
// bodies each: sent and delivered, at once) outnumber what the posters
// once held before handing a body over blocked, under the outbox's lock
// that every accepted send needs: sends stalled from about the 2,050th.
func TestHungReceiverStallsNoSend(t *testing.T) {
	const n = 2600
	srv, _ := hungReceiver(t)
	s := New(Config{
		Rate: -1, PairInterval: -1, WebhookURL: srv.URL,
		SentDelay: Delay{Mean: -1}, DeliveredDelay: Delay{Mean: -1},
	})
	sent := make(chan error, 1)
	go func() {
		for i := range n {
			if a := send(s, fmt.Sprint(16505550000+i), ""); a.status != http.StatusOK {
				sent <- fmt.Errorf("send %d: %v", i+1, a)
				return
			}
		}
		sent <- nil
	}()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("%d sends did not complete in 2 minutes with a receiver that never answers (sandbox stats %+v)", n, s.Stats())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(ctx) }()
	select {
	case err := <-shut:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Shutdown with a 200ms deadline still waiting after a minute for a receiver that never answers")
	}
	st := s.Stats()
	if st.Webhooks < 2*n || st.WebhookFailed != st.Webhooks || st.WebhookPosted != 0 {
		t.Errorf("stats %+v; want at least %d webhooks, all failed", st, 2*n)
	}
}

// Past a worker's backlog, a body is given up at once and counted failed:
// handing it over does not wait.
func TestPosterBacklogFull(t *testing.T) {
	srv, got := hungReceiver(t)
	var st counters
	p := newPoster(Config{WebhookURL: srv.URL}, realAfter, &st)
	for _, q := range p.queues {
		q.mu.Lock()
		q.limit = 2
		q.mu.Unlock()
	}
	p.send([]byte(`{"n":1}`), 0)
	for deadline := time.Now().Add(time.Minute); got.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first body was never posted")
		}
	}
	// The worker waits on the first; two wait in its queue; three are
	// given up.
	done := make(chan struct{})
	go func() {
		for i := 2; i <= 6; i++ {
			p.send(fmt.Appendf(nil, `{"n":%d}`, i), 4) // the same worker: 4 % posters == 0
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("handing bodies over to a full queue blocked")
	}
	if n := st.whFailed.Load(); n != 3 {
		t.Errorf("%d bodies given up, want 3", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	p.drain(ctx)
	if n, posted := st.whFailed.Load(), st.whPosted.Load(); n != 6 || posted != 0 {
		t.Errorf("after drain: %d failed, %d posted; want 6 failed", n, posted)
	}
}
