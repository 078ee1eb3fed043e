// Package segment measures an SMS body as carriers carry it: in GSM-7 when
// every character is in the GSM 03.38 alphabet, else in UCS-2; in one part
// of 160 septets or 70 UTF-16 units, or, when longer, in parts of 153 or
// 67 (the rest of each part's 140 bytes holds the concatenation header). A
// character of the GSM extension table (€ { } [ ] ~ \ | ^ and form feed)
// takes two septets, an escape and itself; a character beyond the Basic
// Multilingual Plane (most emoji) takes two UTF-16 units, a surrogate pair.
// A split never cuts either pair, so a part may hold 152 septets or 66
// units. Providers bill, and pace, by part.
//
// It imports nothing of ours: the SMS channel's import, dry run and sandbox
// all count with it, and the sandbox's counter is its own code.
package segment

import (
	"fmt"
	"unicode/utf8"
)

// Encoding is how a body is sent.
type Encoding string

const (
	GSM7 Encoding = "GSM-7"
	UCS2 Encoding = "UCS-2"
)

// Part sizes, in septets (GSM-7) or UTF-16 units (UCS-2).
const (
	gsmSingle, gsmMulti = 160, 153
	ucsSingle, ucsMulti = 70, 67
)

// Limits past which AWS End User Messaging refuses a message: ten parts,
// 1,530 GSM-7 or 630 UCS-2 characters.
const (
	MaxParts = 10
	MaxGSM7  = 1530
	MaxUCS2  = 630
)

// Count is what Measure found.
type Count struct {
	Encoding Encoding
	Parts    int // 0 for an empty body
	// Units is the body's length in septets (GSM-7) or UTF-16 units
	// (UCS-2).
	Units int
	// NonGSM is the first character that made the body UCS-2, and At its
	// index in characters (from 0); 0 and -1 for a GSM-7 body.
	NonGSM rune
	At     int
}

// TooLong reports whether a provider would refuse the body: more than
// MaxParts parts, or more characters than MaxGSM7 or MaxUCS2.
func (c Count) TooLong() bool {
	if c.Parts > MaxParts {
		return true
	}
	if c.Encoding == GSM7 {
		return c.Units > MaxGSM7
	}
	return c.Units > MaxUCS2
}

// String is for plans and reasons: "2 GSM-7 parts (161 septets)".
func (c Count) String() string {
	unit := "septets"
	if c.Encoding == UCS2 {
		unit = "UTF-16 units"
	}
	s := "s"
	if c.Parts == 1 {
		s = ""
	}
	return fmt.Sprintf("%d %s part%s (%d %s)", c.Parts, c.Encoding, s, c.Units, unit)
}

// Measure counts the parts of body.
func Measure(body string) Count {
	c := Count{Encoding: GSM7, At: -1}
	i := 0
	for _, r := range body {
		if septets(r) == 0 {
			c.Encoding, c.NonGSM, c.At = UCS2, r, i
			break
		}
		i++
	}
	c.Parts, c.Units = pack(body, c.Encoding, nil)
	return c
}

// Split cuts body into its parts as Measure counts them, never inside an
// escape or a surrogate pair; their concatenation is body.
func Split(body string) []string {
	enc := Measure(body).Encoding
	var parts []string
	pack(body, enc, &parts)
	return parts
}

// pack lays body's characters into parts greedily and returns how many
// parts and units it took; with out set it also cuts the parts.
func pack(body string, enc Encoding, out *[]string) (parts, units int) {
	size := func(r rune) int {
		if enc == GSM7 {
			return septets(r)
		}
		if r > 0xFFFF {
			return 2
		}
		return 1
	}
	for _, r := range body {
		units += size(r)
	}
	if units == 0 {
		return 0, 0
	}
	single, multi := gsmSingle, gsmMulti
	if enc == UCS2 {
		single, multi = ucsSingle, ucsMulti
	}
	if units <= single {
		if out != nil {
			*out = append(*out, body)
		}
		return 1, units
	}
	parts, fill, start := 1, 0, 0
	for i, r := range body {
		n := size(r)
		if fill+n > multi {
			if out != nil {
				*out = append(*out, body[start:i])
			}
			parts, fill, start = parts+1, 0, i
		}
		fill += n
	}
	if out != nil {
		*out = append(*out, body[start:])
	}
	return parts, units
}

// septets is the size of r in GSM-7: 1 in the basic table, 2 in the
// extension table (escape + code), 0 when GSM-7 cannot carry it.
func septets(r rune) int {
	if r < utf8.RuneSelf {
		return int(asciiSeptets[r])
	}
	switch r {
	case '€':
		return 2
	case '£', '¥', 'è', 'é', 'ù', 'ì', 'ò', 'Ç', 'Ø', 'ø', 'Å', 'å', 'Δ', 'Φ', 'Γ', 'Λ', 'Ω', 'Π', 'Ψ',
		'Σ', 'Θ', 'Ξ', 'Æ', 'æ', 'ß', 'É', '¤', '¡', 'Ä', 'Ö', 'Ñ', 'Ü', '§', '¿', 'ä', 'ö', 'ñ', 'ü', 'à':
		return 1
	}
	return 0
}

// asciiSeptets sizes the ASCII characters: GSM 03.38's basic table holds
// most of them, its extension table ^ { } \ [ ~ ] | and form feed; `
// and the other control characters are not in GSM-7.
var asciiSeptets = func() (t [utf8.RuneSelf]uint8) {
	for r := ' '; r <= '~'; r++ {
		t[r] = 1
	}
	t['\n'], t['\r'] = 1, 1
	t['`'] = 0
	for _, r := range "^{}\\[~]|\f" {
		t[r] = 2
	}
	return t
}()
