package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Meta's limits on parameter values.
const (
	HeaderTextMax = 60 // characters of a header's text parameter
	CodeMax       = 15 // characters of an authentication code or a coupon
)

// Validate checks one row's cells against Meta's rules for the values of
// the slots they fill. It returns "" for a row that can be sent, else the
// reason it cannot, naming the column and the rule.
func (m *Mapping) Validate(cells []string) string {
	for _, b := range m.Bindings {
		if b.Cell < 0 {
			continue // checked once, in New
		}
		v := ""
		if b.Cell < len(cells) {
			v = cells[b.Cell]
		}
		if why := m.check(b, v); why != "" {
			return fmt.Sprintf("column %q: %s", b.Column, why)
		}
		if r, ok := control(v, b.Part == Btn && b.Kind == "flow_action_data"); ok {
			return fmt.Sprintf("column %q: has a control character (%U)", b.Column, r)
		}
	}
	return ""
}

// control returns the first control character in v: C0 (the line breaks
// and tabs that Meta refuses have their own reasons, found first), DEL and
// C1. None is meant for a phone, and a terminal acts on them. With
// jsonSpace, tabs and line breaks are let through: in a JSON text (a Flow's
// data, pasted pretty-printed) they are white space between tokens, which
// Components drops, and JSON refuses them inside strings.
//
// It reads bytes, not runes (a loop over runes was 3% of the CPU of a
// million-row dry run): C0 and DEL are single bytes, and C1
// (U+0080–U+009F) is 0xC2 then 0x80–0x9F; 0xC2 is only ever a leading
// byte, so this finds what a loop over runes finds, in valid UTF-8 or not.
func control(v string, jsonSpace bool) (rune, bool) {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c < 0x20 || c == 0x7f:
			if jsonSpace && (c == '\t' || c == '\n' || c == '\r') {
				continue
			}
			return rune(c), true
		case c == 0xc2 && i+1 < len(v) && v[i+1] >= 0x80 && v[i+1] <= 0x9f:
			return rune(v[i+1]), true
		}
	}
	return 0, false
}

// optional slots may be empty in a row: the value is left out. A Flow
// button whose token and data are both empty gets no component at all.
func optional(s Slot) bool {
	return s.Part == Header && (s.Kind == "filename" || s.Kind == "name" || s.Kind == "address") ||
		s.Part == Btn && (s.Kind == "payload" || flowKind(s.Kind))
}

// check returns why v cannot fill b's slot, or "".
func (m *Mapping) check(b Binding, v string) string {
	if v == "" {
		if optional(b.Slot) {
			return ""
		}
		return "is empty"
	}
	switch {
	case b.Part == Body:
		return textRules(v, m.BodyMax, "a body parameter")
	case b.Part == Header && b.Kind == "text":
		return textRules(v, HeaderTextMax, "a header parameter")
	case b.Part == Header && (b.Kind == "image" || b.Kind == "video" || b.Kind == "document"):
		return mediaRule(v)
	case b.Part == Header && b.Kind == "latitude":
		return coordinate(v, 90)
	case b.Part == Header && b.Kind == "longitude":
		return coordinate(v, 180)
	case b.Part == Header: // filename, name, address
		if strings.ContainsAny(v, "\r\n") {
			return "has a line break"
		}
	case b.Part == Btn && b.Kind == "url":
		return urlSuffixRule(v)
	case b.Part == Btn && b.Kind == "coupon":
		return couponRule(v)
	case b.Part == Btn && b.Kind == "flow_action_data":
		return flowDataRule(v)
	case b.Part == Auth:
		if why := codeRule(v, "an authentication code"); why != "" {
			return why
		}
		return urlSuffixRule(v) // it is also the button's URL parameter
	}
	return ""
}

// textRules are Meta's rules for text parameters (error 132018 and 132005).
func textRules(v string, max int, what string) string {
	if i := strings.IndexAny(v, "\r\n\t"); i >= 0 {
		c := "a line break"
		if v[i] == '\t' {
			c = "a tab"
		}
		return fmt.Sprintf("has %s (Meta refuses line breaks, tabs and more than 4 spaces in a row in a text parameter)", c)
	}
	if strings.Contains(v, "     ") {
		return "has more than 4 spaces in a row (Meta refuses line breaks, tabs and more than 4 spaces in a row in a text parameter)"
	}
	if len(v) > max {
		if n := utf8.RuneCountInString(v); n > max {
			return fmt.Sprintf("is %d characters long: Meta takes at most %d in %s", n, max, what)
		}
	}
	return ""
}

func mediaRule(v string) string {
	if isDigits(v) {
		return "" // an uploaded media ID
	}
	// A scan, not url.Parse: it runs on every row of a million.
	rest, ok := strings.CutPrefix(v, "https://")
	if !ok && len(v) > 8 && strings.EqualFold(v[:8], "https://") {
		rest, ok = v[8:], true
	}
	if !ok || rest == "" || rest[0] == '/' || !urlChars(rest) {
		return "is neither an https link nor an uploaded media ID"
	}
	return ""
}

// urlSafe marks the bytes a URL may carry as they are: RFC 3986's
// unreserved and reserved characters, and '%' for escapes.
var urlSafe = func() (t [256]bool) {
	for _, c := range []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~:/?#[]@!$&'()*+,;=%") {
		t[c] = true
	}
	return t
}()

func urlChars(v string) bool {
	return badURLByte(v) < 0
}

// badURLByte is the index of the first byte of v a URL cannot carry as it
// is (a '%' not followed by two hex digits among them), or -1.
func badURLByte(v string) int {
	for i := 0; i < len(v); i++ {
		if !urlSafe[v[i]] {
			return i
		}
		if v[i] == '%' && (i+2 >= len(v) || !isHex(v[i+1]) || !isHex(v[i+2])) {
			return i
		}
	}
	return -1
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// coordinate takes decimal degrees as written by hand ("52.52", "-13.4"):
// ParseFloat alone would also take "NaN", "1e1" and "0x1p-2", which it is
// not, and which would be sent as written.
func coordinate(v string, limit float64) string {
	v = strings.TrimSpace(v)
	bad := fmt.Sprintf("is not a coordinate from -%g to %g in decimal degrees", limit, limit)
	digits := strings.TrimLeft(v, "+-")
	if len(v)-len(digits) > 1 || digits == "" {
		return bad
	}
	whole, frac, _ := strings.Cut(digits, ".")
	if whole == "" || !isDigits(whole) || (frac != "" && !isDigits(frac)) || strings.HasSuffix(digits, ".") {
		return bad
	}
	if f, err := strconv.ParseFloat(v, 64); err != nil || f < -limit || f > limit {
		return bad
	}
	return ""
}

func codeRule(v, what string) string {
	if n := utf8.RuneCountInString(v); n > CodeMax {
		return fmt.Sprintf("is %d characters long: Meta takes at most %d in %s", n, CodeMax, what)
	}
	return ""
}

// couponRule adds Meta's rule for coupon codes: letters and digits only.
func couponRule(v string) string {
	if why := codeRule(v, "a coupon code"); why != "" {
		return why
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return fmt.Sprintf("has %q: Meta takes letters and digits only in a coupon code", r)
		}
	}
	return ""
}

// flowDataRule: a Flow button's flow_action_data is a JSON object, the data
// of the Flow's first screen (Meta's OpenAPI example "Send Flow Template
// Message": "flow_action_data": {"<CUSTOM_KEY>": "<CUSTOM_VALUE>"}). A cell
// holds it as its JSON text, {"first_name":"Ana","plan":"gold"}, which is
// sent as the object it writes (compacted), never as a string. Any other
// JSON (a string, a number, an array, null) is refused, not wrapped: only
// the operator knows the keys the Flow reads. So is an empty object: Meta
// takes a Flow's first-screen data only as a non-empty object (Flow
// messages' flow_action_payload.data); an empty cell sends none. Meta
// documents no length limit; a cell is at most 64 KB.
func flowDataRule(v string) string {
	const how = `: write the Flow's data as a JSON object, e.g. {"first_name":"Ana"}`
	var obj map[string]json.RawMessage
	err := json.Unmarshal([]byte(v), &obj)
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("is not a JSON object (%v at byte %d)%s", err, syntax.Offset, how)
	case err != nil || obj == nil: // valid JSON of another type, or null
		return fmt.Sprintf("is not a JSON object but %s%s", jsonKind(v), how)
	case len(obj) == 0:
		return "is an empty JSON object: leave the cell empty to send the Flow no data"
	}
	return ""
}

// jsonKind names the type of the valid JSON text v.
func jsonKind(v string) string {
	switch t := strings.TrimLeft(v, " \t\r\n"); {
	case strings.HasPrefix(t, `"`):
		return "a JSON string"
	case strings.HasPrefix(t, "["):
		return "a JSON array"
	case strings.HasPrefix(t, "null"):
		return "null"
	case strings.HasPrefix(t, "true"), strings.HasPrefix(t, "false"):
		return "a JSON boolean"
	}
	return "a JSON number"
}

// flowData is the JSON object v writes, compacted, or nil when v is not a
// non-empty JSON object (which Validate refuses).
func flowData(v string) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, []byte(v)) != nil || buf.Len() <= 2 || buf.Bytes()[0] != '{' {
		return nil
	}
	return buf.Bytes()
}

// urlSuffixRule keeps to the characters a URL may carry (RFC 3986's
// unreserved and reserved ones, and percent escapes): Meta appends the
// suffix to the button's URL as it is.
func urlSuffixRule(v string) string {
	i := badURLByte(v)
	if i < 0 {
		return ""
	}
	if v[i] == '%' {
		return "has a '%' that starts no escape (%XX): write it as %25"
	}
	r, _ := utf8.DecodeRuneInString(v[i:])
	return fmt.Sprintf("has %q, which a URL cannot carry: percent-encode it", r)
}

// Components builds the template components of the send request for one
// row, whose cells passed Validate.
func (m *Mapping) Components(cells []string) []SendComponent {
	val := func(b Binding) string {
		if b.Cell < 0 {
			return b.Value
		}
		if b.Cell < len(cells) {
			return cells[b.Cell]
		}
		return ""
	}
	var out []SendComponent
	if p, ok := m.header(val); ok {
		out = append(out, SendComponent{Type: Header, Parameters: []Parameter{p}})
	}
	var body []Parameter
	for _, b := range m.Bindings {
		if b.Part == Body {
			p := Parameter{Type: "text", Text: val(b)}
			if m.Named {
				p.ParameterName = b.Name
			}
			body = append(body, p)
		}
	}
	code, auth := m.find(Auth, "code", 0)
	if auth {
		body = []Parameter{{Type: "text", Text: val(code)}}
	}
	if len(body) > 0 {
		out = append(out, SendComponent{Type: Body, Parameters: body})
	}
	if auth {
		out = append(out, SendComponent{Type: Btn, SubType: "url", Index: "0", Parameters: []Parameter{{Type: "text", Text: val(code)}}})
	}
	var buttons []SendComponent
	flows := map[int]*Action{} // a Flow button's token and data share one parameter
	for _, b := range m.Bindings {
		if b.Part != Btn {
			continue
		}
		v := val(b)
		if v == "" {
			continue // an optional payload, flow token or flow data
		}
		c := SendComponent{Type: Btn, Index: strconv.Itoa(b.Index)}
		switch b.Kind {
		case "url":
			c.SubType, c.Parameters = "url", []Parameter{{Type: "text", Text: v}}
		case "payload":
			c.SubType, c.Parameters = "quick_reply", []Parameter{{Type: "payload", Payload: v}}
		case "coupon":
			c.SubType, c.Parameters = "copy_code", []Parameter{{Type: "coupon_code", CouponCode: v}}
		case "flow_token", "flow_action_data":
			a := flows[b.Index]
			if a == nil {
				a = &Action{}
				flows[b.Index] = a
			}
			if b.Kind == "flow_token" {
				a.FlowToken = v
			} else {
				a.FlowActionData = flowData(v)
			}
			continue
		}
		buttons = append(buttons, c)
	}
	// A Flow button given nothing has no component: Meta's ButtonComponent
	// requires one parameter at least, and the Flow opens without a token
	// or data.
	for i, a := range flows {
		if a.FlowToken != "" || a.FlowActionData != nil {
			buttons = append(buttons, SendComponent{Type: Btn, SubType: "flow", Index: strconv.Itoa(i),
				Parameters: []Parameter{{Type: "action", Action: a}}})
		}
	}
	slices.SortStableFunc(buttons, func(a, b SendComponent) int { return strings.Compare(a.Index, b.Index) })
	return append(out, buttons...)
}

func (m *Mapping) header(val func(Binding) string) (Parameter, bool) {
	for _, b := range m.Bindings {
		if b.Part != Header {
			continue
		}
		v := val(b)
		switch b.Kind {
		case "text":
			return Parameter{Type: "text", Text: v, ParameterName: m.HeaderName}, true
		case "image":
			return Parameter{Type: "image", Image: media(v)}, true
		case "video":
			return Parameter{Type: "video", Video: media(v)}, true
		case "document":
			d := media(v)
			if f, ok := m.find(Header, "filename", 0); ok {
				d.Filename = val(f)
			}
			return Parameter{Type: "document", Document: d}, true
		case "latitude":
			loc := &Location{Latitude: strings.TrimSpace(v)}
			for _, o := range m.Bindings {
				if o.Part != Header {
					continue
				}
				switch o.Kind {
				case "longitude":
					loc.Longitude = strings.TrimSpace(val(o))
				case "name":
					loc.Name = val(o)
				case "address":
					loc.Address = val(o)
				}
			}
			return Parameter{Type: "location", Location: loc}, true
		}
	}
	return Parameter{}, false
}

func media(v string) *Media {
	if isDigits(v) {
		return &Media{ID: v}
	}
	return &Media{Link: v}
}

// Positional is the mapping of a checkpoint made before mappings were
// stored: every column a body parameter, in order.
func Positional(columns []string) *Mapping {
	m := &Mapping{BodyMax: 32768}
	for i, c := range columns {
		m.Bindings = append(m.Bindings, Binding{Slot: Slot{Part: Body, Name: strings.ToLower(strings.TrimSpace(c))}, Column: c, Cell: i})
	}
	return m
}

// Summary describes the mapping in a line for the plan: which slot each
// column or constant fills; constant is what the front end calls the
// setting of constants.
func (m *Mapping) Summary(constant string) string {
	var parts []string
	pos := 0
	for _, b := range m.Bindings {
		slot := b.Key()
		if b.Part == Body {
			if m.Named {
				slot = "{{" + b.Name + "}}"
			} else {
				pos++
				slot = "{{" + strconv.Itoa(pos) + "}}"
			}
			slot = "body " + slot
		}
		src := b.Column
		if b.Cell < 0 {
			src = constant
		}
		parts = append(parts, fmt.Sprintf("%s ← %s", slot, src))
	}
	if len(m.Ignored) > 0 {
		parts = append(parts, "ignored: "+strings.Join(m.Ignored, ", "))
	}
	if len(parts) == 0 {
		return "no parameters"
	}
	return strings.Join(parts, "; ")
}
