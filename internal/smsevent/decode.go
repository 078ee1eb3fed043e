package smsevent

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// The decoder is a small JSON scanner rather than encoding/json, which
// takes about 12 µs a record here (80,000 events/s on 2 cores) and
// matches keys without regard to case, so that an SNS envelope's
// "MessageId" would pass for the event's "messageId". The scanner accepts
// exactly the documents encoding/json accepts and decodes strings as it
// does; FuzzDecode holds it to that.

// kind is what a record turned out to be.
type kind uint8

const (
	kindInvalid kind = iota
	kindEvent
	kindNotEvent
)

// maxDepth is how deep brackets may nest, as in encoding/json.
const maxDepth = 10000

// field is a top-level key the decoder keeps.
type field uint8

const (
	fEventType field = iota
	fEventVersion
	fEventTimestamp
	fIsFinal
	fOrigination
	fDestination
	fCountry
	fMCC
	fMNC
	fMessageID
	fRequestTimestamp
	fEncoding
	fMessageType
	fStatus
	fStatusDescription
	fContext
	fParts
	fPrice
	fCarrierFee
	fSNSType    // an SNS notification's Type
	fSNSMessage // and its Message
	nFields
)

// fieldOf is the field a key names.
func fieldOf(key string) (field, bool) {
	switch key {
	case "eventType":
		return fEventType, true
	case "eventVersion":
		return fEventVersion, true
	case "eventTimestamp":
		return fEventTimestamp, true
	case "isFinal":
		return fIsFinal, true
	case "originationPhoneNumber":
		return fOrigination, true
	case "destinationPhoneNumber":
		return fDestination, true
	case "isoCountryCode":
		return fCountry, true
	case "mcc":
		return fMCC, true
	case "mnc":
		return fMNC, true
	case "messageId":
		return fMessageID, true
	case "messageRequestTimestamp":
		return fRequestTimestamp, true
	case "messageEncoding":
		return fEncoding, true
	case "messageType":
		return fMessageType, true
	case "messageStatus":
		return fStatus, true
	case "messageStatusDescription":
		return fStatusDescription, true
	case "context":
		return fContext, true
	case "totalMessageParts":
		return fParts, true
	case "totalMessagePrice":
		return fPrice, true
	case "totalCarrierFee":
		return fCarrierFee, true
	case "Type":
		return fSNSType, true
	case "Message":
		return fSNSMessage, true
	}
	return 0, false
}

// span is where a value is in the record, d[s:e]; e == 0 when absent.
type span struct{ s, e int }

// parser decodes one record. Its zero value is ready; of a record it
// keeps only the values it interns.
type parser struct {
	d       []byte
	i       int
	depth   int
	vals    [nFields]span
	seen    interner
	scratch []byte // an SNS notification's Message, decoded
}

// decode decodes the record d, which starts on line.
func (p *parser) decode(d []byte, line int) (Event, kind) {
	if !p.parse(d) {
		return Event{}, kindInvalid
	}
	return p.event(line, false)
}

// decodeFirst decodes the record that d starts with, a JSON object, which
// starts on line; n is its length. ok is false if d does not start with
// one (it may be cut short by the end of d).
func (p *parser) decodeFirst(d []byte, line int) (ev Event, k kind, n int, ok bool) {
	if n, ok = p.first(d); !ok {
		return Event{}, kindInvalid, 0, false
	}
	ev, k = p.event(line, false)
	return ev, k, n, true
}

// parse checks that d is one JSON object, with blanks around it at most,
// and notes where its top-level fields are (see first).
func (p *parser) parse(d []byte) bool {
	i, j := 0, len(d)
	for i < j && isSpace(d[i]) {
		i++
	}
	for j > i && isSpace(d[j-1]) {
		j--
	}
	n, ok := p.first(d[i:j])
	return ok && n == j-i
}

// first checks that d starts with a JSON object and notes where its
// top-level fields are; n is its length. A null value is absent; when a
// key repeats, the last one wins.
func (p *parser) first(d []byte) (n int, ok bool) {
	*p = parser{d: d, seen: p.seen, scratch: p.scratch}
	if len(d) == 0 || d[0] != '{' || !p.object(true) {
		return 0, false
	}
	return p.i, true
}

func (p *parser) ws() {
	for p.i < len(p.d) {
		switch p.d[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// object reads the object at d[i]; top says to note its fields.
func (p *parser) object(top bool) bool {
	if p.depth++; p.depth > maxDepth {
		return false
	}
	p.i++ // '{'
	p.ws()
	if p.i < len(p.d) && p.d[p.i] == '}' {
		p.i++
		p.depth--
		return true
	}
	for {
		if p.i == len(p.d) || p.d[p.i] != '"' {
			return false
		}
		ks := p.i
		esc, ok := p.string()
		if !ok {
			return false
		}
		ke := p.i
		p.ws()
		if p.i == len(p.d) || p.d[p.i] != ':' {
			return false
		}
		p.i++
		p.ws()
		vs := p.i
		if !p.value() {
			return false
		}
		if top {
			var f field
			if esc {
				f, ok = fieldOf(unquote(p.d[ks:ke]))
			} else {
				f, ok = fieldOf(string(p.d[ks+1 : ke-1])) // no copy: a switch on string([]byte)
			}
			if ok {
				if p.d[vs] == 'n' { // null
					p.vals[f] = span{}
				} else {
					p.vals[f] = span{vs, p.i}
				}
			}
		}
		p.ws()
		if p.i == len(p.d) {
			return false
		}
		switch p.d[p.i] {
		case ',':
			p.i++
			p.ws()
		case '}':
			p.i++
			p.depth--
			return true
		default:
			return false
		}
	}
}

func (p *parser) array() bool {
	if p.depth++; p.depth > maxDepth {
		return false
	}
	p.i++ // '['
	p.ws()
	if p.i < len(p.d) && p.d[p.i] == ']' {
		p.i++
		p.depth--
		return true
	}
	for {
		if !p.value() {
			return false
		}
		p.ws()
		if p.i == len(p.d) {
			return false
		}
		switch p.d[p.i] {
		case ',':
			p.i++
			p.ws()
		case ']':
			p.i++
			p.depth--
			return true
		default:
			return false
		}
	}
}

// value reads the value at d[i].
func (p *parser) value() bool {
	if p.i == len(p.d) {
		return false
	}
	switch c := p.d[p.i]; {
	case c == '{':
		return p.object(false)
	case c == '[':
		return p.array()
	case c == '"':
		_, ok := p.string()
		return ok
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || isDigit(c):
		n := number(p.d[p.i:])
		p.i += n
		return n > 0
	}
	return false
}

func (p *parser) literal(s string) bool {
	if p.i+len(s) > len(p.d) || string(p.d[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// string reads the string at d[i]; esc says it holds escapes.
func (p *parser) string() (esc, ok bool) {
	d := p.d
	i := p.i + 1
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			p.i = i + 1
			return esc, true
		case c == '\\':
			esc = true
			if i+1 == len(d) {
				return esc, false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) || !isHex(d[i+2]) || !isHex(d[i+3]) || !isHex(d[i+4]) || !isHex(d[i+5]) {
					return esc, false
				}
				i += 6
			default:
				return esc, false
			}
		case c < 0x20:
			return esc, false
		default:
			i++
			for i < len(d) && plainJSONString[d[i]] {
				i++
			}
		}
	}
	return esc, false
}

// plainJSONString[c] is true for the bytes that stand for themselves in a
// JSON string.
var plainJSONString = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// number returns the length of the JSON number d starts with, 0 if none.
func number(d []byte) int {
	i := 0
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		return 0
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i == len(d) || !isDigit(d[i]) {
			return 0
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i == len(d) || !isDigit(d[i]) {
			return 0
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	return i
}

// unquote decodes the JSON string q, quotes included, that the scanner
// accepted.
func unquote(q []byte) string {
	b := q[1 : len(q)-1]
	if !hasBackslash(b) && utf8.Valid(b) {
		return string(b)
	}
	return string(appendUnquoted(make([]byte, 0, len(b)), b))
}

// appendUnquoted appends to dst the content b of a JSON string that the
// scanner accepted, decoded as encoding/json decodes it: escapes replaced,
// a surrogate pair joined, and a lone surrogate or a byte that is not
// UTF-8 made U+FFFD.
func appendUnquoted(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '\\':
			switch e := b[i+1]; e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(b[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					if i+6 <= len(b) && b[i] == '\\' && b[i+1] == 'u' {
						if d := utf16.DecodeRune(r, hex4(b[i+2:])); d != utf8.RuneError {
							dst = utf8.AppendRune(dst, d)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				dst = utf8.AppendRune(dst, r)
			} else {
				dst = append(dst, b[i:i+n]...)
			}
			i += n
		}
	}
	return dst
}

// hex4 is the value of the four hex digits b starts with.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

func hasBackslash(s []byte) bool {
	for _, c := range s {
		if c == '\\' {
			return true
		}
	}
	return false
}

// event interprets the fields parse noted; wrapped says the record is the
// Message of an SNS notification, which is not unwrapped again.
func (p *parser) event(line int, wrapped bool) (Event, kind) {
	if p.vals[fEventType].e == 0 {
		if wrapped || p.vals[fSNSType].e == 0 {
			return Event{}, kindNotEvent
		}
		return p.notification(line)
	}
	typ, ok := p.common(fEventType)
	if !ok {
		return Event{}, kindInvalid
	}
	if len(typ) <= len("TEXT_") || !strings.HasPrefix(typ, "TEXT_") {
		return Event{}, kindNotEvent
	}
	ev := Event{Type: typ, Line: line}
	// What reconcile reads: of the wrong type, the event cannot be read.
	if ev.MessageID, ok = p.str(fMessageID); !ok || ev.MessageID == "" {
		return Event{}, kindInvalid
	}
	ms, ok := p.millis(fEventTimestamp)
	if !ok || ms == 0 {
		return Event{}, kindInvalid
	}
	ev.Timestamp = time.UnixMilli(ms).UTC()
	if ev.IsFinal, ok = p.boolean(fIsFinal); !ok {
		return Event{}, kindInvalid
	}
	if ev.Origination, ok = p.optCommon(fOrigination); !ok {
		return Event{}, kindInvalid
	}
	if ev.StatusDescription, ok = p.optCommon(fStatusDescription); !ok {
		return Event{}, kindInvalid
	}
	if ev.Bulksend, ok = p.bulksend(); !ok {
		return Event{}, kindInvalid
	}
	// What describes the message: of the wrong type, read as absent.
	ev.Version, _ = p.common(fEventVersion)
	ev.Destination, _ = p.str(fDestination)
	ev.CountryCode, _ = p.common(fCountry)
	ev.MCC, _ = p.code(fMCC)
	ev.MNC, _ = p.code(fMNC)
	if ms, ok := p.millis(fRequestTimestamp); ok && ms > 0 {
		ev.RequestTimestamp = time.UnixMilli(ms).UTC()
	}
	ev.Encoding, _ = p.common(fEncoding)
	ev.MessageType, _ = p.common(fMessageType)
	ev.Status, _ = p.common(fStatus)
	if n, ok := p.int(fParts); ok && n <= math.MaxInt32 {
		ev.Parts = int(n)
	}
	var okPrice, okFee bool
	ev.Price, okPrice = p.price(fPrice)
	ev.CarrierFee, okFee = p.price(fCarrierFee)
	ev.HasPrice = okPrice || okFee
	return ev, kindEvent
}

// notification reads an SNS notification: its Message holds the event.
// Another Type (a subscription's confirmation), or a Message that is text
// rather than JSON, is JSON but no event.
func (p *parser) notification(line int) (Event, kind) {
	if typ, ok := p.str(fSNSType); !ok || typ != "Notification" {
		return Event{}, kindNotEvent
	}
	v := p.raw(fSNSMessage)
	if len(v) == 0 || v[0] != '"' {
		return Event{}, kindInvalid
	}
	// The event is decoded from scratch: its strings are copies.
	p.scratch = appendUnquoted(p.scratch[:0], v[1:len(v)-1])
	msg := p.scratch
	q := parser{seen: p.seen}
	if !q.parse(msg) {
		if t := bytes.TrimLeft(msg, " \t\r\n"); len(t) == 0 || t[0] != '{' {
			return Event{}, kindNotEvent
		}
		return Event{}, kindInvalid // an event, spoilt
	}
	return q.event(line, true)
}

// raw is the value of f, nil when absent.
func (p *parser) raw(f field) []byte {
	v := p.vals[f]
	if v.e == 0 {
		return nil
	}
	return p.d[v.s:v.e]
}

// str is f's value when it is a string; ok is false when it is absent or
// of another type.
func (p *parser) str(f field) (string, bool) {
	v := p.raw(f)
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	return unquote(v), true
}

// common is str for a value that repeats from event to event.
func (p *parser) common(f field) (string, bool) {
	v := p.raw(f)
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	if b := v[1 : len(v)-1]; !hasBackslash(b) && utf8.Valid(b) {
		return p.seen.str(b), true
	}
	return unquote(v), true
}

// optCommon is common's value, "" when absent; ok is false when it is of
// another type than string.
func (p *parser) optCommon(f field) (string, bool) {
	if p.vals[f].e == 0 {
		return "", true
	}
	return p.common(f)
}

// code is f's value when it is a string or a number, as written.
func (p *parser) code(f field) (string, bool) {
	v := p.raw(f)
	if len(v) > 0 && (v[0] == '-' || isDigit(v[0])) {
		return p.seen.str(v), true
	}
	return p.common(f)
}

// interner keeps one copy of the values that repeat from event to event
// (types, sender numbers, descriptions), so that most events cost an
// allocation for their message ID, destination and context only. It keeps
// at most maxInterned values of at most maxInternLen bytes.
type interner struct{ m map[string]string }

const (
	maxInterned  = 4096
	maxInternLen = 256
)

func (t *interner) str(b []byte) string {
	if s, ok := t.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(t.m) < maxInterned && len(s) <= maxInternLen {
		if t.m == nil {
			t.m = make(map[string]string)
		}
		t.m[s] = s
	}
	return s
}

// boolean is f's value when it is a boolean or the string "true" or
// "false", false when absent; ok is false when it is anything else.
func (p *parser) boolean(f field) (b, ok bool) {
	v := p.raw(f)
	switch {
	case v == nil:
		return false, true
	case v[0] == '"':
		v = []byte(unquote(v))
	}
	switch string(v) {
	case "false":
		return false, true
	case "true":
		return true, true
	}
	return false, false
}

// numeral is f's value when it is a number, or a string holding exactly a
// JSON number: its text.
func (p *parser) numeral(f field) ([]byte, bool) {
	v := p.raw(f)
	if len(v) == 0 {
		return nil, false
	}
	if v[0] == '"' {
		if hasBackslash(v) {
			v = []byte(unquote(v))
		} else {
			v = v[1 : len(v)-1]
		}
	}
	if len(v) == 0 || number(v) != len(v) {
		return nil, false
	}
	return v, true
}

// int is f's value when it is a non-negative whole number (its text all
// digits) of at most 18 digits.
func (p *parser) int(f field) (int64, bool) {
	v, ok := p.numeral(f)
	if !ok || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// maxMillis is the last millisecond of year 9999, the last a timestamp in
// RFC 3339 can show.
const maxMillis = 253402300799999

// millis is f's value when it is a whole number of milliseconds that
// RFC 3339 can show.
func (p *parser) millis(f field) (int64, bool) {
	n, ok := p.int(f)
	return n, ok && n <= maxMillis
}

// maxPrice bounds a price in dollars: far above any text message's, low
// enough that sums and reports stay finite and exact to the billionth.
const maxPrice = 1e6

// price is f's value when it is a non-negative number below maxPrice.
func (p *parser) price(f field) (float64, bool) {
	v, ok := p.numeral(f)
	if !ok {
		return 0, false
	}
	x, err := strconv.ParseFloat(string(v), 64)
	if err != nil || x < 0 || x >= maxPrice {
		return 0, false
	}
	return x + 0, true // -0 is 0
}

// bulksend is context.bulksend, "" when either is absent; ok is false when
// context is not an object or bulksend not a string.
func (p *parser) bulksend() (string, bool) {
	v := p.raw(fContext)
	if v == nil {
		return "", true
	}
	if v[0] != '{' {
		return "", false
	}
	// parse checked v: read its keys, skipping their values.
	q := parser{d: v, i: 1}
	var val []byte
	for {
		q.ws()
		if q.d[q.i] == '}' {
			break
		}
		ks := q.i
		esc, _ := q.string()
		key := q.d[ks:q.i]
		q.ws()
		q.i++ // ':'
		q.ws()
		vs := q.i
		q.value()
		if esc && unquote(key) == "bulksend" || !esc && string(key) == `"bulksend"` {
			val = q.d[vs:q.i]
		}
		q.ws()
		if q.d[q.i] == ',' {
			q.i++
		}
	}
	switch {
	case val == nil || string(val) == "null":
		return "", true
	case val[0] == '"':
		return unquote(val), true
	}
	return "", false
}
