package store

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeParams: decodeParams answers as encoding/json does, whether
// its own split takes the input or not: the same strings, an error for
// the same inputs.
func FuzzDecodeParams(f *testing.F) {
	for _, s := range []string{
		`[]`, `[""]`, `["Ana","X1"]`, `["café","日本","\u00e9"]`, `["a\"b"]`, `["tab\there"]`, `[ "a" ]`,
		`["a",]`, `["a""b"]`, `["a"`, `null`, `["\xff"]`, "[\"a\x01\"]", `[1]`, `{}`, ``, `["<&>"]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeParams(b)
		var want []string
		werr := json.Unmarshal(b, &want)
		if (err == nil) != (werr == nil) || (err == nil && !reflect.DeepEqual(got, want)) {
			t.Fatalf("decodeParams(%q) = %q, %v; encoding/json: %q, %v", b, got, err, want, werr)
		}
	})
}

// TestPlainParamsSplitsPlainArrays: arrays as Import writes most (no
// character to escape) are split without encoding/json.
func TestPlainParamsSplitsPlainArrays(t *testing.T) {
	for _, ps := range [][]string{{}, {""}, {"Ana", "X1"}, {"Customer 1", "CODE0000001", "https://cdn.example.com/img/1.jpg", "c0000001"}, {"café", "李娜"}} {
		b, _ := json.Marshal(ps)
		got, ok := plainParams(b)
		if !ok || !reflect.DeepEqual(got, ps) {
			t.Errorf("plainParams(%s) = %q, %v; want %q", b, got, ok, ps)
		}
	}
}
