package run_test

import (
	"errors"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/run"
)

// A schedule's settings as text: what cannot be read is a ScheduleError
// that names the setting (the front end names the flag).
func TestParseSchedule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    run.ScheduleSpec
		setting string // "": no error
		is      error  // nil: any
		value   string
	}{
		{name: "nothing", spec: run.ScheduleSpec{}},
		{name: "all of it", spec: run.ScheduleSpec{Window: []string{"mon-fri 09:00-20:00"}, WindowTZ: "Europe/Berlin", StartAt: "2026-12-24T09:00:00Z", EndAt: "2026-12-25 09:00", Expire: true, DailyLimit: " Auto "}},
		{name: "a bad window", spec: run.ScheduleSpec{Window: []string{"9-5"}}, setting: "window"},
		{name: "an unknown zone", spec: run.ScheduleSpec{WindowTZ: "Mars/Olympus"}, setting: "window-tz", value: "Mars/Olympus"},
		{name: "a start that is not a time", spec: run.ScheduleSpec{StartAt: " tomorrow "}, setting: "start-at", is: run.ErrNotTime, value: "tomorrow"},
		{name: "an end that is not a time", spec: run.ScheduleSpec{EndAt: "24/12"}, setting: "end-at", is: run.ErrNotTime, value: "24/12"},
		{name: "an end at the start", spec: run.ScheduleSpec{StartAt: "2026-12-24T09:00:00Z", EndAt: "2026-12-24T10:00:00+01:00"}, setting: "end-at", is: run.ErrEndNotAfterStart, value: "2026-12-24T10:00:00+01:00"},
		{name: "expire without an end", spec: run.ScheduleSpec{Expire: true}, setting: "expire", is: run.ErrExpireWithoutEnd},
		{name: "a daily limit that is not a number", spec: run.ScheduleSpec{DailyLimit: "lots"}, setting: "daily-limit", is: run.ErrNotNumber, value: "lots"},
		{name: "a negative daily limit", spec: run.ScheduleSpec{DailyLimit: "-1"}, setting: "daily-limit", is: run.ErrNotNumber, value: "-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run.ParseSchedule(tc.spec)
			if tc.setting == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			var se *run.ScheduleError
			if !errors.As(err, &se) || se.Setting != tc.setting || (tc.is != nil && !errors.Is(err, tc.is)) || se.Value != tc.value {
				t.Fatalf("err = %#v, want a ScheduleError of %s (%v, value %q)", err, tc.setting, tc.is, tc.value)
			}
		})
	}
	sc, err := run.ParseSchedule(run.ScheduleSpec{Window: []string{"mon-fri 09:00-20:00"}, StartAt: "2026-12-24T09:00:00Z", DailyLimit: " Auto "})
	if err != nil || len(sc.Window) != 1 || !sc.StartAt.Equal(time.Date(2026, 12, 24, 9, 0, 0, 0, time.UTC)) || sc.DailyLimit != "auto" {
		t.Errorf("ParseSchedule = %+v, %v", sc, err)
	}
}
