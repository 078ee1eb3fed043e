// Package template knows WhatsApp message templates from both ends: the
// definition Meta approved (as GET /{WABA-ID}/message_templates returns it)
// and the mapping from a campaign's CSV columns to the template's
// parameters. From the two it finds the gaps before anything is sent, checks
// each row's values against Meta's rules at import, and builds the
// components of each send request.
//
// It imports nothing of ours: the WhatsApp client, the sandbox and the CLI
// all build on it.
package template

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Definition is one template in one language, as the Graph API's
// message_templates edge returns it. Unknown fields are ignored.
type Definition struct {
	ID              string      `json:"id,omitempty"`
	Name            string      `json:"name"`
	Language        string      `json:"language"`
	Status          string      `json:"status"`                     // APPROVED, PAUSED, DISABLED, REJECTED, PENDING…
	Category        string      `json:"category"`                   // MARKETING, UTILITY, AUTHENTICATION
	ParameterFormat string      `json:"parameter_format,omitempty"` // NAMED or POSITIONAL ("" is positional)
	QualityScore    *Quality    `json:"quality_score,omitempty"`
	Components      []Component `json:"components"`
}

// Quality is a template's quality rating.
type Quality struct {
	Score string `json:"score"` // GREEN, YELLOW, RED, UNKNOWN
}

// Component is a part of a template definition.
type Component struct {
	Type    string          `json:"type"`             // HEADER, BODY, FOOTER, BUTTONS
	Format  string          `json:"format,omitempty"` // headers: TEXT, IMAGE, VIDEO, DOCUMENT, LOCATION
	Text    string          `json:"text,omitempty"`
	Buttons []Button        `json:"buttons,omitempty"`
	Example json.RawMessage `json:"example,omitempty"`
	// Authentication templates.
	AddSecurityRecommendation bool `json:"add_security_recommendation,omitempty"`
	CodeExpirationMinutes     int  `json:"code_expiration_minutes,omitempty"`
}

// Button is one button of a BUTTONS component; its position is its index.
type Button struct {
	Type        string          `json:"type"` // QUICK_REPLY, URL, PHONE_NUMBER, COPY_CODE, OTP, FLOW, CATALOG, MPM…
	Text        string          `json:"text,omitempty"`
	URL         string          `json:"url,omitempty"`
	PhoneNumber string          `json:"phone_number,omitempty"`
	OTPType     string          `json:"otp_type,omitempty"` // COPY_CODE, ONE_TAP, ZERO_TAP
	Example     json.RawMessage `json:"example,omitempty"`
	// Flow buttons: the Flow the button opens, and how.
	FlowID         string `json:"flow_id,omitempty"`
	FlowAction     string `json:"flow_action,omitempty"`     // NAVIGATE or DATA_EXCHANGE
	NavigateScreen string `json:"navigate_screen,omitempty"` // the first screen, with NAVIGATE
}

// Templates is the body of a message_templates answer.
type Templates struct {
	Data   []Definition `json:"data"`
	Paging *Paging      `json:"paging,omitempty"`
}

// Paging is Graph's cursor paging.
type Paging struct {
	Cursors *struct {
		Before string `json:"before,omitempty"`
		After  string `json:"after,omitempty"`
	} `json:"cursors,omitempty"`
	Next string `json:"next,omitempty"`
}

// Find returns the definition named name in language lang. Graph's name
// filter matches parts of names, so the match is made here, exactly.
func (t Templates) Find(name, lang string) (Definition, bool) {
	for _, d := range t.Data {
		if d.Name == name && d.Language == lang {
			return d, true
		}
	}
	return Definition{}, false
}

// ParseDefinitions reads a JSON document of definitions: either a
// message_templates answer ({"data":[…]}) or a bare array of definitions.
func ParseDefinitions(b []byte) ([]Definition, error) {
	b = []byte(strings.TrimSpace(string(b)))
	var defs []Definition
	if len(b) > 0 && b[0] == '[' {
		if err := json.Unmarshal(b, &defs); err != nil {
			return nil, fmt.Errorf("template definitions: %w", err)
		}
	} else {
		var t Templates
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, fmt.Errorf("template definitions: %w", err)
		}
		defs = t.Data
	}
	for i, d := range defs {
		if d.Name == "" || d.Language == "" {
			return nil, fmt.Errorf("template definitions: entry %d has no name or language", i+1)
		}
	}
	return defs, nil
}

// Approved reports whether the template can be sent.
func (d Definition) Approved() bool { return strings.EqualFold(d.Status, "APPROVED") }

// Named reports whether the template's placeholders are named ({{first_name}}).
func (d Definition) Named() bool { return strings.EqualFold(d.ParameterFormat, "NAMED") }

// Authentication reports whether the template is of the authentication
// category, whose one parameter (the code) goes in the body and the button.
func (d Definition) Authentication() bool { return strings.EqualFold(d.Category, "AUTHENTICATION") }

// Component returns the first component of type typ (HEADER, BODY…).
func (d Definition) Component(typ string) (Component, bool) {
	for _, c := range d.Components {
		if strings.EqualFold(c.Type, typ) {
			return c, true
		}
	}
	return Component{}, false
}

// Buttons returns the template's buttons in index order.
func (d Definition) Buttons() []Button {
	c, _ := d.Component("BUTTONS")
	return c.Buttons
}

// HeaderFormat is the header's format (TEXT, IMAGE, VIDEO, DOCUMENT,
// LOCATION), "" without a header.
func (d Definition) HeaderFormat() string {
	c, ok := d.Component("HEADER")
	if !ok {
		return ""
	}
	return strings.ToUpper(cmp.Or(c.Format, "TEXT"))
}

var placeholderRE = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_]+)\s*\}\}`)

// Placeholders lists the distinct placeholders of text in order of first
// appearance: "1", "2"… or names.
func Placeholders(text string) []string {
	var out []string
	for _, m := range placeholderRE.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// BodyParams lists the body's placeholders: names for a named template,
// "1", "2"… for a positional one, sorted by number. An authentication
// template's body takes one parameter, the code, whatever its text says.
func (d Definition) BodyParams() []string {
	if d.Authentication() {
		return []string{"1"}
	}
	c, _ := d.Component("BODY")
	return sortPositional(Placeholders(c.Text))
}

// HeaderParams lists a TEXT header's placeholders (at most one, by Meta's
// rules).
func (d Definition) HeaderParams() []string {
	c, ok := d.Component("HEADER")
	if !ok || d.HeaderFormat() != "TEXT" {
		return nil
	}
	return sortPositional(Placeholders(c.Text))
}

// ButtonNeeds says what button i takes at send time: "url" (a URL suffix),
// "payload" (a quick reply's payload, optional), "coupon" (a copy-code
// button's code), "code" (an authentication template's code), "flow" (a
// Flow button's flow_token and flow_action_data, both optional), "" for a
// button that takes nothing, or "unsupported:TYPE".
func (d Definition) ButtonNeeds(i int) string {
	bs := d.Buttons()
	if i < 0 || i >= len(bs) {
		return ""
	}
	b := bs[i]
	switch strings.ToUpper(b.Type) {
	case "URL":
		if d.Authentication() {
			// Meta turns an OTP button into a URL button on creation.
			return "code"
		}
		if len(Placeholders(b.URL)) > 0 {
			return "url"
		}
		return ""
	case "OTP":
		return "code"
	case "QUICK_REPLY":
		return "payload"
	case "COPY_CODE":
		return "coupon"
	case "FLOW":
		return "flow"
	case "PHONE_NUMBER", "VOICE_CALL":
		return ""
	}
	return "unsupported:" + strings.ToUpper(b.Type)
}

// sortPositional sorts "1", "2", "10" numerically when every entry is a
// number, and leaves names in order of appearance.
func sortPositional(ps []string) []string {
	for _, p := range ps {
		if !isDigits(p) {
			return ps
		}
	}
	slices.SortFunc(ps, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	return ps
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
