package run

import (
	"context"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/store"
)

// Channel is what a run needs of a channel: WhatsApp's template messages,
// SMS. Each is built by the front end from its options, and implements
// this in its own folder (internal/whatsapp/channel, internal/sms/channel).
// A channel may also implement Checker, Preflighter and OptOutSyncer.
type Channel interface {
	// Name is the channel the checkpoint stores.
	Name() campaign.Channel
	// CheckSender says whether id can be one of the channel's senders (a
	// CSV's from cell): it becomes part of a request.
	CheckSender(id string) error
	// Bind binds the first run's CSV parameter columns to the channel's
	// message (a template's slots, an SMS body's placeholders).
	Bind(ctx context.Context, columns []string) (Binding, error)
	// Pinned are the channel's settings that the first run fixed, with
	// this run's values, for a resume to compare.
	Pinned(s store.Settings) []Pinned
	// Resume checks a stored campaign against what may have changed since
	// (a template paused or edited).
	Resume(ctx context.Context, s store.Settings) error
	// Sender returns what sends c's messages: the provider's client, or
	// its sandbox in this process.
	Sender(ctx context.Context, c *Campaign) (*Sender, error)
}

// Binding is the CSV bound to a channel's message on the first run.
type Binding interface {
	// Pin writes what the binding fixes into the first run's settings.
	Pin(s *store.Settings)
	// Row checks one row's parameter cells, and measures them: a row they
	// cannot fill is skipped with the reason (Row.Skip, Row.SkipKind); an
	// SMS row gets its parts and encoding.
	Row(r *store.Row, cells []string)
}

// Sender sends a campaign's messages.
type Sender struct {
	engine.Sender
	// Name says where the requests go, for the log: never a credential.
	Name string
	// Standard is what every sender of the channel accepts a second,
	// whatever its level (engine.Config.Standard); 0: none. Proven are
	// the senders known to accept more.
	Standard float64
	Proven   []string
	// Stop, if not nil, is called after the last send: it stops a sandbox,
	// whose error says a log it wrote is short.
	Stop func() error
}

// Checker is a channel that can say, before anything is made, whether a
// run can reach its provider (a region, credentials).
type Checker interface {
	Check(ctx context.Context) error
}

// Preflighter is a channel that reads its senders (health, limits) before
// the first send, and in a dry run. It decides itself whether this run
// needs a read, and whether to keep it (not when c.ReadOnly).
type Preflighter interface {
	Preflight(ctx context.Context, c *Campaign) error
}

// Marketer is a channel that can tell whether a campaign is marketing
// (opt-outs of marketing only skip only such a campaign's rows). A
// channel that cannot tell is taken as marketing: an opt-out is honoured
// when in doubt.
type Marketer interface {
	Marketing(s store.Settings) bool
}

// OptOutSyncer is a channel that can read its senders' opt-out lists and
// skip the rows on them (reason opted_out), when its options ask it to.
type OptOutSyncer interface {
	SyncOptOuts(ctx context.Context, c *Campaign) error
}
