package webhook

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/logfile"
)

// corpus is a file of testdata/webhook.
func corpus(name string) string { return filepath.Join("..", "..", "..", "testdata", "webhook", name) }

// corpusLine is body n (1-based) of an NDJSON file of testdata/webhook.
func corpusLine(t *testing.T, name string, n int) string {
	t.Helper()
	b, err := os.ReadFile(corpus(name))
	if err != nil {
		t.Fatal(err)
	}
	l := strings.Split(strings.TrimSpace(string(b)), "\n")
	if n > len(l) {
		t.Fatalf("%s has %d lines, not %d", name, len(l), n)
	}
	return l[n-1]
}

// readOthers reads r to its end and collects what it hands out. Each event
// (a status returned, a thing handed out) is also written to events, so
// that order can be checked.
func readOthers(r *Reader) ([]Status, others, []string, error) {
	var o others
	var events []string
	r.SetOther(Other{
		Inbound: func(in Inbound) {
			o.In, o.Order = append(o.In, in), append(o.Order, itemInbound)
			events = append(events, fmt.Sprintf("inbound %d", in.Line))
		},
		Preference: func(p Preference) {
			o.Pref, o.Order = append(o.Pref, p), append(o.Order, itemPreference)
			events = append(events, fmt.Sprintf("preference %d", p.Line))
		},
		Template: func(t TemplateUpdate) {
			o.Tmpl, o.Order = append(o.Tmpl, t), append(o.Order, itemTemplate)
			events = append(events, fmt.Sprintf("template %d", t.Line))
		},
	})
	var sts []Status
	for {
		s, err := r.Next()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			c := r.Counts()
			o.Kinds, o.Dropped = c.Kinds, c.Dropped
			return sts, o, events, err
		}
		sts = append(sts, s)
		events = append(events, fmt.Sprintf("status %d", s.Line))
	}
}

func equalOthers(a, b others) bool {
	return slices.Equal(a.In, b.In) && slices.Equal(a.Pref, b.Pref) && slices.Equal(a.Tmpl, b.Tmpl) &&
		slices.Equal(a.Order, b.Order) && maps.Equal(a.Kinds, b.Kinds) && a.Dropped == b.Dropped
}

// kinds is a Counts.Kinds.
type kinds = map[string]int64

const (
	openapi = "meta-openapi-examples.ndjson"
	docs    = "meta-other.ndjson"
	sheena  = "16505551234"
)

func at(sec int64) time.Time { return time.Unix(sec, 0).UTC() }

// TestOther reads real bodies (Meta's OpenAPI examples, and bodies shaped as
// Meta's webhook references show them) and edge cases, one body a log.
func TestOther(t *testing.T) {
	type test struct {
		name     string
		in       string
		statuses int
		want     others // Order is derived from In, Pref, Tmpl unless set
	}
	status := hook(st("w1", "read"))
	tests := []test{
		{name: "text message", in: corpusLine(t, openapi, 1), want: others{
			In: []Inbound{{MessageID: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=", From: sheena, PhoneNumberID: pnid,
				Timestamp: at(1749416383), Type: "text", Text: "Does it come in another color?", Line: 1}},
			Kinds: kinds{"messages": 1}}},
		{name: "text with context", in: corpusLine(t, openapi, 2), want: others{
			In: []Inbound{{MessageID: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTA2NTUwRkNEMDdFQjJCRUU0NQA=", From: sheena, PhoneNumberID: pnid,
				Timestamp: at(1750016800), Type: "text", Text: "Is this still available?", Context: "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGA9wcm9kdWN0X2lucXVpcnkA", Line: 1}},
			Kinds: kinds{"messages": 1}}},
		{name: "reaction", in: corpusLine(t, openapi, 4), want: others{
			In: []Inbound{{MessageID: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=", From: sheena, PhoneNumberID: pnid,
				Timestamp: at(1749419544), Type: "reaction", Text: "👍", Context: "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI0RTJEOTc2ODVERUY5RDlGNkYA", Line: 1}},
			Kinds: kinds{"messages": 1}}},
		{name: "image: its caption is not text", in: corpusLine(t, openapi, 5), want: others{
			In: []Inbound{{MessageID: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=", From: sheena, PhoneNumberID: pnid,
				Timestamp: at(1744344496), Type: "image", Line: 1}},
			Kinds: kinds{"messages": 1}}},
		{name: "unsupported", in: corpusLine(t, openapi, 8), want: others{
			In: []Inbound{{MessageID: "wamid.HBgLMTQyMDU1NTA3NDkVAgASGBI5N0MwRjg0RTVBNUI1RDA2OTkA", From: sheena, PhoneNumberID: pnid,
				Timestamp: at(1750090702), Type: "unsupported", Line: 1}},
			Kinds: kinds{"messages": 1}}},
		{name: "template quick-reply button", in: corpusLine(t, openapi, 9), want: others{
			In: []Inbound{{MessageID: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUU0M0MxQzQzMUJCMTMwNUZFOQA=", From: sheena, PhoneNumberID: pnid,
				Timestamp: at(1750091045), Type: "button", Text: "Unsubscribe", Payload: "Unsubscribe", Context: "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJFNjk2OTMwNEZCQjhGMzUyQUYA", Line: 1}},
			Kinds: kinds{"messages": 1}}},
		{name: "interactive list_reply", in: corpusLine(t, openapi, 10), want: others{
			In: []Inbound{{MessageID: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUJDQ0NDM0FEODY4ODkzOTc5RgA=", From: sheena, PhoneNumberID: pnid,
				Timestamp: at(1749854575), Type: "interactive", Text: "Priority Mail Express", Payload: "priority_express", Context: "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJGMzEyNzhENTZDMzNGODlDRDgA", Line: 1}},
			Kinds: kinds{"messages": 1}}},
		{name: "interactive button_reply", in: corpusLine(t, openapi, 11), want: others{
			In: []Inbound{{MessageID: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTZBQzg0MzQ4QjRCM0NGNkVGOAA=", From: sheena, PhoneNumberID: pnid,
				Timestamp: at(1750025136), Type: "interactive", Text: "Cancel", Payload: "cancel-button", Context: "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI3MEM2RUJFNkI0RENGQTVDRjUA", Line: 1}},
			Kinds: kinds{"messages": 1}}},
		{name: "group lifecycle update", in: corpusLine(t, openapi, 14), want: others{Kinds: kinds{"group_lifecycle_update": 1}}},
		{name: "user_preferences stop", in: corpusLine(t, docs, 1), want: others{
			Pref:  []Preference{{WAID: sheena, PhoneNumberID: pnid, Category: "marketing_messages", Value: "stop", Timestamp: at(1750031000), Line: 1}},
			Kinds: kinds{"user_preferences": 1}}},
		{name: "user_preferences resume", in: corpusLine(t, docs, 2), want: others{
			Pref:  []Preference{{WAID: sheena, PhoneNumberID: pnid, Category: "marketing_messages", Value: "resume", Timestamp: at(1750032000), Line: 1}},
			Kinds: kinds{"user_preferences": 1}}},
		{name: "template paused", in: corpusLine(t, docs, 3), want: others{
			Tmpl:  []TemplateUpdate{{Name: "spring_sale", Language: "en_US", Event: "PAUSED", Reason: "NONE", ID: "1689556908129832", Line: 1}},
			Kinds: kinds{"message_template_status_update": 1}}},
		{name: "template disabled", in: corpusLine(t, docs, 4), want: others{
			Tmpl:  []TemplateUpdate{{Name: "spring_sale", Language: "en_US", Event: "DISABLED", Reason: "NONE", ID: "1689556908129832", Line: 1}},
			Kinds: kinds{"message_template_status_update": 1}}},
		{name: "template rejected", in: corpusLine(t, docs, 5), want: others{
			Tmpl:  []TemplateUpdate{{Name: "abandoned_cart", Language: "en", Event: "REJECTED", Reason: "INVALID_FORMAT", ID: "1689556908129835", Line: 1}},
			Kinds: kinds{"message_template_status_update": 1}}},
		{name: "template quality update", in: corpusLine(t, docs, 6), want: others{
			Tmpl:  []TemplateUpdate{{Name: "welcome_template", Language: "en-US", Event: "YELLOW", ID: "806312974732579", Line: 1}},
			Kinds: kinds{"message_template_quality_update": 1}}},
		{name: "phone number quality update", in: corpusLine(t, docs, 7), want: others{Kinds: kinds{"phone_number_quality_update": 1}}},
		{name: "account update", in: corpusLine(t, docs, 8), want: others{Kinds: kinds{"account_update": 1}}},
		{name: "button tap Stop promotions", in: corpusLine(t, docs, 9), want: others{
			In: []Inbound{{MessageID: "wamid.HBgLMTY1MDUwNzY1MjAVAgASGBQ1MzZGMEJCMkE0QjNENDEyMDFGOAA=", From: sheena, PhoneNumberID: pnid,
				Timestamp: at(1750039000), Type: "button", Text: "Stop promotions", Payload: "Stop promotions", Context: "wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA", Line: 1}},
			Kinds: kinds{"messages": 1}}},
		{name: "a status and a message in one body", in: corpusLine(t, docs, 10), statuses: 1, want: others{
			In: []Inbound{{MessageID: "wamid.HBgLMTY1MDUwNzY1MjEVAgASGBQ3RjJBOUMxRDBFNjQ4QjVBMjNDMQA=", From: "16505551235", PhoneNumberID: pnid,
				Timestamp: at(1750040005), Type: "text", Text: "STOP", Context: "wamid.HBgLMTY1MDUwNzY1MjEVAgARGBJBQjEyQ0QzNEVGNTY3ODkwQUIA", Line: 1}},
			Kinds: kinds{"statuses": 1, "messages": 1}}},
		{name: "a status and a message in one value", statuses: 1,
			in: strings.Replace(status, `"statuses":`, `"messages":[{"from":"1","id":"m","timestamp":5,"type":"text","text":{"body":"hi"}}],"statuses":`, 1),
			want: others{In: []Inbound{{MessageID: "m", From: "1", PhoneNumberID: pnid, Timestamp: at(5), Type: "text", Text: "hi", Line: 1}},
				Kinds: kinds{"messages": 1}}},
		{name: "errors only", in: errorsOnly, want: others{Kinds: kinds{"messages": 1}}},
		{name: "statuses only", in: status, statuses: 1, want: others{Kinds: kinds{"statuses": 1}}},

		// Malformed parts cost the body nothing but themselves.
		{name: "messages not an array", statuses: 1,
			in:   strings.Replace(status, `"statuses":`, `"messages":5,"statuses":`, 1),
			want: others{Kinds: kinds{"messages": 1}, Dropped: 1}},
		{name: "message without from, one of wrong types, one fine", statuses: 1,
			in: strings.Replace(status, `"statuses":`, `"messages":[{"id":"m1","type":"text","text":{"body":"STOP"}},7,null,`+
				`{"from":16505551234,"id":["x"],"timestamp":"soon","type":"text","text":"STOP","context":"c"}],"statuses":`, 1),
			want: others{In: []Inbound{{From: sheena, PhoneNumberID: pnid, Type: "text", Line: 1}}, Kinds: kinds{"messages": 1}, Dropped: 2}},
		{name: "preferences malformed", in: `{"entry":[{"changes":[{"value":{"user_preferences":[{"wa_id":"1"},{"value":"stop"},"x",null,` +
			`{"wa_id":"2","value":"stop","category":false,"timestamp":{}}]},"field":"user_preferences"},{"value":{"user_preferences":{}}}]}]}`,
			want: others{Pref: []Preference{{WAID: "2", Value: "stop", Line: 1}}, Kinds: kinds{"user_preferences": 1, "": 1}, Dropped: 4}},
		{name: "template update without name or id", in: `{"entry":[{"changes":[{"value":{"event":"PAUSED","message_template_name":1.5e3},` +
			`"field":"message_template_status_update"},{"field":"message_template_status_update","value":null}]}]}`,
			want: others{Tmpl: []TemplateUpdate{{Name: "1.5e3", Event: "PAUSED", Line: 1}}, Kinds: kinds{"message_template_status_update": 2}, Dropped: 1}},
		{name: "a malformed status: nothing is handed out",
			in:   strings.Replace(hook(st("", "read")), `"statuses":`, `"messages":[{"from":"1","type":"text","text":{"body":"STOP"}}],"statuses":`, 1),
			want: others{}},
		{name: "repeated keys: the last wins", in: `{"entry":[{"changes":[{"value":{"messages":[{"from":"1"}],"metadata":{"phone_number_id":"a"},` +
			`"user_preferences":[{"wa_id":"1","value":"stop"}],"messages":[{"from":"2","text":{"body":"x"},"type":"text","text":{}}],` +
			`"metadata":{"phone_number_id":"b"},"user_preferences":null},"field":"messages"}]}]}`,
			want: others{In: []Inbound{{From: "2", PhoneNumberID: "b", Type: "text", Line: 1}}, Kinds: kinds{"messages": 1}}},
		{name: "list_reply without a type", in: `{"entry":[{"changes":[{"value":{"messages":[{"from":"1","type":"interactive",` +
			`"interactive":{"list_reply":{"id":"a","title":"A"}}}]}}]}]}`,
			want: others{In: []Inbound{{From: "1", Type: "interactive", Text: "A", Payload: "a", Line: 1}}, Kinds: kinds{"messages": 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want.Order == nil {
				for range tt.want.In {
					tt.want.Order = append(tt.want.Order, itemInbound)
				}
				for range tt.want.Pref {
					tt.want.Order = append(tt.want.Order, itemPreference)
				}
				for range tt.want.Tmpl {
					tt.want.Order = append(tt.want.Order, itemTemplate)
				}
			}
			if len(tt.want.Kinds) == 0 {
				tt.want.Kinds = nil
			}
			for _, form := range []struct{ name, log string }{{"ndjson", tt.in + "\n"}, {"pretty", pretty(tt.in, "")}, {"array", "[" + tt.in + "]"}} {
				sts, got, _, err := readOthers(NewReader(&chunkReader{b: []byte(form.log)}))
				if err != nil {
					t.Fatal(err)
				}
				if len(sts) != tt.statuses {
					t.Errorf("%s: %d statuses, want %d", form.name, len(sts), tt.statuses)
				}
				if !equalOthers(got, tt.want) {
					t.Errorf("%s: got\n %+v\nwant\n %+v", form.name, got, tt.want)
				}
			}
			if k, _ := refParse([]byte(tt.in), 1); k != kindInvalid {
				if ref := refOther([]byte(tt.in), 1); !equalOthers(ref, tt.want) {
					t.Errorf("the reference says\n %+v", ref)
				}
			}
		})
	}
}

// TestOtherOrder checks that what a body holds besides statuses is handed
// out after the statuses of the body before it and before its own.
func TestOtherOrder(t *testing.T) {
	log := lines(
		hook(st("w1", "sent")),
		corpusLine(t, docs, 10), // a status, then a message
		incoming,
		templateUpdate,
		hook(st("w2", "read")),
	)
	_, _, events, err := readOthers(NewReader(strings.NewReader(log)))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"status 1", "inbound 2", "status 2", "inbound 3", "template 4", "status 5"}
	if !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
}

// TestCorpusKinds reads every body of testdata/webhook (all forms, plain
// and gzipped) and counts its changes by kind.
func TestCorpusKinds(t *testing.T) {
	examples := kinds{"statuses": 7, "messages": 2, "message_template_status_update": 1}
	tests := []struct {
		file     string
		kinds    kinds
		in, pref int
		tmpl     []string // events
	}{
		{"meta-examples.ndjson", examples, 1, 0, []string{"APPROVED"}},
		{"meta-examples.json", examples, 1, 0, []string{"APPROVED"}},
		{"meta-examples.pretty.json", examples, 1, 0, []string{"APPROVED"}},
		{openapi, kinds{"messages": 13, "group_lifecycle_update": 1, "group_settings_update": 1, "group_participants_update": 1}, 13, 0, nil},
		{docs, kinds{"user_preferences": 2, "message_template_status_update": 3, "message_template_quality_update": 1,
			"phone_number_quality_update": 1, "account_update": 1, "messages": 2, "statuses": 1}, 2, 2, []string{"PAUSED", "DISABLED", "REJECTED", "YELLOW"}},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		b, err := os.ReadFile(corpus(tt.file))
		if err != nil {
			t.Fatal(err)
		}
		gzPath := filepath.Join(dir, tt.file+".gz")
		if err := os.WriteFile(gzPath, gz(t, string(b)), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{corpus(tt.file), gzPath} {
			t.Run(filepath.Base(path), func(t *testing.T) {
				rc, err := logfile.Open(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer rc.Close()
				r := NewReader(rc)
				_, got, _, err := readOthers(r)
				if err != nil {
					t.Fatal(err)
				}
				var events []string
				for _, u := range got.Tmpl {
					events = append(events, u.Event)
				}
				if !maps.Equal(got.Kinds, tt.kinds) || len(got.In) != tt.in || len(got.Pref) != tt.pref || !slices.Equal(events, tt.tmpl) || got.Dropped != 0 {
					t.Errorf("kinds %v, %d inbound, %d preferences, templates %q, %d dropped; want %v, %d, %d, %q, 0",
						got.Kinds, len(got.In), len(got.Pref), events, got.Dropped, tt.kinds, tt.in, tt.pref, tt.tmpl)
				}
				if c := r.Counts(); c.Invalid != 0 {
					t.Errorf("%d invalid records", c.Invalid)
				}
			})
		}
	}
}

// TestOtherCounts checks that Counts.Kinds is a copy, and that what is
// counted does not depend on whether anything is handed out.
func TestOtherCounts(t *testing.T) {
	b, err := os.ReadFile(corpus(docs))
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(bytes.NewReader(b))
	if _, _, err := readAll(r); err != nil {
		t.Fatal(err)
	}
	c := r.Counts()
	c.Kinds["statuses"] = 99
	_, o, _, err := readOthers(NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	if c2 := r.Counts(); c2.Kinds["statuses"] != 1 || !maps.Equal(c2.Kinds, o.Kinds) {
		t.Errorf("kinds %v without Other, %v with", c2.Kinds, o.Kinds)
	}
}
