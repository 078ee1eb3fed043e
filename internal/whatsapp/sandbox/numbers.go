package sandbox

import (
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"strings"
)

// NumberInfo is a business phone number as GET /{phone-number-id} reports
// it, and the account-level answer its sends get (Config.Numbers). The zero
// value is a healthy number: every empty field takes the default its
// comment names. Values are reported as given, known to Meta or not, so a
// client's handling of a value Meta adds later can be rehearsed too.
//
// The fields are reported only: Config.Rate and Rates set the throughput
// the sandbox enforces, and it counts no unique recipients against
// MessagingLimit. What the number's sends answer is SendError's alone.
type NumberInfo struct {
	VerifiedName string // verified_name; "" means "Sandbox Store"
	// Quality is quality_rating: GREEN, YELLOW, RED or NA; "" means GREEN.
	Quality string
	// Throughput is throughput.level: STANDARD, HIGH or NOT_APPLICABLE;
	// "" means the level of the rate the sandbox enforces for the number:
	// HIGH above Meta's standard 80/s (or with no limit), else STANDARD.
	Throughput string
	// MessagingLimit is the business portfolio's
	// whatsapp_business_manager_messaging_limit: TIER_250, TIER_2K,
	// TIER_10K, TIER_100K or TIER_UNLIMITED; "" means TIER_10K.
	MessagingLimit string
	// NameStatus is name_status (APPROVED, PENDING_REVIEW, DECLINED…);
	// "" means APPROVED.
	NameStatus string
	// Status is status (CONNECTED, DISCONNECTED, FLAGGED, RESTRICTED…);
	// "" means CONNECTED.
	Status string

	// Health is health_status.can_send_message: AVAILABLE, LIMITED or
	// BLOCKED; "" means AVAILABLE. A LIMITED or BLOCKED health is carried
	// by one entity, HealthEntity, with HealthErrors; the others are
	// AVAILABLE, so the overall value is Health.
	Health string
	// HealthEntity is PHONE_NUMBER, WABA, BUSINESS or APP; "" means WABA
	// when BLOCKED and BUSINESS when LIMITED, as in Meta's example.
	HealthEntity string
	// HealthErrors are that entity's errors; nil means Meta's documented
	// example for the level: 141006 (payment method) for BLOCKED, 141010
	// (business verification) for LIMITED.
	HealthErrors []HealthError

	// SendError, if not 0, is the Meta error code that every send from this
	// number answers once its request is valid, before the rate limits:
	// 131048 (spam rate limit hit), 131037 (no approved display name), 33
	// (the number was deleted), 368 and 131031 (account restricted or
	// locked, HTTP 403), 131042 (payment). Other codes answer HTTP 400 with
	// a generic title.
	SendError int
}

// HealthError is one entry of a health_status entity's errors.
type HealthError struct {
	Code        int    `json:"error_code"`
	Description string `json:"error_description"`
	Solution    string `json:"possible_solution"`
}

// health_status can_send_message values (Meta's health status page).
const (
	HealthAvailable = "AVAILABLE"
	HealthLimited   = "LIMITED"
	HealthBlocked   = "BLOCKED"
)

// The ids of the entities health_status reports besides the number and
// the WABA.
const (
	businessID = "100000000000010"
	appID      = "100000000000020"
)

// defaultHealthErrors are Meta's own examples (the OpenAPI document's
// health_status example).
var defaultHealthErrors = map[string][]HealthError{
	HealthBlocked: {{
		Code:        141006,
		Description: "There is an error with the payment method. This will block business initiated conversations.",
		Solution:    "There was an error with your payment method. Please add a new payment method to the account.",
	}},
	HealthLimited: {{
		Code:        141010,
		Description: "The Business has not passed business verification.",
		Solution:    "Visit business settings and start or resolve the business verification request.",
	}},
}

// accountErrors are the answers of NumberInfo.SendError, with Meta's titles
// and details (its error-code page; the HTTP statuses of its older table).
var accountErrors = map[int]failure{
	codeSpamRate: waError(codeSpamRate, "Spam rate limit hit",
		"Message failed to send because there are restrictions on how many messages can be sent from this phone number. This may be because too many previous messages were blocked or flagged as spam."),
	codeDisplayName: waError(codeDisplayName, "WhatsApp provided number needs display name approval before message can be sent.",
		"The business phone number needs an approved display name before it can send messages."),
	codeNumberDeleted: waError(codeNumberDeleted, "Parameter value is not valid",
		"The business phone number has been deleted."),
	368: forbidden(waError(368, "Temporarily blocked for policies violations",
		"The WhatsApp Business Account associated with the app has been restricted or disabled for violating a platform policy.")),
	131031: forbidden(waError(131031, "Account has been locked",
		"The WhatsApp Business Account associated with the app has been restricted or disabled for violating a platform policy, or the data of the account could not be verified.")),
	131042: waError(131042, "Business eligibility payment issue",
		"Message failed to send because there were one or more errors related to your payment method."),
}

func forbidden(f failure) failure {
	f.status = http.StatusForbidden
	return f
}

// accountError is the answer of every send from a number whose SendError
// is code.
func accountError(code int) failure {
	if f, ok := accountErrors[code]; ok {
		return f
	}
	return waError(code, "Message failed to send",
		fmt.Sprintf("Every send from this phone number answers %d (sandbox Config.Numbers).", code))
}

// info is number id's NumberInfo with the defaults filled in.
func (s *Server) info(id string) NumberInfo {
	n := s.cfg.Numbers[id]
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&n.VerifiedName, "Sandbox Store")
	def(&n.Quality, "GREEN")
	def(&n.Throughput, s.level(id))
	def(&n.MessagingLimit, "TIER_10K")
	def(&n.NameStatus, "APPROVED")
	def(&n.Status, "CONNECTED")
	def(&n.Health, HealthAvailable)
	return n
}

// displayOf is the display_phone_number of webhooks' metadata for a
// phone-number-id: a US 555 number, digits only.
func displayOf(id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	return fmt.Sprintf("1555%07d", h.Sum32()%10_000_000)
}

// numberResp is the answer of GET /{phone-number-id} (OpenAPI
// PhoneNumberInfo, plus the fields the health status, throughput and
// messaging limit pages document).
type numberResp struct {
	VerifiedName           string          `json:"verified_name,omitempty"`
	CodeVerificationStatus string          `json:"code_verification_status,omitempty"`
	DisplayPhoneNumber     string          `json:"display_phone_number,omitempty"`
	QualityRating          string          `json:"quality_rating,omitempty"`
	PlatformType           string          `json:"platform_type,omitempty"`
	Throughput             *throughputResp `json:"throughput,omitempty"`
	MessagingLimit         string          `json:"whatsapp_business_manager_messaging_limit,omitempty"`
	NameStatus             string          `json:"name_status,omitempty"`
	Status                 string          `json:"status,omitempty"`
	HealthStatus           *healthStatus   `json:"health_status,omitempty"`
	ID                     string          `json:"id"`
}

type throughputResp struct {
	Level string `json:"level"`
}

type healthStatus struct {
	CanSendMessage string         `json:"can_send_message"`
	Entities       []healthEntity `json:"entities"`
}

type healthEntity struct {
	EntityType     string        `json:"entity_type"`
	ID             string        `json:"id"`
	CanSendMessage string        `json:"can_send_message"`
	Errors         []HealthError `json:"errors,omitempty"`
}

// numberFields are the fields GET /{phone-number-id} can return.
var numberFields = []string{
	"id", "display_phone_number", "verified_name", "quality_rating", "code_verification_status",
	"platform_type", "throughput", "whatsapp_business_manager_messaging_limit", "name_status",
	"status", "health_status",
}

// readNumber handles GET /{version}/{phone-number-id}. The fields query
// parameter is honoured (Graph's nested syntax, as in
// health_status{can_send_message}, returns the whole field); a field the
// node does not have answers code 100, as Graph does. Without fields it
// returns every field, where Meta returns only id, display_phone_number,
// verified_name and quality_rating: always ask for the fields you read.
func (s *Server) readNumber(w http.ResponseWriter, r *http.Request, id string) {
	if f := s.auth(r); f.code != 0 {
		s.fail(w, f)
		return
	}
	if !s.exists(id) || id == s.wabaID {
		// The WABA node has other fields: the sandbox does not serve it.
		s.fail(w, unknownObject("get", id))
		return
	}
	want, f := parseFields(r.URL.Query().Get("fields"))
	if f.code != 0 {
		s.fail(w, f)
		return
	}
	pick := func(name string) bool { return want == nil || want[name] }

	n := s.info(id)
	resp := numberResp{ID: id}
	if pick("display_phone_number") {
		d := displayOf(id)
		resp.DisplayPhoneNumber = "+" + d[:1] + " " + d[1:4] + "-" + d[4:7] + "-" + d[7:]
	}
	set := func(name string, p *string, v string) {
		if pick(name) {
			*p = v
		}
	}
	set("verified_name", &resp.VerifiedName, n.VerifiedName)
	set("quality_rating", &resp.QualityRating, n.Quality)
	set("code_verification_status", &resp.CodeVerificationStatus, "VERIFIED")
	set("platform_type", &resp.PlatformType, "CLOUD_API")
	set("whatsapp_business_manager_messaging_limit", &resp.MessagingLimit, n.MessagingLimit)
	set("name_status", &resp.NameStatus, n.NameStatus)
	set("status", &resp.Status, n.Status)
	if pick("throughput") {
		resp.Throughput = &throughputResp{Level: n.Throughput}
	}
	if pick("health_status") {
		resp.HealthStatus = s.health(id, n)
	}
	s.answer(w, r, resp)
}

// health is a number's health_status: one entity per node involved in its
// sends, the one carrying a LIMITED or BLOCKED health with its errors.
func (s *Server) health(id string, n NumberInfo) *healthStatus {
	carrier := n.HealthEntity
	if carrier == "" {
		carrier = "BUSINESS"
		if n.Health != HealthLimited {
			carrier = "WABA"
		}
	}
	errs := n.HealthErrors
	if errs == nil {
		errs = defaultHealthErrors[n.Health]
	}
	h := &healthStatus{CanSendMessage: n.Health}
	for _, e := range []healthEntity{
		{EntityType: "PHONE_NUMBER", ID: id},
		{EntityType: "WABA", ID: s.wabaID},
		{EntityType: "BUSINESS", ID: businessID},
		{EntityType: "APP", ID: appID},
	} {
		e.CanSendMessage = HealthAvailable
		if n.Health != HealthAvailable && strings.EqualFold(e.EntityType, carrier) {
			e.CanSendMessage, e.Errors = n.Health, errs
		}
		h.Entities = append(h.Entities, e)
	}
	return h
}

// exists reports whether the phone-number-id id (all digits) is a number
// of this sandbox, without creating its state.
func (s *Server) exists(id string) bool {
	if _, ok := s.numbers.Load(id); ok {
		return true
	}
	return !s.known
}

// parseFields reads a Graph fields parameter: names separated by commas,
// each possibly followed by a nested selection in braces or modifiers
// after a dot. It returns nil for an empty parameter (every field).
func parseFields(q string) (map[string]bool, failure) {
	if strings.TrimSpace(q) == "" {
		return nil, failure{}
	}
	want := map[string]bool{}
	depth, start := 0, 0
	add := func(f string) failure {
		if i := strings.IndexAny(f, "{."); i >= 0 {
			f = f[:i]
		}
		f = strings.TrimSpace(f)
		switch {
		case f == "":
		case !slices.Contains(numberFields, f):
			return graphParam(fmt.Sprintf("(#100) Tried accessing nonexisting field (%s) on node type (WhatsAppBusinessPhoneNumber)", f))
		default:
			want[f] = true
		}
		return failure{}
	}
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				if f := add(q[start:i]); f.code != 0 {
					return nil, f
				}
				start = i + 1
			}
		}
	}
	if f := add(q[start:]); f.code != 0 {
		return nil, f
	}
	return want, failure{}
}
