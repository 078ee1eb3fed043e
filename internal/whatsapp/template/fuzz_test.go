package template_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// Fuzz targets for what comes from outside: template definitions (Graph's
// answer or an operator's file), the CSV's column names, --param values and
// the cells of each row.

// fuzzSeeds reads testdata/definitions.json as one raw definition each.
func fuzzSeeds(f *testing.F) (raw []json.RawMessage, defs []template.Definition) {
	f.Helper()
	b, err := os.ReadFile("testdata/definitions.json")
	if err != nil {
		f.Fatal(err)
	}
	var answer struct{ Data []json.RawMessage }
	if err := json.Unmarshal(b, &answer); err != nil {
		f.Fatal(err)
	}
	defs, err = template.ParseDefinitions(b)
	if err != nil {
		f.Fatal(err)
	}
	if len(defs) != len(answer.Data) || len(defs) == 0 {
		f.Fatalf("%d definitions, %d raw", len(defs), len(answer.Data))
	}
	return answer.Data, defs
}

// fittingColumns are columns that fill every slot of def.
func fittingColumns(def template.Definition) []string {
	var cols []string
	switch def.HeaderFormat() {
	case "IMAGE", "VIDEO", "DOCUMENT":
		cols = append(cols, "header."+strings.ToLower(def.HeaderFormat()))
	case "LOCATION":
		cols = append(cols, "header.latitude", "header.longitude")
	case "TEXT":
		if len(def.HeaderParams()) > 0 {
			cols = append(cols, "header.text")
		}
	}
	switch {
	case def.Authentication():
		cols = append(cols, "auth.code")
	case def.Named():
		cols = append(cols, def.BodyParams()...)
	default:
		for i := range def.BodyParams() {
			cols = append(cols, fmt.Sprintf("p%d", i+1))
		}
	}
	for i := range def.Buttons() {
		switch need := def.ButtonNeeds(i); need {
		case "url", "payload", "coupon":
			cols = append(cols, fmt.Sprintf("button.%d.%s", i, need))
		case "flow":
			cols = append(cols, fmt.Sprintf("button.%d.flow_token", i), fmt.Sprintf("button.%d.flow_action_data", i))
		}
	}
	return cols
}

// goodValue is a value every rule accepts for s.
func goodValue(s template.Slot) string {
	switch s.Part + "." + s.Kind {
	case "header.image", "header.video", "header.document":
		return "https://cdn.example.com/a"
	case "header.latitude":
		return "52.5"
	case "header.longitude":
		return "13.4"
	case "auth.code":
		return "123456"
	case "button.flow_action_data":
		return `{"first_name":"Ana"}`
	}
	return "x"
}

// FuzzParseDefinitions: no definition, column list or --param may panic
// the parser or the mapping; a mapping New makes against a definition
// passes Check against it, and every row it accepts gives components that
// marshal and carry exactly the body's parameters.
func FuzzParseDefinitions(f *testing.F) {
	raw, defs := fuzzSeeds(f)
	for i, d := range defs {
		f.Add([]byte(raw[i]), strings.Join(fittingColumns(d), ","), "", "")
	}
	b, _ := os.ReadFile("testdata/definitions.json")
	f.Add(b, "name,discount,header.image,button.0.url", "button.1.payload=STOP", "Ana|20%|https://cdn.example.com/a.jpg|A1")
	f.Add([]byte(raw[1]), "first_name,order_id,button.0.url", "ship_date=May 2", "Ana|A-1|A-1")
	f.Add([]byte(`[{"name":"t","language":"en","status":"APPROVED","components":[{"type":"BODY","text":"{{1}}"}]}]`), "a", "", "x")
	f.Add([]byte(`[{"name":"t","language":"en","status":"APPROVED","components":[{"type":"BUTTONS","buttons":[{"type":"FLOW"},{"type":"flow"}]}]}]`),
		"button.0.flow_token,button.0.flow_action_data,button.1.flow_action_data", "button.1.flow_token=T", `tok|{"a":1}|[1]`)

	f.Fuzz(func(t *testing.T, definition []byte, columns, params, row string) {
		in := template.Input{Columns: strings.Split(columns, ",")}
		if columns == "" {
			in.Columns = nil
		}
		for kv := range strings.SplitSeq(params, ";") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				in.Consts = append(in.Consts, template.Const{Key: k, Value: v})
			}
		}
		cells := strings.Split(row, "|")

		// Without a definition (no --waba): nothing to compare with, but
		// nothing may panic either.
		for _, named := range []bool{false, true} {
			in.Named = named
			if m, err := template.New(in, nil); err == nil {
				m.Validate(cells)
				if _, err := json.Marshal(m.Components(cells)); err != nil {
					t.Fatalf("components do not marshal: %v", err)
				}
			}
		}

		defs, err := template.ParseDefinitions(definition)
		if err != nil {
			return
		}
		for _, def := range defs[:min(len(defs), 4)] {
			m, err := template.New(in, &def)
			if err != nil {
				continue
			}
			if err := m.Check(def); err != nil {
				t.Fatalf("New made a mapping against %s that Check refuses:\n%v\ncolumns %q, params %q", definition, err, in.Columns, in.Consts)
			}
			checkRow(t, def, m, cells)
			checkRow(t, def, m, goodRow(m))
		}
	})
}

// goodRow is a row with a good value in each column the mapping reads.
func goodRow(m *template.Mapping) []string {
	var cells []string
	for _, b := range m.Bindings {
		if b.Cell < 0 {
			continue
		}
		for len(cells) <= b.Cell {
			cells = append(cells, "")
		}
		cells[b.Cell] = goodValue(b.Slot)
	}
	return cells
}

// checkRow checks the components of a row Validate accepts.
func checkRow(t *testing.T, def template.Definition, m *template.Mapping, cells []string) {
	t.Helper()
	if m.Validate(cells) != "" {
		return
	}
	comps := m.Components(cells)
	b, err := json.Marshal(comps)
	if err != nil {
		t.Fatalf("components do not marshal: %v", err)
	}
	bodies, params := 0, 0
	for _, c := range comps {
		switch c.Type {
		case template.Body:
			bodies++
			params += len(c.Parameters)
		case template.Btn:
			if len(c.Index) != 1 || c.Index[0] < '0' || c.Index[0] > '9' {
				t.Errorf("button index %q, want 0 to 9: %s", c.Index, b)
			}
			// Meta's ButtonComponent requires a parameter: a button
			// given nothing is left out.
			if len(c.Parameters) != 1 {
				t.Errorf("button %s has %d parameters, want 1: %s", c.Index, len(c.Parameters), b)
			}
		}
		for _, p := range c.Parameters {
			if why := oneValue(p); why != "" {
				t.Errorf("%s parameter %s: %s", c.Type, mustMarshal(p), why)
			}
		}
	}
	if bodies > 1 {
		t.Errorf("%d body components: %s", bodies, b)
	}
	if want := len(def.BodyParams()); params != want {
		t.Errorf("body has %d parameters, the template %d (%q): %s\ndefinition %+v\nmapping %+v\ncells %q",
			params, want, def.BodyParams(), b, def, m, cells)
	}
}

// oneValue says what is wrong with p if it lacks the value its type names
// (Parameter's contract: exactly that one value field is set).
func oneValue(p template.Parameter) string {
	set := map[string]bool{
		"text": p.Text != "", "payload": p.Payload != "", "coupon_code": p.CouponCode != "",
		"image": p.Image != nil, "video": p.Video != nil, "document": p.Document != nil, "location": p.Location != nil,
		"action": p.Action != nil,
	}
	if !set[p.Type] {
		return "no " + p.Type
	}
	if a := p.Action; a != nil {
		if a.FlowToken == "" && a.FlowActionData == nil {
			return "an action with neither flow_token nor flow_action_data"
		}
		if a.FlowActionData != nil && flowDataBreaks(string(a.FlowActionData)) != "" {
			return "flow_action_data " + flowDataBreaks(string(a.FlowActionData))
		}
	}
	for k, ok := range set {
		if ok && k != p.Type {
			return "also " + k
		}
	}
	return ""
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// validateCase is a mapping with a row it accepts; FuzzValidate puts the
// fuzzed value in each of its cells in turn.
type validateCase struct {
	template, columns string
	cells             []string
}

var validateCases = []validateCase{
	{"spring_sale", "name,discount,header.image,button.0.url,button.1.payload", []string{"Ana", "20%", "https://cdn.example.com/a.jpg", "A1", "STOP"}},
	{"order_update", "first_name,order_id,ship_date,button.0.url", []string{"Ana", "A-1", "May 2", "A-1"}},
	{"fall_coupon", "header.text,code,discount,button.1.coupon", []string{"Fall Sale", "25OFF", "25%", "25OFF"}},
	{"login_code", "auth.code", []string{"123456"}},
	{"invoice_ready", "name,invoice,header.document,header.filename", []string{"Ana", "INV-1", "1339522734477770", "INV-1.pdf"}},
	{"store_visit", "order,header.latitude,header.longitude,header.name,header.address", []string{"A1", "52.52", "13.40", "Shop", "Main St 1"}},
	{"hello", "name", []string{"Ana"}},
	{"event_signup", "name,button.1.flow_token,button.1.flow_action_data,button.0.payload", []string{"Ana", "TOKEN-1", `{"first_name":"Ana"}`, "NO"}},
}

// FuzzValidate: no cell value may panic Validate or Components, and a
// value Validate accepts keeps Meta's rules for the slot it fills; for a
// text parameter: no line break, no tab, at most 4 spaces in a row.
func FuzzValidate(f *testing.F) {
	_, all := fuzzSeeds(f)
	defs := map[string]template.Definition{}
	for _, d := range all {
		defs[d.Name] = d
	}
	type mapped struct {
		m     *template.Mapping
		cells []string
	}
	var ms []mapped
	for _, c := range validateCases {
		def, ok := defs[c.template]
		if !ok {
			f.Fatalf("no definition %s in testdata", c.template)
		}
		m, err := template.New(template.Input{Columns: strings.Split(c.columns, ",")}, &def)
		if err != nil {
			f.Fatalf("%s: %v", c.template, err)
		}
		if why := m.Validate(c.cells); why != "" {
			f.Fatalf("%s: the good row is refused: %s", c.template, why)
		}
		ms = append(ms, mapped{m, c.cells})
		for _, v := range c.cells {
			f.Add(v)
		}
	}
	for _, v := range []string{"", " ", "a\nb", "a\r\nb", "a\tb", "a    b", "a     b", "é", strings.Repeat("x", 1025),
		"-90", "180.0", "91", "1e2", "https://", "https://x/ y", "0", "%", "ä",
		"{}", `{"a":1}`, `{"a":"\n"}`, "{\n\"a\": 1\n}", `["a"]`, `"a"`, "null", `{"a":1}{}`, `{"a":1,"a":2}`} {
		f.Add(v)
	}

	f.Fuzz(func(t *testing.T, v string) {
		for _, c := range ms {
			for _, b := range c.m.Bindings {
				cells := append([]string(nil), c.cells...)
				cells[b.Cell] = v
				why := c.m.Validate(cells)
				comps := c.m.Components(cells)
				if why != "" {
					continue
				}
				if _, err := json.Marshal(comps); err != nil {
					t.Fatalf("components do not marshal: %v", err)
				}
				if bad := breaks(c.m, b.Slot, v); bad != "" {
					t.Errorf("Validate accepts %q for %s: %s", v, b.Key(), bad)
				}
				for _, comp := range comps {
					for _, p := range comp.Parameters {
						if why := oneValue(p); why != "" {
							t.Errorf("%q for %s: %s parameter %s: %s", v, b.Key(), comp.Type, mustMarshal(p), why)
						}
					}
				}
			}
		}
	})
}

// breaks says which of Meta's rules for slot s an accepted value v breaks.
func breaks(m *template.Mapping, s template.Slot, v string) string {
	text := func(max int) string {
		switch {
		case strings.ContainsAny(v, "\r\n"):
			return "a line break"
		case strings.Contains(v, "\t"):
			return "a tab"
		case strings.Contains(v, "     "):
			return "5 spaces in a row"
		case utf8.RuneCountInString(v) > max:
			return fmt.Sprintf("longer than %d characters", max)
		}
		return ""
	}
	switch {
	case s.Part == template.Body:
		return text(m.BodyMax)
	case s.Part == template.Header && s.Kind == "text":
		return text(template.HeaderTextMax)
	case s.Part == template.Header && (s.Kind == "latitude" || s.Kind == "longitude"):
		limit := map[string]float64{"latitude": 90, "longitude": 180}[s.Kind]
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(f >= -limit && f <= limit) {
			return fmt.Sprintf("not a coordinate from -%g to %g", limit, limit)
		}
	case s.Part == template.Btn && s.Kind == "url", s.Part == template.Auth:
		if strings.ContainsAny(v, " \t\r\n") || strings.ContainsFunc(v, func(r rune) bool { return r >= utf8.RuneSelf }) {
			return "not something a URL carries as it is"
		}
	}
	if s.Part == template.Btn && s.Kind == "flow_action_data" && v != "" { // empty: no data sent
		return flowDataBreaks(v)
	}
	if s.Part == template.Auth || s.Part == template.Btn && s.Kind == "coupon" {
		if utf8.RuneCountInString(v) > template.CodeMax {
			return fmt.Sprintf("longer than %d characters", template.CodeMax)
		}
	}
	return ""
}

// flowDataBreaks says why v is not the text of a non-empty JSON object,
// decoded another way than the package does (into any, then a type switch).
func flowDataBreaks(v string) string {
	var x any
	if err := json.Unmarshal([]byte(v), &x); err != nil {
		return "not JSON"
	}
	obj, ok := x.(map[string]any)
	switch {
	case !ok:
		return "not a JSON object"
	case len(obj) == 0:
		return "an empty object"
	}
	return ""
}
