package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// Meta's limits on a send's parameter values (fact sheet §1; Meta's
// error-code table for 132018).
const (
	bodyTextMax      = 32768 // a body text parameter when the body is the only component
	bodyTextMaxMixed = 1024  // … when the request has other components
	codeMax          = template.CodeMax
	headerTextMax    = template.HeaderTextMax
)

// check validates a send's template object against the definition it names,
// the way the Cloud API does: the template's status, then the header, the
// body and the buttons. It returns the first failure, or the zero failure.
func check(d template.Definition, t *templateObject) failure {
	switch {
	case strings.EqualFold(d.Status, "PAUSED"):
		return waError(codePaused, "Template is Paused",
			fmt.Sprintf("Template %s is paused because of low quality, so it cannot be sent in a template message.", d.Name))
	case strings.EqualFold(d.Status, "DISABLED"):
		return waError(codeDisabled, "Template is disabled",
			fmt.Sprintf("Template %s has been paused too many times because of low quality and is now permanently disabled.", d.Name))
	case !d.Approved():
		// Rejected and pending templates cannot be sent: Meta answers as if
		// they did not exist in the language.
		return noTemplate(d.Name, d.Language)
	}
	var header, body *sendComponent
	var buttons []sendComponent
	for i := range t.Components {
		c := &t.Components[i]
		switch strings.ToLower(c.Type) {
		case "header", "body":
			p := &header
			if strings.EqualFold(c.Type, "body") {
				p = &body
			}
			if *p != nil {
				return invalidParam(fmt.Sprintf("Param template.components has more than one %s component.", strings.ToLower(c.Type)))
			}
			*p = c
		case "button":
			buttons = append(buttons, *c)
		case "":
			return missingParam(fmt.Sprintf("template.components[%d].type", i))
		default:
			return invalidParam(fmt.Sprintf("Param template.components[%d].type must be one of header, body, button; the sandbox does not take %q.", i, c.Type))
		}
	}
	if f := checkHeader(d, header); f.code != 0 {
		return f
	}
	// Meta's 1024-character limit applies as soon as anything but the body
	// is sent.
	limit := bodyTextMax
	if body != nil && len(t.Components) > 1 {
		limit = bodyTextMaxMixed
	}
	code, f := checkBody(d, body, limit)
	if f.code != 0 {
		return f
	}
	return checkButtons(d, buttons, code)
}

// checkHeader checks the header parameter against the header's format.
func checkHeader(d template.Definition, c *sendComponent) failure {
	format := d.HeaderFormat()
	var names []string
	switch format {
	case "IMAGE", "VIDEO", "DOCUMENT", "LOCATION":
		names = []string{""}
	case "TEXT":
		names = d.HeaderParams()
	}
	var raw []json.RawMessage
	if c != nil {
		raw = c.Parameters
	}
	if len(raw) != len(names) {
		return waError(codeParamCount, "Number of parameters does not match the expected number of params",
			fmt.Sprintf("header: number of params (%d) does not match the expected number of params (%d)", len(raw), len(names)))
	}
	if len(names) == 0 {
		return failure{}
	}
	ps, f := decodeParams("header", raw)
	if f.code != 0 {
		return f
	}
	p := ps[0]
	want := strings.ToLower(format)
	if f := checkType("header", p.Type, want); f.code != 0 {
		return f
	}
	switch want {
	case "text":
		if f := checkName("header", d, names[0], p.ParameterName); f.code != 0 {
			return f
		}
		return checkText("header", p.Text, headerTextMax)
	case "image":
		return checkMedia("image", p.Image)
	case "video":
		return checkMedia("video", p.Video)
	case "document":
		return checkMedia("document", p.Document)
	}
	return checkLocation(p.Location)
}

// checkName checks a header's parameter_name: required and equal to the
// placeholder in a named template, absent in a positional one.
func checkName(where string, d template.Definition, placeholder, got string) failure {
	if d.Named() && !isDigits(placeholder) {
		if got != placeholder {
			return waError(codeParamCount, "Number of parameters does not match the expected number of params",
				fmt.Sprintf("%s: parameter name (%s) does not match the template's parameter (%s)", where, got, placeholder))
		}
		return failure{}
	}
	if got != "" {
		return notNamed(where, got)
	}
	return failure{}
}

func notNamed(where, name string) failure {
	return waError(codeParamCount, "Number of parameters does not match the expected number of params",
		fmt.Sprintf("%s: parameter_name (%s) is not expected: the template's parameters are positional", where, name))
}

// checkBody checks the body's parameters and returns the first one's text:
// an authentication template's code, which its button must repeat.
func checkBody(d template.Definition, c *sendComponent, limit int) (string, failure) {
	names := d.BodyParams()
	var raw []json.RawMessage
	if c != nil {
		raw = c.Parameters
	}
	if len(raw) != len(names) {
		return "", waError(codeParamCount, "Number of parameters does not match the expected number of params",
			fmt.Sprintf("body: number of localizable_params (%d) does not match the expected number of params (%d)", len(raw), len(names)))
	}
	ps, f := decodeParams("body", raw)
	if f.code != 0 {
		return "", f
	}
	named := d.Named() && !d.Authentication()
	if named {
		if f := checkNames(names, ps); f.code != 0 {
			return "", f
		}
	}
	for i, p := range ps {
		if !named && p.ParameterName != "" {
			return "", notNamed("body", p.ParameterName)
		}
		where := fmt.Sprintf("body: parameter {{%d}}", i+1)
		if named {
			where = fmt.Sprintf("body: parameter {{%s}}", p.ParameterName)
		}
		if d.Authentication() {
			if f := checkType("body", p.Type, "text"); f.code != 0 {
				return "", f
			}
		}
		var f failure
		switch typ := strings.ToLower(p.Type); typ {
		case "text":
			f = checkText(where, p.Text, limit)
		case "currency", "date_time":
			fb := p.Currency
			if typ == "date_time" {
				fb = p.DateTime
			}
			if fb == nil {
				f = missing(where, typ)
			} else {
				f = checkText(where+" "+typ+".fallback_value", fb.FallbackValue, limit)
			}
		default:
			f = checkType(where, p.Type, "text")
		}
		if f.code != 0 {
			return "", f
		}
	}
	if !d.Authentication() || len(ps) == 0 {
		return "", failure{}
	}
	code := ps[0].Text
	if n := utf8.RuneCountInString(code); n > codeMax {
		return "", waError(codeParamIssue, "There was an issue with the parameters in your template",
			fmt.Sprintf("body: an authentication code can be at most %d characters long; this one has %d", codeMax, n))
	}
	return code, failure{}
}

// checkNames checks that a named template's body parameters name each of
// the template's placeholders once.
func checkNames(names []string, ps []sendParam) failure {
	seen := map[string]bool{}
	missingNames := func() string {
		var m []string
		for _, n := range names {
			if !seen[n] {
				m = append(m, n)
			}
		}
		return strings.Join(m, ", ")
	}
	for i, p := range ps {
		var why string
		switch {
		case p.ParameterName == "":
			why = fmt.Sprintf("parameter %d has no parameter_name, which a template with named parameters requires", i+1)
		case !slices.Contains(names, p.ParameterName):
			why = fmt.Sprintf("parameter name (%s) is not a parameter of the template", p.ParameterName)
		case seen[p.ParameterName]:
			why = fmt.Sprintf("parameter name (%s) is given more than once", p.ParameterName)
		}
		if why != "" {
			// Name what is left unfilled: that is what the sender has to fix.
			for _, q := range ps {
				seen[q.ParameterName] = true
			}
			return waError(codeParamCount, "Number of parameters does not match the expected number of params",
				fmt.Sprintf("body: %s; missing: %s", why, missingNames()))
		}
		seen[p.ParameterName] = true
	}
	return failure{}
}

// checkButtons checks the button components against the template's buttons
// and that every button needing a value got one.
func checkButtons(d template.Definition, cs []sendComponent, code string) failure {
	bs := d.Buttons()
	given := map[int]bool{}
	for n, c := range cs {
		sub, f := subType(n, c.SubType)
		if f.code != 0 {
			return f
		}
		if len(c.Index) == 0 || string(c.Index) == "null" {
			return missingParam(fmt.Sprintf("index (button component %d)", n+1))
		}
		i, ok := buttonIndex(c.Index)
		if !ok {
			return waError(codeBadValue, "Parameter value is not valid",
				fmt.Sprintf("Invalid button index %s: it must be a number from 0 to 9.", c.Index))
		}
		if i >= len(bs) || sub != wantSubType(d, i) {
			return waError(codeBadValue, "Parameter value is not valid",
				fmt.Sprintf("Button at index %d of type %s does not exist", i, title(sub)))
		}
		if given[i] {
			return waError(codeBadValue, "Parameter value is not valid",
				fmt.Sprintf("Button at index %d is given more than once", i))
		}
		given[i] = true
		if f := checkButton(d, i, c.Parameters, code); f.code != 0 {
			return f
		}
	}
	for i, b := range bs {
		switch need := d.ButtonNeeds(i); {
		case given[i]:
		case need == "code":
			return waError(codeParamCount, "Number of parameters does not match the expected number of params",
				fmt.Sprintf("buttons: number of params (0) does not match the expected number of params (1) for the button at index %d: an authentication template's code must be sent in the body and in the url button", i))
		case need == "url" || need == "coupon":
			return waError(codeParamCount, "Number of parameters does not match the expected number of params",
				fmt.Sprintf("buttons: number of params (0) does not match the expected number of params (1) for the button at index %d (%s)", i, strings.ToUpper(b.Type)))
		}
	}
	return failure{}
}

// checkButton checks the parameters of button i.
func checkButton(d template.Definition, i int, raw []json.RawMessage, code string) failure {
	where := fmt.Sprintf("button at index %d", i)
	need := d.ButtonNeeds(i)
	want := 1
	switch {
	case need == "":
		want = 0 // a static URL, a phone number: nothing to fill in
	case need == "flow":
		return checkFlow(where, raw)
	case strings.HasPrefix(need, "unsupported:"):
		// Catalog, multi-product and other actions: their parameters are
		// not checked.
		return failure{}
	}
	if len(raw) != want {
		return waError(codeParamCount, "Number of parameters does not match the expected number of params",
			fmt.Sprintf("buttons: number of params (%d) does not match the expected number of params (%d) for the %s", len(raw), want, where))
	}
	if want == 0 {
		return failure{}
	}
	ps, f := decodeParams(where, raw)
	if f.code != 0 {
		return f
	}
	p := ps[0]
	switch need {
	case "url", "code":
		if f := checkType(where, p.Type, "text"); f.code != 0 {
			return f
		}
		if p.Text == "" {
			return missing(where, "text")
		}
		if i := strings.IndexFunc(p.Text, unicode.IsSpace); i >= 0 {
			return waError(codeBadValue, "Parameter value is not valid",
				fmt.Sprintf("%s: the URL suffix cannot contain white space", where))
		}
		if need == "code" && p.Text != code {
			return waError(codeBadValue, "Parameter value is not valid",
				fmt.Sprintf("%s: an authentication template's code must be the same in the body and in the url button", where))
		}
	case "payload":
		if f := checkType(where, p.Type, "payload"); f.code != 0 {
			return f
		}
		if p.Payload == "" {
			return missing(where, "payload")
		}
	case "coupon":
		if f := checkType(where, p.Type, "coupon_code"); f.code != 0 {
			return f
		}
		if p.CouponCode == "" {
			return missing(where, "coupon_code")
		}
		if n := utf8.RuneCountInString(p.CouponCode); n > codeMax {
			return waError(codeParamIssue, "There was an issue with the parameters in your template",
				fmt.Sprintf("%s: a coupon code can be at most %d characters long; this one has %d", where, codeMax, n))
		}
	}
	return failure{}
}

// checkFlow checks a Flow button's parameters, each part of which is
// optional: none (the Flow opens with Meta's default token and no data; a
// client may as well leave the component out), or one parameter of type
// action whose action has a flow_token, a non-empty string, and/or a
// flow_action_data, a non-empty JSON object (Meta's OpenAPI example "Send
// Flow Template Message": {"type":"action","action":{"flow_token":
// "<FLOW_TOKEN>","flow_action_data":{"<CUSTOM_KEY>":"<CUSTOM_VALUE>"}}}).
// Meta takes a Flow's first-screen data only as a non-empty object (Flow
// messages' flow_action_payload.data), so an empty one is refused too.
// Other fields of the action are ignored, as Meta ignores fields it does
// not process.
func checkFlow(where string, raw []json.RawMessage) failure {
	switch {
	case len(raw) == 0:
		return failure{}
	case len(raw) > 1:
		return waError(codeParamCount, "Number of parameters does not match the expected number of params",
			fmt.Sprintf("buttons: number of params (%d) does not match the expected number of params (1) for the %s (FLOW)", len(raw), where))
	}
	var p struct {
		Type   string          `json:"type"`
		Action json.RawMessage `json:"action"`
	}
	if err := json.Unmarshal(raw[0], &p); err != nil {
		return invalidParam(fmt.Sprintf("%s: parameter 1 is not a valid parameter object: %v", where, err))
	}
	if f := checkType(where, p.Type, "action"); f.code != 0 {
		return f
	}
	if absent(p.Action) {
		return missing(where, "action")
	}
	issue := func(why string) failure {
		return waError(codeParamIssue, "There was an issue with the parameters in your template", where+": "+why)
	}
	var a struct {
		FlowToken      json.RawMessage `json:"flow_token"`
		FlowActionData json.RawMessage `json:"flow_action_data"`
	}
	if json.Unmarshal(p.Action, &a) != nil {
		return issue(fmt.Sprintf("action must be an object with flow_token and/or flow_action_data, not %s", jsonType(p.Action)))
	}
	if !absent(a.FlowToken) {
		var tok string
		if json.Unmarshal(a.FlowToken, &tok) != nil {
			return issue(fmt.Sprintf("action.flow_token must be a string, not %s", jsonType(a.FlowToken)))
		}
		if tok == "" {
			return missing(where, "action.flow_token")
		}
	}
	if !absent(a.FlowActionData) {
		var data map[string]json.RawMessage
		if json.Unmarshal(a.FlowActionData, &data) != nil {
			return issue(fmt.Sprintf("action.flow_action_data must be a JSON object, not %s", jsonType(a.FlowActionData)))
		}
		if len(data) == 0 {
			return issue("action.flow_action_data must be a non-empty JSON object")
		}
	}
	return failure{}
}

// absent reports whether a raw JSON field is missing or null.
func absent(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// jsonType names the type of the JSON value raw, as a refusal says it.
func jsonType(raw json.RawMessage) string {
	switch b := bytes.TrimSpace(raw); {
	case len(b) == 0:
		return "nothing"
	case b[0] == '"':
		return "a string"
	case b[0] == '[':
		return "an array"
	case b[0] == '{':
		return "an object"
	case b[0] == 't' || b[0] == 'f':
		return "a boolean"
	}
	return "a number"
}

// wantSubType is the sub_type a send names button i with; "" for a button
// no component may name.
func wantSubType(d template.Definition, i int) string {
	switch t := strings.ToUpper(d.Buttons()[i].Type); t {
	case "URL", "OTP":
		// Meta turns an OTP button into a URL button on creation; it is
		// sent as one.
		return "url"
	case "PHONE_NUMBER":
		return ""
	default: // QUICK_REPLY, COPY_CODE, FLOW (flow), CATALOG, MPM, VOICE_CALL…
		return strings.ToLower(t)
	}
}

// subType reads a button component's sub_type; Meta's own examples write it
// in either case (COPY_CODE, copy_code).
func subType(n int, raw json.RawMessage) (string, failure) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", missingParam(fmt.Sprintf("sub_type (button component %d)", n+1))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || s == "" {
		return "", invalidParam(fmt.Sprintf("Param sub_type of button component %d must be a non-empty string.", n+1))
	}
	return strings.ToLower(s), failure{}
}

// buttonIndex reads a button index: "0" to "9", or the number.
func buttonIndex(raw json.RawMessage) (int, bool) {
	s := string(bytes.TrimSpace(raw))
	if strings.HasPrefix(s, `"`) {
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
	}
	if len(s) != 1 || s[0] < '0' || s[0] > '9' {
		return 0, false
	}
	return int(s[0] - '0'), true
}

// title writes a sub_type as Meta's messages do ("Url", "Quick_reply").
func title(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

func decodeParams(where string, raw []json.RawMessage) ([]sendParam, failure) {
	ps := make([]sendParam, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &ps[i]); err != nil {
			return nil, invalidParam(fmt.Sprintf("%s: parameter %d is not a valid parameter object: %v", where, i+1, err))
		}
	}
	return ps, failure{}
}

// checkType compares a parameter's type with the one the template's slot
// takes.
func checkType(where, got, want string) failure {
	switch {
	case got == "":
		return missing(where, "type")
	case !strings.EqualFold(got, want):
		return waError(codeParamFormat, "Parameter format does not match format in the created template",
			fmt.Sprintf("%s: a parameter of type %s where the template takes %s", where, strings.ToLower(got), want))
	}
	return failure{}
}

// checkText applies Meta's rules for a text parameter: present, no new
// line, tab or run of more than 4 spaces, at most limit characters.
func checkText(where, v string, limit int) failure {
	switch {
	case v == "":
		return missing(where, "text")
	case strings.ContainsAny(v, "\n\r\t") || strings.Contains(v, "     "):
		return waError(codeParamIssue, "There was an issue with the parameters in your template",
			where+": Param text cannot have new-line/tab characters or more than 4 consecutive spaces")
	}
	if n := utf8.RuneCountInString(v); n > limit {
		return waError(codeTooLong, "Translated text too long",
			fmt.Sprintf("%s: text is %d characters long; at most %d are allowed here", where, n, limit))
	}
	return failure{}
}

// checkMedia checks a header's image, video or document: an uploaded media
// id or an absolute http(s) link, not both.
func checkMedia(kind string, m *mediaParam) failure {
	switch {
	case m == nil:
		return missing("header", kind)
	case m.ID == "" && m.Link == "":
		return waError(codeBadValue, "Parameter value is not valid",
			fmt.Sprintf("header: the %s needs an id or a link", kind))
	case m.ID != "" && m.Link != "":
		return waError(codeBadValue, "Parameter value is not valid",
			fmt.Sprintf("header: the %s takes an id or a link, not both", kind))
	case m.Link != "":
		u, err := url.Parse(m.Link)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return waError(codeBadValue, "Parameter value is not valid",
				fmt.Sprintf("header: the %s link %q is not an absolute http(s) URL", kind, m.Link))
		}
	}
	return failure{}
}

// checkLocation checks a location header's coordinates.
func checkLocation(l *locationParam) failure {
	if l == nil {
		return missing("header", "location")
	}
	for _, c := range []struct {
		name  string
		raw   json.RawMessage
		limit float64
	}{{"latitude", l.Latitude, 90}, {"longitude", l.Longitude, 180}} {
		if len(c.raw) == 0 || string(c.raw) == "null" || string(c.raw) == `""` {
			return missing("header", "location."+c.name)
		}
		s := string(c.raw)
		if strings.HasPrefix(s, `"`) {
			json.Unmarshal(c.raw, &s)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(f >= -c.limit && f <= c.limit) { // NaN too
			return waError(codeBadValue, "Parameter value is not valid",
				fmt.Sprintf("header: location.%s %s is not a number from -%g to %g", c.name, c.raw, c.limit, c.limit))
		}
	}
	return failure{}
}

func missing(where, name string) failure {
	return waError(codeMissingParam, "Required parameter is missing",
		fmt.Sprintf("%s: the parameter %s is required.", where, name))
}
