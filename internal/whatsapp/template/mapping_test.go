package template_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

func definitions(t testing.TB) map[string]template.Definition {
	t.Helper()
	b, err := os.ReadFile("testdata/definitions.json")
	if err != nil {
		t.Fatal(err)
	}
	defs, err := template.ParseDefinitions(b)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]template.Definition{}
	for _, d := range defs {
		m[d.Name] = d
	}
	return m
}

func TestParseDefinitions(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int
		err      string
	}{
		{"answer", `{"data":[{"name":"a","language":"en"}],"paging":{}}`, 1, ""},
		{"array", ` [{"name":"a","language":"en"},{"name":"a","language":"de"}]`, 2, ""},
		{"no language", `[{"name":"a"}]`, 0, "entry 1 has no name or language"},
		{"not json", `{"data":`, 0, "template definitions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defs, err := template.ParseDefinitions([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(defs) != tc.want {
				t.Fatalf("got %d, %v; want %d", len(defs), err, tc.want)
			}
		})
	}
}

func TestDefinitionParams(t *testing.T) {
	defs := definitions(t)
	for _, tc := range []struct {
		name    string
		body    string
		header  string
		buttons string
	}{
		{"spring_sale", "1,2", "", "url,payload"},
		{"order_update", "first_name,order_id,ship_date", "", "url"},
		{"login_code", "1", "", "code"},
		{"fall_coupon", "1,2", "1", "payload,coupon"},
		{"event_named", "first_name", "event", ""},
		{"flow_offer", "", "", "flow"},
		{"event_signup", "1", "", "payload,flow"},
		{"catalog_offer", "", "", "unsupported:CATALOG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := defs[tc.name]
			if got := strings.Join(d.BodyParams(), ","); got != tc.body {
				t.Errorf("BodyParams = %q, want %q", got, tc.body)
			}
			if got := strings.Join(d.HeaderParams(), ","); got != tc.header {
				t.Errorf("HeaderParams = %q, want %q", got, tc.header)
			}
			var needs []string
			for i := range d.Buttons() {
				needs = append(needs, d.ButtonNeeds(i))
			}
			if got := strings.Join(needs, ","); got != tc.buttons {
				t.Errorf("ButtonNeeds = %q, want %q", got, tc.buttons)
			}
		})
	}
	if got := template.Placeholders("{{10}} {{2}} {{ 1 }} {{2}}"); strings.Join(got, ",") != "10,2,1" {
		t.Errorf("Placeholders = %v", got)
	}
}

func TestTemplatesFind(t *testing.T) {
	var ts template.Templates
	b, _ := os.ReadFile("testdata/definitions.json")
	if err := json.Unmarshal(b, &ts); err != nil {
		t.Fatal(err)
	}
	if d, ok := ts.Find("spring_sale", "en_US"); !ok || d.ID != "100001" {
		t.Errorf("Find(spring_sale, en_US) = %v, %v", d.ID, ok)
	}
	if _, ok := ts.Find("spring", "en_US"); ok {
		t.Error("Find matched part of a name")
	}
	if _, ok := ts.Find("spring_sale", "en"); ok {
		t.Error("Find matched another language")
	}
}

// TestNewAgainstDefinition covers each kind of gap between a CSV and the
// approved template, and the mappings that fit.
func TestNewAgainstDefinition(t *testing.T) {
	defs := definitions(t)
	for _, tc := range []struct {
		name     string
		template string
		columns  string
		consts   []template.Const
		ignore   []string
		want     []string // substrings of the problems, in order; nil: fits
	}{
		{name: "marketing fits", template: "spring_sale", columns: "name,discount,header.image,button.0.url"},
		{name: "marketing fits, image given once", template: "spring_sale", columns: "name,discount,button.0.url,button.1.payload",
			consts: []template.Const{{Key: "header.image", Value: "https://cdn.example.com/spring.jpg"}}},
		{name: "named fits in any order", template: "order_update", columns: "Order_ID,first_name,ship_date,button.0.url"},
		{name: "auth fits", template: "login_code", columns: "auth.code"},
		{name: "coupon fits", template: "fall_coupon", columns: "header.text,code,discount,button.1.coupon"},
		{name: "video", template: "summer_teaser", columns: "name,header.video"},
		{name: "document with name", template: "invoice_ready", columns: "name,invoice,header.document,header.filename"},
		{name: "location", template: "store_visit", columns: "order,header.latitude,header.longitude,header.name,header.address"},
		{name: "named header", template: "event_named", columns: "first_name,header.text"},
		{name: "ignored column", template: "hello", columns: "name,notes", ignore: []string{"NOTES"}},

		{name: "placeholder without column", template: "spring_sale", columns: "name,header.image,button.0.url",
			want: []string{"body {{2}} has no column"}},
		{name: "column the template lacks", template: "hello", columns: "name,notes",
			want: []string{`the CSV has 2 body columns ("name", "notes"), the template's body one parameter: leave out the columns it does not use with {ignore-column}`}},
		{name: "named column the template lacks", template: "order_update", columns: "first_name,order_id,ship_date,first_nmae,button.0.url",
			want: []string{`column "first_nmae": the template's body has no {{first_nmae}}`}},
		{name: "named placeholder without column", template: "order_update", columns: "first_name,ship_date,button.0.url",
			want: []string{"body {{order_id}} has no column: add a order_id column, or {param} order_id=…"}},
		{name: "media header got text", template: "spring_sale", columns: "name,discount,header.text,button.0.url",
			want: []string{`column "header.text": the template's header is IMAGE, not TEXT: use header.image`}},
		{name: "media header missing", template: "spring_sale", columns: "name,discount,button.0.url",
			want: []string{"the template's header is IMAGE: it needs a header.image column"}},
		{name: "header the template lacks", template: "hello", columns: "name,header.image",
			want: []string{`column "header.image": the template has no header`}},
		{name: "static header", template: "order_update", columns: "first_name,order_id,ship_date,button.0.url,header.text",
			want: []string{"the template has a text header without parameters"}},
		{name: "button index the template lacks", template: "spring_sale", columns: "name,discount,header.image,button.0.url,button.2.payload",
			want: []string{`column "button.2.payload": the template has 2 buttons (index 0 to 1)`}},
		{name: "button of another kind", template: "spring_sale", columns: "name,discount,header.image,button.0.payload",
			want: []string{`column "button.0.payload": button 0 is a URL button`, "button 0 is a URL button (https://shop.example.com/spring?c={{1}}): it needs a button.0.url column"}},
		{name: "copy code missing", template: "fall_coupon", columns: "header.text,code,discount",
			want: []string{"button 1 is a copy-code button: it needs a button.1.coupon column"}},
		{name: "auth without code", template: "login_code", columns: "code",
			want: []string{`column "code": an authentication template takes only its code, in an auth.code column`, "its code goes in an auth.code column"}},
		{name: "code on a marketing template", template: "hello", columns: "name,auth.code",
			want: []string{`column "name": an authentication template takes only its code (column "auth.code")`, `column "auth.code": the template is utility, not an authentication template`}},
		{name: "unsupported button", template: "catalog_offer", columns: "",
			want: []string{"button 0 is a CATALOG button, which bulksend cannot fill"}},
		{name: "unsupported button given a value", template: "catalog_offer", columns: "button.0.payload",
			want: []string{`column "button.0.payload": button 0 is a CATALOG button, which bulksend cannot fill`, "button 0 is a CATALOG button, which bulksend cannot fill"}},

		// Flow buttons: both values optional, given by column or --param.
		{name: "flow button without values", template: "flow_offer"},
		{name: "flow token", template: "flow_offer", columns: "button.0.flow_token"},
		{name: "flow data", template: "flow_offer", columns: "button.0.flow_action_data"},
		{name: "flow token and data", template: "flow_offer", columns: "button.0.flow_token,button.0.flow_action_data"},
		{name: "flow token column, data once", template: "event_signup", columns: "name,button.1.flow_token,button.0.payload",
			consts: []template.Const{{Key: "button.1.flow_action_data", Value: `{"source":"spring"}`}}},
		{name: "flow token once", template: "event_signup", columns: "name",
			consts: []template.Const{{Key: "button.1.flow_token", Value: "OPEN-DAY-2026"}}},
		{name: "flow data once, not an object", template: "flow_offer",
			consts: []template.Const{{Key: "button.0.flow_action_data", Value: `["spring"]`}},
			want:   []string{"{param} button.0.flow_action_data: is not a JSON object but a JSON array"}},
		{name: "flow data once, empty object", template: "flow_offer",
			consts: []template.Const{{Key: "button.0.flow_action_data", Value: `{}`}},
			want:   []string{"{param} button.0.flow_action_data: is an empty JSON object"}},
		{name: "flow value for a quick reply", template: "event_signup", columns: "name,button.0.flow_token",
			want: []string{`column "button.0.flow_token": button 0 is a quick-reply button: use button.0.payload`}},
		{name: "payload for a flow button", template: "event_signup", columns: "name,button.1.payload",
			want: []string{`column "button.1.payload": button 1 is a Flow button: use button.1.flow_token and button.1.flow_action_data (both optional)`}},
		{name: "url for a flow button", template: "flow_offer", columns: "button.0.url",
			want: []string{`column "button.0.url": button 0 is a Flow button: use button.0.flow_token`}},
		{name: "flow button index the template lacks", template: "flow_offer", columns: "button.1.flow_token",
			want: []string{`column "button.1.flow_token": the template has one button (index 0)`}},
		{name: "flow value on a url button", template: "spring_sale", columns: "name,discount,header.image,button.0.flow_action_data",
			want: []string{`column "button.0.flow_action_data": button 0 is a URL button (https://shop.example.com/spring?c={{1}}): use button.0.url`, "it needs a button.0.url column"}},
		{name: "unknown ignore", template: "hello", columns: "name", ignore: []string{"nmae"},
			want: []string{`{ignore-column} "nmae": the CSV has no such column`}},
		{name: "positional constant", template: "hello", consts: []template.Const{{Key: "name", Value: "x"}},
			want: []string{"{param} name: a positional template's body parameters take their place from their column's order", "body {{1}} has no column"}},
		{name: "bad constant", template: "spring_sale", columns: "name,discount,button.0.url",
			consts: []template.Const{{Key: "header.image", Value: "http://cdn.example.com/a.jpg"}},
			want:   []string{"{param} header.image: is neither an https link nor an uploaded media ID"}},
		{name: "column and constant", template: "spring_sale", columns: "name,discount,header.image,button.0.url",
			consts: []template.Const{{Key: "header.image", Value: "12345"}},
			want:   []string{`column "header.image" and {param} header.image both fill header.image`}},
		{name: "named column not a name", template: "order_update", columns: "First Name,order_id,ship_date,button.0.url",
			want: []string{`column "First Name": a named template's parameters are lowercase letters`, "{{first_name}} has no column"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def, ok := defs[tc.template]
			if !ok {
				t.Fatalf("no definition %s", tc.template)
			}
			in := template.Input{Columns: split(tc.columns), Consts: tc.consts, Ignore: tc.ignore}
			m, err := template.New(in, &def)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if err := m.Check(def); err != nil {
					t.Fatalf("Check of the mapping New made: %v", err)
				}
				return
			}
			var probs template.Problems
			if !errors.As(err, &probs) {
				t.Fatalf("err = %v, want Problems %q", err, tc.want)
			}
			if len(probs) != len(tc.want) {
				t.Fatalf("problems:\n%v\nwant %d: %q", err, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(probs[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, probs[i], w)
				}
			}
		})
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func TestNotApproved(t *testing.T) {
	def := definitions(t)["autumn_sale"]
	_, err := template.New(template.Input{Columns: []string{"name"}}, &def)
	if !errors.Is(err, template.ErrNotApproved) || !strings.Contains(err.Error(), "autumn_sale/en_US is PAUSED") {
		t.Fatalf("New = %v, want ErrNotApproved naming the status", err)
	}
	m, err := template.New(template.Input{Columns: []string{"name"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Check(def); !errors.Is(err, template.ErrNotApproved) {
		t.Fatalf("Check = %v, want ErrNotApproved", err)
	}
}

// TestNewWithoutDefinition is the check an operator without --waba gets:
// the mapping is consistent in itself.
func TestNewWithoutDefinition(t *testing.T) {
	for _, tc := range []struct {
		name    string
		columns string
		named   bool
		want    string
	}{
		{name: "positional", columns: "name,code"},
		{name: "everything", columns: "a,header.document,header.filename,button.0.url,button.1.payload,button.2.coupon"},
		{name: "named", columns: "first_name", named: true},
		{name: "unknown header key", columns: "header.imgae", want: `column "header.imgae": a header column is one of header.text, header.image`},
		{name: "bad button", columns: "button.10.url", want: "a button column is button.N.url"},
		{name: "bad button kind", columns: "button.1.link", want: "a button column is button.N.url"},
		{name: "body prefix", columns: "body.1", want: `"body.1": body parameters are plain columns`},
		{name: "auth key", columns: "auth.otp", want: "the authentication code's column is auth.code"},
		{name: "two headers", columns: "header.image,header.video", want: `column "header.image" and column "header.video": a template has one header`},
		{name: "filename alone", columns: "header.image,header.filename", want: "a file name goes with header.document"},
		{name: "half a location", columns: "header.latitude", want: "needs both header.latitude and header.longitude"},
		{name: "button twice", columns: "button.1.url,button.1.payload", want: "button 1 is one button"},
		{name: "flow token and data fill one button", columns: "button.1.flow_token,button.1.flow_action_data"},
		{name: "flow token beside a payload", columns: "button.1.flow_token,button.1.payload", want: `column "button.1.flow_token" and column "button.1.payload": button 1 is one button`},
		{name: "flow token twice", columns: "button.1.flow_token,Button.1.Flow_Token", want: "both fill button.1.flow_token"},
		{name: "flow kind mistyped", columns: "button.0.flowtoken", want: "(did you mean button.0.flow_token?)"},
		{name: "flow key named", columns: "button.0.flow", want: "button.N.flow_token or button.N.flow_action_data"},
		{name: "named header without definition", columns: "header.text", named: true, want: "pass {waba}"},
		{name: "other dotted name", columns: "addr.line1", want: `"addr.line1": a name with a dot is one of header.…, button.N.… or auth.code`},
		{name: "mistyped prefix", columns: "buttons.0.url", want: `"buttons.0.url": a name with a dot is one of header.…, button.N.… or auth.code (did you mean button.0.url?)`},
		{name: "mistyped header", columns: "heder.image", want: "(did you mean header.image?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := template.New(template.Input{Columns: split(tc.columns), Named: tc.named}, nil)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				// Every column found its place.
				if len(m.Bindings) != len(split(tc.columns)) {
					t.Fatalf("%d bindings for columns %q: %+v", len(m.Bindings), tc.columns, m.Bindings)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	defs := definitions(t)
	mapping := func(name, columns string) *template.Mapping {
		def := defs[name]
		m, err := template.New(template.Input{Columns: split(columns)}, &def)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	spring := mapping("spring_sale", "name,discount,header.image,button.0.url,button.1.payload")
	hello := mapping("hello", "name")
	coupon := mapping("fall_coupon", "header.text,code,discount,button.1.coupon")
	auth := mapping("login_code", "auth.code")
	doc := mapping("invoice_ready", "name,invoice,header.document,header.filename")
	loc := mapping("store_visit", "order,header.latitude,header.longitude,header.name,header.address")
	flow := mapping("event_signup", "name,button.1.flow_token,button.1.flow_action_data")
	long1025 := strings.Repeat("é", 1025)
	for _, tc := range []struct {
		name  string
		m     *template.Mapping
		cells []string
		want  string
	}{
		{"ok", spring, []string{"Ana", "20%", "https://cdn.example.com/a.jpg", "A1", ""}, ""},
		{"media id", spring, []string{"Ana", "20%", "1339522734477770", "A1", "STOP"}, ""},
		{"empty body", spring, []string{"", "20%", "https://cdn.example.com/a.jpg", "A1", ""}, `column "name": is empty`},
		{"newline", spring, []string{"Ana\nB", "20%", "https://cdn.example.com/a.jpg", "A1", ""}, `column "name": has a line break`},
		{"tab", spring, []string{"Ana", "20\t%", "https://cdn.example.com/a.jpg", "A1", ""}, `column "discount": has a tab`},
		{"five spaces", spring, []string{"Ana     B", "20%", "https://cdn.example.com/a.jpg", "A1", ""}, "more than 4 spaces in a row"},
		{"four spaces", spring, []string{"Ana    B", "20%", "https://cdn.example.com/a.jpg", "A1", ""}, ""},
		{"http link", spring, []string{"Ana", "20%", "http://cdn.example.com/a.jpg", "A1", ""}, `column "header.image": is neither an https link nor an uploaded media ID`},
		{"url suffix space", spring, []string{"Ana", "20%", "https://cdn.example.com/a.jpg", "A 1", ""}, `column "button.0.url": has ' ', which a URL cannot carry`},
		{"url suffix unicode", spring, []string{"Ana", "20%", "https://cdn.example.com/a.jpg", "café", ""}, `has 'é'`},
		{"url suffix escaped", spring, []string{"Ana", "20%", "https://cdn.example.com/a.jpg", "caf%C3%A9?x=1&y=2", ""}, ""},
		{"body 1024 with other components", spring, []string{long1025[:1024*2], "x", "12", "a", ""}, ""},
		{"body over 1024 with other components", spring, []string{long1025, "x", "12", "a", ""}, "is 1025 characters long: Meta takes at most 1024 in a body parameter"},
		{"body alone takes more", hello, []string{long1025}, ""},
		{"header text 60", coupon, []string{strings.Repeat("a", 60), "C", "5%", "25OFF"}, ""},
		{"header text 61", coupon, []string{strings.Repeat("a", 61), "C", "5%", "25OFF"}, `column "header.text": is 61 characters long: Meta takes at most 60 in a header parameter`},
		{"coupon 16", coupon, []string{"Sale", "C", "5%", "1234567890123456"}, `column "button.1.coupon": is 16 characters long: Meta takes at most 15 in a coupon code`},
		{"auth ok", auth, []string{"J$FpnYnP"}, ""},
		{"auth too long", auth, []string{"1234567890123456"}, "at most 15 in an authentication code"},
		{"auth space", auth, []string{"12 34"}, "which a URL cannot carry"},
		{"document without name", doc, []string{"Ana", "INV-1", "https://cdn.example.com/i.pdf", ""}, ""},
		{"location", loc, []string{"A1", "52.52", "-13.4", "", ""}, ""},
		{"location integers", loc, []string{"A1", "+52", "13", "", ""}, ""},
		{"latitude NaN", loc, []string{"A1", "nAn", "13.4", "", ""}, "in decimal degrees"},
		{"latitude exponent", loc, []string{"A1", "1e1", "13.4", "", ""}, "in decimal degrees"},
		{"latitude hex", loc, []string{"A1", "0x1p-2", "13.4", "", ""}, "in decimal degrees"},
		{"latitude underscore", loc, []string{"A1", "1_0", "13.4", "", ""}, "in decimal degrees"},
		{"latitude trailing dot", loc, []string{"A1", "10.", "13.4", "", ""}, "in decimal degrees"},
		{"url suffix lone percent", spring, []string{"Ana", "20%", "https://cdn.example.com/a.jpg", "50%", ""}, "has a '%' that starts no escape"},
		{"url suffix bad escape", spring, []string{"Ana", "20%", "https://cdn.example.com/a.jpg", "a%zz", ""}, "has a '%' that starts no escape"},
		{"coupon not alphanumeric", coupon, []string{"Sale", "C", "5%", "25-OFF"}, "letters and digits only"},
		{"latitude out of range", loc, []string{"A1", "91", "13.4", "", ""}, `column "header.latitude": is not a coordinate from -90 to 90 in decimal degrees`},
		{"longitude not a number", loc, []string{"A1", "52.5", "east", "", ""}, `column "header.longitude": is not a coordinate from -180 to 180`},
		{"short row", hello, nil, `column "name": is empty`},
		{"escape sequence in body", spring, []string{"Ana\x1b[2J", "20%", "https://cdn.example.com/a.jpg", "A1", ""}, `column "name": has a control character (U+001B)`},
		{"NUL in body", spring, []string{"Ana", "20\x00%", "https://cdn.example.com/a.jpg", "A1", ""}, `column "discount": has a control character (U+0000)`},
		{"BEL in button payload", spring, []string{"Ana", "20%", "https://cdn.example.com/a.jpg", "A1", "STOP\a"}, `has a control character (U+0007)`},
		{"C1 in body", spring, []string{"Ana\u0085", "20%", "https://cdn.example.com/a.jpg", "A1", ""}, `column "name": has a control character (U+0085)`},
		{"DEL in file name", doc, []string{"Ana", "INV-1", "https://cdn.example.com/i.pdf", "a\x7f.pdf"}, `column "header.filename": has a control character (U+007F)`},
		{"tab in file name", doc, []string{"Ana", "INV-1", "https://cdn.example.com/i.pdf", "a\t.pdf"}, `column "header.filename": has a control character (U+0009)`},

		// Flow buttons.
		{"flow token and data", flow, []string{"Ana", "TOKEN-1", `{"first_name":"Ana","seats":2,"vip":true,"tags":["a"],"more":{"k":null}}`}, ""},
		{"flow token only", flow, []string{"Ana", "TOKEN-1", ""}, ""},
		{"flow data only", flow, []string{"Ana", "", `{"first_name":"Ana"}`}, ""},
		{"flow button given nothing", flow, []string{"Ana", "", ""}, ""},
		{"flow data pretty-printed", flow, []string{"Ana", "", "{\n\t\"first_name\": \"Ana\"\r\n}"}, ""},
		{"flow data not JSON", flow, []string{"Ana", "", `{first_name: Ana}`}, `column "button.1.flow_action_data": is not a JSON object (invalid character 'f' looking for beginning of object key string at byte 2): write the Flow's data as a JSON object, e.g. {"first_name":"Ana"}`},
		{"flow data cut short", flow, []string{"Ana", "", `{"first_name":"Ana"`}, `column "button.1.flow_action_data": is not a JSON object (unexpected end of JSON input at byte`},
		{"flow data with quotes Excel doubled", flow, []string{"Ana", "", `{""first_name"":""Ana""}`}, "is not a JSON object (invalid character"},
		{"flow data a string", flow, []string{"Ana", "", `"Ana"`}, "is not a JSON object but a JSON string"},
		{"flow data an array", flow, []string{"Ana", "", ` [{"a":1}]`}, "is not a JSON object but a JSON array"},
		{"flow data a number", flow, []string{"Ana", "", `12`}, "is not a JSON object but a JSON number"},
		{"flow data null", flow, []string{"Ana", "", `null`}, "is not a JSON object but null"},
		{"flow data true", flow, []string{"Ana", "", `true`}, "is not a JSON object but a JSON boolean"},
		{"flow data empty object", flow, []string{"Ana", "", ` { } `}, `column "button.1.flow_action_data": is an empty JSON object: leave the cell empty to send the Flow no data`},
		{"flow data two objects", flow, []string{"Ana", "", `{"a":1}{"b":2}`}, "is not a JSON object (invalid character '{' after top-level value"},
		{"flow data with an escape sequence", flow, []string{"Ana", "", "{\"a\":\"\x1b[2J\"}"}, "is not a JSON object (invalid character"},
		{"flow data with C1 in a string", flow, []string{"Ana", "", "{\"a\":\"\u0085\"}"}, `column "button.1.flow_action_data": has a control character (U+0085)`},
		{"flow token with a line break", flow, []string{"Ana", "TOKEN\n1", ""}, `column "button.1.flow_token": has a control character (U+000A)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.m.Validate(tc.cells)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Fatalf("Validate = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestComponents(t *testing.T) {
	defs := definitions(t)
	for _, tc := range []struct {
		template string
		columns  string
		consts   []template.Const
		cells    []string
		want     string
	}{
		{"spring_sale", "name,discount,button.0.url,button.1.payload", []template.Const{{Key: "header.image", Value: "https://cdn.example.com/s.jpg"}},
			[]string{"Ana", "20%", "A1", "STOP"},
			`[{"type":"header","parameters":[{"type":"image","image":{"link":"https://cdn.example.com/s.jpg"}}]},{"type":"body","parameters":[{"type":"text","text":"Ana"},{"type":"text","text":"20%"}]},{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"A1"}]},{"type":"button","sub_type":"quick_reply","index":"1","parameters":[{"type":"payload","payload":"STOP"}]}]`},
		{"spring_sale", "button.1.payload,button.0.url,name,discount,header.image", nil,
			[]string{"", "A1", "Ana", "20%", "77"},
			`[{"type":"header","parameters":[{"type":"image","image":{"id":"77"}}]},{"type":"body","parameters":[{"type":"text","text":"Ana"},{"type":"text","text":"20%"}]},{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"A1"}]}]`},
		{"order_update", "ship_date,first_name,order_id,button.0.url", nil,
			[]string{"May 2", "Ana", "A-1", "A-1"},
			`[{"type":"body","parameters":[{"type":"text","parameter_name":"ship_date","text":"May 2"},{"type":"text","parameter_name":"first_name","text":"Ana"},{"type":"text","parameter_name":"order_id","text":"A-1"}]},{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"A-1"}]}]`},
		{"login_code", "auth.code", nil, []string{"123456"},
			`[{"type":"body","parameters":[{"type":"text","text":"123456"}]},{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"123456"}]}]`},
		{"fall_coupon", "code,discount,button.1.coupon", []template.Const{{Key: "header.text", Value: "Fall Sale"}}, []string{"25OFF", "25%", "25OFF"},
			`[{"type":"header","parameters":[{"type":"text","text":"Fall Sale"}]},{"type":"body","parameters":[{"type":"text","text":"25OFF"},{"type":"text","text":"25%"}]},{"type":"button","sub_type":"copy_code","index":"1","parameters":[{"type":"coupon_code","coupon_code":"25OFF"}]}]`},
		{"summer_teaser", "name,header.video", nil, []string{"Ana", "https://cdn.example.com/v.mp4"},
			`[{"type":"header","parameters":[{"type":"video","video":{"link":"https://cdn.example.com/v.mp4"}}]},{"type":"body","parameters":[{"type":"text","text":"Ana"}]}]`},
		{"invoice_ready", "name,invoice,header.document,header.filename", nil, []string{"Ana", "INV-1", "https://cdn.example.com/i.pdf", "INV-1.pdf"},
			`[{"type":"header","parameters":[{"type":"document","document":{"link":"https://cdn.example.com/i.pdf","filename":"INV-1.pdf"}}]},{"type":"body","parameters":[{"type":"text","text":"Ana"},{"type":"text","text":"INV-1"}]}]`},
		{"store_visit", "order,header.latitude,header.longitude,header.name,header.address", nil, []string{"A1", " 52.52", "13.40", "Shop", "Main St 1"},
			`[{"type":"header","parameters":[{"type":"location","location":{"latitude":"52.52","longitude":"13.40","name":"Shop","address":"Main St 1"}}]},{"type":"body","parameters":[{"type":"text","text":"A1"}]}]`},
		{"event_named", "first_name,header.text", nil, []string{"Ana", "Launch"},
			`[{"type":"header","parameters":[{"type":"text","parameter_name":"event","text":"Launch"}]},{"type":"body","parameters":[{"type":"text","parameter_name":"first_name","text":"Ana"}]}]`},
		// Flow buttons: the token and the data share one action parameter;
		// the data is the object the cell writes, compacted.
		{"event_signup", "name,button.1.flow_action_data,button.1.flow_token,button.0.payload", nil, []string{"Ana", "{ \"first_name\": \"Ana\",\n \"seats\": [1, 2] }", "TOKEN-1", "NO"},
			`[{"type":"body","parameters":[{"type":"text","text":"Ana"}]},{"type":"button","sub_type":"quick_reply","index":"0","parameters":[{"type":"payload","payload":"NO"}]},{"type":"button","sub_type":"flow","index":"1","parameters":[{"type":"action","action":{"flow_token":"TOKEN-1","flow_action_data":{"first_name":"Ana","seats":[1,2]}}}]}]`},
		{"event_signup", "name,button.1.flow_token", nil, []string{"Ana", "TOKEN-1"},
			`[{"type":"body","parameters":[{"type":"text","text":"Ana"}]},{"type":"button","sub_type":"flow","index":"1","parameters":[{"type":"action","action":{"flow_token":"TOKEN-1"}}]}]`},
		{"event_signup", "name,button.1.flow_token", []template.Const{{Key: "button.1.flow_action_data", Value: `{"source": "spring"}`}}, []string{"Ana", ""},
			`[{"type":"body","parameters":[{"type":"text","text":"Ana"}]},{"type":"button","sub_type":"flow","index":"1","parameters":[{"type":"action","action":{"flow_action_data":{"source":"spring"}}}]}]`},
		// Nothing for the Flow button in this row: no button component.
		{"event_signup", "name,button.1.flow_token,button.1.flow_action_data", nil, []string{"Ana", "", ""},
			`[{"type":"body","parameters":[{"type":"text","text":"Ana"}]}]`},
		{"flow_offer", "", nil, nil, `null`},
	} {
		t.Run(tc.template, func(t *testing.T) {
			def := defs[tc.template]
			m, err := template.New(template.Input{Columns: split(tc.columns), Consts: tc.consts}, &def)
			if err != nil {
				t.Fatal(err)
			}
			if why := m.Validate(tc.cells); why != "" {
				t.Fatalf("Validate: %s", why)
			}
			// The mapping survives the checkpoint: stored as JSON, read back.
			b, _ := json.Marshal(m)
			var back template.Mapping
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(back.Components(tc.cells))
			if string(got) != tc.want {
				t.Errorf("components\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestPositional(t *testing.T) {
	m := template.Positional([]string{"Name", "code"})
	got, _ := json.Marshal(m.Components([]string{"Ana", "X1"}))
	if want := `[{"type":"body","parameters":[{"type":"text","text":"Ana"},{"type":"text","text":"X1"}]}]`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, _ := json.Marshal(template.Positional(nil).Components(nil)); string(got) != "null" {
		t.Errorf("no columns: %s, want no components", got)
	}
	if s := m.Summary("--param"); s != "body {{1}} ← Name; body {{2}} ← code" {
		t.Errorf("Summary = %q", s)
	}
}

// TestSummary: the plan's mapping line names each slot and what fills it,
// a Flow button's token and data among them.
func TestSummary(t *testing.T) {
	defs := definitions(t)
	for _, tc := range []struct {
		template, columns string
		consts            []template.Const
		ignore            []string
		want              string
	}{
		{"event_signup", "name,Flow Token,button.1.flow_token", []template.Const{{Key: "button.1.flow_action_data", Value: `{"source":"spring"}`}}, []string{"flow token"},
			"body {{1}} ← name; button.1.flow_token ← button.1.flow_token; button.1.flow_action_data ← --param; ignored: flow token"},
		{"flow_offer", "button.0.flow_action_data", nil, nil, "button.0.flow_action_data ← button.0.flow_action_data"},
		{"flow_offer", "", nil, nil, "no parameters"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			def := defs[tc.template]
			m, err := template.New(template.Input{Columns: split(tc.columns), Consts: tc.consts, Ignore: tc.ignore}, &def)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Summary("--param"); got != tc.want {
				t.Errorf("Summary = %q, want %q", got, tc.want)
			}
		})
	}
}
