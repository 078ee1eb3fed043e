package receive

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestBudget: a body that does not fit waits until bytes come back, or
// until its request is given up; a wait never takes part of the bytes.
func TestBudget(t *testing.T) {
	b := newBudget(10)
	if err := b.acquire(context.Background(), 6); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(context.Background(), 6) }()
	select {
	case err := <-got:
		t.Fatalf("6 bytes of 4 free taken: %v", err)
	case <-time.After(20 * time.Millisecond): // it waits (a wrong budget answers at once)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.acquire(ctx, 5); !errors.Is(err, context.Canceled) {
		t.Errorf("a request given up while waiting: %v, want context.Canceled", err)
	}
	if err := b.acquire(context.Background(), 4); err != nil { // what is free is still free
		t.Fatal(err)
	}
	b.release(4)
	b.release(6)
	if err := <-got; err != nil {
		t.Errorf("the waiting body once bytes came back: %v", err)
	}
	if b.free != 4 {
		t.Errorf("%d bytes free, want 4", b.free)
	}
}
