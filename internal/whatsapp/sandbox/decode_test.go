package sandbox

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// realBodies are send bodies as clients write them: the tests' helpers,
// every valid send, and the body of a bulksend run (a header image, a
// body and a URL button, as BenchmarkScale sends).
func realBodies() []string {
	bodies := []string{
		msg("16505551234", "cb", "welcome", "en_US", 1),
		msg("+5511987654321", "", "promo", "pt_BR", 3),
		`{"messaging_product":"whatsapp","recipient_type":"individual","to":"+447400123456","type":"template","biz_opaque_callback_data":"c1:r42",` +
			`"template":{"name":"t","language":{"policy":"deterministic","code":"en_US"},"components":[` +
			`{"type":"header","parameters":[{"type":"image","image":{"link":"https://cdn.example.com/img/1.jpg"}}]},` +
			`{"type":"body","parameters":[{"type":"text","text":"Customer 1"},{"type":"text","text":"CODE0000001"}]},` +
			`{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"c0000001"}]}]}}`,
	}
	for _, v := range ValidSends() {
		bodies = append(bodies, v.Body("16505551234"))
	}
	return bodies
}

// TestDecodeSendTakesRealBodies: the bodies clients send take the fast
// path, and decode as json.Unmarshal decodes them.
func TestDecodeSendTakesRealBodies(t *testing.T) {
	for _, body := range realBodies() {
		if !strings.Contains(body, `\`) && !hasNonASCIIString(body) && !decodeSend([]byte(body), &sendRequest{}) {
			t.Errorf("fast path refuses %.200s", body)
		}
		checkDecodeSend(t, []byte(body))
	}
}

// hasNonASCIIString reports whether body has a byte outside ASCII, which
// the fast path refuses in the strings it keeps.
func hasNonASCIIString(body string) bool {
	for i := 0; i < len(body); i++ {
		if body[i] >= 0x80 {
			return true
		}
	}
	return false
}

// FuzzDecodeSend compares the fast path with json.Unmarshal on arbitrary
// bodies: whatever the fast path takes must be valid JSON that decodes to
// the same request.
func FuzzDecodeSend(f *testing.F) {
	for _, body := range realBodies() {
		f.Add(body)
	}
	for _, body := range []string{
		``, ` `, `{}`, ` {} `, `{} {}`, `[]`, `null`, `{"to":null}`, `{"to":1}`, `{"TO":"1"}`, `{"to":"1","to":"2"}`,
		`{"to":"a\"b"}`, `{"to":"\u0041"}`, `{"to":"é"}`, `{"x":"é\n"}`, `{"x":"\ud800"}`, `{"x":"\x"}`,
		`{"template":null}`, `{"template":{"language":null}}`, `{"template":{"components":null}}`,
		`{"template":{"components":[null]}}`, `{"template":{"components":[{"parameters":[null,1,-0.5e+3,"x",{},[]]}]}}`,
		`{"template":{"components":[{"sub_type":null,"index":0}]}}`, `{"template":{"Name":"x","name":"y"}}`,
		`{"product_policy":null,"message_activity_sharing":{"a":[1,true,false]}}`, `{"x":01}`, `{"x":1.}`, `{"x":-}`,
		`{"x":1e}`, `{"x":tru}`, `{"x":nulll}`, `{"x":[1,]}`, `{"x":{"a":1,}}`, `{"x":{1:2}}`, `{"-":"x"}`,
		`{"template":{"components":[{"type":"body","parameters":[{"type":"text","text":"a"}]}],"components":[]}}`,
		"{\"to\":\"1\"}\n", "\t{\"to\" : \"1\" , \"type\":\"template\"}\r\n", `{"to":"1"}x`, `{"to":"1"`,
		`{"x":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`,
	} {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		checkDecodeSend(t, []byte(body))
	})
}

// checkDecodeSend fails t if the fast path takes body and decodes it
// otherwise than json.Unmarshal.
func checkDecodeSend(t *testing.T, body []byte) {
	t.Helper()
	var fast, slow sendRequest
	if !decodeSend(body, &fast) {
		return
	}
	if err := json.Unmarshal(body, &slow); err != nil {
		t.Fatalf("fast path takes %q, json.Unmarshal: %v", body, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: fast path %+v, json.Unmarshal %+v", body, fast, slow)
	}
}
