package csvin

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
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
// keeps its promises about every Record, also with limits low enough to
// refuse records; that a file saved as UTF-16 reads exactly as it does in
// UTF-8; and that forcing the detected delimiter changes nothing.
func FuzzReader(f *testing.F) {
	seeds := []string{
		"phone\n+447400123456\n",
		"\ufeffPhone,From,ID,Name\r\n+44 7400 123456,1,a,\"x, \"\"y\"\"\"\r\n07400 123456,,b,\"multi\nline\"\r\n",
		"phone,a,\n+12025550123,x,\n,,\n\n+1,y,z\n",
		"phone,name\n+447400123456,\"open\n",
		"phone,name\n+44\xff,x\n+447400123456,x,y\n",
		"name;phone\n",
		"phone\n0044 7400 123456\n011 44 7400 123456\n+٤٤٧٤٠٠١٢٣٤٥٦\n",
		"Name;Phone;Betrag\r\n\"Ann; Jr\";'+49 170 1234567;1,50\r\nBen;4,91701E+11;2\r\n",
		"\"a;b\",phone\n\"x;y\",+447400123456\n",
		"phone\tname\r\n'+447400123456\t\"tab\there\"\r\n4.47911e11\tx\r\n",
		"phone|name\n+447400123456|x\n",
		"\n;;\n\t\nphone;\"two\nlines\"\n'',x\n",
		"p\x00h\x00o\x00n\x00e\x00\n\x00",
	}
	for _, s := range seeds {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	for _, s := range seeds[:4] {
		if utf8.ValidString(s) {
			f.Add([]byte(utf16Text(strings.TrimPrefix(s, "\ufeff"), false)), uint8(2))
			f.Add([]byte(utf16Text(strings.TrimPrefix(s, "\ufeff"), true)), uint8(3))
		}
	}
	// Broken UTF-16: unpaired surrogates, an odd byte.
	f.Add([]byte("\xff\xfep\x00,\x00\n\x00\x3d\xd8x\x00"), uint8(0))
	f.Add([]byte("\xfe\xff\x00p\xdc\x00\x00\n\x00"), uint8(0))
	if files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "csv", "*.csv")); err == nil {
		for _, name := range files {
			if b, err := os.ReadFile(name); err == nil {
				f.Add(b, uint8(1))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, region uint8) {
		opt := Options{DefaultRegion: fuzzRegion(region)}
		fuzzRead(t, data, opt, limits{cols: int(region)%5 + 1, cell: int(region) % 17})
		got, r, err := fuzzRead(t, data, opt, defaultLimits)
		if err == nil {
			opt.Delimiter = r.Delimiter()
			forced, _, ferr := fuzzRead(t, data, opt, defaultLimits)
			if ferr != nil || !reflect.DeepEqual(forced, got) {
				t.Fatalf("with Delimiter %q forced: %v\n%+v\nwant\n%+v", opt.Delimiter, ferr, forced, got)
			}
			opt.Delimiter = 0
		}
		if !utf8.Valid(data) {
			return
		}
		text := strings.TrimPrefix(string(data), "\ufeff")
		for _, bigEndian := range []bool{false, true} {
			got16, r16, err16 := fuzzRead(t, []byte(utf16Text(text, bigEndian)), opt, defaultLimits)
			if errText(err16) != errText(err) || !reflect.DeepEqual(got16, got) {
				t.Fatalf("UTF-16 (big-endian %v): %v\n%+v\nwant (UTF-8): %v\n%+v", bigEndian, err16, got16, err, got)
			}
			if err == nil && (r16.Delimiter() != r.Delimiter() || r16.Notes() != r.Notes()) {
				t.Fatalf("UTF-16: Delimiter, Notes = %q, %+v; UTF-8: %q, %+v", r16.Delimiter(), r16.Notes(), r.Delimiter(), r.Notes())
			}
		}
	})
}

// fuzzRead reads data to the end with limits lim, failing t if the Reader
// breaks a promise, and returns what Next returned (errors as text) and the
// Reader, or the error from NewReader.
func fuzzRead(t *testing.T, data []byte, opt Options, lim limits) ([]step, *Reader, error) {
	t.Helper()
	r, err := newReader(bytes.NewReader(data), opt, lim)
	if err != nil {
		return nil, nil, err
	}
	switch enc := r.Encoding(); enc {
	case "UTF-8", "UTF-8 with BOM", "UTF-16LE", "UTF-16BE":
	default:
		t.Fatalf("Encoding() = %q", enc)
	}
	params := len(r.Params())
	lines := newlines(data) + 1
	var out []step
	var fixed int64
	last := 1
	// Every call consumes at least one line, so this bounds a loop that
	// would otherwise hang on a Reader that stopped advancing.
	for range lines + 1 {
		rec, err := r.Next()
		if err == io.EOF {
			if n := r.Notes().ApostrophesRemoved; n != fixed {
				t.Fatalf("Notes().ApostrophesRemoved = %d, but %d rows had one", n, fixed)
			}
			return out, r, nil
		}
		var le *LineError
		if errors.As(err, &le) {
			if le.Line <= last || le.Line > lines {
				t.Fatalf("error on line %d after line %d: %v", le.Line, last, err)
			}
			last = le.Line
			out = append(out, step{errLine: le.Line, errText: le.Error()})
			continue
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if rec.Line < 2 || rec.Line <= last || rec.Line > lines {
			t.Fatalf("record on line %d after line %d", rec.Line, last)
		}
		last = rec.Line
		if len(rec.Params) != params {
			t.Fatalf("line %d: %d params, header has %d", rec.Line, len(rec.Params), params)
		}
		if (rec.Phone == "") == (rec.Invalid == "") {
			t.Fatalf("line %d: Phone %q and Invalid %q", rec.Line, rec.Phone, rec.Invalid)
		}
		if rec.Invalid != "" && !strings.HasPrefix(rec.Invalid, "invalid phone number: ") {
			t.Fatalf("line %d: Invalid %q lacks the prefix reports group by", rec.Line, rec.Invalid)
		}
		if rec.Phone != "" {
			if !isE164(rec.Phone) {
				t.Fatalf("line %d: Phone %q is not E.164", rec.Line, rec.Phone)
			}
			if again, err := normalize(rec.Phone, ""); again != rec.Phone {
				t.Fatalf("line %d: normalize(%q) = %q, %v", rec.Line, rec.Phone, again, err)
			}
			if rec.RawPhone[0] == '\'' {
				fixed++
			}
		}
		if rec.RawPhone != strings.TrimSpace(rec.RawPhone) {
			t.Fatalf("line %d: RawPhone %q not trimmed", rec.Line, rec.RawPhone)
		}
		out = append(out, step{rec: rec})
	}
	t.Fatal("Next did not reach io.EOF")
	return nil, nil, nil
}

// newlines counts the line feeds in data, which may be UTF-16 with a
// byte-order mark.
func newlines(data []byte) int {
	hi, lo := -1, -1 // offsets of a code unit's bytes; -1: UTF-8
	switch {
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
		hi, lo = 1, 0
	case bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		hi, lo = 0, 1
	default:
		return bytes.Count(data, []byte("\n"))
	}
	n := 0
	for i := 2; i+1 < len(data); i += 2 {
		if data[i+hi] == 0 && data[i+lo] == '\n' {
			n++
		}
	}
	return n
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
		"'+447911123456", " ' 07911 123456", "''+447911123456", "'", "4.47911E+11", "4,47911E+11",
		"4.47911e11", "4E+11", "4.47911123456E+11", "1E+99999999999999999999",
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
		// One apostrophe in front changes nothing, unless there was one.
		if !strings.HasPrefix(strings.TrimSpace(raw), "'") {
			with, werr := normalize("'"+raw, reg)
			if with != out || errText(werr) != errText(err) {
				t.Fatalf("normalize(%q, %q) = %q, %v; but %q, %v without the apostrophe", "'"+raw, reg, with, werr, out, err)
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
// progress, and returns E.164 numbers on increasing lines, also with limits
// low enough to refuse lines.
func FuzzListReader(f *testing.F) {
	for _, s := range []string{
		"+447400123456\n# comment\n\n447400123457 # trailing\n",
		"name,Phone\nAnn,+447400123456\nBob\n",
		"phone,phone\n+1\n",
		"\ufeff07400 123456\r\n\"+44 7400\n123456\"\r\nx\"y\n\xff\n",
		"# opt-outs; shop\nName;Phone\r\nAnn;'+447400123456\r\n",
		"'+447400123456;x # stop; now\n447400123457,y\n",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	f.Add([]byte(utf16Text("phone\tname\r\n+447400123456\tZoë\r\n", false)), uint8(0))
	f.Add([]byte(utf16Text("+447400123456\n# x\n'+447400123457\n", true)), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, region uint8) {
		lim := defaultLimits
		if region&0x80 != 0 {
			lim = limits{cols: int(region)%5 + 1, cell: int(region) % 17}
		}
		l := newListReader(bytes.NewReader(data), fuzzRegion(region), lim)
		last := 0
		for range bytes.Count(data, []byte("\n")) + 2 {
			phone, line, err := l.Next()
			if err == io.EOF {
				return
			}
			var le *LineError
			if err != nil && !errors.As(err, &le) {
				// Final: it must stay final.
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
