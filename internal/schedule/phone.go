package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/nyaruka/phonenumbers"
)

// ZonesOf returns the time zones an E.164 number ("+14155550100") may be
// in, from libphonenumber's prefix data as phonenumbers v1.8.1 ships it.
//
// Upstream's PhoneNumberToTimeZonesMapper.getTimeZonesForNumber looks the
// prefix up only for a geographic number (fixed line, or fixed line or
// mobile) and gives every other number the zones of its whole country
// calling code; phonenumbers.GetTimezonesForNumber skips that step and
// looks every number up by prefix, so a Russian, Australian or Indonesian
// mobile gets the one zone where most such numbers were seen (79: Moscow,
// 614: Sydney). ZonesOf does what upstream does, with three differences,
// each so that nothing is sent at night where the recipient may be:
//
//   - A mobile is never geographic. Upstream makes an exception for
//     Argentina, Brazil, China, Indonesia and Mexico, whose mobile numbers
//     carry an area code; an Indonesian mobile's is no area code at all,
//     and a mobile moves with its owner.
//   - A +1 number gets every zone of its area code, whatever its type,
//     not those of its exchange: the data places exchanges of 208 in
//     Denver, Boise or Los Angeles time, a North American mobile cannot be
//     told from a landline, and a Jamaican mobile is in Jamaica, not in
//     every zone of +1 (25 countries share it). Only an area code without
//     a place (toll-free 8XX, 5XX, 900) gets every zone of +1. Area code
//     928 (northern Arizona) gets America/Denver too, which the data
//     lacks: the Navajo Nation keeps daylight saving time, the rest of
//     Arizona does not (tz database, northamerica).
//   - Where upstream says "Etc/Unknown" (a prefix without data, a number
//     type it does not know) ZonesOf gives the country's zones, and if the
//     country has none it returns an error naming the number: it never
//     returns no zones without an error.
//
// Other calling codes that several countries share keep upstream's
// answer: a Kazakh mobile (+7 7) gets every zone of +7, Russia's too.
//
// Where the type matters (a country with several zones), it is decided
// once per class: calling code, first four national digits and length,
// by the first valid number of the class that ZonesOf sees; the types of
// valid numbers agree within a class (TestZonesOfClasses). A number the
// metadata does not know as valid, which csvin refuses, gets its class's
// answer if a valid number of the class came before, else its country's.
// So ZonesOf costs a few map lookups once a file's classes are known
// (BenchmarkZonesOf). It is safe for concurrent use.
func ZonesOf(e164 string) (Zones, error) {
	return index.zonesOf(e164, false)
}

// ErrNoZones is ZonesOf's error for a valid-looking number that no zone
// is known for, such as an international freephone number (+800): neither
// its prefix nor its calling code has any in the data.
var ErrNoZones = errors.New("no time zone is known for it")

// index is what ZonesOf has worked out. It only grows, and is bounded by
// the data: about 3,300 prefix entries, 800 area codes, and the classes of
// multi-zone countries.
var index = &zoneIndex{}

type zoneIndex struct {
	classes   sync.Map // classKey → bool: geographic
	countries sync.Map // int32 → *zoneSet, or nil
	areas     sync.Map // int (+1 area code) → *zoneSet, or nil
	prefixes  sync.Map // *string, the first name of a phonenumbers entry → *zoneSet
	nprefixes atomic.Int64
}

// zoneSet is one entry of the data as Zones, with its Key.
type zoneSet struct {
	zones Zones
	key   string
}

// classDigits is how many national digits, with the length, decide a
// number's type for ZonesOf. Three are not enough for Sint Eustatius
// (+599 3180 is fixed, 3184 mobile); TestZonesOfClasses finds none that
// four are not enough for.
const classDigits = 4

type classKey struct {
	cc   int32
	lead int32 // up to classDigits national digits, after a 1 so that "05" is not "5"
	n    int8  // digits of the national number
}

// nanpaExtra adds zones to +1 area codes that the data under-reports.
// 928: northern Arizona, which includes the Navajo Nation; the Navajo
// Nation observes DST as America/Denver does, while America/Phoenix does
// not (tz database 2025b, file northamerica, "Arizona"; NANPA, NPA 928).
var nanpaExtra = map[int][]string{
	928: {"America/Denver"},
}

func (x *zoneIndex) zonesOf(e164 string, exact bool) (Zones, error) {
	cc, nsn, err := splitE164(e164)
	if err != nil {
		return nil, err
	}
	country, err := x.country(cc)
	if err != nil {
		return nil, err
	}
	var local *zoneSet
	if cc == 1 && len(nsn) >= 3 {
		local, err = x.area(nsn)
	} else {
		local, err = x.prefix(e164)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case cc == 1 && local != nil:
		return local.zones, nil // an area code is a place, whatever the type (see ZonesOf)
	case local == nil && country == nil:
		return nil, fmt.Errorf("zones of %q: %w", e164, ErrNoZones)
	case local == nil:
		return country.zones, nil
	case country == nil || local.key == country.key:
		return local.zones, nil // the type does not matter
	}
	if x.geographic(cc, nsn, exact) {
		return local.zones, nil
	}
	return country.zones, nil
}

// splitE164 splits "+" and digits into a country calling code and the
// national significant number.
func splitE164(e164 string) (int32, string, error) {
	if len(e164) < 2 || e164[0] != '+' || !allDigits(e164[1:]) || e164[1] == '0' {
		return 0, "", fmt.Errorf("zones of %q: want an E.164 number, + and digits, like +14155550100", e164)
	}
	digits := e164[1:]
	codes := callingCodes()
	for n := 1; n <= 3 && n < len(digits); n++ {
		cc, _ := strconv.Atoi(digits[:n])
		if !codes[cc] {
			continue // calling codes are prefix-free: at most one length fits
		}
		nsn := digits[n:]
		if len(nsn) < phonenumbers.MIN_LENGTH_FOR_NSN || len(nsn) > phonenumbers.MAX_LENGTH_FOR_NSN {
			return 0, "", fmt.Errorf("zones of %q: a national number of %d digits (want %d to %d)", e164, len(nsn), phonenumbers.MIN_LENGTH_FOR_NSN, phonenumbers.MAX_LENGTH_FOR_NSN)
		}
		return int32(cc), nsn, nil
	}
	return 0, "", fmt.Errorf("zones of %q: no country calling code starts it", e164)
}

var callingCodes = sync.OnceValue(phonenumbers.GetSupportedCallingCodes)

// geographic reports whether the number's type is one upstream looks up
// by prefix, leaving out mobiles (see ZonesOf). Unless exact, it answers
// for the number's class.
func (x *zoneIndex) geographic(cc int32, nsn string, exact bool) bool {
	key := classKey{cc: cc, lead: 1, n: int8(len(nsn))}
	for i := 0; i < classDigits && i < len(nsn); i++ {
		key.lead = key.lead*10 + int32(nsn[i]-'0')
	}
	if !exact {
		if v, ok := x.classes.Load(key); ok {
			return v.(bool)
		}
	}
	t := numberType(cc, nsn)
	geo := t == phonenumbers.FIXED_LINE || t == phonenumbers.FIXED_LINE_OR_MOBILE
	if t != phonenumbers.UNKNOWN && !exact {
		x.classes.Store(key, geo)
	}
	return geo
}

// numberType is phonenumbers.GetNumberType of the number +cc nsn, without
// phonenumbers.Parse, which would find the same.
func numberType(cc int32, nsn string) phonenumbers.PhoneNumberType {
	nn, err := strconv.ParseUint(nsn, 10, 64)
	if err != nil {
		return phonenumbers.UNKNOWN
	}
	pn := &phonenumbers.PhoneNumber{CountryCode: &cc, NationalNumber: &nn}
	if nsn[0] == '0' {
		// Italian leading zeros, as Parse records them: all but the last
		// digit of a number of zeros.
		zeros := int32(0)
		for zeros < int32(len(nsn))-1 && nsn[zeros] == '0' {
			zeros++
		}
		yes := true
		pn.ItalianLeadingZero = &yes
		pn.NumberOfLeadingZeros = &zeros
	}
	return phonenumbers.GetNumberType(pn)
}

// country returns the zones of the whole calling code, nil if none.
func (x *zoneIndex) country(cc int32) (*zoneSet, error) {
	if v, ok := x.countries.Load(cc); ok {
		return v.(*zoneSet), nil
	}
	names, err := phonenumbers.GetTimezonesForPrefix(strconv.Itoa(int(cc)))
	if err != nil {
		return nil, fmt.Errorf("zones of +%d: %w", cc, err)
	}
	set, err := newZoneSet(names)
	if err != nil {
		return nil, err
	}
	v, _ := x.countries.LoadOrStore(cc, set)
	return v.(*zoneSet), nil
}

// prefix returns the zones of the longest prefix of e164 that the data
// has, nil if none. This is phonenumbers.GetTimezonesForNumber, which
// formats its number as E.164 and calls GetTimezonesForPrefix, without
// the Parse that would give it the number.
func (x *zoneIndex) prefix(e164 string) (*zoneSet, error) {
	names, err := phonenumbers.GetTimezonesForPrefix(e164)
	if err != nil {
		return nil, fmt.Errorf("zones of %q: %w", e164, err)
	}
	if unknown(names) {
		return nil, nil
	}
	// Each entry of the data is one slice, returned as it is: its first
	// element's address names the entry without building a string.
	id := &names[0]
	if v, ok := x.prefixes.Load(id); ok {
		return v.(*zoneSet), nil
	}
	set, err := newZoneSet(names)
	if err != nil {
		return nil, err
	}
	// Should a later phonenumbers return copies, stop remembering them
	// rather than grow without end (the data has about 3,300 entries).
	if x.nprefixes.Add(1) < 20000 {
		x.prefixes.Store(id, set)
	}
	return set, nil
}

// area returns the zones of the +1 area code that starts nsn: those of
// every entry of the data under it (at most 7 digits long, so every
// exchange's), and nanpaExtra's; nil if none.
func (x *zoneIndex) area(nsn string) (*zoneSet, error) {
	npa, _ := strconv.Atoi(nsn[:3])
	if v, ok := x.areas.Load(npa); ok {
		return v.(*zoneSet), nil
	}
	whole, err := phonenumbers.GetTimezonesForPrefix("1")
	if err != nil {
		return nil, fmt.Errorf("zones of +1: %w", err)
	}
	seen := map[string]bool{}
	var names []string
	add := func(ns []string) {
		for _, n := range ns {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	buf := []byte("1" + nsn[:3] + "000")
	for ex := range 1000 {
		buf[4], buf[5], buf[6] = byte('0'+ex/100), byte('0'+ex/10%10), byte('0'+ex%10)
		ns, err := phonenumbers.GetTimezonesForPrefix(string(buf))
		if err != nil {
			return nil, fmt.Errorf("zones of +1 %03d: %w", npa, err)
		}
		if unknown(ns) || &ns[0] == &whole[0] {
			continue // no entry under the area code: the lookup fell back to +1's
		}
		add(ns)
	}
	if len(names) > 0 {
		add(nanpaExtra[npa])
	}
	set, err := newZoneSet(names)
	if err != nil {
		return nil, err
	}
	v, _ := x.areas.LoadOrStore(npa, set)
	return v.(*zoneSet), nil
}

func unknown(names []string) bool {
	return len(names) == 0 || (len(names) == 1 && names[0] == phonenumbers.UNKNOWN_TIMEZONE)
}

// newZoneSet loads the named zones; nil if there are none. A name the tz
// database lacks is an error: the embedded copy has every name the data
// uses (TestEveryDataZoneLoads), so this is a broken build.
func newZoneSet(names []string) (*zoneSet, error) {
	if unknown(names) {
		return nil, nil
	}
	var zs Zones
	for _, n := range names {
		if n == phonenumbers.UNKNOWN_TIMEZONE {
			continue
		}
		l, err := loadLocation(n)
		if err != nil {
			return nil, err
		}
		zs = append(zs, l)
	}
	zs = sortZones(zs)
	return &zoneSet{zones: zs, key: zs.Key()}, nil
}
