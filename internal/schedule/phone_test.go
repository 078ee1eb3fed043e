package schedule

import (
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

var (
	nanpaZones     = "America/Adak,America/Anchorage,America/Anguilla,America/Antigua,America/Barbados,America/Boise,America/Cayman,America/Chicago,America/Denver,America/Dominica,America/Edmonton,America/Fort_Nelson,America/Grand_Turk,America/Grenada,America/Halifax,America/Jamaica,America/Juneau,America/Los_Angeles,America/Lower_Princes,America/Montserrat,America/Nassau,America/New_York,America/North_Dakota/Center,America/Phoenix,America/Port_of_Spain,America/Puerto_Rico,America/Regina,America/Santo_Domingo,America/St_Johns,America/St_Kitts,America/St_Lucia,America/St_Thomas,America/St_Vincent,America/Toronto,America/Tortola,America/Vancouver,America/Winnipeg,Atlantic/Bermuda,Pacific/Guam,Pacific/Honolulu,Pacific/Pago_Pago,Pacific/Saipan"
	russiaZones    = "Asia/Almaty,Asia/Anadyr,Asia/Aqtobe,Asia/Irkutsk,Asia/Kamchatka,Asia/Krasnoyarsk,Asia/Magadan,Asia/Novosibirsk,Asia/Omsk,Asia/Sakhalin,Asia/Vladivostok,Asia/Yakutsk,Asia/Yekaterinburg,Europe/Bucharest,Europe/Moscow,Europe/Samara"
	brazilZones    = "America/Manaus,America/Noronha,America/Rio_Branco,America/Sao_Paulo"
	australiaZones = "Australia/Adelaide,Australia/Brisbane,Australia/Eucla,Australia/Lord_Howe,Australia/Perth,Australia/Sydney,Indian/Christmas,Indian/Cocos"
	mexicoZones    = "America/Cancun,America/Ciudad_Juarez,America/Matamoros,America/Mazatlan,America/Mexico_City,America/New_York,America/Ojinaga,America/Tijuana"
	indonesiaZones = "Asia/Jakarta,Asia/Jayapura,Asia/Makassar"
	britainZones   = "Europe/Guernsey,Europe/Isle_of_Man,Europe/Jersey,Europe/London"
)

func TestZonesOf(t *testing.T) {
	tests := []struct {
		name   string
		number string
		want   string // Key
	}{
		{"US 212", "+12125550123", "America/New_York"},
		{"US 415", "+14155550100", "America/Los_Angeles"},
		{"US 208, every zone of the area code", "+12085550100", "America/Boise,America/Denver,America/Los_Angeles"},
		{"US 208, an exchange the data puts in Denver", "+12083550100", "America/Boise,America/Denver,America/Los_Angeles"},
		{"US 928, with the Navajo Nation", "+19285550100", "America/Denver,America/Phoenix"},
		{"US 219, Indiana on two clocks", "+12192265555", "America/Chicago,America/New_York"},
		{"US toll-free", "+18005550100", nanpaZones},
		{"Canada", "+14165550123", "America/Toronto"},
		{"Puerto Rico", "+17875550123", "America/Puerto_Rico"},
		{"Russian mobile", "+79161234567", russiaZones},
		{"Moscow landline", "+74951234567", "Europe/Moscow"},
		{"Brazilian mobile", "+5511987654321", brazilZones},
		{"São Paulo landline", "+551133334444", "America/Sao_Paulo"},
		{"Australian mobile", "+61491570156", australiaZones},
		{"Sydney landline", "+61255501234", "Australia/Sydney"},
		{"Mexico City, fixed or mobile", "+525512345678", "America/Mexico_City"},
		{"Mexican toll-free", "+528001234567", mexicoZones},
		{"Indonesian mobile", "+6281234567890", indonesiaZones},
		{"Jakarta landline", "+62215551234", "Asia/Jakarta"},
		{"British mobile", "+447911123456", britainZones},
		{"London landline", "+442073238299", "Europe/London"},
		{"German mobile", "+4915112345678", "Europe/Berlin"},
		{"Indian mobile", "+919812345678", "Asia/Calcutta"},
		{"Italian landline, a leading zero", "+390612345678", "Europe/Rome"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			zs, err := ZonesOf(tt.number)
			if err != nil {
				t.Fatal(err)
			}
			if got := zs.Key(); got != tt.want {
				t.Errorf("ZonesOf(%s) = %s, want %s", tt.number, got, tt.want)
			}
			back, err := ParseZones(zs.Key())
			if err != nil || back.Key() != zs.Key() {
				t.Errorf("ParseZones(Key()) = %s, %v", back.Key(), err)
			}
		})
	}
}

func TestZonesOfErrors(t *testing.T) {
	tests := []struct {
		number, want string
	}{
		{"", "want an E.164 number"},
		{"14155550100", "want an E.164 number"},
		{"+", "want an E.164 number"},
		{"+1 415 555 0100", "want an E.164 number"},
		{"+0123456789", "want an E.164 number"},
		{"+١٤١٥٥٥٥٠١٠٠", "want an E.164 number"},
		{"+999123456", "no country calling code"},
		{"+11", "a national number of 1 digits"},
		{"+1415555010012345678", "a national number of 18 digits"},
		{"+80012345678", "no time zone is known"}, // international freephone
	}
	if _, err := ZonesOf("+80012345678"); !errors.Is(err, ErrNoZones) {
		t.Errorf("ZonesOf(+800…) error %v is not ErrNoZones", err)
	}
	for _, tt := range tests {
		t.Run(tt.number, func(t *testing.T) {
			zs, err := ZonesOf(tt.number)
			if err == nil {
				t.Fatalf("ZonesOf(%q) = %s, no error", tt.number, zs.Key())
			}
			if msg := err.Error(); !strings.Contains(msg, strconv.Quote(tt.number)) || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not name the number and say %q", msg, tt.want)
			}
		})
	}
}

// sampleNumbers returns valid numbers of every region and type: the
// metadata's examples, and variants of them with random last digits.
func sampleNumbers(t testing.TB, variants int) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var out []string
	for _, region := range slices.Sorted(maps.Keys(phonenumbers.GetSupportedRegions())) {
		for typ := phonenumbers.FIXED_LINE; typ <= phonenumbers.VOICEMAIL; typ++ {
			ex := phonenumbers.GetExampleNumberForType(region, typ)
			if ex == nil {
				continue
			}
			e164 := phonenumbers.Format(ex, phonenumbers.E164)
			out = append(out, e164)
			keep := min(len(e164), 2+len(strconv.Itoa(int(ex.GetCountryCode())))+2)
			for range variants {
				b := []byte(e164)
				for i := keep; i < len(b); i++ {
					b[i] = byte('0' + rng.IntN(10))
				}
				if p, err := phonenumbers.Parse(string(b), ""); err == nil && phonenumbers.IsValidNumber(p) {
					out = append(out, string(b))
				}
			}
		}
	}
	return out
}

// TestNumberType: numberType, which skips Parse, is the library's type of
// the parsed number.
func TestNumberType(t *testing.T) {
	variants := 3
	if raceEnabled {
		variants = 1
	}
	for _, n := range sampleNumbers(t, variants) {
		p, err := phonenumbers.Parse(n, "")
		if err != nil {
			t.Fatal(err)
		}
		cc, nsn, err := splitE164(n)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := numberType(cc, nsn), phonenumbers.GetNumberType(p); got != want {
			t.Errorf("numberType(%s) = %v, want %v", n, got, want)
		}
	}
}

// TestZonesOfClasses: deciding the type by class gives every valid number
// the answer deciding it number by number gives, in any order.
func TestZonesOfClasses(t *testing.T) {
	numbers := sampleNumbers(t, 12)
	for seed := range uint64(2) {
		rand.New(rand.NewPCG(seed, seed)).Shuffle(len(numbers), func(i, j int) { numbers[i], numbers[j] = numbers[j], numbers[i] })
		x := &zoneIndex{}
		for _, n := range numbers {
			got, gerr := x.zonesOf(n, false)
			want, werr := x.zonesOf(n, true)
			if got.Key() != want.Key() || (gerr == nil) != (werr == nil) {
				t.Errorf("ZonesOf(%s) = %s, %v; number by number %s, %v", n, got.Key(), gerr, want.Key(), werr)
			}
		}
	}
}

// TestZonesOfUpstream: apart from the differences ZonesOf documents, its
// answer is upstream's: the prefix's zones for a geographic number, the
// country's for any other.
func TestZonesOfUpstream(t *testing.T) {
	for _, n := range sampleNumbers(t, 2) {
		if strings.HasPrefix(n, "+1") {
			continue // by area code: TestAreaZones
		}
		p, _ := phonenumbers.Parse(n, "")
		typ := phonenumbers.GetNumberType(p)
		var names []string
		if typ == phonenumbers.FIXED_LINE || typ == phonenumbers.FIXED_LINE_OR_MOBILE {
			names, _ = phonenumbers.GetTimezonesForNumber(p)
		}
		if unknown(names) {
			names, _ = phonenumbers.GetTimezonesForPrefix(strconv.Itoa(int(p.GetCountryCode())))
		}
		zs, err := ZonesOf(n)
		if unknown(names) {
			if err == nil {
				t.Errorf("ZonesOf(%s) = %s, want an error", n, zs.Key())
			}
			continue
		}
		want, err2 := newZoneSet(names)
		if err != nil || err2 != nil || zs.Key() != want.key {
			t.Errorf("ZonesOf(%s) (%v) = %s, %v; want %s, %v", n, typ, zs.Key(), err, want.key, err2)
		}
	}
}

// TestAreaZones: a +1 number's zones hold those of its own prefix.
func TestAreaZones(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := &zoneIndex{}
	step := 1
	if raceEnabled {
		step = 7
	}
	for npa := 200; npa <= 999; npa += step {
		for range 20 {
			n := "+1" + strconv.Itoa(npa) + strconv.Itoa(200+rng.IntN(800)) + strconv.Itoa(1000+rng.IntN(9000))
			zs, err := x.zonesOf(n, true)
			if err != nil {
				t.Fatal(err)
			}
			own, _ := phonenumbers.GetTimezonesForPrefix(n)
			for _, name := range own {
				if !strings.Contains(","+zs.Key()+",", ","+name+",") {
					t.Errorf("ZonesOf(%s) = %s, without %s of its prefix", n, zs.Key(), name)
				}
			}
		}
	}
}

// TestEveryDataZoneLoads: the tz database has every zone the data names
// for a calling code, a +1 area code, or up to three digits more.
func TestEveryDataZoneLoads(t *testing.T) {
	names := map[string]bool{}
	for cc := range phonenumbers.GetSupportedCallingCodes() {
		p := strconv.Itoa(cc)
		for _, d := range []int{0, 1, 2, 3} {
			limit := 1
			for range d {
				limit *= 10
			}
			for i := range limit {
				q := p
				if d > 0 {
					q += strconv.Itoa(limit + i)[1:]
				}
				ns, _ := phonenumbers.GetTimezonesForPrefix(q)
				for _, n := range ns {
					names[n] = true
				}
			}
		}
	}
	delete(names, phonenumbers.UNKNOWN_TIMEZONE)
	if len(names) < 250 {
		t.Fatalf("only %d zones found: is the probe wrong?", len(names))
	}
	for n := range names {
		if _, err := loadLocation(n); err != nil {
			t.Error(err)
		}
	}
}

func TestParseZones(t *testing.T) {
	tests := []struct {
		key, want, err string
	}{
		{"", "", ""},
		{"UTC", "UTC", ""},
		{"America/New_York", "America/New_York", ""},
		{"Europe/Berlin,America/New_York", "America/New_York,Europe/Berlin", ""},
		{"Asia/Kolkata,Asia/Kolkata", "Asia/Kolkata", ""},
		{"Mars/Olympus_Mons", "", `zones "Mars/Olympus_Mons": time zone "Mars/Olympus_Mons"`},
		{"Local", "", `time zone "Local": want an IANA name`},
		{"America/New_York,", "", `time zone "": want an IANA name`},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			zs, err := ParseZones(tt.key)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseZones(%q) error = %v, want %q", tt.key, err, tt.err)
				}
				return
			}
			if err != nil || zs.Key() != tt.want {
				t.Errorf("ParseZones(%q) = %s, %v; want %s", tt.key, zs.Key(), err, tt.want)
			}
		})
	}
}

// TestConcurrentUse: ZonesOf, ParseZones, QuietRules and Open from many
// goroutines at once, on caches that start empty, agree with one
// goroutine's answers.
func TestConcurrentUse(t *testing.T) {
	numbers := benchNumbers(t, 400)
	want := make([]string, len(numbers))
	for i, n := range numbers {
		zs, err := (&zoneIndex{}).zonesOf(n, false)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = zs.Key()
	}
	x := &zoneIndex{}
	w := mustWindow(t, "mon-fri 09:00-20:00")
	at := utc("2026-06-10T15:00:00Z")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range numbers {
				i := (i + g*50) % len(numbers)
				zs, err := x.zonesOf(numbers[i], false)
				if err != nil || zs.Key() != want[i] {
					t.Errorf("ZonesOf(%s) = %s, %v; want %s", numbers[i], zs.Key(), err, want[i])
					return
				}
				if back, err := ParseZones(zs.Key()); err != nil || back.Key() != want[i] {
					t.Errorf("ParseZones(%s) = %s, %v", want[i], back.Key(), err)
					return
				}
				_ = QuietRules(numbers[i])
				_, _, _ = w.Open(at, zs)
			}
		})
	}
	wg.Wait()
}
