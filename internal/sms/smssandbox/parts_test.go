package smssandbox

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParts(t *testing.T) {
	a := strings.Repeat
	for _, tc := range []struct {
		name  string
		body  string
		parts int
		ucs2  bool
	}{
		{"empty", "", 0, false},
		{"one character", "a", 1, false},
		{"160 GSM-7 fit one part", a("a", 160), 1, false},
		{"161 split in two", a("a", 161), 2, false},
		{"306 is two parts of 153", a("a", 306), 2, false},
		{"307 needs a third", a("a", 307), 3, false},
		{"a letter outside the alphabet (û) makes it UCS-2", "Ça coûte 5€? Øre, ΔΦΓΛΩΠΨΣΘΞ, ¿¡§¤", 1, true},
		{"the GSM-7 letters beyond ASCII", "ÇÉÑÖÜÄÅÆØßàäåæèéìñòöøùü£¥§¤¿¡ΔΦΓΛΩΠΨΣΘΞ", 1, false},
		{"€ counts two septets", a("€", 80), 1, false},
		{"€ at 161 septets", a("€", 80) + "a", 2, false},
		{"each extension character counts two", a("{}[]~\\|^\f€", 8), 1, false},
		{"extension characters over one part", a("{}[]~\\|^\f€", 8) + "a", 2, false},
		{"an escape is never cut: 152 + € + 152 is three parts", a("a", 152) + "€" + a("a", 152), 3, false},
		{"an escape is never cut: 152 + € + 151 is two parts", a("a", 152) + "€" + a("a", 151), 2, false},
		{"ten GSM-7 parts", a("a", 1530), 10, false},
		{"70 UCS-2 fit one part", a("ж", 70), 1, true},
		{"71 split in two", a("ж", 71), 2, true},
		{"134 is two parts of 67", a("ж", 134), 2, true},
		{"135 needs a third", a("ж", 135), 3, true},
		{"one non-GSM character makes it all UCS-2", a("a", 69) + "ж", 1, true},
		{"one non-GSM character at 71", a("a", 70) + "ж", 2, true},
		{"an emoji is two units", a("😀", 35), 1, true},
		{"an emoji over 70 units", a("😀", 35) + "a", 2, true},
		{"a surrogate pair is never cut: 66 + emoji + 66 is three parts", a("ж", 66) + "😀" + a("ж", 66), 3, true},
		{"a surrogate pair is never cut: 66 + emoji + 65 is two parts", a("ж", 66) + "😀" + a("ж", 65), 2, true},
		{"small c cedilla is not GSM-7 (0x09 is capital Ç)", "ç", 1, true},
		{"backtick is not GSM-7", "`", 1, true},
		{"tab is not GSM-7", "\t", 1, true},
		{"invalid UTF-8 is U+FFFD", "a\xffb", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts, ucs2 := Parts(tc.body)
			if parts != tc.parts || ucs2 != tc.ucs2 {
				t.Errorf("Parts = %d, ucs2 %v; want %d, %v", parts, ucs2, tc.parts, tc.ucs2)
			}
			if rp, ru := refParts(tc.body); rp != parts || ru != ucs2 {
				t.Errorf("the reference counts %d, ucs2 %v", rp, ru)
			}
		})
	}
}

func TestTooLong(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want bool
	}{
		{"1530 GSM-7 septets", strings.Repeat("a", 1530), false},
		{"1531 GSM-7 septets", strings.Repeat("a", 1531), true},
		{"765 € are 1530 septets but eleven parts", strings.Repeat("€", 765), true},
		{"630 UCS-2 characters", strings.Repeat("ж", 630), false},
		{"631 UCS-2 characters", strings.Repeat("ж", 631), true},
		{"315 emoji are 630 units", strings.Repeat("😀", 315), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tooLong(measure(tc.body)); got != tc.want {
				p, u, ucs2 := measure(tc.body)
				t.Errorf("tooLong = %v, want %v (%d parts, %d units, ucs2 %v)", got, tc.want, p, u, ucs2)
			}
		})
	}
}

// The reference alphabet, written as text rather than code points: the
// GSM 03.38 default alphabet in table order (escape left out) and the
// extension table's characters.
const (
	refBasic     = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
	refExtension = "\f^{}\\[~]|€"
)

// refParts is an independent count, by another method: lay the body out
// as a row of cells (septets or UTF-16 units), each marked when it is the
// second cell of an escape or a surrogate pair; if the row exceeds a
// single part, cut it every 153 (or 67) cells, one cell earlier when the
// cut would fall between the two cells of a pair.
func refParts(body string) (int, bool) {
	parts, _, ucs2 := refMeasure(body)
	return parts, ucs2
}

// refMeasure is refParts with the length in cells.
func refMeasure(body string) (parts, cells int, ucs2 bool) {
	gsm := true
	for _, r := range body {
		if !strings.ContainsRune(refBasic+refExtension, r) {
			gsm = false
		}
	}
	var second []bool
	for _, r := range body {
		wide := (gsm && strings.ContainsRune(refExtension, r)) || (!gsm && utf8.RuneLen(r) == 4)
		second = append(second, false)
		if wide {
			second = append(second, true)
		}
	}
	single, multi := 160, 153
	if !gsm {
		single, multi = 70, 67
	}
	n := len(second)
	switch {
	case n == 0:
		return 0, 0, false
	case n <= single:
		return 1, n, !gsm
	}
	for pos := 0; pos < n; parts++ {
		end := pos + multi
		if end < n && second[end] {
			end--
		}
		pos = end
	}
	return parts, n, !gsm
}

func TestReferenceAlphabet(t *testing.T) {
	// The two tables are written differently (code points in the code,
	// characters here): they must hold the same 127 + 10 characters.
	if n := utf8.RuneCountInString(refBasic); n != 127 {
		t.Fatalf("reference basic alphabet has %d characters, want 127", n)
	}
	n := 0
	for _, r := range gsmBasic {
		if r >= 0 {
			n++
			if !strings.ContainsRune(refBasic, r) {
				t.Errorf("%q (U+%04X) is in the code's table, not the reference", r, r)
			}
		}
	}
	for _, r := range refBasic + refExtension {
		if septets[r] == 0 {
			t.Errorf("%q (U+%04X) is in the reference, not the code's table", r, r)
		}
	}
	if n != 127 || len(septets) != 137 {
		t.Errorf("code's tables hold %d basic and %d characters in all, want 127 and 137", n, len(septets))
	}
}
