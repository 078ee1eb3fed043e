package schedule

import (
	"testing"
	"time"
)

func mustZones(t testing.TB, key string) Zones {
	t.Helper()
	zs, err := ParseZones(key)
	if err != nil {
		t.Fatal(err)
	}
	return zs
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

type openCase struct {
	name   string
	at     string // RFC 3339
	open   bool
	change string // RFC 3339, "" for the zero time
	ok     bool
}

func runOpen(t *testing.T, w Window, zs Zones, tests []openCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open, change, ok := w.Open(utc(tt.at), zs)
			var want time.Time
			if tt.change != "" {
				want = utc(tt.change)
			}
			if open != tt.open || !change.Equal(want) || ok != tt.ok {
				t.Errorf("Open(%s, %s) = %v, %s, %v; want %v, %s, %v",
					tt.at, zs.Key(), open, change.UTC().Format(time.RFC3339), ok, tt.open, tt.change, tt.ok)
			}
		})
	}
}

// TestOpenThreeZones: one window, each zone open only in its own local
// hours. Wednesday 2026-06-10: New York is UTC-4, Kolkata UTC+5:30,
// Sydney UTC+10 (winter there).
func TestOpenThreeZones(t *testing.T) {
	w := mustWindow(t, "mon-fri 09:00-17:00")
	zones := []struct {
		zone  string
		tests []openCase
	}{
		{"America/New_York", []openCase{
			{"before 09:00", "2026-06-10T12:59:00Z", false, "2026-06-10T13:00:00Z", true},
			{"at 09:00", "2026-06-10T13:00:00Z", true, "2026-06-10T21:00:00Z", true},
			{"in the afternoon", "2026-06-10T20:59:59Z", true, "2026-06-10T21:00:00Z", true},
			{"at 17:00", "2026-06-10T21:00:00Z", false, "2026-06-11T13:00:00Z", true},
			{"friday evening waits for monday", "2026-06-12T22:00:00Z", false, "2026-06-15T13:00:00Z", true},
			{"saturday", "2026-06-13T15:00:00Z", false, "2026-06-15T13:00:00Z", true},
			{"when Kolkata is closed", "2026-06-10T14:00:00Z", true, "2026-06-10T21:00:00Z", true},
		}},
		{"Asia/Kolkata", []openCase{
			{"before 09:00", "2026-06-10T03:00:00Z", false, "2026-06-10T03:30:00Z", true},
			{"at 09:00", "2026-06-10T03:30:00Z", true, "2026-06-10T11:30:00Z", true},
			{"when New York opens", "2026-06-10T13:00:00Z", false, "2026-06-11T03:30:00Z", true},
		}},
		{"Australia/Sydney", []openCase{
			{"before 09:00 (still tuesday in UTC)", "2026-06-09T22:59:00Z", false, "2026-06-09T23:00:00Z", true},
			{"at 09:00", "2026-06-09T23:00:00Z", true, "2026-06-10T07:00:00Z", true},
			{"when New York opens", "2026-06-10T13:00:00Z", false, "2026-06-10T23:00:00Z", true},
			{"friday afternoon there is the weekend's start", "2026-06-12T07:00:00Z", false, "2026-06-14T23:00:00Z", true},
		}},
	}
	for _, z := range zones {
		t.Run(z.zone, func(t *testing.T) { runOpen(t, w, mustZones(t, z.zone), z.tests) })
	}
}

// TestOpenDST: the window keeps its wall-clock hours across a change, in
// both directions, and a range the clock skips or repeats is skipped or
// repeated.
func TestOpenDST(t *testing.T) {
	day := mustWindow(t, "09:00-17:00")
	tests := []struct {
		name   string
		window Window
		zone   string
		tests  []openCase
	}{
		{"New York springs forward", day, "America/New_York", []openCase{
			{"saturday evening, EST", "2026-03-07T22:00:00Z", false, "2026-03-08T13:00:00Z", true},
			{"sunday 09:00 EDT", "2026-03-08T13:00:00Z", true, "2026-03-08T21:00:00Z", true},
			{"sunday 08:00 EDT", "2026-03-08T12:00:00Z", false, "2026-03-08T13:00:00Z", true},
		}},
		{"New York falls back", day, "America/New_York", []openCase{
			{"saturday evening, EDT", "2026-10-31T22:00:00Z", false, "2026-11-01T14:00:00Z", true},
			{"sunday 09:00 EST", "2026-11-01T14:00:00Z", true, "2026-11-01T22:00:00Z", true},
		}},
		{"New York, a range across the gap", mustWindow(t, "sun 01:00-03:00"), "America/New_York", []openCase{
			{"01:30 EST", "2026-03-08T06:30:00Z", true, "2026-03-08T07:00:00Z", true},
			{"03:00 EDT", "2026-03-08T07:00:00Z", false, "2026-03-15T05:00:00Z", true},
		}},
		{"New York, a range inside the gap", mustWindow(t, "sun 02:00-02:30"), "America/New_York", []openCase{
			{"skipped this sunday", "2026-03-07T12:00:00Z", false, "2026-03-15T06:00:00Z", true},
		}},
		{"New York, a range in the repeated hour", mustWindow(t, "sun 01:00-01:30"), "America/New_York", []openCase{
			{"01:10 EDT", "2026-11-01T05:10:00Z", true, "2026-11-01T05:30:00Z", true},
			{"01:40 EDT", "2026-11-01T05:40:00Z", false, "2026-11-01T06:00:00Z", true},
			{"01:10 EST", "2026-11-01T06:10:00Z", true, "2026-11-01T06:30:00Z", true},
		}},
		{"Berlin springs forward", day, "Europe/Berlin", []openCase{
			{"saturday 17:00 CET", "2026-03-28T16:00:00Z", false, "2026-03-29T07:00:00Z", true},
			{"sunday 16:59 CEST", "2026-03-29T14:59:00Z", true, "2026-03-29T15:00:00Z", true},
		}},
		{"Berlin falls back", day, "Europe/Berlin", []openCase{
			{"saturday 17:00 CEST", "2026-10-24T15:00:00Z", false, "2026-10-25T08:00:00Z", true},
			{"sunday 09:00 CET", "2026-10-25T08:00:00Z", true, "2026-10-25T16:00:00Z", true},
		}},
		{"Berlin, a range inside the gap", mustWindow(t, "sun 02:00-03:00"), "Europe/Berlin", []openCase{
			{"skipped", "2026-03-29T00:30:00Z", false, "2026-04-05T00:00:00Z", true},
		}},
		{"Berlin, the repeated hour keeps it open", mustWindow(t, "sun 02:00-03:00"), "Europe/Berlin", []openCase{
			{"02:30 CEST", "2026-10-25T00:30:00Z", true, "2026-10-25T02:00:00Z", true},
			{"02:30 CET", "2026-10-25T01:30:00Z", true, "2026-10-25T02:00:00Z", true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runOpen(t, tt.window, mustZones(t, tt.zone), tt.tests) })
	}
}

func TestOpenMidnightAndWrap(t *testing.T) {
	tests := []struct {
		name   string
		window Window
		tests  []openCase
	}{
		{"friday night", mustWindow(t, "fri 22:00-02:00"), []openCase{
			{"friday 23:00", "2026-06-12T23:00:00Z", true, "2026-06-13T02:00:00Z", true},
			{"saturday 01:59", "2026-06-13T01:59:00Z", true, "2026-06-13T02:00:00Z", true},
			{"saturday 02:00", "2026-06-13T02:00:00Z", false, "2026-06-19T22:00:00Z", true},
			{"friday 21:00", "2026-06-12T21:00:00Z", false, "2026-06-12T22:00:00Z", true},
		}},
		{"sunday night into monday", mustWindow(t, "sun 22:00-02:00"), []openCase{
			{"monday 01:00", "2026-06-15T01:00:00Z", true, "2026-06-15T02:00:00Z", true},
			{"monday 03:00", "2026-06-15T03:00:00Z", false, "2026-06-21T22:00:00Z", true},
		}},
		{"friday to monday", mustWindow(t, "fri-mon 10:00-12:00"), []openCase{
			{"tuesday", "2026-06-16T11:00:00Z", false, "2026-06-19T10:00:00Z", true},
			{"monday", "2026-06-15T11:00:00Z", true, "2026-06-15T12:00:00Z", true},
			{"sunday", "2026-06-14T10:00:00Z", true, "2026-06-14T12:00:00Z", true},
			{"sunday after", "2026-06-14T12:00:00Z", false, "2026-06-15T10:00:00Z", true},
		}},
		{"open across the week's end", mustWindow(t, "sun 00:00-24:00", "mon 00:00-06:00"), []openCase{
			{"sunday noon", "2026-06-14T12:00:00Z", true, "2026-06-15T06:00:00Z", true},
		}},
		{"always", mustWindow(t, "00:00-24:00"), []openCase{
			{"any time", "2026-06-14T12:00:00Z", true, "", true},
		}},
		{"the zero window", Window{}, []openCase{
			{"any time", "2026-06-14T12:00:00Z", true, "", true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runOpen(t, tt.window, nil, tt.tests) })
	}
}

// TestOpenSeveralZones: open only where open in all. Area code 928 may be
// Phoenix (no DST) or the Navajo Nation (America/Denver).
func TestOpenSeveralZones(t *testing.T) {
	az, err := ZonesOf("+19285550100")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := az.Key(), "America/Denver,America/Phoenix"; got != want {
		t.Fatalf("ZonesOf(928) = %s, want %s", got, want)
	}
	w := mustWindow(t, "09:00-20:00")
	runOpen(t, w, az, []openCase{
		// June: Denver UTC-6, Phoenix UTC-7.
		{"open in Denver only", "2026-06-10T15:30:00Z", false, "2026-06-10T16:00:00Z", true},
		{"open in both", "2026-06-10T16:00:00Z", true, "2026-06-11T02:00:00Z", true},
		{"open in Phoenix only", "2026-06-11T02:30:00Z", false, "2026-06-11T16:00:00Z", true},
		// January: both UTC-7.
		{"winter", "2026-01-14T16:00:00Z", true, "2026-01-15T03:00:00Z", true},
	})
}

// TestOpenNever: a window narrower than the zones' spread never opens in
// all of them at once.
func TestOpenNever(t *testing.T) {
	tollFree, err := ZonesOf("+18005550100") // every zone of +1, Guam to Pago Pago
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		window Window
		zones  Zones
	}{
		{"New York and Kolkata mornings", mustWindow(t, "09:00-12:00"), mustZones(t, "America/New_York,Asia/Kolkata")},
		{"a monday on both sides of the date line", mustWindow(t, "mon 09:00-17:00"), mustZones(t, "Pacific/Kiritimati,Pacific/Pago_Pago")},
		// Guam's 09:00 is 23:00 UTC, St. John's 17:00 is 20:30 UTC or earlier.
		{"a US toll-free number", mustWindow(t, "09:00-17:00"), tollFree},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, at := range []string{"2026-01-05T12:00:00Z", "2026-06-10T00:00:00Z", "2026-11-01T06:00:00Z"} {
				if open, change, ok := tt.window.Open(utc(at), tt.zones); open || !change.IsZero() || ok {
					t.Errorf("Open(%s) = %v, %s, %v; want false, zero, false", at, open, change, ok)
				}
			}
		})
	}
}

// TestOpenAgreesWithAScan checks Open against the definition, minute by
// minute, over two weeks around each DST change of 2026 in several zones.
func TestOpenAgreesWithAScan(t *testing.T) {
	windows := []Window{
		mustWindow(t, "mon-fri 09:00-20:00", "sat 10:00-18:00"),
		mustWindow(t, "fri 22:00-02:00"),
		mustWindow(t, "sun 01:00-03:00", "sun 02:30-02:45"),
	}
	zoneSets := []Zones{
		mustZones(t, "America/New_York"),
		mustZones(t, "Europe/Berlin"),
		mustZones(t, "America/New_York,Europe/Berlin"),
		mustZones(t, "America/Denver,America/Phoenix"),
		mustZones(t, "Asia/Kolkata,Australia/Sydney"),
	}
	// Each scan of 20 days from these holds both zones' change.
	starts := []string{"2026-03-05T00:00:00Z", "2026-10-22T00:00:00Z"}
	openAt := func(w Window, at time.Time, zs Zones) bool {
		for _, z := range zs {
			if !w.openIn(at, z) {
				return false
			}
		}
		return true
	}
	for _, w := range windows {
		for _, zs := range zoneSets {
			for _, s := range starts {
				from := utc(s)
				// states[i] is openness at minute i; the scan sees changes on minutes,
				// which every zone here keeps.
				const minutes = 20 * 24 * 60
				states := make([]bool, minutes)
				for i := range states {
					states[i] = openAt(w, from.Add(time.Duration(i)*time.Minute), zs)
				}
				for i := 0; i < 12*24*60; i += 11 {
					at := from.Add(time.Duration(i) * time.Minute)
					open, change, ok := w.Open(at, zs)
					if open != states[i] {
						t.Fatalf("%q in %s at %s: open %v, scan says %v", w, zs.Key(), at, open, states[i])
					}
					j := i + 1
					for j < minutes && states[j] == states[i] {
						j++
					}
					want, wantOK := from.Add(time.Duration(j)*time.Minute), true
					switch {
					case !open && j-i > 8*24*60:
						want, wantOK = time.Time{}, false // not within 8 days
					case open && j == minutes:
						want = time.Time{} // never closes
					}
					if ok != wantOK || !change.Equal(want) {
						t.Fatalf("%q in %s at %s: change %s %v, scan says %s %v", w, zs.Key(), at, change, ok, want, wantOK)
					}
				}
			}
		}
	}
}
