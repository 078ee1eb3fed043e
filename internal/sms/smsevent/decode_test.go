package smsevent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

// minimal is the least an SMS event needs, to which cases add fields.
func minimal(fields ...string) string {
	return "{" + strings.Join(append([]string{`"eventType":"TEXT_DELIVERED"`, `"messageId":"m1"`, `"eventTimestamp":1796032800310`}, fields...), ",") + "}"
}

// sns wraps record in an SNS notification, as an HTTPS subscriber logs it.
func sns(record string) string {
	m, _ := json.Marshal(record)
	return `{"Type":"Notification","MessageId":"22b80b92-fdea-4c2c-8f9d-bdfb0c7bf300","TopicArn":"arn:aws:sns:us-east-1:123456789012:sms-events","Message":` + string(m) + `}`
}

// eventBridge wraps record in an EventBridge event, as a rule's target
// (SQS, SNS, CloudWatch Logs, Firehose) receives it.
func eventBridge(record string) string {
	return `{"version":"0","id":"5c0fa4f8-e4ba-ed02-6101-c795472fccd0","detail-type":"Text Message Delivery Status Updated","source":"aws.sms-voice","account":"123456789012","time":"2026-11-30T10:00:00Z","region":"us-east-1","resources":[],"detail":` + record + `}`
}

// inbound is an inbound SMS message as AWS publishes it to a two-way
// number's SNS topic.
const inbound = `{"originationNumber":"+14255550101","destinationNumber":"+12065550152","messageKeyword":"KEYWORD_123456789012","messageBody":"STOP","previousPublishedMessageId":"0e5b2c7a-3f41-4d2e-9a0b-5c1d2e3f4a01","inboundMessageId":"cae173d2-66b9-564c-8309-21f858e9fb84"}`

// TestParseInbound reads inbound messages, raw and through SNS, and
// refuses what is not one.
func TestParseInbound(t *testing.T) {
	want := Inbound{From: "+14255550101", To: "+12065550152", Keyword: "KEYWORD_123456789012", Body: "STOP",
		ID: "cae173d2-66b9-564c-8309-21f858e9fb84", PreviousID: "0e5b2c7a-3f41-4d2e-9a0b-5c1d2e3f4a01"}
	for _, tc := range []struct {
		name string
		rec  string
		ok   bool
	}{
		{"raw", inbound, true},
		{"SNS", sns(inbound), true},
		{"SNS message not JSON", sns("STOP"), false},
		{"an event", minimal(), false},
		{"not JSON", inbound[:30], false},
		{"from empty", strings.Replace(inbound, "+14255550101", "", 1), false},
		{"SNS without a message", `{"Type":"Notification"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseInbound([]byte(tc.rec))
			if ok != tc.ok || ok && got != want {
				t.Errorf("got %+v %v, want ok %v", got, ok, tc.ok)
			}
		})
	}
}

// FuzzParseInbound: whatever the input, ParseInbound does not panic, and
// what it accepts has a sender and an ID and is JSON.
func FuzzParseInbound(f *testing.F) {
	for _, s := range []string{inbound, sns(inbound), minimal(), sns("x"), `{"Type":"Notification","Message":"{}"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		in, ok := ParseInbound(d)
		if ok && (in.From == "" || in.ID == "" || !json.Valid(d)) {
			t.Fatalf("accepted %+v of %q", in, d)
		}
	})
}

// jsonString is s as a JSON string.
func jsonString(s string) string { m, _ := json.Marshal(s); return string(m) }

// maxDepth is how deep encoding/json lets brackets nest.
const maxDepth = 10000

// TestDecode covers how a record's fields are read: the types each may
// have, numbers as strings, null, repeated and escaped keys, and SNS.
func TestDecode(t *testing.T) {
	at := time.UnixMilli(1796032800310).UTC()
	ok := func(mod func(*Event)) *Event {
		ev := Event{Type: "TEXT_DELIVERED", MessageID: "m1", Timestamp: at, Line: 7}
		if mod != nil {
			mod(&ev)
		}
		return &ev
	}
	for _, tc := range []struct {
		name string
		rec  string
		kind kind
		want *Event // for kindEvent
	}{
		{"minimal", minimal(), kindEvent, ok(nil)},
		{"blanks around", " \t\r\n" + minimal() + "\n", kindEvent, ok(nil)},
		{"every field", minimal(`"eventVersion":"1.0"`, `"isFinal":true`, `"originationPhoneNumber":"+12065550152"`,
			`"destinationPhoneNumber":"+14255550101"`, `"isInternationalSend":false`, `"isoCountryCode":"US"`, `"mcc":"310"`, `"mnc":"410"`,
			`"messageRequestTimestamp":1796032800000`, `"messageEncoding":"GSM"`, `"messageType":"PROMOTIONAL"`,
			`"messageStatus":"DELIVERED"`, `"messageStatusDescription":"Message has been accepted by phone"`,
			`"context":{"account":"x","bulksend":"spring-2026:1"}`, `"totalMessageParts":1`, `"totalMessagePrice":0.00581`,
			`"totalCarrierFee":0.00266`), kindEvent, ok(func(e *Event) {
			e.Version, e.IsFinal, e.Origination, e.Destination = "1.0", true, "+12065550152", "+14255550101"
			e.CountryCode, e.MCC, e.MNC, e.RequestTimestamp = "US", "310", "410", time.UnixMilli(1796032800000).UTC()
			e.Encoding, e.MessageType, e.Status, e.StatusDescription = "GSM", "PROMOTIONAL", "DELIVERED", "Message has been accepted by phone"
			e.Bulksend, e.Parts, e.Price, e.CarrierFee, e.HasPrice = "spring-2026:1", 1, 0.00581, 0.00266, true
		})},
		{"numbers as strings", `{"eventType":"TEXT_DELIVERED","messageId":"m1","eventTimestamp":"1796032800310","isFinal":"true",` +
			`"mcc":310,"totalMessageParts":"2","totalMessagePrice":"0.01162","totalCarrierFee":"5.32e-3"}`, kindEvent, ok(func(e *Event) {
			e.IsFinal, e.MCC, e.Parts, e.Price, e.CarrierFee, e.HasPrice = true, "310", 2, 0.01162, 0.00532, true
		})},
		{"escapes in keys and values", `{"event\u0054ype":"TEXT_\u0044ELIVERED","messageId":"m\u0031","eventTimestamp":"\u0031796032800310",` +
			`"isFinal":"tru\u0065","context":{"bulk\u0073end":"caf\u00e9:1"}}`, kindEvent, ok(func(e *Event) { e.IsFinal, e.Bulksend = true, "café:1" })},
		{"invalid UTF-8 becomes U+FFFD", minimal(`"messageStatusDescription":"a` + "\xff" + `b"`), kindEvent, ok(func(e *Event) { e.StatusDescription = "a\ufffdb" })},
		{"null is absent", minimal(`"isFinal":null`, `"originationPhoneNumber":null`, `"context":null`, `"totalMessagePrice":null`), kindEvent, ok(nil)},
		{"last key wins", minimal(`"messageId":"m2"`, `"context":{"bulksend":"a:1","bulksend":"b:2"}`), kindEvent, ok(func(e *Event) { e.MessageID, e.Bulksend = "m2", "b:2" })},
		{"a price alone", minimal(`"totalCarrierFee":0.00266`), kindEvent, ok(func(e *Event) { e.CarrierFee, e.HasPrice = 0.00266, true })},
		{"a price of zero", minimal(`"totalMessagePrice":0`, `"totalCarrierFee":-0.0`), kindEvent, ok(func(e *Event) { e.HasPrice = true })},
		{"malformed prices and parts are absent", minimal(`"totalMessageParts":1.5`, `"totalMessagePrice":-0.1`, `"totalCarrierFee":"0x1p-2"`), kindEvent, ok(nil)},
		{"more prices malformed", minimal(`"totalMessageParts":-1`, `"totalMessagePrice":1e6`, `"totalCarrierFee":"NaN"`), kindEvent, ok(nil)},
		{"parts beyond int32", minimal(`"totalMessageParts":2147483648`, `"totalMessagePrice":"1e400"`), kindEvent, ok(nil)},
		{"descriptive fields of the wrong type", minimal(`"eventVersion":1`, `"destinationPhoneNumber":["x"]`, `"mnc":true`,
			`"messageRequestTimestamp":"soon"`, `"messageEncoding":{}`), kindEvent, ok(nil)},
		{"other keys of any kind", minimal(`"x":[[[{"a":[true,false,null,-1.5e-3,0,"]}\"{"]}]]]`, `"MessageId":"sns"`, `"Message":5`), kindEvent, ok(nil)},

		// What reconcile reads, of the wrong type: invalid.
		{"no messageId", `{"eventType":"TEXT_DELIVERED","eventTimestamp":1}`, kindInvalid, nil},
		{"messageId is case-sensitive", `{"eventType":"TEXT_DELIVERED","MessageId":"m1","eventTimestamp":1}`, kindInvalid, nil},
		{"empty messageId", minimal(`"messageId":""`), kindInvalid, nil},
		{"messageId a number", minimal(`"messageId":7`), kindInvalid, nil},
		{"messageId null last", minimal(`"messageId":null`), kindInvalid, nil},
		{"no timestamp", `{"eventType":"TEXT_DELIVERED","messageId":"m1"}`, kindInvalid, nil},
		{"timestamp zero", minimal(`"eventTimestamp":0`), kindInvalid, nil},
		{"timestamp negative", minimal(`"eventTimestamp":-1`), kindInvalid, nil},
		{"timestamp fraction", minimal(`"eventTimestamp":1.5`), kindInvalid, nil},
		{"timestamp exponent", minimal(`"eventTimestamp":1e12`), kindInvalid, nil},
		{"timestamp empty string", minimal(`"eventTimestamp":""`), kindInvalid, nil},
		{"timestamp past year 9999", minimal(`"eventTimestamp":253402300800000`), kindInvalid, nil},
		{"timestamp ISO", minimal(`"eventTimestamp":"2026-11-30T10:00:00Z"`), kindInvalid, nil},
		{"isFinal a number", minimal(`"isFinal":1`), kindInvalid, nil},
		{"isFinal an empty string", minimal(`"isFinal":""`), kindInvalid, nil},
		{"origination a number", minimal(`"originationPhoneNumber":12065550152`), kindInvalid, nil},
		{"description an object", minimal(`"messageStatusDescription":{}`), kindInvalid, nil},
		{"context a string", minimal(`"context":"spring-2026:1"`), kindInvalid, nil},
		{"context.bulksend a number", minimal(`"context":{"bulksend":1}`), kindInvalid, nil},
		{"eventType a number", `{"eventType":7,"messageId":"m1","eventTimestamp":1}`, kindInvalid, nil},

		// JSON, but no SMS event.
		{"voice", `{"eventType":"VOICE_COMPLETED","messageId":"m1","eventTimestamp":1}`, kindNotEvent, nil},
		{"MMS", `{"eventType":"MEDIA_DELIVERED"}`, kindNotEvent, nil},
		{"TEXT_ alone", `{"eventType":"TEXT_"}`, kindNotEvent, nil},
		{"lower case", `{"eventType":"text_delivered","messageId":"m1","eventTimestamp":1}`, kindNotEvent, nil},
		{"no eventType", `{"messageId":"m1","eventTimestamp":1}`, kindNotEvent, nil},
		{"eventType null", `{"eventType":null}`, kindNotEvent, nil},
		{"empty object", `{}`, kindNotEvent, nil},

		// SNS.
		{"SNS notification", sns(minimal()), kindEvent, ok(nil)},
		{"SNS message with blanks", sns("\n " + minimal() + " \n"), kindEvent, ok(nil)},
		{"SNS voice", sns(`{"eventType":"VOICE_COMPLETED"}`), kindNotEvent, nil},
		{"SNS malformed event", sns(minimal(`"messageId":""`)), kindInvalid, nil},
		{"SNS message cut short", sns(minimal()[:40]), kindInvalid, nil},
		{"SNS message of text", sns("Hello from another publisher"), kindNotEvent, nil},
		{"SNS message an array", sns("[" + minimal() + "]"), kindNotEvent, nil},
		{"SNS twice is not unwrapped twice", sns(sns(minimal())), kindNotEvent, nil},
		{"SNS without a message", `{"Type":"Notification","MessageId":"x"}`, kindInvalid, nil},
		{"SNS message an object", `{"Type":"Notification","Message":` + minimal() + `}`, kindInvalid, nil},
		{"SNS confirmation", `{"Type":"SubscriptionConfirmation","Message":"You have chosen to subscribe","SubscribeURL":"https://sns"}`, kindNotEvent, nil},
		{"SNS type not a string", `{"Type":1,"Message":"x"}`, kindNotEvent, nil},

		// Inbound messages, raw or through SNS.
		{"inbound", inbound, kindInbound, nil},
		{"inbound in SNS", sns(inbound), kindInbound, nil},
		{"inbound without a body", `{"originationNumber":"+14255550101","inboundMessageId":"i1"}`, kindInbound, nil},
		{"inbound body a number", `{"originationNumber":"+14255550101","inboundMessageId":"i1","messageBody":1}`, kindNotEvent, nil},
		{"inbound without an ID", `{"originationNumber":"+14255550101","messageBody":"STOP"}`, kindNotEvent, nil},
		{"inbound in EventBridge", eventBridge(inbound), kindInbound, nil},

		// EventBridge, and EventBridge through SNS.
		{"EventBridge", eventBridge(minimal()), kindEvent, ok(nil)},
		{"EventBridge in SNS", sns(eventBridge(minimal())), kindEvent, ok(nil)},
		{"EventBridge in SNS in EventBridge", eventBridge(sns(eventBridge(minimal()))), kindNotEvent, nil},
		{"SNS in EventBridge", eventBridge(sns(minimal())), kindNotEvent, nil},
		{"EventBridge twice", eventBridge(eventBridge(minimal())), kindNotEvent, nil},
		{"EventBridge voice", `{"detail-type":"Voice Message Delivery Status Updated","detail":{"eventType":"VOICE_COMPLETED"}}`, kindNotEvent, nil},
		{"EventBridge registration", `{"detail-type":"Registration Status Change","detail":{"registrationId":"r"}}`, kindNotEvent, nil},
		{"EventBridge malformed event", eventBridge(minimal(`"messageId":""`)), kindInvalid, nil},
		{"EventBridge detail a string", `{"detail-type":"Text Message Delivery Status Updated","detail":"` + "x" + `"}`, kindInvalid, nil},
		{"EventBridge without detail", `{"detail-type":"Text Message Delivery Status Updated"}`, kindInvalid, nil},
		{"EventBridge detail null", `{"detail-type":"Text Message Delivery Status Updated","detail":null}`, kindInvalid, nil},
		{"EventBridge detail-type a number", `{"detail-type":1,"detail":` + minimal() + `}`, kindInvalid, nil},
		{"an SNS notification with a detail-type is a notification", `{"Type":"Notification","detail-type":"x","Message":` + jsonString(minimal()) + `}`, kindEvent, ok(nil)},
		{"an event with a Type is an event", minimal(`"Type":"Notification"`, `"Message":"x"`), kindEvent, ok(nil)},

		// Not JSON, or not an object.
		{"trailing comma", `{"eventType":"TEXT_DELIVERED",}`, kindInvalid, nil},
		{"two objects", minimal() + minimal(), kindInvalid, nil},
		{"array", "[" + minimal() + "]", kindInvalid, nil},
		{"string", `"x"`, kindInvalid, nil},
		{"empty", ``, kindInvalid, nil},
		{"control byte in a string", minimal(`"x":"a` + "\t" + `b"`), kindInvalid, nil},
		{"bad escape", minimal(`"x":"\x41"`), kindInvalid, nil},
		{"short unicode escape", minimal(`"x":"\u41"`), kindInvalid, nil},
		{"leading zero", minimal(`"x":01`), kindInvalid, nil},
		{"bare minus", minimal(`"x":-`), kindInvalid, nil},
		{"bad literal", minimal(`"x":nul`), kindInvalid, nil},
		{"single quotes", `{'eventType':'TEXT_DELIVERED'}`, kindInvalid, nil},
		{"too deep", `{"x":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, kindInvalid, nil},
		{"deep enough", minimal(`"x":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1)), kindEvent, ok(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, k := decode([]byte(tc.rec), 7, 0)
			if k != tc.kind {
				t.Fatalf("kind %d, want %d", k, tc.kind)
			}
			if tc.kind == kindEvent && got != *tc.want {
				t.Errorf("event\n got %+v\nwant %+v", got, *tc.want)
			}
			if rk := refKind(t, []byte(tc.rec)); rk != tc.kind {
				t.Errorf("the encoding/json reference says kind %d", rk)
			}
		})
	}
}

// FuzzDecode holds the decoder to a reference: it reads each record the
// way refDecode, built on encoding/json's own decoding into a map of any,
// does, and it takes nothing for an event or another object that
// json.Valid rejects.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzRecords() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		ev, k := decode(d, 3, 0)
		valid := json.Valid(d) && bytes.HasPrefix(bytes.TrimLeft(d, " \t\r\n"), []byte("{"))
		if k != kindInvalid && !valid {
			t.Fatalf("decode says %d of a record json.Valid rejects", k)
		}
		want, wk := refDecode(t, d, 3, 0)
		if k != wk || ev != want {
			t.Fatalf("decode: %d %+v\nreference: %d %+v", k, ev, wk, want)
		}
	})
}

// fuzzRecords seed the fuzz targets: the fixtures' records, TestDecode's
// cases, and a few odd ones.
func fuzzRecords() []string {
	var b bytes.Buffer
	genLog(&b, 4)
	recs := strings.Split(strings.TrimSpace(b.String()), "\n")
	return append(recs,
		minimal(), sns(minimal()), sns(minimal(`"context":{"bulksend":"spring-2026:1"}`)),
		`{"event\u0054ype":"TEXT_\u0044ELIVERED","messageId":"m\u0031","eventTimestamp":"\u0031796032800310","isFinal":"tru\u0065","context":{"bulk\u0073end":"caf\u00e9:1"}}`,
		minimal(`"totalMessageParts":"2"`, `"totalMessagePrice":"0.01162"`, `"totalCarrierFee":-0.0`, `"mcc":310`),
		minimal(`"messageId":null`), minimal(`"context":{"bulksend":null}`), minimal(`"x":"\ud800 \ud83d\ude00 \u00e9`+"\xff"+`"`),
		minimal(`"messageStatusDescription":"\ud800\u0041 \ud83d\ude00 \"q\" \/ \t`+"\xff"+`"`), sns(minimal(`"messageStatusDescription":"\"\ud83d\ude00\""`)),
		`{"Type":"SubscriptionConfirmation","Message":"hi"}`, `{"eventType":"VOICE_COMPLETED"}`, `{}`, `[]`, `{"a":[}`, `{"a":"b`,
		eventBridge(minimal()), sns(eventBridge(minimal(`"isFinal":true`))), eventBridge(sns(minimal())), inbound, sns(inbound),
		`{"detail-type":"x","detail":{"detail-type":"y","detail":`+minimal()+`}}`, `{"detail-type":"x","detail":[]}`,
		`{"detail-type":"x","Type":"Notification","Message":`+jsonString(minimal())+`,"detail":`+minimal()+`}`,
	)
}

// refKind is refDecode's kind of d.
func refKind(t *testing.T, d []byte) kind {
	_, k := refDecode(t, d, 0, 0)
	return k
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// refDecode is what decode should make of d, as the Reader's doc says,
// with encoding/json doing the JSON: decoding into a map, where keys are
// exact and the last of a repeated key wins.
func refDecode(t *testing.T, d []byte, line int, in layer) (Event, kind) {
	t.Helper()
	if !json.Valid(d) {
		return Event{}, kindInvalid
	}
	dec := json.NewDecoder(bytes.NewReader(d))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return Event{}, kindInvalid // not an object
	}
	str := func(k string) (string, bool) { s, ok := m[k].(string); return s, ok }
	// numeral is the text of a number, or of a string that is one.
	numeral := func(k string) (string, bool) {
		switch v := m[k].(type) {
		case json.Number:
			return string(v), true
		case string:
			return v, jsonNumber.MatchString(v)
		}
		return "", false
	}
	whole := func(k string, limit int64) (int64, bool) {
		s, ok := numeral(k)
		if !ok || len(s) > 18 || strings.ContainsAny(s, "-.eE") {
			return 0, false
		}
		var n int64
		fmt.Sscan(s, &n)
		return n, n <= limit
	}
	price := func(k string) (float64, bool) {
		s, ok := numeral(k)
		if !ok {
			return 0, false
		}
		var x float64
		if _, err := fmt.Sscan(s, &x); err != nil || x < 0 || x >= 1e6 || math.IsInf(x, 0) {
			return 0, false
		}
		return math.Abs(x), true
	}
	typ, ok := m["eventType"]
	if !ok || typ == nil {
		if in&inEventBridge == 0 && m["detail-type"] != nil && (in != 0 || m["Type"] == nil) {
			if _, ok := str("detail-type"); !ok {
				return Event{}, kindInvalid
			}
			detail, ok := m["detail"].(map[string]any)
			if !ok {
				return Event{}, kindInvalid
			}
			b, err := json.Marshal(detail)
			if err != nil {
				t.Fatal(err)
			}
			return refDecode(t, b, line, in|inEventBridge)
		}
		inbound := func() kind {
			from, _ := str("originationNumber")
			id, _ := str("inboundMessageId")
			_, body := m["messageBody"].(string)
			if from != "" && id != "" && (body || m["messageBody"] == nil) {
				return kindInbound
			}
			return kindNotEvent
		}
		if in != 0 {
			return Event{}, inbound()
		}
		if st, _ := str("Type"); st != "Notification" {
			return Event{}, inbound()
		}
		msg, ok := str("Message")
		if !ok {
			return Event{}, kindInvalid
		}
		if json.Valid([]byte(msg)) && strings.HasPrefix(strings.TrimLeft(msg, " \t\r\n"), "{") {
			return refDecode(t, []byte(msg), line, inSNS)
		}
		if strings.HasPrefix(strings.TrimLeft(msg, " \t\r\n"), "{") {
			return Event{}, kindInvalid
		}
		return Event{}, kindNotEvent
	}
	ts, isStr := typ.(string)
	if !isStr {
		return Event{}, kindInvalid
	}
	if !strings.HasPrefix(ts, "TEXT_") || ts == "TEXT_" {
		return Event{}, kindNotEvent
	}
	ev := Event{Type: ts, Line: line}
	if ev.MessageID, ok = str("messageId"); !ok || ev.MessageID == "" {
		return Event{}, kindInvalid
	}
	n, ok := whole("eventTimestamp", maxMillis)
	if !ok || n == 0 {
		return Event{}, kindInvalid
	}
	ev.Timestamp = time.UnixMilli(n).UTC()
	switch v := m["isFinal"].(type) {
	case nil:
	case bool:
		ev.IsFinal = v
	case string:
		if v != "true" && v != "false" {
			return Event{}, kindInvalid
		}
		ev.IsFinal = v == "true"
	default:
		return Event{}, kindInvalid
	}
	for k, dst := range map[string]*string{"originationPhoneNumber": &ev.Origination, "messageStatusDescription": &ev.StatusDescription} {
		if m[k] != nil {
			if *dst, ok = str(k); !ok {
				return Event{}, kindInvalid
			}
		}
	}
	switch c := m["context"].(type) {
	case nil:
	case map[string]any:
		switch b := c["bulksend"].(type) {
		case nil:
		case string:
			ev.Bulksend = b
		default:
			return Event{}, kindInvalid
		}
	default:
		return Event{}, kindInvalid
	}
	ev.Version, _ = str("eventVersion")
	ev.Destination, _ = str("destinationPhoneNumber")
	ev.CountryCode, _ = str("isoCountryCode")
	for k, dst := range map[string]*string{"mcc": &ev.MCC, "mnc": &ev.MNC} {
		switch v := m[k].(type) {
		case string:
			*dst = v
		case json.Number:
			*dst = string(v)
		}
	}
	if n, ok := whole("messageRequestTimestamp", maxMillis); ok && n > 0 {
		ev.RequestTimestamp = time.UnixMilli(n).UTC()
	}
	ev.Encoding, _ = str("messageEncoding")
	ev.MessageType, _ = str("messageType")
	ev.Status, _ = str("messageStatus")
	if n, ok := whole("totalMessageParts", math.MaxInt32); ok {
		ev.Parts = int(n)
	}
	var okP, okF bool
	ev.Price, okP = price("totalMessagePrice")
	ev.CarrierFee, okF = price("totalCarrierFee")
	ev.HasPrice = okP || okF
	return ev, kindEvent
}
