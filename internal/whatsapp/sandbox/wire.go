package sandbox

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Wire shapes of the Cloud API, as Meta documents them (the team's fact
// sheet, outside this repository, §1–§3 and §5) and Meta's OpenAPI schemas Message, MessageResponsePayload,
// GraphAPIError and WebhookPayload.

// sendRequest is the part of a send-message body the sandbox looks at. Other
// fields are ignored, as Meta ignores fields it does not process.
type sendRequest struct {
	MessagingProduct      string          `json:"messaging_product"`
	RecipientType         string          `json:"recipient_type"`
	To                    string          `json:"to"`
	Type                  string          `json:"type"`
	BizOpaqueCallbackData string          `json:"biz_opaque_callback_data"`
	Template              *templateObject `json:"template"`

	// The Marketing Messages API's own fields (OpenAPI
	// MarketingMessageRequestPayload), kept raw: /messages ignores them,
	// as Meta ignores fields it does not process, whatever their type.
	RawProductPolicy          json.RawMessage `json:"product_policy"`
	RawMessageActivitySharing json.RawMessage `json:"message_activity_sharing"`
	ProductPolicy             string          `json:"-"` // decoded for /marketing_messages
}

type templateObject struct {
	Name     string `json:"name"`
	Language *struct {
		Code   string `json:"code"`
		Policy string `json:"policy"`
	} `json:"language"`
	Components []sendComponent `json:"components"`
}

// sendComponent is one entry of template.components. SubType and Index stay
// raw: only a send checked against a definition looks at them, and Meta
// takes the index as a string or a number.
type sendComponent struct {
	Type       string            `json:"type"`
	SubType    json.RawMessage   `json:"sub_type"`
	Index      json.RawMessage   `json:"index"`
	Parameters []json.RawMessage `json:"parameters"`
}

// sendParam is one parameter of a component, decoded only when the send is
// checked against a definition (see check.go).
type sendParam struct {
	Type          string         `json:"type"`
	ParameterName string         `json:"parameter_name"`
	Text          string         `json:"text"`
	Payload       string         `json:"payload"`
	CouponCode    string         `json:"coupon_code"`
	Image         *mediaParam    `json:"image"`
	Video         *mediaParam    `json:"video"`
	Document      *mediaParam    `json:"document"`
	Location      *locationParam `json:"location"`
	Currency      *fallbackParam `json:"currency"`
	DateTime      *fallbackParam `json:"date_time"`
}

type mediaParam struct {
	ID       string `json:"id"`
	Link     string `json:"link"`
	Filename string `json:"filename"`
}

// locationParam keeps the coordinates raw: Meta documents them as strings,
// and a JSON number is taken too.
type locationParam struct {
	Latitude  json.RawMessage `json:"latitude"`
	Longitude json.RawMessage `json:"longitude"`
	Name      string          `json:"name"`
	Address   string          `json:"address"`
}

// fallbackParam is a currency or date_time parameter: Cloud API always
// shows its fallback_value.
type fallbackParam struct {
	FallbackValue string `json:"fallback_value"`
}

// sendResponse is a send's answer: MessageResponsePayload, or
// MarketingMessageResponsePayload with Success set (the endpoint's example
// in Meta's document has a top-level "success": true).
type sendResponse struct {
	MessagingProduct string        `json:"messaging_product"`
	Contacts         []contactResp `json:"contacts"`
	Messages         []messageResp `json:"messages"`
	Success          bool          `json:"success,omitempty"`
}

type contactResp struct {
	Input string `json:"input"`
	WaID  string `json:"wa_id"`
}

type messageResp struct {
	ID            string `json:"id"`
	MessageStatus string `json:"message_status"` // accepted or held_for_quality_assessment
}

// messages[].message_status values (OpenAPI MessageStatus).
const (
	statusAccepted = "accepted"
	statusHeld     = "held_for_quality_assessment"
)

type errorBody struct {
	Error apiError `json:"error"`
}

type apiError struct {
	Message      string     `json:"message"`
	Type         string     `json:"type"`
	Code         int        `json:"code"`
	ErrorSubcode int        `json:"error_subcode,omitempty"`
	ErrorData    *errorData `json:"error_data,omitempty"`
	IsTransient  bool       `json:"is_transient,omitempty"`
	FBTraceID    string     `json:"fbtrace_id"`
}

type errorData struct {
	MessagingProduct string `json:"messaging_product"`
	Details          string `json:"details"`
}

// failure is a synchronous error answer: an HTTP status and a Graph error.
type failure struct {
	status  int
	code    int
	message string // full message, e.g. "(#130429) Rate limit hit"
	details string // error_data.details; "" leaves error_data out
	subcode int
	// graph marks Graph-platform errors (auth, unknown object, code 2),
	// which Meta answers without WhatsApp's error_data.
	graph     bool
	transient bool
}

// Error codes the sandbox answers or reports in webhooks.
const (
	codeService          = 2      // API Service: temporary downtime or overload (HTTP 503)
	codeNumberDeleted    = 33     // the business phone number was deleted
	codeInvalidParam     = 100    // invalid parameter
	codeToken            = 190    // access token expired or invalid (HTTP 401)
	codePermission       = 200    // "No access token was provided" (HTTP 403)
	codeThrottled        = 130429 // per-number throughput
	codeUnknown          = 131000 // something went wrong (HTTP 500)
	codeMissingParam     = 131008
	codeBadValue         = 131009
	codeUnavailable      = 131016 // service unavailable (HTTP 500 or 503)
	codeUndeliverable    = 131026 // message undeliverable
	codeDisplayName      = 131037 // a 555 number without an approved display name
	codeSpamRate         = 131048 // the number is restricted for spam
	codeEngagement       = 131049 // per-user marketing limit; asynchronous only
	codeStoppedMarketing = 131050 // the recipient stopped marketing messages; asynchronous here
	codeUnsupported      = 131051
	codeNotMarketing     = 131055 // Marketing Messages API: not a marketing template
	codePairLimited      = 131056
	codeMarketingOff     = 131063 // marketing templates disabled on Cloud API for the WABA
	codeParamCount       = 132000
	codeNoTemplate       = 132001 // HTTP 404
	codeTooLong          = 132005 // hydrated text too long
	codeParamFormat      = 132012 // parameter type does not match the template's
	codePaused           = 132015
	codeDisabled         = 132016
	codeParamIssue       = 132018 // new line, tab, 5 spaces; codes over 15 characters
	codeSyncing          = 134101 // Marketing Messages API: template still syncing
	codeMMUnavailable    = 134102 // Marketing Messages API: not onboarded or template not eligible (HTTP 500)
)

// knownCodes lists every code an answer can carry, so Stats can keep one
// lock-free counter per code.
var knownCodes = []int{
	codeService, codeInvalidParam, codeToken, codePermission, codeThrottled,
	codeUnknown, codeMissingParam, codeBadValue, codeUnavailable, codeUndeliverable,
	codeUnsupported, codePairLimited, codeParamCount, codeNoTemplate,
	codeTooLong, codeParamFormat, codePaused, codeDisabled, codeParamIssue,
	codeNumberDeleted, codeDisplayName, codeSpamRate, codeNotMarketing, codeMarketingOff,
	codeSyncing, codeMMUnavailable,
}

// waError builds a WhatsApp-level error; the HTTP statuses are those of the
// older Meta error table (fact sheet §3–§4).
func waError(code int, title, details string) failure {
	status := http.StatusBadRequest
	switch code {
	case codeUnknown, codeUnavailable, codeMMUnavailable:
		status = http.StatusInternalServerError
	case codeNoTemplate:
		status = http.StatusNotFound
	}
	return failure{status: status, code: code, message: fmt.Sprintf("(#%d) %s", code, title), details: details}
}

func missingParam(name string) failure {
	return waError(codeMissingParam, "Required parameter is missing", fmt.Sprintf("The parameter %s is required.", name))
}

func invalidParam(details string) failure {
	return waError(codeInvalidParam, "Invalid parameter", details)
}

var (
	errNoToken = failure{status: http.StatusForbidden, code: codePermission, graph: true,
		message: "(#200) No access token was provided"}
	errBadToken = failure{status: http.StatusUnauthorized, code: codeToken, graph: true,
		message: "Invalid OAuth access token - Cannot parse access token"}
	errExpiredToken = failure{status: http.StatusUnauthorized, code: codeToken, subcode: 463, graph: true,
		message: "Error validating access token: Session has expired."}
	errService = failure{status: http.StatusServiceUnavailable, code: codeService, graph: true, transient: true,
		message: "(#2) Service temporarily unavailable"}
	errThrottled = waError(codeThrottled, "Rate limit hit",
		"Cloud API message throughput has been reached.")
	errPairLimited = waError(codePairLimited, "(Business Account, Consumer Account) pair rate limit hit",
		"Message failed to send because there were too many messages sent from this phone number to the same phone number in a short period of time.")
	errUnknown = waError(codeUnknown, "Something went wrong",
		"Message failed to send due to an unknown error.")
	errUnavailable = waError(codeUnavailable, "Service unavailable",
		"A service is temporarily unavailable.")
	errUndeliverable = waError(codeUndeliverable, "Message undeliverable",
		"Message undeliverable: the recipient may not be a WhatsApp user or may not have accepted the latest terms.")
)

func unknownObject(method, id string) failure {
	return failure{status: http.StatusBadRequest, code: codeInvalidParam, subcode: 33, graph: true,
		message: fmt.Sprintf("Unsupported %s request. Object with ID '%s' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", method, id)}
}

func unsupportedRequest(method string) failure {
	return failure{status: http.StatusBadRequest, code: codeInvalidParam, graph: true,
		message: fmt.Sprintf("Unsupported %s request.", method)}
}

// Webhook shapes (fact sheet §5, OpenAPI WebhookPayload/Statuses).

type webhookBody struct {
	Object string    `json:"object"`
	Entry  []whEntry `json:"entry"`
}

type whEntry struct {
	ID      string     `json:"id"`
	Changes []whChange `json:"changes"`
}

type whChange struct {
	Value whValue `json:"value"`
	Field string  `json:"field"`
}

// whValue is a change's value: statuses, or what a recipient sent
// (contacts and messages), or a preference they set (contacts and
// user_preferences).
type whValue struct {
	MessagingProduct string         `json:"messaging_product"`
	Metadata         whMetadata     `json:"metadata"`
	Contacts         []whContact    `json:"contacts,omitempty"`
	Messages         []whMessage    `json:"messages,omitempty"`
	UserPreferences  []whPreference `json:"user_preferences,omitempty"`
	Statuses         []whStatus     `json:"statuses,omitempty"`
}

// Incoming message shapes (Meta's messages webhook reference, OpenAPI
// IncomingMessageValueGeneral, TextMessage_2 and ButtonMessage) and the
// user_preferences webhook's (Meta's user_preferences webhook reference:
// its timestamp is a number, not a string as elsewhere).

type whContact struct {
	Profile whProfile `json:"profile"`
	WaID    string    `json:"wa_id"`
}

type whProfile struct {
	Name string `json:"name"`
}

type whMessage struct {
	Context   *whContext `json:"context,omitempty"`
	From      string     `json:"from"`
	ID        string     `json:"id"`
	Timestamp string     `json:"timestamp"`
	Type      string     `json:"type"`
	Text      *whText    `json:"text,omitempty"`
	Button    *whButton  `json:"button,omitempty"`
}

// whContext is the message a button reply answers: its wamid, and the
// business number it came from.
type whContext struct {
	From string `json:"from"`
	ID   string `json:"id"`
}

type whText struct {
	Body string `json:"body"`
}

type whButton struct {
	Payload string `json:"payload"`
	Text    string `json:"text"`
}

type whPreference struct {
	WaID      string `json:"wa_id"`
	Detail    string `json:"detail"`
	Category  string `json:"category"`
	Value     string `json:"value"`
	Timestamp int64  `json:"timestamp"`
}

type whMetadata struct {
	DisplayPhoneNumber string `json:"display_phone_number"`
	PhoneNumberID      string `json:"phone_number_id"`
}

type whStatus struct {
	ID                    string          `json:"id"`
	Status                string          `json:"status"`
	Timestamp             string          `json:"timestamp"`
	RecipientID           string          `json:"recipient_id"`
	BizOpaqueCallbackData string          `json:"biz_opaque_callback_data,omitempty"`
	Conversation          *whConversation `json:"conversation,omitempty"`
	Pricing               *whPricing      `json:"pricing,omitempty"`
	Errors                []whError       `json:"errors,omitempty"`
}

type whConversation struct {
	ID                  string   `json:"id"`
	ExpirationTimestamp string   `json:"expiration_timestamp,omitempty"`
	Origin              whOrigin `json:"origin"`
}

type whOrigin struct {
	Type string `json:"type"`
}

type whPricing struct {
	Billable     bool   `json:"billable"`
	PricingModel string `json:"pricing_model"`
	Type         string `json:"type"`
	Category     string `json:"category"`
}

type whError struct {
	Code      int         `json:"code"`
	Title     string      `json:"title"`
	Message   string      `json:"message"`
	ErrorData whErrorData `json:"error_data"`
	Href      string      `json:"href"`
}

type whErrorData struct {
	Details string `json:"details"`
}

const errorHref = "/documentation/business-messaging/whatsapp/support/error-codes"

// asyncErrors are the failures reported in `failed` status webhooks.
var asyncErrors = map[int]whError{
	codeEngagement: {
		Code:      codeEngagement,
		Title:     "This message was not delivered to maintain healthy ecosystem engagement.",
		Message:   "This message was not delivered to maintain healthy ecosystem engagement.",
		ErrorData: whErrorData{Details: "In order to maintain a healthy ecosystem engagement, the message failed to be delivered."},
		Href:      errorHref,
	},
	codeUndeliverable: {
		Code:      codeUndeliverable,
		Title:     "Message undeliverable",
		Message:   "Message undeliverable",
		ErrorData: whErrorData{Details: "Message Undeliverable."},
		Href:      errorHref,
	},
	// Meta's error codes page: "Do not retry".
	codeStoppedMarketing: {
		Code:      codeStoppedMarketing,
		Title:     "Unable to deliver the message. This recipient has chosen to stop receiving marketing messages on WhatsApp from your business.",
		Message:   "Unable to deliver the message. This recipient has chosen to stop receiving marketing messages on WhatsApp from your business.",
		ErrorData: whErrorData{Details: "The recipient stopped marketing messages from this business."},
		Href:      errorHref,
	},
	// A held message dropped because its template was paused during
	// pacing (Meta's template pacing page: "Each held message will be
	// dropped and trigger a messages webhook with status failed and code
	// 132015").
	codePaused: {
		Code:      codePaused,
		Title:     "Template is Paused",
		Message:   "Template is Paused",
		ErrorData: whErrorData{Details: "The message was held for quality assessment and dropped: its template was paused because of low quality."},
		Href:      errorHref,
	},
}

// acceptedRecord is one line of Config.Accepted.
type acceptedRecord struct {
	WAMID                 string `json:"wamid"`
	PhoneNumberID         string `json:"phone_number_id"`
	To                    string `json:"to"`
	BizOpaqueCallbackData string `json:"biz_opaque_callback_data,omitempty"`
	Template              string `json:"template"`
	Language              string `json:"language"`
	Time                  string `json:"time"`    // RFC 3339, from Config.Now
	Attempt               int    `json:"attempt"` // 1 for the first request of this message that reached a verdict
	Late                  bool   `json:"late,omitempty"`
	Final                 string `json:"final"` // last status its webhooks report: delivered, read or failed
	// Held: answered held_for_quality_assessment.
	Held bool `json:"held,omitempty"`
	// API is "marketing_messages" for a send to /marketing_messages, ""
	// for /messages.
	API string `json:"api,omitempty"`
	// Pricing is the pricing category of its webhooks (marketing,
	// marketing_lite, utility, authentication).
	Pricing string `json:"pricing_category,omitempty"`
}

// marshal is json.Marshal(r), written by hand when no string needs
// escaping (as in nearly every record): reflection cost a sandbox
// accepting 10,000 sends a second 2% of its CPU.
func (r *acceptedRecord) marshal() []byte {
	if !plainJSON(r.WAMID, r.PhoneNumberID, r.To, r.BizOpaqueCallbackData, r.Template, r.Language, r.Time, r.Final, r.API, r.Pricing) {
		b, _ := json.Marshal(r)
		return b
	}
	b := make([]byte, 0, 320)
	b = append(b, `{"wamid":"`...)
	b = append(b, r.WAMID...)
	b = append(b, `","phone_number_id":"`...)
	b = append(b, r.PhoneNumberID...)
	b = append(b, `","to":"`...)
	b = append(b, r.To...)
	if r.BizOpaqueCallbackData != "" {
		b = append(b, `","biz_opaque_callback_data":"`...)
		b = append(b, r.BizOpaqueCallbackData...)
	}
	b = append(b, `","template":"`...)
	b = append(b, r.Template...)
	b = append(b, `","language":"`...)
	b = append(b, r.Language...)
	b = append(b, `","time":"`...)
	b = append(b, r.Time...)
	b = append(b, `","attempt":`...)
	b = strconv.AppendInt(b, int64(r.Attempt), 10)
	if r.Late {
		b = append(b, `,"late":true`...)
	}
	b = append(b, `,"final":"`...)
	b = append(b, r.Final...)
	b = append(b, '"')
	if r.Held {
		b = append(b, `,"held":true`...)
	}
	if r.API != "" {
		b = append(b, `,"api":"`...)
		b = append(b, r.API...)
		b = append(b, '"')
	}
	if r.Pricing != "" {
		b = append(b, `,"pricing_category":"`...)
		b = append(b, r.Pricing...)
		b = append(b, '"')
	}
	return append(b, '}')
}

// plainJSON reports whether json.Marshal writes each of ss as it is,
// between quotes: printable ASCII but for the quote, the backslash and
// the characters it escapes for HTML (<, >, &).
func plainJSON(ss ...string) bool {
	for _, s := range ss {
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
				return false
			}
		}
	}
	return true
}
