package receive

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// Why a signature header is refused.
var (
	errSigPrefix = errors.New(`signature does not start with "sha256="`)
	errSigHex    = errors.New("signature is not 64 hex digits")
)

// parseSignature reads an X-Hub-Signature-256 value, "sha256=" and the
// HMAC's 64 hex digits. Meta writes lowercase; the prefix and the digits
// are accepted in either case, since they name the same digest. Nothing
// else is accepted, not even spaces: net/http has already trimmed those
// around the value, and anything more is not Meta.
func parseSignature(v string) ([sha256.Size]byte, error) {
	var sig [sha256.Size]byte
	const prefix = "sha256="
	if len(v) < len(prefix) || !strings.EqualFold(v[:len(prefix)], prefix) {
		return sig, errSigPrefix
	}
	digits := v[len(prefix):]
	if len(digits) != hex.EncodedLen(sha256.Size) {
		return sig, errSigHex
	}
	if _, err := hex.Decode(sig[:], []byte(digits)); err != nil {
		return sig, errSigHex
	}
	return sig, nil
}
