package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/bulksend/bulksend/internal/oas"
)

// The sandbox is only useful if it speaks Meta's wire format: these tests
// check its answers and webhooks against Meta's own OpenAPI document.

func spec(t *testing.T) *oas.Spec {
	t.Helper()
	s, err := oas.Load()
	if err != nil {
		t.Fatalf("load Meta's OpenAPI document: %v", err) // fail, never skip
	}
	return s
}

func TestConformanceRequestFixture(t *testing.T) {
	sp := spec(t)
	for _, body := range []string{
		msg("16505551234", "campaign42:row17", "welcome", "en_US", 2),
		msg("+16505551234", "", "welcome", "en", 0),
	} {
		if err := sp.Validate("Message", []byte(body)); err != nil {
			t.Errorf("test fixture is not a valid Message: %v\n%s", err, body)
		}
	}
}

func TestConformanceSuccess(t *testing.T) {
	sp := spec(t)
	schema, err := sp.ResponseSchema("sendMessage", "200")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{})
	defer s.Close()
	for _, to := range []string{"16505551234", "+447700900123"} {
		a := send(s, to, "cb")
		if a.status != 200 {
			t.Fatal(a)
		}
		if err := sp.Validate(schema, a.body); err != nil {
			t.Errorf("success answer does not match %s: %v\n%s", schema, err, a.body)
		}
	}
}

func TestConformanceErrors(t *testing.T) {
	sp := spec(t)
	clk := newClock()
	s := New(Config{
		Now: clk.Now, Rate: 1, Token: token, ExpiredToken: "old",
		Templates: []Template{{Name: "welcome", BodyParams: 1}},
	})
	transient := New(Config{TransientRate: 1, Rate: -1, PairInterval: -1})
	permanent := New(Config{PermanentRate: 1})
	closed := New(Config{})
	closed.Close()
	defer s.Close()
	defer transient.Close()
	defer permanent.Close()

	var answers []answer
	answers = append(answers,
		do(s, "POST", path, "", "{}"),
		do(s, "POST", path, "old", "{}"),
		do(s, "POST", path, "bad", "{}"),
		do(s, "POST", path, token, "not json"),
		do(s, "POST", path, token, `{"messaging_product":"whatsapp","type":"template"}`),
		do(s, "POST", path, token, msg("16505551234", "", "nope", "en", 1)),
		do(s, "POST", path, token, msg("16505551234", "", "welcome", "en", 3)),
		do(s, "GET", path, token, ""),
		do(s, "POST", "/v23.0/x/messages", token, ""),
		do(s, "POST", path, token, msg("16505551234", "", "welcome", "en", 1)),
		do(s, "POST", path, token, msg("16505551234", "", "welcome", "en", 1)), // 130429
		do(permanent, "POST", path, token, msg("16505551234", "", "welcome", "en", 1)),
		send(closed, "16505551234", ""),
	)
	clk.Add(2 * time.Second)
	answers = append(answers, do(s, "POST", path, token, msg("16505551234", "", "welcome", "en", 1))) // 131056
	for i := range 30 {
		answers = append(answers, send(transient, "16505551234", fmt.Sprint(i)))
	}

	codes := map[int]bool{}
	for _, a := range answers {
		if a.code == 0 {
			continue
		}
		codes[a.code] = true
		if err := sp.Validate("GraphAPIError", a.body); err != nil {
			t.Errorf("error answer does not match GraphAPIError: %v\n%s", err, a.body)
		}
		var e errorBody
		json.Unmarshal(a.body, &e)
		if e.Error.Type != "OAuthException" || e.Error.FBTraceID == "" {
			t.Errorf("error answer lacks type or fbtrace_id: %s", a.body)
		}
		if a.code >= 130000 {
			if !strings.HasPrefix(e.Error.Message, fmt.Sprintf("(#%d) ", a.code)) ||
				e.Error.ErrorData == nil || e.Error.ErrorData.MessagingProduct != "whatsapp" || e.Error.ErrorData.Details == "" {
				t.Errorf("WhatsApp error without Meta's message/error_data: %s", a.body)
			}
		}
	}
	for _, c := range []int{2, 100, 190, 200, 130429, 131000, 131008, 131016, 131026, 131056, 132000, 132001} {
		if !codes[c] {
			t.Errorf("no answer with code %d was checked", c)
		}
	}
}

func TestConformanceWebhooks(t *testing.T) {
	sp := spec(t)
	var hooks bytes.Buffer
	s := New(Config{
		Seed: 3, Rate: -1, FailRate: 0.3, ReadRate: 0.5, DuplicateRate: 0.1, ReorderRate: 0.1,
		Webhooks: &hooks,
	})
	for i := range 100 {
		p := path
		if i%2 == 0 {
			p = "/v24.0/" + phoneID + "/messages"
		}
		if a := do(s, "POST", p, token, msg(fmt.Sprint(16505550000+i), fmt.Sprint("cb", i), "t", "en", 0)); a.status != 200 {
			t.Fatal(a)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	statuses := map[string]bool{}
	for _, l := range lines(t, hooks.Bytes()) {
		if err := sp.Validate("WebhookPayload", l); err != nil {
			t.Errorf("webhook does not match WebhookPayload: %v\n%s", err, l)
		}
		w := parseWebhook(t, l)
		st, _ := json.Marshal(w.whStatus)
		if err := sp.Validate("Statuses", st); err != nil {
			t.Errorf("status does not match Statuses: %v\n%s", err, st)
		}
		statuses[w.Status] = true
	}
	for _, want := range []string{"sent", "delivered", "read", "failed"} {
		if !statuses[want] {
			t.Errorf("no %s webhook was checked", want)
		}
	}
}

// Every answer of GET message_templates has the shape of Meta's
// getTemplateByNameDefaultFields response, or of a Graph error.
func TestConformanceTemplates(t *testing.T) {
	sp := spec(t)
	schema := inlineResponseSchema(t, sp, "getTemplateByNameDefaultFields", "200")
	s := New(Config{Token: token, ExpiredToken: "old", Definitions: FixtureDefinitions()})
	defer s.Close()
	var answers []answer
	for _, q := range []string{
		"", "?limit=1", "?limit=4&after=" + encodeCursor(3), "?before=" + encodeCursor(5),
		"?name=login_code&language=en_US&fields=name,components", "?name=nope", "?status=PAUSED",
	} {
		answers = append(answers, do(s, "GET", tplPath+q, token, ""))
	}
	answers = append(answers,
		do(s, "GET", tplPath, "", ""),
		do(s, "GET", tplPath, "old", ""),
		do(s, "GET", "/v23.0/1/message_templates", token, ""),
		do(s, "GET", tplPath+"?limit=-1", token, ""),
		do(s, "GET", tplPath+"?after=x", token, ""),
		do(s, "DELETE", tplPath, token, ""),
	)
	ok, refused := 0, 0
	for _, a := range answers {
		if a.status != 200 {
			refused++
			if err := sp.Validate("GraphAPIError", a.body); err != nil {
				t.Errorf("answer does not match GraphAPIError: %v\n%s", err, a.body)
			}
			continue
		}
		ok++
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(a.body))
		if err == nil {
			err = schema.Validate(v)
		}
		if err != nil {
			t.Errorf("answer does not match getTemplateByNameDefaultFields: %v\n%s", err, a.body)
		}
	}
	// The schema must bite, or the loop above proves nothing.
	for _, bad := range []string{`{"data":[{"id":920070352646140}]}`, `{"data":{}}`, `{"data":[{"components":null}]}`} {
		v, _ := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if schema.Validate(v) == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
	if ok != 7 || refused != 6 {
		t.Errorf("%d answers 200 and %d refused, want 7 and 6", ok, refused)
	}
}

// inlineResponseSchema compiles an operation's response schema that Meta's
// document writes inline rather than as a component, which
// oas.ResponseSchema cannot name. It has no $ref, so it compiles alone.
func inlineResponseSchema(t *testing.T, sp *oas.Spec, operationID, status string) *jsonschema.Schema {
	t.Helper()
	raw, err := os.ReadFile(sp.Path())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, item := range doc.Paths {
		for _, node := range item {
			var op struct {
				OperationID string `yaml:"operationId"`
				Responses   map[string]struct {
					Content map[string]struct {
						Schema any `yaml:"schema"`
					} `yaml:"content"`
				} `yaml:"responses"`
			}
			if node.Decode(&op) != nil || op.OperationID != operationID {
				continue // path-level parameters, other operations
			}
			b, err := json.Marshal(op.Responses[status].Content["application/json"].Schema)
			if err != nil || string(b) == "null" {
				t.Fatalf("%s %s: no JSON schema (%v)", operationID, status, err)
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			c := jsonschema.NewCompiler()
			url := "mem://" + operationID + "/" + status + ".json"
			if err := c.AddResource(url, v); err != nil {
				t.Fatal(err)
			}
			sch, err := c.Compile(url)
			if err != nil {
				t.Fatal(err)
			}
			return sch
		}
	}
	t.Fatalf("operation %s not in %s", operationID, sp.Path())
	return nil
}
