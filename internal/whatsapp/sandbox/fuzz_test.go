package sandbox

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzSend feeds arbitrary bodies to the send endpoint: the sandbox must
// never panic and must always answer either Meta's success shape or a Graph
// error with a code.
func FuzzSend(f *testing.F) {
	f.Add(msg("16505551234", "cb", "welcome", "en_US", 1))
	f.Add(`{"messaging_product":"whatsapp","to":"1","type":"template","template":{"name":"","language":null}}`)
	f.Add(`{"template":{"components":[{"type":"BODY","parameters":[1,2,{}]}]}}`)
	f.Add(`[]`)
	s := New(Config{Rate: -1, PairInterval: -1, Templates: []Template{{Name: "welcome", BodyParams: 1}}})
	defer s.Close()
	f.Fuzz(func(t *testing.T, body string) {
		a := do(s, http.MethodPost, path, token, body)
		switch {
		case a.status == 200 && a.wamid != "":
		case a.status >= 400 && a.code != 0:
		default:
			t.Fatalf("unexpected answer %v", a)
		}
	})
}

// FuzzSendDefinition feeds arbitrary bodies to a sandbox that checks sends
// against definitions, seeded with every valid send: the checks must never
// panic and every answer must be a success or a Graph error with a code.
func FuzzSendDefinition(f *testing.F) {
	for _, v := range ValidSends() {
		if len(v.Components) < 4096 { // the long-text cases teach nothing new
			f.Add(v.Body("16505551234"))
		}
	}
	f.Add(sendBody("16505551234", "login_code", "en_US", `[{"type":"button","sub_type":["url"],"index":{},"parameters":[null]}]`))
	f.Add(sendBody("16505551234", "store_visit", "en_US", `[{"type":"header","parameters":[{"type":"location","location":{"latitude":1e999,"longitude":"-0x1p-2"}}]}]`))
	s := New(Config{Rate: -1, PairInterval: -1, Definitions: FixtureDefinitions()})
	defer s.Close()
	f.Fuzz(func(t *testing.T, body string) {
		a := do(s, http.MethodPost, path, token, body)
		switch {
		case a.status == 200 && a.wamid != "":
		case a.status >= 400 && a.code != 0:
		default:
			t.Fatalf("unexpected answer %v", a)
		}
	})
}

// FuzzListTemplates feeds arbitrary query strings (cursors, limits,
// filters) to GET message_templates.
func FuzzListTemplates(f *testing.F) {
	for _, q := range []string{"", "limit=3&after=MgZDZD", "before=MjQZD&limit=1", "name=sale&language=en_US", "after=%ZZ", "limit=99999999999999999999"} {
		f.Add(q)
	}
	s := New(Config{Definitions: FixtureDefinitions()})
	defer s.Close()
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest(http.MethodGet, tplPath, nil)
		r.URL.RawQuery = query // as is: a request line could not carry every byte
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		a := decode(w.Code, w.Body.Bytes())
		var p struct {
			Data []json.RawMessage
		}
		switch {
		case a.status == 200 && json.Unmarshal(a.body, &p) == nil && p.Data != nil && len(p.Data) <= len(FixtureDefinitions()):
		case a.status == 400 && a.code == 100:
		default:
			t.Fatalf("unexpected answer %v", a)
		}
	})
}

// FuzzSendMarketing feeds arbitrary bodies to the Marketing Messages API,
// onboarded and syncing: every answer is a success or a Graph error.
func FuzzSendMarketing(f *testing.F) {
	for _, v := range ValidSends() {
		if len(v.Components) < 4096 {
			f.Add(v.Body("16505551234"))
		}
	}
	f.Add(`{"messaging_product":"whatsapp","to":"16505551234","type":"template","product_policy":7,"template":{"name":"spring_sale","language":{"code":"en_US"}}}`)
	f.Add(`{"messaging_product":"whatsapp","to":"16505551234","type":"template","product_policy":"STRICT","message_activity_sharing":"yes"}`)
	s := New(Config{Rate: -1, PairInterval: -1, MMOnboarded: true, MMSyncing: []string{"fall_coupon"}, HeldRate: 0.5, Definitions: FixtureDefinitions()})
	defer s.Close()
	f.Fuzz(func(t *testing.T, body string) {
		a := do(s, http.MethodPost, mmPath(phoneID), token, body)
		switch {
		case a.status == 200 && a.wamid != "":
		case a.status >= 400 && a.code != 0:
		default:
			t.Fatalf("unexpected answer %v", a)
		}
	})
}

// FuzzNumberFields feeds arbitrary query strings (Graph's fields syntax)
// to GET /{phone-number-id}.
func FuzzNumberFields(f *testing.F) {
	for _, q := range []string{"", "fields=health_status", "fields=health_status{can_send_message,entities{errors}},throughput",
		"fields=quality_rating.limit(2)", "fields=}},{", "fields=,,", "fields=nope"} {
		f.Add(q)
	}
	s := New(Config{Numbers: map[string]NumberInfo{phoneID: {Health: HealthBlocked}}})
	defer s.Close()
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest(http.MethodGet, numberPath(phoneID), nil)
		r.URL.RawQuery = query
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		a := decode(w.Code, w.Body.Bytes())
		var n numberResp
		switch {
		case a.status == 200 && json.Unmarshal(a.body, &n) == nil && n.ID == phoneID:
		case a.status == 400 && a.code == 100:
		default:
			t.Fatalf("unexpected answer %v", a)
		}
	})
}
