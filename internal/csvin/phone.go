package csvin

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
)

// ErrInvalidPhone is wrapped by every error that says a phone number cannot
// be used. Such an error is about one recipient, not about the file: the row
// is kept and recorded as skipped (Record.Invalid), or in a suppression list
// the line is reported and passed over.
var ErrInvalidPhone = errors.New("invalid phone number")

// ErrUnknownRegion is returned for a default region that phonenumbers does not
// know. It is a configuration mistake (a flag), not a problem with a number.
var ErrUnknownRegion = errors.New("unknown region")

// phoneError is an ErrInvalidPhone with a reason. It is a string type so that
// the common reasons are constants and a file full of bad numbers costs no
// allocations to report.
type phoneError string

func (e phoneError) Error() string        { return ErrInvalidPhone.Error() + ": " + string(e) }
func (e phoneError) Is(target error) bool { return target == ErrInvalidPhone }

const (
	errEmpty         phoneError = "empty"
	errLetters       phoneError = "contains letters"
	errPlus          phoneError = "misplaced '+'"
	errTooShort      phoneError = "too short"
	errTooLong       phoneError = "too long"
	errCountryCode   phoneError = "unknown country code"
	errNoCountryCode phoneError = "no country code"
	errNotANumber    phoneError = "not a phone number"
)

// maxDigits bounds the digits we look at: 3 for a country code, 17 for the
// longest national number phonenumbers accepts, and room for an international
// prefix such as 0011. Anything longer is refused before parsing.
const maxDigits = 24

// A normalizer turns phones as written into E.164 numbers
// ("+447400123456"). Its normalize returns an error wrapping
// ErrInvalidPhone whose text says why in a few words ("invalid phone
// number: too short"). The region (an ISO 3166 alpha-2 code, any case,
// given to newNormalizer) is used for numbers written without a country
// code; with region "" every number must carry one.
//
// Spaces (including no-break and thin spaces), dashes, dots, slashes and
// parentheses are ignored; any other character, letters in particular (so
// "ext. 12" and "1-800-FLOWERS"), makes the number invalid, because guessing
// at what an operator meant can message the wrong person. Digits from other
// scripts (Arabic-Indic, Devanagari, full-width, …) are read as digits.
//
// Two things spreadsheets do to numbers are recognised. One apostrophe
// before the number is removed: web apps write '+44… so that a spreadsheet
// does not take the '+' for a formula, and Excel exports text cells that
// way. A number Excel turned into scientific notation ("4.47911E+11") has
// lost its '+' and usually digits, so it is refused with a reason that
// tells the operator how to export it properly.
//
// A number is read as international when it starts with '+', when it starts
// with "00", or when region is "" (so "447400123456", as WhatsApp itself
// writes numbers, is +44 7400 123456). With a region, other numbers are read
// the way someone in that region would dial them: "07400 123456" in GB,
// "(202) 555-0123" in US, and also the region's own international prefix
// ("011 44 …" in US). A number in another country must then be written with
// '+' or "00": "447400123456" in US is refused rather than guessed at.
//
// The result must be a number phonenumbers considers valid (IsValidNumber),
// not merely of a possible length. normalize is idempotent: a returned number
// normalizes to itself under any region. It is safe for concurrent use.
type normalizer struct {
	region string // upper case; "" for none
}

func newNormalizer(region string) (normalizer, error) {
	region = strings.ToUpper(strings.TrimSpace(region))
	if region != "" && !phonenumbers.GetSupportedRegions()[region] {
		return normalizer{}, fmt.Errorf("%w %q (want an ISO 3166 alpha-2 code such as GB)", ErrUnknownRegion, region)
	}
	return normalizer{region: region}, nil
}

func (n normalizer) normalize(raw string) (string, error) {
	var buf [maxDigits]byte
	digits, plus, err := cleanPhone(raw, buf[:0])
	if err != nil {
		return "", err
	}
	switch {
	case plus:
		return international(digits)
	case n.region == "":
		if len(digits) >= 2 && digits[0] == '0' && digits[1] == '0' {
			return international(digits[2:])
		}
		if digits[0] == '0' {
			return "", errNoCountryCode
		}
		return international(digits)
	default:
		e164, err := national(digits, n.region)
		if err == nil {
			return e164, nil
		}
		if len(digits) >= 2 && digits[0] == '0' && digits[1] == '0' {
			// "00" is the international prefix almost everywhere, even where
			// the region's own is different (011 in US, 0011 in AU, which
			// phonenumbers has already tried).
			if e, err2 := international(digits[2:]); err2 == nil {
				return e, nil
			}
		} else if e, err2 := international(digits); err2 == nil {
			// Probably a number with its country code but no '+'. We do not
			// guess (a mistyped national number can be someone else's
			// number abroad), but the operator should see why it failed.
			return "", phoneError("not a valid " + n.region + " number (write " + e + " if it includes the country code)")
		}
		return "", err
	}
}

// cleanPhone appends the digits of raw to buf, skipping separators, and says
// whether raw started with '+'.
func cleanPhone(raw string, buf []byte) (digits []byte, plus bool, err error) {
	raw = strings.TrimSpace(raw)
	if raw != "" && raw[0] == '\'' {
		raw = strings.TrimSpace(raw[1:])
	}
	if raw == "" {
		return nil, false, errEmpty
	}
	for _, r := range raw {
		switch {
		case r >= '0' && r <= '9':
			if len(buf) == cap(buf) {
				return nil, false, errTooLong
			}
			buf = append(buf, byte(r))
		case r == '+' || r == '\uFF0B':
			if plus || len(buf) > 0 {
				return nil, false, errPlus
			}
			plus = true
		case isPhoneSeparator(r):
		case unicode.Is(unicode.Nd, r):
			d, ok := digitValue(r)
			if !ok {
				return nil, false, phoneError("contains " + strconv.QuoteRune(r))
			}
			if len(buf) == cap(buf) {
				return nil, false, errTooLong
			}
			buf = append(buf, '0'+d)
		case r == utf8.RuneError:
			return nil, false, phoneError("contains invalid UTF-8")
		default:
			return nil, false, badChar(raw, r)
		}
	}
	if len(buf) == 0 {
		return nil, false, errNotANumber
	}
	return buf, plus, nil
}

// badChar is the error for raw, which contains r, neither a digit nor a
// separator.
func badChar(raw string, r rune) error {
	if err := excelScientific(raw); err != nil {
		return err
	}
	if unicode.IsLetter(r) {
		return errLetters
	}
	return phoneError("contains " + strconv.QuoteRune(r))
}

// excelScientific returns an error saying what happened if raw is a number
// in the scientific notation Excel uses for long numbers ("4.47911E+11", or
// "4,47911E+11" with a decimal comma, "4.47911e11"), and nil otherwise.
func excelScientific(raw string) error {
	mantissa, exp, ok := strings.Cut(strings.ToUpper(raw), "E")
	exp = strings.TrimPrefix(exp, "+")
	if !ok || !allDigits(exp) {
		return nil
	}
	whole, frac, point := strings.Cut(mantissa, ".")
	if !point {
		whole, frac, point = strings.Cut(mantissa, ",")
	}
	if !allDigits(whole) || (point && !allDigits(frac)) {
		return nil
	}
	// The number had exp+1 digits before Excel kept only these.
	e, err := strconv.Atoi(exp)
	if err == nil && len(whole)+len(frac) >= e+1 {
		return phoneError("Excel turned it into " + raw + " (scientific notation): format the column as Text and export again")
	}
	return phoneError("Excel turned it into " + raw + " and dropped digits: format the column as Text and export again")
}

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isPhoneSeparator reports whether r is punctuation people put between the
// digits of a phone number.
func isPhoneSeparator(r rune) bool {
	switch r {
	case '-', '.', '(', ')', '/',
		'\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212', // dashes and minus
		'\uFF08', '\uFF09', '\uFF0D', '\uFF0E', '\uFF0F': // full-width ( ) - . /
		return true
	}
	return unicode.IsSpace(r)
}

// digitValue returns the value of a decimal digit from any script. Unicode
// lays each script's digits out as a run of ten from zero to nine, so the
// value is the distance from the start of the run.
func digitValue(r rune) (byte, bool) {
	for _, rg := range unicode.Nd.R16 {
		if lo, hi := rune(rg.Lo), rune(rg.Hi); r >= lo && r <= hi {
			if rg.Stride != 1 || (hi-lo+1)%10 != 0 {
				return 0, false
			}
			return byte((r - lo) % 10), true
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if lo, hi := rune(rg.Lo), rune(rg.Hi); r >= lo && r <= hi {
			if rg.Stride != 1 || (hi-lo+1)%10 != 0 {
				return 0, false
			}
			return byte((r - lo) % 10), true
		}
	}
	return 0, false
}

// international normalizes digits that start with a country code.
//
// phonenumbers.Parse spends most of its time on regular expressions for
// things a string of digits cannot contain (extensions, RFC 3966 syntax,
// punctuation), so for the common case we split off the country code
// ourselves, as Parse does, and check validity with the precompiled metadata
// in validate.go. That gives the same result as Parse exactly when Parse would
// not strip a national prefix from what follows the country code
// ("+44 (0)7400…"), so those numbers, and every edge case (leading zeros, odd
// lengths), still go through Parse; the tests and FuzzNormalize compare the
// two paths.
func international(digits []byte) (string, error) {
	if err := checkInternational(digits); err != nil {
		return "", err
	}
	if cc, nsn, ok := splitCountryCode(digits); ok &&
		len(nsn) >= phonenumbers.MIN_LENGTH_FOR_NSN && len(nsn) <= phonenumbers.MAX_LENGTH_FOR_NSN &&
		nsn[0] != '0' {
		if c := lookupCallingCode(cc); c != nil && (c.nationalPrefix == nil || !c.nationalPrefix.Match(nsn)) {
			if c.valid(nsn) {
				return "+" + string(digits), nil
			}
			// What Parse would have returned; up to 17 digits fit a uint64.
			cc32 := int32(cc)
			nn, _ := strconv.ParseUint(string(nsn), 10, 64)
			return "", invalidReason(&phonenumbers.PhoneNumber{CountryCode: &cc32, NationalNumber: &nn})
		}
	}
	return parse("+"+string(digits), "", validNumber)
}

// checkInternational refuses what is obviously not a country code and a
// number, with a clearer reason than Parse gives.
func checkInternational(digits []byte) error {
	switch {
	case len(digits) > 0 && digits[0] == '0':
		return errCountryCode
	case len(digits) < 1+phonenumbers.MIN_LENGTH_FOR_NSN:
		return errTooShort
	}
	return nil
}

// national normalizes digits written as someone in region would dial them.
// This is the slow path: only phonenumbers.Parse knows every region's
// national prefixes, carrier codes and international prefixes.
func national(digits []byte, region string) (string, error) {
	return parse(string(digits), region, validNumber)
}

// parse is phonenumbers' Parse, valid and Format(E164), with errors that say
// why in the operator's terms. valid is phonenumbers.IsValidNumber or the
// equivalent validNumber.
func parse(number, region string, valid func(*phonenumbers.PhoneNumber) bool) (string, error) {
	var pn phonenumbers.PhoneNumber
	if err := phonenumbers.ParseToNumber(number, region, &pn); err != nil {
		switch err {
		case phonenumbers.ErrInvalidCountryCode:
			return "", errCountryCode
		case phonenumbers.ErrTooShortNSN, phonenumbers.ErrTooShortAfterIDD:
			return "", errTooShort
		case phonenumbers.ErrNumTooLong:
			return "", errTooLong
		default:
			return "", errNotANumber
		}
	}
	if pn.Extension != nil {
		// Not reachable with digits only; refuse rather than drop it.
		return "", errNotANumber
	}
	if !valid(&pn) {
		return "", invalidReason(&pn)
	}
	return phonenumbers.Format(&pn, phonenumbers.E164), nil
}

// invalidReason says why a parsed number is not valid.
func invalidReason(pn *phonenumbers.PhoneNumber) error {
	switch phonenumbers.IsPossibleNumberWithReason(pn) {
	case phonenumbers.INVALID_COUNTRY_CODE:
		return errCountryCode
	case phonenumbers.TOO_SHORT, phonenumbers.IS_POSSIBLE_LOCAL_ONLY:
		return errTooShort
	case phonenumbers.TOO_LONG:
		return errTooLong
	case phonenumbers.INVALID_LENGTH:
		return phoneError("wrong length for +" + strconv.Itoa(int(pn.GetCountryCode())))
	default:
		return phoneError("not a valid +" + strconv.Itoa(int(pn.GetCountryCode())) + " number")
	}
}

// splitCountryCode splits digits into a country calling code and the national
// number after it, the way phonenumbers does: country codes are prefix-free,
// so the first of the 1-, 2- and 3-digit prefixes that is a known code is it.
func splitCountryCode(digits []byte) (cc int, nsn []byte, ok bool) {
	if len(digits) == 0 || digits[0] == '0' {
		return 0, nil, false
	}
	for i := 1; i <= phonenumbers.MAX_LENGTH_COUNTRY_CODE && i <= len(digits); i++ {
		cc = cc*10 + int(digits[i-1]-'0')
		if len(phonenumbers.GetRegionCodesForCountryCode(cc)) > 0 {
			return cc, digits[i:], true
		}
	}
	return 0, nil, false
}

// Region is the ISO 3166 region of an E.164 number ("US", "CA", "GB"),
// "" when it has none (an invalid number, or a non-geographic one).
// Country code 1 is shared by the US, Canada and the Caribbean: only
// the area code tells them apart.
func Region(e164 string) string {
	r, ok := fastRegion(e164)
	if !ok {
		var pn phonenumbers.PhoneNumber
		if err := phonenumbers.ParseToNumber(e164, "", &pn); err != nil {
			return ""
		}
		r = phonenumbers.GetRegionCodeForNumber(&pn)
	}
	if r == "ZZ" || r == "001" { // unknown, or non-geographic
		return ""
	}
	return r
}

// fastRegion is phonenumbers.GetRegionCodeForNumber of what ParseToNumber
// makes of e164, for "+" and digits that international's fast path takes
// (a sandbox serving 10,000 sends a second spent a twentieth of its CPU in
// ParseToNumber); ok is false for the rest.
func fastRegion(e164 string) (region string, ok bool) {
	digits, plus := strings.CutPrefix(e164, "+")
	if !plus || !allDigits(digits) || checkInternational([]byte(digits)) != nil {
		return "", false
	}
	cc, nsn, ok := splitCountryCode([]byte(digits))
	if !ok || len(nsn) < phonenumbers.MIN_LENGTH_FOR_NSN || len(nsn) > phonenumbers.MAX_LENGTH_FOR_NSN || nsn[0] == '0' {
		return "", false
	}
	c := lookupCallingCode(cc)
	if c == nil || (c.nationalPrefix != nil && c.nationalPrefix.Match(nsn)) {
		return "", false
	}
	if r := c.region(nsn); r != nil {
		return r.id, true
	}
	return "", true
}
