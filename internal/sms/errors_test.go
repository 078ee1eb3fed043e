package sms

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2/types"

	"github.com/bulksend/bulksend/internal/campaign"
)

// ans is an answer of the fake: an HTTP status and an awsJson1_0 body.
type ans struct {
	status int
	body   string
}

func awsErr(status int, typ string, fields ...string) ans {
	b := map[string]any{"__type": typ, "message": "test message"}
	for i := 0; i+1 < len(fields); i += 2 {
		b[fields[i]] = fields[i+1]
	}
	raw, _ := json.Marshal(b)
	return ans{status, string(raw)}
}

func invalid(reason string, fields ...string) ans {
	b := map[string]any{"__type": "ValidationException", "message": "test message", "Reason": reason}
	var fs []map[string]string
	for _, f := range fields {
		fs = append(fs, map[string]string{"Name": f, "Message": "bad " + f})
	}
	if fs != nil {
		b["Fields"] = fs
	}
	raw, _ := json.Marshal(b)
	return ans{400, string(raw)}
}

// TestClassification sends through the fake once per row of the table
// (and per fallback by HTTP status), and checks what the engine gets: the
// class, a stable title, a Reason on every permanent failure, a hint on
// every fatal one. Every row of rules must be reached by some case.
func TestClassification(t *testing.T) {
	const (
		P = campaign.Permanent
		F = campaign.Fatal
		T = campaign.Throttled
		U = campaign.Unanswered
	)
	cases := []struct {
		name   string
		ans    ans
		class  campaign.Class
		title  string // "" not checked
		reason string // permanent: SendError.Reason
		hint   string // a part the hint must contain; "" for no hint required
	}{
		{"throttled", awsErr(400, "ThrottlingException"), T, "ThrottlingException", "", ""},
		{"generic throttling", awsErr(400, "Throttling"), T, "Throttling", "", ""},
		{"too many requests", awsErr(429, "TooManyRequestsException"), T, "", "", ""},

		{"opted out", awsErr(400, "ConflictException", "Reason", "DESTINATION_PHONE_NUMBER_OPTED_OUT", "ResourceType", "opted-out-number", "ResourceId", "+447700900123"),
			P, "ConflictException: DESTINATION_PHONE_NUMBER_OPTED_OUT", campaign.FailOptedOut, "{sync-opt-outs}"},
		{"country blocked by protect", awsErr(400, "ConflictException", "Reason", "DESTINATION_COUNTRY_BLOCKED_BY_PROTECT_CONFIGURATION"),
			P, "ConflictException: DESTINATION_COUNTRY_BLOCKED_BY_PROTECT_CONFIGURATION", "destination_country_blocked_by_protect_configuration", "Protect configurations"},
		{"number blocked by protect override", awsErr(400, "ConflictException", "Reason", "DESTINATION_PHONE_NUMBER_BLOCKED_BY_PROTECT_NUMBER_OVERRIDE"),
			P, "", "destination_phone_number_blocked_by_protect_number_override", "Protect configurations"},
		{"no origination identity", awsErr(400, "ConflictException", "Reason", "NO_ORIGINATION_IDENTITIES_FOUND"), F, "ConflictException: NO_ORIGINATION_IDENTITIES_FOUND", "", "{from}"},
		{"message type mismatch", awsErr(400, "ConflictException", "Reason", "MESSAGE_TYPE_MISMATCH"), F, "", "", "{message-type}"},
		{"keyword mismatch", awsErr(400, "ConflictException", "Reason", "KEYWORD_MISMATCH"), F, "", "", "keyword"},
		{"sandbox account", awsErr(400, "ConflictException", "Reason", "DESTINATION_PHONE_NUMBER_NOT_VERIFIED"), F, "", "", "production access"},
		{"no SMS capability", awsErr(400, "ConflictException", "Reason", "NUMBER_CAPABILITIES_MISMATCH"), F, "", "", "{from}"},
		{"resource not active", awsErr(400, "ConflictException", "Reason", "RESOURCE_NOT_ACTIVE", "ResourceType", "configuration-set", "ResourceId", "bulk-events"),
			F, "", "", "configuration-set bulk-events: "},
		{"other conflict", awsErr(400, "ConflictException", "Reason", "OPT_OUT_LIST_MISMATCH"), F, "ConflictException: OPT_OUT_LIST_MISMATCH", "", "{configuration-set}"},

		{"invalid destination number", invalid("INVALID_PARAMETER", "DestinationPhoneNumber"), P, "ValidationException: INVALID_PARAMETER", "invalid_destination_phone_number", ""},
		{"invalid fields beyond the destination", invalid("INVALID_PARAMETER", "DestinationPhoneNumber", "OriginationIdentity"), F, "", "", "{from}"},
		{"price over --max-price", invalid("PRICE_OVER_THRESHOLD"), P, "ValidationException: PRICE_OVER_THRESHOLD", "price_over_threshold", "{max-price}"},
		{"country blocked", invalid("DESTINATION_COUNTRY_BLOCKED"), P, "", "destination_country_blocked", ""},
		{"identity wrong for the country", invalid("INVALID_IDENTITY_FOR_DESTINATION_COUNTRY"), P, "", "invalid_identity_for_destination_country", "{from}"},
		{"no international sending", invalid("INTERNATIONAL_SENDING_NOT_SUPPORTED"), P, "", "international_sending_not_supported", "{from}"},
		{"sender ID not registered", invalid("SENDER_ID_NOT_REGISTERED"), P, "", "sender_id_not_registered", "Sender IDs"},
		{"sender ID needs registration", invalid("SENDER_ID_REQUIRES_REGISTRATION"), P, "", "sender_id_requires_registration", "Sender IDs"},
		{"sender ID not supported", invalid("SENDER_ID_NOT_SUPPORTED"), P, "", "sender_id_not_supported", "Sender IDs"},
		{"body too long", invalid("MAXIMUM_SIZE_EXCEEDED"), P, "", "maximum_size_exceeded", "shorten"},
		{"invalid ARN", invalid("INVALID_ARN"), F, "", "", "{from}"},
		{"resource of another account", invalid("RESOURCE_NOT_ACCESSIBLE"), F, "", "", "AWS RAM"},
		{"channel not enabled", invalid("CHANNEL_NOT_ENABLED"), F, "", "", "{from}"},
		{"country not enabled", invalid("COUNTRY_NOT_ENABLED"), F, "", "", "country"},
		{"other validation", invalid("MISSING_PARAMETER", "MessageBody"), F, "ValidationException: MISSING_PARAMETER", "", "{max-price}"},

		{"monthly spend limit", awsErr(400, "ServiceQuotaExceededException", "Reason", "MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT"), F,
			"ServiceQuotaExceededException: MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT", "", "spend limit"},
		{"other quota", awsErr(400, "ServiceQuotaExceededException", "Reason", "DAILY_NOTIFY_TIER_MESSAGE_LIMIT"), F, "", "", "Service Quotas"},

		{"account disabled", awsErr(400, "AccessDeniedException", "Reason", "ACCOUNT_DISABLED"), F, "AccessDeniedException: ACCOUNT_DISABLED", "", "AWS Support"},
		{"reputation", awsErr(400, "AccessDeniedException", "Reason", "INSUFFICIENT_ACCOUNT_REPUTATION"), F, "", "", "AWS Support"},
		{"IAM denies", awsErr(403, "AccessDeniedException"), F, "AccessDeniedException", "", "IAM"},

		{"unknown phone number", awsErr(400, "ResourceNotFoundException", "ResourceType", "phone-number", "ResourceId", "phone-0abc"), F,
			"ResourceNotFoundException: phone-number", "", "phone-number phone-0abc: the origination identity does not exist"},
		{"unknown sender ID", awsErr(400, "ResourceNotFoundException", "ResourceType", "sender-id", "ResourceId", "MYBRAND"), F, "", "", "{from}"},
		{"unknown pool", awsErr(400, "ResourceNotFoundException", "ResourceType", "pool", "ResourceId", "pool-1"), F, "", "", "{from}"},
		{"unknown configuration set", awsErr(400, "ResourceNotFoundException", "ResourceType", "configuration-set", "ResourceId", "bulk-evnts"), F,
			"ResourceNotFoundException: configuration-set", "", "configuration-set bulk-evnts: the configuration set does not exist"},
		{"unknown opt-out list", awsErr(400, "ResourceNotFoundException", "ResourceType", "opt-out-list", "ResourceId", "X"), F, "", "", "opt-out list"},
		{"unknown other resource", awsErr(400, "ResourceNotFoundException", "ResourceType", "registration"), F, "", "", "{region}"},

		{"unrecognized client", awsErr(400, "UnrecognizedClientException"), F, "UnrecognizedClientException", "", "AWS_PROFILE"},
		{"invalid key ID", awsErr(403, "InvalidClientTokenId"), F, "", "", "AWS_ACCESS_KEY_ID"},
		{"invalid signature", awsErr(400, "InvalidSignatureException"), F, "", "", "clock"},
		{"signature mismatch", awsErr(403, "SignatureDoesNotMatch"), F, "", "", "secret access key"},
		{"incomplete signature", awsErr(400, "IncompleteSignatureException"), F, "", "", "aws sso login"},
		{"expired token", awsErr(400, "ExpiredTokenException"), F, "", "", "aws sso login"},
		{"expired token (generic)", awsErr(403, "ExpiredToken"), F, "", "", "aws sso login"},
		{"clock skew", awsErr(400, "RequestExpired"), F, "", "", "NTP"},
		{"no credentials sent", awsErr(403, "MissingAuthenticationTokenException"), F, "", "", "AWS_ACCESS_KEY_ID"},
		{"no credentials sent (generic)", awsErr(403, "MissingAuthenticationToken"), F, "", "", "AWS_ACCESS_KEY_ID"},
		{"not subscribed", awsErr(403, "OptInRequired"), F, "", "", "{region}"},
		{"not this API", awsErr(400, "UnknownOperationException"), F, "", "", "{endpoint-url}"},

		{"internal server error", awsErr(500, "InternalServerException", "RequestId", "rid-9"), U, "InternalServerException", "", ""},
		{"internal failure", awsErr(500, "InternalFailure"), U, "", "", ""},
		{"service unavailable", awsErr(503, "ServiceUnavailableException"), U, "", "", ""},
		{"service unavailable (generic)", awsErr(503, "ServiceUnavailable"), U, "", "", ""},
		{"request timeout", awsErr(408, "RequestTimeoutException"), U, "", "", ""},
		{"request timeout (generic)", awsErr(408, "RequestTimeout"), U, "", "", ""},

		// Answers the table has no row for: classed by HTTP status.
		{"bare 502", ans{502, ""}, U, "HTTP 502", "", ""},
		{"bare 504 from a proxy", ans{504, "<html>gateway timeout</html>"}, U, "HTTP 504", "", ""},
		{"bare 429", ans{429, ""}, T, "HTTP 429", "", ""},
		{"bare 403 from a proxy", ans{403, "<html>forbidden</html>"}, F, "HTTP 403", "", "{endpoint-url}"},
		{"unknown exception", awsErr(400, "BrandNewException"), F, "BrandNewException", "", "{endpoint-url}"},
		{"any 5xx is in doubt, whatever its type", invalid("INVALID_PARAMETER", "MessageBody"), U, "", "", ""},
	}
	cases[len(cases)-1].ans.status = 500

	f := newFake(t, nil)
	c := newTestClient(t, f.srv.URL, 0)
	c.Text = text(t)
	covered := make([]bool, len(rules))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.setHandler(func(w http.ResponseWriter, _ *http.Request, _ string, _ map[string]any) {
				reply(w, tc.ans.status, tc.ans.body)
			})
			_, err := c.Send(context.Background(), msg)
			if n := len(f.requests()); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
			var se *campaign.SendError
			var api *APIError
			if !errors.As(err, &se) || !errors.As(err, &api) {
				t.Fatalf("err = %v, want a *campaign.SendError holding an *APIError", err)
			}
			for i, r := range rules {
				if r.matches(api) {
					covered[i] = true
					break
				}
			}
			if se.Class != tc.class {
				t.Errorf("class %v, want %v (%v)", se.Class, tc.class, err)
			}
			if tc.title != "" && se.Title != tc.title {
				t.Errorf("title %q, want %q", se.Title, tc.title)
			}
			if se.Code != 0 || api.HTTPStatus != tc.ans.status {
				t.Errorf("code %d status %d, want 0 and %d", se.Code, api.HTTPStatus, tc.ans.status)
			}
			if tc.class == campaign.Permanent && se.Reason != tc.reason {
				t.Errorf("reason %q, want %q", se.Reason, tc.reason)
			}
			if tc.class != campaign.Permanent && se.Reason != "" {
				t.Errorf("reason %q on a %v failure", se.Reason, se.Class)
			}
			if tc.class == campaign.Fatal && api.Hint() == "" {
				t.Errorf("fatal answer without a hint")
			}
			if !strings.Contains(api.Hint(), tc.hint) {
				t.Errorf("hint %q does not contain %q", api.Hint(), tc.hint)
			}
			if strings.Contains(err.Error(), testSecret) || strings.Contains(api.Hint(), testSecret) {
				t.Errorf("error leaks the secret key: %v", err)
			}
		})
	}
	for i, r := range rules {
		if !covered[i] {
			t.Errorf("no case reaches row %d of the table: %+v", i, r)
		}
	}
}

// TestAPIErrorDetail: what an answer carries reaches the error: its text,
// the request ID for AWS Support, and the SDK's own type for errors.As.
func TestAPIErrorDetail(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ string, _ map[string]any) {
		reply(w, 400, `{"__type":"ConflictException","message":"The destination phone number is opted out.","Reason":"DESTINATION_PHONE_NUMBER_OPTED_OUT","ResourceType":"opted-out-number","ResourceId":"+447700900123"}`)
	})
	c := newTestClient(t, f.srv.URL, 0)
	c.Text = text(t)
	_, err := c.Send(context.Background(), msg)
	var api *APIError
	if !errors.As(err, &api) {
		t.Fatalf("err = %v", err)
	}
	if want := "ConflictException (DESTINATION_PHONE_NUMBER_OPTED_OUT): The destination phone number is opted out. [opted-out-number +447700900123]"; api.Error() != want {
		t.Errorf("Error() = %q\nwant      %q", api.Error(), want)
	}
	if api.RequestID != "req-1234" || api.ResourceID != "+447700900123" || api.Message != "The destination phone number is opted out." {
		t.Errorf("APIError = %+v", api)
	}
	var sdk *types.ConflictException
	if !errors.As(err, &sdk) || sdk.Reason != types.ConflictExceptionReasonDestinationPhoneNumberOptedOut {
		t.Errorf("errors.As does not reach the SDK's *types.ConflictException")
	}
}

// TestTableReasonsExist keeps the table honest: every reason and resource
// type it names is one the SDK's enums define, so a typo cannot silently
// turn a row off.
func TestTableReasonsExist(t *testing.T) {
	enums := map[string][]string{}
	add := func(typ string, vals []string) { enums[typ] = append(enums[typ], vals...) }
	add("ConflictException", strs(types.ConflictExceptionReason("").Values()))
	add("ValidationException", strs(types.ValidationExceptionReason("").Values()))
	add("ServiceQuotaExceededException", strs(types.ServiceQuotaExceededExceptionReason("").Values()))
	add("AccessDeniedException", strs(types.AccessDeniedExceptionReason("").Values()))
	resources := strs(types.ResourceType("").Values())
	for _, r := range rules {
		if r.reason != "" && !contains(enums[r.typ], r.reason) {
			t.Errorf("row %s/%s: %s has no such reason in the SDK", r.typ, r.reason, r.typ)
		}
		if r.resource != "" && !contains(resources, r.resource) {
			t.Errorf("row %s/%s: no such resource type in the SDK", r.typ, r.resource)
		}
	}
}

func strs[S ~string](v []S) []string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = string(s)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Hints name the settings to check as {setting}, never a flag: the CLI
// knows the flags.
func TestHintsNameNoFlag(t *testing.T) {
	for _, r := range rules {
		if strings.Contains(r.hint, " --") || strings.HasPrefix(r.hint, "--") {
			t.Errorf("hint of %s names a flag: %q", r.typ, r.hint)
		}
	}
	for _, h := range []string{hintIdentity, hintMalformed, hintCredentials, hintExpired, unknownHint} {
		if strings.Contains(h, " --") {
			t.Errorf("hint names a flag: %q", h)
		}
	}
}
