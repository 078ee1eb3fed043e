package cli

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestLedgerScope: the operator ledger's scope of a run is the sandbox,
// the provider URL a flag or the environment points each channel at
// (credentials masked), or "" for the real provider; each channel's
// entry says which URL is its.
func TestLedgerScope(t *testing.T) {
	env := func(kv ...string) *IO {
		return &IO{Getenv: func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}}
	}
	for _, tc := range []struct {
		name string
		o    runOptions
		ios  *IO
		ch   *channelEntry
		want string
	}{
		{"whatsapp, Meta", runOptions{}, env(), whatsappEntry, ""},
		{"whatsapp, --api-url", runOptions{apiURL: "http://127.0.0.1:8080"}, env(), whatsappEntry, "http://127.0.0.1:8080"},
		{"whatsapp, $BULKSEND_API_URL", runOptions{}, env("BULKSEND_API_URL", "http://u:secret@h:1"), whatsappEntry, "http://***@h:1"},
		{"whatsapp ignores AWS_ENDPOINT_URL", runOptions{}, env("AWS_ENDPOINT_URL", "http://h:2"), whatsappEntry, ""},
		{"sms, AWS", runOptions{}, env(), smsEntry, ""},
		{"sms, --endpoint-url", runOptions{endpointURL: "http://h:3"}, env("AWS_ENDPOINT_URL", "http://h:4"), smsEntry, "http://h:3"},
		{"sms, $AWS_ENDPOINT_URL", runOptions{}, env("AWS_ENDPOINT_URL", "http://h:4"), smsEntry, "http://h:4"},
		{"sms ignores BULKSEND_API_URL", runOptions{}, env("BULKSEND_API_URL", "http://h:5"), smsEntry, ""},
		{"sandbox", runOptions{sandbox: true, endpointURL: "http://h:3"}, env(), smsEntry, "sandbox"},
	} {
		if got := tc.o.ledgerScope(tc.ios, tc.ch); got != tc.want {
			t.Errorf("%s: ledgerScope = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestOptoutsChannel: optouts add takes the registry's channels or none.
func TestOptoutsChannel(t *testing.T) {
	for _, tc := range []struct {
		channel string
		code    int
	}{{"email", ExitUsage}, {"sms", ExitOK}, {"whatsapp", ExitOK}} {
		var stderr strings.Builder
		ios := &IO{In: strings.NewReader(""), Out: io.Discard, Err: &stderr, Getenv: func(string) string { return "" }}
		ledger := filepath.Join(t.TempDir(), "ledger.db")
		code := runMain([]string{"optouts", "add", "--ledger", ledger, "--channel", tc.channel, "+12015550101"}, ios)
		if code != tc.code {
			t.Errorf("--channel %s: exit %d, want %d:\n%s", tc.channel, code, tc.code, stderr.String())
		}
		if tc.code == ExitUsage && !strings.Contains(stderr.String(), `--channel "email": whatsapp or sms`) {
			t.Errorf("--channel email says:\n%s", stderr.String())
		}
	}
}
