package run

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/schedule"
)

// ScheduleSpec is a schedule as an operator writes it, each setting as
// text; ParseSchedule reads it.
type ScheduleSpec struct {
	Window     []string // schedule.ParseWindow's specs, the union
	WindowTZ   string   // an IANA zone for everyone; "": each phone's own
	StartAt    string   // RFC 3339, or a date and time in this machine's zone
	EndAt      string
	Expire     bool
	DailyLimit string // a number, auto or none
}

// The schedule's settings that ParseSchedule cannot read: a
// *ScheduleError wraps one, naming the setting and its text.
var (
	ErrNotTime          = errors.New("is not a time")
	ErrNotNumber        = errors.New("is not a number")
	ErrEndNotAfterStart = errors.New("is not after the start")
	ErrExpireWithoutEnd = errors.New("expires the rows left at the campaign's end, and there is no end")
)

// ParseSchedule reads spec; an error is a *ScheduleError naming the
// setting at fault (Value: its text).
func ParseSchedule(spec ScheduleSpec) (Schedule, error) {
	var sc Schedule
	if len(spec.Window) > 0 {
		w, err := schedule.ParseWindow(spec.Window)
		if err != nil {
			return sc, &ScheduleError{Setting: "window", Err: err}
		}
		sc.Window = w.Specs()
	}
	if spec.WindowTZ != "" {
		if _, err := schedule.ParseZones(spec.WindowTZ); err != nil {
			return sc, &ScheduleError{Setting: "window-tz", Value: spec.WindowTZ, Err: err}
		}
		sc.WindowTZ = spec.WindowTZ
	}
	var err error
	if sc.StartAt, err = parseWhen("start-at", spec.StartAt); err != nil {
		return sc, err
	}
	if sc.EndAt, err = parseWhen("end-at", spec.EndAt); err != nil {
		return sc, err
	}
	if !sc.StartAt.IsZero() && !sc.EndAt.IsZero() && !sc.EndAt.After(sc.StartAt) {
		return sc, &ScheduleError{Setting: "end-at", Value: spec.EndAt, Err: ErrEndNotAfterStart}
	}
	if spec.Expire && spec.EndAt == "" {
		return sc, &ScheduleError{Setting: "expire", Err: ErrExpireWithoutEnd}
	}
	sc.Expire = spec.Expire
	switch v := strings.ToLower(strings.TrimSpace(spec.DailyLimit)); v {
	case "", "auto", "none":
		sc.DailyLimit = v
	default:
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			return sc, &ScheduleError{Setting: "daily-limit", Value: spec.DailyLimit, Err: ErrNotNumber}
		}
		sc.DailyLimit = v
	}
	return sc, nil
}

// parseWhen reads a time setting: RFC 3339, or a date and time in this
// machine's zone.
func parseWhen(setting, v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, v, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, &ScheduleError{Setting: setting, Value: v, Err: ErrNotTime}
}
