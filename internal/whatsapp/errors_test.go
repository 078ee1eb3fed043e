package whatsapp

import (
	"errors"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
)

func TestClassByCode(t *testing.T) {
	cases := []struct {
		name string
		err  APIError
		want campaign.Class
	}{
		{"throughput 130429", APIError{HTTPStatus: 400, Code: 130429, Type: "OAuthException"}, campaign.Throttled},
		{"app rate 4", APIError{HTTPStatus: 400, Code: 4, Type: "OAuthException"}, campaign.Throttled},
		{"WABA rate 80007", APIError{HTTPStatus: 400, Code: 80007, Type: "OAuthException"}, campaign.Throttled},
		{"maintenance 131057", APIError{HTTPStatus: 500, Code: 131057, Type: "OAuthException"}, campaign.Throttled},
		{"pair 131056", APIError{HTTPStatus: 400, Code: 131056, Type: "OAuthException"}, campaign.PairLimited},
		{"unknown 131000", APIError{HTTPStatus: 500, Code: 131000, Type: "OAuthException"}, campaign.Transient},
		{"service 131016", APIError{HTTPStatus: 503, Code: 131016, Type: "OAuthException"}, campaign.Transient},
		{"overloaded 2", APIError{HTTPStatus: 503, Code: 2, Type: "OAuthException"}, campaign.Transient},
		{"bare 503", APIError{HTTPStatus: 503}, campaign.Transient},
		{"bare 429", APIError{HTTPStatus: 429}, campaign.Throttled},
		{"bare 404: wrong URL", APIError{HTTPStatus: 404}, campaign.Fatal},
		{"undeliverable 131026", APIError{HTTPStatus: 400, Code: 131026, Type: "OAuthException"}, campaign.Permanent},
		{"opted out 131050", APIError{HTTPStatus: 400, Code: 131050, Type: "OAuthException"}, campaign.Permanent},
		{"experiment 130472", APIError{HTTPStatus: 400, Code: 130472, Type: "OAuthException"}, campaign.Permanent},
		{"blocked 130403", APIError{HTTPStatus: 400, Code: 130403, Type: "OAuthException"}, campaign.Permanent},
		{"token 190", APIError{HTTPStatus: 401, Code: 190, Type: "OAuthException"}, campaign.Fatal},
		{"auth 0", APIError{HTTPStatus: 401, Code: 0, Type: "OAuthException"}, campaign.Fatal},
		{"permission 10", APIError{HTTPStatus: 403, Code: 10, Type: "OAuthException"}, campaign.Fatal},
		{"permission 200-299", APIError{HTTPStatus: 403, Code: 250, Type: "OAuthException"}, campaign.Fatal},
		{"policy 368", APIError{HTTPStatus: 403, Code: 368, Type: "OAuthException"}, campaign.Fatal},
		{"template 132001", APIError{HTTPStatus: 404, Code: 132001, Type: "OAuthException"}, campaign.Fatal},
		{"params 132000", APIError{HTTPStatus: 400, Code: 132000, Type: "OAuthException"}, campaign.Fatal},
		{"paused 132015", APIError{HTTPStatus: 400, Code: 132015, Type: "OAuthException"}, campaign.Fatal},
		{"billing 131042", APIError{HTTPStatus: 400, Code: 131042, Type: "OAuthException"}, campaign.Fatal},
		{"unknown code fails the row only", APIError{HTTPStatus: 400, Code: 999999, Type: "OAuthException"}, campaign.Permanent},
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
		})
	}
}

// TestFatalAnswersAreNamed: every fatal code of the table is either one
// the CLI turns into flag advice (errors.Is) or has a hint of its own, so
// no fatal stop leaves the operator without a next step.
func TestFatalAnswersAreNamed(t *testing.T) {
	kinds := []error{ErrToken, ErrPermission, ErrTemplate, ErrParamCount, ErrParameters, ErrEndpoint}
	check := func(e *APIError) {
		t.Helper()
		named := false
		for _, k := range kinds {
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
	} {
		if !errors.Is(&tc.err, tc.kind) {
			t.Errorf("%+v is not %v", tc.err, tc.kind)
		}
		for _, other := range []error{ErrToken, ErrPermission, ErrTemplate, ErrParamCount, ErrParameters, ErrEndpoint} {
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
	if got := (&APIError{HTTPStatus: 503}).Error(); got != "api: HTTP 503" {
		t.Fatalf("bare Error() = %q", got)
	}
}
