package sms

import (
	"errors"
	"fmt"
	"strings"
)

// ErrIdentity marks a sender that is none of the origination identities
// AWS documents.
var ErrIdentity = errors.New("not an origination identity")

// CheckIdentity says whether id has the form of one of the origination
// identities SendTextMessage takes: a phone number in E.164 (+12065550100),
// a resource's ID (phone-, pool-, senderid- or agent- followed by
// letters and digits: AWS's are 32 hexadecimal digits), a sender ID (1 to 11 letters,
// digits, '-' or '_'), or the ARN of one of them. The error wraps
// ErrIdentity and quotes id.
func CheckIdentity(id string) error {
	if !isIdentity(id) {
		return fmt.Errorf("%q is %w (a phone number in E.164, a phone number or pool ID, a sender ID, or an ARN)", id, ErrIdentity)
	}
	return nil
}

func isIdentity(id string) bool {
	switch {
	case strings.HasPrefix(id, "+"):
		return len(id) >= 3 && len(id) <= 16 && id[1] != '0' && digits(id[1:])
	case strings.HasPrefix(id, "arn:"):
		return identityARN(id)
	case resourceID(id):
		return true
	}
	return isSenderID(id)
}

// resourceID is a phone number's, pool's, sender ID's or RCS agent's ID.
func resourceID(id string) bool {
	for _, p := range []string{"phone-", "pool-", "senderid-", "agent-"} {
		if rest, ok := strings.CutPrefix(id, p); ok && rest != "" && len(rest) <= 64 {
			for i := 0; i < len(rest); i++ {
				if !alnum(rest[i]) {
					return false
				}
			}
			return true
		}
	}
	return false
}

// isSenderID is AWS's alphanumeric sender ID: at most 11 characters.
func isSenderID(id string) bool {
	if id == "" || len(id) > 11 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !alnum(c) && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// identityARN is arn:PARTITION:sms-voice:REGION:ACCOUNT:TYPE/NAME, in the
// characters AWS's model allows an origination identity ([A-Za-z0-9_:/+-]).
func identityARN(id string) bool {
	if len(id) > 2048 {
		return false
	}
	f := strings.SplitN(id, ":", 6)
	if len(f) != 6 || !strings.HasPrefix(f[1], "aws") || f[2] != "sms-voice" || f[3] == "" || len(f[4]) != 12 || !digits(f[4]) {
		return false
	}
	kind, name, ok := strings.Cut(f[5], "/")
	if !ok || kind == "" || name == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !alnum(c) && !strings.ContainsRune("_:/+-", rune(c)) {
			return false
		}
	}
	return !strings.Contains(f[5], "//") && !strings.HasSuffix(name, "/")
}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
