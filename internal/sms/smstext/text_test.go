package smstext_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/sms/smstext"
)

func TestRender(t *testing.T) {
	cols := []string{"first_name", "code", "First Name2", "city"}
	cells := []string{"Ana", "X7", "Bea", "Köln"}
	for _, tc := range []struct {
		name, text string
		want       string
		names      []string
		unused     []string
	}{
		{"no placeholder", "Hello, all.", "Hello, all.", nil, cols},
		{"one", "Hi {{first_name}}!", "Hi Ana!", []string{"first_name"}, []string{"code", "First Name2", "city"}},
		{"case and spacing", "{{ FIRST_NAME }}/{{first name2}}", "Ana/Bea", []string{"FIRST_NAME", "first name2"}, []string{"code", "city"}},
		{"repeat keeps the first spelling", "{{Code}} {{code}} {{ CODE }}", "X7 X7 X7", []string{"Code"}, []string{"first_name", "First Name2", "city"}},
		{"order of first use", "{{city}}{{code}}{{city}}", "KölnX7Köln", []string{"city", "code"}, []string{"first_name", "First Name2"}},
		{"at both ends", "{{code}} mid {{code}}", "X7 mid X7", []string{"code"}, []string{"first_name", "First Name2", "city"}},
		{"single braces are text", "a { b } {c} {{code}}}", "a { b } {c} X7}", []string{"code"}, []string{"first_name", "First Name2", "city"}},
		{"a brace before a placeholder", "{ {{code}}", "{ X7", []string{"code"}, []string{"first_name", "First Name2", "city"}},
		{"unicode around", "€ {{city}} 👋", "€ Köln 👋", []string{"city"}, []string{"first_name", "code", "First Name2"}},
		{"tab inside braces", "{{\tcode\t}}", "X7", []string{"code"}, []string{"first_name", "First Name2", "city"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := smstext.New(tc.text, cols)
			if err != nil {
				t.Fatal(err)
			}
			if got := tx.Render(cells); got != tc.want {
				t.Errorf("Render = %q, want %q", got, tc.want)
			}
			if got := tx.Names(); !slices.Equal(got, tc.names) {
				t.Errorf("Names = %q, want %q", got, tc.names)
			}
			if got := tx.Unused(); !slices.Equal(got, tc.unused) {
				t.Errorf("Unused = %q, want %q", got, tc.unused)
			}
			if tx.String() != tc.text {
				t.Errorf("String = %q, want the text as given", tx.String())
			}
		})
	}
}

func TestRenderShortRow(t *testing.T) {
	tx, err := smstext.New("[{{a}}|{{b}}]", []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if got := tx.Render([]string{"1"}); got != "[1|]" {
		t.Fatalf("Render(short row) = %q, want the missing cell empty", got)
	}
	if got := tx.Render(nil); got != "[|]" {
		t.Fatalf("Render(nil) = %q", got)
	}
}

func TestSyntaxErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		offset     int
		why        string // a word the reason must contain
	}{
		{"unclosed", "Hi {{name", 3, "never closed"},
		{"unclosed after a good one", "{{name}} and {{code", 13, "never closed"},
		{"empty", "Hi {{}}", 3, "empty"},
		{"blank", "Hi {{   }}", 3, "empty"},
		{"closing without opening", "Hi name}} there", 7, "without an opening"},
		{"closing after a good one", "{{name}} x }}", 11, "without an opening"},
		{"open brace in name", "{{na{me}}", 0, "brace"},
		{"close brace in name", "{{na}me}}", 0, "brace"},
		{"triple open", "x {{{name}}", 2, "brace"},
		{"nested", "{{a {{b}} }}", 0, "brace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := smstext.New(tc.text, []string{"name", "code"})
			var se *smstext.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *SyntaxError", err)
			}
			if se.Offset != tc.offset || !strings.Contains(se.Why, tc.why) {
				t.Fatalf("SyntaxError = %+v, want offset %d and %q", se, tc.offset, tc.why)
			}
		})
	}
}

func TestEmpty(t *testing.T) {
	for _, text := range []string{"", " ", "\n\t "} {
		if _, err := smstext.New(text, []string{"a"}); !errors.Is(err, smstext.ErrEmpty) {
			t.Errorf("New(%q) = %v, want ErrEmpty", text, err)
		}
	}
}

func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		cols       []string
		missing    []string
		msg        string
	}{
		{"one typo", "Hi {{frist_name}}, {{code}}", []string{"first_name", "code"}, []string{"frist_name"},
			"placeholder {{frist_name}} has no column (the CSV has: first_name, code)"},
		{"every one, once, as written", "{{A}} {{b}} {{ a }} {{code}} {{C}}", []string{"code"}, []string{"A", "b", "C"},
			"placeholders {{A}}, {{b}}, {{C}} have no column (the CSV has: code)"},
		{"no columns", "{{x}}", nil, []string{"x"},
			"placeholder {{x}} has no column (the CSV has no parameter columns)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := smstext.New(tc.text, tc.cols)
			var me *smstext.MissingError
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want a *MissingError", err)
			}
			if !slices.Equal(me.Names, tc.missing) || !slices.Equal(me.Columns, tc.cols) {
				t.Fatalf("MissingError = %+v, want names %q", me, tc.missing)
			}
			if err.Error() != tc.msg {
				t.Fatalf("Error() = %q\nwant      %q", err.Error(), tc.msg)
			}
		})
	}
}

// TestRenderAllocatesOnce: the body is built in one buffer sized up
// front, on the send path of every row.
func TestRenderAllocatesOnce(t *testing.T) {
	tx, err := smstext.New("Hi {{name}}, your code is {{code}}. Show it at {{city}} until Sunday.", []string{"name", "code", "city"})
	if err != nil {
		t.Fatal(err)
	}
	cells := []string{"Jessica", "WELCOME25", "Lisbon"}
	if n := testing.AllocsPerRun(100, func() { _ = tx.Render(cells) }); n != 1 {
		t.Fatalf("Render allocates %v times, want 1", n)
	}
}

func BenchmarkRender(b *testing.B) {
	tx, err := smstext.New("Hi {{name}}, your code is {{code}}. Show it at {{city}} until Sunday. Reply STOP to opt out.", []string{"name", "code", "city"})
	if err != nil {
		b.Fatal(err)
	}
	cells := []string{"Jessica", "WELCOME25", "Lisbon"}
	for b.Loop() {
		_ = tx.Render(cells)
	}
}

func TestControl(t *testing.T) {
	tx, err := smstext.New("Hi {{name}}, {{code}}", []string{"name", "unused", "code"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		cells []string
		want  string
	}{
		{"plain", []string{"Ana", "x", "C1"}, ""},
		{"line break and tab", []string{"Ana\nB\tC\r", "x", "C1"}, ""},
		{"escape", []string{"Ana\x1b]0;title\a", "x", "C1"}, `column "name": has a control character (U+001B)`},
		{"NUL", []string{"Ana", "x", "C\x00"}, `column "code": has a control character (U+0000)`},
		{"C1", []string{"Ana\u009b2J", "x", "C1"}, `column "name": has a control character (U+009B)`},
		{"unused column", []string{"Ana", "\x1b", "C1"}, ""},
		{"short row", []string{"Ana"}, ""},
	} {
		if got := tx.Control(tc.cells); got != tc.want {
			t.Errorf("%s: Control = %q, want %q", tc.name, got, tc.want)
		}
	}
}
