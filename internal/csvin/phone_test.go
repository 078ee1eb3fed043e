package csvin

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		region  string
		want    string
		wantErr string // full error text; "" means success
	}{
		// International, however written.
		{name: "e164", raw: "+447400123456", want: "+447400123456"},
		{name: "spaces", raw: "+44 7400 123456", want: "+447400123456"},
		{name: "surrounding space and tab", raw: "  +447400123456\t", want: "+447400123456"},
		{name: "dashes dots parentheses", raw: "+1 (202) 555-01.23", want: "+12025550123"},
		{name: "UK (0) after country code", raw: "+44 (0)7400 123456", want: "+447400123456"},
		{name: "00 prefix", raw: "0044 7400 123456", want: "+447400123456"},
		{name: "digits with country code, no region", raw: "447400123456", want: "+447400123456"},
		{name: "wa_id style US", raw: "12025550123", want: "+12025550123"},
		{name: "Brazil mobile", raw: "+55 11 98765-4321", want: "+5511987654321"},
		{name: "India mobile", raw: "+91-98765-43210", want: "+919876543210"},
		{name: "no-break and thin spaces", raw: "+44\u00a07400\u202f123456", want: "+447400123456"},
		{name: "unicode dashes", raw: "+44\u20137400\u2014123456", want: "+447400123456"},
		{name: "slash", raw: "+49 170/1234567", want: "+491701234567"},
		{name: "full-width", raw: "＋４４７４００１２３４５６", want: "+447400123456"},
		{name: "Arabic-Indic digits", raw: "+٤٤٧٤٠٠١٢٣٤٥٦", want: "+447400123456"},
		{name: "Devanagari digits", raw: "+९१९८७६५४३२१०", want: "+919876543210"},
		{name: "plus number ignores region", raw: "+1 202 555 0123", region: "GB", want: "+12025550123"},

		// What spreadsheets and web apps do to numbers.
		{name: "apostrophe", raw: "'+447911123456", want: "+447911123456"},
		{name: "apostrophe after spaces", raw: "  '+44 7911 123456 ", want: "+447911123456"},
		{name: "apostrophe then spaces", raw: "' +44 7911 123456", want: "+447911123456"},
		{name: "apostrophe without plus", raw: "'447911123456", want: "+447911123456"},
		{name: "apostrophe before a national number", raw: "'07911 123456", region: "GB", want: "+447911123456"},

		// National, with a region.
		{name: "GB national", raw: "07400 123456", region: "GB", want: "+447400123456"},
		{name: "region in lower case", raw: "07400 123456", region: "gb", want: "+447400123456"},
		{name: "GB without trunk zero", raw: "7400123456", region: "GB", want: "+447400123456"},
		{name: "GB with own country code, no plus", raw: "447400123456", region: "GB", want: "+447400123456"},
		{name: "US national", raw: "(202) 555-0123", region: "US", want: "+12025550123"},
		{name: "US with trunk 1", raw: "1-202-555-0123", region: "US", want: "+12025550123"},
		{name: "US dialling abroad with 011", raw: "011 44 7400 123456", region: "US", want: "+447400123456"},
		{name: "00 from a region whose prefix is 011", raw: "0044 7400 123456", region: "US", want: "+447400123456"},
		{name: "AU dialling abroad with 0011", raw: "0011 44 7400 123456", region: "AU", want: "+447400123456"},
		{name: "Brazil national", raw: "(11) 98765-4321", region: "BR", want: "+5511987654321"},
		{name: "Brazil with trunk 0", raw: "0 11 98765-4321", region: "BR", want: "+5511987654321"},
		{name: "India national", raw: "098765 43210", region: "IN", want: "+919876543210"},
		{name: "Arabic-Indic national", raw: "٠٧٤٠٠١٢٣٤٥٦", region: "GB", want: "+447400123456"},

		// Invalid.
		{name: "empty", raw: "", wantErr: "invalid phone number: empty"},
		{name: "blank", raw: "   ", wantErr: "invalid phone number: empty"},
		{name: "punctuation only", raw: "-()", wantErr: "invalid phone number: not a phone number"},
		{name: "letters", raw: "call me", wantErr: "invalid phone number: contains letters"},
		{name: "extension", raw: "+44 7400 123456 ext. 12", wantErr: "invalid phone number: contains letters"},
		{name: "vanity number", raw: "1-800-FLOWERS", region: "US", wantErr: "invalid phone number: contains letters"},
		{name: "tel URI", raw: "tel:+447400123456", wantErr: "invalid phone number: contains letters"},
		{name: "hash", raw: "+447400123456#", wantErr: `invalid phone number: contains '#'`},
		{name: "star", raw: "*100#", wantErr: `invalid phone number: contains '*'`},
		{name: "two numbers", raw: "+447400123456, +447400123457", wantErr: `invalid phone number: contains ','`},
		{name: "double plus", raw: "++447400123456", wantErr: "invalid phone number: misplaced '+'"},
		{name: "plus in the middle", raw: "44+7400123456", wantErr: "invalid phone number: misplaced '+'"},
		{name: "plus alone", raw: "+", wantErr: "invalid phone number: not a phone number"},
		{name: "country code only", raw: "+44", wantErr: "invalid phone number: too short"},
		{name: "too short", raw: "+44 7400", wantErr: "invalid phone number: too short"},
		{name: "too long", raw: "+44 7400 123456 789", wantErr: "invalid phone number: too long"},
		{name: "far too long", raw: strings.Repeat("9", 40), wantErr: "invalid phone number: too long"},
		{name: "national without region", raw: "07400 123456", wantErr: "invalid phone number: no country code"},
		{name: "plus zero", raw: "+07400123456", wantErr: "invalid phone number: unknown country code"},
		{name: "unknown country code", raw: "+999 123 456 789", wantErr: "invalid phone number: unknown country code"},
		{name: "UK drama range", raw: "+44 7700 900123", wantErr: "invalid phone number: not a valid +44 number"},
		{name: "US 555 outside any area code", raw: "+1 555 555 0123", wantErr: "invalid phone number: not a valid +1 number"},
		{name: "wrong length for country", raw: "+44 7400 12345", wantErr: "invalid phone number: not a valid +44 number"},
		{name: "foreign number without plus", raw: "447400123456", region: "US",
			wantErr: "invalid phone number: not a valid US number (write +447400123456 if it includes the country code)"},
		{name: "national too short", raw: "07400", region: "GB", wantErr: "invalid phone number: too short"},
		{name: "national wrong length", raw: "0740012", region: "GB", wantErr: "invalid phone number: not a valid +44 number"},
		{name: "invalid UTF-8", raw: "+44\xff7400123456", wantErr: "invalid phone number: contains invalid UTF-8"},
		// Apostrophes: only one, only in front, and the number must still
		// be valid without it.
		{name: "apostrophe before too short", raw: "'+44 7400", wantErr: "invalid phone number: too short"},
		{name: "apostrophe before letters", raw: "'call me", wantErr: "invalid phone number: contains letters"},
		{name: "apostrophe alone", raw: " ' ", wantErr: "invalid phone number: empty"},
		{name: "two apostrophes", raw: "''+447911123456", wantErr: `invalid phone number: contains '\''`},
		{name: "apostrophe inside", raw: "+44'7911123456", wantErr: `invalid phone number: contains '\''`},
		{name: "apostrophe at the end", raw: "+447911123456'", wantErr: `invalid phone number: contains '\''`},
		{name: "typographic apostrophe", raw: "’+447911123456", wantErr: `invalid phone number: contains '’'`},
		{name: "apostrophe before a national number without a region", raw: "'07911 123456", wantErr: "invalid phone number: no country code"},

		// Excel's scientific notation.
		{name: "scientific", raw: "4.47911E+11",
			wantErr: "invalid phone number: Excel turned it into 4.47911E+11 and dropped digits: format the column as Text and export again"},
		{name: "scientific with a decimal comma", raw: "4,47911E+11",
			wantErr: "invalid phone number: Excel turned it into 4,47911E+11 and dropped digits: format the column as Text and export again"},
		{name: "scientific, lower case, no sign", raw: "4.47911e11",
			wantErr: "invalid phone number: Excel turned it into 4.47911e11 and dropped digits: format the column as Text and export again"},
		{name: "scientific without a fraction", raw: "4E+11",
			wantErr: "invalid phone number: Excel turned it into 4E+11 and dropped digits: format the column as Text and export again"},
		{name: "scientific, surrounding spaces", raw: " 4.47911E+11 ",
			wantErr: "invalid phone number: Excel turned it into 4.47911E+11 and dropped digits: format the column as Text and export again"},
		{name: "scientific after an apostrophe", raw: "'4.47911E+11",
			wantErr: "invalid phone number: Excel turned it into 4.47911E+11 and dropped digits: format the column as Text and export again"},
		{name: "scientific with every digit", raw: "4.47911123456E+11",
			wantErr: "invalid phone number: Excel turned it into 4.47911123456E+11 (scientific notation): format the column as Text and export again"},
		{name: "scientific with a huge exponent", raw: "1E+99999999999999999999",
			wantErr: "invalid phone number: Excel turned it into 1E+99999999999999999999 and dropped digits: format the column as Text and export again"},
		{name: "not scientific: negative exponent", raw: "4.47911E-11", wantErr: "invalid phone number: contains letters"},
		{name: "not scientific: no exponent digits", raw: "4.47911E+", wantErr: "invalid phone number: contains letters"},
		{name: "not scientific: no mantissa", raw: "E+11", wantErr: "invalid phone number: contains letters"},
		{name: "not scientific: point without a fraction", raw: "4.E+11", wantErr: "invalid phone number: contains letters"},
		{name: "not scientific: two separators", raw: "4.479,11E+11", wantErr: `invalid phone number: contains ','`},
		{name: "not scientific: a plus in front", raw: "+4.47911E+11", wantErr: "invalid phone number: contains letters"},
		{name: "not scientific: spaced", raw: "4.47911 E+11", wantErr: "invalid phone number: contains letters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := normalize(tt.raw, tt.region)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("normalize(%q, %q) = %q, want error %q", tt.raw, tt.region, got, tt.wantErr)
				}
				if err.Error() != tt.wantErr {
					t.Errorf("error = %q, want %q", err, tt.wantErr)
				}
				if !errors.Is(err, ErrInvalidPhone) {
					t.Errorf("error %v does not wrap ErrInvalidPhone", err)
				}
				if got != "" {
					t.Errorf("got %q with an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("normalize(%q, %q) = %q, %v; want %q", tt.raw, tt.region, got, err, tt.want)
			}
			for _, region := range []string{"", tt.region, "US", "IN"} {
				if again, err := normalize(got, region); again != got || err != nil {
					t.Errorf("normalize(%q, %q) = %q, %v; not idempotent", got, region, again, err)
				}
			}
		})
	}
}

func TestNormalizeUnknownRegion(t *testing.T) {
	for _, region := range []string{"XX", "UK", "001", "GBR", "G"} {
		t.Run(region, func(t *testing.T) {
			_, err := normalize("+447400123456", region)
			if !errors.Is(err, ErrUnknownRegion) {
				t.Fatalf("err = %v, want ErrUnknownRegion", err)
			}
			if errors.Is(err, ErrInvalidPhone) {
				t.Errorf("a bad region is not a bad phone number: %v", err)
			}
		})
	}
}

func TestDigitValue(t *testing.T) {
	tests := []struct {
		name string
		r    rune
		want byte
	}{
		{"ASCII", '7', 7},
		{"Arabic-Indic zero", '٠', 0},
		{"Extended Arabic-Indic", '۹', 9},
		{"Devanagari", '५', 5},
		{"Bengali", '৩', 3},
		{"full-width", '８', 8},
		{"mathematical bold", '𝟗', 9},
		{"mathematical monospace", '𝟶', 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := digitValue(tt.r)
			if !ok || got != tt.want {
				t.Errorf("digitValue(%q) = %d, %v; want %d", tt.r, got, ok, tt.want)
			}
		})
	}
	if _, ok := digitValue('a'); ok {
		t.Error("digitValue('a') ok")
	}
}

// libInternational and libNational are international and national using
// nothing but phonenumbers, for the fast paths to be compared with.
func libInternational(digits []byte) (string, error) {
	if err := checkInternational(digits); err != nil {
		return "", err
	}
	return parse("+"+string(digits), "", phonenumbers.IsValidNumber)
}

func libNational(digits []byte, region string) (string, error) {
	return parse(string(digits), region, phonenumbers.IsValidNumber)
}

// checkNational fails t if national and libNational disagree.
func checkNational(t testing.TB, digits, region string) {
	t.Helper()
	fast, fastErr := national([]byte(digits), region)
	slow, slowErr := libNational([]byte(digits), region)
	if fast != slow || errText(fastErr) != errText(slowErr) {
		t.Errorf("%s in %s: national = %q, %v; phonenumbers = %q, %v", digits, region, fast, fastErr, slow, slowErr)
	}
}

// libRegion is Region by phonenumbers alone.
func libRegion(e164 string) string {
	var pn phonenumbers.PhoneNumber
	if err := phonenumbers.ParseToNumber(e164, "", &pn); err != nil {
		return ""
	}
	if r := phonenumbers.GetRegionCodeForNumber(&pn); r != "ZZ" && r != "001" {
		return r
	}
	return ""
}

// fastValid runs the fast path's validity check on international digits,
// reporting whether the fast path applies to them at all.
func fastValid(digits []byte) (valid, applies bool) {
	cc, nsn, ok := splitCountryCode(digits)
	if !ok || len(nsn) < phonenumbers.MIN_LENGTH_FOR_NSN || len(nsn) > phonenumbers.MAX_LENGTH_FOR_NSN || nsn[0] == '0' {
		return false, false
	}
	c := lookupCallingCode(cc)
	if c == nil || (c.nationalPrefix != nil && c.nationalPrefix.Match(nsn)) {
		return false, false
	}
	return c.valid(nsn), true
}

// checkFastPath fails t if the fast path and phonenumbers disagree about
// digits (a number in international form without '+').
func checkFastPath(t testing.TB, digits string) {
	t.Helper()
	fast, fastErr := international([]byte(digits))
	slow, slowErr := libInternational([]byte(digits))
	if fast != slow || errText(fastErr) != errText(slowErr) {
		t.Errorf("+%s: fast path = %q, %v; Parse = %q, %v", digits, fast, fastErr, slow, slowErr)
	}
	if fast, slow := Region("+"+digits), libRegion("+"+digits); fast != slow {
		t.Errorf("+%s: Region = %q, phonenumbers = %q", digits, fast, slow)
	}
	valid, applies := fastValid([]byte(digits))
	if !applies {
		return
	}
	pn, err := phonenumbers.Parse("+"+digits, "")
	if err != nil {
		t.Errorf("+%s: fast path applies but Parse fails: %v", digits, err)
		return
	}
	if lib := phonenumbers.IsValidNumber(pn); valid != lib {
		t.Errorf("+%s: fast path says valid=%v, IsValidNumber says %v", digits, valid, lib)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestFastPathMatchesLibrary(t *testing.T) {
	types := []phonenumbers.PhoneNumberType{
		phonenumbers.FIXED_LINE, phonenumbers.MOBILE, phonenumbers.TOLL_FREE,
		phonenumbers.PREMIUM_RATE, phonenumbers.SHARED_COST, phonenumbers.VOIP,
		phonenumbers.PERSONAL_NUMBER, phonenumbers.PAGER, phonenumbers.UAN,
		phonenumbers.VOICEMAIL,
	}
	t.Run("example numbers", func(t *testing.T) {
		n := 0
		for region := range phonenumbers.GetSupportedRegions() {
			for _, typ := range types {
				pn := phonenumbers.GetExampleNumberForType(region, typ)
				if pn == nil {
					continue
				}
				e164 := phonenumbers.Format(pn, phonenumbers.E164)
				checkFastPath(t, e164[1:])
				n++
				if raceEnabled {
					continue
				}
				// Neighbours of a valid number are the interesting cases.
				for _, d := range []string{"0", "9"} {
					checkFastPath(t, e164[1:]+d)
					checkFastPath(t, e164[1:len(e164)-1])
					checkFastPath(t, e164[1:len(e164)-1]+d)
				}
			}
		}
		for cc := range phonenumbers.GetSupportedGlobalNetworkCallingCodes() {
			if pn := phonenumbers.GetExampleNumberForNonGeoEntity(cc); pn != nil {
				checkFastPath(t, phonenumbers.Format(pn, phonenumbers.E164)[1:])
				n++
			}
		}
		if n < 1000 {
			t.Errorf("only %d example numbers checked", n)
		}
	})
	t.Run("national example numbers", func(t *testing.T) {
		for region := range phonenumbers.GetSupportedRegions() {
			for _, typ := range types {
				pn := phonenumbers.GetExampleNumberForType(region, typ)
				if pn == nil {
					continue
				}
				var buf [maxDigits]byte
				digits, _, err := cleanPhone(phonenumbers.Format(pn, phonenumbers.NATIONAL), buf[:0])
				if err != nil {
					continue // some national formats have letters or nothing
				}
				checkNational(t, string(digits), region)
				if !raceEnabled {
					checkNational(t, string(digits[:len(digits)-1]), region)
					checkNational(t, string(digits)+"1", region)
				}
			}
		}
	})
	t.Run("random digits for every calling code", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		per := 60
		if testing.Short() || raceEnabled {
			per = 10
		}
		for cc := range phonenumbers.GetSupportedCallingCodes() {
			prefix := strconv.Itoa(cc)
			for range per {
				var b strings.Builder
				b.WriteString(prefix)
				for range 4 + rng.IntN(11) {
					b.WriteByte(byte('0' + rng.IntN(10)))
				}
				checkFastPath(t, b.String())
			}
		}
	})
	t.Run("sample numbers", func(t *testing.T) {
		for i := range 2000 {
			checkFastPath(t, SampleNumber(i * 7)[1:])
		}
	})
}

func TestRegion(t *testing.T) {
	for _, tc := range []struct{ phone, want string }{
		{"+12015550123", "US"}, // New Jersey
		{"+14165550123", "CA"}, // Toronto
		{"+18765550123", "JM"}, // Jamaica shares +1
		{"+447400123456", "GB"},
		{"+5511987654321", "BR"},
		{"+80012345678", ""},     // international freephone: no region
		{"+12005550123", ""},     // +1 with no area code 200: no region
		{"+4407400123456", "GB"}, // a national prefix after the country code
		{"+1 201 555 0123", "US"},
		{"+", ""},
		{"not a phone", ""},
	} {
		if got := Region(tc.phone); got != tc.want {
			t.Errorf("Region(%q) = %q, want %q", tc.phone, got, tc.want)
		}
	}
}
