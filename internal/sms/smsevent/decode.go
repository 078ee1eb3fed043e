package smsevent

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// kind is what a record turned out to be.
type kind uint8

const (
	kindInvalid kind = iota
	kindEvent
	kindNotEvent
	kindInbound // an inbound SMS message: counted as NotEvent, and Inbound
)

// fields are the keys of a JSON object and their values, as written.
//
// A map rather than a struct, because encoding/json matches a struct's
// fields to keys without regard to case: "MessageId", an SNS envelope's,
// would pass for an event's "messageId". A map's keys are exact, and when
// a key repeats, the last one wins.
type fields map[string]json.RawMessage

// layer is what envelopes a record was found in: an event may be wrapped
// in an SNS notification, an EventBridge event, or an EventBridge event
// published to SNS (a rule's SNS target); no deeper, and never one in
// itself, so that a record costs a bounded number of decodes.
type layer uint8

const (
	inSNS         layer = 1 << iota // the Message of an SNS notification
	inEventBridge                   // the detail of an EventBridge event
)

// decode decodes the record d, one JSON object with blanks around it at
// most, which starts on line; in says the envelopes it was found in.
func decode(d []byte, line int, in layer) (Event, kind) {
	var f fields
	if json.Unmarshal(d, &f) != nil || f == nil {
		return Event{}, kindInvalid
	}
	return f.event(line, in)
}

// get is k's value, nil when it is absent or null.
func (f fields) get(k string) json.RawMessage {
	if v := f[k]; string(v) != "null" {
		return v
	}
	return nil
}

// event reads f as an SMS event (see Reader); in says the envelopes it was
// found in.
func (f fields) event(line int, in layer) (Event, kind) {
	t := f.get("eventType")
	if t == nil {
		switch {
		case in == 0 && f.get("Type") != nil:
			return f.notification(line)
		case in&inEventBridge == 0 && f.get("detail-type") != nil:
			return f.eventBridge(line, in)
		}
		if _, ok := f.inbound(); ok {
			return Event{}, kindInbound
		}
		return Event{}, kindNotEvent
	}
	typ, ok := str(t)
	if !ok {
		return Event{}, kindInvalid
	}
	if len(typ) <= len("TEXT_") || !strings.HasPrefix(typ, "TEXT_") {
		return Event{}, kindNotEvent
	}
	ev := Event{Type: typ, Line: line}
	// What reconcile reads: of the wrong type, the event cannot be read.
	if ev.MessageID, ok = str(f.get("messageId")); !ok || ev.MessageID == "" {
		return Event{}, kindInvalid
	}
	ms, ok := millis(f.get("eventTimestamp"))
	if !ok || ms == 0 {
		return Event{}, kindInvalid
	}
	ev.Timestamp = time.UnixMilli(ms).UTC()
	if ev.IsFinal, ok = boolean(f.get("isFinal")); !ok {
		return Event{}, kindInvalid
	}
	if ev.Origination, ok = optStr(f.get("originationPhoneNumber")); !ok {
		return Event{}, kindInvalid
	}
	if ev.StatusDescription, ok = optStr(f.get("messageStatusDescription")); !ok {
		return Event{}, kindInvalid
	}
	if ev.Bulksend, ok = bulksend(f.get("context")); !ok {
		return Event{}, kindInvalid
	}
	// What describes the message: of the wrong type, read as absent.
	ev.Version, _ = str(f.get("eventVersion"))
	ev.Destination, _ = str(f.get("destinationPhoneNumber"))
	ev.CountryCode, _ = str(f.get("isoCountryCode"))
	ev.MCC = code(f.get("mcc"))
	ev.MNC = code(f.get("mnc"))
	if ms, ok := millis(f.get("messageRequestTimestamp")); ok && ms > 0 {
		ev.RequestTimestamp = time.UnixMilli(ms).UTC()
	}
	ev.Encoding, _ = str(f.get("messageEncoding"))
	ev.MessageType, _ = str(f.get("messageType"))
	ev.Status, _ = str(f.get("messageStatus"))
	if n, ok := whole(f.get("totalMessageParts")); ok && n <= math.MaxInt32 {
		ev.Parts = int(n)
	}
	var okPrice, okFee bool
	ev.Price, okPrice = price(f.get("totalMessagePrice"))
	ev.CarrierFee, okFee = price(f.get("totalCarrierFee"))
	ev.HasPrice = okPrice || okFee
	return ev, kindEvent
}

// notification reads an SNS notification: its Message holds the event,
// or an EventBridge event that holds it. Another Type (a subscription's
// confirmation), or a Message that is text rather than a JSON object, is
// JSON but no event.
func (f fields) notification(line int) (Event, kind) {
	if typ, _ := str(f.get("Type")); typ != "Notification" {
		return Event{}, kindNotEvent
	}
	msg, ok := str(f.get("Message"))
	if !ok {
		return Event{}, kindInvalid
	}
	if !strings.HasPrefix(strings.TrimLeft(msg, " \t\r\n"), "{") {
		return Event{}, kindNotEvent
	}
	return decode([]byte(msg), line, inSNS)
}

// eventBridge reads an EventBridge event ("detail-type": "Text Message
// Delivery Status Updated", source aws.sms-voice): its detail object is the
// event record. Another detail-type (a voice or media message's, a
// registration's) is no SMS event, which the detail's eventType tells as
// well; a detail that is not an object, or a detail-type that is not a
// string, is invalid.
func (f fields) eventBridge(line int, in layer) (Event, kind) {
	if _, ok := str(f.get("detail-type")); !ok {
		return Event{}, kindInvalid
	}
	d := f.get("detail")
	if d == nil || d[0] != '{' {
		return Event{}, kindInvalid
	}
	var inner fields
	if json.Unmarshal(d, &inner) != nil {
		return Event{}, kindInvalid // cannot be: d is a value of valid JSON
	}
	return inner.event(line, in|inEventBridge)
}

// Inbound is an inbound SMS message: a reply to a two-way number, as AWS
// End User Messaging publishes it to the number's SNS topic. Strings are ""
// when the message does not have them.
type Inbound struct {
	From       string // originationNumber: the phone that sent it (required)
	To         string // destinationNumber: the two-way number it was sent to
	Keyword    string // messageKeyword: the keyword AWS matched, if any
	Body       string // messageBody: the text
	ID         string // inboundMessageId (required)
	PreviousID string // previousPublishedMessageId: the last message sent from To to From, if any
	// At is the SNS notification's Timestamp, when it came in one (AWS's
	// inbound message has no time of its own); zero otherwise.
	At time.Time
}

// ParseInbound reads rec, one JSON object, as an inbound SMS message, raw
// or the Message of an SNS notification; ok is false when it is not one: not
// JSON, or without a non-empty originationNumber and inboundMessageId
// strings, or with a messageBody that is not a string.
func ParseInbound(rec []byte) (_ Inbound, ok bool) {
	var f fields
	if json.Unmarshal(rec, &f) != nil || f == nil {
		return Inbound{}, false
	}
	var at time.Time
	if typ, _ := str(f.get("Type")); typ == "Notification" && f.get("originationNumber") == nil {
		msg, ok := str(f.get("Message"))
		if !ok {
			return Inbound{}, false
		}
		if ts, ok := str(f.get("Timestamp")); ok {
			at, _ = time.Parse(time.RFC3339Nano, ts)
		}
		f = nil
		if json.Unmarshal([]byte(msg), &f) != nil || f == nil {
			return Inbound{}, false
		}
	}
	in, ok := f.inbound()
	in.At = at.UTC()
	return in, ok
}

// inbound reads f as an inbound SMS message.
func (f fields) inbound() (in Inbound, ok bool) {
	if in.From, ok = str(f.get("originationNumber")); !ok || in.From == "" {
		return Inbound{}, false
	}
	if in.ID, ok = str(f.get("inboundMessageId")); !ok || in.ID == "" {
		return Inbound{}, false
	}
	if in.Body, ok = optStr(f.get("messageBody")); !ok {
		return Inbound{}, false
	}
	in.To, _ = str(f.get("destinationNumber"))
	in.Keyword, _ = str(f.get("messageKeyword"))
	in.PreviousID, _ = str(f.get("previousPublishedMessageId"))
	return in, true
}

// str is v when it is a string; ok is false when it is absent or of
// another type.
func str(v json.RawMessage) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	// Most strings have nothing to decode; v is valid JSON.
	if b := v[1 : len(v)-1]; bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		return string(b), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// optStr is str's value, "" when absent; ok is false when v is of another
// type than string.
func optStr(v json.RawMessage) (string, bool) {
	if v == nil {
		return "", true
	}
	return str(v)
}

// code is v when it is a string or a number, as written; "" otherwise.
func code(v json.RawMessage) string {
	if len(v) > 0 && (v[0] == '-' || isDigit(v[0])) {
		return string(v)
	}
	s, _ := str(v)
	return s
}

// boolean is v when it is a boolean or the string "true" or "false", false
// when absent; ok is false when it is anything else.
func boolean(v json.RawMessage) (b, ok bool) {
	if v == nil {
		return false, true
	}
	s := string(v)
	if v[0] == '"' {
		s, _ = str(v)
	}
	return s == "true", s == "true" || s == "false"
}

// numeral is v when it is a number, or a string holding exactly a JSON
// number: its text.
func numeral(v json.RawMessage) (string, bool) {
	if len(v) == 0 {
		return "", false
	}
	if v[0] != '"' {
		return string(v), v[0] == '-' || isDigit(v[0])
	}
	s, _ := str(v)
	ok := s != "" && (s[0] == '-' || isDigit(s[0])) && isDigit(s[len(s)-1]) && json.Valid([]byte(s))
	return s, ok
}

// whole is v when it is a non-negative whole number (its text all digits)
// of at most 18 digits.
func whole(v json.RawMessage) (int64, bool) {
	s, ok := numeral(v)
	if !ok || len(s) > 18 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// maxMillis is the last millisecond of year 9999, the last a timestamp in
// RFC 3339 can show.
const maxMillis = 253402300799999

// millis is v when it is a whole number of milliseconds that RFC 3339 can
// show.
func millis(v json.RawMessage) (int64, bool) {
	n, ok := whole(v)
	return n, ok && n <= maxMillis
}

// maxPrice bounds a price in dollars: far above any text message's, low
// enough that sums and reports stay finite and exact to the billionth.
const maxPrice = 1e6

// price is v when it is a non-negative number below maxPrice.
func price(v json.RawMessage) (float64, bool) {
	s, ok := numeral(v)
	if !ok {
		return 0, false
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || x < 0 || x >= maxPrice {
		return 0, false
	}
	return x + 0, true // -0 is 0
}

// bulksend is context.bulksend, "" when either is absent; ok is false when
// context is not an object or bulksend not a string.
func bulksend(context json.RawMessage) (string, bool) {
	if context == nil {
		return "", true
	}
	var c fields
	if context[0] != '{' || json.Unmarshal(context, &c) != nil {
		return "", false
	}
	return optStr(c.get("bulksend"))
}
