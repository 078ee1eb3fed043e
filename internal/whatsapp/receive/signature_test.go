package receive

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// TestParseSignature: the header is "sha256=" and 64 hex digits, nothing
// else; the parsed digest is the one the digits spell.
func TestParseSignature(t *testing.T) {
	mac := hmac.New(sha256.New, []byte("secret"))
	mac.Write([]byte(`{"object":"whatsapp_business_account"}`))
	sum := mac.Sum(nil)
	digits := hex.EncodeToString(sum)
	for _, tc := range []struct {
		name, v string
		err     error
	}{
		{"as Meta writes it", "sha256=" + digits, nil},
		{"uppercase digits", "sha256=" + strings.ToUpper(digits), nil},
		{"uppercase prefix", "SHA256=" + digits, nil},
		{"empty", "", errSigPrefix},
		{"prefix only", "sha256=", errSigHex},
		{"no prefix", digits, errSigPrefix},
		{"sha1 prefix", "sha1=" + digits, errSigPrefix},
		{"a space after the prefix", "sha256= " + digits, errSigHex},
		{"a trailing space", "sha256=" + digits + " ", errSigHex},
		{"63 digits", "sha256=" + digits[:63], errSigHex},
		{"65 digits", "sha256=" + digits + "0", errSigHex},
		{"not hex", "sha256=" + strings.Repeat("z", 64), errSigHex},
		{"base64, as some send it", "sha256=" + "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq8=AAAAAAAAA", errSigHex},
		{"two signatures", "sha256=" + digits + ",sha256=" + digits, errSigHex},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sig, err := parseSignature(tc.v)
			if !errors.Is(err, tc.err) {
				t.Fatalf("parseSignature(%q): %v, want %v", tc.v, err, tc.err)
			}
			if err == nil && !hmac.Equal(sig[:], sum) {
				t.Errorf("parseSignature(%q) = %x, want %x", tc.v, sig, sum)
			}
		})
	}
}

// wellFormed is an independent statement of what parseSignature accepts.
var wellFormed = regexp.MustCompile(`^(?i:sha256=)[0-9a-fA-F]{64}$`)

// FuzzParseSignature: parseSignature never panics, accepts exactly what
// wellFormed matches, and what it accepts spells its digest.
func FuzzParseSignature(f *testing.F) {
	for _, s := range []string{
		"", "sha256=", "sha256=" + strings.Repeat("ab", 32), "SHA256=" + strings.Repeat("AB", 32),
		"sha256=" + strings.Repeat("0", 63), "sha1=" + strings.Repeat("0", 40), "sha256=" + strings.Repeat("g", 64),
		"sha256=\x00" + strings.Repeat("0", 63), "sHa256=" + strings.Repeat("9f", 32),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		sig, err := parseSignature(v)
		if ok := wellFormed.MatchString(v); ok != (err == nil) {
			t.Fatalf("parseSignature(%q): err %v, but well formed: %v", v, err, ok)
		}
		if err != nil {
			return
		}
		if got, want := "sha256="+hex.EncodeToString(sig[:]), strings.ToLower(v); got != want {
			t.Fatalf("parseSignature(%q) = %s", v, got)
		}
	})
}
