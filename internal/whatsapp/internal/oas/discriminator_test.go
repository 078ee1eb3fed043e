package oas

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestValidateTemplateMessage: what plain "Message" validation lets
// through because it never looks past TemplateComponent.
func TestValidateTemplateMessage(t *testing.T) {
	s := load(t)
	tests := []struct {
		name       string
		components string
		want       []string // in the error, e.g. where and why; nil for valid
	}{
		{"every kind", strings.Join([]string{
			`{"type":"header","parameters":[{"type":"document","document":{"id":"1339522734477770","filename":"invoice.pdf"}}]}`,
			`{"type":"body","parameters":[{"type":"text","text":"Jessica","parameter_name":"first_name"},
			  {"type":"currency","currency":{"fallback_value":"$100.00","code":"USD","amount_1000":100000}}]}`,
			`{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"SB-1001"}]}`,
			`{"type":"button","sub_type":"quick_reply","index":"1","parameters":[{"type":"payload","payload":"STOP"}]}`,
			copyCode,
		}, ","), nil},
		{"text parameter without text",
			`{"type":"body","parameters":[{"type":"text","text":"Jessica"},{"type":"text","parameter_name":"code"}]}`,
			[]string{"template.components[0].parameters[1]: validate against TextParameter", "missing property 'text'"}},
		{"image parameter with neither id nor link",
			`{"type":"body","parameters":[]},{"type":"header","parameters":[{"type":"image","image":{}}]}`,
			[]string{"template.components[1].parameters[0]: validate against ImageParameter", "'oneOf' failed"}},
		{"image parameter with id and link",
			`{"type":"header","parameters":[{"type":"image","image":{"id":"1","link":"https://example.com/a.jpg"}}]}`,
			[]string{"template.components[0].parameters[0]: validate against ImageParameter", "'oneOf' failed"}},
		{"button without index",
			`{"type":"button","sub_type":"url","parameters":[{"type":"text","text":"x"}]}`,
			[]string{"template.components[0]: validate against ButtonComponent", "missing property 'index'"}},
		{"button without sub_type",
			`{"type":"button","index":"0","parameters":[{"type":"text","text":"x"}]}`,
			[]string{"template.components[0]: validate against ButtonComponent", "missing property 'sub_type'"}},
		{"button without parameters",
			`{"type":"button","sub_type":"url","index":"0","parameters":[]}`,
			[]string{"template.components[0]: validate against ButtonComponent", "minItems"}},
		{"payload parameter in the header",
			`{"type":"header","parameters":[{"type":"payload","payload":"x"}]}`,
			[]string{"template.components[0]: validate against HeaderComponent", "value must be one of"}},
		{"payload parameter without payload",
			`{"type":"button","sub_type":"quick_reply","index":"0","parameters":[{"type":"payload","text":"x"}]}`,
			[]string{"template.components[0].parameters[0]: validate against ButtonPayloadParameter", "missing property 'payload'"}},
		{"url parameter without text",
			`{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","payload":"x"}]}`,
			[]string{"template.components[0].parameters[0]: validate against ButtonTextParameter", "missing property 'text'"}},
		{"every bad parameter is named",
			`{"type":"body","parameters":[{"type":"text"},{"type":"text","text":"ok"},{"type":"text"}]}`,
			[]string{"template.components[0].parameters[0]:", "template.components[0].parameters[2]:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := templateMessage(tt.components)
			if err := s.Validate("Message", body); err != nil {
				t.Fatalf("plain validation already refuses it: %v", err)
			}
			err := s.ValidateTemplateMessage(body)
			if tt.want == nil {
				if err != nil {
					t.Errorf("ValidateTemplateMessage = %v, want valid", err)
				}
				return
			}
			var ve *jsonschema.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("ValidateTemplateMessage = %v, want a *jsonschema.ValidationError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ValidateTemplateMessage = %v\nwant an error with %q", err, w)
				}
			}
		})
	}
}

func TestValidateTemplateMessageRefuses(t *testing.T) {
	s := load(t)
	tests := []struct {
		name, body, want string
	}{
		{"not JSON", `{"type":`, "body is not JSON"},
		{"not a template", `{"messaging_product":"whatsapp","recipient_type":"individual","to":"1","type":"text","text":{"body":"hi"}}`,
			"type is text, not template"},
		{"no type", `{"messaging_product":"whatsapp","recipient_type":"individual","to":"1"}`, "type is <nil>, not template"},
		{"not an object", `[]`, "type is <nil>, not template"},
		{"no language", `{"messaging_product":"whatsapp","recipient_type":"individual","to":"1","type":"template","template":{"name":"t"}}`,
			"message: validate against TemplateMessage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.ValidateTemplateMessage([]byte(tt.body))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ValidateTemplateMessage = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestDiscriminatorFromDocument: the walk follows whatever mappings the
// document has, and says what is wrong with one it cannot follow.
func TestDiscriminatorFromDocument(t *testing.T) {
	var doc map[string]any
	err := json.Unmarshal([]byte(`{"components":{"schemas":{
	  "Message":{"type":"object","required":["type"],
	    "discriminator":{"propertyName":"type","mapping":{"template":"#/components/schemas/TemplateMessage"}}},
	  "TemplateMessage":{"properties":{"template":{"$ref":"#/components/schemas/Template"}}},
	  "Template":{"properties":{"components":{"type":"array","items":{"$ref":"#/components/schemas/Part"}}}},
	  "Part":{"discriminator":{"propertyName":"kind","mapping":{
	    "a":"#/components/schemas/PartA","bare":"PartA","gone":"#/components/schemas/Gone"}}},
	  "PartA":{"allOf":[{"$ref":"#/components/schemas/Part"},{"required":["a"]}]}
	}}}`), &doc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSpec(filepath.Join(t.TempDir(), "doc.yaml"), doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, part, want string
	}{
		{"mapped and valid", `{"kind":"a","a":1}`, ""},
		{"mapped and invalid", `{"kind":"a"}`, "template.components[0]: validate against PartA"},
		{"not in the mapping", `{"kind":"b"}`, `template.components[0]: kind "b" has no schema in Part's discriminator mapping`},
		{"no discriminating property", `{"a":1}`, `template.components[0]: Part's discriminator needs a string "kind"`},
		{"mapped to a bare name", `{"kind":"bare"}`, `Part's discriminator maps "bare" to "PartA", not a component schema`},
		{"mapped to a missing schema", `{"kind":"gone"}`, `unknown schema "Gone"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.ValidateTemplateMessage([]byte(`{"type":"template","template":{"components":[` + tt.part + `]}}`))
			if tt.want == "" {
				if err != nil {
					t.Errorf("ValidateTemplateMessage = %v, want valid", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ValidateTemplateMessage = %v, want an error with %q", err, tt.want)
			}
		})
	}
}
