package inbound

import (
	"context"
	"fmt"
	"io"
)

// Fronts are what bulksend receive runs, built by the front end for the
// channels: the HTTP server of their webhooks and notifications, a
// poller of a queue, and the receiver that keeps every body they take.
type Fronts struct {
	// Server serves the HTTP fronts; nil: none (a poller alone).
	Server interface {
		Serve() error
		Close() error
	}
	// Poll polls until its context ends; nil: no poller.
	Poll func(ctx context.Context)
	// Keeper keeps the bodies; it is closed (what it kept synced) once
	// every front has stopped.
	Keeper io.Closer
}

// Receive runs the fronts until ctx ends (a poller alone: until it
// returns) or the server fails, then stops them and closes the keeper:
// every body a front answered as kept is on disk when it returns.
func Receive(ctx context.Context, f Fronts) error {
	served := make(chan error, 1)
	if f.Server != nil {
		go func() { served <- f.Server.Serve() }()
	}
	pctx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		if f.Poll != nil {
			f.Poll(pctx)
		}
	}()
	var serveErr error
	if f.Server == nil {
		<-polled
	} else {
		select {
		case <-ctx.Done():
		case serveErr = <-served:
		}
	}
	stopPolling()
	if f.Server != nil {
		f.Server.Close()
	}
	<-polled
	if err := f.Keeper.Close(); err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	if serveErr != nil {
		return fmt.Errorf("receive: %w", serveErr)
	}
	return nil
}
