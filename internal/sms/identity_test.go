package sms

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckIdentity(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"+12065550100", true},
		{"+447700900123", true},
		{"phone-abcdef0123456789abcdef0123456789", true},
		{"pool-abcdef0123456789abcdef0123456789", true},
		{"senderid-abcdef0123456789abcdef0123456789", true},
		{"MyBrand", true},
		{"ACME_co-1", true},
		{"arn:aws:sms-voice:us-east-1:111122223333:phone-number/phone-abcdef0123456789abcdef0123456789", true},
		{"arn:aws:sms-voice:us-east-1:111122223333:sender-id/MySenderId/GB", true},
		{"arn:aws-cn:sms-voice:cn-north-1:111122223333:pool/pool-abcdef0123456789abcdef0123456789", true},

		{"", false},
		{"+", false},
		{"+0123", false},
		{"+1206555010012345", false},
		{"+1 206 555 0100", false},
		{"TooLongSenderID", false},
		{"brand/../x", false},
		{"brand?x", false},
		{"brand#x", false},
		{"brand\x1b[2J", false},
		{"bränd", false},
		{"phone-abc/def", false},
		{"arn:aws:sms-voice:us-east-1:111122223333:phone-number/", false},
		{"arn:aws:sns:us-east-1:111122223333:topic/x", false},
		{"arn:aws:sms-voice:us-east-1:1111:pool/pool-1", false},
		{"arn:aws:sms-voice:us-east-1:111122223333:pool/pool-1?x", false},
		{"arn:aws:sms-voice:us-east-1:111122223333:pool//x", false},
	} {
		err := CheckIdentity(tc.id)
		if (err == nil) != tc.ok {
			t.Errorf("CheckIdentity(%q) = %v, want ok %v", tc.id, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrIdentity) {
			t.Errorf("CheckIdentity(%q) = %v, want it to wrap ErrIdentity", tc.id, err)
		}
	}
}

// FuzzCheckIdentity: an identity that passes holds nothing that could
// change the meaning of a URL or a log line it lands in.
func FuzzCheckIdentity(f *testing.F) {
	for _, s := range []string{"+12065550100", "MyBrand", "phone-abc", "arn:aws:sms-voice:us-east-1:111122223333:sender-id/X/GB", "a/b", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := CheckIdentity(id)
		if err != nil {
			if !errors.Is(err, ErrIdentity) {
				t.Fatalf("error %v does not wrap ErrIdentity", err)
			}
			return
		}
		if id == "" || len(id) > 2048 || strings.ContainsAny(id, "?#%&= .\\\"'") || strings.Contains(id, "..") || strings.Contains(id, "//") {
			t.Fatalf("CheckIdentity passed %q", id)
		}
		for _, r := range id {
			if r < 0x21 || r > 0x7e {
				t.Fatalf("CheckIdentity passed %q with %U", id, r)
			}
		}
		if strings.Contains(id, "/") && !strings.HasPrefix(id, "arn:") {
			t.Fatalf("CheckIdentity passed %q: a '/' outside an ARN", id)
		}
	})
}
