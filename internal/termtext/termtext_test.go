package termtext

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain text is kept", "spring_sale/en_US", "spring_sale/en_US"},
		{"empty", "", ""},
		{"non-ASCII letters are kept", "Zoë, Ñandú, Łódź, 東京, Привет", "Zoë, Ñandú, Łódź, 東京, Привет"},
		{"emoji are kept, joiners and variation selectors too", "🎉 👩‍👩‍👧 ❤️ 🇬🇧", "🎉 👩‍👩‍👧 ❤️ 🇬🇧"},
		{"screen clear", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"window title", "\x1b]0;pwned\a", `\x1b]0;pwned\a`},
		{"window title ended by ST", "\x1b]0;pwned\x1b\\", `\x1b]0;pwned\x1b\`},
		{"colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"a newline does not break the line", "title\nbulksend: hint: resend everything", `title\nbulksend: hint: resend everything`},
		{"a carriage return does not overwrite the line", "ok\rfailed", `ok\rfailed`},
		{"tab", "a\tb", `a\tb`},
		{"NUL", "a\x00b", `a\x00b`},
		{"backspace", "abc\b\b", `abc\b\b`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"C1 CSI", "\u009b2J", `\u009b2J`},
		{"C1 NEL", "a\u0085b", `a\u0085b`},
		{"the first and last C1", "\u0080\u009f", `\u0080\u009f`},
		{"U+00A0 and after are kept", "\u00a0é", "\u00a0é"},
		{"invalid UTF-8, byte by byte", "a\xff\xfeb", `a\xff\xfeb`},
		{"a lone C1 byte is invalid UTF-8", "a\x9bb", `a\x9bb`},
		{"a truncated sequence", "é\xc3", `é\xc3`},
		{"U+FFFD itself is kept", "\ufffd", "\ufffd"},
		{"backslashes are kept", `C:\new\x1b`, `C:\new\x1b`},
		{"text quoted by %q stays readable", strconv.Quote("a\x1bb"), `"a\x1bb"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Escape(tc.in); got != tc.want {
				t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestEscapeNotation: each character is escaped as strconv.Quote (%q,
// the text log format) escapes it, so one notation reads the same in an
// error line, a status view and a log line.
func TestEscapeNotation(t *testing.T) {
	var chars []string
	for c := 0; c < 0x20; c++ {
		chars = append(chars, string(rune(c)))
	}
	chars = append(chars, "\x7f", "\x80", "\xff")
	for r := rune(0x80); r <= 0x9f; r++ {
		chars = append(chars, string(r))
	}
	for _, c := range chars {
		want := strings.Trim(strconv.Quote(c), `"`)
		if got := Escape(c); got != want {
			t.Errorf("Escape(%q) = %s, want %s", c, got, want)
		}
	}
}

func TestJoin(t *testing.T) {
	got := Join([]string{"+12065550100", "evil\x1b[2J", "bad\nline"}, ", ")
	if want := `+12065550100, evil\x1b[2J, bad\nline`; got != want {
		t.Errorf("Join = %q, want %q", got, want)
	}
	if got := Join(nil, ", "); got != "" {
		t.Errorf("Join(nil) = %q, want empty", got)
	}
}

// FuzzEscape: the output holds nothing a terminal acts on (no byte below
// 0x20, no DEL, no C1 control) and is valid UTF-8; text with none of
// those is returned as it is; and what is not escaped is kept in order.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{
		"", "plain", "Zoë 🎉 👩‍👩‍👧", "\x1b[2J", "\x1b]0;title\a", "a\nb\r\tc", "\x00\x7f", "\u009b\u0085",
		"\xff\xfe", "\xc3", "é\xc3(", `C:\new\x1b`, "\ufffd", "\xed\xa0\x80", "\xf4\x90\x80\x80",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Escape(%q) = %q: not valid UTF-8", s, out)
		}
		printable := utf8.ValidString(s)
		for _, r := range out {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f {
				t.Fatalf("Escape(%q) = %q: holds %U", s, out, r)
			}
		}
		for _, r := range s {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f {
				printable = false
			}
		}
		if printable && out != s {
			t.Fatalf("Escape(%q) = %q, want it unchanged", s, out)
		}
		if !printable && out == s {
			t.Fatalf("Escape(%q) left it unchanged", s)
		}
		// Every printable character of s is in out, in order: escaping
		// only ever replaces, it never drops or reorders.
		rest := out
		for _, r := range s {
			if r == utf8.RuneError || r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f {
				continue
			}
			i := strings.IndexRune(rest, r)
			if i < 0 {
				t.Fatalf("Escape(%q) = %q: lost %q", s, out, r)
			}
			rest = rest[i+utf8.RuneLen(r):]
		}
		if Escape(out) != out {
			t.Fatalf("Escape(%q) = %q, which Escape changes again", s, out)
		}
		// Without a backslash of its own, s can be read back from out.
		if !strings.Contains(s, `\`) {
			if back, err := unescape(out); err != nil || back != s {
				t.Fatalf("Escape(%q) = %q, read back as %q (%v)", s, out, back, err)
			}
		}
	})
}

// unescape reads Escape's notation back.
func unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return "", fmt.Errorf("a backslash at the end")
		}
		i++
		if c := strings.IndexByte("abfnrtv", s[i]); c >= 0 {
			b.WriteByte("\a\b\f\n\r\t\v"[c])
			continue
		}
		var n int
		switch s[i] {
		case 'x':
			n = 2
		case 'u':
			n = 4
		default:
			return "", fmt.Errorf("unknown escape \\%c", s[i])
		}
		if i+n >= len(s) {
			return "", fmt.Errorf("a short escape")
		}
		v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
		if err != nil {
			return "", err
		}
		if n == 2 {
			b.WriteByte(byte(v))
		} else {
			b.WriteRune(rune(v))
		}
		i += n
	}
	return b.String(), nil
}
