package sandbox

import (
	"net/http"
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
