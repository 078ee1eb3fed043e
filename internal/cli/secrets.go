package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// tokenFileMax bounds what is read of --token-file: Meta's access tokens
// are a few hundred bytes, and the flag may name anything (/dev/zero).
const tokenFileMax = 64 << 10

// readTokenFile reads the access token in the file at path, at most
// tokenFileMax bytes of it.
func readTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", usagef("", "read --token-file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, tokenFileMax+1))
	if err != nil {
		return "", usagef("", "read --token-file: %w", err)
	}
	if len(b) > tokenFileMax {
		return "", usagef("--token-file takes a file that holds the access token alone",
			"--token-file %s is over %d KB: it is not an access token", path, tokenFileMax>>10)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", usagef("", "--token-file %s is empty", path)
	}
	if err := checkToken(t); err != nil {
		return "", usagef("--token-file takes a file that holds the access token alone, on one line", "the token in --token-file %s %w", path, err)
	}
	return t, nil
}

// errTokenChar is a token with a character no access token holds.
var errTokenChar = errors.New("is not one word of printable ASCII")

// checkToken refuses a token that cannot be one: an access token is one
// word of printable ASCII, and anything else (a line break, a control
// character, a second word) would fail every send, or split the header
// it goes in. The error names the position, never the value.
func checkToken(t string) error {
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
		return fmt.Errorf("%w: it has %s at byte %d of %d", errTokenChar, what, i+1, len(t))
	}
	return nil
}
