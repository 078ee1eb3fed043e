package schedule

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzParseWindow: no panic, and a window that parses is written
// canonically: its String parses back to the same window and String.
func FuzzParseWindow(f *testing.F) {
	for _, s := range []string{
		"mon-fri 09:00-20:00\nsat 10:00-18:00",
		"09:00-20:00",
		"fri 22:00-02:00",
		"fri-mon 10:00-12:00",
		"mon,wed,fri 9:00-24:00",
		"sun 22:00-02:00\nmon 01:00-03:00",
		"22:00-06:00\ntue 00:00-24:00",
		"mon-mon 09:00-10:00",
		"24:00-01:00",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseWindow(strings.Split(s, "\n"))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "window ") {
				t.Errorf("error %q names no spec", err)
			}
			return
		}
		text := w.String()
		back, err := ParseWindow(strings.Split(text, "; "))
		if err != nil {
			t.Fatalf("String() %q does not parse: %v", text, err)
		}
		if !slices.Equal(back.spans, w.spans) || back.String() != text {
			t.Fatalf("%q: String() %q parses to %q", s, text, back)
		}
		if !slices.Equal(w.Specs(), back.Specs()) {
			t.Fatalf("%q: Specs() %q, then %q", s, w.Specs(), back.Specs())
		}
	})
}

// FuzzParseSendAt: no panic; what parses is an instant that RFC 3339
// gives back, and a local time is at or after its wall time in every zone.
func FuzzParseSendAt(f *testing.F) {
	for _, s := range []string{
		"2026-12-24 09:00", "2026-12-24T09:00:30", "2026-03-08 02:30", "2026-11-01 01:30",
		"2026-10-25 02:30", "2026-12-24T09:00:00+01:00", "2026-12-24T09:00:00.123Z", "",
		"0001-01-01 00:00", "9999-12-31 23:59", "2026-12-24T09:00:00+24:00",
	} {
		f.Add(s, uint8(3))
	}
	zoneSets := []string{"", "America/New_York", "Europe/Berlin", "America/New_York,Europe/Berlin,Asia/Kolkata,Australia/Sydney", "Pacific/Kiritimati,Pacific/Pago_Pago"}
	f.Fuzz(func(t *testing.T, cell string, zi uint8) {
		zs := mustZones(t, zoneSets[int(zi)%len(zoneSets)])
		got, err := ParseSendAt(cell, zs)
		if err != nil {
			if !strings.Contains(err.Error(), "want a local date and time") {
				t.Errorf("error %q says not what was expected", err)
			}
			return
		}
		if strings.TrimSpace(cell) == "" {
			if !got.IsZero() {
				t.Errorf("ParseSendAt(%q) = %s, want the zero time", cell, got)
			}
			return
		}
		if back, err := time.Parse(time.RFC3339Nano, got.Format(time.RFC3339Nano)); err == nil && !back.Equal(got) {
			t.Errorf("ParseSendAt(%q) = %s does not round-trip RFC 3339", cell, got)
		}
		if wall, err := time.Parse("2006-01-02 15:04", strings.TrimSpace(cell)); err == nil && len(zs) > 0 {
			for _, z := range zs {
				local := got.In(z)
				asUTC := time.Date(local.Year(), local.Month(), local.Day(), local.Hour(), local.Minute(), local.Second(), local.Nanosecond(), time.UTC)
				if asUTC.Before(wall) {
					t.Errorf("ParseSendAt(%q) = %s: %s in %s, before the wall time", cell, got, local, z)
				}
			}
		}
	})
}

// FuzzZonesOf: no panic; an answer without an error has zones, sorted,
// with no Etc/Unknown.
func FuzzZonesOf(f *testing.F) {
	for _, s := range []string{"+14155550100", "+19285550100", "+79161234567", "+5511987654321", "+390612345678", "+80012345678", "+", "+0", "+1", "+12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		zs, err := ZonesOf(s)
		if err != nil {
			if !strings.Contains(err.Error(), "zones of ") {
				t.Errorf("error %q names no number", err)
			}
			return
		}
		key := zs.Key()
		if len(zs) == 0 || strings.Contains(key, "Etc/Unknown") {
			t.Fatalf("ZonesOf(%q) = %q", s, key)
		}
		if back, err := ParseZones(key); err != nil || back.Key() != key {
			t.Fatalf("ZonesOf(%q) = %q: ParseZones gives %q, %v", s, key, back.Key(), err)
		}
		_ = QuietRules(s)
	})
}
