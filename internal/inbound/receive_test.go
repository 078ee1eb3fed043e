package inbound

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// server is a Server whose Serve returns err once closed, or at once when
// fail is set.
type server struct {
	fail   error
	closed chan struct{}
	once   sync.Once
}

func (s *server) Serve() error {
	if s.fail != nil {
		return s.fail
	}
	<-s.closed
	return nil
}

func (s *server) Close() error { s.once.Do(func() { close(s.closed) }); return nil }

// keeper records what had stopped when it was closed.
type keeper struct {
	srv          *server
	polled       *bool
	serverClosed bool
	pollerDone   bool
}

func (k *keeper) Close() error {
	select {
	case <-k.srv.closed:
		k.serverClosed = true
	default:
	}
	k.pollerDone = *k.polled
	return nil
}

// TestReceiveStopsFrontsFirst: the keeper is closed once the server and
// the poller have stopped, so every body they answered is kept; a
// server's failure is returned.
func TestReceiveStopsFrontsFirst(t *testing.T) {
	srv := &server{closed: make(chan struct{})}
	var polled bool
	k := &keeper{srv: srv, polled: &polled}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- Receive(ctx, Fronts{Server: srv, Keeper: k, Poll: func(ctx context.Context) {
			close(started)
			<-ctx.Done()
			polled = true
		}})
	}()
	<-started
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !k.serverClosed || !k.pollerDone {
		t.Errorf("the keeper was closed before the fronts stopped: server closed %v, poller done %v", k.serverClosed, k.pollerDone)
	}

	boom := errors.New("boom")
	failing := &server{fail: boom, closed: make(chan struct{})}
	err := Receive(context.Background(), Fronts{Server: failing, Keeper: &keeper{srv: failing, polled: new(bool)}})
	if !errors.Is(err, boom) || err.Error() != "receive: boom" {
		t.Errorf("a failing server: %v", err)
	}
}
