// Package redact keeps recipients' phone numbers and credentials out of
// logs: URL masks a URL's user, password and query values; Phone masks
// one, Phones every number in a text written as people write them (E.164,
// national, in groups), and Handler masks
// the records of a log/slog handler at Info and above (a debug log, asked
// for to investigate, keeps them).
package redact

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
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

// Phones masks (see Phone) every phone number in s written as people
// write them, in groups of digits (digits, or digits in brackets) with at
// most one space, dash or dot between groups:
//
//   - international: '+' then 7 to 15 digits: "+12015553456",
//     "+44 7700 900123", "+1 (201) 555-0101";
//   - national, with a trunk prefix or an area code in brackets: "07700
//     900123", "07700900123", "06 12 34 56 78", "(201) 555-0101";
//   - in groups without '+': "201-555-0101", "201.555.0101", and "201 555
//     0101" (with spaces only, from 10 digits on);
//   - a run of 10 to 14 digits alone, a number written without its '+'
//     or without its trunk prefix: "12015550100", "2015550100".
//
// Groups beyond 15 digits are cut where a phone ends ("+447700900123
// 07700900124" is two). What else logs hold is left alone: sender
// phone-number IDs and Meta's other IDs (15 digits and more, and this
// project's test numbers of 7), counts ("2000000 rows"), dates and times
// ("2026-12-01T10:13:52"), decimals and durations ("1.234567891s"), IP
// addresses and thousands ("192.168.100.200", "1.234.567"), and digits
// that continue a word (hex, base64, UUIDs), for all of which the last
// rule's 7 to 9 digits and the first group's at most 5 leave room.
func Phones(s string) string {
	if digits(s) < 7 {
		return s
	}
	var out []byte // a copy of s, made at the first phone
	for i := 0; i < len(s); {
		gs := groupsAt(s, i)
		if len(gs) == 0 {
			i++
			continue
		}
		n := len(gs)
		for n > 0 && !isPhone(s[i:gs[n-1].end], gs[:n]) {
			n--
		}
		if n == 0 {
			i = gs[0].end // a later group may start one
			continue
		}
		end := gs[n-1].end
		if out == nil {
			out = []byte(s)
		}
		copy(out[i:end], Phone(s[i:end]))
		i = end
	}
	if out == nil {
		return s
	}
	return string(out)
}

// group is a group of digits of a phone-like run: s[start:end], with sep
// the separator before it (0 for none) and n its digits.
type group struct {
	start, end, n int
	sep           byte
	bracket       bool // "(201)"
}

// groupsAt returns the groups of the phone-like run that starts at s[i]
// (with its '+' if it has one), none if none starts there: a run starts
// at '+', '(' or a digit that does not continue a word (a letter, digit,
// '_' or '*' before it, or a dash or dot after one): the digits a masked
// phone keeps start none.
func groupsAt(s string, i int) []group {
	j := i
	switch c := s[i]; {
	case c == '+':
		j++
	case c == '(' || isDigit(c):
		if i > 0 && (word(s[i-1]) || (s[i-1] == '-' || s[i-1] == '.') && i > 1 && word(s[i-2])) {
			return nil
		}
	default:
		return nil
	}
	var gs []group
	var sep byte
	for j < len(s) {
		g := group{start: j, sep: sep}
		k := j
		if s[j] == '(' {
			for k++; k < len(s) && isDigit(s[k]); k++ {
			}
			if k == j+1 || k == len(s) || s[k] != ')' {
				break
			}
			g.n, g.end, g.bracket = k-j-1, k+1, true
		} else {
			for ; k < len(s) && isDigit(s[k]); k++ {
			}
			if k == j {
				break
			}
			g.n, g.end = k-j, k
		}
		gs = append(gs, g)
		j, sep = g.end, 0
		switch {
		case j+1 < len(s) && (s[j] == ' ' || s[j] == '-' || s[j] == '.') && (isDigit(s[j+1]) || s[j+1] == '('):
			sep = s[j]
			j++
		case j < len(s) && (s[j] == '(' || g.bracket && isDigit(s[j])): // "44(0)7700", "(0)7700"
		default:
			return gs
		}
	}
	return gs
}

// isPhone says whether text, made of groups gs, is a phone (see Phones).
func isPhone(text string, gs []group) bool {
	n := 0
	for _, g := range gs {
		n += g.n
	}
	if n < 7 || n > 15 {
		return false
	}
	if text[0] == '+' {
		return true
	}
	if len(gs) == 1 && !gs[0].bracket {
		return text[0] == '0' || n >= 10 && n <= 14
	}
	dots, spaces, small := true, true, true
	for _, g := range gs[1:] {
		dots = dots && g.sep == '.'
		spaces = spaces && g.sep == ' '
	}
	for _, g := range gs {
		small = small && g.n <= 3
	}
	switch {
	case dots && (len(gs) == 2 || small): // 1.234567891, 192.168.100.200, 1.234.567
		return false
	case len(gs) >= 3 && gs[0].n == 4 && gs[1].n == 2 && gs[2].n == 2 && gs[1].sep != ' ' && gs[1].sep == gs[2].sep: // 2026-12-01
		return false
	case text[0] == '0' && gs[0].n >= 2, text[0] == '(' && len(gs) > 1: // a trunk prefix, an area code
		return true
	}
	for _, g := range gs[:len(gs)-1] {
		if g.n < 2 || g.n > 5 {
			return false
		}
	}
	return !spaces || n >= 10
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// word says whether c is part of a word: a letter, a digit, '_', or '*'
// (a masked digit).
func word(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '*'
}

// digits counts the digits of s.
func digits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			n++
		}
	}
	return n
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

// URL is u as logs may show it: without the user and password it may
// carry (http://user:pass@host) and without its query's values.
func URL(u string) string {
	p, err := url.Parse(u)
	if err == nil && (p.Scheme == "" || p.Host == "") {
		return u // not a URL with a host: a name ("AWS End User Messaging SMS")
	}
	if err != nil {
		if i := strings.LastIndex(u, "@"); i >= 0 {
			return "***" + u[i:] // unparsable: keep what follows the credentials
		}
		return u
	}
	masked := p.User != nil
	p.User = nil
	var keys []string
	for k := range p.Query() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	p.RawQuery = ""
	out := p.String()
	if masked {
		out = strings.Replace(out, "//", "//***@", 1)
	}
	for i, k := range keys {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		out += sep + url.QueryEscape(k) + "=***"
	}
	return out
}
