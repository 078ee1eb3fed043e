package smsevent

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
)

// decoderSays is what a json.Decoder, as the Reader used to use one, finds
// of the value at the start of d: where it ends, where it breaks, or that
// it goes on past d.
func decoderSays(d []byte) (int, scanResult) {
	dec := json.NewDecoder(bytes.NewReader(d))
	var v json.RawMessage
	err := dec.Decode(&v)
	var syn *json.SyntaxError
	switch {
	case err == nil:
		return int(dec.InputOffset()), scanDone
	case errors.As(err, &syn):
		return int(syn.Offset) - 1, scanBroken // Offset counts the byte that broke it
	case errors.Is(err, io.ErrUnexpectedEOF), err == io.EOF:
		return len(d), scanMore
	}
	panic(err)
}

// scanAll scans d in pieces of at most size bytes, as the Reader does.
func scanAll(d []byte, size int) (int, scanResult) {
	var s scanner
	for off := 0; ; {
		p := d[off:min(len(d), off+size)]
		n, res := s.scan(p)
		off += n
		if res != scanMore || off == len(d) {
			return off, res
		}
	}
}

// TestScanner covers where values end and break, as encoding/json says.
func TestScanner(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
	}{
		{"empty object", `{}`},
		{"object then more", `{"a":1}{"b":2}`},
		{"every kind of value", `{"a":[1,-0.5e+3,2E-2,0,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9",{},[]], "b" : { "c" : [ ] } }`},
		{"blanks everywhere", "{ \t\r\n\"a\" \n: \r1 ,\n\"b\":[ 1 , 2 ] }"},
		{"a '{' where a key goes", `{{`},
		{"a '{' after a value", `{"a":1{"b":2}`},
		{"a newline in a string", "{\"a\":\"x\ny\"}"},
		{"a bad escape", `{"a":"\x"}`},
		{"a short escape", `{"a":"\u12g4"}`},
		{"a leading zero", `{"a":01}`},
		{"a bare minus", `{"a":-}`},
		{"a dot without digits", `{"a":1.}`},
		{"an exponent without digits", `{"a":1e+}`},
		{"a broken literal", `{"a":trux}`},
		{"a mismatched bracket", `{"a":[}`},
		{"a trailing comma", `{"a":1,}`},
		{"cut short in a number", `{"a":12`},
		{"cut short in a literal", `{"a":tr`},
		{"cut short in an escape", `{"a":"\u00`},
		{"deep, within the limit", `{"a":` + strings.Repeat("[", maxNesting-1) + strings.Repeat("]", maxNesting-1) + `}`},
		{"deep, past the limit", `{"a":` + strings.Repeat("[", maxNesting) + `]`},
		{"deep objects", strings.Repeat(`{"a":`, maxNesting+5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantN, want := decoderSays([]byte(tc.in))
			for _, size := range []int{1, 3, len(tc.in)} {
				if n, res := scanAll([]byte(tc.in), size); n != wantN || res != want {
					t.Errorf("in pieces of %d: %d, %d; encoding/json: %d, %d", size, n, res, wantN, want)
				}
			}
		})
	}
}

// FuzzScanner holds the scanner to encoding/json: on any bytes after a '{',
// read in pieces of any size, it finds the value's end or its break where a
// json.Decoder does, or that it goes on.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		e("a"), pretty("b", "  "), sns(e("c")), `{"a":[1,-0.5e+3,true,null,"\u00e9"]}x`,
		`{{`, `{"a":1{`, "{\"a\":\"x\ny\"}", `{"a":01}`, `{"a":1e+}`, `{"a":trux}`, `{"a":[}`,
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, size uint8) {
		if len(in) > maxFuzz {
			t.Skip()
		}
		d := append([]byte{'{'}, in...)
		wantN, want := decoderSays(d)
		if n, res := scanAll(d, int(size)+1); n != wantN || res != want {
			t.Fatalf("%q in pieces of %d: %d, %d; encoding/json: %d, %d", d, int(size)+1, n, res, wantN, want)
		}
	})
}

// cloudWatch is the specification of Reader.prefix: the start of a
// CloudWatch Logs line up to the '{' of its record.
var cloudWatch = regexp.MustCompile(`^[ \t\r]*\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(?:\.\d+)?(?:[Zz]|[+-]\d\d:?\d\d)?[ \t]+(?:[^ \t\r\n{]+[ \t]+)?\{`)

// regexpPrefix is Reader.prefix by cloudWatch.
func regexpPrefix(d []byte) int {
	return len(cloudWatch.Find(d[:min(len(d), lineHead)])) - 1
}

// TestPrefix covers the CloudWatch prefixes, the ones that are not, and
// that prefix agrees with cloudWatch on them.
func TestPrefix(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int // where the '{' is; -1 for none
	}{
		{"2026-11-30T10:00:00.490Z {", 25},
		{"  2026-11-30 10:00:00\t{", 22},
		{"2026-11-30t10:00:00z {", 21},
		{"2026-11-30T10:00:00.490000+00:00 {", 33},
		{"2026-11-30T10:00:00-0800 {", 25},
		{"2026-11-30T10:00:00.490000+00:00 2026/11/30/[$LATEST]sms \t {", 59},
		{"2026-11-30T10:00:00Z{", -1},
		{"2026-11-30T10:00:00Z two words {", -1},
		{"2026-11-30T10:00:00+08 {", -1},
		{"2026-11-30T10:00:00. {", -1},
		{"2026-11-30T10:00:00Z word{", -1},
		{"2026-11-30T10:00:00Z word", -1},
		{"2026-11-30 hello {", -1},
		{"2026-11-3010:00:00 {", -1},
		{"1\n", -1},
	} {
		var r Reader
		if got, spec := r.prefix([]byte(tc.line)), regexpPrefix([]byte(tc.line)); got != tc.want || spec != tc.want {
			t.Errorf("%q: prefix %d, cloudWatch %d, want %d", tc.line, got, spec, tc.want)
		}
	}
}

// FuzzPrefix holds Reader.prefix to its specification, cloudWatch.
func FuzzPrefix(f *testing.F) {
	for _, s := range []string{
		"2026-11-30T10:00:00.490Z {", "2026-11-30T10:00:00.490000+00:00 2026/11/30/[$LATEST]sms {",
		"2026-11-30T10:00:00-0800 {", "2026-11-30T10:00:00+08 {", "2026-11-30 10:00:00 x y {",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		var r Reader
		if got, want := r.prefix(d), regexpPrefix(d); got != want {
			t.Fatalf("%q: prefix %d, cloudWatch %d", d, got, want)
		}
	})
}
