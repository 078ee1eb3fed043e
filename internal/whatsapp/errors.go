package whatsapp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
)

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
	// Meta's messages often begin with the code already, as "(#131030) ";
	// digits elsewhere (a sender ID) are not it.
	if e.Code != 0 && !strings.Contains(msg, "(#"+strconv.Itoa(e.Code)+")") {
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

// bare reports whether no Meta error body came: a front end or proxy answered.
func (e *APIError) bare() bool { return e.Code == 0 && e.Type == "" }

// Class classifies the error by its code, as the fact sheet's table and
// Meta's error page describe it. Unknown codes fail the recipient only:
// stopping a campaign needs a reason, and retrying an unknown error
// forever wastes the attempt budget.
func (e *APIError) Class() campaign.Class {
	if e.bare() {
		switch e.HTTPStatus {
		case 429:
			return campaign.Throttled
		case 503:
			return campaign.Transient // refused by an overloaded front end
		}
		// Every other row would get the same answer (wrong URL, a proxy
		// refusing us): stop rather than fail the whole list.
		return campaign.Fatal
	}
	if c, ok := classes[e.Code]; ok {
		return c
	}
	if e.Code >= 200 && e.Code <= 299 {
		return campaign.Fatal
	}
	return campaign.Permanent
}

// sendError is e as the engine sees it: its class, the stable reason of a
// failure reports name apart, and the rest a code asks for.
func (e *APIError) sendError() *campaign.SendError {
	se := &campaign.SendError{Class: e.Class(), Code: e.Code, Title: e.Title(), Err: e}
	if !e.bare() {
		se.Reason = reasons[e.Code]
		se.RestFor = rests[e.Code]
	}
	return se
}

const (
	throttled   = campaign.Throttled
	pairLimited = campaign.PairLimited
	transient   = campaign.Transient
	permanent   = campaign.Permanent
	fatal       = campaign.Fatal
	rested      = campaign.SenderRested
	paused      = campaign.Paused
)

// classes is Meta's error-code table, by what each code means for a run.
var classes = map[int]campaign.Class{
	// Throughput: slow the number and retry.
	4: throttled, 80007: throttled, 80008: throttled, 130429: throttled, 131057: throttled,
	// Per recipient pair limit.
	131056: pairLimited,
	// Transient: the API refused for now.
	1: transient, 2: transient, 131000: transient, 131016: transient,
	// Per-recipient permanent. 131049 (the recipient had their share of
	// marketing messages) also carries a reason: see reasons.
	131026: permanent, 131021: permanent, 131047: permanent, 131049: permanent,
	131050: permanent, 130472: permanent, 130403: permanent, 130497: permanent,
	131009: permanent, 132005: permanent, 132018: permanent, 135000: permanent,
	// This sender number may not send now (spam-rate restriction): other
	// numbers can go on.
	131048: rested,
	// Wait before sending anything more: the Marketing Messages API's
	// template is still syncing with the ad account (see rests).
	134101: paused,
	// Campaign-fatal: token, permissions, account, number, template.
	0: fatal, 3: fatal, 10: fatal, 33: fatal, 190: fatal, 368: fatal, 100: fatal,
	131005: fatal, 131008: fatal, 131031: fatal, 131037: fatal, 131042: fatal,
	131045: fatal, 131051: fatal, 131063: fatal, 131064: fatal, 132000: fatal,
	132001: fatal, 132007: fatal, 132012: fatal, 132015: fatal, 132016: fatal,
	132068: fatal, 132069: fatal, 133010: fatal,
	// Marketing Messages API: the template is not a marketing template
	// (131055, 134100), or not available to that API (134102).
	131055: fatal, 134100: fatal, 134102: fatal,
}

// reasons names the failures that reports count apart from their code's
// title (campaign.SendError.Reason).
var reasons = map[int]string{
	131049: campaign.FailMarketingCap,
	131050: campaign.FailStoppedMarketing,
}

// SyncRest is how long the Marketing Messages API asks to wait after 134101
// (a template still syncing with the ad account): "wait 10 minutes". Meta
// says the same of a template dormant for more than 7 days, on first use.
const SyncRest = 10 * time.Minute

// rests is how long a code asks to send nothing more
// (campaign.SendError.RestFor).
var rests = map[int]time.Duration{
	134101: SyncRest,
}

// What a fatal answer is about, for errors.Is: the CLI names the flags
// that fix each (this package knows no flags).
var (
	ErrToken      = errors.New("access token expired or invalid")
	ErrPermission = errors.New("token lacks permission")
	ErrTemplate   = errors.New("template missing or not approved")
	ErrParamCount = errors.New("wrong number of template parameters")
	ErrParameters = errors.New("request does not match the template")
	ErrEndpoint   = errors.New("not the Cloud API")
	// ErrMarketingOff: marketing templates are turned off on Cloud API's
	// /messages for this business account (131063).
	ErrMarketingOff = errors.New("marketing templates turned off on Cloud API")
	// ErrNotMarketing: the Marketing Messages API takes marketing
	// templates only (131055, 134100).
	ErrNotMarketing = errors.New("not a marketing template")
	// ErrMarketingUnavailable: the template is not available to the
	// Marketing Messages API, or the account not onboarded (134102).
	ErrMarketingUnavailable = errors.New("template not available to the Marketing Messages API")
)

// Is makes errors.Is(err, ErrToken) and its kin true for the codes each
// stands for.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrEndpoint:
		return e.bare()
	case ErrToken:
		return !e.bare() && (e.Code == 190 || e.Code == 0 || e.HTTPStatus == 401)
	case ErrPermission:
		return e.Code == 10 || e.Code == 3 || e.Code == 131005 || (e.Code >= 200 && e.Code <= 299)
	case ErrTemplate:
		return e.Code == 132001
	case ErrParamCount:
		return e.Code == 132000
	case ErrParameters:
		return e.Code == 100 || e.Code == 131008 || e.Code == 131051
	case ErrMarketingOff:
		return e.Code == 131063
	case ErrNotMarketing:
		return e.Code == 131055 || e.Code == 134100
	case ErrMarketingUnavailable:
		return e.Code == 134102
	}
	return false
}

// PausedHint says when a paused template can be sent again.
const PausedHint = "the template is paused for low quality: a first pause lasts 3 hours and a second 6 hours (a third disables it); one paused during template pacing stays paused until you unpause it in WhatsApp Manager"

// Hint says what an operator should do about a fatal answer, in terms of
// Meta's tools.
func (e *APIError) Hint() string {
	switch {
	case errors.Is(e, ErrEndpoint):
		return fmt.Sprintf("the API answered HTTP %d without an error body: this is not the Cloud API, or not this version or phone-number ID", e.HTTPStatus)
	case errors.Is(e, ErrToken):
		return "the access token is expired or invalid: get a new one"
	case errors.Is(e, ErrPermission):
		return "the token lacks permission (whatsapp_business_messaging) for this phone number: check it in Meta's token debugger"
	case e.Code == 132001:
		return "the template does not exist in this language or is not approved: check it in WhatsApp Manager"
	case e.Code == 132000:
		return "the template expects a different number of body parameters than the request has"
	case e.Code == 132015:
		return PausedHint
	case e.Code == 132016:
		return "the template is disabled for good after repeated pauses: create a new template"
	case e.Code == 131063:
		return "marketing templates are turned off on Cloud API for this business account: send with the Marketing Messages API, or turn disable_marketing_messages_on_cloud_api off on the WhatsApp Business Account"
	case e.Code == 131055 || e.Code == 134100:
		return "the Marketing Messages API sends marketing templates only: send this template with Cloud API's /messages, or choose a marketing template"
	case e.Code == 134102:
		return "the template is unavailable to the Marketing Messages API or not eligible: check marketing_messages_lite_api_status on the WhatsApp Business Account (it should be ONBOARDED) and the template in WhatsApp Manager"
	case e.Code == 134101:
		return "the template is still syncing with the ad account (new, or unused for more than 7 days): wait 10 minutes before sending it with the Marketing Messages API"
	case e.Code == 131037:
		return "the sender number has no approved display name: get it approved in WhatsApp Manager (Phone numbers, Name) before sending"
	case e.Code == 33:
		return "the sender phone number was deleted: check the sender phone-number ID"
	case e.Code == 131048:
		return "this sender number is restricted because too many of its messages were blocked or reported as spam: check its quality in WhatsApp Manager before sending more from it"
	case e.Code == 368 || e.Code == 131031 || e.Code == 131064:
		return "the account or number is restricted: see Account Quality in WhatsApp Manager before sending more"
	case e.Code == 131042:
		return "a billing problem blocks sending: fix the payment method in Business Manager"
	case e.Code == 132007 || e.Code == 132012:
		return "the template's content or parameter format was refused: compare the parameters with the approved template in WhatsApp Manager"
	case e.Code == 132068 || e.Code == 132069:
		return "the template's Flow is blocked or throttled: correct the Flow in WhatsApp Manager, then wait an hour"
	case e.Code == 131045 || e.Code == 133010:
		return "the sender phone number is not registered with the Cloud API: register it (POST /{phone-number-id}/register)"
	case errors.Is(e, ErrParameters):
		return "the API rejected the request's shape: check the template, its language and the sender number"
	}
	return ""
}
