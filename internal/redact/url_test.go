package redact

import "testing"

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://graph.facebook.com", "https://graph.facebook.com"},
		{"AWS End User Messaging SMS", "AWS End User Messaging SMS"},
		{"http://user:pass@127.0.0.1:9", "http://***@127.0.0.1:9"},
		{"http://token@host/v1", "http://***@host/v1"},
		{"http://host/x?access_token=abc&a=b", "http://host/x?a=***&access_token=***"},
		{"http://us er:p@ss@host:bad port", "***@host:bad port"},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
