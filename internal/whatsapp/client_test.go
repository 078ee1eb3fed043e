package whatsapp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/oas"
)

var msg = campaign.Message{
	Row: 7, From: "106540352242922", To: "+447700900123", Template: "spring_sale", Lang: "en_US",
	Params: []string{"Jessica", "WELCOME25"}, CallbackData: "bulksend:abc:7",
}

func TestRequestConformsToOpenAPI(t *testing.T) {
	spec, err := oas.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []campaign.Message{msg, {From: "1", To: "+15551234567", Template: "hello_world", Lang: "en"}} {
		body, err := json.Marshal(NewRequest(m, nil))
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
	c := &Client{BaseURL: srv.URL, Version: "v23.0", Token: "tok", HTTP: srv.Client()}
	rc, err := c.Send(context.Background(), msg)
	id := rc.ID
	if err != nil || id != "wamid.HBgLMTY1" {
		t.Fatalf("Send = %q, %v", id, err)
	}
	if path != "/v23.0/106540352242922/messages" || auth != "Bearer tok" {
		t.Fatalf("path %q auth %q", path, auth)
	}
	if got.CallbackData != msg.CallbackData || got.Template.Components[0].Parameters[1].Text != "WELCOME25" || got.To != msg.To {
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
