package template

import "testing"

// runeControl is control as a loop over runes, what it replaced.
func runeControl(v string, jsonSpace bool) (rune, bool) {
	for _, r := range v {
		if jsonSpace && (r == '\t' || r == '\n' || r == '\r') {
			continue
		}
		if r < 0x20 || r >= 0x7f && r <= 0x9f {
			return r, true
		}
	}
	return 0, false
}

// TestControlIsARuneLoop: control, which reads bytes, finds what a loop
// over runes finds, for every string of up to four bytes made of the
// bytes that matter: controls, the edges of C1, leading and continuation
// bytes, and bytes that are never UTF-8.
func TestControlIsARuneLoop(t *testing.T) {
	alphabet := []byte{0x00, '\t', '\n', '\r', 0x1f, ' ', 'a', 0x7e, 0x7f, 0x80, 0x85, 0x9f, 0xa0, 0xbf, 0xc1, 0xc2, 0xc3, 0xe0, 0xe2, 0xf0, 0xff}
	var walk func(b []byte)
	walk = func(b []byte) {
		for _, jsonSpace := range []bool{false, true} {
			r, ok := control(string(b), jsonSpace)
			wr, wok := runeControl(string(b), jsonSpace)
			if r != wr || ok != wok {
				t.Fatalf("control(%q, %v) = %U, %v; a loop over runes finds %U, %v", b, jsonSpace, r, ok, wr, wok)
			}
		}
		if len(b) == 4 {
			return
		}
		for _, c := range alphabet {
			walk(append(b, c))
		}
	}
	walk(nil)
}
