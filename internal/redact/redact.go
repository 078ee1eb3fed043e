// Package redact keeps recipients' phone numbers out of logs: Phone masks
// one, Phones every number written in E.164 in a text, and Handler masks
// the records of a log/slog handler at Info and above (a debug log, asked
// for to investigate, keeps them).
package redact

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
)

// keep is how many trailing digits a masked phone keeps: enough to tell
// numbers apart, too few to call one.
const keep = 4

// Phone masks every digit of phone but the last four, keeping the rest
// ("+12015553456" → "+*******3456"). A phone of four digits or fewer is
// masked whole.
func Phone(phone string) string {
	digits := 0
	for i := 0; i < len(phone); i++ {
		if phone[i] >= '0' && phone[i] <= '9' {
			digits++
		}
	}
	hide := digits - keep
	if hide <= 0 {
		hide = digits
	}
	b := []byte(phone)
	for i := range b {
		if hide == 0 {
			break
		}
		if b[i] >= '0' && b[i] <= '9' {
			b[i] = '*'
			hide--
		}
	}
	return string(b)
}

// e164 matches a phone number as bulksend writes one: '+', then 7 to 15
// digits (E.164 allows 15; the shortest national numbers are 4 digits
// after a 1-3 digit country code).
var e164 = regexp.MustCompile(`\+[1-9][0-9]{6,14}`)

// Phones masks every number written in E.164 in s (see Phone).
func Phones(s string) string {
	if !strings.Contains(s, "+") {
		return s
	}
	return e164.ReplaceAllStringFunc(s, Phone)
}

// Handler masks phone numbers (Phones) in the message and in every
// attribute of the records at Info and above that it passes to the
// handler it wraps; debug records pass as they are.
type Handler struct {
	next slog.Handler
}

// NewHandler returns a Handler that passes records to next.
func NewHandler(next slog.Handler) *Handler { return &Handler{next: next} }

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelInfo {
		return h.next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, Phones(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs implements slog.Handler. Attributes given here are on every
// record, debug ones too: they are masked.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(as))
	for i, a := range as {
		masked[i] = attr(a)
	}
	return &Handler{next: h.next.WithAttrs(masked)}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name)}
}

// attr is a with its phones masked: in strings, in groups, and in any
// other value by its text (an error, a Stringer, a slice of phones).
func attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Phones(v.String()))
	case slog.KindGroup:
		g := v.Group()
		masked := make([]slog.Attr, len(g))
		for i, ga := range g {
			masked[i] = attr(ga)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(masked...)}
	case slog.KindAny:
		text := fmt.Sprint(v.Any())
		if m := Phones(text); m != text {
			return slog.String(a.Key, m)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
