package oas

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// load fails the test, never skips it, when the document is missing: a
// checkout without testdata/openapi must not silently stop checking
// conformance.
func load(t *testing.T) *Spec {
	t.Helper()
	s, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return s
}

func TestLoadIsCached(t *testing.T) {
	a, b := load(t), load(t)
	if a != b {
		t.Errorf("Load returned two different *Spec for %s", a.Path())
	}
}

func TestFind(t *testing.T) {
	real := load(t).Path()

	t.Run("env", func(t *testing.T) {
		t.Setenv(EnvVar, real)
		got, err := find()
		if err != nil || got != real {
			t.Errorf("find() = %q, %v; want %q", got, err, real)
		}
	})
	t.Run("env missing file", func(t *testing.T) {
		t.Setenv(EnvVar, filepath.Join(t.TempDir(), "nope.yaml"))
		if _, err := find(); !errors.Is(err, ErrNotFound) {
			t.Errorf("find() error = %v, want ErrNotFound", err)
		}
		if _, err := Load(); !errors.Is(err, ErrNotFound) {
			t.Errorf("Load() error = %v, want ErrNotFound", err)
		}
	})
	t.Run("repository copy", func(t *testing.T) {
		// Tests run in the package directory, two levels below the root.
		t.Setenv(EnvVar, "")
		want, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "testdata", "openapi", FileName))
		if err != nil {
			t.Fatal(err)
		}
		got, err := find()
		if err != nil || got != want {
			t.Errorf("find() = %q, %v; want %q", got, err, want)
		}
	})
	t.Run("walk up to the module root", func(t *testing.T) {
		// root/internal/oas, with a go.mod of another module in between
		// that must be walked past.
		root := t.TempDir()
		wd := filepath.Join(root, "internal", "oas")
		dir := filepath.Join(root, "testdata", "openapi")
		for _, d := range []string{wd, dir} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		writeFile(t, filepath.Join(root, "go.mod"), "// bulksend\nmodule github.com/bulksend/bulksend // the CLI\n\ngo 1.26\n")
		writeFile(t, filepath.Join(root, "internal", "go.mod"), "module github.com/bulksend/bulksend/internal\n")
		want := filepath.Join(dir, FileName)
		if err := os.Symlink(real, want); err != nil {
			t.Fatal(err)
		}
		t.Setenv(EnvVar, "")
		t.Chdir(wd)
		got, err := find()
		if err != nil || got != want {
			t.Errorf("find() = %q, %v; want %q", got, err, want)
		}
	})
	t.Run("module root without the document", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "go.mod"), "module \"github.com/bulksend/bulksend\"\n")
		t.Setenv(EnvVar, "")
		t.Chdir(root)
		if _, err := find(); !errors.Is(err, ErrNotFound) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("find() error = %v, want ErrNotFound and fs.ErrNotExist", err)
		}
	})
	t.Run("not found", func(t *testing.T) {
		// No go.mod of the module above a fresh temporary directory.
		t.Setenv(EnvVar, "")
		t.Chdir(t.TempDir())
		if _, err := find(); !errors.Is(err, ErrNotFound) {
			t.Errorf("find() error = %v, want ErrNotFound", err)
		}
	})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAllComponentsCompile shows that Meta's document needs no
// pre-processing: OpenAPI keywords (discriminator, example, nullable, …) are
// unknown to draft 2020-12 and ignored.
func TestAllComponentsCompile(t *testing.T) {
	s := load(t)
	names := s.SchemaNames()
	if len(names) < 100 {
		t.Fatalf("only %d component schemas found", len(names))
	}
	for _, name := range names {
		if _, err := s.Schema(name); err != nil {
			t.Errorf("Schema(%q): %v", name, err)
		}
	}
}

const goodTemplate = `{
  "messaging_product": "whatsapp",
  "recipient_type": "individual",
  "to": "16505551234",
  "type": "template",
  "biz_opaque_callback_data": "campaign42:row17",
  "template": {
    "name": "welcome_discount",
    "language": {"policy": "deterministic", "code": "en_US"},
    "components": [
      {"type": "body", "parameters": [
        {"type": "text", "text": "Jessica"},
        {"type": "text", "text": "WELCOME25"}
      ]}
    ]
  }
}`

func TestValidate(t *testing.T) {
	s := load(t)
	tests := []struct {
		name   string
		schema string
		body   string
		valid  bool
	}{
		{"template message", "Message", goodTemplate, true},
		{"template message without callback data or components", "Message",
			`{"messaging_product":"whatsapp","recipient_type":"individual","to":"+16505551234","type":"template",
			  "template":{"name":"hello_world","language":{"policy":"deterministic","code":"en"}}}`, true},
		{"missing to", "Message",
			`{"messaging_product":"whatsapp","recipient_type":"individual","type":"template",
			  "template":{"name":"hello_world","language":{"policy":"deterministic","code":"en"}}}`, false},
		{"missing recipient_type", "Message",
			`{"messaging_product":"whatsapp","to":"16505551234","type":"template",
			  "template":{"name":"hello_world","language":{"policy":"deterministic","code":"en"}}}`, false},
		{"type text without text", "Message",
			`{"messaging_product":"whatsapp","recipient_type":"individual","to":"16505551234","type":"text"}`, false},
		{"type template without template", "Message",
			`{"messaging_product":"whatsapp","recipient_type":"individual","to":"16505551234","type":"template"}`, false},
		// Meta's LanguageObject requires policy although its own examples
		// omit it: senders must always include "policy":"deterministic".
		{"language without policy", "Message",
			`{"messaging_product":"whatsapp","recipient_type":"individual","to":"16505551234","type":"template",
			  "template":{"name":"hello_world","language":{"code":"en"}}}`, false},
		// Meta's TemplateComponent.index pattern is ^[2-6, 11-14]$, a
		// character class that rejects the documented "0": corrected.
		{"button index 0 (corrected)", "Message",
			`{"messaging_product":"whatsapp","recipient_type":"individual","to":"16505551234","type":"template",
			  "template":{"name":"t","language":{"policy":"deterministic","code":"en"},
			  "components":[{"type":"button","sub_type":"quick_reply","index":"0","parameters":[{"type":"payload","payload":"P"}]}]}}`, true},
		{"button index 10", "Message",
			`{"messaging_product":"whatsapp","recipient_type":"individual","to":"16505551234","type":"template",
			  "template":{"name":"t","language":{"policy":"deterministic","code":"en"},
			  "components":[{"type":"button","sub_type":"quick_reply","index":"10","parameters":[{"type":"payload","payload":"P"}]}]}}`, false},
		{"component of unknown type", "Message",
			`{"messaging_product":"whatsapp","recipient_type":"individual","to":"16505551234","type":"template",
			  "template":{"name":"t","language":{"policy":"deterministic","code":"en"},"components":[{"type":"footer"}]}}`, false},

		{"send response", "MessageResponsePayload",
			`{"messaging_product":"whatsapp","contacts":[{"input":"+16505551234","wa_id":"16505551234"}],
			  "messages":[{"id":"wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBIyQjM2RTlERTY4QjFGNzUwNDgA","message_status":"accepted"}]}`, true},
		{"send response held", "MessageResponsePayload",
			`{"messaging_product":"whatsapp","contacts":[{"input":"1","wa_id":"1"}],"messages":[{"id":"wamid.x","message_status":"held_for_quality_assessment"}]}`, true},
		{"send response unknown message_status", "MessageResponsePayload",
			`{"messaging_product":"whatsapp","contacts":[],"messages":[{"id":"wamid.x","message_status":"ok"}]}`, false},
		{"send response messages not an array", "MessageResponsePayload",
			`{"messaging_product":"whatsapp","messages":{"id":"wamid.x"}}`, false},

		{"error", "GraphAPIError",
			`{"error":{"message":"(#130429) Rate limit hit","type":"OAuthException","code":130429,
			  "error_data":{"messaging_product":"whatsapp","details":"Cloud API message throughput has been reached."},
			  "fbtrace_id":"Az8or2yhqkZfEZ-_4Qn_Bam"}}`, true},
		{"error without code", "GraphAPIError", `{"error":{"message":"x","type":"OAuthException"}}`, false},
		{"error code as string", "GraphAPIError", `{"error":{"message":"x","type":"OAuthException","code":"130429"}}`, false},

		{"webhook sent", "WebhookPayload", webhook(`{"id":"wamid.x","status":"sent","timestamp":"1750030073","recipient_id":"16505551234",
			"biz_opaque_callback_data":"campaign42:row17",
			"conversation":{"id":"c1","expiration_timestamp":"1750116480","origin":{"type":"marketing"}},
			"pricing":{"billable":true,"pricing_model":"PMP","type":"regular","category":"marketing"}}`), true},
		{"webhook failed", "WebhookPayload", webhook(`{"id":"wamid.x","status":"failed","timestamp":"1750030073","recipient_id":"16505551234",
			"errors":[{"code":131049,"title":"t","message":"t","error_data":{"details":"d"},"href":"/documentation/business-messaging/whatsapp/support/error-codes"}]}`), true},
		{"webhook unknown status", "WebhookPayload", webhook(`{"id":"wamid.x","status":"bounced","timestamp":"1750030073","recipient_id":"1"}`), false},
		{"webhook numeric timestamp", "WebhookPayload", webhook(`{"id":"wamid.x","status":"sent","timestamp":1750030073,"recipient_id":"1"}`), false},
		{"webhook without metadata", "WebhookPayload",
			`{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages",
			  "value":{"messaging_product":"whatsapp","statuses":[]}}]}]}`, false},

		{"status", "Statuses", `{"id":"wamid.x","status":"read","timestamp":"1750030073","recipient_id":"16505551234"}`, true},
		{"status without recipient", "Statuses", `{"id":"wamid.x","status":"read","timestamp":"1750030073"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Validate(tt.schema, []byte(tt.body))
			if tt.valid && err != nil {
				t.Errorf("Validate(%s) = %v, want valid", tt.schema, err)
			}
			if !tt.valid {
				var ve *jsonschema.ValidationError
				if !errors.As(err, &ve) {
					t.Errorf("Validate(%s) = %v, want a *jsonschema.ValidationError", tt.schema, err)
				}
			}
		})
	}
}

func webhook(status string) string {
	return `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"field":"messages",
	  "value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},
	  "statuses":[` + status + `]}}]}]}`
}

func TestValidateErrors(t *testing.T) {
	s := load(t)
	if err := s.Validate("NoSuchSchema", []byte(`{}`)); !errors.Is(err, ErrUnknownSchema) {
		t.Errorf("unknown schema: err = %v, want ErrUnknownSchema", err)
	}
	err := s.Validate("Statuses", []byte(`{"id":`))
	var ve *jsonschema.ValidationError
	if err == nil || errors.As(err, &ve) {
		t.Errorf("malformed JSON: err = %v, want a parse error", err)
	}
}

func TestResponseSchema(t *testing.T) {
	s := load(t)
	got, err := s.ResponseSchema("sendMessage", "200")
	if err != nil || got != "MessageResponsePayload" {
		t.Errorf(`ResponseSchema("sendMessage", "200") = %q, %v`, got, err)
	}
	if _, err := s.ResponseSchema("sendMessage", "418"); err == nil {
		t.Error("missing response status: want error")
	}
	if _, err := s.ResponseSchema("noSuchOperation", "200"); err == nil {
		t.Error("missing operation: want error")
	}
}

func TestValidateConcurrent(t *testing.T) {
	s := load(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			schema := []string{"Message", "Statuses", "template"}[i%3]
			body := goodTemplate
			if schema == "Statuses" {
				body = `{"id":"wamid.x","status":"sent","timestamp":"1","recipient_id":"1"}`
			}
			for range 50 {
				var err error
				if schema == "template" {
					err = s.ValidateTemplateMessage([]byte(body))
				} else {
					err = s.Validate(schema, []byte(body))
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
