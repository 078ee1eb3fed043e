package whatsapp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/whatsapp/internal/oas"
)

func TestParseUsage(t *testing.T) {
	tests := []struct {
		name string
		h    string
		rest time.Duration
		ok   bool
	}{
		{"Meta's example", `{"102290129340398":[{"type":"whatsapp_business_management","call_count":1,"total_cputime":1,"total_time":1,"estimated_time_to_regain_access":0},` +
			`{"type":"whatsapp","call_count":1,"total_cputime":1,"total_time":1,"estimated_time_to_regain_access":0}]}`, 0, true},
		{"one budget spent", usage(0, 17), 17 * time.Minute, true},
		{"the longest of several businesses", `{"1":[{"type":"whatsapp","estimated_time_to_regain_access":5}],"2":[{"type":"whatsapp","estimated_time_to_regain_access":9},{"estimated_time_to_regain_access":2}]}`, 9 * time.Minute, true},
		{"fractional minutes", `{"1":[{"estimated_time_to_regain_access":1.5}]}`, 90 * time.Second, true},
		{"negative means none", `{"1":[{"estimated_time_to_regain_access":-3}]}`, 0, true},
		{"absent and null", `{"1":[{"type":"whatsapp","call_count":40}],"2":null,"3":[null,{"estimated_time_to_regain_access":null}]}`, 0, true},
		{"no business", `{}`, 0, true},
		{"whitespace around", " \t" + usage(4, 0) + "\r\n", 4 * time.Minute, true},
		{"too long for a Duration", `{"1":[{"estimated_time_to_regain_access":1e300}]}`, math.MaxInt64, true},
		{"beyond float64", `{"1":[{"estimated_time_to_regain_access":1e400}]}`, math.MaxInt64, true},
		{"last of repeated keys", `{"1":[{"estimated_time_to_regain_access":8,"estimated_time_to_regain_access":1}]}`, time.Minute, true},
		{"keys match exactly", `{"1":[{"Estimated_Time_To_Regain_Access":8}]}`, 0, true},
		{"other members are not looked at", `{"1":[{"type":7,"call_count":"x","estimated_time_to_regain_access":2}]}`, 2 * time.Minute, true},
		{"empty", ``, 0, false},
		{"not JSON", `whatsapp=1`, 0, false},
		{"null", `null`, 0, false},
		{"an array", `[{"estimated_time_to_regain_access":3}]`, 0, false},
		{"x-app-usage's shape", `{"call_count":0,"total_cputime":0,"total_time":0}`, 0, false},
		{"budgets not an array", `{"1":{"estimated_time_to_regain_access":3}}`, 0, false},
		{"budget not an object", `{"1":[3]}`, 0, false},
		{"minutes as a string", `{"1":[{"estimated_time_to_regain_access":"3"}]}`, 0, false},
		{"minutes as a bool", `{"1":[{"estimated_time_to_regain_access":true}]}`, 0, false},
		{"a second value", usage(3, 0) + ` {}`, 0, false},
		{"trailing garbage", usage(3, 0) + `x`, 0, false},
		{"cut short", usage(3, 0)[:40], 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rest, ok := ParseUsage(tc.h)
			if rest != tc.rest || ok != tc.ok {
				t.Errorf("ParseUsage(%q) = %v, %v; want %v, %v", tc.h, rest, ok, tc.rest, tc.ok)
			}
		})
	}
}

// TestUsageExampleFromOpenAPI reads the header's example in Meta's document.
func TestUsageExampleFromOpenAPI(t *testing.T) {
	spec, err := oas.Load()
	if err != nil {
		t.Fatal(err)
	}
	doc := loadYAML(t, spec.Path())
	ex, _ := dig(doc, "components", "headers", "x-business-use-case-usage", "schema", "example").(string)
	if ex == "" {
		t.Fatal("no example of x-business-use-case-usage in the OpenAPI document")
	}
	if rest, ok := ParseUsage(ex); !ok || rest != 0 {
		t.Errorf("ParseUsage(%q) = %v, %v; want 0, true", ex, rest, ok)
	}
}

// FuzzParseUsage: any header parses without panic to a rest of at least 0,
// and 0 when it is malformed; whitespace between tokens changes nothing;
// and in a header built around the fuzzed values, the longest wait wins
// whatever else the header holds.
func FuzzParseUsage(f *testing.F) {
	f.Add(usage(0, 0), "102290129340398", int64(0), int64(0))
	f.Add(usage(7, 3), "1", int64(60), int64(-1))
	f.Add(`{"1":[{"estimated_time_to_regain_access":1e400}]}`, "", int64(math.MaxInt64), int64(math.MinInt64))
	f.Add(`{"1":[null,{"estimated_time_to_regain_access":null}],"2":null}`, "2", int64(1), int64(2))
	f.Add(`{"1":[{"estimated_time_to_regain_access":"3"}]}`, `"`, int64(3), int64(3))
	f.Add(`[`, "\xff", int64(5), int64(0))
	f.Fuzz(func(t *testing.T, h, id string, m1, m2 int64) {
		if len(h)+len(id) > 64<<10 {
			t.Skip() // the mutator grows inputs towards 100 MB, finding nothing new
		}
		rest, ok := ParseUsage(h)
		if rest < 0 || !ok && rest != 0 {
			t.Fatalf("ParseUsage(%q) = %v, %v", h, rest, ok)
		}
		if ok && !json.Valid([]byte(h)) {
			t.Fatalf("ParseUsage(%q) accepts what is not JSON", h)
		}
		if ok {
			var ind bytes.Buffer
			if err := json.Indent(&ind, []byte(h), "", "\t"); err != nil {
				t.Fatal(err)
			}
			if r2, ok2 := ParseUsage(ind.String()); r2 != rest || !ok2 {
				t.Fatalf("indented, %q parses to %v, %v; compact %v, %v", ind.String(), r2, ok2, rest, ok)
			}
		}

		// A header with the fuzzed business and waits, and the fuzzed
		// header's budgets under another business if it has any.
		key, _ := json.Marshal(id)
		b := fmt.Sprintf(`{%s:[{"type":"whatsapp","call_count":100,"estimated_time_to_regain_access":%d},{"estimated_time_to_regain_access":%d}]`, key, m1, m2)
		if ok {
			// Merge h's businesses, unless one has our key and would
			// replace ours.
			var other map[string]json.RawMessage
			var ours string // id as a key decodes: invalid UTF-8 becomes U+FFFD
			if json.Unmarshal([]byte(h), &other) == nil && len(other) > 0 && json.Unmarshal(key, &ours) == nil {
				if _, clash := other[ours]; !clash {
					b += "," + strings.TrimSpace(h)[1:]
					want := max(rest, expected(m1, m2))
					if r, ok := ParseUsage(b); !ok || r != want {
						t.Fatalf("ParseUsage(%q) = %v, %v; want %v", b, r, ok, want)
					}
					return
				}
			}
		}
		b += "}"
		if r, ok := ParseUsage(b); !ok || r != expected(m1, m2) {
			t.Fatalf("ParseUsage(%q) = %v, %v; want %v", b, r, ok, expected(m1, m2))
		}
	})
}

// expected is the rest asked for by waits of m1 and m2 minutes.
func expected(m1, m2 int64) time.Duration {
	m := max(m1, m2)
	switch {
	case m <= 0:
		return 0
	case m > int64(math.MaxInt64/time.Minute):
		return math.MaxInt64
	}
	return time.Duration(m) * time.Minute
}
