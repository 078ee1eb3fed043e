package whatsapp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/bulksend/bulksend/internal/whatsapp/internal/oas"
)

// limitedNumber is a phone number read as Graph answers it: a number that
// can send, in a business that has not passed business verification.
const limitedNumber = `{
  "id": "106540352242922",
  "display_phone_number": "+1 555-078-3881",
  "verified_name": "Jasper's Market",
  "quality_rating": "YELLOW",
  "throughput": {"level": "STANDARD"},
  "whatsapp_business_manager_messaging_limit": "TIER_10K",
  "name_status": "APPROVED",
  "status": "CONNECTED",
  "health_status": {
    "can_send_message": "LIMITED",
    "entities": [
      {"entity_type": "PHONE_NUMBER", "id": "106540352242922", "can_send_message": "AVAILABLE"},
      {"entity_type": "WABA", "id": "102290129340398", "can_send_message": "AVAILABLE"},
      {"entity_type": "BUSINESS", "id": "506914307656634", "can_send_message": "LIMITED",
       "errors": [{"error_code": 141010, "error_description": "The Business has not passed business verification.",
                   "possible_solution": "Visit business settings and start or resolve the business verification request."}]},
      {"entity_type": "APP", "id": "334925599355201", "can_send_message": "AVAILABLE"}
    ]
  }
}`

func TestPhoneNumber(t *testing.T) {
	spec, err := oas.Load()
	if err != nil {
		t.Fatal(err)
	}
	schema, err := spec.ResponseSchema("getPhoneNumberById", "200")
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Validate(schema, []byte(limitedNumber)); err != nil {
		t.Fatalf("the test's answer is not Meta's %s: %v", schema, err)
	}

	var path, fields, auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, fields, auth = r.URL.Path, r.URL.Query().Get("fields"), r.Header.Get("Authorization")
		io.WriteString(w, limitedNumber)
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, Version: "v23.0", Token: "tok", HTTP: srv.Client()}
	got, err := c.PhoneNumber(context.Background(), "106540352242922")
	if err != nil {
		t.Fatal(err)
	}
	if path != "/v23.0/106540352242922" || auth != "Bearer tok" ||
		fields != "id,display_phone_number,verified_name,quality_rating,throughput,whatsapp_business_manager_messaging_limit,name_status,status,health_status" {
		t.Errorf("GET %s?fields=%s with %q", path, fields, auth)
	}
	want := PhoneNumber{
		ID: "106540352242922", DisplayPhoneNumber: "+1 555-078-3881", VerifiedName: "Jasper's Market",
		QualityRating: "YELLOW", MessagingLimit: "TIER_10K", NameStatus: "APPROVED", Status: "CONNECTED",
		Health: HealthStatus{CanSendMessage: "LIMITED", Entities: []HealthEntity{
			{EntityType: "PHONE_NUMBER", ID: "106540352242922", CanSendMessage: "AVAILABLE"},
			{EntityType: "WABA", ID: "102290129340398", CanSendMessage: "AVAILABLE"},
			{EntityType: "BUSINESS", ID: "506914307656634", CanSendMessage: "LIMITED", Errors: []HealthError{{
				ErrorCode: 141010, ErrorDescription: "The Business has not passed business verification.",
				PossibleSolution: "Visit business settings and start or resolve the business verification request.",
			}}},
			{EntityType: "APP", ID: "334925599355201", CanSendMessage: "AVAILABLE"},
		}},
	}
	want.Throughput.Level = "STANDARD"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PhoneNumber =\n %+v\nwant\n %+v", got, want)
	}
}

// TestPhoneNumberFewFields: fields Graph leaves out (an older version, a
// number without health status) are zero.
func TestPhoneNumberFewFields(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id":"1","display_phone_number":"+1 555-000-0001","quality_rating":"NA"}`)
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, Version: "v23.0", Token: "tok", HTTP: srv.Client()}
	got, err := c.PhoneNumber(context.Background(), "1")
	if err != nil {
		t.Fatal(err)
	}
	if got.QualityRating != "NA" || got.Throughput.Level != "" || got.MessagingLimit != "" || got.Health.CanSendMessage != "" || got.Health.Entities != nil {
		t.Errorf("PhoneNumber = %+v", got)
	}
}

func TestPhoneNumberErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		kind   error // errors.Is, nil for none
		code   int
	}{
		{"expired token", 401, `{"error":{"message":"Error validating access token: Session has expired","type":"OAuthException","code":190,"fbtrace_id":"x"}}`, ErrToken, 190},
		{"no such number", 400, `{"error":{"message":"Unsupported get request. Object with ID '1' does not exist, cannot be loaded due to missing permissions, or does not support this operation.","type":"GraphMethodException","code":100,"error_subcode":33,"fbtrace_id":"y"}}`, nil, 100},
		{"not Graph", 404, `<html>not found</html>`, ErrEndpoint, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c := &Client{BaseURL: srv.URL, Version: "v23.0", Token: "secret-token", HTTP: srv.Client()}
			_, err := c.PhoneNumber(context.Background(), "1")
			var ae *APIError
			if !errors.As(err, &ae) || ae.Code != tc.code {
				t.Fatalf("err = %v, want an *APIError with code %d", err, tc.code)
			}
			if tc.kind != nil && !errors.Is(err, tc.kind) {
				t.Errorf("err = %v is not %v", err, tc.kind)
			}
		})
	}
	// An answer that is not a phone number's JSON is an error, not a zero number.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id":"1","health_status":{"entities":[{"errors":[{"error_code":"141010"}]}]}}`)
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, Version: "v23.0", Token: "t", HTTP: srv.Client()}
	if _, err := c.PhoneNumber(context.Background(), "1"); err == nil {
		t.Error("an error_code that is a string was read")
	}
}

func TestMessagingLimit(t *testing.T) {
	for _, tc := range []struct {
		tier          string
		users         int
		unlimited, ok bool
	}{
		{"TIER_50", 50, false, true},
		{"TIER_250", 250, false, true},
		{"TIER_1K", 1000, false, true},
		{"TIER_2K", 2000, false, true},
		{"TIER_10K", 10000, false, true},
		{"TIER_100K", 100000, false, true},
		{"TIER_UNLIMITED", 0, true, true},
		{"", 0, false, false},
		{"TIER_1M", 0, false, false},
		{"tier_250", 0, false, false},
	} {
		users, unlimited, ok := MessagingLimit(tc.tier)
		if users != tc.users || unlimited != tc.unlimited || ok != tc.ok {
			t.Errorf("MessagingLimit(%q) = %d, %v, %v; want %d, %v, %v", tc.tier, users, unlimited, ok, tc.users, tc.unlimited, tc.ok)
		}
	}
}

func TestThroughputRate(t *testing.T) {
	for _, tc := range []struct {
		level string
		rate  float64
		ok    bool
	}{
		{"STANDARD", 80, true},
		{"HIGH", 1000, true},
		{"NOT_APPLICABLE", 0, false},
		{"", 0, false},
		{"high", 0, false},
	} {
		rate, ok := ThroughputRate(tc.level)
		if rate != tc.rate || ok != tc.ok {
			t.Errorf("ThroughputRate(%q) = %v, %v; want %v, %v", tc.level, rate, ok, tc.rate, tc.ok)
		}
	}
}
