package segment_test

import (
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/bulksend/bulksend/internal/sms/segment"
)

func TestMeasure(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	u := func(n int) string { return strings.Repeat("ж", n) } // Cyrillic: UCS-2, one unit each
	for _, tc := range []struct {
		name    string
		body    string
		enc     segment.Encoding
		parts   int
		units   int
		tooLong bool
	}{
		{"empty", "", segment.GSM7, 0, 0, false},
		{"160 GSM", a(160), segment.GSM7, 1, 160, false},
		{"161 GSM", a(161), segment.GSM7, 2, 161, false},
		{"306 GSM", a(306), segment.GSM7, 2, 306, false},
		{"307 GSM", a(307), segment.GSM7, 3, 307, false},
		{"euro counts two", a(159) + "€", segment.GSM7, 2, 161, false},
		{"euro fits exactly", a(158) + "€", segment.GSM7, 1, 160, false},
		{"extension table", "{}[]~\\|^\f", segment.GSM7, 1, 18, false},
		{"an escape is never split", a(152) + "€" + a(10), segment.GSM7, 2, 164, false},
		{"GSM accents", "Ça va? è é ù ì ò Ø å Æ ß É Ä Ö Ñ Ü § ¿ ä ö ñ ü à ¡ £ ¥ ¤ ΔΦΓΛΩΠΨΣΘΞ", segment.GSM7, 1, 67, false},
		{"70 UCS-2", u(70), segment.UCS2, 1, 70, false},
		{"71 UCS-2", u(71), segment.UCS2, 2, 71, false},
		{"134 UCS-2", u(134), segment.UCS2, 2, 134, false},
		{"135 UCS-2", u(135), segment.UCS2, 3, 135, false},
		{"one non-GSM character makes it all UCS-2", a(69) + "ç", segment.UCS2, 1, 70, false},
		{"an emoji takes two units", u(68) + "😀", segment.UCS2, 1, 70, false},
		{"an emoji over the line", u(69) + "😀", segment.UCS2, 2, 71, false},
		{"a surrogate pair is never split", u(66) + "😀" + u(10), segment.UCS2, 2, 78, false},
		{"backquote is not GSM", "`", segment.UCS2, 1, 1, false},
		{"1530 GSM", a(1530), segment.GSM7, 10, 1530, false},
		{"1531 GSM refused", a(1531), segment.GSM7, 11, 1531, true},
		{"escapes that push past ten parts", strings.Repeat(a(152)+"€", 10), segment.GSM7, 11, 1540, true},
		{"630 UCS-2", u(630), segment.UCS2, 10, 630, false},
		{"631 UCS-2 refused (AWS's limit)", u(631), segment.UCS2, 10, 631, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := segment.Measure(tc.body)
			if c.Encoding != tc.enc || c.Parts != tc.parts || c.Units != tc.units || c.TooLong() != tc.tooLong {
				t.Errorf("Measure = %+v (too long %v), want %s, %d parts, %d units, too long %v", c, c.TooLong(), tc.enc, tc.parts, tc.units, tc.tooLong)
			}
			if got := len(segment.Split(tc.body)); got != tc.parts {
				t.Errorf("Split gave %d parts, Measure %d", got, tc.parts)
			}
		})
	}
}

func TestFirstNonGSM(t *testing.T) {
	c := segment.Measure("Olá, amigo 😀")
	if c.NonGSM != 'á' || c.At != 2 {
		t.Errorf("NonGSM %q at %d, want 'á' at 2", c.NonGSM, c.At)
	}
	if c := segment.Measure("Hello €"); c.NonGSM != 0 || c.At != -1 {
		t.Errorf("GSM body: NonGSM %q at %d, want none", c.NonGSM, c.At)
	}
	if s := segment.Measure(strings.Repeat("a", 161)).String(); s != "2 GSM-7 parts (161 septets)" {
		t.Errorf("String = %q", s)
	}
}

// FuzzMeasure checks Measure and Split against each other and against a
// second count: the parts rebuild the body, none is over its size, and a
// pair (escape, surrogate) is never cut.
func FuzzMeasure(f *testing.F) {
	for _, s := range []string{"", "hello", strings.Repeat("a", 161), strings.Repeat("€", 80), "ж😀ж", strings.Repeat("😀", 40), "{[~]}\f`"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if !utf8.ValidString(body) {
			return // bodies are valid UTF-8 by the time they are measured
		}
		c := segment.Measure(body)
		parts := segment.Split(body)
		if strings.Join(parts, "") != body {
			t.Fatalf("parts %q do not rebuild %q", parts, body)
		}
		if len(parts) != c.Parts {
			t.Fatalf("Split %d parts, Measure %d", len(parts), c.Parts)
		}
		gsm := c.Encoding == segment.GSM7
		if !gsm && (c.At < 0 || []rune(body)[c.At] != c.NonGSM) {
			t.Fatalf("NonGSM %q at %d does not match the body", c.NonGSM, c.At)
		}
		total := 0
		for _, p := range parts {
			n := 0
			if gsm {
				for _, r := range p {
					n += 1
					if strings.ContainsRune("€{}[]~\\|^\f", r) {
						n++
					}
				}
			} else {
				n = len(utf16.Encode([]rune(p)))
			}
			total += n
			max := 70
			if gsm {
				max = 160
			}
			if len(parts) > 1 {
				max = 67
				if gsm {
					max = 153
				}
			}
			if n > max || n == 0 {
				t.Fatalf("a part of %d units, over %d (or empty): %q", n, max, p)
			}
		}
		if total != c.Units {
			t.Fatalf("units %d, parts hold %d", c.Units, total)
		}
	})
}
