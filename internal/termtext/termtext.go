// Package termtext makes outside text safe to print on a terminal. A CSV
// cell, a webhook's error title, an API's answer or a file name may hold
// control characters: printed raw, ESC [2J clears the screen, ESC ]0;…
// BEL retitles the window, a carriage return or a newline forges a line
// ("bulksend: hint: …"). Escape writes each of them as a visible escape.
//
// Only outside values are escaped, where they are printed: the newlines
// and tabs of bulksend's own layout are not values and stay as they are.
package termtext

import (
	"strings"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// Escape returns s with every character a terminal could act on written
// as an escape, in Go's notation (the one strconv.Quote, %q and the text
// log format use), and everything else exactly as it is, non-ASCII
// letters and emoji included:
//
//   - C0 controls (U+0000–U+001F): \a \b \f \n \r \t \v, the others as
//     \xHH ("\x1b" for ESC, "\x00" for NUL);
//   - DEL: \x7f;
//   - C1 controls (U+0080–U+009F, which some terminals take as ESC
//     sequences: U+009B is CSI): \u0080 to \u009f;
//   - each byte that is not part of valid UTF-8: \xHH.
//
// Backslashes are kept as they are: text that has an escape already (a
// value an error quoted with %q) reads as it did, and text without any
// character above is returned unchanged. So an escape in the output may
// stand for a control character or for the same characters written in
// the value; the exact value is in the JSON output, the export and the
// checkpoint. The result has no byte below 0x20, no DEL, no C1 control,
// and is valid UTF-8.
func Escape(s string) string {
	i := unsafeAt(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			b.WriteByte(c)
			i++
			continue
		}
		if c < 0x80 { // C0 or DEL
			writeControl(&b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			writeByte(&b, c)
		case r <= 0x9f: // C1
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Join escapes each of elems and joins them with sep, which is bulksend's
// own text and is not escaped.
func Join(elems []string, sep string) string {
	out := make([]string, len(elems))
	for i, e := range elems {
		out[i] = Escape(e)
	}
	return strings.Join(out, sep)
}

// unsafeAt is the index of the first byte of s that Escape changes, -1
// for none.
func unsafeAt(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		if c < 0x80 {
			return i
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r <= 0x9f {
			return i
		}
		i += size
	}
	return -1
}

func writeControl(b *strings.Builder, c byte) {
	switch c {
	case '\a':
		b.WriteString(`\a`)
	case '\b':
		b.WriteString(`\b`)
	case '\f':
		b.WriteString(`\f`)
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	case '\t':
		b.WriteString(`\t`)
	case '\v':
		b.WriteString(`\v`)
	default:
		writeByte(b, c)
	}
}

func writeByte(b *strings.Builder, c byte) {
	b.WriteString(`\x`)
	b.WriteByte(hex[c>>4])
	b.WriteByte(hex[c&0xf])
}
