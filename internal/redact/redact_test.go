package redact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestPhone(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"E.164", "+12015553456", "+*******3456"},
		{"long", "+447700900123", "+********0123"},
		{"spaces kept", "+44 7700 900123", "+** **** **0123"},
		{"four digits or fewer masked whole", "1234", "****"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Phone(tc.in); got != tc.want {
				t.Errorf("Phone(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestPhones(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"in a sentence", "not a valid GB number (write +12015553456 if it includes the country code)",
			"not a valid GB number (write +*******3456 if it includes the country code)"},
		{"two", "+12015553456,+447700900123", "+*******3456,+********0123"},
		{"a phone-number ID has no plus", "sender 106540352242922", "sender 106540352242922"},
		{"too short to be a phone", "rate +80", "rate +80"},
		{"no plus at all", "200 rows", "200 rows"},

		// National and formatted forms, as a suppression list's unusable
		// line is echoed in its error.
		{"national with spaces", `line 2: "07700 900123": invalid phone number: not a valid +44 number`,
			`line 2: "***** **0123": invalid phone number: not a valid +44 number`},
		{"national run", "07700900123", "*******0123"},
		{"national in pairs", "06 12 34 56 78", "** ** ** 56 78"},
		{"formatted with a letter after", `"+1 (201) 555-0101x": invalid phone number: contains letters`,
			`"+* (***) ***-0101x": invalid phone number: contains letters`},
		{"trunk zero in brackets", "+44 (0)7700 900123", "+** (*)**** **0123"},
		{"area code in brackets", "(201) 555-0101", "(***) ***-0101"},
		{"dashes", "call 201-555-0101.", "call ***-***-0101."},
		{"dots", "201.555.0101", "***.***.0101"},
		{"spaces", "201 555 0101", "*** *** 0101"},
		{"without its plus", `"12015550100": invalid phone number: not a valid GB number (write +12015550100 if it includes the country code)`,
			`"*******0100": invalid phone number: not a valid GB number (write +*******0100 if it includes the country code)`},
		{"national without trunk prefix", "2015550100", "******0100"},
		{"two in a row", "+447700900123 07700900124", "+********0123 *******0124"},
		{"a phone then a count", "+1 201 555 0100 1000001", "+* *** *** 0100 1000001"},
		{"in a JSON array", `["07700900123","+12015553456"]`, `["*******0123","+*******3456"]`},

		// What logs hold that is not a phone.
		{"sender numbers", "--from 1000001,1000002 number=1000001 [1000001 1000002]", "--from 1000001,1000002 number=1000001 [1000001 1000002]"},
		{"a WABA ID", "does not fit template spring_sale/en_US as approved (WABA 100000000000001)", "does not fit template spring_sale/en_US as approved (WABA 100000000000001)"},
		{"a sender ID in brackets", "number (1000001) rested", "number (1000001) rested"},
		{"a count", "campaign: 2000000 rows = 1999999 sent + 1 failed", "campaign: 2000000 rows = 1999999 sent + 1 failed"},
		{"a timestamp", "time=2026-12-01T10:13:52.123Z next 2026-12-01 10:13:52.123456789 +0000 UTC", "time=2026-12-01T10:13:52.123Z next 2026-12-01 10:13:52.123456789 +0000 UTC"},
		{"a dotted date", "2026.12.01", "2026.12.01"},
		{"durations", "in 1.234567891s, 1h2m3.123456789s, every 0.0123456789s", "in 1.234567891s, 1h2m3.123456789s, every 0.0123456789s"},
		{"a decimal then a count", "rate 0.5 1000001", "rate 0.5 1000001"},
		{"an address", "http://192.168.100.200:9090/metrics", "http://192.168.100.200:9090/metrics"},
		{"thousands", "1.234.567 rows", "1.234.567 rows"},
		{"hex", "file sha256 3f2a1234567890bc9d", "file sha256 3f2a1234567890bc9d"},
		{"a UUID", "RequestID: 1b2c3d4e-1234-5678-9abc-123456789012", "RequestID: 1b2c3d4e-1234-5678-9abc-123456789012"},
		{"a message ID", "wamid.HBgLMTIwMTU1NTAxMDAVAgARGBI1234567890", "wamid.HBgLMTIwMTU1NTAxMDAVAgARGBI1234567890"},
		{"an error code", "(#131026) Message undeliverable; codes [131000 131026 130429]", "(#131026) Message undeliverable; codes [131000 131026 130429]"},
		{"too long for a phone", "+1234567890123456789", "+1234567890123456789"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Phones(tc.in); got != tc.want {
				t.Errorf("Phones(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

type stringer struct{ s string }

func (s stringer) String() string { return s.s }

func TestHandler(t *testing.T) {
	const phone = "+12015553456"
	for _, tc := range []struct {
		name   string
		log    func(*slog.Logger)
		masked bool // the phone must not appear; else it must
	}{
		{"message", func(l *slog.Logger) { l.Info("sent to " + phone) }, true},
		{"string attribute", func(l *slog.Logger) { l.Warn("x", "phone", phone) }, true},
		{"error attribute", func(l *slog.Logger) { l.Error("x", "err", fmt.Errorf("line 3: %w", errors.New("write "+phone))) }, true},
		{"stringer", func(l *slog.Logger) { l.Info("x", "who", stringer{phone}) }, true},
		{"slice", func(l *slog.Logger) { l.Info("x", "phones", []string{phone}) }, true},
		{"group", func(l *slog.Logger) { l.Info("x", slog.Group("row", "phone", phone)) }, true},
		{"logger attributes", func(l *slog.Logger) { l.With("phone", phone).Info("x") }, true},
		{"logger attributes in a group", func(l *slog.Logger) { l.WithGroup("g").With("phone", phone).Info("x") }, true},
		{"debug keeps it", func(l *slog.Logger) { l.Debug("x", "phone", phone) }, false},
	} {
		for _, format := range []string{"text", "json"} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				var buf bytes.Buffer
				opts := &slog.HandlerOptions{Level: slog.LevelDebug}
				var h slog.Handler = slog.NewTextHandler(&buf, opts)
				if format == "json" {
					h = slog.NewJSONHandler(&buf, opts)
				}
				tc.log(slog.New(NewHandler(h)))
				out := buf.String()
				if out == "" {
					t.Fatal("nothing logged")
				}
				if got := strings.Contains(out, phone); got == tc.masked {
					t.Errorf("phone in %q: %v, want %v", out, got, !tc.masked)
				}
				if tc.masked && !strings.Contains(out, "3456") {
					t.Errorf("%q lost the last digits", out)
				}
			})
		}
	}
}

func TestHandlerEnabled(t *testing.T) {
	h := NewHandler(slog.NewTextHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if h.Enabled(context.Background(), slog.LevelInfo) || !h.Enabled(context.Background(), slog.LevelWarn) {
		t.Error("Enabled is not the wrapped handler's")
	}
}

// FuzzPhones: Phones changes nothing but digits, each into '*', and a
// phone written in any of the usual ways, standing apart in any text,
// comes out masked as Phone masks it. (Phones is not idempotent: the
// digits a masked phone keeps may start another with the run's next
// groups, "000000000 0000 000". Masking more is the safe way.)
func FuzzPhones(f *testing.F) {
	for _, s := range []string{"+12015553456", "07700 900123", "+1 (201) 555-0101x", "2026-12-01T10:13:52", "1000001", "sender 106540352242922",
		"1.234567891s", "+447700900123 07700900124", "(0)7700", "44(0)7700 9", "06 12 34 56 78"} {
		f.Add(s, "2015550123", uint8(0))
	}
	forms := []func(string) string{
		func(d string) string { return "+1" + d },
		func(d string) string { return "+1 (" + d[:3] + ") " + d[3:6] + "-" + d[6:] },
		func(d string) string { return "0" + d[:4] + " " + d[4:] },
		func(d string) string { return "0" + d },
		func(d string) string { return d[:3] + "-" + d[3:6] + "-" + d[6:] },
		func(d string) string { return d[:3] + "." + d[3:6] + "." + d[6:] },
		func(d string) string { return "(" + d[:3] + ") " + d[3:6] + " " + d[6:] },
		func(d string) string { return "1" + d },
	}
	f.Fuzz(func(t *testing.T, s, national string, form uint8) {
		out := Phones(s)
		if len(out) != len(s) {
			t.Fatalf("Phones(%q) = %q: length changed", s, out)
		}
		for i := 0; i < len(s); i++ {
			if out[i] != s[i] && !(isDigit(s[i]) && out[i] == '*') {
				t.Fatalf("Phones(%q) = %q: byte %d changed to %q", s, out, i, out[i])
			}
		}
		// A ten-digit national number, in one of the usual forms.
		if len(national) != 10 || digits(national) != 10 || national[0] == '0' {
			return
		}
		phone := forms[int(form)%len(forms)](national)
		text := s + " | " + phone + " | " + s
		at := len(s) + 3
		if got := Phones(text); got[at:at+len(phone)] != Phone(phone) {
			t.Fatalf("Phones(%q) = %q: the phone %q is not masked", text, got, phone)
		}
	})
}
