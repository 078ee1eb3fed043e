package smssandbox

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// knownTypes are the error types the sandbox answers.
var knownTypes = map[string]bool{
	typeAccessDenied: true, typeConflict: true, typeInternal: true, typeNotFound: true, typeQuota: true,
	typeThrottling: true, typeValidation: true, typeMissingAuth: true, typeIncompleteSig: true,
	typeExpiredToken: true, typeUnknownOperation: true, typeSerialization: true, typeUnavailable: true,
}

// FuzzSendTextMessage feeds arbitrary request bodies to SendTextMessage and
// arbitrary message bodies through it. The sandbox must never panic; every
// answer is a MessageId or a typed error; and a message's parts — in the
// answer (accepted or MAXIMUM_SIZE_EXCEEDED) and in its event's
// totalMessageParts and messageEncoding — agree with refMeasure, the
// independent count: the body laid out as cells, cut every 153 (67) cells,
// one earlier inside an escape or a surrogate pair.
func FuzzSendTextMessage(f *testing.F) {
	f.Add(good, "Hello")
	f.Add(`{"DestinationPhoneNumber":"+12065551000","MessageBody":"x","Context":{"a":"b"},"MaxPrice":"0.1","TimeToLive":60,"DryRun":true}`, strings.Repeat("a", 152)+"€"+strings.Repeat("a", 152))
	f.Add(`{"DestinationPhoneNumber":null,"MessageBody":1}`, strings.Repeat("ж", 66)+"😀"+strings.Repeat("ж", 66))
	f.Add(`[]`, strings.Repeat("€", 765))
	f.Add(`{"Context":{"":" "},"OriginationIdentity":"arn:"}`, "a\xffb\x00")
	f.Add(`{"DestinationPhoneNumber":"+12065551000","MessageBody":"\ud800"}`, strings.Repeat("😀", 316))
	loose := New(Config{MPS: -1, Seed: 1, InternalRate: 0.1, ThrottleRate: 0.1, FailRate: 0.1})
	defer loose.Close()
	f.Fuzz(func(t *testing.T, request, body string) {
		a := call(loose, "SendTextMessage", request)
		switch {
		case a.status == 200 && a.messageID != "":
		case a.status >= 400 && knownTypes[a.typ] && a.message != "":
		default:
			t.Fatalf("request %q: unexpected answer %v", request, a)
		}

		// What the sandbox sees of body once JSON has carried it.
		j, _ := json.Marshal(body)
		var seen string
		json.Unmarshal(j, &seen)
		parts, cells, ucs2 := refMeasure(seen)
		if p, u := Parts(seen); p != parts || u != ucs2 {
			t.Fatalf("Parts(%q) = %d, %v; the reference says %d, %v", seen, p, u, parts, ucs2)
		}
		ev := &stampedBuffer{now: time.Now}
		s := New(Config{MPS: -1, Events: ev, EventDelay: time.Hour})
		a = send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: from, MessageBody: seen})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		limit := 1530
		if ucs2 {
			limit = 630
		}
		switch n := utf8.RuneCountInString(seen); {
		case n == 0 || n > 1600:
			// An empty body is left out of the request: missing.
			if a.reason != "FIELD_VALIDATION_FAILED" && (n > 0 || a.reason != "MISSING_PARAMETER") {
				t.Fatalf("%d characters: %v", n, a)
			}
			return
		case parts > 10 || cells > limit:
			if a.reason != "MAXIMUM_SIZE_EXCEEDED" {
				t.Fatalf("%d parts, %d cells: %v", parts, cells, a)
			}
			return
		case a.status != 200:
			t.Fatalf("%d parts: %v", parts, a)
		}
		recs, _ := ev.lines(t)
		enc := map[bool]string{false: "GSM", true: "UCS2"}[ucs2]
		if len(recs) != 1 || recs[0].TotalMessageParts != parts || recs[0].MessageEncoding != enc {
			t.Fatalf("events %+v, want %d %s parts", recs, parts, enc)
		}
	})
}
