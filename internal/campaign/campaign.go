// Package campaign holds the vocabulary every part of bulksend shares: the
// states a recipient moves through, why a row is skipped, the message a
// channel sends, the classes of send errors, and the in-doubt policy. It
// imports nothing of ours and knows no provider.
package campaign

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Status is the state of one recipient row. Every row is in exactly one.
type Status string

const (
	Pending   Status = "pending"   // not yet sent, or a retry is scheduled (next_attempt_at)
	Sending   Status = "sending"   // claimed; its request may be on the wire
	InDoubt   Status = "in_doubt"  // the request may have reached Meta, no answer came
	Sent      Status = "sent"      // accepted by the API (a wamid), not yet known delivered
	Delivered Status = "delivered" // a status webhook said delivered
	Read      Status = "read"      // a status webhook said read
	Failed    Status = "failed"    // permanent failure, with code and title
	Skipped   Status = "skipped"   // never sent: invalid, duplicate or suppressed (reason kept)
)

// Statuses lists every status in report order.
var Statuses = []Status{Pending, Sending, InDoubt, Sent, Delivered, Read, Failed, Skipped}

// Settled reports whether the row needs no more work from run.
func (s Status) Settled() bool {
	switch s {
	case Sent, Delivered, Read, Failed, Skipped:
		return true
	}
	return false
}

// SkipKind groups the reasons a row is skipped. It is stored beside the
// reason's text, so that rewording a reason never regroups rows; its values
// are keys of `status --json`'s skipped_by_reason and never change.
type SkipKind string

const (
	SkipInvalid   SkipKind = "invalid"   // the phone is not a valid number
	SkipDuplicate SkipKind = "duplicate" // an earlier row has the same phone
	SkipExcluded  SkipKind = "excluded"  // the phone is on the suppression list
	SkipNoSender  SkipKind = "no sender" // no sender number for the row
	SkipParameter SkipKind = "parameter" // a template parameter's value breaks Meta's rules
	SkipOptedOut  SkipKind = "opted_out" // the phone is on the sender's opt-out list (SMS --sync-opt-outs)
	SkipTooLong   SkipKind = "too long"  // the SMS body is over the provider's limit of parts
	SkipExpired   SkipKind = "expired"   // still pending at the campaign's end (--end-at with --expire)
	SkipNoWindow  SkipKind = "no window" // the send window never opens in all of the phone's time zones at once
)

// Channel is how a campaign's messages travel. It is fixed on the first run.
type Channel string

const (
	WhatsApp Channel = "whatsapp" // WhatsApp Cloud API template messages
	SMS      Channel = "sms"      // text messages through AWS End User Messaging SMS
)

// ParseChannel parses a channel by its name ("" is WhatsApp, the channel
// of checkpoints made before there was a choice).
func ParseChannel(s string) (Channel, error) {
	switch c := Channel(s); c {
	case "", WhatsApp:
		return WhatsApp, nil
	case SMS:
		return c, nil
	}
	return "", fmt.Errorf("invalid channel %q: want whatsapp or sms", s)
}

// Message is one message to one recipient: what fills it (a template's
// slots, an SMS body's placeholders) is the channel's, set on its sender.
type Message struct {
	Row    int64
	From   string   // the sender: a phone-number ID, an origination identity
	To     string   // E.164
	Params []string // the row's parameter cells, in order
	Ref    Ref      // the campaign and row, for the statuses to come
}

// Class says what a failed send means for its row and for the run. The
// adapter that made the send classifies its own errors (see SendError); the
// engine decides by class alone, never by a provider's code.
type Class int

const (
	// Unanswered is the zero value: the request may have reached the
	// provider and no answer came (timeout, connection lost), so its row
	// is in doubt. An error nobody classified counts as unanswered: it is
	// never resent silently.
	Unanswered  Class = iota
	NeverLeft         // the request never left this machine: safe to send again
	Permanent         // this recipient failed for good; the run goes on
	Transient         // refused for now: retry this recipient (at once while rare, else with backoff)
	Throttled         // the sender is over its rate: slow it, retry without spending an attempt
	PairLimited       // too many messages to this recipient: retry it later
	Fatal             // no row can succeed (token, template, account): stop the run
	// SenderRested: this sender number may not send now (restricted for
	// spam, say): rest it for the rest of the run; its rows wait, other
	// numbers go on. No attempt is spent.
	SenderRested
	// Paused: the provider asks for nothing more to be sent for a while
	// (SendError.RestFor: a template still syncing, a call budget spent):
	// the run rests that long. No attempt is spent.
	Paused
)

func (c Class) String() string {
	switch c {
	case Unanswered:
		return "in doubt"
	case NeverLeft:
		return "never left"
	case Permanent:
		return "permanent"
	case Transient:
		return "transient"
	case Throttled:
		return "throttled"
	case PairLimited:
		return "pair-limited"
	case Fatal:
		return "fatal"
	case SenderRested:
		return "sender rested"
	case Paused:
		return "paused"
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// SendError is a failed send as the channel's adapter classified it. Code
// and Title are what reports show; Err is the adapter's own error, which
// may carry more (an operator hint, a trace ID).
type SendError struct {
	Class Class
	Code  int    // the provider's error code; 0 if it gave none
	Title string // short meaning, e.g. "Message undeliverable"
	// Reason is a stable name for a failure that reports group apart
	// (FailMarketingCap), "" for none.
	Reason string
	// RestFor is how long the provider asks to send nothing more (Paused,
	// or any answer carrying such a request); 0 for none.
	RestFor time.Duration
	Err     error
}

// Reasons a row failed that reports name apart from its code's title.
const (
	// FailMarketingCap: the recipient had their share of marketing
	// messages (WhatsApp 131049). Sending again soon makes it worse: no run
	// resends it.
	FailMarketingCap = "marketing_cap"
	// FailThrottleExhausted: the provider throttled every try the channel
	// allows (SMS: 5); the seed's "hard throttle".
	FailThrottleExhausted = "throttle_exhausted"
	// FailOptedOut: the recipient opted out of messages from the sender
	// (SMS: STOP). Never retried, never a success.
	FailOptedOut = "opted_out"
	// FailStoppedMarketing: the recipient stopped marketing messages from
	// the business (WhatsApp 131050); other messages may still go.
	FailStoppedMarketing = "stopped_marketing"
)

// Receipt is a provider's acceptance of a message.
type Receipt struct {
	ID string // the provider's message ID
	// Held: accepted but held back before delivery (WhatsApp's template
	// pacing); it may still fail.
	Held bool
	// RestFor is how long the provider asks to send nothing more through
	// this account (a call budget spent); 0 for none.
	RestFor time.Duration
}

// Pricing is how the provider says it billed a message.
type Pricing struct {
	Category string // e.g. marketing, marketing_lite, utility, authentication
	Type     string // e.g. regular, free_customer_service
	Billable *bool  // nil when not said
	// What an SMS event says was charged: message parts (0 when not said)
	// and the price with carrier fees in US dollars (nil when not said).
	Parts  int
	Charge *float64
}

// Unpriced reports whether p says nothing.
func (p Pricing) Unpriced() bool {
	return p.Category == "" && p.Type == "" && p.Billable == nil && p.Parts == 0 && p.Charge == nil
}

func (e *SendError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Title
}

func (e *SendError) Unwrap() error { return e.Err }

// Policy says what to do with rows whose outcome is unknown.
type Policy string

const (
	Hold   Policy = "hold"   // keep them in doubt until a webhook log settles them
	Resend Policy = "resend" // send again, accepting a possible duplicate
	Fail   Policy = "fail"   // mark them failed, accepting a possible miss
)

// ParsePolicy parses a policy by its name.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case Hold, Resend, Fail:
		return p, nil
	}
	return "", fmt.Errorf("invalid policy %q: want hold, resend or fail", s)
}

// PolicyResult counts the rows in doubt that a policy settled, by what it
// made of them.
type PolicyResult struct {
	Resent      int64 // made pending again (Resend)
	Failed      int64 // failed by the policy (Fail)
	LastAttempt int64 // failed because their last attempt was in doubt (Resend with no attempts left)
}

// Total is the number of rows the policy changed.
func (r PolicyResult) Total() int64 { return r.Resent + r.Failed + r.LastAttempt }

// Ref is a row of a campaign: what a message carries so that the
// provider's statuses of it find the row again. Each channel's adapter
// encodes it in a field of its own (WhatsApp's biz_opaque_callback_data,
// AWS's Context); the zero Ref is none.
type Ref struct {
	Campaign string
	Row      int64
}

// IsZero reports whether r is no row.
func (r Ref) IsZero() bool { return r == Ref{} }

// String is r as text, "bulksend:CAMPAIGN:ROW", for a field that holds it
// whole (WhatsApp's callback data); "" for the zero Ref.
func (r Ref) String() string {
	if r.IsZero() {
		return ""
	}
	return "bulksend:" + r.Key()
}

// Key is r without the "bulksend:" that marks it, "CAMPAIGN:ROW", for a
// field whose name marks it already (AWS's Context key "bulksend").
func (r Ref) Key() string { return r.Campaign + ":" + strconv.FormatInt(r.Row, 10) }

// ParseRef reads String's text. ok is false for text bulksend did not
// write.
func ParseRef(s string) (Ref, bool) {
	key, found := strings.CutPrefix(s, "bulksend:")
	if !found {
		return Ref{}, false
	}
	return ParseRefKey(key)
}

// ParseRefKey reads Key's text. ok is false for text bulksend did not
// write.
func ParseRefKey(s string) (Ref, bool) {
	id, num, found := strings.Cut(s, ":")
	if !found || id == "" {
		return Ref{}, false
	}
	row, err := strconv.ParseInt(num, 10, 64)
	if err != nil || row <= 0 {
		return Ref{}, false
	}
	return Ref{Campaign: id, Row: row}, true
}

// Counts is the number of rows in each status. They add up to Total.
type Counts struct {
	Total     int64 `json:"total"`
	Pending   int64 `json:"pending"`
	Sending   int64 `json:"sending"`
	InDoubt   int64 `json:"in_doubt"`
	Sent      int64 `json:"sent"`
	Delivered int64 `json:"delivered"`
	Read      int64 `json:"read"`
	Failed    int64 `json:"failed"`
	Skipped   int64 `json:"skipped"`
}

// Add counts n rows of status s.
func (c *Counts) Add(s Status, n int64) {
	c.Total += n
	switch s {
	case Pending:
		c.Pending += n
	case Sending:
		c.Sending += n
	case InDoubt:
		c.InDoubt += n
	case Sent:
		c.Sent += n
	case Delivered:
		c.Delivered += n
	case Read:
		c.Read += n
	case Failed:
		c.Failed += n
	case Skipped:
		c.Skipped += n
	}
}

// Unfinished reports whether rows still need a run or a reconcile.
func (c Counts) Unfinished() bool { return c.Pending+c.Sending+c.InDoubt > 0 }

// Buckets are the three outcomes an SMS operator counts, beside the rows
// still unfinished; the four add up to Total.
type Buckets struct {
	Success      int64 `json:"success"`       // sent, delivered or read
	HardThrottle int64 `json:"hard_throttle"` // failed with FailThrottleExhausted
	Other        int64 `json:"other"`         // every other failed row, and the skipped ones
	Unfinished   int64 `json:"unfinished"`    // pending, sending or in doubt
}

// BucketsOf sorts c into buckets; hardThrottled is how many of its failed
// rows failed with FailThrottleExhausted.
func BucketsOf(c Counts, hardThrottled int64) Buckets {
	return Buckets{
		Success:      c.Sent + c.Delivered + c.Read,
		HardThrottle: hardThrottled,
		Other:        c.Failed - hardThrottled + c.Skipped,
		Unfinished:   c.Pending + c.Sending + c.InDoubt,
	}
}

// Backoff is the delay before retry n (1-based) of a row: base·growth^(n-1),
// at most max (none when max ≤ 0), times u, uniform in [0,1) for full
// jitter, injected so that tests are exact (1: no jitter). The engine's
// three waits are this: transient errors double (growth 2), throttled SMS
// rows quadruple (2, 8, 32, 128 s between 5 tries), and a pair-limited
// row waits 4^(n-1) s without jitter, as Meta advises.
func Backoff(n int, base, max time.Duration, growth int, u float64) time.Duration {
	d := base
	for i := 1; i < n && (max <= 0 || d < max); i++ {
		d *= time.Duration(growth)
	}
	if max > 0 && d > max {
		d = max
	}
	return time.Duration(u * float64(d))
}

// Reply is what a recipient sent back after a campaign's message: a text,
// a tapped button. It is recorded on the row of the message it answers
// (by message ID when the provider names it, else the last message sent
// to the phone before it).
type Reply struct {
	Phone     string    // E.164
	MessageID string    // the message it answers, when the provider says; "" if not
	At        time.Time // when it was sent
	Text      string    // the tapped button's label, or the text
}
