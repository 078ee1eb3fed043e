package smssandbox

// The sandbox counts parts with its own code, not internal/segment's: the
// client measures a body with segment and paces by that count, the sandbox
// charges its budget and writes totalMessageParts by this one, so a
// disagreement between the two shows up as throttles or as a mismatch in
// reconcile instead of passing unnoticed.

// Part sizes, in septets (GSM-7) or UTF-16 units (UCS-2): 140 bytes a part,
// less the concatenation header when a body needs more than one.
const (
	gsmSingle, gsmMulti = 160, 153
	ucsSingle, ucsMulti = 70, 67
)

// Limits past which AWS refuses a body (AWS-CHR): ten parts, 1,530 GSM-7
// septets or 630 UCS-2 units.
const (
	maxParts = 10
	maxGSM   = 1530
	maxUCS2  = 630
)

// gsmBasic is the GSM 03.38 default alphabet by code point (3GPP TS 23.038
// §6.2.1, as in Unicode's GSM0338.TXT); 0x1B is the escape to the
// extension table, not a character of its own, hence -1.
var gsmBasic = [128]rune{
	0x0040, 0x00A3, 0x0024, 0x00A5, 0x00E8, 0x00E9, 0x00F9, 0x00EC, 0x00F2, 0x00C7, 0x000A, 0x00D8, 0x00F8, 0x000D, 0x00C5, 0x00E5,
	0x0394, 0x005F, 0x03A6, 0x0393, 0x039B, 0x03A9, 0x03A0, 0x03A8, 0x03A3, 0x0398, 0x039E, -1, 0x00C6, 0x00E6, 0x00DF, 0x00C9,
	0x0020, 0x0021, 0x0022, 0x0023, 0x00A4, 0x0025, 0x0026, 0x0027, 0x0028, 0x0029, 0x002A, 0x002B, 0x002C, 0x002D, 0x002E, 0x002F,
	0x0030, 0x0031, 0x0032, 0x0033, 0x0034, 0x0035, 0x0036, 0x0037, 0x0038, 0x0039, 0x003A, 0x003B, 0x003C, 0x003D, 0x003E, 0x003F,
	0x00A1, 0x0041, 0x0042, 0x0043, 0x0044, 0x0045, 0x0046, 0x0047, 0x0048, 0x0049, 0x004A, 0x004B, 0x004C, 0x004D, 0x004E, 0x004F,
	0x0050, 0x0051, 0x0052, 0x0053, 0x0054, 0x0055, 0x0056, 0x0057, 0x0058, 0x0059, 0x005A, 0x00C4, 0x00D6, 0x00D1, 0x00DC, 0x00A7,
	0x00BF, 0x0061, 0x0062, 0x0063, 0x0064, 0x0065, 0x0066, 0x0067, 0x0068, 0x0069, 0x006A, 0x006B, 0x006C, 0x006D, 0x006E, 0x006F,
	0x0070, 0x0071, 0x0072, 0x0073, 0x0074, 0x0075, 0x0076, 0x0077, 0x0078, 0x0079, 0x007A, 0x00E4, 0x00F6, 0x00F1, 0x00FC, 0x00E0,
}

// gsmExtension is the extension table's characters (§6.2.1.1) that
// handsets show: each is sent as the escape and its code, two septets.
var gsmExtension = []rune{'\f', '^', '{', '}', '\\', '[', '~', ']', '|', '€'}

// septets is the cost of each GSM-7 character: 1 or 2.
var septets = func() map[rune]int {
	m := make(map[rune]int, len(gsmBasic)+len(gsmExtension))
	for _, r := range gsmBasic {
		if r >= 0 {
			m[r] = 1
		}
	}
	for _, r := range gsmExtension {
		m[r] = 2
	}
	return m
}()

// Parts returns how many message parts body takes and whether it goes as
// UCS-2: GSM-7 when every character is in the GSM 03.38 default alphabet or
// its extension table (those cost two septets), 160 septets in one part or
// 153 per part when split; else UCS-2 in UTF-16 units (a character beyond
// the Basic Multilingual Plane costs two), 70 in one part or 67 per part. A
// split never cuts an escape or a surrogate pair, so a part may hold 152
// septets or 66 units. An empty body has no parts. Invalid UTF-8 counts as
// U+FFFD, as a JSON decoder would have made it.
func Parts(body string) (parts int, ucs2 bool) {
	parts, _, ucs2 = measure(body)
	return parts, ucs2
}

// measure is Parts with the body's size in septets or UTF-16 units, for
// AWS's size limits.
func measure(body string) (parts, units int, ucs2 bool) {
	for _, r := range body {
		if septets[r] == 0 {
			ucs2 = true
			break
		}
	}
	cost, single, multi := gsmCost, gsmSingle, gsmMulti
	if ucs2 {
		cost, single, multi = utf16Cost, ucsSingle, ucsMulti
	}
	used := 0
	for _, r := range body {
		n := cost(r)
		units += n
		// Greedy: a character that does not fit whole starts a new part.
		// Counted as if split; whether it is, is decided by the total.
		if parts == 0 || used+n > multi {
			parts++
			used = 0
		}
		used += n
	}
	if units > 0 && units <= single {
		parts = 1
	}
	return parts, units, ucs2
}

func gsmCost(r rune) int { return septets[r] }

func utf16Cost(r rune) int {
	if r >= 0x10000 {
		return 2 // a surrogate pair
	}
	return 1
}

// tooLong reports whether AWS refuses a body of this size.
func tooLong(parts, units int, ucs2 bool) bool {
	if parts > maxParts {
		return true
	}
	if ucs2 {
		return units > maxUCS2
	}
	return units > maxGSM
}
