package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

const (
	pnid = "106540352242922"
	t0s  = "1750030073"
)

var t0 = time.Unix(1750030073, 0).UTC()

// st is the JSON of one status with the given id and status, a timestamp
// of t0s and a recipient, plus any extra members.
func st(id, status string, extra ...string) string {
	s := `{"id":"` + id + `","status":"` + status + `","timestamp":"` + t0s + `","recipient_id":"16505551234"`
	for _, e := range extra {
		s += "," + e
	}
	return s + "}"
}

// hook is a webhook body with one entry and one change holding statuses.
func hook(statuses ...string) string {
	return `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":` +
		`{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"` + pnid + `"},` +
		`"statuses":[` + strings.Join(statuses, ",") + `]},"field":"messages"}]}]}`
}

// marketing is the pricing of a regular marketing message.
var marketing = Pricing{Category: "marketing", Type: "regular", Billable: true, HasBillable: true}

// want is the Status st(id, status) decodes to, found on line.
func want(id, status string, line int) Status {
	return Status{WAMID: id, Status: status, Timestamp: t0, RecipientID: "16505551234", PhoneNumberID: pnid, Line: line}
}

func lines(l ...string) string { return strings.Join(l, "\n") + "\n" }

// readAll reads r to its end.
func readAll(r *Reader) ([]Status, Counts, error) {
	var out []Status
	for {
		s, err := r.Next()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return out, r.Counts(), err
		}
		out = append(out, s)
	}
}

var (
	incoming = `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"value":{"messaging_product":"whatsapp",` +
		`"metadata":{"display_phone_number":"15550783881","phone_number_id":"` + pnid + `"},"contacts":[{"profile":{"name":"Kerry"},"wa_id":"16505551234"}],` +
		`"messages":[{"from":"16505551234","id":"wamid.in","timestamp":"1750030073","type":"text","text":{"body":"STOP"}}]},"field":"messages"}]}]}`
	templateUpdate = `{"object":"whatsapp_business_account","entry":[{"id":"1","time":1750030073,"changes":[{"value":` +
		`{"event":"APPROVED","message_template_id":1,"message_template_name":"promo","message_template_language":"en_US","reason":"NONE"},` +
		`"field":"message_template_status_update"}]}]}`
	errorsOnly = `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"value":{"messaging_product":"whatsapp",` +
		`"metadata":{"display_phone_number":"15550783881","phone_number_id":"` + pnid + `"},` +
		`"errors":[{"code":131000,"title":"Something went wrong","message":"Something went wrong","error_data":{"details":"x"}}]},"field":"messages"}]}]}`
)

func TestReader(t *testing.T) {
	h1, h2, h3 := hook(st("w1", "sent")), hook(st("w2", "delivered")), hook(st("w3", "read"))
	w1, w2, w3 := want("w1", "sent", 1), want("w2", "delivered", 2), want("w3", "read", 3)
	at := func(s Status, line int) Status { s.Line = line; return s }
	with := func(s Status, f func(*Status)) Status { f(&s); return s }
	long := `{"object":"x","pad":"` + strings.Repeat(`],[{"\"`, 40) + `"}`

	tests := []readerTest{
		{
			name:  "ndjson",
			in:    lines(h1, h2, h3),
			want:  []Status{w1, w2, w3},
			count: Counts{Lines: 3, Bodies: 3, Statuses: 3},
		},
		{
			name:  "ndjson without final newline",
			in:    h1 + "\n" + h2,
			want:  []Status{w1, w2},
			count: Counts{Lines: 2, Bodies: 2, Statuses: 2},
		},
		{
			name:  "crlf line endings",
			in:    h1 + "\r\n" + h2 + "\r\n" + h3 + "\r\n",
			want:  []Status{w1, w2, w3},
			count: Counts{Lines: 3, Bodies: 3, Statuses: 3},
		},
		{
			name:  "blank lines are skipped but numbered",
			in:    "\n\r\n" + h1 + "\n  \t \n\n" + h2 + "\n\n",
			want:  []Status{at(w1, 3), at(w2, 6)},
			count: Counts{Lines: 2, Bodies: 2, Statuses: 2},
		},
		{
			name:  "byte order mark",
			in:    "\xef\xbb\xbf" + lines(h1, h2),
			want:  []Status{w1, w2},
			count: Counts{Lines: 2, Bodies: 2, Statuses: 2},
		},
		{
			name:  "empty input",
			in:    "",
			count: Counts{},
		},
		{
			name: "several statuses, changes and entries",
			in: `{"object":"whatsapp_business_account","entry":[` +
				`{"id":"1","changes":[` +
				`{"value":{"messaging_product":"whatsapp","metadata":{"phone_number_id":"A"},"statuses":[` + st("w1", "sent") + `,` + st("w2", "read") + `]},"field":"messages"},` +
				`{"value":{"statuses":[` + st("w3", "delivered") + `],"metadata":{"phone_number_id":"B"}},"field":"messages"}]},` +
				`{"id":"2","changes":[{"value":{"statuses":[` + st("w4", "failed") + `]},"field":"messages"}]}]}` + "\n" + h1,
			want: []Status{
				with(w1, func(s *Status) { s.PhoneNumberID = "A" }),
				with(want("w2", "read", 1), func(s *Status) { s.PhoneNumberID = "A" }),
				with(want("w3", "delivered", 1), func(s *Status) { s.PhoneNumberID = "B" }),
				with(want("w4", "failed", 1), func(s *Status) { s.PhoneNumberID = "" }),
				at(w1, 2),
			},
			count: Counts{Lines: 2, Bodies: 2, Statuses: 5},
		},
		{
			name:  "json array",
			in:    "[" + h1 + "," + h2 + "," + h3 + "]",
			want:  []Status{w1, w2, w3},
			count: Counts{Lines: 3, Bodies: 3, Statuses: 3},
		},
		{
			name:  "json array, indented",
			in:    "\r\n  [\n    " + h1 + " ,\n\n    " + h2 + "\n]\n\n",
			want:  []Status{w1, w2},
			count: Counts{Lines: 2, Bodies: 2, Statuses: 2},
		},
		{
			name:  "empty json array",
			in:    "[ \n ]\n",
			count: Counts{},
		},
		{
			name:  "json arrays one after the other",
			in:    "[" + h1 + "]\n[" + h2 + "," + h3 + "]",
			want:  []Status{w1, w2, w3},
			count: Counts{Lines: 3, Bodies: 3, Statuses: 3},
		},
		{
			name:  "json array then lines",
			in:    "[" + h1 + "]\n" + h2 + "\n\n" + h3 + "\n",
			want:  []Status{w1, w2, at(w3, 4)},
			count: Counts{Lines: 3, Bodies: 3, Statuses: 3},
		},
		{
			name: "json array with bad elements",
			in:   "[" + h1 + `, garbage , 42, {"a":[1,{"b":"],}\"["}],"c":{}}, "str", [` + h2 + `], ` + h3 + "]",
			want: []Status{w1, at(w3, 7)},
			count: Counts{Lines: 7, Bodies: 2, Statuses: 2, Invalid: 5,
				FirstInvalid: []int{2, 3, 4, 5, 6}},
		},
		{
			name:  "json array with empty elements",
			in:    "[" + h1 + ",," + h3 + ",]",
			want:  []Status{w1, w3},
			count: Counts{Lines: 4, Bodies: 2, Statuses: 2, Invalid: 2, FirstInvalid: []int{2, 4}},
		},
		{
			name:  "json array cut after a comma",
			in:    "[" + h1 + ",\n",
			want:  []Status{w1},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{2}},
		},
		{
			name:  "json array cut inside an element",
			in:    "[" + h1 + "," + h2[:len(h2)/2],
			want:  []Status{w1},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{2}},
		},
		{
			name:  "json array cut after an element",
			in:    "[" + h1,
			want:  []Status{w1},
			count: Counts{Lines: 1, Bodies: 1, Statuses: 1},
		},
		{
			name:  "json array cut after its bracket",
			in:    " [ ",
			count: Counts{Lines: 1, Invalid: 1, FirstInvalid: []int{1}},
		},
		{
			name:  "json array element over the maximum",
			in:    "[" + h1 + "," + long + "," + h3 + "]",
			max:   len(h1) + 2,
			want:  []Status{w1, w3},
			count: Counts{Lines: 3, Bodies: 2, Statuses: 2, Invalid: 1, FirstInvalid: []int{2}},
		},
		{
			name:  "json array element over the maximum at the end",
			in:    "[" + h1 + "," + long,
			max:   len(h1) + 2,
			want:  []Status{w1},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{2}},
		},
		{
			name: "webhooks without statuses",
			in: lines(incoming, templateUpdate, errorsOnly,
				`{"object":"page","entry":[{"id":"1","time":1,"messaging":[]}]}`,
				hook(),
				`{"object":"whatsapp_business_account","entry":[]}`,
				h3),
			want: []Status{at(w3, 7)},
			count: Counts{Lines: 7, Bodies: 1, Statuses: 1, NotStatus: 6,
				FirstNotStatus: []int{1, 2, 3, 4, 5}},
		},
		{
			// "hello" is one record up to line 3; "{" and "}" are one object
			// ({}, not a body); lines 5 to 7 are one record (none starts with
			// '{' or '['); [1,2] is an array of two elements, numbered 1 and 2;
			// line 16 holds two bodies, line 17 a body and a stray ','.
			name: "garbage lines",
			in: lines(h1, "hello", "{", "}", "null", "123", `"x"`, `[1,2]`, `{"foo":1}`, `{"entry":5}`,
				`{"object":"whatsapp_business_account"}`, `{"entry":{}}`, `{"entry":[1]}`, `{"entry":[{"changes":{}}]}`,
				"\x00\x01\x02", `{"entry":[]} {"entry":[]}`, `{"entry":[]},`, h2),
			want: []Status{w1, at(w2, 18)},
			count: Counts{Lines: 18, Bodies: 2, Statuses: 2, NotStatus: 3, Invalid: 13,
				FirstInvalid: []int{2, 3, 5, 1, 2}, FirstNotStatus: []int{16, 16, 17}},
		},
		{
			name:  "truncated json",
			in:    h1 + "\n" + h2[:len(h2)-1] + "\n" + h3[:len(h3)/2],
			want:  []Status{w1},
			count: Counts{Lines: 3, Bodies: 1, Statuses: 1, Invalid: 2, FirstInvalid: []int{2, 3}},
		},
		{
			name:  "line over the maximum",
			in:    lines(h1, long+long+long, h3),
			max:   len(h1),
			want:  []Status{w1, w3},
			count: Counts{Lines: 3, Bodies: 2, Statuses: 2, Invalid: 1, FirstInvalid: []int{2}},
		},
		{
			name:  "line over the maximum by one byte",
			in:    lines(h1, h2+" ", h3),
			max:   len(h1),
			want:  []Status{w1, w3},
			count: Counts{Lines: 3, Bodies: 2, Statuses: 2, Invalid: 1, FirstInvalid: []int{2}},
		},
		{
			name:  "line over the maximum at the end",
			in:    h1 + "\n" + long,
			max:   len(h1),
			want:  []Status{w1},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{2}},
		},
		{
			name: "malformed statuses",
			in: lines(
				hook(`{"status":"sent","timestamp":"1"}`),
				hook(`{"id":"w","timestamp":"1"}`),
				hook(`{"id":"w","status":"sent"}`),
				hook(`{"id":"","status":"sent","timestamp":"1"}`),
				hook(`{"id":"w","status":"","timestamp":"1"}`),
				hook(`{"id":"w","status":"sent","timestamp":""}`),
				hook(`{"id":"w","status":"sent","timestamp":"17500x"}`),
				hook(`{"id":"w","status":"sent","timestamp":"-1"}`),
				hook(`{"id":"w","status":"sent","timestamp":"+1"}`),
				hook(`{"id":"w","status":"sent","timestamp":" 1"}`),
				hook(`{"id":"w","status":"sent","timestamp":1.5}`),
				hook(`{"id":"w","status":"sent","timestamp":1e9}`),
				hook(`{"id":"w","status":"sent","timestamp":true}`),
				hook(`{"id":"w","status":"sent","timestamp":"253402300800"}`),
				hook(`{"id":null,"status":"sent","timestamp":"1"}`),
				hook(`{"id":5,"status":"sent","timestamp":"1"}`),
				hook(`{"id":"w","status":["sent"],"timestamp":"1"}`),
				hook(st("w", "sent", `"recipient_id":16505551234`)),
				hook(st("w", "sent", `"biz_opaque_callback_data":{}`)),
				hook(st("w1", "sent"), `{"id":"w2"}`),
				hook(st("w1", "sent"), `"w2"`),
				h3),
			want: []Status{at(w3, 22)},
			count: Counts{Lines: 22, Bodies: 1, Statuses: 1, Invalid: 21,
				FirstInvalid: []int{1, 2, 3, 4, 5}},
		},
		{
			name: "timestamps",
			in: lines(
				hook(`{"id":"w","status":"sent","timestamp":1750030073}`),
				hook(`{"id":"w","status":"sent","timestamp":"0"}`),
				hook(`{"id":"w","status":"sent","timestamp":"000001750030073"}`),
				hook(`{"id":"w","status":"sent","timestamp":"253402300799"}`)),
			want: []Status{
				{WAMID: "w", Status: "sent", Timestamp: t0, PhoneNumberID: pnid, Line: 1},
				{WAMID: "w", Status: "sent", Timestamp: time.Unix(0, 0).UTC(), PhoneNumberID: pnid, Line: 2},
				{WAMID: "w", Status: "sent", Timestamp: t0, PhoneNumberID: pnid, Line: 3},
				{WAMID: "w", Status: "sent", Timestamp: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), PhoneNumberID: pnid, Line: 4},
			},
			count: Counts{Lines: 4, Bodies: 4, Statuses: 4},
		},
		{
			name:  "unknown status values pass through",
			in:    lines(hook(st("w1", "played")), hook(st("w2", "deleted"), st("w3", "warning")), hook(st("w4", "SENT"))),
			want:  []Status{want("w1", "played", 1), want("w2", "deleted", 2), want("w3", "warning", 2), want("w4", "SENT", 3)},
			count: Counts{Lines: 3, Bodies: 3, Statuses: 4},
		},
		{
			name: "errors",
			in: lines(
				hook(st("w1", "failed", `"errors":[{"code":131049,"title":"healthy ecosystem","message":"m","error_data":{"details":"d"},"href":"/x"},{"code":1,"title":"second"}]`)),
				hook(st("w2", "failed", `"errors":[]`)),
				hook(st("w3", "failed", `"errors":null`)),
				hook(st("w4", "failed", `"errors":[null,{"code":131026,"title":"undeliverable"}]`)),
				hook(st("w5", "failed", `"errors":[{"title":"no code"}]`)),
				hook(st("w6", "failed", `"errors":[{"code":-1,"title":null}]`)),
				hook(st("w7", "failed", `"errors":[{"code":"131049"}]`)),
				hook(st("w8", "failed", `"errors":{"code":131049}`)),
				hook(st("w9", "failed", `"errors":[{"code":131049.5}]`)),
				hook(st("w10", "failed", `"errors":[{"code":1},"x"]`)),
				hook(st("w11", "failed", `"errors":[{"code":99999999999999999999}]`)),
				hook(st("w12", "failed", `"errors":[{"code":1,"title":2}]`))),
			want: []Status{
				with(want("w1", "failed", 1), func(s *Status) { s.ErrorCode, s.ErrorTitle = 131049, "healthy ecosystem" }),
				want("w2", "failed", 2),
				want("w3", "failed", 3),
				with(want("w4", "failed", 4), func(s *Status) { s.ErrorCode, s.ErrorTitle = 131026, "undeliverable" }),
				with(want("w5", "failed", 5), func(s *Status) { s.ErrorTitle = "no code" }),
				with(want("w6", "failed", 6), func(s *Status) { s.ErrorCode = -1 }),
			},
			count: Counts{Lines: 12, Bodies: 6, Statuses: 6, Invalid: 6, FirstInvalid: []int{7, 8, 9, 10, 11}},
		},
		{
			name: "optional fields",
			in: lines(
				hook(`{"id":"w1","status":"sent","timestamp":"`+t0s+`"}`),
				hook(st("w2", "sent", `"biz_opaque_callback_data":"bulksend:c1:17"`)),
				hook(`{"id":"w3","status":"sent","timestamp":"`+t0s+`","recipient_id":null,"biz_opaque_callback_data":null}`),
				`{"entry":[{"changes":[{"value":{"statuses":[`+st("w4", "read")+`]}}]}]}`,
				`{"entry":[{"changes":[{"value":{"metadata":{"phone_number_id":null},"statuses":[`+st("w5", "read")+`]}}]}]}`),
			want: []Status{
				{WAMID: "w1", Status: "sent", Timestamp: t0, PhoneNumberID: pnid, Line: 1},
				with(want("w2", "sent", 2), func(s *Status) { s.CallbackData = "bulksend:c1:17" }),
				{WAMID: "w3", Status: "sent", Timestamp: t0, PhoneNumberID: pnid, Line: 3},
				with(want("w4", "read", 4), func(s *Status) { s.PhoneNumberID = "" }),
				with(want("w5", "read", 5), func(s *Status) { s.PhoneNumberID = "" }),
			},
			count: Counts{Lines: 5, Bodies: 5, Statuses: 5},
		},
		{
			name: "escapes in strings and keys",
			in: lines(
				hook(`{"\u0069d":"wamid.\u0041B\"C\\\/","status":"se\u006et","timestamp":"\u0031750030073",`+
					`"recipient_id":"16505551234","biz_opaque_callback_data":"caf\u00e9 \ud83d\ude00 \ud800 \n\t","pr\"icing":{"x":"}]"}}`),
				hook(st("w2", "read", "\"biz_opaque_callback_data\":\"caf\xc3\xa9 \xff\"")),
				`{"entr\u0079":[{"change\u0073":[{"valu\u0065":{"metadata":{"phone_number_\u0069d":"P\u0031"},"statuse\u0073":[`+st("w3", "read")+`]}}]}]}`),
			want: []Status{
				with(want(`wamid.AB"C\/`, "sent", 1), func(s *Status) { s.CallbackData = "café 😀 \uFFFD \n\t" }),
				with(want("w2", "read", 2), func(s *Status) { s.CallbackData = "café \uFFFD" }),
				with(want("w3", "read", 3), func(s *Status) { s.PhoneNumberID = "P1" }),
			},
			count: Counts{Lines: 3, Bodies: 3, Statuses: 3},
		},
		{
			name:  "keys match exactly",
			in:    lines(`{"Entry":[{"changes":[{"value":{"statuses":[`+st("w1", "sent")+`]}}]}]}`, hook(`{"ID":"w","status":"sent","timestamp":"1"}`)),
			count: Counts{Lines: 2, Invalid: 2, FirstInvalid: []int{1, 2}},
		},
		{
			name: "duplicate keys: the last wins",
			in: lines(
				hook(`{"id":"a","status":"sent","timestamp":"1","id":"w1","timestamp":"`+t0s+`","recipient_id":5,"recipient_id":"16505551234"}`),
				`{"entry":5,"entry":[{"changes":[{"value":{"statuses":[`+st("x", "sent")+`],"statuses":[`+st("w2", "delivered")+`],"metadata":{"phone_number_id":"A"},"metadata":{"phone_number_id":"`+pnid+`"}}}]}]}`,
				`{"entry":[{"changes":[{"value":{"statuses":[`+st("x", "sent")+`]}}],"changes":[]}]}`,
				`{"entry":[{"changes":[{"value":{"statuses":[`+st("x", "sent")+`]},"value":{"statuses":5}}]}]}`,
				`{"entry":[{"changes":[{"value":{"statuses":[`+st("x", "sent")+`]}}]}],"entry":null}`),
			want: []Status{
				want("w1", "sent", 1),
				want("w2", "delivered", 2),
			},
			count: Counts{Lines: 5, Bodies: 2, Statuses: 2, NotStatus: 1, Invalid: 2,
				FirstNotStatus: []int{3}, FirstInvalid: []int{4, 5}},
		},
		{
			name: "unknown fields of any shape are skipped",
			in: lines(`{"x":[[[{"a":[true,false,null,-1.5e-3,0,"]}\"{"]}]]],"object":"whatsapp_business_account","entry":[{"id":"1","time":1e3,` +
				`"changes":[{"field":"messages","value":{"metadata":{"x":{"y":[]},"phone_number_id":"` + pnid + `"},"statuses":[` +
				st("w1", "sent", `"conversation":{"id":"c","expiration_timestamp":"1750116480","origin":{"type":"marketing"}}`,
					`"pricing":{"billable":true,"pricing_model":"PMP","type":"regular","category":"marketing"}`, `"n":[{},[],{"":""}]`) +
				`],"extra":{"statuses":"not these"}}}]}],"z":null}`),
			want:  []Status{with(w1, func(s *Status) { s.Pricing = marketing })},
			count: Counts{Lines: 1, Bodies: 1, Statuses: 1},
		},
		{
			name: "null along the path",
			in: lines(
				`{"entry":[null,{"changes":null},{"changes":[null,{"value":null},{"value":{"metadata":null,"statuses":null}}]}]}`,
				`{"entry":[{"changes":[{"value":{"statuses":[null,`+st("w2", "read")+`,null]}}]}]}`,
				`{"entry":null}`),
			want:  []Status{with(want("w2", "read", 2), func(s *Status) { s.PhoneNumberID = "" })},
			count: Counts{Lines: 3, Bodies: 1, Statuses: 1, NotStatus: 1, Invalid: 1, FirstNotStatus: []int{1}, FirstInvalid: []int{3}},
		},
		{
			name: "wrong types along the path",
			in: lines(
				`{"entry":[{"changes":[{"value":{"statuses":{}}}]}]}`,
				`{"entry":[{"changes":[{"value":{"statuses":[]},"metadata":5}]}]}`,
				`{"entry":[{"changes":[{"value":{"statuses":[],"metadata":5}}]}]}`,
				`{"entry":[{"changes":[{"value":{"statuses":[],"metadata":{"phone_number_id":5}}}]}]}`,
				`{"entry":[{"changes":[{"value":[]}]}]}`,
				`{"entry":[{"changes":[[]]}]}`,
				`{"entry":[{"changes":"x"}]}`,
				`{"entry":["x"]}`),
			count: Counts{Lines: 8, NotStatus: 1, Invalid: 7, FirstNotStatus: []int{2}, FirstInvalid: []int{1, 3, 4, 5, 6}},
		},
	}
	runReaderTests(t, tests)
}

// readerTest is a case of TestReader and TestReaderValues.
type readerTest struct {
	name  string
	in    string
	max   int // 0: MaxRecord
	want  []Status
	count Counts // Bytes and TextLines are checked against in
}

// textLines is what Counts.TextLines must say after reading in.
func textLines(in string) int64 {
	n := int64(strings.Count(in, "\n"))
	if in != "" && !strings.HasSuffix(in, "\n") {
		n++
	}
	return n
}

// runReaderTests reads each case whole and in small pieces.
func runReaderTests(t *testing.T, tests []readerTest) {
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one byte at a time", iotest.OneByteReader},
		{"data with EOF", iotest.DataErrReader},
		{"chunks of 1 to 7 bytes", func(r io.Reader) io.Reader { b, _ := io.ReadAll(r); return &chunkReader{b: b} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, rd := range readers {
				r := NewReader(rd.wrap(strings.NewReader(tt.in)))
				if tt.max > 0 {
					r.max = tt.max
				}
				got, count, err := readAll(r)
				if err != nil {
					t.Fatalf("%s: read: %v", rd.name, err)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("%s: statuses:\n got %v\nwant %v", rd.name, got, tt.want)
				}
				if !equalCounts(count, tt.count) {
					t.Errorf("%s: counts:\n got %+v\nwant %+v", rd.name, count, tt.count)
				}
				if count.Bytes != int64(len(tt.in)) || count.TextLines != textLines(tt.in) {
					t.Errorf("%s: read %d bytes, %d lines; want %d, %d", rd.name, count.Bytes, count.TextLines, len(tt.in), textLines(tt.in))
				}
				if _, err := r.Next(); err != io.EOF {
					t.Errorf("%s: Next after the end = %v, want io.EOF", rd.name, err)
				}
			}
		})
	}
}

func equalCounts(a, b Counts) bool {
	return a.Lines == b.Lines && a.Bodies == b.Bodies && a.Statuses == b.Statuses &&
		a.NotStatus == b.NotStatus && a.Invalid == b.Invalid &&
		slices.Equal(a.FirstInvalid, b.FirstInvalid) && slices.Equal(a.FirstNotStatus, b.FirstNotStatus)
}

// TestReaderMaxRecord checks the real limit: a record of exactly MaxRecord
// bytes is decoded, one byte more is skipped as invalid, and the buffer
// never grows past MaxRecord+1. The padding is inside the object: the
// whitespace between top-level values is not part of a record.
func TestReaderMaxRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 150 MB")
	}
	h := hook(st("w1", "sent"))
	pad := func(n int, sep string) string { return "{" + sep + strings.Repeat(" ", n-len(h)-len(sep)) + h[1:] }
	atMax, overMax := pad(MaxRecord, ""), pad(MaxRecord+1, "")
	atMaxPretty, overMaxPretty := pad(MaxRecord, "\n"), pad(MaxRecord+1, "\n") // scanned, not decoded from a line
	tests := []struct {
		name  string
		in    string
		count Counts
	}{
		{"lines", lines(atMax, overMax, h), Counts{Lines: 3, Bodies: 2, Statuses: 2, Invalid: 1, FirstInvalid: []int{2}}},
		{"multi-line", lines(atMaxPretty, overMaxPretty, h), Counts{Lines: 3, Bodies: 2, Statuses: 2, Invalid: 1, FirstInvalid: []int{3}}},
		{"array", "[" + atMax + "," + overMax + "," + h + "]", Counts{Lines: 3, Bodies: 2, Statuses: 2, Invalid: 1, FirstInvalid: []int{2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.in))
			got, count, err := readAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || !equalCounts(count, tt.count) {
				t.Errorf("read %d statuses, counts %+v; want 2, %+v", len(got), count, tt.count)
			}
			if len(r.buf) > MaxRecord+1 {
				t.Errorf("buffer grew to %d bytes, want at most %d", len(r.buf), MaxRecord+1)
			}
		})
	}
}

// Forms of a generated log.
const (
	formNDJSON = "ndjson"
	formArray  = "array"
	formPretty = "pretty" // pretty-printed bodies, one after the other
)

// genReader produces a log of n one-status bodies without holding it in
// memory, in one of the forms above.
type genReader struct {
	line    []byte // template body; the status number goes at digits
	digits  int
	n, next int
	array   bool
	pending []byte
	buf     []byte
}

func newGenReader(n int, form string) *genReader {
	line := Body(pnid, Status{WAMID: "wamid.0000000000", Status: "delivered", Timestamp: t0, RecipientID: "16505551234",
		CallbackData: "bulksend:c:0000000000"})
	if form == formPretty {
		line = []byte(pretty(string(line), ""))
	}
	return &genReader{line: line, digits: bytes.Index(line, []byte("0000000000")), n: n, array: form == formArray}
}

func (g *genReader) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		switch {
		case g.next > g.n:
			return 0, io.EOF
		case g.next == g.n:
			g.pending = []byte("\n")
			if g.array {
				g.pending = []byte("\n]\n")
			}
		default:
			sep := "\n"
			if g.array {
				sep = "[\n"
				if g.next > 0 {
					sep = ",\n"
				}
			}
			for i, v := g.digits+9, g.next; i >= g.digits; i, v = i-1, v/10 {
				g.line[i] = byte('0' + v%10)
			}
			g.pending = append(append(g.buf[:0], sep...), g.line...)
			g.buf = g.pending
		}
		g.next++
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// TestReaderStreamsLargeLog reads a generated log of ~25 MB (400 times the
// Reader's buffer; ~50 MB pretty-printed) and checks that memory stays what it was at the start:
// the buffer never grows.
func TestReaderStreamsLargeLog(t *testing.T) {
	n := 40000
	if testing.Short() {
		n = 5000
	}
	for _, form := range []string{formNDJSON, formArray, formPretty} {
		t.Run(form, func(t *testing.T) {
			r := NewReader(newGenReader(n, form))
			size := len(r.buf)
			count := 0
			for {
				s, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if want := fmt.Sprintf("wamid.%010d", count); s.WAMID != want {
					t.Fatalf("status %d is %s, want %s", count, s.WAMID, want)
				}
				count++
			}
			c := r.Counts()
			if count != n || c.Lines != int64(n) || c.Bodies != int64(n) || c.Statuses != int64(n) {
				t.Errorf("read %d statuses, counts %+v; want %d", count, c, n)
			}
			if len(r.buf) != size || cap(r.sc.out) > 4 {
				t.Errorf("buffer grew from %d to %d bytes, status slice to %d", size, len(r.buf), cap(r.sc.out))
			}
		})
	}
}

var errBoom = errors.New("boom")

// TestReaderReadError checks that a read error ends reading with that
// error, after the records read completely before it.
func TestReaderReadError(t *testing.T) {
	h1, h2 := hook(st("w1", "sent")), hook(st("w2", "read"))
	tests := []struct {
		name  string
		in    string
		want  int
		count Counts
	}{
		{"lines", h1 + "\n" + h2[:20], 1, Counts{Lines: 1, Bodies: 1, Statuses: 1}},
		{"lines, error at a line end", h1 + "\n", 1, Counts{Lines: 1, Bodies: 1, Statuses: 1}},
		{"array", "[" + h1 + "," + h2[:20], 1, Counts{Lines: 1, Bodies: 1, Statuses: 1}},
		{"array, error after a comma", "[" + h1 + ",", 1, Counts{Lines: 1, Bodies: 1, Statuses: 1}},
		{"array, error after its bracket", "[", 0, Counts{}},
		{"pretty-printed", pretty(h1, "") + "\n" + pretty(h2, "")[:100], 1, Counts{Lines: 1, Bodies: 1, Statuses: 1}},
		{"concatenated", h1 + h2[:20], 1, Counts{Lines: 1, Bodies: 1, Statuses: 1}},
		{"after a stray line", h1 + "\nnot json", 1, Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{2}}},
		{"nothing", "", 0, Counts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(io.MultiReader(strings.NewReader(tt.in), iotest.ErrReader(errBoom)))
			got, count, err := readAll(r)
			if !errors.Is(err, errBoom) {
				t.Fatalf("error = %v, want one wrapping %v", err, errBoom)
			}
			if len(got) != tt.want || !equalCounts(count, tt.count) {
				t.Errorf("read %d statuses, counts %+v; want %d, %+v", len(got), count, tt.want, tt.count)
			}
			if _, err2 := r.Next(); err2 != err {
				t.Errorf("Next after the error = %v, want %v again", err2, err)
			}
		})
	}
}

// TestReaderNoProgress checks that a reader that returns nothing forever
// is an error, not a hang.
func TestReaderNoProgress(t *testing.T) {
	r := NewReader(readerFunc(func([]byte) (int, error) { return 0, nil }))
	if _, err := r.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("Next = %v, want io.ErrNoProgress", err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// TestCountsIsACopy checks that Counts does not share its slices.
func TestCountsIsACopy(t *testing.T) {
	r := NewReader(strings.NewReader(lines("x", "{}")))
	readAll(r)
	c := r.Counts()
	c.FirstInvalid[0] = 99
	if got := r.Counts().FirstInvalid; !slices.Equal(got, []int{1, 2}) {
		t.Errorf("FirstInvalid = %v after changing a copy, want [1 2]", got)
	}
}

// pretty is body pretty-printed as `jq .` and Meta's docs show it, each
// line after the first starting with prefix.
func pretty(body, prefix string) string {
	b, err := json.MarshalIndent(json.RawMessage(body), prefix, "  ")
	if err != nil {
		panic(err) // the tests' bodies are JSON
	}
	return prefix + string(b)
}

func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

// TestReaderValues reads logs that are not one body per line: bodies
// pretty-printed or run together, mixed with arrays and lines, and broken
// in the ways a receiver's log breaks.
func TestReaderValues(t *testing.T) {
	h1, h2, h3 := hook(st("w1", "sent")), hook(st("w2", "delivered")), hook(st("w3", "read"))
	h4, h5, h6 := hook(st("w4", "sent")), hook(st("w5", "sent")), hook(st("w6", "sent"))
	w1, w2, w3 := want("w1", "sent", 1), want("w2", "delivered", 1), want("w3", "read", 1)
	at := func(s Status, line int) Status { s.Line = line; return s }
	p1, p2, p3 := pretty(h1, ""), pretty(h2, ""), pretty(h3, "") // 28 lines each
	// p1 cut after the line `"changes": [` (its 6th): the next body becomes
	// an element of changes[], and the one after it shows the break.
	cutAfterBracket := p1[:strings.Index(p1, `"changes": [`)+len(`"changes": [`)]
	cutInString := p1[:strings.Index(p1, `"display_phone_number": "155`)+len(`"display_phone_number": "155`)]
	// h1 cut after `"value":` swallows the next line as the value.
	cutAfterColon := h1[:strings.Index(h1, `"value":`)+len(`"value":`)]
	big := pretty(hook(st("w2", "sent", `"pad":"`+strings.Repeat("x", 400)+`"`)), "") // 29 lines
	bigCut := big[:strings.Index(big, `"pad": "`)+200]                                // in its 20th line
	if n := strings.Count(p1, "\n") + 1; n != 28 {
		t.Fatalf("a pretty-printed body has %d lines, the cases below count 28", n)
	}

	tests := []readerTest{
		{
			name:  "pretty-printed bodies",
			in:    p1 + "\n" + p2 + "\n" + p3 + "\n",
			want:  []Status{w1, at(w2, 29), at(w3, 57)},
			count: Counts{Lines: 3, Bodies: 3, Statuses: 3},
		},
		{
			name:  "pretty-printed, crlf, blank lines and a byte order mark",
			in:    "\xef\xbb\xbf" + crlf(p1+"\n\n"+p2+"\n"+p3),
			want:  []Status{w1, at(w2, 30), at(w3, 58)},
			count: Counts{Lines: 3, Bodies: 3, Statuses: 3},
		},
		{
			name:  "pretty-printed with tabs, indented",
			in:    "\t" + strings.ReplaceAll(p1, "\n", "\n\t") + "\n\t" + strings.ReplaceAll(p2, "\n", "\n\t"),
			want:  []Status{w1, at(w2, 29)},
			count: Counts{Lines: 2, Bodies: 2, Statuses: 2},
		},
		{
			name:  "pretty-printed, nothing between",
			in:    p1 + p2 + p3,
			want:  []Status{w1, at(w2, 28), at(w3, 55)},
			count: Counts{Lines: 3, Bodies: 3, Statuses: 3},
		},
		{
			name:  "concatenated on one line",
			in:    h1 + h2 + h3,
			want:  []Status{w1, w2, w3},
			count: Counts{Lines: 3, Bodies: 3, Statuses: 3},
		},
		{
			name:  "separated by spaces and tabs",
			in:    h1 + " \t" + h2 + "\r\n" + h3 + " ",
			want:  []Status{w1, w2, at(w3, 2)},
			count: Counts{Lines: 3, Bodies: 3, Statuses: 3},
		},
		{
			// Elements are numbered by position across arrays (1, 2, then 3);
			// other bodies by the line they start on.
			name: "array, lines, pretty-printed, concatenated, array",
			in:   "[" + h1 + ",\n" + h2 + "]\n" + h3 + "\n" + pretty(h4, "") + h5 + "\n[" + h6 + "]",
			want: []Status{at(w1, 1), at(w2, 2), at(w3, 3), want("w4", "sent", 4), want("w5", "sent", 31),
				want("w6", "sent", 3)},
			count: Counts{Lines: 6, Bodies: 6, Statuses: 6},
		},
		{
			name:  "values after an array on its line",
			in:    "[" + h1 + "]" + h2 + " ,\n" + h3,
			want:  []Status{w1, w2, at(w3, 2)},
			count: Counts{Lines: 4, Bodies: 3, Statuses: 3, Invalid: 1, FirstInvalid: []int{1}},
		},
		{
			name:  "log lines between pretty-printed bodies",
			in:    p1 + "\n2026-11-29 10:00:01 POST /webhook 200\n" + p2 + "\nINFO done\n\n" + p3,
			want:  []Status{w1, at(w2, 30), at(w3, 60)},
			count: Counts{Lines: 5, Bodies: 3, Statuses: 3, Invalid: 2, FirstInvalid: []int{29, 58}},
		},
		{
			name:  "a run of garbage lines is one record",
			in:    h1 + "\npanic: oops\n\tgoroutine 1 [running]:\n  main.go:12 +0x1d\n42\n\"x\"\n" + h2,
			want:  []Status{w1, at(w2, 7)},
			count: Counts{Lines: 3, Bodies: 2, Statuses: 2, Invalid: 1, FirstInvalid: []int{2}},
		},
		{
			name:  "scalars at the top level",
			in:    `42 "x" null true` + "\n" + h1,
			want:  []Status{at(w1, 2)},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{1}},
		},
		{
			name:  "log lines and indented bodies",
			in:    "POST /webhook\n" + pretty(h1, "  ") + "\nPOST /webhook\n" + pretty(h2, "  ") + "\n",
			want:  []Status{at(w1, 2), at(w2, 31)},
			count: Counts{Lines: 4, Bodies: 2, Statuses: 2, Invalid: 2, FirstInvalid: []int{1, 30}},
		},
		{
			// Known cost of '[' starting a record: "[INFO]" is an array of
			// one invalid element, and the rest of the line is a stray.
			name:  "a log line starting with '['",
			in:    "[INFO] got a webhook\n" + h1,
			want:  []Status{at(w1, 2)},
			count: Counts{Lines: 3, Bodies: 1, Statuses: 1, Invalid: 2, FirstInvalid: []int{1, 1}},
		},
		{
			name:  "truncated final pretty-printed body",
			in:    p1 + "\n" + p2[:len(p2)/2],
			want:  []Status{w1},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{29}},
		},
		{
			name:  "truncated final pretty-printed body, after ','",
			in:    p1 + "\n" + p2[:strings.Index(p2, `"id": "w2",`)+len(`"id": "w2",`)] + "\n",
			want:  []Status{w1},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{29}},
		},
		{
			// Its statuses[0] object, indented, closed before the cut: it is
			// inside the broken body, not a body to go back to.
			name:  "truncated final pretty-printed body, after a whole status",
			in:    p1 + "\n" + p2[:strings.Index(p2, `"16505551234"`)+len(`"16505551234"`+"\n              }")] + "\n",
			want:  []Status{w1},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{29}},
		},
		{
			name:  "pretty-printed body cut after '[', then more",
			in:    cutAfterBracket + "\n" + p2 + "\n" + p3,
			want:  []Status{at(w2, 7), at(w3, 35)},
			count: Counts{Lines: 3, Bodies: 2, Statuses: 2, Invalid: 1, FirstInvalid: []int{1}},
		},
		{
			name:  "pretty-printed body cut after '[', then one more",
			in:    cutAfterBracket + "\n" + p2,
			want:  []Status{at(w2, 7)},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{1}},
		},
		{
			name:  "pretty-printed body cut in a string, then more",
			in:    cutInString + "\n" + p2 + "\n" + p3,
			want:  []Status{at(w2, 12), at(w3, 40)}, // cut in its 11th line
			count: Counts{Lines: 3, Bodies: 2, Statuses: 2, Invalid: 1, FirstInvalid: []int{1}},
		},
		{
			name:  "ndjson line cut after ':', then more lines",
			in:    lines(cutAfterColon, h2, h3),
			want:  []Status{at(w2, 2), at(w3, 3)},
			count: Counts{Lines: 3, Bodies: 2, Statuses: 2, Invalid: 1, FirstInvalid: []int{1}},
		},
		{
			// The body after the cut one shows the break (a '{' after its
			// '}'), long before MaxRecord: nothing after the cut is lost.
			name:  "ndjson line cut after ':', then a long log",
			in:    lines(cutAfterColon, h2, h3, h4, h5, h6),
			max:   2 * len(h1),
			want:  []Status{at(w2, 2), at(w3, 3), want("w4", "sent", 4), want("w5", "sent", 5), want("w6", "sent", 6)},
			count: Counts{Lines: 6, Bodies: 5, Statuses: 5, Invalid: 1, FirstInvalid: []int{1}},
		},
		{
			name:  "ndjson line cut after ':', then a last line",
			in:    lines(h1, cutAfterColon, h3),
			want:  []Status{w1, at(w3, 3)},
			count: Counts{Lines: 3, Bodies: 2, Statuses: 2, Invalid: 1, FirstInvalid: []int{2}},
		},
		{
			// The scanner has decoded w2 when it meets the cut.
			name:  "ndjson line cut after a status",
			in:    lines(h2[:strings.Index(h2, `"16505551234"}`)+len(`"16505551234"}`)], h3),
			want:  []Status{at(w3, 2)},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{1}},
		},
		{
			name:  "balanced object with a syntax error after a status",
			in:    lines(strings.Replace(h2, `"16505551234"}`, `"16505551234"} x`, 1), h3),
			want:  []Status{at(w3, 2)},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{1}},
		},
		{
			name:  "pretty-printed body missing a comma is one record",
			in:    strings.Replace(p1, `"sent",`, `"sent"`, 1) + "\n" + p2,
			want:  []Status{at(w2, 29)},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{1}},
		},
		{
			name:  "newline in a string",
			in:    `{"object":"x` + "\n" + `y", "entry": []}` + "\n" + h1,
			want:  []Status{at(w1, 3)},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{1}},
		},
		{
			name:  "newline in a string, then an indented body",
			in:    `{"object":"x` + "\n" + `    {"entry": []}` + "\n" + h1,
			want:  []Status{at(w1, 3)},
			count: Counts{Lines: 3, Bodies: 1, Statuses: 1, NotStatus: 1, Invalid: 1, FirstInvalid: []int{1}, FirstNotStatus: []int{2}},
		},
		{
			name:  "closing bracket that does not match",
			in:    `{"entry":[}` + "\n" + `  ]}` + "\n" + h1,
			want:  []Status{at(w1, 3)},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{1}},
		},
		{
			name:  "nesting deeper than encoding/json's limit",
			in:    `{"x":` + strings.Repeat("[", maxDepth) + "\n" + h1,
			want:  []Status{at(w1, 2)},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{1}},
		},
		{
			name:  "body over the maximum in a pretty-printed log",
			in:    p1 + "\n" + big + "\n" + p3 + "\n",
			max:   len(p3) + 10,
			want:  []Status{w1, at(w3, 58)},
			count: Counts{Lines: 3, Bodies: 2, Statuses: 2, Invalid: 1, FirstInvalid: []int{29}},
		},
		{
			name:  "body over the maximum, cut short",
			in:    p1 + "\n" + bigCut + "\n" + p3 + "\n",
			max:   len(p3) + 10,
			want:  []Status{w1, at(w3, 49)},
			count: Counts{Lines: 3, Bodies: 2, Statuses: 2, Invalid: 1, FirstInvalid: []int{29}},
		},
		{
			name:  "body over the maximum, cut short, at the end",
			in:    p1 + "\n" + bigCut,
			max:   len(p3) + 10,
			want:  []Status{w1},
			count: Counts{Lines: 2, Bodies: 1, Statuses: 1, Invalid: 1, FirstInvalid: []int{29}},
		},
	}
	runReaderTests(t, tests)
}

// TestCountsText checks Bytes and TextLines, which let a caller describe a
// log that yielded nothing.
func TestCountsText(t *testing.T) {
	tests := []struct {
		name             string
		in               string
		lines            int64 // Counts.Lines
		bytes, textLines int64
	}{
		{"empty", "", 0, 0, 0},
		{"blank lines", "\n\r\n \n", 0, 5, 3},
		{"last line without newline", "{}\n{}", 2, 5, 2},
		{"byte order mark only", "\xef\xbb\xbf", 0, 3, 1},
		{"39 lines, none a webhook body", strings.Repeat("2026-11-29 10:00:01 GET /health 200\n", 39), 1, 39 * 36, 39},
		{"pretty-printed body", pretty(hook(st("w1", "sent")), "") + "\n", 1, int64(len(pretty(hook(st("w1", "sent")), ""))) + 1, 28},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c, err := readAll(NewReader(strings.NewReader(tt.in)))
			if err != nil {
				t.Fatal(err)
			}
			if c.Lines != tt.lines || c.Bytes != tt.bytes || c.TextLines != tt.textLines {
				t.Errorf("records, bytes, lines = %d, %d, %d; want %d, %d, %d", c.Lines, c.Bytes, c.TextLines, tt.lines, tt.bytes, tt.textLines)
			}
		})
	}
}

// TestReaderLinear checks that broken objects that keep each other open do
// not make reading quadratic: each going back over a broken object would
// otherwise read the rest of the log again (4 MB: hours, not milliseconds).
func TestReaderLinear(t *testing.T) {
	h := hook(st("w1", "sent"))
	tests := []struct {
		name string
		unit string // repeated to 4 MB
	}{
		{"objects left open", `{"a":` + "\n"},
		{"objects left open, then closed ones", `{"a":[` + "\n{},\n"},
		{"cut lines between bodies", h[:len(h)/2] + "\n" + h + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := strings.Repeat(tt.unit, 4<<20/len(tt.unit)) + h + "\n"
			done := make(chan error, 1)
			var got []Status
			go func() {
				var err error
				got, _, err = readAll(NewReader(strings.NewReader(in)))
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				if len(got) == 0 || got[len(got)-1].Line != strings.Count(in, "\n") {
					t.Errorf("the last body was not read (%d statuses)", len(got))
				}
			case <-time.After(30 * time.Second):
				t.Fatal("reading 4 MB took more than 30 s")
			}
		})
	}
}
