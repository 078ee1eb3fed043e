// Package smstext is an SMS body template: literal text with {{column}}
// placeholders that each row's CSV cells fill. It is parsed and bound to
// the CSV's parameter columns once, so that a wrong name stops the
// campaign before anything is sent, and rendering a row is a single
// allocation on the send path.
//
// There is no escape: a body cannot contain a literal "{{" or "}}". A
// single brace is plain text.
//
// It imports nothing of ours: the SMS client, the sandbox and the CLI all
// build on it.
package smstext

import (
	"errors"
	"fmt"
	"strings"
)

// Text is a parsed body template. It is immutable, and safe for
// concurrent use once New returns it; its zero value renders nothing.
type Text struct {
	text string
	// lits[i] precedes the placeholder that fills slots[i]; the last lit
	// follows them all, so len(lits) == len(slots)+1.
	lits  []string
	slots []int // column index of each placeholder occurrence
	fixed int   // total length of lits, for Render's Grow
	names []string
	// columns are New's, for the reasons that name one.
	columns []string
	// unused are the columns no placeholder names, in column order.
	unused []string
}

// ErrEmpty is the error for a text with nothing but white space: AWS
// refuses an empty body, and a blank one is never what an operator meant.
var ErrEmpty = errors.New("sms text is empty")

// SyntaxError is a text that is not a template: braces that do not pair.
type SyntaxError struct {
	Offset int    // byte offset of the offending braces in the text
	Why    string // e.g. "{{ is never closed with }}"
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("sms text: at byte %d: %s", e.Offset, e.Why)
}

// MissingError is a text whose placeholders name no column of the CSV.
type MissingError struct {
	Names   []string // every placeholder without a column, as written, in order of first use
	Columns []string // the columns the CSV has
}

func (e *MissingError) Error() string {
	ph := make([]string, len(e.Names))
	for i, n := range e.Names {
		ph[i] = "{{" + n + "}}"
	}
	has := "the CSV has no parameter columns"
	if len(e.Columns) > 0 {
		has = "the CSV has: " + strings.Join(e.Columns, ", ")
	}
	if len(ph) == 1 {
		return fmt.Sprintf("placeholder %s has no column (%s)", ph[0], has)
	}
	return fmt.Sprintf("placeholders %s have no column (%s)", strings.Join(ph, ", "), has)
}

// key is how a placeholder and a column name are compared: trimmed and
// lowercased, as csvin compares header names (so it never finds two
// columns with one key).
func key(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

// New parses text and binds its placeholders to columns, the CSV's
// parameter column names in order. Names match case-insensitively with
// the spaces inside the braces trimmed: {{ First Name }} fills from the
// column "first name". Errors are ErrEmpty, a *SyntaxError (the first
// one), or a *MissingError naming every placeholder without a column.
func New(text string, columns []string) (*Text, error) {
	if strings.TrimSpace(text) == "" {
		return nil, ErrEmpty
	}
	col := make(map[string]int, len(columns))
	for i, c := range columns {
		if _, dup := col[key(c)]; !dup {
			col[key(c)] = i
		}
	}
	t := &Text{text: text, columns: columns}
	used := make([]bool, len(columns))
	seen := make(map[string]bool)
	var missing []string
	rest, at := text, 0 // at is rest's offset in text
	for {
		open := strings.Index(rest, "{{")
		if cl := strings.Index(rest, "}}"); cl >= 0 && (open < 0 || cl < open) {
			return nil, &SyntaxError{Offset: at + cl, Why: "}} without an opening {{"}
		}
		if open < 0 {
			break
		}
		inner := rest[open+2:]
		end := strings.Index(inner, "}}")
		if end < 0 {
			return nil, &SyntaxError{Offset: at + open, Why: "{{ is never closed with }}"}
		}
		raw := inner[:end]
		if strings.ContainsAny(raw, "{}") {
			return nil, &SyntaxError{Offset: at + open, Why: fmt.Sprintf("placeholder {{%s}} contains a brace", raw)}
		}
		name := strings.TrimSpace(raw)
		if name == "" {
			return nil, &SyntaxError{Offset: at + open, Why: "empty placeholder {{}}"}
		}
		k := key(name)
		i, ok := col[k]
		if !seen[k] {
			seen[k] = true
			t.names = append(t.names, name)
			if !ok {
				missing = append(missing, name)
			}
		}
		if ok {
			used[i] = true
		}
		t.lits = append(t.lits, rest[:open])
		t.slots = append(t.slots, i)
		t.fixed += open
		n := open + 2 + end + 2
		rest, at = rest[n:], at+n
	}
	t.lits = append(t.lits, rest)
	t.fixed += len(rest)
	if len(missing) > 0 {
		return nil, &MissingError{Names: missing, Columns: columns}
	}
	for i, c := range columns {
		if !used[i] {
			t.unused = append(t.unused, c)
		}
	}
	return t, nil
}

// Names returns the placeholders in order of first use, each as first
// written (trimmed).
func (t *Text) Names() []string { return append([]string(nil), t.names...) }

// Unused returns the columns no placeholder names, in column order: the
// CLI can warn of a column the operator may have meant to use.
func (t *Text) Unused() []string { return append([]string(nil), t.unused...) }

// Control returns why a row's cells cannot fill the text, naming the
// column, when a cell that a placeholder uses holds a control character
// other than a line break or a tab (an escape sequence, a NUL: never
// meant for a phone, and a terminal would act on them); "" otherwise.
func (t *Text) Control(cells []string) string {
	for _, c := range t.slots {
		if c < 0 || c >= len(cells) {
			continue
		}
		for _, r := range cells[c] {
			if r < 0x20 && r != '\n' && r != '\r' && r != '\t' || r >= 0x7f && r <= 0x9f {
				return fmt.Sprintf("column %q: has a control character (%U)", t.columns[c], r)
			}
		}
	}
	return ""
}

// String returns the text as given to New.
func (t *Text) String() string { return t.text }

// Render fills the placeholders with cells, the row's values in the order
// of New's columns. A cell missing from a short row renders empty. It
// allocates once: it runs for every send.
func (t *Text) Render(cells []string) string {
	if len(t.slots) == 0 {
		return t.text
	}
	n := t.fixed
	for _, c := range t.slots {
		if c < len(cells) {
			n += len(cells[c])
		}
	}
	var b strings.Builder
	b.Grow(n)
	for i, c := range t.slots {
		b.WriteString(t.lits[i])
		if c < len(cells) {
			b.WriteString(cells[c])
		}
	}
	b.WriteString(t.lits[len(t.slots)])
	return b.String()
}
