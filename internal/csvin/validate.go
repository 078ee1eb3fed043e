package csvin

import (
	"slices"
	"sync"

	"github.com/nyaruka/phonenumbers"
)

// This file answers phonenumbers.IsValidNumber for a country calling code
// and national significant number some eighty times faster than the library
// (BenchmarkNormalize), which is what lets a million-row file be read in
// about a second.
//
// The library rebuilds each pattern string ("^(?:" + pattern + ")$") and
// looks it up in a locked cache on every call, for up to a dozen patterns per
// number (more for +1, shared by 25 regions); that string garbage is most of
// its cost. Here the same patterns, from the library's own metadata, are
// compiled once per calling code, to automata over digits (digitMatcher,
// which does not backtrack as package regexp does), and applied in the same
// order with the same rules. The tests check the two agree on every region's
// example numbers, on the SampleNumber family and on random digits for every
// calling code, so a phonenumbers upgrade that changes the rules shows up as
// a test failure.

// descMatcher is a compiled phonenumbers.PhoneNumberDesc.
type descMatcher struct {
	lengths []int32
	re      *digitMatcher // nil: the desc has no pattern and matches no number
}

func newDescMatcher(d *phonenumbers.PhoneNumberDesc) descMatcher {
	m := descMatcher{lengths: d.GetPossibleLength()}
	if p := d.GetNationalNumberPattern(); p != "" {
		m.re = newDigitMatcher(p, true)
	}
	return m
}

// match is phonenumbers' isNumberMatchingDesc.
func (m *descMatcher) match(nsn []byte) bool {
	if m.re == nil {
		return false
	}
	if len(m.lengths) > 0 && !slices.Contains(m.lengths, int32(len(nsn))) {
		return false
	}
	return m.re.Match(nsn)
}

// regionMatcher holds one region's compiled metadata.
type regionMatcher struct {
	id          string // ISO 3166 code, or "001" for a non-geographic calling code
	countryCode int32
	leading     *digitMatcher // metadata leading_digits, for shared calling codes
	general     descMatcher
	types       []descMatcher // the number types that make a number valid
}

func newRegionMatcher(m *phonenumbers.PhoneMetadata) *regionMatcher {
	r := &regionMatcher{id: m.GetId(), countryCode: m.GetCountryCode(), general: newDescMatcher(m.GetGeneralDesc())}
	if p := m.GetLeadingDigits(); p != "" {
		r.leading = newDigitMatcher(p, false)
	}
	// getNumberTypeHelper tries the types in a fixed order to say which
	// one a number is, and looks at mobile only if its pattern differs from
	// fixed-line. Whether the answer is UNKNOWN does not depend on the
	// order, so the types campaign numbers usually are go first.
	if !m.GetSameMobileAndFixedLinePattern() {
		r.types = append(r.types, newDescMatcher(m.GetMobile()))
	}
	for _, d := range []*phonenumbers.PhoneNumberDesc{
		m.GetFixedLine(), m.GetVoip(), m.GetPersonalNumber(), m.GetUan(),
		m.GetTollFree(), m.GetPremiumRate(), m.GetSharedCost(), m.GetPager(), m.GetVoicemail(),
	} {
		if dm := newDescMatcher(d); dm.re != nil {
			r.types = append(r.types, dm)
		}
	}
	return r
}

// hasType is phonenumbers' getNumberTypeHelper(nsn) != UNKNOWN.
func (r *regionMatcher) hasType(nsn []byte) bool {
	if !r.general.match(nsn) {
		return false
	}
	for i := range r.types {
		if r.types[i].match(nsn) {
			return true
		}
	}
	return false
}

// callingCode holds everything the fast path needs for one calling code.
type callingCode struct {
	code    int32
	regions []*regionMatcher // in the library's order; main region first
	// nationalPrefix matches the start of a national number from which
	// phonenumbers.Parse might strip a national prefix or carrier code
	// (national_prefix_for_parsing of the main region); nil if none.
	nationalPrefix *digitMatcher
}

// valid is phonenumbers.IsValidNumber for a number with this calling code and
// the national significant number nsn (GetNationalSignificantNumber: with
// any Italian leading zeros).
func (c *callingCode) valid(nsn []byte) bool {
	// IsValidNumberForRegion.
	region := c.region(nsn)
	if region == nil || region.countryCode != c.code {
		return false
	}
	return region.hasType(nsn)
}

// region is phonenumbers.GetRegionCodeForNumber: the only region, or the
// first whose leading digits match or, lacking leading digits, that has a
// type for nsn; nil if none does.
func (c *callingCode) region(nsn []byte) *regionMatcher {
	if len(c.regions) == 1 {
		return c.regions[0]
	}
	for _, r := range c.regions {
		if r.leading != nil {
			if r.leading.Match(nsn) {
				return r
			}
		} else if r.hasType(nsn) {
			return r
		}
	}
	return nil
}

// validNumber is phonenumbers.IsValidNumber, faster.
func validNumber(pn *phonenumbers.PhoneNumber) bool {
	if c := lookupCallingCode(int(pn.GetCountryCode())); c != nil {
		return c.valid([]byte(phonenumbers.GetNationalSignificantNumber(pn)))
	}
	return phonenumbers.IsValidNumber(pn)
}

// metadataIndex is the library's metadata by region and, for non-geographic
// calling codes (region "001"), by calling code.
type metadataIndex struct {
	byRegion map[string]*phonenumbers.PhoneMetadata
	nonGeo   map[int32]*phonenumbers.PhoneMetadata
}

var metadata = sync.OnceValue(func() *metadataIndex {
	idx := &metadataIndex{
		byRegion: make(map[string]*phonenumbers.PhoneMetadata),
		nonGeo:   make(map[int32]*phonenumbers.PhoneMetadata),
	}
	// phonenumbers parsed this collection at init (and panics there if it
	// cannot), so this returns the cached copy.
	coll, err := phonenumbers.MetadataCollection()
	if err != nil {
		return idx
	}
	for _, m := range coll.GetMetadata() {
		if m.GetId() == phonenumbers.REGION_CODE_FOR_NON_GEO_ENTITY {
			idx.nonGeo[m.GetCountryCode()] = m
		} else {
			idx.byRegion[m.GetId()] = m
		}
	}
	return idx
})

// forRegion is phonenumbers' getMetadataForRegionOrCallingCode.
func (idx *metadataIndex) forRegion(cc int, region string) *phonenumbers.PhoneMetadata {
	if region == phonenumbers.REGION_CODE_FOR_NON_GEO_ENTITY {
		return idx.nonGeo[int32(cc)]
	}
	return idx.byRegion[region]
}

// callingCodes caches a *callingCode per calling code, built on first use:
// compiling every region's patterns up front would cost a CLI invocation
// about a tenth of a second for countries its file never mentions.
var callingCodes sync.Map // int → *callingCode, or nil if the fast path cannot be used

// lookupCallingCode returns the compiled metadata for cc, or nil when the
// fast path must not be used for it.
func lookupCallingCode(cc int) *callingCode {
	if v, ok := callingCodes.Load(cc); ok {
		return v.(*callingCode)
	}
	c := buildCallingCode(cc)
	v, _ := callingCodes.LoadOrStore(cc, c)
	return v.(*callingCode)
}

func buildCallingCode(cc int) *callingCode {
	idx := metadata()
	regions := phonenumbers.GetRegionCodesForCountryCode(cc)
	if len(regions) == 0 {
		return nil
	}
	c := &callingCode{code: int32(cc)}
	for _, region := range regions {
		m := idx.forRegion(cc, region)
		if m == nil {
			return nil // the library would treat this differently; use it
		}
		c.regions = append(c.regions, newRegionMatcher(m))
	}
	if p := idx.forRegion(cc, regions[0]).GetNationalPrefixForParsing(); p != "" {
		c.nationalPrefix = newDigitMatcher(p, false)
	}
	return c
}
