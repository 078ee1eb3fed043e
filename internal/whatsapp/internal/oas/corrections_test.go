package oas

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// parsed is Meta's document as parsed, before any correction, shared by
// the tests that build Specs with fewer corrections: parsing takes most of
// a second under -race.
var parsed struct {
	once sync.Once
	abs  string
	doc  map[string]any
	err  error
}

// specWith loads the repository's copy of Meta's document with only cs
// applied.
func specWith(t *testing.T, cs []correction) *Spec {
	t.Helper()
	path := load(t).Path()
	parsed.once.Do(func() { parsed.abs, parsed.doc, parsed.err = parseFile(path) })
	if parsed.err != nil {
		t.Fatal(parsed.err)
	}
	s, err := newSpec(parsed.abs, deepCopy(parsed.doc).(map[string]any), cs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = deepCopy(e)
		}
		return a
	}
	return v
}

// templateMessage is a send request with the given template components.
func templateMessage(components string) []byte {
	return []byte(`{"messaging_product":"whatsapp","recipient_type":"individual","to":"16505551234","type":"template",
	  "template":{"name":"t","language":{"policy":"deterministic","code":"en_US"},"components":[` + components + `]}}`)
}

// Shapes Meta documents, which its schemas reject.
const (
	// Messages API reference: index 0 to 9. Authentication templates send
	// the code in the URL button at index 0.
	urlButton0 = `{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"123456"}]}`
	// Coupon code templates.
	copyCode = `{"type":"button","sub_type":"copy_code","index":"1","parameters":[{"type":"coupon_code","coupon_code":"25OFF"}]}`
	// Flows templates; the document's own example "Send Flow Template
	// Message".
	flowButton = `{"type":"button","sub_type":"flow","index":"0","parameters":[{"type":"action",
	  "action":{"flow_token":"SIGNUP-1","flow_action_data":{"first_name":"Ana"}}}]}`
	// Location templates.
	locationHeader = `{"type":"header","parameters":[{"type":"location","location":
	  {"latitude":"52.520008","longitude":"13.404954","name":"Alexanderplatz","address":"10178 Berlin"}}]}`
)

// TestCorrectionsNeeded shows each correction is needed: without it (and
// with every other one) the shape Meta documents is rejected, for the
// reason the correction fixes; with all of them it is accepted.
func TestCorrectionsNeeded(t *testing.T) {
	tests := []struct {
		pointer string
		body    string
		why     string // in the error without the correction
	}{
		{schemas + "TemplateComponent/properties/index/pattern", urlButton0, "does not match pattern"},
		{schemas + "ButtonComponent/allOf/1/properties/index/pattern", urlButton0, "does not match pattern"},
		{schemas + "TemplateComponent/properties/sub_type/enum", copyCode, "value must be one of"},
		{schemas + "ButtonComponent/allOf/1/properties/sub_type/enum", copyCode, "value must be one of"},
		{schemas + "ButtonParameterObject/properties/type/enum", copyCode, "value must be one of"},
		{schemas + "ButtonParameterObject/discriminator/mapping/coupon_code", copyCode, `type "coupon_code" has no schema in ButtonParameterObject's discriminator mapping`},
		{schemas + "ButtonCouponCodeParameter", copyCode, `unknown schema "ButtonCouponCodeParameter"`},
		{schemas + "ButtonParameterObject/discriminator/mapping/action", flowButton, `type "action" has no schema in ButtonParameterObject's discriminator mapping`},
		{schemas + "ButtonActionParameter", flowButton, `unknown schema "ButtonActionParameter"`},
		{schemas + "ParameterObject/properties/type/enum", locationHeader, "value must be one of"},
		{schemas + "ParameterObject/discriminator/mapping/location", locationHeader, `type "location" has no schema in ParameterObject's discriminator mapping`},
		{schemas + "LocationParameter", locationHeader, `unknown schema "LocationParameter"`},
	}
	var covered []string
	for _, tt := range tests {
		covered = append(covered, tt.pointer)
	}
	for _, c := range corrections {
		if !slices.Contains(covered, c.Pointer) {
			t.Errorf("correction %s has no case here showing it is needed", c.Pointer)
		}
	}

	all := load(t)
	none := specWith(t, nil)
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.pointer, schemas), func(t *testing.T) {
			body := templateMessage(tt.body)
			if err := all.ValidateTemplateMessage(body); err != nil {
				t.Fatalf("with the corrections: %v", err)
			}
			if err := none.ValidateTemplateMessage(body); err == nil {
				t.Error("Meta's uncorrected document accepts it")
			}
			i := slices.IndexFunc(corrections, func(c correction) bool { return c.Pointer == tt.pointer })
			if i < 0 {
				t.Fatalf("no correction %s", tt.pointer)
			}
			without := specWith(t, slices.Delete(slices.Clone(corrections), i, i+1))
			err := without.ValidateTemplateMessage(body)
			if err == nil || !strings.Contains(err.Error(), tt.why) {
				t.Errorf("without this correction: %v\nwant an error with %q", err, tt.why)
			}
		})
	}
}

// TestCorrectionsStillReject shows the corrections let through what Meta
// documents and no more.
func TestCorrectionsStillReject(t *testing.T) {
	s := load(t)
	tests := []struct {
		name       string
		components string
		want       string // in the error; "" for valid
	}{
		{"index 9", `{"type":"button","sub_type":"quick_reply","index":"9","parameters":[{"type":"payload","payload":"P"}]}`, ""},
		{"index 10", `{"type":"button","sub_type":"quick_reply","index":"10","parameters":[{"type":"payload","payload":"P"}]}`, `'10' does not match pattern '^[0-9]$'`},
		{"index as a number", `{"type":"button","sub_type":"quick_reply","index":0,"parameters":[{"type":"payload","payload":"P"}]}`, `at '/template/components/0/index': got number, want string`},
		{"index in a list", `{"type":"button","sub_type":"quick_reply","index":"0, 1","parameters":[{"type":"payload","payload":"P"}]}`, `'0, 1' does not match pattern`},
		{"sub_type coupon", `{"type":"button","sub_type":"coupon","index":"0","parameters":[{"type":"coupon_code","coupon_code":"25OFF"}]}`, `at '/template/components/0/sub_type': value must be one of`},
		{"coupon_code parameter without coupon_code", `{"type":"button","sub_type":"copy_code","index":"0","parameters":[{"type":"coupon_code","text":"25OFF"}]}`, `missing property 'coupon_code'`},
		{"coupon code as a number", `{"type":"button","sub_type":"copy_code","index":"0","parameters":[{"type":"coupon_code","coupon_code":25}]}`, `at '/coupon_code': got number, want string`},
		{"coupon_code in the body", `{"type":"body","parameters":[{"type":"coupon_code","coupon_code":"25OFF"}]}`, `at '/parameters/0/type': value must be one of 'currency'`},
		{"location in a button", `{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"location","location":{"latitude":"1","longitude":"2"}}]}`, `at '/parameters/0/type': value must be one of 'payload'`},
		{"flow token only", `{"type":"button","sub_type":"flow","index":"0","parameters":[{"type":"action","action":{"flow_token":"T"}}]}`, ""},
		{"flow data only", `{"type":"button","sub_type":"flow","index":"1","parameters":[{"type":"action","action":{"flow_action_data":{"a":[1,{"b":null}]}}}]}`, ""},
		{"flow button without parameters", `{"type":"button","sub_type":"flow","index":"0","parameters":[]}`, "minItems"},
		{"flow parameter without action", `{"type":"button","sub_type":"flow","index":"0","parameters":[{"type":"action","flow_token":"T"}]}`, `missing property 'action'`},
		{"flow data as JSON text", `{"type":"button","sub_type":"flow","index":"0","parameters":[{"type":"action","action":{"flow_action_data":"{\"a\":1}"}}]}`, `at '/action/flow_action_data': got string, want object`},
		{"flow data empty", `{"type":"button","sub_type":"flow","index":"0","parameters":[{"type":"action","action":{"flow_action_data":{}}}]}`, `minProperties`},
		{"flow token a number", `{"type":"button","sub_type":"flow","index":"0","parameters":[{"type":"action","action":{"flow_token":1}}]}`, `at '/action/flow_token': got number, want string`},
		{"flow token empty", `{"type":"button","sub_type":"flow","index":"0","parameters":[{"type":"action","action":{"flow_token":""}}]}`, `minLength`},
		{"action in the body", `{"type":"body","parameters":[{"type":"action","action":{"flow_token":"T"}}]}`, `at '/parameters/0/type': value must be one of 'currency'`},
		{"location without name and address", `{"type":"header","parameters":[{"type":"location","location":{"latitude":"52.5","longitude":"13.4"}}]}`, ""},
		{"location without longitude", `{"type":"header","parameters":[{"type":"location","location":{"latitude":"52.5"}}]}`, `missing property 'longitude'`},
		{"location with numeric coordinates", `{"type":"header","parameters":[{"type":"location","location":{"latitude":52.5,"longitude":13.4}}]}`, `at '/location/latitude': got number, want string`},
		{"location with an unknown field", `{"type":"header","parameters":[{"type":"location","location":{"latitude":"52.5","longitude":"13.4","lat":"52.5"}}]}`, `additional properties 'lat' not allowed`},
		{"location parameter without location", `{"type":"header","parameters":[{"type":"location","latitude":"52.5","longitude":"13.4"}]}`, `missing property 'location'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.ValidateTemplateMessage(templateMessage(tt.components))
			if tt.want == "" {
				if err != nil {
					t.Errorf("ValidateTemplateMessage = %v, want valid", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ValidateTemplateMessage = %v\nwant an error with %q", err, tt.want)
			}
		})
	}
}

func TestCorrectionApply(t *testing.T) {
	doc := func() map[string]any {
		return map[string]any{"a": map[string]any{
			"pattern": "^[2-6]$",
			"list":    []any{"x", map[string]any{"k/~": "v"}},
		}}
	}
	tests := []struct {
		name string
		c    correction
		err  string // "" for success
		path []string
		want any
	}{
		{name: "replace", c: correction{Pointer: "/a/pattern", Was: `"^[2-6]$"`, Value: `"^[0-9]$"`},
			path: []string{"a", "pattern"}, want: "^[0-9]$"},
		{name: "add", c: correction{Pointer: "/a/new", Value: `{"enum":["b"]}`},
			path: []string{"a", "new"}, want: map[string]any{"enum": []any{"b"}}},
		{name: "escaped token in an array element", c: correction{Pointer: "/a/list/1/k~1~0", Was: `"v"`, Value: `"w"`}},
		{name: "array element", c: correction{Pointer: "/a/list/0", Was: `"x"`, Value: `"y"`}},
		{name: "document changed", c: correction{Pointer: "/a/pattern", Was: `"^[2-5]$"`, Value: `"^[0-9]$"`},
			err: `the document has "^[2-6]$" there, not "^[2-5]$": review the correction`},
		{name: "added already", c: correction{Pointer: "/a/pattern", Value: `"^[0-9]$"`},
			err: `the document has "^[2-6]$" there, not nothing`},
		{name: "gone", c: correction{Pointer: "/a/gone", Was: `"x"`, Value: `"y"`},
			err: `the document has nothing there, not "x"`},
		{name: "no parent", c: correction{Pointer: "/b/pattern", Value: `"x"`}, err: `no "b" in the document`},
		{name: "index out of range", c: correction{Pointer: "/a/list/2", Value: `"x"`}, err: `"2" is not an index of an array of 2`},
		{name: "into a string", c: correction{Pointer: "/a/pattern/x", Value: `"x"`}, err: "parent is string"},
		{name: "not a pointer", c: correction{Pointer: "a/pattern", Value: `"x"`}, err: "a JSON pointer starts with /"},
		{name: "value not JSON", c: correction{Pointer: "/a/pattern", Value: `^[0-9]$`}, err: "Value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := doc()
			err := tt.c.apply(d)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("apply = %v, want an error with %q", err, tt.err)
				}
				if !reflect.DeepEqual(d, doc()) {
					t.Errorf("a failed correction changed the document: %v", d)
				}
				return
			}
			if err != nil {
				t.Fatalf("apply = %v", err)
			}
			if tt.path == nil {
				return
			}
			var got any = d
			for _, k := range tt.path {
				got = got.(map[string]any)[k]
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("after apply: %#v, want %#v", got, tt.want)
			}
		})
	}
}

// TestCorrectionsList keeps the list readable and the package comment
// complete: each correction says why in a line, and the comment names its
// pointer.
func TestCorrectionsList(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "oas.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(f.Doc.Text()), " ")
	for _, c := range corrections {
		if c.Why == "" || strings.Contains(c.Why, "\n") {
			t.Errorf("correction %s: Why must be one line", c.Pointer)
		}
		if p := strings.TrimPrefix(c.Pointer, schemas); !strings.Contains(doc, p) {
			t.Errorf("the package comment does not list the correction of %s", p)
		}
	}
}

// TestFileUnmodified: the corrections live in code, never in the file,
// which stays byte for byte Meta's (the git blob testdata/openapi/README.md
// names).
func TestFileUnmodified(t *testing.T) {
	b, err := os.ReadFile(load(t).Path())
	if err != nil {
		t.Fatal(err)
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	if got := hex.EncodeToString(h.Sum(nil)); got != "c9dc2144b04ee4fbf0e0fb6f96b435bc66881be1" {
		t.Errorf("git blob %s: the copy of Meta's document has changed", got)
	}
}
