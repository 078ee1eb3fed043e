package whatsapp

import (
	"errors"
	"fmt"
)

// ErrTokenChar is a token with a character no access token holds.
var ErrTokenChar = errors.New("is not one word of printable ASCII")

// CheckToken refuses a token that cannot be one: an access token is one
// word of printable ASCII, and anything else (a line break, a control
// character, a second word) would fail every send, or split the header
// it goes in. The error names the position, never the value.
func CheckToken(t string) error {
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c > 0x20 && c < 0x7f {
			continue
		}
		what := fmt.Sprintf("a byte 0x%02x", c)
		switch {
		case c == '\n' || c == '\r':
			what = "a line break"
		case c == ' ' || c == '\t':
			what = "a space"
		case c < 0x20 || c == 0x7f:
			what = "a control character"
		}
		return fmt.Errorf("%w: it has %s at byte %d of %d", ErrTokenChar, what, i+1, len(t))
	}
	return nil
}
