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

	"github.com/bulksend/bulksend/internal/whatsapp/internal/oas"
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

// GET /{phone-number-id} answers Meta's PhoneNumberInfo (getPhoneNumberById)
// and its health_status has the shape of the health_status Meta's document
// describes (inline, on getFlow: the only operation that has one).
func TestConformanceNumber(t *testing.T) {
	sp := spec(t)
	schema, err := sp.ResponseSchema("getPhoneNumberById", "200")
	if err != nil {
		t.Fatal(err)
	}
	flow := inlineResponseSchema(t, sp, "getFlow", "200")
	s := New(Config{
		Token: token, PhoneNumberIDs: []string{phoneID, otherID, "106540352242924"},
		Numbers: map[string]NumberInfo{
			phoneID: {Quality: "RED", Throughput: "NOT_APPLICABLE", MessagingLimit: "TIER_250", Health: HealthBlocked, NameStatus: "DECLINED"},
			otherID: {Quality: "NA", Throughput: "HIGH", MessagingLimit: "TIER_UNLIMITED", Health: HealthLimited, HealthEntity: "PHONE_NUMBER"},
		},
	})
	defer s.Close()
	var answers []answer
	for _, p := range []string{
		numberPath(phoneID), numberPath(otherID), numberPath("106540352242924"),
		numberPath(phoneID) + "?fields=health_status", numberPath(otherID) + "?fields=quality_rating,throughput",
	} {
		answers = append(answers, do(s, "GET", p, token, ""))
	}
	answers = append(answers,
		do(s, "GET", numberPath(phoneID)+"?fields=nope", token, ""),
		do(s, "GET", numberPath("1"), token, ""),
		do(s, "GET", numberPath(phoneID), "", ""),
		do(s, "DELETE", numberPath(phoneID), token, ""),
	)
	ok := 0
	for _, a := range answers {
		if a.status != 200 {
			if err := sp.Validate("GraphAPIError", a.body); err != nil {
				t.Errorf("answer does not match GraphAPIError: %v\n%s", err, a.body)
			}
			continue
		}
		ok++
		if err := sp.Validate(schema, a.body); err != nil {
			t.Errorf("answer does not match %s: %v\n%s", schema, err, a.body)
		}
		var h struct {
			HealthStatus json.RawMessage `json:"health_status"`
		}
		json.Unmarshal(a.body, &h)
		if h.HealthStatus == nil {
			continue
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(`{"health_status":` + string(h.HealthStatus) + `}`)))
		if err == nil {
			err = flow.Validate(v)
		}
		if err != nil {
			t.Errorf("health_status does not match Meta's: %v\n%s", err, h.HealthStatus)
		}
	}
	if ok != 5 {
		t.Errorf("%d answers 200, want 5", ok)
	}
	// The schemas must bite.
	if sp.Validate(schema, []byte(`{"id":"1","quality_rating":"PURPLE"}`)) == nil {
		t.Error("PhoneNumberInfo accepts quality_rating PURPLE")
	}
	v, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"health_status":{"entities":[{"errors":[{"error_code":"141006"}]}]}}`))
	if flow.Validate(v) == nil {
		t.Error("the health_status schema accepts a string error_code")
	}
}

// The Marketing Messages API: requests as bulksend sends them are Meta's
// MarketingMessageRequestPayload; answers are MarketingMessageResponsePayload
// or GraphAPIError; held answers of /messages are MessageResponsePayload.
func TestConformanceMarketingMessages(t *testing.T) {
	sp := spec(t)
	mmSchema, err := sp.ResponseSchema("sendMarketingMessage", "200")
	if err != nil {
		t.Fatal(err)
	}
	msgSchema, err := sp.ResponseSchema("sendMessage", "200")
	if err != nil {
		t.Fatal(err)
	}
	marketing := map[string]bool{}
	for _, d := range FixtureDefinitions() {
		marketing[d.Name] = d.Category == "MARKETING"
	}
	// Every marketing send that is a valid Message for /messages is a valid
	// MarketingMessageRequestPayload with the two fields added (the others
	// show what Meta takes beyond its schema).
	var bodies []string
	for i, v := range ValidSends() {
		if !marketing[v.Template] || sp.ValidateTemplateMessage([]byte(v.Body(fmt.Sprint(16505550000+i)))) != nil {
			continue
		}
		b := withFields(t, v.Body(fmt.Sprint(16505550000+i)), map[string]any{
			"product_policy": []string{PolicyFallback, PolicyStrict}[i%2], "message_activity_sharing": i%3 == 0,
		})
		if err := sp.Validate("MarketingMessageRequestPayload", []byte(b)); err != nil {
			t.Errorf("%s: request is not a MarketingMessageRequestPayload: %v\n%s", v.Name, err, b)
		}
		bodies = append(bodies, b)
	}

	onboarded := New(Config{Seed: 1, MMOnboarded: true, HeldRate: 0.5, Definitions: FixtureDefinitions(), Rate: -1, PairInterval: -1})
	fallback := New(Config{Definitions: FixtureDefinitions(), Rate: -1, PairInterval: -1})
	refusing := New(Config{
		MMOnboarded: true, MMSyncing: []string{"fall_coupon"}, Definitions: FixtureDefinitions(),
		Numbers: map[string]NumberInfo{otherID: {SendError: 33}, "106540352242924": {SendError: 131048}},
	})
	off := New(Config{MarketingOffOnCloudAPI: true, Definitions: FixtureDefinitions()})
	held := New(Config{HeldRate: 1})
	for _, s := range []*Server{onboarded, fallback, refusing, off, held} {
		defer s.Close()
	}
	if len(bodies) < 3 {
		t.Fatalf("only %d marketing sends checked", len(bodies))
	}
	statuses := map[string]bool{}
	for _, s := range []*Server{onboarded, fallback} {
		for _, b := range bodies {
			if s == fallback {
				b = withFields(t, b, map[string]any{"product_policy": PolicyFallback})
			}
			a := do(s, "POST", mmPath(phoneID), token, b)
			if a.status != 200 {
				t.Fatal(a)
			}
			if err := sp.Validate(mmSchema, a.body); err != nil {
				t.Errorf("answer does not match %s: %v\n%s", mmSchema, err, a.body)
			}
			statuses[messageStatus(t, a)] = true
		}
	}
	if !statuses[statusAccepted] || !statuses[statusHeld] {
		t.Errorf("message statuses checked: %v", statuses)
	}
	a := send(held, "16505551234", "")
	if err := sp.Validate(msgSchema, a.body); err != nil || messageStatus(t, a) != statusHeld {
		t.Errorf("held answer does not match %s: %v\n%s", msgSchema, err, a.body)
	}

	strict := func(b string) string { return withFields(t, b, map[string]any{"product_policy": PolicyStrict}) }
	answers := []answer{
		do(refusing, "POST", mmPath(phoneID), token, validSend(t, "order_update").Body("16505551234")),
		do(refusing, "POST", mmPath(phoneID), token, validSend(t, "fall_coupon").Body("16505551234")),
		do(fallback, "POST", mmPath(phoneID), token, strict(validSend(t, "spring_sale").Body("16505551234"))),
		do(off, "POST", path, token, validSend(t, "spring_sale").Body("16505551234")),
		do(refusing, "POST", mmPath(phoneID), token, withFields(t, validSend(t, "spring_sale").Body("16505551234"), map[string]any{"product_policy": "LOOSE"})),
		do(refusing, "POST", mmPath(otherID), token, validSend(t, "spring_sale").Body("16505551234")),
		do(refusing, "POST", "/v23.0/106540352242924/messages", token, validSend(t, "spring_sale").Body("16505551234")),
	}
	codes := map[int]bool{}
	for _, a := range answers {
		codes[a.code] = true
		if err := sp.Validate("GraphAPIError", a.body); err != nil {
			t.Errorf("error answer does not match GraphAPIError: %v\n%s", err, a.body)
		}
		var e errorBody
		json.Unmarshal(a.body, &e)
		if !strings.HasPrefix(e.Error.Message, fmt.Sprintf("(#%d) ", a.code)) || e.Error.ErrorData == nil || e.Error.ErrorData.Details == "" {
			t.Errorf("error without Meta's message/error_data: %s", a.body)
		}
	}
	for _, c := range []int{33, 100, 131048, 131055, 131063, 134101, 134102} {
		if !codes[c] {
			t.Errorf("no answer with code %d was checked", c)
		}
	}
}

// The webhooks of held, dropped, capped and Marketing Messages API sends
// are Meta's WebhookPayload.
func TestConformanceAccountWebhooks(t *testing.T) {
	sp := spec(t)
	var hooks bytes.Buffer
	s := New(Config{
		Seed: 6, Rate: -1, PairInterval: -1, FailRate: 0.1, ReadRate: 0.5, HeldRate: 0.3, HeldFailRate: 0.5,
		MarketingCapRate: 0.2, MMOnboarded: true, Definitions: FixtureDefinitions(), Webhooks: &hooks,
	})
	for i := range 200 {
		v := validSend(t, []string{"spring_sale", "order_update", "login_code", "fall_coupon"}[i%4])
		p := []string{path, "/v24.0/" + phoneID + "/messages"}[i%2]
		if i%4 == 3 {
			p = []string{mmPath(phoneID), "/v24.0/" + phoneID + "/marketing_messages"}[i%2]
		}
		if a := do(s, "POST", p, token, v.Body(fmt.Sprint(16505550000+i))); a.status != 200 {
			t.Fatal(a)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range lines(t, hooks.Bytes()) {
		if err := sp.Validate("WebhookPayload", l); err != nil {
			t.Errorf("webhook does not match WebhookPayload: %v\n%s", err, l)
		}
		w := parseWebhook(t, l)
		st, _ := json.Marshal(w.whStatus)
		if err := sp.Validate("Statuses", st); err != nil {
			t.Errorf("status does not match Statuses: %v\n%s", err, st)
		}
		if w.Pricing != nil {
			seen[w.Pricing.Category] = true
		}
		for _, e := range w.Errors {
			seen[fmt.Sprint(e.Code)] = true
		}
	}
	for _, want := range []string{"marketing", "marketing_lite", "utility", "authentication", "132015", "131049"} {
		if !seen[want] {
			t.Errorf("no webhook with %s was checked", want)
		}
	}
}
