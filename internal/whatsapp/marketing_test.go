package whatsapp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/whatsapp/internal/oas"
)

// mmAnswer is the Marketing Messages API's answer, as its OpenAPI example
// shows it (with a message_status, as /messages answers templates).
const mmAnswer = `{"contacts":[{"input":"16315552222","wa_id":"16315552222"}],"messages":[{"id":"wamid.gBGGSFcCNEOPAgkO_KJ55r4w_ww","message_status":"accepted"}],"messaging_product":"whatsapp","success":true}`

// TestMarketingRequestConformsToOpenAPI sends through the Marketing
// Messages API and checks each request against the schema Meta's document
// gives for the body of POST /{Version}/{Phone-Number-ID}/marketing_messages
// (operation sendMarketingMessage), found by following the path, and its
// template against ValidateTemplateMessage, discriminators included.
//
// The one field that schema does not list is biz_opaque_callback_data:
// its additionalProperties:false refuses it, while Meta's guide says the
// endpoint "follows the same API payload syntax" as /messages, which takes
// it. bulksend sends it, as reconcile needs it to settle rows in doubt;
// the test checks that it is the only difference.
func TestMarketingRequestConformsToOpenAPI(t *testing.T) {
	spec, err := oas.Load()
	if err != nil {
		t.Fatal(err)
	}
	doc := loadYAML(t, spec.Path())
	op := dig(doc, "paths", "/{Version}/{Phone-Number-ID}/marketing_messages", "post")
	if id := dig(op, "operationId"); id != "sendMarketingMessage" {
		t.Fatalf("operationId of POST /marketing_messages is %v", id)
	}
	ref, _ := dig(op, "requestBody", "content", "application/json", "schema", "$ref").(string)
	schema, found := strings.CutPrefix(ref, "#/components/schemas/")
	if !found {
		t.Fatalf("request schema of sendMarketingMessage is %q, not a component", ref)
	}
	respSchema, err := spec.ResponseSchema("sendMarketingMessage", "200")
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Validate(respSchema, []byte(mmAnswer)); err != nil {
		t.Fatalf("the test's answer is not Meta's %s: %v", respSchema, err)
	}

	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, b)
		io.WriteString(w, mmAnswer)
	}))
	defer srv.Close()
	plain := campaign.Message{From: "102290129340398", To: "+16315552222"}
	for _, policy := range []string{"", PolicyFallback, PolicyStrict} {
		c := &Client{BaseURL: srv.URL, Version: "v23.0", Token: "tok", HTTP: srv.Client(), API: APIMarketing, ProductPolicy: policy,
			TemplateName: "welcome_offer", TemplateLang: "en_US"}
		for _, m := range []campaign.Message{msg, plain} {
			if _, err := c.Send(context.Background(), m); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, body := range bodies {
		if err := spec.ValidateTemplateMessage(body); err != nil {
			t.Errorf("request %s: template part does not conform: %v", body, err)
		}
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		_, withData := req["biz_opaque_callback_data"]
		delete(req, "biz_opaque_callback_data")
		without, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := spec.Validate(schema, without); err != nil {
			t.Errorf("request %s does not conform to %s: %v", body, schema, err)
		}
		err = spec.Validate(schema, body)
		if withData && (err == nil || !strings.Contains(err.Error(), "biz_opaque_callback_data")) {
			t.Errorf("request %s: %s: %v; want only biz_opaque_callback_data refused", body, schema, err)
		}
	}
	if len(bodies) != 6 {
		t.Fatalf("%d requests, want 6", len(bodies))
	}
	// The check is not vacuous: an unknown policy, or message activity
	// sharing of the wrong type, is refused.
	for _, bad := range []string{
		`{"messaging_product":"whatsapp","recipient_type":"individual","to":"1","type":"template","template":{"name":"x","language":{"policy":"deterministic","code":"en"}},"product_policy":"LOOSE"}`,
		`{"messaging_product":"whatsapp","recipient_type":"individual","to":"1","type":"template","template":{"name":"x","language":{"policy":"deterministic","code":"en"}},"message_activity_sharing":"yes"}`,
	} {
		if spec.Validate(schema, []byte(bad)) == nil {
			t.Errorf("%s validated against %s", bad, schema)
		}
	}
}
