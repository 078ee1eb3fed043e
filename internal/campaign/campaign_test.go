package campaign

import (
	"strings"
	"testing"
	"time"
)

func TestClassByCode(t *testing.T) {
	cases := []struct {
		name string
		err  APIError
		want Class
	}{
		{"throughput 130429", APIError{HTTPStatus: 400, Code: 130429, Type: "OAuthException"}, Throttled},
		{"app rate 4", APIError{HTTPStatus: 400, Code: 4, Type: "OAuthException"}, Throttled},
		{"WABA rate 80007", APIError{HTTPStatus: 400, Code: 80007, Type: "OAuthException"}, Throttled},
		{"maintenance 131057", APIError{HTTPStatus: 500, Code: 131057, Type: "OAuthException"}, Throttled},
		{"pair 131056", APIError{HTTPStatus: 400, Code: 131056, Type: "OAuthException"}, PairLimited},
		{"unknown 131000", APIError{HTTPStatus: 500, Code: 131000, Type: "OAuthException"}, Transient},
		{"service 131016", APIError{HTTPStatus: 503, Code: 131016, Type: "OAuthException"}, Transient},
		{"overloaded 2", APIError{HTTPStatus: 503, Code: 2, Type: "OAuthException"}, Transient},
		{"bare 503", APIError{HTTPStatus: 503}, Transient},
		{"bare 429", APIError{HTTPStatus: 429}, Throttled},
		{"bare 404: wrong URL", APIError{HTTPStatus: 404}, Fatal},
		{"undeliverable 131026", APIError{HTTPStatus: 400, Code: 131026, Type: "OAuthException"}, Permanent},
		{"opted out 131050", APIError{HTTPStatus: 400, Code: 131050, Type: "OAuthException"}, Permanent},
		{"experiment 130472", APIError{HTTPStatus: 400, Code: 130472, Type: "OAuthException"}, Permanent},
		{"blocked 130403", APIError{HTTPStatus: 400, Code: 130403, Type: "OAuthException"}, Permanent},
		{"token 190", APIError{HTTPStatus: 401, Code: 190, Type: "OAuthException"}, Fatal},
		{"auth 0", APIError{HTTPStatus: 401, Code: 0, Type: "OAuthException"}, Fatal},
		{"permission 10", APIError{HTTPStatus: 403, Code: 10, Type: "OAuthException"}, Fatal},
		{"permission 200-299", APIError{HTTPStatus: 403, Code: 250, Type: "OAuthException"}, Fatal},
		{"policy 368", APIError{HTTPStatus: 403, Code: 368, Type: "OAuthException"}, Fatal},
		{"template 132001", APIError{HTTPStatus: 404, Code: 132001, Type: "OAuthException"}, Fatal},
		{"params 132000", APIError{HTTPStatus: 400, Code: 132000, Type: "OAuthException"}, Fatal},
		{"paused 132015", APIError{HTTPStatus: 400, Code: 132015, Type: "OAuthException"}, Fatal},
		{"billing 131042", APIError{HTTPStatus: 400, Code: 131042, Type: "OAuthException"}, Fatal},
		{"unknown code fails the row only", APIError{HTTPStatus: 400, Code: 999999, Type: "OAuthException"}, Permanent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Class(); got != tc.want {
				t.Fatalf("Class() = %v, want %v", got, tc.want)
			}
			if tc.want == Fatal && tc.err.Hint() == "" {
				t.Fatal("a fatal error without a hint")
			}
		})
	}
}

func TestHintNamesTheCause(t *testing.T) {
	for _, tc := range []struct {
		err  APIError
		want string
	}{
		{APIError{HTTPStatus: 401, Code: 190, Type: "OAuthException"}, "access token"},
		{APIError{HTTPStatus: 404}, "--api-url"},
		{APIError{HTTPStatus: 404, Code: 132001, Type: "OAuthException"}, "template does not exist"},
	} {
		if h := tc.err.Hint(); !strings.Contains(h, tc.want) {
			t.Errorf("%+v: hint %q does not mention %q", tc.err, h, tc.want)
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

func TestCallbackDataRoundTrip(t *testing.T) {
	id, row, ok := ParseCallbackData(CallbackData("a1b2c3", 42))
	if !ok || id != "a1b2c3" || row != 42 {
		t.Fatalf("round trip = %q %d %v", id, row, ok)
	}
	for _, bad := range []string{"", "campaign42:row17", "bulksend:", "bulksend::1", "bulksend:x:0", "bulksend:x:-3", "bulksend:x:1a"} {
		if _, _, ok := ParseCallbackData(bad); ok {
			t.Errorf("ParseCallbackData(%q) accepted", bad)
		}
	}
}

func TestBackoffFullJitter(t *testing.T) {
	base, max := 2*time.Second, 5*time.Minute
	for _, tc := range []struct {
		attempt int
		u       float64
		want    time.Duration
	}{
		{1, 0.5, time.Second},
		{2, 1, 4 * time.Second},
		{4, 0.25, 4 * time.Second},
		{30, 1, max},
		{3, 0, 0},
	} {
		if got := Backoff(tc.attempt, base, max, tc.u); got != tc.want {
			t.Errorf("Backoff(%d, u=%v) = %v, want %v", tc.attempt, tc.u, got, tc.want)
		}
	}
}

func TestCountsAddUp(t *testing.T) {
	var c Counts
	for i, s := range Statuses {
		c.Add(s, int64(i+1))
	}
	sum := c.Pending + c.Sending + c.InDoubt + c.Sent + c.Delivered + c.Read + c.Failed + c.Skipped
	if sum != c.Total || c.Total != 36 {
		t.Fatalf("counts %+v: parts %d, total %d", c, sum, c.Total)
	}
	if !c.Unfinished() {
		t.Fatal("pending rows but not unfinished")
	}
}
