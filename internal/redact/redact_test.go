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
