package whatsapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/whatsapp/internal/oas"
)

var msg = campaign.Message{
	Row: 7, From: "106540352242922", To: "+447700900123",
	Params: []string{"Jessica", "WELCOME25"}, Ref: campaign.Ref{Campaign: "abc", Row: 7},
}

func TestRequestConformsToOpenAPI(t *testing.T) {
	spec, err := oas.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		campaign.Message
		name, lang string
	}{{msg, "spring_sale", "en_US"}, {campaign.Message{From: "1", To: "+15551234567"}, "hello_world", "en"}} {
		body, err := json.Marshal(NewRequest(m.Message, m.name, m.lang, nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := spec.Validate("Message", body); err != nil {
			t.Errorf("request %s does not conform to Meta's Message schema: %v", body, err)
		}
	}
	// The check is not vacuous: a request without "to" is refused.
	bad, _ := json.Marshal(map[string]any{"messaging_product": "whatsapp", "recipient_type": "individual", "type": "template", "template": map[string]any{"name": "x"}})
	if spec.Validate("Message", bad) == nil {
		t.Fatal("a request without to/language validated")
	}
}

func TestSendWire(t *testing.T) {
	var got Request
	var path, auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, auth = r.URL.Path, r.Header.Get("Authorization")
		json.NewDecoder(r.Body).Decode(&got)
		io.WriteString(w, `{"messaging_product":"whatsapp","contacts":[{"input":"+447700900123","wa_id":"447700900123"}],"messages":[{"id":"wamid.HBgLMTY1","message_status":"accepted"}]}`)
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, Version: "v23.0", Token: "tok", HTTP: srv.Client(), TemplateName: "spring_sale", TemplateLang: "en_US"}
	rc, err := c.Send(context.Background(), msg)
	id := rc.ID
	if err != nil || id != "wamid.HBgLMTY1" {
		t.Fatalf("Send = %q, %v", id, err)
	}
	if path != "/v23.0/106540352242922/messages" || auth != "Bearer tok" {
		t.Fatalf("path %q auth %q", path, auth)
	}
	if got.CallbackData != msg.Ref.String() || got.Template.Components[0].Parameters[1].Text != "WELCOME25" || got.To != msg.To {
		t.Fatalf("request = %+v", got)
	}
}

func TestSendErrors(t *testing.T) {
	metaErr := `{"error":{"message":"(#130429) Rate limit hit","type":"OAuthException","code":130429,"error_data":{"messaging_product":"whatsapp","details":"Cloud API message throughput has been reached."},"fbtrace_id":"Az8or2"}}`
	cases := []struct {
		name      string
		handler   http.HandlerFunc
		timeout   time.Duration
		wantCode  int // an *APIError with this code
		wantClass campaign.Class
		inDoubt   bool
	}{
		{"meta error body", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(400)
			io.WriteString(w, metaErr)
		}, 0, 130429, campaign.Throttled, false},
		{"expired token", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":{"message":"Error validating access token: Session has expired","type":"OAuthException","code":190,"fbtrace_id":"x"}}`)
		}, 0, 190, campaign.Fatal, false},
		{"503 without body is refused", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }, 0, 0, campaign.Transient, false},
		{"502 without body is in doubt", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(502) }, 0, -1, 0, true},
		{"timeout after write is in doubt", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		}, 50 * time.Millisecond, -1, 0, true},
		{"connection dropped after write is in doubt", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}, 0, -1, 0, true},
		{"200 without a wamid is in doubt", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) }, 0, -1, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			c := &Client{BaseURL: srv.URL, Version: "v23.0", Token: "secret-token", HTTP: srv.Client(), Timeout: tc.timeout}
			_, err := c.Send(context.Background(), msg)
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), "secret-token") {
				t.Fatalf("error leaks the token: %v", err)
			}
			var se *campaign.SendError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *campaign.SendError", err)
			}
			if got := se.Class == campaign.Unanswered; got != tc.inDoubt {
				t.Fatalf("in doubt = %v, want %v (%v)", got, tc.inDoubt, err)
			}
			if tc.wantCode >= 0 {
				var ae *APIError
				if !errors.As(err, &ae) {
					t.Fatalf("err = %v, want *APIError", err)
				}
				if ae.Code != tc.wantCode || se.Class != tc.wantClass || se.Code != tc.wantCode || se.Title != ae.Title() {
					t.Fatalf("code %d class %v title %q, want %d %v %q", se.Code, se.Class, se.Title, tc.wantCode, tc.wantClass, ae.Title())
				}
			}
		})
	}
}

func TestDialFailureIsNotInDoubt(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	c := &Client{BaseURL: "http://" + addr, Version: "v23.0", Token: "t", HTTP: NewHTTPClient(1)}
	_, err = c.Send(context.Background(), msg)
	var se *campaign.SendError
	if !errors.As(err, &se) || se.Class != campaign.NeverLeft {
		t.Fatalf("err = %v: a refused connection never carried the request", err)
	}
	var ae *APIError
	if errors.As(err, &ae) {
		t.Fatalf("err = %v is not an API answer", err)
	}
}

// TestSendTellsWhenWritten: Send tells the engine when its request was
// written (campaign.Departed), once, after the dial and before the answer;
// a request that never left tells nothing.
func TestSendTellsWhenWritten(t *testing.T) {
	const think = 50 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(think)
		answer(200, `{"messages":[{"id":"wamid.HBgLMTY1"}]}`, "")(w, r)
	}))
	defer srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		url  string
		left bool
	}{{srv.URL, true}, {closed, false}} {
		told := make(chan time.Time, 4)
		ctx := campaign.WithDeparted(context.Background(), func(at time.Time) { told <- at })
		c := &Client{BaseURL: tc.url, Version: "v23.0", Token: "tok", HTTP: NewHTTPClient(1)}
		start := time.Now()
		c.Send(ctx, msg)
		answered := time.Now()
		if !tc.left {
			if n := len(told); n != 0 {
				t.Fatalf("%s: told written %d times, want none", tc.url, n)
			}
			continue
		}
		// The transport tells it on a goroutine of its own: it may come
		// after the answer.
		select {
		case at := <-told:
			if n := len(told); n != 0 {
				t.Errorf("%s: told written %d more times", tc.url, n)
			}
			if at.Before(start) || at.After(answered.Add(-think)) {
				t.Errorf("told written %v after the send began, the answer came %v after it; want before the server's %v", at.Sub(start), answered.Sub(start), think)
			}
		case <-time.After(time.Second):
			t.Fatalf("%s: never told written", tc.url)
		}
	}
}

// answer is a handler that answers every request with status, body and,
// if not empty, an X-Business-Use-Case-Usage header.
func answer(status int, body, usage string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if usage != "" {
			w.Header().Set(UsageHeader, usage)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// usage is an X-Business-Use-Case-Usage header whose two budgets ask to
// wait m1 and m2 minutes.
func usage(m1, m2 int) string {
	return fmt.Sprintf(`{"102290129340398":[{"type":"whatsapp_business_management","call_count":100,"total_cputime":12,"total_time":14,"estimated_time_to_regain_access":%d},`+
		`{"type":"whatsapp","call_count":3,"total_cputime":1,"total_time":1,"estimated_time_to_regain_access":%d}]}`, m1, m2)
}

func TestSendReceipt(t *testing.T) {
	ok := func(status string) string {
		return `{"messaging_product":"whatsapp","contacts":[{"input":"+447700900123","wa_id":"447700900123"}],"messages":[{"id":"wamid.HBgLMTY1","message_status":"` + status + `"}]}`
	}
	tests := []struct {
		name string
		h    http.HandlerFunc
		want campaign.Receipt
	}{
		{"accepted", answer(200, ok("accepted"), ""), campaign.Receipt{ID: "wamid.HBgLMTY1"}},
		{"no message_status", answer(200, `{"messages":[{"id":"wamid.HBgLMTY1"}]}`, ""), campaign.Receipt{ID: "wamid.HBgLMTY1"}},
		{"held for quality assessment", answer(200, ok("held_for_quality_assessment"), ""), campaign.Receipt{ID: "wamid.HBgLMTY1", Held: true}},
		{"paused", answer(200, ok("paused"), ""), campaign.Receipt{ID: "wamid.HBgLMTY1", Held: true}},
		{"usage header within budget", answer(200, ok("accepted"), usage(0, 0)), campaign.Receipt{ID: "wamid.HBgLMTY1"}},
		{"usage header asks to rest", answer(200, ok("accepted"), usage(7, 3)), campaign.Receipt{ID: "wamid.HBgLMTY1", RestFor: 7 * time.Minute}},
		{"malformed usage header is ignored", answer(200, ok("held_for_quality_assessment"), `{"1":[{"estimated_time_to_regain_access":"soon"}]}`),
			campaign.Receipt{ID: "wamid.HBgLMTY1", Held: true}},
	}
	spec, err := oas.Load()
	if err != nil {
		t.Fatal(err)
	}
	schema, err := spec.ResponseSchema("sendMessage", "200")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"accepted", "held_for_quality_assessment", "paused"} {
		if err := spec.Validate(schema, []byte(ok(s))); err != nil {
			t.Fatalf("the test's answer is not Meta's %s: %v", schema, err)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.h)
			defer srv.Close()
			c := &Client{BaseURL: srv.URL, Version: "v23.0", Token: "tok", HTTP: srv.Client()}
			got, err := c.Send(context.Background(), msg)
			if err != nil || got != tc.want {
				t.Fatalf("Send = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestSendErrorRest: a usage header that asks to rest lengthens the rest
// of an error answer of any class, never shortens it.
func TestSendErrorRest(t *testing.T) {
	metaErr := func(code int, msg string) string {
		return fmt.Sprintf(`{"error":{"message":"(#%d) %s","type":"OAuthException","code":%d,"error_data":{"messaging_product":"whatsapp","details":"%s"},"fbtrace_id":"Az8or2"}}`, code, msg, code, msg)
	}
	tests := []struct {
		name  string
		h     http.HandlerFunc
		class campaign.Class
		rest  time.Duration
	}{
		{"throttled, header asks 12 minutes", answer(400, metaErr(80007, "Rate limit issues"), usage(12, 0)), campaign.Throttled, 12 * time.Minute},
		{"permanent, header asks 2 minutes", answer(400, metaErr(131026, "Message undeliverable"), usage(0, 2)), campaign.Permanent, 2 * time.Minute},
		{"template syncing without a header", answer(400, metaErr(134101, "Template is syncing"), ""), campaign.Paused, 10 * time.Minute},
		{"template syncing, header asks less", answer(400, metaErr(134101, "Template is syncing"), usage(3, 0)), campaign.Paused, 10 * time.Minute},
		{"template syncing, header asks more", answer(400, metaErr(134101, "Template is syncing"), usage(0, 25)), campaign.Paused, 25 * time.Minute},
		{"bare 429 with a header", answer(429, "", usage(4, 0)), campaign.Throttled, 4 * time.Minute},
		{"malformed header", answer(400, metaErr(80007, "Rate limit issues"), "not json"), campaign.Throttled, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.h)
			defer srv.Close()
			c := &Client{BaseURL: srv.URL, Version: "v23.0", Token: "tok", HTTP: srv.Client()}
			_, err := c.Send(context.Background(), msg)
			var se *campaign.SendError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *campaign.SendError", err)
			}
			if se.Class != tc.class || se.RestFor != tc.rest {
				t.Fatalf("class %v rest %v, want %v %v (%v)", se.Class, se.RestFor, tc.class, tc.rest, err)
			}
		})
	}
}

func TestSendAPI(t *testing.T) {
	tests := []struct {
		name   string
		api    string
		policy string
		path   string
		want   string // the body's product_policy, "" if absent
	}{
		{"default is Cloud API", "", PolicyStrict, "/v23.0/106540352242922/messages", ""},
		{"messages ignores the policy", APIMessages, PolicyFallback, "/v23.0/106540352242922/messages", ""},
		{"marketing, Meta's default policy", APIMarketing, "", "/v23.0/106540352242922/marketing_messages", ""},
		{"marketing with fallback", APIMarketing, PolicyFallback, "/v23.0/106540352242922/marketing_messages", "CLOUD_API_FALLBACK"},
		{"marketing strict", APIMarketing, PolicyStrict, "/v23.0/106540352242922/marketing_messages", "STRICT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var path string
			var body map[string]any
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				path = r.URL.Path
				json.NewDecoder(r.Body).Decode(&body)
				io.WriteString(w, `{"contacts":[{"input":"+447700900123","wa_id":"447700900123"}],"messages":[{"id":"wamid.M","message_status":"accepted"}],"messaging_product":"whatsapp","success":true}`)
			}))
			defer srv.Close()
			c := &Client{BaseURL: srv.URL, Version: "v23.0", Token: "tok", HTTP: srv.Client(), API: tc.api, ProductPolicy: tc.policy}
			rc, err := c.Send(context.Background(), msg)
			if err != nil || rc.ID != "wamid.M" {
				t.Fatalf("Send = %+v, %v", rc, err)
			}
			if path != tc.path {
				t.Errorf("path %q, want %q", path, tc.path)
			}
			got, has := body["product_policy"]
			if tc.want == "" && has || tc.want != "" && got != tc.want {
				t.Errorf("product_policy = %v (present %v), want %q", got, has, tc.want)
			}
			if _, has := body["message_activity_sharing"]; has {
				t.Errorf("the request shares message activity: %v", body)
			}
			if body["biz_opaque_callback_data"] != msg.Ref.String() || body["to"] != msg.To {
				t.Errorf("body %v lacks the message's fields", body)
			}
		})
	}
}

// TestSendConfigError: a Client with an unknown API or policy sends nothing
// and stops the run.
func TestSendConfigError(t *testing.T) {
	for _, c := range []*Client{
		{API: "sms"},
		{API: APIMarketing, ProductPolicy: "fallback"},
	} {
		hit := false
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit = true }))
		c.BaseURL, c.Version, c.HTTP = srv.URL, "v23.0", srv.Client()
		_, err := c.Send(context.Background(), msg)
		srv.Close()
		var se *campaign.SendError
		if !errors.As(err, &se) || se.Class != campaign.Fatal || hit {
			t.Errorf("API %q policy %q: err %v, request sent %v; want a fatal error before sending", c.API, c.ProductPolicy, err, hit)
		}
	}
}

// TestSendFollowsNoRedirect: a send's POST answered with a redirect is not
// sent again where it points (http.Client.Do re-POSTed a 307 or 308, and
// a message the first address took would go twice; a loop of them ended
// in doubt after 11 posts): the run stops, saying where the URL points.
func TestSendFollowsNoRedirect(t *testing.T) {
	clients := map[string]func() *http.Client{
		"pool":    func() *http.Client { return NewHTTPClient(1) },
		"timeout": func() *http.Client { return &http.Client{Timeout: 5 * time.Second} }, // goes through Do
	}
	for name, hc := range clients {
		for _, status := range []int{http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
			t.Run(name+"/"+strconv.Itoa(status), func(t *testing.T) { sendRedirected(t, hc(), status) })
		}
	}
}

// sendRedirected sends one message through hc to a server that answers
// status, a redirect, and checks the run stops without following it.
func sendRedirected(t *testing.T, hc *http.Client, status int) {
	t.Helper()
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		http.Redirect(w, r, "/elsewhere", status)
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, Version: "v23.0", Token: "tok", HTTP: hc}
	_, err := c.Send(context.Background(), msg)
	var se *campaign.SendError
	if !errors.As(err, &se) || se.Class != campaign.Fatal {
		t.Fatalf("err = %v, want a fatal refusal: every send would get it", err)
	}
	if !strings.Contains(err.Error(), "/elsewhere") {
		t.Errorf("err = %v, want it to say where the URL redirects", err)
	}
	var api *APIError
	if !errors.As(err, &api) || api.HTTPStatus != status {
		t.Errorf("err = %v, want the API's HTTP %d", err, status)
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("%d requests reached the server, want 1", n)
	}
}
