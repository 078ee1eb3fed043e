package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// definitionsMax bounds what is read of a definitions file: as much as the
// client reads of one message_templates answer, and the flag may name
// anything (/dev/zero).
const definitionsMax = 16 << 20

// LoadDefinitions reads template definitions for Config.Definitions from a
// file holding a message_templates answer ({"data":[…]}) or a bare array of
// definitions, as template.ParseDefinitions reads them: at most
// definitionsMax bytes of it.
func LoadDefinitions(path string) ([]template.Definition, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, definitionsMax+1))
	if err != nil {
		return nil, err
	}
	if len(b) > definitionsMax {
		return nil, fmt.Errorf("%s is over %d MB: it is not a list of template definitions", path, definitionsMax>>20)
	}
	defs, err := template.ParseDefinitions(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return defs, nil
}

// DefaultTemplates returns a realistic WhatsApp Business Account's templates
// for demos and tests, all in en_US, shaped as GET message_templates returns
// them: one of each header format, named and positional parameters, URL,
// quick-reply, copy-code and Flow buttons, an authentication template, and
// one paused, one rejected and one disabled template. Each call returns a
// new slice.
func DefaultTemplates() []template.Definition {
	// URL buttons' and media headers' examples are what Meta returns after
	// creation: the full example URL, and a scontent link to the sample.
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	green := func() *template.Quality { return &template.Quality{Score: "GREEN"} }
	simple := func(id, name, status, score, body, example string) template.Definition {
		return template.Definition{
			ID: id, Name: name, Language: "en_US", Status: status, Category: "MARKETING",
			ParameterFormat: "POSITIONAL", QualityScore: &template.Quality{Score: score},
			Components: []template.Component{
				{Type: "BODY", Text: body, Example: raw(`{"body_text":[["` + example + `"]]}`)},
			},
		}
	}
	return []template.Definition{
		{
			ID: "1146254630208347", Name: "spring_sale", Language: "en_US", Status: "APPROVED",
			Category: "MARKETING", ParameterFormat: "POSITIONAL", QualityScore: green(),
			Components: []template.Component{
				{Type: "HEADER", Format: "IMAGE",
					Example: raw(`{"header_handle":["https://scontent.whatsapp.net/v/t61.29466-34/471852369_1146254630208347_n.jpg?ccb=1-7&_nc_sid=8b1bef"]}`)},
				{Type: "BODY", Text: "Hi {{1}}, our spring sale is on: {{2}} off everything until Sunday.",
					Example: raw(`{"body_text":[["Maria","20%"]]}`)},
				{Type: "FOOTER", Text: "Not interested? Tap Stop promotions"},
				{Type: "BUTTONS", Buttons: []template.Button{
					{Type: "URL", Text: "Shop now", URL: "https://shop.example.com/spring?c={{1}}",
						Example: raw(`["https://shop.example.com/spring?c=SPRING20"]`)},
					{Type: "QUICK_REPLY", Text: "Stop promotions"},
				}},
			},
		},
		{
			ID: "1029384756102938", Name: "order_update", Language: "en_US", Status: "APPROVED",
			Category: "UTILITY", ParameterFormat: "NAMED", QualityScore: green(),
			Components: []template.Component{
				{Type: "HEADER", Format: "TEXT", Text: "Your order"},
				{Type: "BODY", Text: "Hi {{first_name}}, order {{order_id}} ships on {{ship_date}}.",
					Example: raw(`{"body_text_named_params":[{"param_name":"first_name","example":"Maria"},{"param_name":"order_id","example":"SB-1001"},{"param_name":"ship_date","example":"May 14"}]}`)},
				{Type: "BUTTONS", Buttons: []template.Button{
					{Type: "URL", Text: "Track", URL: "https://shop.example.com/track/{{1}}",
						Example: raw(`["https://shop.example.com/track/SB-1001"]`)},
				}},
			},
		},
		{
			// Created with an OTP copy-code button, which Meta returns as a
			// URL button; the body and footer texts are Meta's own.
			ID: "1473688840035974", Name: "login_code", Language: "en_US", Status: "APPROVED",
			Category: "AUTHENTICATION", ParameterFormat: "POSITIONAL", QualityScore: green(),
			Components: []template.Component{
				{Type: "BODY", Text: "*{{1}}* is your verification code. For your security, do not share this code.",
					AddSecurityRecommendation: true, Example: raw(`{"body_text":[["482913"]]}`)},
				{Type: "FOOTER", Text: "This code expires in 10 minutes.", CodeExpirationMinutes: 10},
				{Type: "BUTTONS", Buttons: []template.Button{
					{Type: "URL", Text: "Copy code",
						URL:     "https://www.whatsapp.com/otp/code/?otp_type=COPY_CODE&code_expiration_minutes=10&code=otp{{1}}",
						Example: raw(`["https://www.whatsapp.com/otp/code/?otp_type=COPY_CODE&code_expiration_minutes=10&code=otp482913"]`)},
				}},
			},
		},
		{
			ID: "920070352646140", Name: "fall_coupon", Language: "en_US", Status: "APPROVED",
			Category: "MARKETING", ParameterFormat: "POSITIONAL", QualityScore: green(),
			Components: []template.Component{
				{Type: "HEADER", Format: "TEXT", Text: "Our {{1}} is on!", Example: raw(`{"header_text":["Fall Sale"]}`)},
				{Type: "BODY", Text: "Use code {{1}} to get {{2}} off.", Example: raw(`{"body_text":[["25OFF","25%"]]}`)},
				{Type: "BUTTONS", Buttons: []template.Button{
					{Type: "QUICK_REPLY", Text: "Unsubscribe"},
					{Type: "COPY_CODE", Text: "Copy offer code", Example: raw(`"25OFF"`)},
				}},
			},
		},
		{
			ID: "1387654320918273", Name: "summer_teaser", Language: "en_US", Status: "APPROVED",
			Category: "MARKETING", ParameterFormat: "POSITIONAL", QualityScore: &template.Quality{Score: "YELLOW"},
			Components: []template.Component{
				{Type: "HEADER", Format: "VIDEO",
					Example: raw(`{"header_handle":["https://scontent.whatsapp.net/v/t61.29466-34/468213579_1387654320918273_n.mp4?ccb=1-7&_nc_sid=8b1bef"]}`)},
				{Type: "BODY", Text: "Hi {{1}}, watch what is coming this summer.", Example: raw(`{"body_text":[["Maria"]]}`)},
			},
		},
		{
			ID: "860198230332101", Name: "invoice_ready", Language: "en_US", Status: "APPROVED",
			Category: "UTILITY", ParameterFormat: "POSITIONAL", QualityScore: green(),
			Components: []template.Component{
				{Type: "HEADER", Format: "DOCUMENT",
					Example: raw(`{"header_handle":["https://scontent.whatsapp.net/v/t61.29466-34/472039184_860198230332101_n.pdf?ccb=1-7&_nc_sid=8b1bef"]}`)},
				{Type: "BODY", Text: "Hi {{1}}, your invoice {{2}} is attached.", Example: raw(`{"body_text":[["Maria","INV-2026-0042"]]}`)},
			},
		},
		{
			ID: "566701348812345", Name: "store_visit", Language: "en_US", Status: "APPROVED",
			Category: "UTILITY", ParameterFormat: "POSITIONAL", QualityScore: green(),
			Components: []template.Component{
				{Type: "HEADER", Format: "LOCATION"},
				{Type: "BODY", Text: "Your order {{1}} is ready at the store above.", Example: raw(`{"body_text":[["SB-1001"]]}`)},
			},
		},
		{
			// A Flow button: a send gives it a flow token and its first
			// screen's data, or nothing.
			ID: "1305784629910264", Name: "event_signup", Language: "en_US", Status: "APPROVED",
			Category: "MARKETING", ParameterFormat: "POSITIONAL", QualityScore: green(),
			Components: []template.Component{
				{Type: "BODY", Text: "Hi {{1}}, our open day is on May 14: save your seat in a minute.", Example: raw(`{"body_text":[["Maria"]]}`)},
				{Type: "BUTTONS", Buttons: []template.Button{
					{Type: "FLOW", Text: "Sign up", FlowID: "1399887766554433", FlowAction: "NAVIGATE", NavigateScreen: "WELCOME_SCREEN"},
					{Type: "QUICK_REPLY", Text: "Stop promotions"},
				}},
			},
		},
		simple("1192339204654487", "autumn_sale", "PAUSED", "RED", "Hi {{1}}, our autumn sale starts today.", "Maria"),
		simple("1095432187650021", "old_promo", "REJECTED", "UNKNOWN", "Hi {{1}}, everything must go!", "Maria"),
		simple("1018273645501928", "retired_offer", "DISABLED", "RED", "Hi {{1}}, this offer ends tonight.", "Maria"),
	}
}
