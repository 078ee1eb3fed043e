package smstext_test

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/sms/smstext"
)

// placeholder is an oracle independent of the parser: on a text the parser
// accepted, braces only ever pair as placeholders whose names hold no
// brace, so this expression finds exactly the parser's placeholders.
var placeholder = regexp.MustCompile(`\{\{([^{}]*)\}\}`)

// FuzzText holds for any text an operator writes:
//   - New never panics, and fails only with ErrEmpty, a *SyntaxError whose
//     offset points at braces in the text, or a *MissingError;
//   - bound to no column, a text with placeholders fails with a
//     *MissingError that lists exactly its Names;
//   - bound to its own Names as columns, it uses every column, and Render
//     with each cell being the column's own placeholder gives back the
//     text with every placeholder spelled as its name was first written;
//   - Render with empty cells is the text without its placeholders.
func FuzzText(f *testing.F) {
	for _, s := range []string{
		"Hi {{first_name}}, your code is {{code}}.",
		"{{ First Name }} {{first name}} {{FIRST NAME}}",
		"no placeholders", "", "{{", "}}", "{{}}", "{{ }}", "{{a{b}}", "{{a}b}}", "{{{a}}}",
		"a { b } c", "{{a}}}", "{ {{a}}", "€ {{x}} 👋", "{{\xff}}", "{{a}}{{b}}{{a}}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		_, err := smstext.New(text, nil)
		var se *smstext.SyntaxError
		var me *smstext.MissingError
		switch {
		case err == nil:
		case errors.Is(err, smstext.ErrEmpty):
			if strings.TrimSpace(text) != "" {
				t.Fatalf("ErrEmpty for %q", text)
			}
			return
		case errors.As(err, &se):
			if se.Offset < 0 || se.Offset+2 > len(text) || !strings.ContainsAny(text[se.Offset:se.Offset+2], "{}") {
				t.Fatalf("syntax error %+v does not point at braces in %q", se, text)
			}
			return
		case errors.As(err, &me):
		default:
			t.Fatalf("New(%q) = %v: not a documented error", text, err)
		}

		cols := []string(nil)
		if me != nil {
			cols = me.Names
		}
		tx, err := smstext.New(text, cols)
		if err != nil {
			t.Fatalf("New(%q, its own names %q) = %v", text, cols, err)
		}
		if !slices.Equal(tx.Names(), cols) {
			t.Fatalf("Names = %q, but unbound New missed %q", tx.Names(), cols)
		}
		if u := tx.Unused(); len(u) > 0 {
			t.Fatalf("Unused = %q with columns named after the placeholders", u)
		}

		own := make([]string, len(cols))
		for i, c := range cols {
			own[i] = "{{" + c + "}}"
		}
		want := placeholder.ReplaceAllStringFunc(text, func(m string) string {
			name := strings.TrimSpace(m[2 : len(m)-2])
			for _, c := range cols {
				// As csvin compares header names, which is not EqualFold
				// (the long s ſ folds to s but does not lower to it).
				//lint:ignore SA6005 the oracle must compare as the parser does
				if strings.ToLower(c) == strings.ToLower(name) {
					return "{{" + c + "}}"
				}
			}
			t.Fatalf("placeholder %q of %q not among Names %q", m, text, cols)
			return ""
		})
		if got := tx.Render(own); got != want {
			t.Fatalf("Render(own placeholders) of %q = %q, want %q", text, got, want)
		}
		if got, want := tx.Render(make([]string, len(cols))), placeholder.ReplaceAllString(text, ""); got != want {
			t.Fatalf("Render(empty cells) of %q = %q, want %q", text, got, want)
		}
	})
}
