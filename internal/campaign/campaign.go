// Package campaign holds bulksend's domain types: the states a recipient
// moves through, the message the engine sends, and the meaning of the
// errors the Cloud API answers with. It imports nothing of ours.
package campaign

import (
	"context"
	"errors"
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

// Rank orders the statuses a webhook can report, so that they apply
// monotonically: a late "sent" never moves a read row back. Statuses that
// are not part of that order rank 0.
func (s Status) Rank() int {
	switch s {
	case Sent:
		return 1
	case Delivered:
		return 2
	case Read:
		return 3
	}
	return 0
}

// Settled reports whether the row needs no more work from run.
func (s Status) Settled() bool {
	switch s {
	case Sent, Delivered, Read, Failed, Skipped:
		return true
	}
	return false
}

// Message is one template message to one recipient.
type Message struct {
	Row          int64
	From         string // sender phone-number ID
	To           string // E.164
	Template     string
	Lang         string
	Params       []string // body parameters, in order
	CallbackData string   // biz_opaque_callback_data: identifies campaign and row
}

// Sender sends one message and returns the API's message id (wamid).
//
// Its error contract decides what happens to the row:
//   - an *APIError: the API answered; its Class says what to do;
//   - an error wrapping ErrInDoubt: the request was written but no answer
//     came (timeout, connection lost): it may have been accepted;
//   - any other error: the request never left (dial failure, cancelled
//     before writing); retrying cannot cause a duplicate.
type Sender interface {
	Send(ctx context.Context, m Message) (wamid string, err error)
}

// ErrInDoubt marks a send whose outcome is unknown.
var ErrInDoubt = errors.New("request sent, no answer: outcome unknown")

// Class says what a send error means for the campaign.
type Class int

const (
	Permanent   Class = iota // fail this recipient, go on
	Transient                // retry this recipient with backoff
	Throttled                // slow and pause the sender number, retry
	PairLimited              // too many to this recipient: retry it later
	Fatal                    // stop the whole run: token, template, account
)

func (c Class) String() string {
	switch c {
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
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// APIError is an error answered by the Cloud API, in Meta's error shape.
type APIError struct {
	HTTPStatus int
	Code       int    // error.code: decide on this, never on the text
	Type       string // error.type, e.g. OAuthException
	Message    string // error.message, e.g. "(#130429) Rate limit hit"
	Details    string // error.error_data.details
	TraceID    string // error.fbtrace_id, for Meta support
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = fmt.Sprintf("HTTP %d", e.HTTPStatus)
	}
	if e.Details != "" && !strings.Contains(msg, e.Details) {
		msg += ": " + e.Details
	}
	if e.Code != 0 && !strings.Contains(msg, strconv.Itoa(e.Code)) {
		msg = fmt.Sprintf("(#%d) %s", e.Code, msg)
	}
	return "api: " + msg
}

// Title is the short meaning of the error, for reports: the message
// without its "(#code) " prefix.
func (e *APIError) Title() string {
	t := e.Message
	if i := strings.Index(t, ") "); strings.HasPrefix(t, "(#") && i > 0 {
		t = t[i+2:]
	}
	if t == "" {
		t = fmt.Sprintf("HTTP %d", e.HTTPStatus)
	}
	return t
}

// Class classifies the error by its code, as the fact sheet's table and
// Meta's error page describe it. Unknown codes fail the recipient only:
// stopping a campaign needs a reason, and retrying an unknown error
// forever wastes the attempt budget.
func (e *APIError) Class() Class {
	if e.Code == 0 && e.Type == "" {
		// No Meta error body: a front end or proxy answered.
		switch e.HTTPStatus {
		case 429:
			return Throttled
		case 503:
			return Transient // refused by an overloaded front end
		}
		// Every other row would get the same answer (wrong URL, a proxy
		// refusing us): stop rather than fail the whole list.
		return Fatal
	}
	if c, ok := classes[e.Code]; ok {
		return c
	}
	if e.Code >= 200 && e.Code <= 299 {
		return Fatal
	}
	return Permanent
}

var classes = map[int]Class{
	// Throughput: slow the number and retry.
	4: Throttled, 80007: Throttled, 80008: Throttled, 130429: Throttled, 131057: Throttled,
	// Per recipient pair limit.
	131056: PairLimited,
	// Transient: the API refused for now.
	1: Transient, 2: Transient, 131000: Transient, 131016: Transient,
	// Per-recipient permanent.
	131026: Permanent, 131021: Permanent, 131047: Permanent, 131049: Permanent,
	131050: Permanent, 130472: Permanent, 130403: Permanent, 130497: Permanent,
	131009: Permanent, 132005: Permanent, 135000: Permanent,
	// Campaign-fatal: token, permissions, account, template.
	0: Fatal, 3: Fatal, 10: Fatal, 190: Fatal, 368: Fatal, 100: Fatal,
	131005: Fatal, 131008: Fatal, 131031: Fatal, 131042: Fatal, 131045: Fatal,
	131048: Fatal, 131051: Fatal, 131064: Fatal, 132000: Fatal, 132001: Fatal,
	132007: Fatal, 132012: Fatal, 132015: Fatal, 132016: Fatal, 132068: Fatal,
	132069: Fatal, 133010: Fatal,
}

// Hint says what an operator should do about a fatal API error.
func (e *APIError) Hint() string {
	switch {
	case e.Code == 0 && e.Type == "":
		return fmt.Sprintf("the API answered HTTP %d without an error body: check --api-url, --api-version and the --from phone-number IDs", e.HTTPStatus)
	case e.Code == 190 || e.Code == 0 || e.HTTPStatus == 401:
		return "the access token is expired or invalid: get a new one, set WHATSAPP_TOKEN (or --token-file) and run the same command again; nothing more was sent"
	case e.Code == 10 || e.Code == 3 || e.Code == 131005 || (e.Code >= 200 && e.Code <= 299):
		return "the token lacks permission (whatsapp_business_messaging) for this phone number: check it in Meta's token debugger"
	case e.Code == 132001:
		return "the template does not exist in this language or is not approved: check --template and --lang in WhatsApp Manager"
	case e.Code == 132000:
		return "the template expects a different number of body parameters than the CSV has parameter columns"
	case e.Code == 132015 || e.Code == 132016:
		return "the template is paused or disabled for low quality: edit or replace it in WhatsApp Manager"
	case e.Code == 368 || e.Code == 131031 || e.Code == 131048 || e.Code == 131064:
		return "the account or number is restricted: see Account Quality in WhatsApp Manager before sending more"
	case e.Code == 131042:
		return "a billing problem blocks sending: fix the payment method in Business Manager"
	case e.Code == 100 || e.Code == 131008 || e.Code == 131051:
		return "the API rejected the request shape: check --template, --lang, --from and the CSV's parameter columns"
	}
	return "fix the cause above, then run the same command again to resume"
}

// Policy says what to do with rows whose outcome is unknown.
type Policy string

const (
	Hold   Policy = "hold"   // keep them in doubt until a webhook log settles them
	Resend Policy = "resend" // send again, accepting a possible duplicate
	Fail   Policy = "fail"   // mark them failed, accepting a possible miss
)

// ParsePolicy parses a --in-doubt / --unmatched value.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case Hold, Resend, Fail:
		return p, nil
	}
	return "", fmt.Errorf("invalid policy %q: want hold, resend or fail", s)
}

// CallbackData is the biz_opaque_callback_data that identifies a row of a
// campaign in status webhooks.
func CallbackData(campaignID string, row int64) string {
	return "bulksend:" + campaignID + ":" + strconv.FormatInt(row, 10)
}

// ParseCallbackData is the inverse of CallbackData. ok is false for data
// that bulksend did not write.
func ParseCallbackData(s string) (campaignID string, row int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bulksend:")
	if !found {
		return "", 0, false
	}
	id, num, found := strings.Cut(rest, ":")
	if !found || id == "" {
		return "", 0, false
	}
	row, err := strconv.ParseInt(num, 10, 64)
	if err != nil || row <= 0 {
		return "", 0, false
	}
	return id, row, true
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

// Backoff returns the delay before retry number attempt (1-based) with
// exponential growth and full jitter: uniform in [0, min(max, base·2^(n-1))].
// u is a uniform random number in [0,1), injected so tests are exact.
func Backoff(attempt int, base, max time.Duration, u float64) time.Duration {
	d := base
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return time.Duration(u * float64(d))
}
