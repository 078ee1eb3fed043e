package sandbox

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// FixtureDefinitions are DefaultTemplates plus a few shapes the defaults lack:
// a body-only template (the 32768-character limit), a named text header,
// and buttons that take nothing (a phone number, a static URL).
func FixtureDefinitions() []template.Definition {
	return append(DefaultTemplates(),
		template.Definition{
			ID: "1203948576601928", Name: "account_notice", Language: "en_US", Status: "APPROVED",
			Category: "UTILITY", ParameterFormat: "POSITIONAL",
			Components: []template.Component{
				{Type: "BODY", Text: "Hello {{1}}, {{2}}", Example: json.RawMessage(`{"body_text":[["Maria","your statement is ready."]]}`)},
			},
		},
		template.Definition{
			ID: "1203948576601929", Name: "vip_welcome", Language: "en_US", Status: "APPROVED",
			Category: "MARKETING", ParameterFormat: "NAMED",
			Components: []template.Component{
				{Type: "HEADER", Format: "TEXT", Text: "Welcome, {{first_name}}",
					Example: json.RawMessage(`{"header_text_named_params":[{"param_name":"first_name","example":"Maria"}]}`)},
				{Type: "BODY", Text: "Your personal code {{code}} is waiting in the store.",
					Example: json.RawMessage(`{"body_text_named_params":[{"param_name":"code","example":"VIP7"}]}`)},
				{Type: "BUTTONS", Buttons: []template.Button{
					{Type: "PHONE_NUMBER", Text: "Call us", PhoneNumber: "+16467043595"},
					{Type: "URL", Text: "Visit", URL: "https://shop.example.com/vip"},
				}},
			},
		},
	)
}

// ValidSend is a send request that a correct client makes for one of
// FixtureDefinitions and that the sandbox must accept. Every correct request
// of this package's tests is in ValidSends, so that other tests can reuse
// the same set (FuzzSendDefinition seeds from it).
type ValidSend struct {
	Name       string // what the case shows
	Template   string
	Language   string // "" is en_US
	Components string // the JSON array of template.components
}

// Body is the whole send-message request to to.
func (v ValidSend) Body(to string) string {
	return sendBody(to, v.Template, cmp.Or(v.Language, "en_US"), v.Components)
}

func sendBody(to, name, lang, components string) string {
	return fmt.Sprintf(`{"messaging_product":"whatsapp","recipient_type":"individual","to":%q,"type":"template",`+
		`"template":{"name":%q,"language":{"policy":"deterministic","code":%q},"components":%s}}`, to, name, lang, components)
}

// js is s as a JSON string.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ValidSends lists the correct requests, at least one per approved
// template of FixtureDefinitions.
func ValidSends() []ValidSend {
	long := func(n int) string { return js(strings.Repeat("x", n)) }
	return []ValidSend{
		{"image by link, url suffix, quick-reply payload", "spring_sale", "", `[
			{"type":"header","parameters":[{"type":"image","image":{"link":"https://cdn.example.com/spring.jpg"}}]},
			{"type":"body","parameters":[{"type":"text","text":"Maria"},{"type":"text","text":"20%"}]},
			{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"SPRING20"}]},
			{"type":"button","sub_type":"quick_reply","index":"1","parameters":[{"type":"payload","payload":"STOP_PROMOS"}]}]`},
		{"image by uploaded id, quick reply left out, index as a number", "spring_sale", "", `[
			{"type":"header","parameters":[{"type":"image","image":{"id":"1339522734477770"}}]},
			{"type":"body","parameters":[{"type":"text","text":"Maria    Lopez"},{"type":"text","text":"20%"}]},
			{"type":"button","sub_type":"url","index":0,"parameters":[{"type":"text","text":"SPRING20"}]}]`},
		{"buttons before the body, an http link, upper-case types", "spring_sale", "", `[
			{"type":"BUTTON","sub_type":"QUICK_REPLY","index":"1","parameters":[{"type":"payload","payload":"STOP"}]},
			{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"a/b?x=1"}]},
			{"type":"HEADER","parameters":[{"type":"IMAGE","image":{"link":"http://cdn.example.com/spring.jpg"}}]},
			{"type":"BODY","parameters":[{"type":"TEXT","text":"Maria"},{"type":"text","text":"20%"}]}]`},
		{"named parameters in another order, static header", "order_update", "", `[
			{"type":"body","parameters":[
				{"type":"text","parameter_name":"order_id","text":"SB-1001"},
				{"type":"text","parameter_name":"first_name","text":"Maria"},
				{"type":"text","parameter_name":"ship_date","text":"May 14"}]},
			{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"SB-1001"}]}]`},
		{"named date_time parameter", "order_update", "", `[
			{"type":"body","parameters":[
				{"type":"text","parameter_name":"first_name","text":"Maria"},
				{"type":"text","parameter_name":"order_id","text":"SB-1001"},
				{"type":"date_time","parameter_name":"ship_date","date_time":{"fallback_value":"May 14, 2026"}}]},
			{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"SB-1001"}]}]`},
		{"authentication code in the body and the url button", "login_code", "", `[
			{"type":"body","parameters":[{"type":"text","text":"482913"}]},
			{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"482913"}]}]`},
		{"authentication code of 15 characters", "login_code", "", `[
			{"type":"body","parameters":[{"type":"text","text":"123456789012345"}]},
			{"type":"button","sub_type":"url","index":0,"parameters":[{"type":"text","text":"123456789012345"}]}]`},
		{"text header, coupon as Meta's docs write it", "fall_coupon", "", `[
			{"type":"header","parameters":[{"type":"text","text":"Fall Sale"}]},
			{"type":"body","parameters":[{"type":"text","text":"25OFF"},{"type":"text","text":"25%"}]},
			{"type":"button","sub_type":"quick_reply","index":0,"parameters":[{"type":"payload","payload":"UNSUB"}]},
			{"type":"button","sub_type":"COPY_CODE","index":1,"parameters":[{"type":"coupon_code","coupon_code":"25OFF"}]}]`},
		{"header text of 60 characters, coupon of 15", "fall_coupon", "", `[
			{"type":"header","parameters":[{"type":"text","text":` + long(60) + `}]},
			{"type":"body","parameters":[{"type":"text","text":"FALL2026EXTRA25"},{"type":"text","text":"25%"}]},
			{"type":"button","sub_type":"copy_code","index":"1","parameters":[{"type":"coupon_code","coupon_code":"FALL2026EXTRA25"}]}]`},
		{"video by link", "summer_teaser", "", `[
			{"type":"header","parameters":[{"type":"video","video":{"link":"https://cdn.example.com/teaser.mp4"}}]},
			{"type":"body","parameters":[{"type":"text","text":"Maria"}]}]`},
		{"body text of 1024 characters beside a header", "summer_teaser", "", `[
			{"type":"header","parameters":[{"type":"video","video":{"id":"1339522734477771"}}]},
			{"type":"body","parameters":[{"type":"text","text":` + long(1024) + `}]}]`},
		{"document by id with a file name", "invoice_ready", "", `[
			{"type":"header","parameters":[{"type":"document","document":{"id":"1339522734477772","filename":"INV-2026-0042.pdf"}}]},
			{"type":"body","parameters":[{"type":"text","text":"Maria"},{"type":"text","text":"INV-2026-0042"}]}]`},
		{"document by link, currency parameter", "invoice_ready", "", `[
			{"type":"header","parameters":[{"type":"document","document":{"link":"https://files.example.com/INV-2026-0042.pdf"}}]},
			{"type":"body","parameters":[{"type":"text","text":"Maria"},
				{"type":"currency","currency":{"fallback_value":"$12.50","code":"USD","amount_1000":12500}}]}]`},
		{"location with name and address", "store_visit", "", `[
			{"type":"header","parameters":[{"type":"location","location":{"latitude":"37.483307","longitude":"-122.148981","name":"Shop Example","address":"1 Hacker Way, Menlo Park, CA 94025"}}]},
			{"type":"body","parameters":[{"type":"text","text":"SB-1001"}]}]`},
		{"location at the limits, coordinates as numbers", "store_visit", "", `[
			{"type":"header","parameters":[{"type":"location","location":{"latitude":-90,"longitude":180}}]},
			{"type":"body","parameters":[{"type":"text","text":"SB-1001"}]}]`},
		{"flow button left out", "event_signup", "", `[
			{"type":"body","parameters":[{"type":"text","text":"Maria"}]}]`},
		{"flow token and first-screen data, as Meta's example writes them", "event_signup", "", `[
			{"type":"body","parameters":[{"type":"text","text":"Maria"}]},
			{"type":"button","sub_type":"flow","index":"0","parameters":[{"type":"action","action":{"flow_token":"SIGNUP-SB-1001","flow_action_data":{"first_name":"Maria","seats":[1,2]}}}]}]`},
		{"flow token only, upper-case sub_type, index as a number, a quick reply beside", "event_signup", "", `[
			{"type":"body","parameters":[{"type":"text","text":"Maria"}]},
			{"type":"button","sub_type":"FLOW","index":0,"parameters":[{"type":"action","action":{"flow_token":"SIGNUP-SB-1001"}}]},
			{"type":"button","sub_type":"quick_reply","index":"1","parameters":[{"type":"payload","payload":"STOP"}]}]`},
		{"flow data only", "event_signup", "", `[
			{"type":"body","parameters":[{"type":"text","text":"Maria"}]},
			{"type":"button","sub_type":"flow","index":"0","parameters":[{"type":"action","action":{"flow_action_data":{"source":"spring"}}}]}]`},
		{"flow button named without parameters", "event_signup", "", `[
			{"type":"body","parameters":[{"type":"text","text":"Maria"}]},
			{"type":"button","sub_type":"flow","index":"0","parameters":[]}]`},
		{"body-only text of 32768 characters", "account_notice", "", `[
			{"type":"body","parameters":[{"type":"text","text":"Maria"},{"type":"text","text":` + long(32768) + `}]}]`},
		{"named text header, buttons that take nothing left out", "vip_welcome", "", `[
			{"type":"header","parameters":[{"type":"text","parameter_name":"first_name","text":"Maria"}]},
			{"type":"body","parameters":[{"type":"text","parameter_name":"code","text":"VIP7"}]}]`},
		{"static url button named without parameters", "vip_welcome", "", `[
			{"type":"header","parameters":[{"type":"text","parameter_name":"first_name","text":"Maria"}]},
			{"type":"body","parameters":[{"type":"text","parameter_name":"code","text":"VIP7"}]},
			{"type":"button","sub_type":"url","index":"1","parameters":[]}]`},
	}
}
