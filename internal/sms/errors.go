package sms

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2/types"
	smithy "github.com/aws/smithy-go"

	"github.com/bulksend/bulksend/internal/campaign"
)

// APIError is an error answered by AWS End User Messaging SMS (or by
// whatever answered at its endpoint), in the terms of the SDK's typed
// exceptions.
type APIError struct {
	Type    string // the exception, e.g. ConflictException; "" when the answer named none
	Reason  string // its Reason enum, e.g. DESTINATION_PHONE_NUMBER_OPTED_OUT; "" if none
	Message string
	// RequestID is AWS's request ID, for AWS Support.
	RequestID string
	// ResourceType and ResourceID name what a ConflictException or a
	// ResourceNotFoundException is about, e.g. configuration-set and its
	// name.
	ResourceType, ResourceID string
	// Fields are the names of the request fields a ValidationException
	// blames, e.g. DestinationPhoneNumber.
	Fields     []string
	HTTPStatus int
	err        error // the SDK's error, for errors.As
}

func (e *APIError) Error() string {
	var b strings.Builder
	switch {
	case e.Type != "":
		b.WriteString(e.Type)
	default:
		fmt.Fprintf(&b, "HTTP %d", e.HTTPStatus)
	}
	if e.Reason != "" {
		b.WriteString(" (" + e.Reason + ")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.ResourceID != "" && !strings.Contains(e.Message, e.ResourceID) {
		fmt.Fprintf(&b, " [%s %s]", e.ResourceType, e.ResourceID)
	}
	if len(e.Fields) > 0 {
		b.WriteString(" (fields: " + strings.Join(e.Fields, ", ") + ")")
	}
	return b.String()
}

// Unwrap gives the SDK's own error, e.g. a *types.ConflictException.
func (e *APIError) Unwrap() error { return e.err }

// Title is the stable short name reports group by: the exception and its
// reason ("ConflictException: DESTINATION_PHONE_NUMBER_OPTED_OUT"), or the
// kind of resource not found, or the HTTP status for a bare answer.
func (e *APIError) Title() string {
	t := e.Type
	if t == "" {
		t = fmt.Sprintf("HTTP %d", e.HTTPStatus)
	}
	switch {
	case e.Reason != "":
		t += ": " + e.Reason
	case e.Type == "ResourceNotFoundException" && e.ResourceType != "":
		t += ": " + e.ResourceType
	}
	return t
}

// Class says what the answer means for its row and the run (see rules).
func (e *APIError) Class() campaign.Class {
	c := e.rule().class
	// A server fault may come after the message was accepted: without an
	// idempotency token, only a throttle is known not to have been sent.
	if e.HTTPStatus >= 500 && c != campaign.Throttled {
		return campaign.Unanswered
	}
	return c
}

// Hint says what the operator should do about the answer, naming the flag
// or the AWS console page that fixes it.
func (e *APIError) Hint() string {
	h := e.rule().hint
	if h != "" && e.ResourceID != "" {
		h = fmt.Sprintf("%s %s: %s", e.ResourceType, e.ResourceID, h)
	}
	return h
}

// sendError is e as the engine sees it. Every permanent failure carries a
// stable Reason, as AWS gives no numeric code to group by.
func (e *APIError) sendError() *campaign.SendError {
	se := &campaign.SendError{Class: e.Class(), Title: e.Title(), Err: e}
	if se.Class == campaign.Permanent {
		r := e.rule()
		switch {
		case r.as != "":
			se.Reason = r.as
		case e.Reason != "":
			se.Reason = strings.ToLower(e.Reason)
		default:
			se.Reason = strings.ToLower(e.Type)
		}
	}
	return se
}

// rule is one row of the classification table. A row matches an answer
// when its type matches and each of reason, resource and field is either
// "" or matches too; the first matching row wins, so specific rows come
// before their type's catch-all.
type rule struct {
	typ      string
	reason   string // the exception's Reason
	resource string // ResourceNotFoundException: its ResourceType
	// field: a ValidationException whose Fields all name this field (and
	// at least one does).
	field string
	class campaign.Class
	as    string // SendError.Reason for a permanent failure; "": the AWS reason lowercased
	hint  string
}

const (
	throttled  = campaign.Throttled
	permanent  = campaign.Permanent
	fatal      = campaign.Fatal
	unanswered = campaign.Unanswered
)

// Hints shared by several rows.
const (
	hintCredentials = "check the AWS credentials in use: run `aws sts get-caller-identity` with the same environment; set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run `aws sso login` for an SSO profile"
	hintIdentity    = "the origination identity does not exist in this account and region: check {from} (an E.164 number, a phone-… or pool-… ID, a sender ID, or the full ARN of a shared one) and {region} against Phone numbers / Pools in the AWS End User Messaging SMS console"
	hintMalformed   = "AWS refused the request's fields: check {from}, {message-type} (TRANSACTIONAL or PROMOTIONAL), {max-price} (US dollars per message, e.g. 0.05), {ttl} and {configuration-set}"
	hintProtect     = "a protect configuration blocks this destination: review its country rules and number overrides in the AWS End User Messaging SMS console (Protect configurations) if such messages should go"
	hintExpired     = "the session credentials have expired: refresh them (`aws sso login` for an SSO profile, or new temporary credentials), then run the same command again"
	hintSenderID    = "the sender ID cannot send to this destination's country (not registered there, or the country takes no sender IDs): register it for the country in the AWS End User Messaging SMS console (Sender IDs), or send such rows from a phone number"
)

// rules is the classification table: what each answer of SendTextMessage
// (and AWS's generic errors) means for a run. A refusal that depends on
// the destination fails its row; one that every row would get (settings,
// credentials, account) stops the run, so that a wrong flag never fails a
// million rows. Types not listed are classed by HTTP status (unknown).
var rules = []rule{
	{typ: "ThrottlingException", class: throttled},
	// AWS's generic throttle names, should a front end answer with one.
	{typ: "Throttling", class: throttled},
	{typ: "TooManyRequestsException", class: throttled},

	{typ: "ConflictException", reason: "DESTINATION_PHONE_NUMBER_OPTED_OUT", class: permanent, as: campaign.FailOptedOut,
		hint: "the recipient opted out (replied STOP) of messages through the origination identity's opt-out list; {sync-opt-outs} skips such rows before sending"},
	{typ: "ConflictException", reason: "DESTINATION_COUNTRY_BLOCKED_BY_PROTECT_CONFIGURATION", class: permanent, hint: hintProtect},
	{typ: "ConflictException", reason: "DESTINATION_PHONE_NUMBER_BLOCKED_BY_PROTECT_NUMBER_OVERRIDE", class: permanent, hint: hintProtect},
	{typ: "ConflictException", reason: "NO_ORIGINATION_IDENTITIES_FOUND", class: fatal,
		hint: "no origination identity in {from} can send this message (country, message type or capability): check {from} and {message-type} against Phone numbers / Pools in the AWS End User Messaging SMS console"},
	{typ: "ConflictException", reason: "MESSAGE_TYPE_MISMATCH", class: fatal,
		hint: "the origination identity is not registered for this message type: set {message-type} to its type (TRANSACTIONAL or PROMOTIONAL) as shown in the AWS End User Messaging SMS console"},
	{typ: "ConflictException", reason: "KEYWORD_MISMATCH", class: fatal,
		hint: "the origination identity requires a keyword it has not got registered (US short codes): check its keywords in the AWS End User Messaging SMS console"},
	{typ: "ConflictException", reason: "DESTINATION_PHONE_NUMBER_NOT_VERIFIED", class: fatal,
		hint: "the account is in the SMS sandbox, which sends only to verified destination numbers: request production access in the AWS End User Messaging SMS console (Account settings)"},
	{typ: "ConflictException", reason: "NUMBER_CAPABILITIES_MISMATCH", class: fatal,
		hint: "the origination identity cannot send SMS: choose one with the SMS capability for {from}"},
	{typ: "ConflictException", reason: "RESOURCE_NOT_ACTIVE", class: fatal,
		hint: "the resource is not active: check the status of {from} and {configuration-set} in the AWS End User Messaging SMS console"},
	{typ: "ConflictException", class: fatal,
		hint: "AWS refused the send because of the state of a resource (see the reason): check {from} and {configuration-set} in the AWS End User Messaging SMS console"},

	// A ValidationException about the destination number alone is that
	// row's. Field names are not in the SDK: matched case-insensitively.
	{typ: "ValidationException", field: "DestinationPhoneNumber", class: permanent, as: "invalid_destination_phone_number",
		hint: "AWS refused the destination phone number"},
	{typ: "ValidationException", reason: "PRICE_OVER_THRESHOLD", class: permanent,
		hint: "a message to this destination (all its parts) costs more than {max-price}: raise it to send such rows"},
	{typ: "ValidationException", reason: "DESTINATION_COUNTRY_BLOCKED", class: permanent,
		hint: "sending to this destination's country is blocked for the account: allow the country in the AWS End User Messaging SMS console if such messages should go"},
	{typ: "ValidationException", reason: "INVALID_IDENTITY_FOR_DESTINATION_COUNTRY", class: permanent,
		hint: "the origination identity cannot send to this destination's country: use a pool or a number registered for it in {from}"},
	{typ: "ValidationException", reason: "INTERNATIONAL_SENDING_NOT_SUPPORTED", class: permanent,
		hint: "the origination identity sends only within its own country: use a pool or a number of the destination's country in {from}"},
	{typ: "ValidationException", reason: "SENDER_ID_NOT_REGISTERED", class: permanent, hint: hintSenderID},
	{typ: "ValidationException", reason: "SENDER_ID_REQUIRES_REGISTRATION", class: permanent, hint: hintSenderID},
	{typ: "ValidationException", reason: "SENDER_ID_NOT_SUPPORTED", class: permanent, hint: hintSenderID},
	{typ: "ValidationException", reason: "MAXIMUM_SIZE_EXCEEDED", class: permanent,
		hint: "this row's rendered body is over AWS's limit (1,530 GSM-7 or 630 UCS-2 characters): shorten the text or the row's values"},
	{typ: "ValidationException", reason: "INVALID_ARN", class: fatal,
		hint: "an ARN in the request is malformed: check {from} and {configuration-set}"},
	{typ: "ValidationException", reason: "RESOURCE_NOT_ACCESSIBLE", class: fatal,
		hint: "the origination identity or configuration set belongs to another account and is not shared with this one: share it through AWS RAM, or check {from}, {configuration-set} and the credentials in use"},
	{typ: "ValidationException", reason: "CHANNEL_NOT_ENABLED", class: fatal,
		hint: "the SMS channel is not enabled for the origination identity: check {from}'s capabilities in the AWS End User Messaging SMS console"},
	{typ: "ValidationException", reason: "COUNTRY_NOT_ENABLED", class: fatal,
		hint: "a country involved is not enabled for the account: see the message, and the account's country settings in the AWS End User Messaging SMS console"},
	{typ: "ValidationException", class: fatal, hint: hintMalformed},

	{typ: "ServiceQuotaExceededException", reason: "MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT", class: fatal,
		hint: "the account's monthly SMS spend limit is reached: raise it in the AWS End User Messaging SMS console (Account settings, spend limits; past the service maximum, through a quota increase case), then run the same command again"},
	{typ: "ServiceQuotaExceededException", class: fatal,
		hint: "an account quota is reached (see the reason): raise it in Service Quotas or the AWS End User Messaging SMS console, then run the same command again"},

	{typ: "AccessDeniedException", reason: "ACCOUNT_DISABLED", class: fatal,
		hint: "AWS disabled SMS sending for this account: contact AWS Support"},
	{typ: "AccessDeniedException", reason: "INSUFFICIENT_ACCOUNT_REPUTATION", class: fatal,
		hint: "AWS restricted this account for its sending reputation: see the AWS End User Messaging SMS console and contact AWS Support"},
	{typ: "AccessDeniedException", class: fatal,
		hint: "the AWS identity in use may not send (sms-voice:SendTextMessage on {from} and {configuration-set}): check its IAM policy; `aws sts get-caller-identity` shows which identity it is"},

	{typ: "ResourceNotFoundException", resource: "phone-number", class: fatal, hint: hintIdentity},
	{typ: "ResourceNotFoundException", resource: "sender-id", class: fatal, hint: hintIdentity},
	{typ: "ResourceNotFoundException", resource: "pool", class: fatal, hint: hintIdentity},
	{typ: "ResourceNotFoundException", resource: "configuration-set", class: fatal,
		hint: "the configuration set does not exist in this account and region: check {configuration-set} and {region} against Configuration sets in the AWS End User Messaging SMS console"},
	{typ: "ResourceNotFoundException", resource: "opt-out-list", class: fatal,
		hint: "the opt-out list does not exist in this account and region: check {region} and the origination identity's opt-out list in the AWS End User Messaging SMS console"},
	{typ: "ResourceNotFoundException", class: fatal,
		hint: "a resource the request names does not exist in this account and region: check {from}, {configuration-set} and {region}"},

	// AWS's generic authentication answers.
	{typ: "UnrecognizedClientException", class: fatal, hint: "the access key ID or session token is not valid: " + hintCredentials},
	{typ: "InvalidClientTokenId", class: fatal, hint: "the access key ID is not valid: " + hintCredentials},
	{typ: "InvalidSignatureException", class: fatal,
		hint: "AWS refused the request's signature: the secret access key does not match the key ID, or this machine's clock is more than 5 minutes off (set it with NTP); " + hintCredentials},
	{typ: "SignatureDoesNotMatch", class: fatal,
		hint: "AWS refused the request's signature: the secret access key does not match the key ID; " + hintCredentials},
	{typ: "IncompleteSignatureException", class: fatal, hint: "the request's signature was incomplete: " + hintCredentials},
	{typ: "ExpiredTokenException", class: fatal, hint: hintExpired},
	{typ: "ExpiredToken", class: fatal, hint: hintExpired},
	{typ: "RequestExpired", class: fatal, hint: "this machine's clock is more than 5 minutes off AWS's: set it (NTP), then run the same command again"},
	{typ: "MissingAuthenticationTokenException", class: fatal, hint: "the request carried no credentials: " + hintCredentials},
	{typ: "MissingAuthenticationToken", class: fatal, hint: "the request carried no credentials: " + hintCredentials},
	{typ: "OptInRequired", class: fatal, hint: "the account is not subscribed to AWS End User Messaging SMS in this region: check {region} and the account"},
	{typ: "UnknownOperationException", class: fatal,
		hint: "the endpoint does not serve the AWS End User Messaging SMS v2 API: check {endpoint-url}, AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_PINPOINT_SMS_VOICE_V2"},

	// May have been accepted: in doubt (SendTextMessage has no
	// idempotency token).
	{typ: "InternalServerException", class: unanswered},
	{typ: "InternalFailure", class: unanswered},
	{typ: "ServiceUnavailableException", class: unanswered},
	{typ: "ServiceUnavailable", class: unanswered},
	{typ: "RequestTimeoutException", class: unanswered},
	{typ: "RequestTimeout", class: unanswered},
}

// unknownHint is for a 4xx answer the table does not know.
const unknownHint = "the endpoint answered with an error this version of bulksend does not know (see above): check {endpoint-url} and {region}; if it is AWS's, fix the cause it names"

// rule finds e's row of the table; answers it has none for are classed
// by HTTP status: 5xx, 408 and a 2xx bulksend could not read may have
// been sent; 429 asks to slow down; any other 4xx would be every row's
// answer, so it stops the run.
func (e *APIError) rule() rule {
	for _, r := range rules {
		if r.matches(e) {
			return r
		}
	}
	switch s := e.HTTPStatus; {
	case s == 429:
		return rule{class: throttled}
	case s >= 500, s == 408, s < 300:
		return rule{class: unanswered}
	}
	return rule{class: fatal, hint: unknownHint}
}

func (r rule) matches(e *APIError) bool {
	if r.typ != e.Type || (r.reason != "" && r.reason != e.Reason) || (r.resource != "" && r.resource != e.ResourceType) {
		return false
	}
	if r.field == "" {
		return true
	}
	for _, f := range e.Fields {
		if !strings.EqualFold(f, r.field) {
			return false
		}
	}
	return len(e.Fields) > 0
}

// newAPIError reads an answer the SDK decoded into err (HTTP status and
// request ID from its response) as an *APIError.
func newAPIError(err error, status int, requestID string) *APIError {
	e := &APIError{HTTPStatus: status, RequestID: requestID, err: err}
	var api smithy.APIError
	if errors.As(err, &api) {
		e.Type, e.Message = api.ErrorCode(), api.ErrorMessage()
		if e.Type == "UnknownError" { // the SDK's name for an answer that named no type
			e.Type = ""
		}
		if e.Message == "UnknownError" {
			e.Message = ""
		}
	}
	var (
		conflict *types.ConflictException
		valid    *types.ValidationException
		quota    *types.ServiceQuotaExceededException
		denied   *types.AccessDeniedException
		notFound *types.ResourceNotFoundException
		internal *types.InternalServerException
	)
	switch {
	case errors.As(err, &conflict):
		e.Reason, e.ResourceType, e.ResourceID = string(conflict.Reason), string(conflict.ResourceType), deref(conflict.ResourceId)
	case errors.As(err, &valid):
		e.Reason = string(valid.Reason)
		for _, f := range valid.Fields {
			e.Fields = append(e.Fields, deref(f.Name))
		}
	case errors.As(err, &quota):
		e.Reason = string(quota.Reason)
	case errors.As(err, &denied):
		e.Reason = string(denied.Reason)
	case errors.As(err, &notFound):
		e.ResourceType, e.ResourceID = string(notFound.ResourceType), deref(notFound.ResourceId)
	case errors.As(err, &internal):
		if e.RequestID == "" {
			e.RequestID = deref(internal.RequestId)
		}
	}
	return e
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// CredentialsError is a failure to find, refresh or use AWS credentials:
// no row can be sent, so it stops the run before (CheckCredentials) or
// during it (Send, classed Fatal).
type CredentialsError struct {
	Err error
}

func (e *CredentialsError) Error() string { return "AWS credentials: " + e.Err.Error() }
func (e *CredentialsError) Unwrap() error { return e.Err }

// Hint says how to get working credentials.
func (e *CredentialsError) Hint() string {
	var sso *ssocreds.InvalidTokenError
	if errors.As(e.Err, &sso) {
		return "the AWS SSO session has expired: run `aws sso login` (with --profile if AWS_PROFILE is not set), then run the same command again"
	}
	return "no usable AWS credentials: set AWS_PROFILE to a profile of ~/.aws/config (then `aws sso login` for an SSO profile), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones); `aws sts get-caller-identity` checks them"
}
