package cli

import (
	"context"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/inbound"
	"github.com/bulksend/bulksend/internal/run"
	"github.com/bulksend/bulksend/internal/whatsapp/pricing"
)

// channelEntry is one channel as the command line knows it: its flags,
// how its run.Channel is built from them, its words and what it prints.
// The registry below is the one place that branches on the channel.
type channelEntry struct {
	name campaign.Channel
	// token: the channel's run reads the access token (WhatsApp).
	token bool
	// check checks the flags of a run of this channel.
	check func(o *runOptions) error
	// build makes the channel of a run.
	build func(in channelInput) (run.Channel, error)
	// noSender is the hint for a first run without senders.
	noSender string
	// channelWords says the channel's errors in the operator's words:
	// the flags that fix them.
	channelWords func(err error) error
	// plan prints a dry run's plan (card: --rate-card, or nil).
	plan func(ctx context.Context, ios *IO, p *run.Plan, card *pricing.Card) error
	// inbound reads what comes back from the provider: the bodies
	// receive keeps, the logs reconcile reads.
	inbound inbound.Channel
	// defaultRate is --rate when it is not given, if not the flag's.
	defaultRate float64
	// parts: the channel counts message parts (status shows them; its
	// campaigns have no API choice).
	parts bool
	// endpoint is the provider's URL when a flag or the environment
	// points the run elsewhere than the real provider ("" for it).
	endpoint func(o *runOptions, ios *IO) string
}

// channelInput is what building a run's channel needs beyond the flags.
type channelInput struct {
	o     *runOptions
	ios   *IO
	waba  string // --waba or $WHATSAPP_WABA_ID
	token string // the access token, "" when none is needed or a dry run has none
	first bool   // the campaign's first run: nothing stored yet
}

// channels is the registry of channels, by the name the checkpoint stores.
var channels = map[campaign.Channel]*channelEntry{
	campaign.WhatsApp: whatsappEntry,
	campaign.SMS:      smsEntry,
}

// inboundChannels are the channels' readers of what comes back, in the
// order a kept body is offered to them: WhatsApp's bodies name their
// object, SMS's take the rest.
func inboundChannels() []inbound.Channel {
	return []inbound.Channel{whatsappEntry.inbound, smsEntry.inbound}
}

// channelOf is the entry of a stored campaign's channel ("" is WhatsApp).
func channelOf(stored string) *channelEntry {
	name, err := campaign.ParseChannel(stored)
	if err != nil {
		name = campaign.WhatsApp
	}
	return channels[name]
}

// hintError is a fatal error (exit 1) with advice for the operator.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }
func (e *hintError) Hint() string  { return e.hint }
