package whatsapp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/whatsapp/internal/oas"
	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// TestFlowRequestIsMetasExample: the Flow button bulksend sends has the
// shape of the document's own example request "Send Flow Template Message"
// (POST /{Version}/{Phone-Number-ID}/messages, operation sendMessage),
// found by following the path: the same keys at every level and the same
// type, sub_type and index; and Meta's example validates through the
// corrections, as bulksend's request does.
func TestFlowRequestIsMetasExample(t *testing.T) {
	spec, err := oas.Load()
	if err != nil {
		t.Fatal(err)
	}
	doc := loadYAML(t, spec.Path())
	op := dig(doc, "paths", "/{Version}/{Phone-Number-ID}/messages", "post")
	if id := dig(op, "operationId"); id != "sendMessage" {
		t.Fatalf("operationId of POST /messages is %v", id)
	}
	value, _ := dig(op, "requestBody", "content", "application/json", "examples", "Send Flow Template Message", "value").(map[string]any)
	if value == nil {
		t.Fatal(`no example "Send Flow Template Message" for sendMessage`)
	}
	// A copy: the parsed document is shared by the package's tests.
	var example map[string]any
	if err := json.Unmarshal(mustMarshal(t, value), &example); err != nil {
		t.Fatal(err)
	}
	// Message requires what the example leaves out (LanguageObject's
	// policy, recipient_type): added, the example is Meta's valid request.
	example["recipient_type"] = "individual"
	dig(example, "template", "language").(map[string]any)["policy"] = "deterministic"
	if err := spec.ValidateTemplateMessage(mustMarshal(t, example)); err != nil {
		t.Fatalf("Meta's example does not validate through the corrections: %v", err)
	}
	metas := dig(example, "template", "components").([]any)

	var def template.Definition
	if err := json.Unmarshal([]byte(`{"name":"t","language":"en_US","status":"APPROVED","category":"MARKETING",
	  "components":[{"type":"BUTTONS","buttons":[{"type":"FLOW","text":"Sign up","flow_id":"1399887766554433"}]}]}`), &def); err != nil {
		t.Fatal(err)
	}
	m, err := template.New(template.Input{Columns: []string{"button.0.flow_token", "button.0.flow_action_data"}}, &def)
	if err != nil {
		t.Fatal(err)
	}
	cells := []string{"SIGNUP-A1", `{"first_name": "Ana"}`}
	if why := m.Validate(cells); why != "" {
		t.Fatal(why)
	}
	body := mustMarshal(t, NewRequest(campaign.Message{From: "1", To: "+447700900123", Params: cells}, def.Name, def.Language, m))
	if err := spec.ValidateTemplateMessage(body); err != nil {
		t.Fatalf("request %s does not conform to Meta's document: %v", body, err)
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	ours := dig(req, "template", "components").([]any)
	if got, want := paths(ours), paths(metas); !slices.Equal(got, want) {
		t.Errorf("components\n ours %s: %v\nMeta's %s: %v", mustMarshal(t, ours), got, mustMarshal(t, metas), want)
	}
	// The data is the cell's object, not its text in a string.
	data := dig(ours[0], "parameters").([]any)[0].(map[string]any)["action"].(map[string]any)["flow_action_data"]
	if !reflect.DeepEqual(data, map[string]any{"first_name": "Ana"}) {
		t.Errorf("flow_action_data = %#v, want the object the cell writes", data)
	}
}

// paths lists where v has a value, as .key and [i] steps, with the values
// of the keys that name a shape (type, sub_type, index); flow_action_data's
// keys are the Flow's own, so the walk stops there.
func paths(v any) []string {
	var out []string
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				out = append(out, at+"."+k)
				if s, ok := e.(string); ok && (k == "type" || k == "sub_type" || k == "index") {
					out = append(out, at+"."+k+"="+s)
				}
				if k != "flow_action_data" {
					walk(at+"."+k, e)
				}
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", at, i), e)
			}
		}
	}
	walk("", v)
	slices.Sort(out)
	return out
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
