package smssandbox

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

var headers = map[string]string{
	"Authorization": sigv4,
	"Content-Type":  "application/x-amz-json-1.0",
	"X-Amz-Target":  "PinpointSMSVoiceV2.SendTextMessage",
}

func with(k, v string) map[string]string {
	h := map[string]string{}
	for a, b := range headers {
		h[a] = b
	}
	if v == "" {
		delete(h, k)
	} else {
		h[k] = v
	}
	return h
}

const good = `{"DestinationPhoneNumber":"+12065551000","OriginationIdentity":"+12065550100","MessageBody":"Hello"}`

// TestErrorWire checks every error path's wire shape: HTTP status, the
// X-Amzn-ErrorType header, the body's __type (the same), Reason,
// ResourceType and ResourceId where the SDK reads them.
func TestErrorWire(t *testing.T) {
	account := func(e string) Config { return Config{AccountError: e} }
	listed := Config{
		Numbers:           []Number{{ID: "phone-0123456789abcdef0123456789abcdef", PhoneNumber: "+12065550100", OptOutList: "Promos"}},
		Pools:             []Pool{{ID: "pool-0123456789abcdef0123456789abcdef"}},
		OptOuts:           map[string][]string{"Promos": {"+12065551999"}, "Default": {"+12065551998"}},
		ConfigurationSets: []string{"bulksend"},
		PricePerPart:      map[string]float64{"1": 0.00581, "44": 0.0463},
		BlockedPrefixes:   []string{"+7", "380"},
		ThrottleAlways:    []string{"phone-0123456789abcdef0123456789abcdef"},
	}
	type want struct {
		status                   int
		typ, reason, rtype, rid  string
		field, messageMentioning string
	}
	for _, tc := range []struct {
		name    string
		cfg     Config
		method  string
		path    string
		headers map[string]string
		body    string
		want    want
	}{
		{"no Authorization header", Config{}, "", "", with("Authorization", ""), good,
			want{status: 403, typ: "MissingAuthenticationTokenException", messageMentioning: "Missing Authentication Token"}},
		{"not SigV4", Config{}, "", "", with("Authorization", "Bearer abc"), good,
			want{status: 400, typ: "IncompleteSignatureException", messageMentioning: "Credential"}},
		{"SigV2", Config{}, "", "", with("Authorization", "AWS AKIDEXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg="), good,
			want{status: 400, typ: "IncompleteSignatureException"}},
		{"unknown operation", Config{}, "", "", with("X-Amz-Target", "PinpointSMSVoiceV2.SendVoiceMessage"), good,
			want{status: 400, typ: "UnknownOperationException", messageMentioning: "SendVoiceMessage"}},
		{"another service's target", Config{}, "", "", with("X-Amz-Target", "DynamoDB_20120810.ListTables"), good,
			want{status: 400, typ: "UnknownOperationException"}},
		{"no target", Config{}, "", "", with("X-Amz-Target", ""), good,
			want{status: 400, typ: "UnknownOperationException"}},
		{"JSON 1.1 content type", Config{}, "", "", with("Content-Type", "application/x-amz-json-1.1"), good,
			want{status: 400, typ: "UnknownOperationException"}},
		{"GET", Config{}, http.MethodGet, "/", headers, "",
			want{status: 400, typ: "UnknownOperationException"}},
		{"another path", Config{}, "", "/v1/sms", headers, good,
			want{status: 400, typ: "UnknownOperationException"}},
		{"not JSON", Config{}, "", "", headers, `{"DestinationPhoneNumber":`,
			want{status: 400, typ: "SerializationException"}},
		{"wrong member type", Config{}, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","MessageBody":"x","TimeToLive":"1h"}`,
			want{status: 400, typ: "SerializationException"}},
		{"no destination", Config{}, "", "", headers, `{"MessageBody":"Hello"}`,
			want{status: 400, typ: "ValidationException", reason: "MISSING_PARAMETER", field: "DestinationPhoneNumber"}},
		{"destination not E.164", Config{}, "", "", headers, `{"DestinationPhoneNumber":"+0123","MessageBody":"Hello"}`,
			want{status: 400, typ: "ValidationException", reason: "FIELD_VALIDATION_FAILED", field: "DestinationPhoneNumber"}},
		{"no body", Config{}, "", "", headers, `{"DestinationPhoneNumber":"+12065551000"}`,
			want{status: 400, typ: "ValidationException", reason: "MISSING_PARAMETER", field: "MessageBody"}},
		{"body over 1600 characters", Config{}, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","MessageBody":"` + strings.Repeat("a", 1601) + `"}`,
			want{status: 400, typ: "ValidationException", reason: "FIELD_VALIDATION_FAILED", field: "MessageBody"}},
		{"unknown message type", Config{}, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","MessageBody":"x","MessageType":"MARKETING"}`,
			want{status: 400, typ: "ValidationException", reason: "FIELD_VALIDATION_FAILED", field: "MessageType"}},
		{"MaxPrice not a price", Config{}, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","MessageBody":"x","MaxPrice":"1"}`,
			want{status: 400, typ: "ValidationException", reason: "FIELD_VALIDATION_FAILED", field: "MaxPrice"}},
		{"TimeToLive too short", Config{}, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","MessageBody":"x","TimeToLive":4}`,
			want{status: 400, typ: "ValidationException", reason: "FIELD_VALIDATION_FAILED", field: "TimeToLive"}},
		{"six context entries", Config{}, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","MessageBody":"x","Context":{"a":"1","b":"1","c":"1","d":"1","e":"1","f":"1"}}`,
			want{status: 400, typ: "ValidationException", reason: "FIELD_VALIDATION_FAILED", field: "Context"}},
		{"context value with trailing space", Config{}, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","MessageBody":"x","Context":{"bulksend":"c:1 "}}`,
			want{status: 400, typ: "ValidationException", reason: "FIELD_VALIDATION_FAILED", field: "Context.bulksend"}},
		{"body over ten parts", Config{}, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","OriginationIdentity":"ACME","MessageBody":"` + strings.Repeat("€", 800) + `"}`,
			want{status: 400, typ: "ValidationException", reason: "MAXIMUM_SIZE_EXCEEDED", field: "MessageBody"}},
		{"631 UCS-2 characters", Config{}, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","OriginationIdentity":"ACME","MessageBody":"` + strings.Repeat("ж", 631) + `"}`,
			want{status: 400, typ: "ValidationException", reason: "MAXIMUM_SIZE_EXCEEDED", field: "MessageBody"}},
		{"unknown configuration set", listed, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","MessageBody":"x","ConfigurationSetName":"other"}`,
			want{status: 400, typ: "ResourceNotFoundException", rtype: "configuration-set", rid: "other"}},
		{"unknown configuration set by ARN", listed, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","MessageBody":"x","ConfigurationSetName":"arn:aws:sms-voice:us-east-1:111122223333:configuration-set/other"}`,
			want{status: 400, typ: "ResourceNotFoundException", rtype: "configuration-set", rid: "other"}},
		{"unknown phone number", listed, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","OriginationIdentity":"+12065550199","MessageBody":"x"}`,
			want{status: 400, typ: "ResourceNotFoundException", rtype: "phone-number", rid: "+12065550199"}},
		{"unknown pool", listed, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","OriginationIdentity":"pool-ffffffffffffffffffffffffffffffff","MessageBody":"x"}`,
			want{status: 400, typ: "ResourceNotFoundException", rtype: "pool", rid: "pool-ffffffffffffffffffffffffffffffff"}},
		{"unregistered sender ID", listed, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","OriginationIdentity":"ACME","MessageBody":"x"}`,
			want{status: 400, typ: "ResourceNotFoundException", rtype: "sender-id", rid: "ACME"}},
		{"no identity and none listed", Config{}, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","MessageBody":"x"}`,
			want{status: 400, typ: "ConflictException", reason: "NO_ORIGINATION_IDENTITIES_FOUND", rtype: "account"}},
		{"blocked country", listed, "", "", headers, `{"DestinationPhoneNumber":"+74951234567","OriginationIdentity":"pool-0123456789abcdef0123456789abcdef","MessageBody":"x"}`,
			want{status: 400, typ: "ConflictException", reason: "DESTINATION_COUNTRY_BLOCKED_BY_PROTECT_CONFIGURATION", rtype: "protect-configuration"}},
		{"blocked country without +", listed, "", "", headers, `{"DestinationPhoneNumber":"380441234567","OriginationIdentity":"pool-0123456789abcdef0123456789abcdef","MessageBody":"x"}`,
			want{status: 400, typ: "ConflictException", reason: "DESTINATION_COUNTRY_BLOCKED_BY_PROTECT_CONFIGURATION"}},
		{"opted out of the number's list", listed, "", "", headers, `{"DestinationPhoneNumber":"+12065551999","OriginationIdentity":"+12065550100","MessageBody":"x"}`,
			want{status: 400, typ: "ConflictException", reason: "DESTINATION_PHONE_NUMBER_OPTED_OUT", rtype: "opted-out-number", rid: "+12065551999"}},
		{"opted out of the pool's list", listed, "", "", headers, `{"DestinationPhoneNumber":"+12065551998","OriginationIdentity":"arn:aws:sms-voice:eu-west-1:111122223333:pool/pool-0123456789abcdef0123456789abcdef","MessageBody":"x"}`,
			want{status: 400, typ: "ConflictException", reason: "DESTINATION_PHONE_NUMBER_OPTED_OUT", rid: "+12065551998"}},
		{"MaxPrice below the part's price", listed, "", "", headers, `{"DestinationPhoneNumber":"+447700900123","OriginationIdentity":"pool-0123456789abcdef0123456789abcdef","MessageBody":"x","MaxPrice":"0.04"}`,
			want{status: 400, typ: "ValidationException", reason: "PRICE_OVER_THRESHOLD", field: "MaxPrice", messageMentioning: "0.04630"}},
		{"throttled", listed, "", "", headers, `{"DestinationPhoneNumber":"+12065551000","OriginationIdentity":"arn:aws:sms-voice:eu-west-1:111122223333:phone-number/phone-0123456789abcdef0123456789abcdef","MessageBody":"x"}`,
			want{status: 400, typ: "ThrottlingException"}},
		{"spend limit", account(SpendLimit), "", "", headers, good,
			want{status: 400, typ: "ServiceQuotaExceededException", reason: "MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT"}},
		{"no origination identities", account(NoIdentity), "", "", headers, good,
			want{status: 400, typ: "ConflictException", reason: "NO_ORIGINATION_IDENTITIES_FOUND"}},
		{"access denied", account(AccessDenied), "", "", headers, good,
			want{status: 400, typ: "AccessDeniedException", messageMentioning: "sms-voice:SendTextMessage"}},
		{"access denied to a Describe", account(AccessDenied), "", "", with("X-Amz-Target", "PinpointSMSVoiceV2.DescribePools"), `{}`,
			want{status: 400, typ: "AccessDeniedException", messageMentioning: "sms-voice:DescribePools"}},
		{"expired token", account(Expired), "", "", headers, good,
			want{status: 400, typ: "ExpiredTokenException", messageMentioning: "expired"}},
		{"internal error", Config{InternalRate: 1}, "", "", headers, good,
			want{status: 500, typ: "InternalServerException"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.cfg)
			defer s.Close()
			a := raw(s, cmpOr(tc.method, http.MethodPost), cmpOr(tc.path, "/"), tc.headers, tc.body)
			w := tc.want
			if a.status != w.status {
				t.Errorf("status %d, want %d: %s", a.status, w.status, a.body)
			}
			// The header and the body say the same type, so an SDK that
			// reads either (v2 reads the header first) decides alike.
			var body map[string]any
			if err := json.Unmarshal(a.body, &body); err != nil {
				t.Fatalf("body %q: %v", a.body, err)
			}
			if h := a.header.Get("X-Amzn-ErrorType"); h != w.typ || body["__type"] != w.typ {
				t.Errorf("X-Amzn-ErrorType %q, __type %q, want %q", h, body["__type"], w.typ)
			}
			if a.header.Get("Content-Type") != "application/x-amz-json-1.0" || a.header.Get("X-Amzn-RequestId") == "" {
				t.Errorf("headers %v", a.header)
			}
			if a.message == "" || (w.messageMentioning != "" && !strings.Contains(a.message, w.messageMentioning)) {
				t.Errorf("Message %q, want one mentioning %q", a.message, w.messageMentioning)
			}
			if a.reason != w.reason {
				t.Errorf("Reason %q, want %q", a.reason, w.reason)
			}
			if w.rtype != "" && a.resType != w.rtype || w.rid != "" && a.resID != w.rid {
				t.Errorf("ResourceType %q, ResourceId %q; want %q, %q", a.resType, a.resID, w.rtype, w.rid)
			}
			if w.field != "" && (len(a.fields) != 1 || a.fields[0].Name != w.field || a.fields[0].Message == "") {
				t.Errorf("Fields %+v, want one for %s", a.fields, w.field)
			}
			if w.typ == "InternalServerException" && a.requestID != a.header.Get("X-Amzn-RequestId") {
				t.Errorf("RequestId %q, header %q", a.requestID, a.header.Get("X-Amzn-RequestId"))
			}
			// Only the members the type has.
			for _, k := range []string{"Reason", "ResourceType", "ResourceId", "Fields", "RequestId"} {
				if _, ok := body[k]; ok && !members[w.typ][k] {
					t.Errorf("%s carries %s", w.typ, k)
				}
			}
		})
	}
}

// members are the members each error type has, besides Message
// (deserializers.go's awsAwsjson10_deserializeDocument…Exception).
var members = map[string]map[string]bool{
	"AccessDeniedException":         {"Reason": true},
	"ConflictException":             {"Reason": true, "ResourceType": true, "ResourceId": true},
	"InternalServerException":       {"RequestId": true},
	"ResourceNotFoundException":     {"ResourceType": true, "ResourceId": true},
	"ServiceQuotaExceededException": {"Reason": true},
	"ValidationException":           {"Reason": true, "Fields": true},
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestSuccessWire(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	a := raw(s, http.MethodPost, "/", headers, good)
	if a.status != 200 || a.header.Get("Content-Type") != "application/x-amz-json-1.0" || a.header.Get("X-Amzn-ErrorType") != "" {
		t.Fatalf("%v %v", a, a.header)
	}
	var body map[string]any
	json.Unmarshal(a.body, &body)
	id, _ := body["MessageId"].(string)
	if len(body) != 1 || len(id) != 36 || strings.Count(id, "-") != 4 {
		t.Errorf("body %s: want only a MessageId shaped like a UUID", a.body)
	}
	if b := send(s, msg{DestinationPhoneNumber: "+12065551001", OriginationIdentity: "+12065550100", MessageBody: "x"}); b.status != 400 {
		// Same identity within the second: the budget says no.
		t.Errorf("second send: %v", b)
	}
	if c := send(s, msg{DestinationPhoneNumber: "+12065551001", OriginationIdentity: "+12065550101", MessageBody: "x"}); c.messageID == a.messageID || c.messageID == "" {
		t.Errorf("message ids %q, %q", a.messageID, c.messageID)
	}
}

func TestMaxPriceBoundary(t *testing.T) {
	s := New(Config{MPS: -1, PricePerPart: map[string]float64{"1": 0.00581, "1206": 0.009}})
	defer s.Close()
	for _, tc := range []struct {
		dest, maxPrice string
		ok             bool
	}{
		// MaxPrice is per message: a 3-part message costs three parts.
		{"+13125551000", "0.01743", true},
		{"+13125551000", "0.00581", false},
		{"+13125551000", "0.0174", false},
		{"+12065551000", "0.01743", false}, // the longer prefix wins
		{"+12065551000", "0.027", true},
		{"+33612345678", "0.0225", true}, // the default price
		{"+33612345678", ".0224", false},
	} {
		a := send(s, msg{DestinationPhoneNumber: tc.dest, OriginationIdentity: from, MessageBody: text(3), MaxPrice: tc.maxPrice})
		if ok := a.status == 200; ok != tc.ok || (!ok && a.reason != "PRICE_OVER_THRESHOLD") {
			t.Errorf("%s at MaxPrice %s: %v", tc.dest, tc.maxPrice, a)
		}
	}
}

func TestDryRun(t *testing.T) {
	var ev lockedBuffer
	s := New(Config{Events: &ev, OptOuts: map[string][]string{"Default": {"+12065551999"}}})
	for range 3 {
		if a := send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: from, MessageBody: "x", DryRun: true}); a.status != 200 || a.messageID == "" {
			t.Fatalf("dry run: %v", a)
		}
	}
	// Still validated: an opted-out destination is refused.
	if a := send(s, msg{DestinationPhoneNumber: "+12065551999", OriginationIdentity: from, MessageBody: "x", DryRun: true}); a.reason != "DESTINATION_PHONE_NUMBER_OPTED_OUT" {
		t.Errorf("dry run to an opted-out number: %v", a)
	}
	// No budget used: a real send right after passes.
	if a := send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: from, MessageBody: "x"}); a.status != 200 {
		t.Errorf("send after dry runs: %v", a)
	}
	s.Close()
	st := s.Stats()
	if st.DryRuns != 3 || st.Accepted != 1 || len(parseEvents(t, ev.Bytes())) != 1 {
		t.Errorf("stats %+v, events %s", st, ev.Bytes())
	}
}

func TestClosedAnswers503(t *testing.T) {
	s := New(Config{})
	s.Close()
	if a := raw(s, http.MethodPost, "/", headers, good); a.status != 503 || a.typ != "ServiceUnavailableException" {
		t.Errorf("after Close: %v", a)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero", Config{}, true},
		{"account error", Config{AccountError: SpendLimit}, true},
		{"unknown account error", Config{AccountError: "broke"}, false},
		{"rate over 1", Config{FailRate: 1.5}, false},
		{"rates over 1 together", Config{ThrottleRate: 0.5, InternalRate: 0.3, LateRate: 0.3}, false},
		{"unknown number type", Config{Numbers: []Number{{Type: "MOBILE"}}}, false},
		{"phone number not E.164", Config{Numbers: []Number{{PhoneNumber: "2065550100"}}}, false},
		{"same number twice", Config{Numbers: []Number{{PhoneNumber: "+12065550100"}, {PhoneNumber: "+12065550100"}}}, false},
		{"opt-out entry not a phone number", Config{OptOuts: map[string][]string{"Default": {"+1206555abcd"}}}, false},
		{"pool of an unknown number", Config{Pools: []Pool{{Numbers: []string{"+12065550100"}}}}, false},
		{"pool of a listed number", Config{Numbers: []Number{{PhoneNumber: "+12065550100"}}, Pools: []Pool{{Numbers: []string{"+12065550100"}}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
}
