package whatsapp

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckToken(t *testing.T) {
	for _, tc := range []struct {
		name, token, want string
	}{
		{"plain", "EAAGm0PX4ZCpsBA1b2c3", ""},
		{"line break inside", "EAAG\nm0PX", "a line break at byte 5 of 9"},
		{"carriage return", "EAAG\rm0PX", "a line break"},
		{"space", "EAAG m0PX", "a space"},
		{"NUL", "EAAG\x00", "a control character"},
		{"escape", "EAAG\x1b[2J", "a control character"},
		{"non-ASCII", "EAAGé", "a byte 0xc3"},
	} {
		err := CheckToken(tc.token)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrTokenChar) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "EAAG") {
			t.Errorf("%s: the error shows the token: %v", tc.name, err)
		}
	}
}
