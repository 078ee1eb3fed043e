package webhook

import (
	"math"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// kind is what a record turned out to be.
type kind uint8

const (
	kindInvalid   kind = iota
	kindNotStatus      // a webhook body without statuses
	kindStatus         // a webhook body with at least one status
)

// Why a record is invalid (for tests; the first problem found).
const (
	whySyntax = "not JSON"
	whyShape  = "not a webhook body"
	whyStatus = "malformed status"
)

// maxDepth is the deepest nesting accepted, as in encoding/json.
const maxDepth = 10000

// maxUnix is 9999-12-31T23:59:59Z: a later timestamp is not a timestamp.
const maxUnix = 253402300799

// scanner decodes one record: it checks that the record is JSON (RFC 8259,
// as encoding/json accepts it) and collects the statuses it holds.
//
// It works by position on the record's bytes. A syntax error sets syntax
// and stops everything; a JSON value of the wrong type for where it is
// ("bad") is still consumed, so that a later duplicate key can replace it,
// and the function that read it reports it by returning false.
type scanner struct {
	data   []byte
	i      int
	depth  int
	syntax bool
	why    string
	line   int

	out  []Status // statuses found, in order
	tmp  []byte   // scratch for unescaped strings
	strs []byte   // the strings of the status being decoded
	pnid string   // last phone_number_id, reused to save an allocation

	// What the record holds besides statuses (other.go). Like out, they are
	// the Reader's only once the record is known to be valid.
	others  []item       // inbound messages, preferences and template updates, in order
	kinds   []string     // the kind of each change (see Counts.Kinds)
	dropped int64        // malformed parts left out (see Counts.Dropped)
	prefs   []Preference // the value being decoded's user_preferences, until its end
}

// mark is where the scanner's outputs stood, so that a repeated key can take
// back what its earlier value added: the last one wins, as in encoding/json.
type mark struct {
	out, others, kinds int
	dropped            int64
}

func (s *scanner) mark() mark {
	return mark{len(s.out), len(s.others), len(s.kinds), s.dropped}
}

func (s *scanner) reset(m mark) {
	s.out, s.others, s.kinds, s.dropped = s.out[:m.out], s.others[:m.others], s.kinds[:m.kinds], m.dropped
}

// parse decodes rec, which must be one JSON value with nothing but
// whitespace around it, and appends its statuses to s.out.
func (s *scanner) parse(rec []byte, line int) kind {
	k := s.decode(rec, line)
	if !s.syntax && !s.end() {
		s.why = whySyntax
		return kindInvalid
	}
	return k
}

// decode decodes the JSON value at the start of data (after whitespace) and
// appends its statuses to s.out. It leaves s.i just after the value and
// does not look at what follows, so that a Reader can take one value off a
// line that holds more. A syntax error sets s.syntax.
func (s *scanner) decode(data []byte, line int) kind {
	s.data, s.i, s.depth, s.syntax, s.why, s.line = data, 0, 0, false, "", line
	s.reset(mark{})
	var good bool
	if s.peek() == '{' {
		good = s.body()
	} else {
		s.skip()
		s.bad(whyShape)
	}
	if s.syntax {
		s.why = whySyntax
		return kindInvalid
	}
	if !good {
		return kindInvalid
	}
	if len(s.out) == 0 {
		return kindNotStatus
	}
	return kindStatus
}

// bad records why a value is of the wrong shape (first reason wins).
func (s *scanner) bad(why string) {
	if s.why == "" {
		s.why = why
	}
}

func (s *scanner) fail() bool {
	s.syntax = true
	return false
}

// ws skips JSON whitespace.
func (s *scanner) ws() {
	if s.i < len(s.data) && s.data[s.i] > ' ' {
		return // compact JSON: the usual case
	}
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.data) {
		return s.data[s.i]
	}
	return 0
}

// end reports whether only whitespace is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.data)
}

// enter consumes the '{' or '[' at s.i.
func (s *scanner) enter() bool {
	s.i++
	s.depth++
	if s.depth > maxDepth {
		return s.fail()
	}
	return true
}

// first reports whether a container just entered has an element; it
// consumes the closing byte of an empty one.
func (s *scanner) first(closer byte) bool {
	if s.syntax {
		return false
	}
	if s.peek() == closer {
		s.i++
		s.depth--
		return false
	}
	return true
}

// next consumes the ',' before another element (true) or the closing byte
// (false).
func (s *scanner) next(closer byte) bool {
	if s.syntax {
		return false
	}
	switch s.peek() {
	case ',':
		s.i++
		return true
	case closer:
		s.i++
		s.depth--
		return false
	}
	return s.fail()
}

// key reads an object key and its ':'. The key is unescaped; it stays valid
// until the next unescape.
func (s *scanner) key() []byte {
	if s.peek() != '"' {
		s.fail()
		return nil
	}
	k, esc := s.str()
	if esc {
		k = s.unquote(k)
	}
	if s.peek() != ':' {
		s.fail()
		return nil
	}
	s.i++
	return k
}

// skipKey is key without unescaping.
func (s *scanner) skipKey() {
	if s.peek() != '"' {
		s.fail()
		return
	}
	s.str()
	if s.peek() != ':' {
		s.fail()
		return
	}
	s.i++
}

// skip consumes one JSON value, checking its syntax.
func (s *scanner) skip() {
	switch c := s.peek(); c {
	case '"':
		s.str()
	case '{':
		if !s.enter() {
			return
		}
		for more := s.first('}'); more; more = s.next('}') {
			s.skipKey()
			if s.syntax {
				return
			}
			s.skip()
		}
	case '[':
		if !s.enter() {
			return
		}
		for more := s.first(']'); more; more = s.next(']') {
			s.skip()
		}
	case 't':
		s.lit("true")
	case 'f':
		s.lit("false")
	case 'n':
		s.lit("null")
	default:
		if c == '-' || '0' <= c && c <= '9' {
			s.number()
			return
		}
		s.fail()
	}
}

func (s *scanner) lit(word string) {
	if len(s.data)-s.i < len(word) || string(s.data[s.i:s.i+len(word)]) != word {
		s.fail()
		return
	}
	s.i += len(word)
}

// null consumes a null if one is next and reports whether it did.
func (s *scanner) null() bool {
	if s.peek() != 'n' {
		return false
	}
	s.lit("null")
	return true
}

// strPlain[c] is true for bytes that end nothing and need no decoding inside
// a JSON string.
var strPlain [256]bool

func init() {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		strPlain[c] = c != '"' && c != '\\'
	}
}

// str consumes the string at s.i (its opening quote) and returns its raw
// contents. esc is true if they need unquote: they hold an escape or a
// non-ASCII byte.
func (s *scanner) str() (raw []byte, esc bool) {
	d := s.data
	i := s.i + 1
	start := i
	for {
		for i < len(d) && strPlain[d[i]] {
			i++
		}
		if i >= len(d) {
			s.fail()
			return nil, false
		}
		switch c := d[i]; {
		case c == '"':
			s.i = i + 1
			return d[start:i], esc
		case c == '\\':
			esc = true
			if i+1 >= len(d) {
				s.fail()
				return nil, false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) || hex4(d[i+2:i+6]) < 0 {
					s.fail()
					return nil, false
				}
				i += 6
			default:
				s.fail()
				return nil, false
			}
		case c < 0x20:
			s.fail()
			return nil, false
		default: // non-ASCII
			esc = true
			i++
		}
	}
}

// hex4 decodes four hex digits, -1 if they are not.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// unquote decodes the raw contents of a string that str accepted, exactly as
// encoding/json does: invalid UTF-8 and unpaired surrogates become U+FFFD.
// The result is in s.tmp.
func (s *scanner) unquote(raw []byte) []byte {
	b := s.tmp[:0]
	for r := 0; r < len(raw); {
		c := raw[r]
		switch {
		case c == '\\':
			switch e := raw[r+1]; e {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := hex4(raw[r+2:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(raw) && raw[r] == '\\' && raw[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(raw[r+2:])); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							r += 6
							continue
						}
					}
					rr = utf8.RuneError
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // '"', '\\', '/'
				b = append(b, e)
			}
			r += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(raw[r:])
			b = utf8.AppendRune(b, rr)
			r += size
		}
	}
	s.tmp = b
	return b
}

// text consumes a string value and returns it decoded.
func (s *scanner) text() string {
	raw, esc := s.str()
	if esc {
		raw = s.unquote(raw)
	}
	return string(raw)
}

// number consumes a number and returns its bytes.
func (s *scanner) number() []byte {
	d := s.data
	start, i := s.i, s.i
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	default:
		s.fail()
		return nil
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			s.fail()
			return nil
		}
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			s.fail()
			return nil
		}
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	}
	s.i = i
	return d[start:i]
}

// parseInt parses an optionally negative run of decimal digits that fits
// in an int64.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	u, ok := parseUint(b)
	switch {
	case !ok:
		return 0, false
	case neg && u <= 1<<63:
		return -int64(u), true
	case !neg && u <= math.MaxInt64:
		return int64(u), true
	}
	return 0, false
}

// parseUint parses a non-empty run of decimal digits (leading zeros allowed)
// that fits in 19 significant digits.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	for len(b) > 1 && b[0] == '0' {
		b = b[1:]
	}
	if len(b) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	return u, true
}

// unixTime parses unix seconds written as decimal digits.
func unixTime(b []byte) (time.Time, bool) {
	u, ok := parseUint(b)
	if !ok || u > maxUnix {
		return time.Time{}, false
	}
	return time.Unix(int64(u), 0).UTC(), true
}

// body decodes the top-level object.
func (s *scanner) body() bool {
	s.enter()
	has, good := false, false
	for more := s.first('}'); more; more = s.next('}') {
		if k := s.key(); s.syntax {
			break
		} else if string(k) != "entry" {
			s.skip()
			continue
		}
		s.reset(mark{})
		switch s.peek() {
		case 'n':
			s.null()
			has, good = false, false
		case '[':
			has, good = true, s.list(s.entry)
		default:
			s.skip()
			has, good = true, false
			s.bad(whyShape)
		}
	}
	if !has {
		s.bad(whyShape)
	}
	return has && good
}

// list decodes an array whose elements must be objects (decoded by elem)
// or null.
func (s *scanner) list(elem func() bool) bool {
	s.enter()
	good := true
	for more := s.first(']'); more; more = s.next(']') {
		switch s.peek() {
		case 'n':
			s.null()
		case '{':
			if !elem() {
				good = false
			}
		default:
			s.skip()
			good = false
			s.bad(whyShape)
		}
	}
	return good
}

// object decodes an optional object member: null is fine, an object is
// decoded by fn, anything else is bad.
func (s *scanner) object(fn func() bool) bool {
	switch s.peek() {
	case 'n':
		s.null()
		return true
	case '{':
		return fn()
	}
	s.skip()
	s.bad(whyShape)
	return false
}

// array is object for arrays of objects, each decoded by elem.
func (s *scanner) array(elem func() bool) bool {
	switch s.peek() {
	case 'n':
		s.null()
		return true
	case '[':
		return s.list(elem)
	}
	s.skip()
	s.bad(whyShape)
	return false
}

// entry decodes one entry[] object.
func (s *scanner) entry() bool {
	base := s.mark()
	s.enter()
	good := true
	for more := s.first('}'); more; more = s.next('}') {
		if k := s.key(); s.syntax {
			break
		} else if string(k) != "changes" {
			s.skip()
			continue
		}
		s.reset(base)
		good = s.array(s.change)
	}
	return good
}

// change decodes one changes[] object, and notes its kind and any
// template update once both its value and its field are read.
func (s *scanner) change() bool {
	base := s.mark()
	s.enter()
	good := true
	var field string
	var v otherValue
	for more := s.first('}'); more; more = s.next('}') {
		k := s.key()
		if s.syntax {
			break
		}
		switch string(k) {
		case "value":
			s.reset(base)
			v = otherValue{}
			good = s.object(func() bool { return s.value(&v) })
		case "field":
			field = s.field()
		default:
			s.skip()
		}
	}
	if s.syntax {
		return false
	}
	s.endChange(base, field, &v)
	return good
}

// value decodes a change's value object into s.out and s.others, and
// what a template update's value holds into v.
func (s *scanner) value(v *otherValue) bool {
	base := s.mark()
	s.prefs = s.prefs[:0]
	s.enter()
	pnid := ""
	metaGood, statusesGood := true, true
	for more := s.first('}'); more; more = s.next('}') {
		k := s.key()
		if s.syntax {
			return false
		}
		switch string(k) {
		case "statuses":
			s.out = s.out[:base.out]
			statusesGood = s.array(s.status)
		case "metadata":
			pnid = ""
			switch s.peek() {
			case 'n':
				s.null()
				metaGood = true
			case '{':
				pnid, metaGood = s.metadata()
			default:
				s.skip()
				metaGood = false
				s.bad(whyShape)
			}
		default:
			s.otherMember(k, base, v)
		}
	}
	for i := base.out; i < len(s.out); i++ {
		s.out[i].PhoneNumberID = pnid
	}
	s.endValue(base, pnid, v)
	return metaGood && statusesGood
}

// metadata decodes value.metadata.
func (s *scanner) metadata() (pnid string, good bool) {
	s.enter()
	good = true
	for more := s.first('}'); more; more = s.next('}') {
		if k := s.key(); s.syntax {
			break
		} else if string(k) != "phone_number_id" {
			s.skip()
			continue
		}
		pnid = ""
		switch s.peek() {
		case 'n':
			s.null()
			good = true
		case '"':
			raw, esc := s.str()
			if esc {
				raw = s.unquote(raw)
			}
			if string(raw) != s.pnid {
				s.pnid = string(raw)
			}
			pnid, good = s.pnid, true
		default:
			s.skip()
			good = false
			s.bad(whyShape)
		}
	}
	return pnid, good
}

// optText decodes an optional string member: null is "", anything but a
// string is bad.
func (s *scanner) optText() (string, bool) {
	switch s.peek() {
	case '"':
		return s.text(), true
	case 'n':
		s.null()
		return "", true
	}
	s.skip()
	return "", false
}

// status decodes one statuses[] object and appends it to s.out if it is
// well-formed.
func (s *scanner) status() bool {
	s.enter()
	var st Status
	var id, rid, cb span // in s.strs: one allocation makes their strings and pricing's
	var pr pricing
	var tsOK bool
	idOK, stOK, ridOK, cbOK, errOK := true, true, true, true, true
	s.strs = s.strs[:0]
	for more := s.first('}'); more; more = s.next('}') {
		k := s.key()
		if s.syntax {
			return false
		}
		switch string(k) {
		case "id":
			id, idOK = s.optSpan()
		case "status":
			st.Status, stOK = s.statusText()
		case "timestamp":
			st.Timestamp, tsOK = s.timestamp()
		case "recipient_id":
			rid, ridOK = s.optSpan()
		case "biz_opaque_callback_data":
			cb, cbOK = s.optSpan()
		case "errors":
			st.ErrorCode, st.ErrorTitle, errOK = s.errors()
		case "pricing":
			pr = s.pricing()
		default:
			s.skip()
		}
	}
	if !idOK || !stOK || !tsOK || !ridOK || !cbOK || !errOK || id.n == 0 || st.Status == "" {
		s.bad(whyStatus)
		return false
	}
	all := string(s.strs)
	st.WAMID = all[id.off : id.off+id.n]
	st.RecipientID = all[rid.off : rid.off+rid.n]
	st.CallbackData = all[cb.off : cb.off+cb.n]
	st.Pricing = Pricing{
		Category: pr.category.in(all), Type: pr.typ.in(all),
		Billable: pr.billable, HasBillable: pr.hasBillable,
	}
	st.Line = s.line
	s.out = append(s.out, st)
	return true
}

// span is a string decoded into s.strs.
type span struct{ off, n int }

// pricing is a status's pricing object.
type pricing struct {
	category, typ         word
	billable, hasBillable bool
}

// word is a string of a small vocabulary (pricing categories and types):
// one of its usual values, or a span of s.strs.
type word struct {
	known string
	sp    span
}

// in returns w, its span taken from all.
func (w word) in(all string) string {
	if w.known != "" {
		return w.known
	}
	return all[w.sp.off : w.sp.off+w.sp.n]
}

// optWord is optSpan with the usual pricing categories and types interned,
// so that they cost no bytes of the status's string.
func (s *scanner) optWord() (word, bool) {
	if s.peek() != '"' {
		sp, ok := s.optSpan()
		return word{sp: sp}, ok
	}
	raw, esc := s.str()
	if esc {
		raw = s.unquote(raw)
	}
	switch string(raw) {
	case "marketing":
		return word{known: "marketing"}, true
	case "marketing_lite":
		return word{known: "marketing_lite"}, true
	case "utility":
		return word{known: "utility"}, true
	case "authentication":
		return word{known: "authentication"}, true
	case "authentication-international":
		return word{known: "authentication-international"}, true
	case "service":
		return word{known: "service"}, true
	case "regular":
		return word{known: "regular"}, true
	case "free_customer_service":
		return word{known: "free_customer_service"}, true
	case "free_entry_point":
		return word{known: "free_entry_point"}, true
	}
	sp := span{len(s.strs), len(raw)}
	s.strs = append(s.strs, raw...)
	return word{sp: sp}, true
}

// pricing decodes statuses[].pricing. Anything but an object whose
// category and type are strings and billable a boolean (each may be absent
// or null) is no pricing, not an error: it says how the message was
// billed, not what happened to it. As everywhere, the last of repeated
// keys wins.
func (s *scanner) pricing() pricing {
	if s.peek() != '{' {
		s.skip()
		return pricing{}
	}
	s.enter()
	var p pricing
	catOK, typOK, billOK := true, true, true
	for more := s.first('}'); more; more = s.next('}') {
		k := s.key()
		if s.syntax {
			return pricing{}
		}
		switch string(k) {
		case "category":
			p.category, catOK = s.optWord()
		case "type":
			p.typ, typOK = s.optWord()
		case "billable":
			p.billable, p.hasBillable, billOK = false, false, true
			switch s.peek() {
			case 't':
				s.lit("true")
				p.billable, p.hasBillable = true, true
			case 'f':
				s.lit("false")
				p.hasBillable = true
			case 'n':
				s.lit("null")
			default:
				s.skip()
				billOK = false
			}
		default:
			s.skip()
		}
	}
	if !catOK || !typOK || !billOK {
		return pricing{}
	}
	return p
}

// optSpan is optText decoding into s.strs.
func (s *scanner) optSpan() (span, bool) {
	switch s.peek() {
	case '"':
		raw, esc := s.str()
		if esc {
			raw = s.unquote(raw)
		}
		sp := span{len(s.strs), len(raw)}
		s.strs = append(s.strs, raw...)
		return sp, true
	case 'n':
		s.null()
		return span{}, true
	}
	s.skip()
	return span{}, false
}

// statusText is optText with the usual values interned.
func (s *scanner) statusText() (string, bool) {
	if s.peek() != '"' {
		return s.optText()
	}
	raw, esc := s.str()
	if esc {
		raw = s.unquote(raw)
	}
	switch string(raw) {
	case "sent":
		return "sent", true
	case "delivered":
		return "delivered", true
	case "read":
		return "read", true
	case "failed":
		return "failed", true
	}
	return string(raw), true
}

// timestamp decodes statuses[].timestamp: unix seconds as a string of
// digits or as a non-negative integer.
func (s *scanner) timestamp() (time.Time, bool) {
	switch c := s.peek(); {
	case c == '"':
		raw, esc := s.str()
		if esc {
			raw = s.unquote(raw)
		}
		return unixTime(raw)
	case '0' <= c && c <= '9':
		return unixTime(s.number())
	}
	s.skip()
	return time.Time{}, false
}

// errors decodes statuses[].errors: the code and title of its first
// non-null element.
func (s *scanner) errors() (code int, title string, good bool) {
	switch s.peek() {
	case 'n':
		s.null()
		return 0, "", true
	case '[':
	default:
		s.skip()
		return 0, "", false
	}
	s.enter()
	good, first := true, true
	for more := s.first(']'); more; more = s.next(']') {
		switch s.peek() {
		case 'n':
			s.null()
		case '{':
			c, t, ok := s.statusError()
			if !ok {
				good = false
			}
			if first {
				code, title, first = c, t, false
			}
		default:
			s.skip()
			good = false
		}
	}
	return code, title, good
}

// statusError decodes one errors[] object.
func (s *scanner) statusError() (code int, title string, good bool) {
	s.enter()
	codeOK, titleOK := true, true
	for more := s.first('}'); more; more = s.next('}') {
		k := s.key()
		if s.syntax {
			return 0, "", false
		}
		switch string(k) {
		case "code":
			code, codeOK = 0, true
			switch c := s.peek(); {
			case c == 'n':
				s.null()
			case c == '-' || '0' <= c && c <= '9':
				n, ok := parseInt(s.number())
				code, codeOK = int(n), ok && int64(int(n)) == n
			default:
				s.skip()
				codeOK = false
			}
		case "title":
			title, titleOK = s.optText()
		default:
			s.skip()
		}
	}
	return code, title, codeOK && titleOK
}
