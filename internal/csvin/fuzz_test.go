package csvin

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzRegions are the default regions the fuzz targets try, picked by a
// byte of input.
var fuzzRegions = []string{"", "GB", "US", "BR", "IN", "AU", "DE", "AR", "MX", "RU", "IT"}

func fuzzRegion(i uint8) string { return fuzzRegions[int(i)%len(fuzzRegions)] }

// isE164 reports whether s is '+' and digits.
func isE164(s string) bool {
	if len(s) < 2 || s[0] != '+' {
		return false
	}
	for _, c := range []byte(s[1:]) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// FuzzReader checks that the Reader never panics, always makes progress, and
// keeps its promises about every Record.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"phone\n+447400123456\n",
		"\ufeffPhone,From,ID,Name\r\n+44 7400 123456,1,a,\"x, \"\"y\"\"\"\r\n07400 123456,,b,\"multi\nline\"\r\n",
		"phone,a,\n+12025550123,x,\n,,\n\n+1,y,z\n",
		"phone,name\n+447400123456,\"open\n",
		"phone,name\n+44\xff,x\n+447400123456,x,y\n",
		"name;phone\n",
		"phone\n0044 7400 123456\n011 44 7400 123456\n+٤٤٧٤٠٠١٢٣٤٥٦\n",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	if files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "csv", "*.csv")); err == nil {
		for _, name := range files {
			if b, err := os.ReadFile(name); err == nil {
				f.Add(b, uint8(1))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, region uint8) {
		r, err := NewReader(bytes.NewReader(data), Options{DefaultRegion: fuzzRegion(region)})
		if err != nil {
			return
		}
		params := len(r.Params())
		last := 1
		// Every call consumes at least one line, so this bounds a loop
		// that would otherwise hang on a Reader that stopped advancing.
		for range bytes.Count(data, []byte("\n")) + 2 {
			rec, err := r.Next()
			if err == io.EOF {
				return
			}
			var le *LineError
			if errors.As(err, &le) {
				if le.Line <= last {
					t.Fatalf("error on line %d after line %d: %v", le.Line, last, err)
				}
				last = le.Line
				continue
			}
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			if rec.Line < 2 || rec.Line <= last {
				t.Fatalf("record on line %d after line %d", rec.Line, last)
			}
			last = rec.Line
			if len(rec.Params) != params {
				t.Fatalf("line %d: %d params, header has %d", rec.Line, len(rec.Params), params)
			}
			if (rec.Phone == "") == (rec.Invalid == "") {
				t.Fatalf("line %d: Phone %q and Invalid %q", rec.Line, rec.Phone, rec.Invalid)
			}
			if rec.Phone != "" {
				if !isE164(rec.Phone) {
					t.Fatalf("line %d: Phone %q is not E.164", rec.Line, rec.Phone)
				}
				if again, err := normalize(rec.Phone, ""); again != rec.Phone {
					t.Fatalf("line %d: normalize(%q) = %q, %v", rec.Line, rec.Phone, again, err)
				}
			}
			if rec.RawPhone != strings.TrimSpace(rec.RawPhone) {
				t.Fatalf("line %d: RawPhone %q not trimmed", rec.Line, rec.RawPhone)
			}
		}
		t.Fatal("Next did not reach io.EOF")
	})
}

// FuzzNormalize checks that the normalizer never panics, returns E.164 or an
// ErrInvalidPhone, is idempotent, and that its fast path agrees with
// phonenumbers.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"+447400123456", "+44 (0)7400 123456", "0044 7400 123456", "447400123456",
		"07400 123456", "(202) 555-0123", "011 44 7400 123456", "+1 800 FLOWERS",
		"+٤٤٧٤٠٠١٢٣٤٥٦", "＋４４", "+", "++1", "+0", "+999", "+80012345678",
		"+5511987654321", "+919876543210", "+78001234567", "+390612345678", "+5491123456789",
		"0011 44 7400 123456", "+44\u00a07400\u2013123456", "\xff", "+882 1234567890",
	} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(1))
		f.Add(s, uint8(2))
	}
	f.Fuzz(func(t *testing.T, raw string, region uint8) {
		reg := fuzzRegion(region)
		out, err := normalize(raw, reg)
		if err != nil {
			if !errors.Is(err, ErrInvalidPhone) {
				t.Fatalf("normalize(%q, %q): %v does not wrap ErrInvalidPhone", raw, reg, err)
			}
			if out != "" {
				t.Fatalf("normalize(%q, %q) = %q with error %v", raw, reg, out, err)
			}
		} else {
			if !isE164(out) {
				t.Fatalf("normalize(%q, %q) = %q, not E.164", raw, reg, out)
			}
			for _, r := range []string{"", reg, "US"} {
				if again, err := normalize(out, r); again != out {
					t.Fatalf("normalize(%q, %q) = %q; normalize(%q, %q) = %q, %v", raw, reg, out, out, r, again, err)
				}
			}
		}
		// Whatever the digits, the fast path must agree with Parse.
		var buf [maxDigits]byte
		if digits, _, err := cleanPhone(raw, buf[:0]); err == nil {
			checkFastPath(t, string(digits))
			if reg != "" {
				checkNational(t, string(digits), reg)
			}
		}
	})
}

// FuzzListReader checks that the ListReader never panics, always makes
// progress, and returns E.164 numbers on increasing lines.
func FuzzListReader(f *testing.F) {
	for _, s := range []string{
		"+447400123456\n# comment\n\n447400123457 # trailing\n",
		"name,Phone\nAnn,+447400123456\nBob\n",
		"phone,phone\n+1\n",
		"\ufeff07400 123456\r\n\"+44 7400\n123456\"\r\nx\"y\n\xff\n",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, region uint8) {
		l := NewListReader(bytes.NewReader(data), fuzzRegion(region))
		last := 0
		for range bytes.Count(data, []byte("\n")) + 2 {
			phone, line, err := l.Next()
			if err == io.EOF {
				return
			}
			var le *LineError
			if err != nil && !errors.As(err, &le) {
				// Final (a UTF-16 file): it must stay final.
				if _, _, again := l.Next(); again != err {
					t.Fatalf("Next: %v, then %v", err, again)
				}
				return
			}
			if line <= last {
				t.Fatalf("line %d after line %d (%q, %v)", line, last, phone, err)
			}
			last = line
			if err == nil && !isE164(phone) {
				t.Fatalf("line %d: %q is not E.164", line, phone)
			}
		}
		t.Fatal("Next did not reach io.EOF")
	})
}
