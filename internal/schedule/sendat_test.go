package schedule

import (
	"strings"
	"testing"
	"time"
)

func TestParseSendAt(t *testing.T) {
	tests := []struct {
		name  string
		cell  string
		zones string // a Zones key
		want  string // RFC 3339; "" for the zero time
	}{
		{"empty", "", "America/New_York", ""},
		{"blank", "  ", "America/New_York", ""},
		{"RFC 3339 with an offset", "2026-12-24T09:00:00+01:00", "America/New_York", "2026-12-24T08:00:00Z"},
		{"RFC 3339 in UTC", "2026-12-24T09:00:00Z", "Asia/Kolkata", "2026-12-24T09:00:00Z"},
		{"RFC 3339 with a space and a fraction", "2026-12-24 09:00:00.5-05:00", "", "2026-12-24T14:00:00.5Z"},
		{"an offset without seconds", "2026-12-24T09:00+05:30", "", "2026-12-24T03:30:00Z"},
		{"local, no zones: UTC", "2026-12-24 09:00", "", "2026-12-24T09:00:00Z"},
		{"local in New York", "2026-12-24 09:00", "America/New_York", "2026-12-24T14:00:00Z"},
		{"local with T", "2026-12-24T09:00", "America/New_York", "2026-12-24T14:00:00Z"},
		{"local with seconds", "2026-12-24 09:00:30", "America/New_York", "2026-12-24T14:00:30Z"},
		{"local with T and seconds", "2026-12-24T09:00:30", "America/New_York", "2026-12-24T14:00:30Z"},
		{"the latest of the zones", "2026-12-24 09:00", "America/Los_Angeles,America/New_York", "2026-12-24T17:00:00Z"},
		{"the latest, across the date line", "2026-12-24 09:00", "Asia/Kolkata,Australia/Sydney", "2026-12-24T03:30:00Z"},
		{"several zones in summer", "2026-06-10 09:00", "America/Denver,America/Phoenix", "2026-06-10T16:00:00Z"},

		{"New York, before the gap", "2026-03-08 01:59", "America/New_York", "2026-03-08T06:59:00Z"},
		{"New York, in the gap", "2026-03-08 02:30", "America/New_York", "2026-03-08T07:00:00Z"},
		{"New York, after the gap", "2026-03-08 03:00", "America/New_York", "2026-03-08T07:00:00Z"},
		{"New York, the repeated hour: the later", "2026-11-01 01:30", "America/New_York", "2026-11-01T06:30:00Z"},
		{"New York, after the repeat", "2026-11-01 02:00", "America/New_York", "2026-11-01T07:00:00Z"},
		{"New York, before the repeat", "2026-11-01 00:59", "America/New_York", "2026-11-01T04:59:00Z"},
		{"Berlin, in the gap", "2026-03-29 02:30", "Europe/Berlin", "2026-03-29T01:00:00Z"},
		{"Berlin, the day after", "2026-03-30 02:30", "Europe/Berlin", "2026-03-30T00:30:00Z"},
		{"Berlin, the repeated hour: the later", "2026-10-25 02:30", "Europe/Berlin", "2026-10-25T01:30:00Z"},
		{"Berlin, the repeated hour's start", "2026-10-25 02:00", "Europe/Berlin", "2026-10-25T01:00:00Z"},
		{"a gap in one zone only", "2026-03-08 02:30", "America/New_York,Europe/Berlin", "2026-03-08T07:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSendAt(tt.cell, mustZones(t, tt.zones))
			if err != nil {
				t.Fatal(err)
			}
			var want time.Time
			if tt.want != "" {
				want = utc(tt.want)
			}
			if !got.Equal(want) {
				t.Errorf("ParseSendAt(%q, %s) = %s, want %s", tt.cell, tt.zones, got.UTC().Format(time.RFC3339Nano), tt.want)
			}
		})
	}
}

func TestParseSendAtErrors(t *testing.T) {
	zs := mustZones(t, "America/New_York")
	for _, cell := range []string{
		"tomorrow",
		"2026-12-24",
		"09:00",
		"2026-13-01 09:00",
		"2026-02-30 09:00",
		"2026-12-24 25:00",
		"2026-12-24 09:00 +01:00",
		"2026-12-24T09:00:00+1",
		"24/12/2026 09:00",
		"1766566800",
	} {
		t.Run(cell, func(t *testing.T) {
			_, err := ParseSendAt(cell, zs)
			if err == nil {
				t.Fatalf("ParseSendAt(%q) gave no error", cell)
			}
			if msg := err.Error(); !strings.Contains(msg, `"`+cell+`"`) || !strings.Contains(msg, "want a local date and time") {
				t.Errorf("error %q does not name the cell and what was expected", msg)
			}
		})
	}
}
