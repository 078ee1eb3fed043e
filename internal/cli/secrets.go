package cli

import (
	"io"
	"os"
	"strings"

	"github.com/bulksend/bulksend/internal/whatsapp"
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
	if err := whatsapp.CheckToken(t); err != nil {
		return "", usagef("--token-file takes a file that holds the access token alone, on one line", "the token in --token-file %s %w", path, err)
	}
	return t, nil
}
