package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --token-file /dev/zero is refused after 64 KB, not read to the end.
func TestTokenFileDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := readTokenFile("/dev/zero")
	if err == nil || !strings.Contains(err.Error(), "over 64 KB") {
		t.Fatalf("readTokenFile(/dev/zero) = %v, want over 64 KB", err)
	}
}

func TestTokenFileLineBreakInside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	os.WriteFile(path, []byte("EAAGsecret1\nEAAGsecret2\n"), 0o600)
	_, err := readTokenFile(path)
	if err == nil || !strings.Contains(err.Error(), "line break") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("readTokenFile = %v, want a line break named and no token", err)
	}
	os.WriteFile(path, []byte("  EAAGsecret1\n"), 0o600)
	if tok, err := readTokenFile(path); err != nil || tok != "EAAGsecret1" {
		t.Fatalf("readTokenFile = %q, %v; the spaces and line break around a token are trimmed", tok, err)
	}
}

// An adapter's hint names settings, {from}; the command line names the
// flags, and leaves other braces alone.
func TestFlagNames(t *testing.T) {
	for in, want := range map[string]string{
		"check {from} and {region}":          "check --from and --region",
		"placeholders are {{first_name}}":    "placeholders are {{first_name}}",
		"the body's {{text}} is not --text":  "the body's {{text}} is not --text",
		"{text}}, {{text}":                   "{text}}, {{text}",
		"through {budget}; {apply} names it": "through --budget; --apply names it",
		"{not-a-flag} stays":                 "{not-a-flag} stays",
		"no braces":                          "no braces",
	} {
		if got := flagNames(in); got != want {
			t.Errorf("flagNames(%q) = %q, want %q", in, got, want)
		}
	}
}

// --text-file /dev/zero is refused after 64 KB, not read to the end (it
// took memory without bound, about 200 MB a second); a body file is read
// without the line break an editor ends it with.
func TestTextFileDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := readTextFile("/dev/zero")
	if err == nil || !strings.Contains(err.Error(), "over 64 KB") {
		t.Fatalf("readTextFile(/dev/zero) = %v, want over 64 KB", err)
	}
	path := filepath.Join(t.TempDir(), "body.txt")
	os.WriteFile(path, []byte("Hi {{name}}\r\n"), 0o600)
	if body, err := readTextFile(path); err != nil || body != "Hi {{name}}" {
		t.Fatalf("readTextFile = %q, %v; want %q", body, err, "Hi {{name}}")
	}
}
