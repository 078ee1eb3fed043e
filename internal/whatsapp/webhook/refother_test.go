package webhook

import (
	"bytes"
	"cmp"
	"encoding/json"
	"time"
)

// others is what a record holds besides statuses, as a Reader hands it out
// and counts it.
type others struct {
	In      []Inbound
	Pref    []Preference
	Tmpl    []TemplateUpdate
	Order   []itemKind // the kind of each thing handed out, in order
	Kinds   map[string]int64
	Dropped int64
}

// refOther is the specification of what a valid record holds besides
// statuses (see Reader), written with encoding/json: FuzzParse holds the
// scanner to it.
func refOther(rec []byte, line int) others {
	dec := json.NewDecoder(bytes.NewReader(rec))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		panic(err) // only called on valid records
	}
	o := others{Kinds: map[string]int64{}}
	entries, _ := v.(map[string]any)["entry"].([]any)
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		changes, _ := entry["changes"].([]any)
		for _, c := range changes {
			change, ok := c.(map[string]any)
			if !ok {
				continue
			}
			o.change(change, line)
		}
	}
	return o
}

func (o *others) change(change map[string]any, line int) {
	field, _ := change["field"].(string)
	value, _ := change["value"].(map[string]any)
	md, _ := value["metadata"].(map[string]any)
	pnid, _ := md["phone_number_id"].(string)

	held := false
	switch msgs := value["messages"].(type) {
	case nil:
	case []any:
		for _, m := range msgs {
			if m == nil {
				continue
			}
			held = true
			in, ok := refMessage(m)
			if !ok {
				o.Dropped++
				continue
			}
			in.PhoneNumberID, in.Line = pnid, line
			o.In = append(o.In, in)
			o.Order = append(o.Order, itemInbound)
		}
	default:
		held = true
		o.Dropped++
	}
	switch prefs := value["user_preferences"].(type) {
	case nil:
	case []any:
		for _, p := range prefs {
			if p == nil {
				continue
			}
			m, ok := p.(map[string]any)
			pr := Preference{WAID: loose(m["wa_id"]), Category: loose(m["category"]), Value: loose(m["value"]), PhoneNumberID: pnid, Line: line}
			pr.Timestamp, _ = refTime(m["timestamp"])
			if !ok || pr.WAID == "" || pr.Value == "" {
				o.Dropped++
				continue
			}
			o.Pref = append(o.Pref, pr)
			o.Order = append(o.Order, itemPreference)
		}
	default:
		o.Dropped++
	}

	statuses := 0
	list, _ := value["statuses"].([]any)
	for _, s := range list {
		if s != nil {
			statuses++
		}
	}
	kind := field
	switch {
	case held:
		kind = "messages"
	case statuses > 0:
		kind = "statuses"
	}
	o.Kinds[kind]++

	if field == "message_template_status_update" || field == "message_template_quality_update" {
		t := TemplateUpdate{
			Name: loose(value["message_template_name"]), Language: loose(value["message_template_language"]),
			Event:  cmp.Or(loose(value["event"]), loose(value["new_quality_score"])),
			Reason: loose(value["reason"]), ID: loose(value["message_template_id"]), Line: line,
		}
		if t.Name == "" && t.ID == "" {
			o.Dropped++
			return
		}
		o.Tmpl = append(o.Tmpl, t)
		o.Order = append(o.Order, itemTemplate)
	}
}

func refMessage(v any) (Inbound, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return Inbound{}, false
	}
	obj := func(v any) map[string]any { o, _ := v.(map[string]any); return o }
	in := Inbound{MessageID: loose(m["id"]), From: loose(m["from"]), Type: loose(m["type"])}
	in.Timestamp, _ = refTime(m["timestamp"])
	if in.Timestamp.IsZero() {
		in.Timestamp = time.Time{}
	}
	in.Context = loose(obj(m["context"])["id"])
	switch in.Type {
	case "text":
		in.Text = loose(obj(m["text"])["body"])
	case "button":
		b := obj(m["button"])
		in.Text, in.Payload = loose(b["text"]), loose(b["payload"])
	case "interactive":
		i := obj(m["interactive"])
		r := obj(i["button_reply"])
		id, title := loose(r["id"]), loose(r["title"])
		typ := loose(i["type"])
		if typ == "list_reply" || typ != "button_reply" && id == "" && title == "" {
			r = obj(i["list_reply"])
			id, title = loose(r["id"]), loose(r["title"])
		}
		in.Text, in.Payload = title, id
	case "reaction":
		r := obj(m["reaction"])
		in.Text = loose(r["emoji"])
		in.Context = cmp.Or(in.Context, loose(r["message_id"]))
	}
	return in, in.From != ""
}

// loose: a string, or the text of a number; anything else is "".
func loose(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return string(v)
	}
	return ""
}
