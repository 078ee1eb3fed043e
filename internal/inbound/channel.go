package inbound

import (
	"context"
	"io"
	"log/slog"

	"github.com/bulksend/bulksend/internal/optout"
	"github.com/bulksend/bulksend/internal/reconcile"
)

// Channel is one channel's side of what comes back from its provider:
// how the bodies a receiver keeps, and the logs a reconcile reads, are
// read. Each channel's entry in the front end's registry gives one.
type Channel struct {
	// Owns reports whether a body bulksend receive kept is this
	// channel's; nil: any body (the channel whose bodies name nothing,
	// asked last).
	Owns func(body []byte) bool
	// Statuses reads the bodies in r (one after another): their statuses
	// as a reconcile.Source, and what recipients said back to hear, in
	// body order (keywords: the stop and start words).
	Statuses func(r io.Reader, keywords optout.Keywords, hear func(optout.Heard)) reconcile.Source
	// ReadLog reads the provider log at path ("-": stdin) into rc, what
	// recipients said back to hear. A log that holds nothing of the
	// provider's is an error: nothing to apply is not all well.
	ReadLog func(ctx context.Context, rc *reconcile.Reconciler, path string, stdin io.Reader, log *slog.Logger, keywords optout.Keywords, hear func(optout.Heard)) error
	// EachSender: statuses are matched by the campaign's senders
	// (WhatsApp's phone-number IDs). Else every status is looked up: SMS
	// events name the number a message left from, not the pool or ID
	// given.
	EachSender bool
}

// owner is the index in chs of the channel that owns body: the first
// whose Owns says so, or one without Owns; -1 for none.
func owner(chs []Channel, body []byte) int {
	for i, ch := range chs {
		if ch.Owns == nil || ch.Owns(body) {
			return i
		}
	}
	return -1
}
