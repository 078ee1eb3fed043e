package whatsapp

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
)

func TestClassByCode(t *testing.T) {
	cases := []struct {
		name   string
		err    APIError
		want   campaign.Class
		reason string        // SendError.Reason
		rest   time.Duration // SendError.RestFor
	}{
		{"throughput 130429", APIError{HTTPStatus: 400, Code: 130429, Type: "OAuthException"}, campaign.Throttled, "", 0},
		{"app rate 4", APIError{HTTPStatus: 400, Code: 4, Type: "OAuthException"}, campaign.Throttled, "", 0},
		{"WABA rate 80007", APIError{HTTPStatus: 400, Code: 80007, Type: "OAuthException"}, campaign.Throttled, "", 0},
		{"maintenance 131057", APIError{HTTPStatus: 500, Code: 131057, Type: "OAuthException"}, campaign.Throttled, "", 0},
		{"pair 131056", APIError{HTTPStatus: 400, Code: 131056, Type: "OAuthException"}, campaign.PairLimited, "", 0},
		{"unknown 131000", APIError{HTTPStatus: 500, Code: 131000, Type: "OAuthException"}, campaign.Transient, "", 0},
		{"service 131016", APIError{HTTPStatus: 503, Code: 131016, Type: "OAuthException"}, campaign.Transient, "", 0},
		{"overloaded 2", APIError{HTTPStatus: 503, Code: 2, Type: "OAuthException"}, campaign.Transient, "", 0},
		{"bare 503", APIError{HTTPStatus: 503}, campaign.Transient, "", 0},
		{"bare 429", APIError{HTTPStatus: 429}, campaign.Throttled, "", 0},
		{"bare 404: wrong URL", APIError{HTTPStatus: 404}, campaign.Fatal, "", 0},
		{"undeliverable 131026", APIError{HTTPStatus: 400, Code: 131026, Type: "OAuthException"}, campaign.Permanent, "", 0},
		{"stopped marketing 131050", APIError{HTTPStatus: 400, Code: 131050, Type: "OAuthException"}, campaign.Permanent, campaign.FailStoppedMarketing, 0},
		{"experiment 130472", APIError{HTTPStatus: 400, Code: 130472, Type: "OAuthException"}, campaign.Permanent, "", 0},
		{"blocked 130403", APIError{HTTPStatus: 400, Code: 130403, Type: "OAuthException"}, campaign.Permanent, "", 0},
		{"token 190", APIError{HTTPStatus: 401, Code: 190, Type: "OAuthException"}, campaign.Fatal, "", 0},
		{"auth 0", APIError{HTTPStatus: 401, Code: 0, Type: "OAuthException"}, campaign.Fatal, "", 0},
		{"permission 10", APIError{HTTPStatus: 403, Code: 10, Type: "OAuthException"}, campaign.Fatal, "", 0},
		{"permission 200-299", APIError{HTTPStatus: 403, Code: 250, Type: "OAuthException"}, campaign.Fatal, "", 0},
		{"policy 368", APIError{HTTPStatus: 403, Code: 368, Type: "OAuthException"}, campaign.Fatal, "", 0},
		{"template 132001", APIError{HTTPStatus: 404, Code: 132001, Type: "OAuthException"}, campaign.Fatal, "", 0},
		{"params 132000", APIError{HTTPStatus: 400, Code: 132000, Type: "OAuthException"}, campaign.Fatal, "", 0},
		{"paused 132015", APIError{HTTPStatus: 400, Code: 132015, Type: "OAuthException"}, campaign.Fatal, "", 0},
		{"billing 131042", APIError{HTTPStatus: 400, Code: 131042, Type: "OAuthException"}, campaign.Fatal, "", 0},
		{"unknown code fails the row only", APIError{HTTPStatus: 400, Code: 999999, Type: "OAuthException"}, campaign.Permanent, "", 0},
		{"marketing off on Cloud API 131063", APIError{HTTPStatus: 400, Code: 131063, Type: "OAuthException"}, campaign.Fatal, "", 0},
		{"no approved display name 131037", APIError{HTTPStatus: 400, Code: 131037, Type: "OAuthException"}, campaign.Fatal, "", 0},
		{"number deleted 33", APIError{HTTPStatus: 400, Code: 33, Type: "OAuthException"}, campaign.Fatal, "", 0},
		{"spam-rate restriction 131048 rests the number", APIError{HTTPStatus: 400, Code: 131048, Type: "OAuthException"}, campaign.SenderRested, "", 0},
		{"marketing cap 131049", APIError{HTTPStatus: 400, Code: 131049, Type: "OAuthException"}, campaign.Permanent, campaign.FailMarketingCap, 0},
		{"MM API: not marketing 131055", APIError{HTTPStatus: 400, Code: 131055, Type: "OAuthException"}, campaign.Fatal, "", 0},
		{"MM API: only marketing 134100", APIError{HTTPStatus: 400, Code: 134100, Type: "OAuthException"}, campaign.Fatal, "", 0},
		{"MM API: template syncing 134101", APIError{HTTPStatus: 400, Code: 134101, Type: "OAuthException"}, campaign.Paused, "", 10 * time.Minute},
		{"MM API: not eligible 134102", APIError{HTTPStatus: 500, Code: 134102, Type: "OAuthException"}, campaign.Fatal, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			se := tc.err.sendError()
			if se.Class != tc.want {
				t.Fatalf("class = %v, want %v", se.Class, tc.want)
			}
			if se.Code != tc.err.Code || se.Title != tc.err.Title() || !errors.Is(se, &tc.err) && se.Err != &tc.err {
				t.Fatalf("send error %+v does not carry the answer", se)
			}
			if se.Reason != tc.reason || se.RestFor != tc.rest {
				t.Fatalf("reason %q rest %v, want %q %v", se.Reason, se.RestFor, tc.reason, tc.rest)
			}
		})
	}
}

// TestFatalAnswersAreNamed: every fatal code of the table is either one
// the CLI turns into flag advice (errors.Is) or has a hint of its own, so
// no fatal stop leaves the operator without a next step.
func TestFatalAnswersAreNamed(t *testing.T) {
	check := func(e *APIError) {
		t.Helper()
		named := false
		for _, k := range allKinds {
			named = named || errors.Is(e, k)
		}
		if !named && e.Hint() == "" {
			t.Errorf("fatal %v: neither a kind nor a hint", e)
		}
	}
	for code, c := range classes {
		if c == campaign.Fatal {
			check(&APIError{HTTPStatus: 400, Code: code, Type: "OAuthException"})
		}
	}
	check(&APIError{HTTPStatus: 404})
	check(&APIError{HTTPStatus: 403, Code: 250, Type: "OAuthException"})
}

// allKinds are the kinds of fatal answers (errors.Is targets).
var allKinds = []error{ErrToken, ErrPermission, ErrTemplate, ErrParamCount, ErrParameters, ErrEndpoint,
	ErrMarketingOff, ErrNotMarketing, ErrMarketingUnavailable}

func TestKinds(t *testing.T) {
	for _, tc := range []struct {
		err  APIError
		kind error
		hint string
	}{
		{APIError{HTTPStatus: 401, Code: 190, Type: "OAuthException"}, ErrToken, "access token"},
		{APIError{HTTPStatus: 401, Type: "OAuthException"}, ErrToken, "access token"},
		{APIError{HTTPStatus: 404}, ErrEndpoint, "without an error body"},
		{APIError{HTTPStatus: 401}, ErrEndpoint, "without an error body"},
		{APIError{HTTPStatus: 404, Code: 132001, Type: "OAuthException"}, ErrTemplate, "template does not exist"},
		{APIError{HTTPStatus: 400, Code: 132000, Type: "OAuthException"}, ErrParamCount, "number of body parameters"},
		{APIError{HTTPStatus: 400, Code: 100, Type: "OAuthException"}, ErrParameters, "shape"},
		{APIError{HTTPStatus: 403, Code: 10, Type: "OAuthException"}, ErrPermission, "permission"},
		{APIError{HTTPStatus: 400, Code: 131063, Type: "OAuthException"}, ErrMarketingOff, "disable_marketing_messages_on_cloud_api off"},
		{APIError{HTTPStatus: 400, Code: 131055, Type: "OAuthException"}, ErrNotMarketing, "marketing templates only"},
		{APIError{HTTPStatus: 400, Code: 134100, Type: "OAuthException"}, ErrNotMarketing, "marketing templates only"},
		{APIError{HTTPStatus: 500, Code: 134102, Type: "OAuthException"}, ErrMarketingUnavailable, "marketing_messages_lite_api_status"},
	} {
		if !errors.Is(&tc.err, tc.kind) {
			t.Errorf("%+v is not %v", tc.err, tc.kind)
		}
		for _, other := range allKinds {
			if other != tc.kind && errors.Is(&tc.err, other) {
				t.Errorf("%+v is also %v", tc.err, other)
			}
		}
		if h := tc.err.Hint(); !strings.Contains(h, tc.hint) {
			t.Errorf("%+v: hint %q does not mention %q", tc.err, h, tc.hint)
		}
	}
}

func TestAPIErrorText(t *testing.T) {
	e := &APIError{HTTPStatus: 400, Code: 130429, Message: "(#130429) Rate limit hit", Details: "Cloud API message throughput has been reached."}
	if got, want := e.Error(), "api: (#130429) Rate limit hit: Cloud API message throughput has been reached."; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if got := e.Title(); got != "Rate limit hit" {
		t.Fatalf("Title() = %q", got)
	}
	// The code's digits elsewhere in the message do not stand for it.
	e = &APIError{HTTPStatus: 400, Code: 100, Message: "Unsupported post request. Object with ID '1000002' does not exist"}
	if got := e.Error(); !strings.HasPrefix(got, "api: (#100) Unsupported") {
		t.Fatalf("Error() = %q, want it to begin with the code", got)
	}
	if got := (&APIError{HTTPStatus: 503}).Error(); got != "api: HTTP 503" {
		t.Fatalf("bare Error() = %q", got)
	}
}

// TestHints: the account and number codes that stop a run say what to do
// (without naming flags: the CLI does that).
func TestHints(t *testing.T) {
	for code, want := range map[int]string{
		131063: "Marketing Messages API",
		131037: "approved display name",
		33:     "check the sender phone-number ID",
		131048: "spam",
		134101: "wait 10 minutes",
	} {
		h := (&APIError{HTTPStatus: 400, Code: code, Type: "OAuthException"}).Hint()
		if !strings.Contains(h, want) {
			t.Errorf("%d: hint %q does not mention %q", code, h, want)
		}
		if strings.Contains(h, "--") {
			t.Errorf("%d: hint %q names a flag", code, h)
		}
	}
}
