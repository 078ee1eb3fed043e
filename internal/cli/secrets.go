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
	t, err := readLineFile("token-file", path, tokenFileMax, "an access token")
	if err != nil {
		return "", err
	}
	if err := whatsapp.CheckToken(t); err != nil {
		return "", usagef("--token-file takes a file that holds the access token alone, on one line", "the token in --token-file %s %w", path, err)
	}
	return t, nil
}

// readLineFile reads the secret in the file at path that --flag names:
// at most limit bytes (the flag may name anything, /dev/zero), spaces
// around it trimmed, not empty. what names the secret in the hint.
func readLineFile(flag, path string, limit int64, what string) (string, error) {
	if path == "" {
		return "", usagef("", "--%s is required", flag)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", usagef("", "read --%s: %w", flag, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", usagef("", "read --%s: %w", flag, err)
	}
	if int64(len(b)) > limit {
		return "", usagef("--"+flag+" takes a file that holds "+what+" alone",
			"--%s %s is over %d KB: it is not %s", flag, path, limit>>10, what)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", usagef("", "--%s %s is empty", flag, path)
	}
	return t, nil
}
