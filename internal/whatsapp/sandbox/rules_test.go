package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// Tests of Meta's account rules: number fields and health, account-level
// answers, held messages, the marketing cap, the Marketing Messages API,
// pricing and the usage header.

const otherID = "106540352242923" // a second sender number

func numberPath(id string) string { return "/v23.0/" + id }

func mmPath(id string) string { return "/v23.0/" + id + "/marketing_messages" }

// withFields returns body, a JSON object, with the given fields set.
func withFields(t *testing.T, body string, fields map[string]any) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// validSend is the first of ValidSends for template name.
func validSend(t *testing.T, name string) ValidSend {
	t.Helper()
	for _, v := range ValidSends() {
		if v.Template == name {
			return v
		}
	}
	t.Fatalf("no valid send of %s", name)
	return ValidSend{}
}

// keys are the top-level keys of a JSON object, sorted.
func keys(t *testing.T, body []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// webhooksByID groups the statuses of NDJSON webhooks by message id, in
// emission order.
func webhooksByID(t *testing.T, b []byte) map[string][]status {
	t.Helper()
	out := map[string][]status{}
	for _, l := range lines(t, b) {
		w := parseWebhook(t, l)
		out[w.ID] = append(out[w.ID], w)
	}
	return out
}

func statusNames(ss []status) string {
	var names []string
	for _, s := range ss {
		n := s.Status
		if len(s.Errors) > 0 {
			n += fmt.Sprint("/", s.Errors[0].Code)
		}
		names = append(names, n)
	}
	return strings.Join(names, ",")
}

// messageStatus is messages[0].message_status of a send answer.
func messageStatus(t *testing.T, a answer) string {
	t.Helper()
	var r sendResponse
	if err := json.Unmarshal(a.body, &r); err != nil || len(r.Messages) != 1 {
		t.Fatalf("%v: %v", a, err)
	}
	return r.Messages[0].MessageStatus
}

func TestNumberFields(t *testing.T) {
	s := New(Config{
		Token: token, ExpiredToken: "old", PhoneNumberIDs: []string{phoneID, otherID},
		Numbers: map[string]NumberInfo{otherID: {
			VerifiedName: "Jasper's Market", Quality: "RED", Throughput: "HIGH", MessagingLimit: "TIER_250",
			NameStatus: "DECLINED", Status: "FLAGGED", Health: HealthBlocked,
		}},
	})
	defer s.Close()
	all := []string{"code_verification_status", "display_phone_number", "health_status", "id", "name_status", "platform_type",
		"quality_rating", "status", "throughput", "verified_name", "whatsapp_business_manager_messaging_limit"}
	tests := []struct {
		name, method, path, tok string
		wantStatus, wantCode    int
		wantKeys                []string
		want                    numberResp // compared where set
	}{
		{"defaults", "GET", numberPath(phoneID), token, 200, 0, all,
			numberResp{VerifiedName: "Sandbox Store", QualityRating: "GREEN", Throughput: &throughputResp{"STANDARD"},
				MessagingLimit: "TIER_10K", NameStatus: "APPROVED", Status: "CONNECTED", HealthStatus: &healthStatus{CanSendMessage: "AVAILABLE"}}},
		{"configured", "GET", numberPath(otherID), token, 200, 0, all,
			numberResp{VerifiedName: "Jasper's Market", QualityRating: "RED", Throughput: &throughputResp{"HIGH"},
				MessagingLimit: "TIER_250", NameStatus: "DECLINED", Status: "FLAGGED", HealthStatus: &healthStatus{CanSendMessage: "BLOCKED"}}},
		{"no version", "GET", "/" + otherID, token, 200, 0, all, numberResp{QualityRating: "RED"}},
		{"fields honoured", "GET", numberPath(otherID) + "?fields=health_status,throughput,whatsapp_business_manager_messaging_limit", token, 200, 0,
			[]string{"health_status", "id", "throughput", "whatsapp_business_manager_messaging_limit"},
			numberResp{Throughput: &throughputResp{"HIGH"}, MessagingLimit: "TIER_250"}},
		{"nested field syntax", "GET", numberPath(phoneID) + "?fields=health_status{can_send_message,entities},%20quality_rating", token, 200, 0,
			[]string{"health_status", "id", "quality_rating"}, numberResp{QualityRating: "GREEN"}},
		{"nonexisting field", "GET", numberPath(phoneID) + "?fields=quality_rating,messaging_tier", token, 400, 100, nil, numberResp{}},
		{"unknown number", "GET", numberPath("106540352242999"), token, 400, 100, nil, numberResp{}},
		{"no token", "GET", numberPath(phoneID), "", 403, 200, nil, numberResp{}},
		{"expired token", "GET", numberPath(phoneID), "old", 401, 190, nil, numberResp{}},
		{"POST", "POST", numberPath(phoneID), token, 400, 100, nil, numberResp{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := do(s, tt.method, tt.path, tt.tok, "")
			if a.status != tt.wantStatus || a.code != tt.wantCode {
				t.Fatalf("got %v, want HTTP %d code %d", a, tt.wantStatus, tt.wantCode)
			}
			if a.status != 200 {
				return
			}
			if got := keys(t, a.body); !slices.Equal(got, tt.wantKeys) {
				t.Errorf("fields %v, want %v", got, tt.wantKeys)
			}
			var got numberResp
			if err := json.Unmarshal(a.body, &got); err != nil {
				t.Fatal(err)
			}
			id := strings.TrimPrefix(strings.Split(tt.path, "?")[0], "/v23.0")[1:]
			w := tt.want
			switch {
			case got.ID != id:
				t.Errorf("id %q, want %q", got.ID, id)
			case w.VerifiedName != "" && got.VerifiedName != w.VerifiedName,
				w.QualityRating != "" && got.QualityRating != w.QualityRating,
				w.MessagingLimit != "" && got.MessagingLimit != w.MessagingLimit,
				w.NameStatus != "" && got.NameStatus != w.NameStatus,
				w.Status != "" && got.Status != w.Status,
				w.Throughput != nil && *got.Throughput != *w.Throughput,
				w.HealthStatus != nil && got.HealthStatus.CanSendMessage != w.HealthStatus.CanSendMessage:
				t.Errorf("got %s", a.body)
			}
			if got.DisplayPhoneNumber != "" && !strings.HasPrefix(got.DisplayPhoneNumber, "+1 555-") {
				t.Errorf("display_phone_number %q", got.DisplayPhoneNumber)
			}
		})
	}
	st := s.Stats()
	if st.NumberReads != int64(len(tests)) || st.Requests != 0 || len(st.MaxPerSecond) != 2 {
		t.Errorf("number reads %d (want %d), requests %d (want 0), numbers %v", st.NumberReads, len(tests), st.Requests, st.MaxPerSecond)
	}
}

// Without PhoneNumberIDs any number can be read, but not the WABA; a read
// creates no sender state: MaxPerSecond lists only numbers sent from.
func TestNumberReadLeavesNoState(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	if a := do(s, "GET", numberPath(phoneID), token, ""); a.status != 200 {
		t.Fatal(a)
	}
	if a := do(s, "GET", numberPath(DefaultWABAID), token, ""); a.status != 400 || a.code != 100 {
		t.Errorf("the WABA read as a number: %v", a)
	}
	if st := s.Stats(); len(st.MaxPerSecond) != 0 || st.NumberReads != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestHealthStatus(t *testing.T) {
	custom := []HealthError{{Code: 131048, Description: "Spam rate limit hit.", Solution: "Check the number's quality."}}
	tests := []struct {
		name       string
		info       NumberInfo
		want       string // overall
		carrier    string // entity type not AVAILABLE
		carrierErr int    // its first error code
	}{
		{"healthy", NumberInfo{}, "AVAILABLE", "", 0},
		{"blocked: the WABA, Meta's example", NumberInfo{Health: HealthBlocked}, "BLOCKED", "WABA", 141006},
		{"limited: the business, Meta's example", NumberInfo{Health: HealthLimited}, "LIMITED", "BUSINESS", 141010},
		{"blocked number with its errors", NumberInfo{Health: HealthBlocked, HealthEntity: "PHONE_NUMBER", HealthErrors: custom}, "BLOCKED", "PHONE_NUMBER", 131048},
		{"limited app", NumberInfo{Health: HealthLimited, HealthEntity: "APP"}, "LIMITED", "APP", 141010},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{WABAID: "419561257915477", Numbers: map[string]NumberInfo{phoneID: tt.info}})
			defer s.Close()
			a := do(s, "GET", numberPath(phoneID)+"?fields=health_status", token, "")
			var got numberResp
			if err := json.Unmarshal(a.body, &got); err != nil || got.HealthStatus == nil {
				t.Fatalf("%v: %v", a, err)
			}
			h := got.HealthStatus
			if h.CanSendMessage != tt.want {
				t.Errorf("can_send_message %s, want %s", h.CanSendMessage, tt.want)
			}
			var types []string
			for _, e := range h.Entities {
				types = append(types, e.EntityType)
				wantID := map[string]string{"PHONE_NUMBER": phoneID, "WABA": "419561257915477", "BUSINESS": businessID, "APP": appID}[e.EntityType]
				if e.ID != wantID {
					t.Errorf("%s id %s, want %s", e.EntityType, e.ID, wantID)
				}
				switch {
				case e.EntityType == tt.carrier:
					if e.CanSendMessage != tt.want || len(e.Errors) == 0 || e.Errors[0].Code != tt.carrierErr ||
						e.Errors[0].Description == "" || e.Errors[0].Solution == "" {
						t.Errorf("%s: %+v", e.EntityType, e)
					}
				case e.CanSendMessage != "AVAILABLE" || e.Errors != nil:
					t.Errorf("%s: %+v, want AVAILABLE without errors", e.EntityType, e)
				}
			}
			if !slices.Equal(types, []string{"PHONE_NUMBER", "WABA", "BUSINESS", "APP"}) {
				t.Errorf("entities %v", types)
			}
		})
	}
}

// NumberInfo.SendError: every valid send from the number answers the code;
// the other numbers are not affected, validation comes first, and the
// answers use up no throughput.
func TestSendError(t *testing.T) {
	tests := []struct {
		code, status int
		message      string
	}{
		{131048, 400, "(#131048) Spam rate limit hit"},
		{131037, 400, "(#131037) WhatsApp provided number needs display name approval before message can be sent."},
		{33, 400, "(#33) Parameter value is not valid"},
		{368, 403, "(#368) Temporarily blocked for policies violations"},
		{131031, 403, "(#131031) Account has been locked"},
		{131042, 400, "(#131042) Business eligibility payment issue"},
		{135000, 400, "(#135000) Message failed to send"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.code), func(t *testing.T) {
			s := New(Config{Rate: 1, Numbers: map[string]NumberInfo{phoneID: {SendError: tt.code}}})
			defer s.Close()
			for i := range 3 {
				a := send(s, fmt.Sprint(16505550000+i), "")
				var e errorBody
				json.Unmarshal(a.body, &e)
				if a.status != tt.status || a.code != tt.code || e.Error.Message != tt.message ||
					e.Error.ErrorData == nil || e.Error.ErrorData.Details == "" {
					t.Fatalf("got %v, want HTTP %d %q with details", a, tt.status, tt.message)
				}
			}
			if a := do(s, "POST", path, token, "{"); a.code != 100 {
				t.Errorf("invalid JSON: %v, want the validation error first", a)
			}
			if a := do(s, "POST", "/v23.0/"+otherID+"/messages", token, msg("16505551234", "", "welcome", "en_US", 0)); a.status != 200 {
				t.Errorf("other number: %v", a)
			}
			st := s.Stats()
			if st.Errors[tt.code] != 3 || st.Accepted != 1 || st.Throttled != 0 || st.Requests != 5 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestMarketingOffOnCloudAPI(t *testing.T) {
	s := New(Config{MarketingOffOnCloudAPI: true, Definitions: FixtureDefinitions(), Rate: -1, PairInterval: -1})
	defer s.Close()
	categories := map[string]string{}
	for _, d := range FixtureDefinitions() {
		categories[d.Name] = d.Category
	}
	refused := 0
	for i, v := range ValidSends() {
		a := do(s, "POST", path, token, v.Body(fmt.Sprint(16505550000+i)))
		switch {
		case categories[v.Template] == "MARKETING" && (a.status != 400 || a.code != 131063):
			t.Errorf("%s (marketing): %v, want 131063", v.Name, a)
		case categories[v.Template] != "MARKETING" && a.status != 200:
			t.Errorf("%s (%s): %v", v.Name, categories[v.Template], a)
		}
		if a.code == 131063 {
			refused++
		}
	}
	if refused == 0 || s.Stats().Errors[131063] != int64(refused) {
		t.Errorf("%d refused, stats %v", refused, s.Stats().Errors)
	}

	t.Run("simple registry", func(t *testing.T) {
		s := New(Config{MarketingOffOnCloudAPI: true, Templates: []Template{{Name: "promo"}, {Name: "notice", Category: "utility"}}})
		defer s.Close()
		if a := do(s, "POST", path, token, msg("16505551234", "", "promo", "en", 0)); a.code != 131063 {
			t.Errorf("promo (marketing by default): %v", a)
		}
		if a := do(s, "POST", path, token, msg("16505551235", "", "notice", "en", 0)); a.status != 200 {
			t.Errorf("notice (utility): %v", a)
		}
	})
}

// Held messages: answered held_for_quality_assessment; a share dropped
// later with only a failed 132015 webhook; authentication never held;
// the same seed holds and drops the same messages.
func TestHeld(t *testing.T) {
	const n = 2000
	run := func() (map[string]string, Stats) {
		var hooks, acc bytes.Buffer
		s := New(Config{
			Seed: 8, Rate: -1, PairInterval: -1, HeldRate: 0.3, HeldFailRate: 0.5, FailRate: 0.1, ReadRate: 0.5,
			Templates: []Template{{Name: "promo"}, {Name: "otp", Category: "authentication"}},
			Webhooks:  &hooks, Accepted: &acc,
		})
		answers := map[string]string{} // wamid -> template/message_status
		for i := range n {
			name := "promo"
			if i%4 == 0 {
				name = "otp"
			}
			a := do(s, "POST", path, token, msg(fmt.Sprint(16505550000+i), fmt.Sprint("row", i), name, "en", 0))
			if a.status != 200 {
				t.Fatal(a)
			}
			answers[a.wamid] = name + "/" + messageStatus(t, a)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		byID := webhooksByID(t, hooks.Bytes())
		for id, ans := range answers {
			ss := byID[id]
			got := statusNames(ss)
			dropped := got == "failed/132015"
			switch {
			case strings.HasPrefix(ans, "otp/") && ans != "otp/accepted":
				t.Errorf("authentication message answered %s", ans)
			case dropped && ans != "promo/held_for_quality_assessment":
				t.Errorf("%s: dropped with 132015 but answered %s", id, ans)
			case strings.Contains(got, "132015") && !dropped:
				t.Errorf("%s: statuses %s: a dropped message gets only its failed status", id, got)
			}
			if dropped && (ss[0].Pricing != nil || ss[0].Errors[0].Title != "Template is Paused") {
				t.Errorf("dropped message's webhook: %s", ss[0].line)
			}
			out[fmt.Sprint(ss[0].RecipientID)] = ans + " " + got
		}
		for _, l := range lines(t, acc.Bytes()) {
			var r acceptedRecord
			json.Unmarshal(l, &r)
			if r.Held != strings.HasSuffix(answers[r.WAMID], "held_for_quality_assessment") {
				t.Errorf("accepted record %s, answer %s", l, answers[r.WAMID])
			}
		}
		return out, s.Stats()
	}
	first, st := run()
	promo := float64(n * 3 / 4)
	if f := float64(st.Held) / promo; f < 0.25 || f > 0.35 {
		t.Errorf("held %d of %v marketing messages, want about 30%%", st.Held, promo)
	}
	if f := float64(st.HeldFailed) / float64(st.Held); f < 0.4 || f > 0.6 {
		t.Errorf("%d of %d held messages dropped, want about half", st.HeldFailed, st.Held)
	}
	if st.Failed <= st.HeldFailed || st.Delivered+st.Failed != st.Accepted {
		t.Errorf("outcomes: %+v", st)
	}
	second, _ := run()
	if d := compare(first, second); d != "" {
		t.Errorf("same seed, different fates: %s", d)
	}
}

// MarketingCapRate: that share of marketing messages is sent then failed
// 131049; other categories never are.
func TestMarketingCap(t *testing.T) {
	var hooks bytes.Buffer
	s := New(Config{
		Seed: 2, Rate: -1, PairInterval: -1, MarketingCapRate: 0.3,
		Templates: []Template{{Name: "promo", Category: "MARKETING"}, {Name: "notice", Category: "utility"}},
		Webhooks:  &hooks,
	})
	names := map[string]string{}
	for i := range 1300 {
		name := "promo"
		if i >= 1000 {
			name = "notice"
		}
		a := do(s, "POST", path, token, msg(fmt.Sprint(16505550000+i), "", name, "en", 0))
		if a.status != 200 {
			t.Fatal(a)
		}
		names[a.wamid] = name
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	capped := 0
	for id, ss := range webhooksByID(t, hooks.Bytes()) {
		switch got := statusNames(ss); {
		case got == "sent,failed/131049" && names[id] == "promo":
			capped++
			if ss[0].Pricing == nil || ss[1].Pricing != nil {
				t.Errorf("capped message: pricing on %s", statusNames(ss))
			}
		case got != "sent,delivered":
			t.Errorf("%s message: statuses %s", names[id], got)
		}
	}
	st := s.Stats()
	if f := float64(capped) / 1000; f < 0.25 || f > 0.35 {
		t.Errorf("%d of 1000 marketing messages capped, want about 30%%", capped)
	}
	if st.MarketingCapped != int64(capped) || st.Failed != int64(capped) {
		t.Errorf("stats: capped %d, failed %d, want %d", st.MarketingCapped, st.Failed, capped)
	}
}

// USNumber: a marketing message to a US number is sent then failed 131049;
// one to another number, or a utility message to a US number, is not.
func TestUSMarketing(t *testing.T) {
	var hooks bytes.Buffer
	s := New(Config{
		Rate: -1, PairInterval: -1,
		Templates: []Template{{Name: "promo", Category: "MARKETING"}, {Name: "notice", Category: "utility"}},
		Webhooks:  &hooks,
		USNumber:  func(p string) bool { return strings.HasPrefix(p, "+1650") },
	})
	sent := map[string]string{}
	for _, tc := range []struct{ to, template, want string }{
		{"16505550001", "promo", "sent,failed/131049"},
		{"447400123456", "promo", "sent,delivered"},
		{"16505550002", "notice", "sent,delivered"},
	} {
		a := do(s, "POST", path, token, msg(tc.to, "", tc.template, "en", 0))
		if a.status != 200 {
			t.Fatal(a)
		}
		sent[a.wamid] = tc.want
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for id, ss := range webhooksByID(t, hooks.Bytes()) {
		if got := statusNames(ss); got != sent[id] {
			t.Errorf("statuses %s, want %s", got, sent[id])
		}
	}
}

func TestMarketingMessages(t *testing.T) {
	spring := validSend(t, "spring_sale")
	tests := []struct {
		name      string
		cfg       Config
		template  string
		body      func(to string) string // nil: the template's valid send
		policy    string
		status    int
		code      int
		category  string // of the webhooks, when accepted
		lite      bool
		wantStats func(Stats) bool
	}{
		{name: "not onboarded, fallback", template: "spring_sale", policy: PolicyFallback, status: 200, category: "marketing"},
		{name: "not onboarded, no policy: fallback", template: "spring_sale", status: 200, category: "marketing"},
		{name: "not onboarded, strict", template: "spring_sale", policy: PolicyStrict, status: 500, code: 134102},
		{name: "not onboarded, fallback to a Cloud API without marketing", cfg: Config{MarketingOffOnCloudAPI: true},
			template: "spring_sale", status: 400, code: 131063},
		{name: "onboarded, strict", cfg: Config{MMOnboarded: true}, template: "spring_sale", policy: PolicyStrict,
			status: 200, category: "marketing_lite", lite: true},
		{name: "onboarded, fallback", cfg: Config{MMOnboarded: true}, template: "fall_coupon", policy: PolicyFallback,
			status: 200, category: "marketing_lite", lite: true},
		{name: "onboarded, marketing off on Cloud API", cfg: Config{MMOnboarded: true, MarketingOffOnCloudAPI: true},
			template: "spring_sale", status: 200, category: "marketing_lite", lite: true},
		{name: "utility template", cfg: Config{MMOnboarded: true}, template: "order_update", status: 400, code: 131055},
		{name: "authentication template", template: "login_code", status: 400, code: 131055},
		{name: "template syncing", cfg: Config{MMOnboarded: true, MMSyncing: []string{"spring_sale"}},
			template: "spring_sale", status: 400, code: 134101},
		{name: "template syncing, not onboarded: falls back", cfg: Config{MMSyncing: []string{"spring_sale"}},
			template: "spring_sale", status: 200, category: "marketing"},
		{name: "another template syncing", cfg: Config{MMOnboarded: true, MMSyncing: []string{"fall_coupon"}},
			template: "spring_sale", status: 200, category: "marketing_lite", lite: true},
		{name: "bad product_policy", template: "spring_sale", policy: "LOOSE", status: 400, code: 100},
		{name: "product_policy not a string", template: "spring_sale", status: 400, code: 100, body: func(to string) string {
			return withFields(t, spring.Body(to), map[string]any{"product_policy": 7})
		}},
		{name: "message_activity_sharing", template: "spring_sale", status: 200, category: "marketing", body: func(to string) string {
			return withFields(t, spring.Body(to), map[string]any{"message_activity_sharing": false, "product_policy": nil})
		}},
		{name: "message_activity_sharing not a boolean", template: "spring_sale", status: 400, code: 100, body: func(to string) string {
			return withFields(t, spring.Body(to), map[string]any{"message_activity_sharing": "yes"})
		}},
		{name: "not a template", template: "spring_sale", status: 400, code: 100, body: func(to string) string {
			return fmt.Sprintf(`{"messaging_product":"whatsapp","recipient_type":"individual","to":%q,"type":"text","text":{"body":"hi"}}`, to)
		}},
		{name: "parameters still checked", template: "spring_sale", status: 400, code: 132000, body: func(to string) string {
			return sendBody(to, "spring_sale", "en_US", `[]`)
		}},
		{name: "paused template", template: "autumn_sale", status: 400, code: 132015, body: func(to string) string {
			return sendBody(to, "autumn_sale", "en_US", `[{"type":"body","parameters":[{"type":"text","text":"Maria"}]}]`)
		}},
		{name: "number's account error", cfg: Config{MMOnboarded: true, Numbers: map[string]NumberInfo{phoneID: {SendError: 131048}}},
			template: "spring_sale", status: 400, code: 131048},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hooks bytes.Buffer
			cfg := tt.cfg
			cfg.Definitions, cfg.Webhooks, cfg.Rate = FixtureDefinitions(), &hooks, -1
			s := New(cfg)
			body := spring.Body("16505551234")
			switch {
			case tt.body != nil:
				body = tt.body("16505551234")
			case tt.template != "spring_sale":
				body = validSend(t, tt.template).Body("16505551234")
			}
			if tt.policy != "" {
				body = withFields(t, body, map[string]any{"product_policy": tt.policy})
			}
			a := do(s, "POST", mmPath(phoneID), token, body)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if a.status != tt.status || a.code != tt.code {
				t.Fatalf("got %v, want HTTP %d code %d", a, tt.status, tt.code)
			}
			st := s.Stats()
			if st.MarketingRequests != 1 || st.Requests != 1 {
				t.Errorf("requests: %d marketing, %d in all; want 1 and 1", st.MarketingRequests, st.Requests)
			}
			if a.status != 200 {
				if st.Accepted != 0 || hooks.Len() != 0 {
					t.Errorf("refused, but accepted %d, webhooks %q", st.Accepted, hooks.String())
				}
				return
			}
			var r sendResponse
			json.Unmarshal(a.body, &r)
			if !r.Success || r.MessagingProduct != "whatsapp" || len(r.Contacts) != 1 || r.Messages[0].MessageStatus != "accepted" {
				t.Errorf("answer %s", a.body)
			}
			if lite, fallback := st.MarketingLite, st.MarketingFallback; (lite == 1) != tt.lite || lite+fallback != 1 || st.Accepted != 1 {
				t.Errorf("stats: lite %d, fallback %d, accepted %d", lite, fallback, st.Accepted)
			}
			priced := 0
			for _, l := range lines(t, hooks.Bytes()) {
				w := parseWebhook(t, l)
				if w.Pricing != nil {
					priced++
					if w.Pricing.Category != tt.category {
						t.Errorf("%s priced %s, want %s", w.Status, w.Pricing.Category, tt.category)
					}
				}
				if w.Conversation != nil && w.Conversation.Origin.Type != tt.category {
					t.Errorf("conversation origin %s, want %s", w.Conversation.Origin.Type, tt.category)
				}
			}
			if priced != 2 {
				t.Errorf("%d priced webhooks, want 2", priced)
			}
		})
	}
}

// /messages ignores the Marketing Messages API's fields, whatever they hold.
func TestMessagesIgnoresMarketingFields(t *testing.T) {
	s := New(Config{Definitions: FixtureDefinitions()})
	defer s.Close()
	body := withFields(t, validSend(t, "spring_sale").Body("16505551234"), map[string]any{"product_policy": 7, "message_activity_sharing": "yes"})
	if a := do(s, "POST", path, token, body); a.status != 200 {
		t.Errorf("got %v", a)
	}
	var r sendResponse
	if a := do(s, "POST", path, token, validSend(t, "order_update").Body("16505551235")); json.Unmarshal(a.body, &r) != nil || r.Success {
		t.Errorf("/messages answers success: %s", a.body)
	}
}

// A template syncing with the ad account answers 134101 for ten minutes
// from the sandbox's start, then goes out.
func TestMarketingMessagesSyncEnds(t *testing.T) {
	body := validSend(t, "spring_sale").Body
	for _, tt := range []struct {
		name    string
		syncFor time.Duration
		steps   []time.Duration // clock advance before each send
		codes   []int
	}{
		{"ten minutes by default", 0, []time.Duration{0, 9*time.Minute + 59*time.Second, 2 * time.Second}, []int{134101, 134101, 0}},
		{"configured", time.Minute, []time.Duration{30 * time.Second, 30 * time.Second}, []int{134101, 0}},
		{"for ever", -1, []time.Duration{0, 24 * time.Hour}, []int{134101, 134101}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			s := New(Config{Now: clk.Now, MMOnboarded: true, MMSyncing: []string{"spring_sale"}, MMSyncFor: tt.syncFor,
				Definitions: FixtureDefinitions(), PairInterval: -1})
			defer s.Close()
			for i, d := range tt.steps {
				clk.Add(d)
				if a := do(s, "POST", mmPath(phoneID), token, body(fmt.Sprint(16505550000+i))); a.code != tt.codes[i] {
					t.Errorf("send %d: %v, want code %d", i, a, tt.codes[i])
				}
			}
		})
	}
}

// Every accepted template gets pricing on sent and on the first of
// delivered/read (here delivered), never on read or failed: the category
// is the template's, marketing_lite through the Marketing Messages API.
func TestPricing(t *testing.T) {
	var hooks bytes.Buffer
	s := New(Config{
		Seed: 4, Rate: -1, PairInterval: -1, ReadRate: 1, MMOnboarded: true,
		Definitions: FixtureDefinitions(), Webhooks: &hooks,
	})
	want := map[string]string{}
	for i, c := range []struct{ path, template, category string }{
		{path, "login_code", "authentication"},
		{path, "order_update", "utility"},
		{path, "spring_sale", "marketing"},
		{"/v24.0/" + phoneID + "/messages", "invoice_ready", "utility"},
		{mmPath(phoneID), "spring_sale", "marketing_lite"},
		{"/v24.0/" + phoneID + "/marketing_messages", "fall_coupon", "marketing_lite"},
	} {
		a := do(s, "POST", c.path, token, validSend(t, c.template).Body(fmt.Sprint(16505550000+i)))
		if a.status != 200 {
			t.Fatalf("%s: %v", c.template, a)
		}
		want[a.wamid] = c.category
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	byID := webhooksByID(t, hooks.Bytes())
	for id, category := range want {
		ss := byID[id]
		if got := statusNames(ss); got != "sent,delivered,read" {
			t.Errorf("%s: statuses %s", category, got)
			continue
		}
		for i, w := range ss {
			p := w.Pricing
			switch {
			case i < 2 && (p == nil || *p != whPricing{Billable: true, PricingModel: "PMP", Type: "regular", Category: category}):
				t.Errorf("%s %s: pricing %+v, want %s", category, w.Status, p, category)
			case i == 2 && p != nil:
				t.Errorf("%s read repeats pricing", category)
			}
		}
	}
}

// doRec calls the handler and returns the recorder, headers included.
func doRec(h http.Handler, method, path, tok, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestUsageHeader(t *testing.T) {
	clk := newClock()
	s := New(Config{Now: clk.Now, UsageAfter: 3, RegainAccessMinutes: 5, Rate: -1, PairInterval: -1, WABAID: "419561257915477"})
	defer s.Close()
	n := 0
	ok := func() string { n++; return msg(fmt.Sprint(16505550000+n), "", "welcome", "en_US", 0) }
	steps := []struct {
		name              string
		advance           time.Duration
		path, tok, body   string
		status, callCount int
		regain            int
	}{
		{"first send", 0, path, token, ok(), 200, 33, 0},
		{"a refused request counts nothing but has the header", 0, path, token, "{", 400, 33, 0},
		{"no token", 0, path, "", ok(), 403, 33, 0},
		{"second send", 0, path, token, ok(), 200, 66, 0},
		{"third send spends the budget", 0, path, token, ok(), 200, 100, 5},
		{"sends are still accepted", time.Minute, path, token, ok(), 200, 100, 4},
		{"marketing messages too", 90 * time.Second, mmPath(phoneID), token, ok(), 200, 100, 3},
		{"the budget renews after the wait", 150 * time.Second, path, token, ok(), 200, 33, 0},
	}
	for _, st := range steps {
		clk.Add(st.advance)
		w := doRec(s, "POST", st.path, st.tok, st.body)
		if w.Code != st.status {
			t.Fatalf("%s: HTTP %d %s", st.name, w.Code, w.Body)
		}
		var u map[string][]usageEntry
		if err := json.Unmarshal([]byte(w.Header().Get("X-Business-Use-Case-Usage")), &u); err != nil {
			t.Fatalf("%s: header %q: %v", st.name, w.Header().Get("X-Business-Use-Case-Usage"), err)
		}
		e := u["419561257915477"]
		if len(u) != 1 || len(e) != 1 || e[0].Type != "whatsapp" || e[0].CallCount != st.callCount || e[0].RegainAccess != st.regain {
			t.Errorf("%s: header %s, want call_count %d, %d minutes", st.name, w.Header().Get("X-Business-Use-Case-Usage"), st.callCount, st.regain)
		}
	}
	for _, p := range []string{numberPath(phoneID), "/_sandbox/stats"} {
		if h := doRec(s, "GET", p, token, "").Header().Get("X-Business-Use-Case-Usage"); h != "" {
			t.Errorf("GET %s: usage header %s", p, h)
		}
	}

	t.Run("no regain: spent for good", func(t *testing.T) {
		clk := newClock()
		s := New(Config{Now: clk.Now, UsageAfter: 1, PairInterval: -1})
		defer s.Close()
		for i := range 3 {
			clk.Add(time.Hour)
			w := doRec(s, "POST", path, token, msg(fmt.Sprint(16505550000+i), "", "welcome", "en_US", 0))
			if h := w.Header().Get("X-Business-Use-Case-Usage"); w.Code != 200 ||
				h != `{"100000000000001":[{"type":"whatsapp","call_count":100,"total_cputime":33,"total_time":50,"estimated_time_to_regain_access":0}]}` {
				t.Errorf("HTTP %d, header %s", w.Code, h)
			}
		}
	})
	t.Run("zero value: no header", func(t *testing.T) {
		s := New(Config{})
		defer s.Close()
		if h := doRec(s, "POST", path, token, msg("16505551234", "", "welcome", "en_US", 0)).Header(); h.Get("X-Business-Use-Case-Usage") != "" {
			t.Errorf("header %v", h)
		}
	})
}

// TestNumberLevelFollowsItsRate: a number reports the throughput level of
// the rate the sandbox enforces for it, unless configured: a preflight of
// a sandbox run at 1,000/s reads HIGH, one at Meta's default 80/s reads
// STANDARD.
func TestNumberLevelFollowsItsRate(t *testing.T) {
	for _, tc := range []struct {
		rate  float64
		want  string
		level string // configured
	}{{0, "STANDARD", ""}, {80, "STANDARD", ""}, {81, "HIGH", ""}, {1000, "HIGH", ""}, {-1, "HIGH", ""}, {1000, "STANDARD", "STANDARD"}} {
		s := New(Config{Token: token, Rates: map[string]float64{phoneID: tc.rate}, Numbers: map[string]NumberInfo{phoneID: {Throughput: tc.level}}})
		a := do(s, "GET", numberPath(phoneID)+"?fields=throughput", token, "")
		s.Close()
		var got numberResp
		if err := json.Unmarshal(a.body, &got); err != nil || got.Throughput == nil {
			t.Fatalf("rate %g: %v %s", tc.rate, err, a.body)
		}
		if got.Throughput.Level != tc.want {
			t.Errorf("rate %g, configured %q: level %q, want %q", tc.rate, tc.level, got.Throughput.Level, tc.want)
		}
	}
}
