package campaign

import (
	"context"
	"time"
)

// departedKey is the context key of the function Departed calls.
type departedKey struct{}

// WithDeparted returns ctx carrying f, for the sender of a message to call
// through Departed when the message's request was written to its
// connection. That can be well after the send began: a new connection is
// dialled first (with TLS, round trips of handshake), and a process that
// stalls writes late. The engine paces by when requests really left.
func WithDeparted(ctx context.Context, f func(at time.Time)) context.Context {
	return context.WithValue(ctx, departedKey{}, f)
}

// Departed tells the function ctx carries (WithDeparted), if any, that the
// request was written at at.
func Departed(ctx context.Context, at time.Time) {
	if f, ok := ctx.Value(departedKey{}).(func(time.Time)); ok && f != nil {
		f(at)
	}
}
