package schedule

import (
	"fmt"
	"strings"
	"time"
)

// Layouts of a send_at cell. Package time also takes a fraction of a
// second after the seconds, and an hour of one digit.
var (
	instantLayouts = []string{
		"2006-01-02T15:04:05Z07:00", // RFC 3339
		"2006-01-02 15:04:05Z07:00", // RFC 3339 allows a space for the T
		"2006-01-02T15:04Z07:00",
		"2006-01-02 15:04Z07:00",
	}
	wallLayouts = []string{
		"2006-01-02 15:04",
		"2006-01-02T15:04",
		"2006-01-02 15:04:05",
		"2006-01-02T15:04:05",
	}
)

// ParseSendAt parses a CSV send_at cell. An RFC 3339 time with an offset
// or Z ("2026-12-24T09:00:00+01:00") is that instant. A local date and time
// without one ("2026-12-24 09:00", "2026-12-24T09:00", with optional
// seconds) is that wall time in each zone of zs (UTC if none), and the
// latest of those instants, so that nothing goes out before that local
// time anywhere the recipient may be. A wall time that a zone's clock
// skips (spring forward) is read as the first instant after the gap; one
// it reads twice (fall back), as the later. An empty cell gives the zero
// time and no error.
func ParseSendAt(cell string, zs Zones) (time.Time, error) {
	s := strings.TrimSpace(cell)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range instantLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	for _, layout := range wallLayouts {
		wall, err := time.Parse(layout, s) // in UTC: its fields are the wall clock's
		if err != nil {
			continue
		}
		if len(zs) == 0 {
			return wall, nil
		}
		var latest time.Time
		for i, z := range zs {
			if t := wallInstant(wall, z); i == 0 || t.After(latest) {
				latest = t
			}
		}
		return latest, nil
	}
	return time.Time{}, fmt.Errorf("send_at %q: want a local date and time, like 2026-12-24 09:00, or RFC 3339 with an offset, like 2026-12-24T09:00:00+01:00", cell)
}
