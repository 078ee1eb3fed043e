package schedule

import (
	"strconv"
	"sync"

	"github.com/nyaruka/phonenumbers"
)

// QuietRule is a market's legal hours for marketing messages, on the
// recipient's wall clock. The zero QuietRule allows every hour.
type QuietRule struct {
	Market string // "US", or "US-" and a state's postal code
	Window Window // when messages may go
	Spec   string // Window as the law reads, e.g. "08:00-21:00"
}

// Within reports whether window w lies inside r's hours on every day, so
// that a campaign keeping to w keeps to r. The zero Window, always open,
// lies inside no rule.
func (r QuietRule) Within(w Window) bool {
	switch {
	case r.Window.IsZero():
		return true // a rule that allows every hour
	case w.IsZero():
		return false
	}
	return r.Window.covers(w)
}

func rule(market string, specs ...string) QuietRule {
	w, err := ParseWindow(specs)
	if err != nil {
		panic("schedule: rule " + market + ": " + err.Error()) // a typo in the tables below
	}
	return QuietRule{Market: market, Window: w, Spec: w.String()}
}

var (
	// The TCPA's rule (47 CFR 64.1200(c)(1)): no telephone solicitation
	// before 8 a.m. or after 9 p.m., local time at the called party's
	// location. The Communications Act's "United States" includes the
	// territories (47 U.S.C. 153), so +1 numbers of Puerto Rico, the US
	// Virgin Islands, Guam, American Samoa and the Northern Mariana Islands
	// get it too.
	federal = rule("US", "08:00-21:00")

	// States with stricter hours: Florida Telephone Solicitation Act (Fla.
	// Stat. 501.059), Washington (RCW 80.36.390), Oklahoma Telephone
	// Solicitation Act of 2022, Maryland Stop the Spam Calls Act of 2023,
	// Connecticut (Conn. Gen. Stat. 42-288a as amended in 2023), Texas
	// (Tex. Bus. & Com. Code 301.051: weekdays and Saturday 9 to 9, Sunday
	// noon to 9).
	stateRules = map[string]QuietRule{
		"FL": rule("US-FL", "08:00-20:00"),
		"WA": rule("US-WA", "08:00-20:00"),
		"OK": rule("US-OK", "08:00-20:00"),
		"MD": rule("US-MD", "08:00-20:00"),
		"CT": rule("US-CT", "09:00-20:00"),
		"TX": rule("US-TX", "mon-sat 09:00-21:00", "sun 12:00-21:00"),
	}
)

// stateAreaCodes maps the area codes of the states in stateRules to the
// state. Sources: NANPA's NPA assignments by state (nanpa.com), with the
// overlays Florida 324, 645, 728 and Texas 726, 945; and the geocoding
// data of libphonenumber 9.0.32 as phonenumbers v1.8.1 ships it (July
// 2026), which TestStateAreaCodes checks the table against, so that a
// phonenumbers upgrade with a new area code in these states fails it.
// Canada and the Caribbean share +1 and have none of these.
var stateAreaCodes = func() map[int]string {
	m := map[int]string{}
	for state, codes := range map[string][]int{
		"FL": {239, 305, 321, 324, 352, 386, 407, 448, 561, 645, 656, 689, 727, 728, 754, 772, 786, 813, 850, 863, 904, 941, 954},
		"WA": {206, 253, 360, 425, 509, 564},
		"OK": {405, 539, 572, 580, 918},
		"MD": {227, 240, 301, 410, 443, 667},
		"CT": {203, 475, 860, 959},
		"TX": {210, 214, 254, 281, 325, 346, 361, 409, 430, 432, 469, 512, 682, 713, 726, 737, 806, 817, 830, 832, 903, 915, 936, 940, 945, 956, 972, 979},
	} {
		for _, c := range codes {
			m[c] = state
		}
	}
	return m
}()

// usRegions are the regions of +1 under US federal law.
var usRegions = map[string]bool{"US": true, "PR": true, "VI": true, "GU": true, "AS": true, "MP": true}

// QuietRules returns the rules a number falls under, the federal one
// first: for a US number the TCPA's 08:00-21:00, and its state's rule
// when its area code is one of Florida, Washington, Oklahoma, Maryland,
// Connecticut or Texas; none for any other number, Canada's included. A
// number that is not E.164 falls under none. The rules hold on the
// recipient's wall clock, in each of ZonesOf's zones.
func QuietRules(e164 string) []QuietRule {
	cc, nsn, err := splitE164(e164)
	if err != nil || cc != 1 || len(nsn) != 10 {
		return nil
	}
	npa, _ := strconv.Atoi(nsn[:3])
	state, inState := stateAreaCodes[npa]
	if !inState && !usRegions[nanpaRegion(npa, nsn)] {
		return nil
	}
	if !inState {
		return []QuietRule{federal}
	}
	return []QuietRule{federal, stateRules[state]}
}

// regions caches the region of each +1 area code, which the area code
// decides (NANP assigns each to one country); "" is not cached, as the
// library answers it for numbers it does not know.
var regions sync.Map // int → string

func nanpaRegion(npa int, nsn string) string {
	if v, ok := regions.Load(npa); ok {
		return v.(string)
	}
	cc := int32(1)
	nn, _ := strconv.ParseUint(nsn, 10, 64)
	r := phonenumbers.GetRegionCodeForNumber(&phonenumbers.PhoneNumber{CountryCode: &cc, NationalNumber: &nn})
	if r != "" {
		regions.Store(npa, r)
	}
	return r
}
