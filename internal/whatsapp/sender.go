package whatsapp

import (
	"errors"
	"fmt"
)

// ErrSender marks a sender that is not a phone-number ID.
var ErrSender = errors.New("not a phone-number ID")

// maxIDDigits bounds a Graph object ID: Meta's are 15 to 17 digits.
const maxIDDigits = 32

// CheckSender says whether id can be a sender's phone-number ID: digits
// only, as WhatsApp Manager shows them. The ID goes into the request's
// path, so a CSV cell must never steer a request (and its token) to
// another Graph path. The error wraps ErrSender and quotes id.
func CheckSender(id string) error {
	if !isGraphID(id) {
		return fmt.Errorf("%q is %w (digits)", id, ErrSender)
	}
	return nil
}

func isGraphID(id string) bool {
	if id == "" || len(id) > maxIDDigits {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < '0' || id[i] > '9' {
			return false
		}
	}
	return true
}
