package webhook

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// refParse is the specification of what a record means, written with
// encoding/json: the scanner must agree with it on every input (FuzzParse).
// Decoding into maps gives exact key matching and last-duplicate-wins.
func refParse(rec []byte, line int) (kind, []Status) {
	if !json.Valid(rec) {
		return kindInvalid, nil
	}
	dec := json.NewDecoder(bytes.NewReader(rec))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return kindInvalid, nil
	}
	body, ok := v.(map[string]any)
	if !ok || body["entry"] == nil {
		return kindInvalid, nil
	}
	entries, ok := body["entry"].([]any)
	if !ok {
		return kindInvalid, nil
	}
	var out []Status
	for _, e := range entries {
		if e == nil {
			continue
		}
		entry, ok := e.(map[string]any)
		if !ok {
			return kindInvalid, nil
		}
		changes, ok := optArray(entry["changes"])
		if !ok {
			return kindInvalid, nil
		}
		for _, c := range changes {
			if c == nil {
				continue
			}
			change, ok := c.(map[string]any)
			if !ok {
				return kindInvalid, nil
			}
			if change["value"] == nil {
				continue
			}
			value, ok := change["value"].(map[string]any)
			if !ok {
				return kindInvalid, nil
			}
			pnid := ""
			if value["metadata"] != nil {
				md, ok := value["metadata"].(map[string]any)
				if !ok {
					return kindInvalid, nil
				}
				if pnid, ok = optString(md["phone_number_id"]); !ok {
					return kindInvalid, nil
				}
			}
			statuses, ok := optArray(value["statuses"])
			if !ok {
				return kindInvalid, nil
			}
			for _, s := range statuses {
				if s == nil {
					continue
				}
				st, ok := refStatus(s)
				if !ok {
					return kindInvalid, nil
				}
				st.PhoneNumberID, st.Line = pnid, line
				out = append(out, st)
			}
		}
	}
	if len(out) == 0 {
		return kindNotStatus, nil
	}
	return kindStatus, out
}

func refStatus(v any) (Status, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return Status{}, false
	}
	var st Status
	var ok1, ok2, ok3, ok4, ok5 bool
	st.WAMID, ok1 = optString(m["id"])
	st.Status, ok2 = optString(m["status"])
	st.RecipientID, ok3 = optString(m["recipient_id"])
	st.CallbackData, ok4 = optString(m["biz_opaque_callback_data"])
	st.Timestamp, ok5 = refTime(m["timestamp"])
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || st.WAMID == "" || st.Status == "" {
		return Status{}, false
	}
	st.Pricing = refPricing(m["pricing"])
	errs, ok := optArray(m["errors"])
	if !ok {
		return Status{}, false
	}
	first := true
	for _, e := range errs {
		if e == nil {
			continue
		}
		em, ok := e.(map[string]any)
		if !ok {
			return Status{}, false
		}
		code := 0
		if em["code"] != nil {
			n, ok := em["code"].(json.Number)
			if !ok {
				return Status{}, false
			}
			c, err := strconv.ParseInt(string(n), 10, 64)
			if err != nil || int64(int(c)) != c {
				return Status{}, false
			}
			code = int(c)
		}
		title, ok := optString(em["title"])
		if !ok {
			return Status{}, false
		}
		if first {
			st.ErrorCode, st.ErrorTitle, first = code, title, false
		}
	}
	return st, true
}

// refPricing: an object whose category and type are strings and billable a
// boolean, each optional; anything else is no pricing.
func refPricing(v any) Pricing {
	m, ok := v.(map[string]any)
	if !ok {
		return Pricing{}
	}
	var p Pricing
	var ok1, ok2 bool
	p.Category, ok1 = optString(m["category"])
	p.Type, ok2 = optString(m["type"])
	if !ok1 || !ok2 {
		return Pricing{}
	}
	switch b := m["billable"].(type) {
	case nil:
	case bool:
		p.Billable, p.HasBillable = b, true
	default:
		return Pricing{}
	}
	return p
}

// refTime: unix seconds as a string of digits or a JSON integer, up to
// year 9999.
func refTime(v any) (time.Time, bool) {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case json.Number:
		s = string(v)
	default:
		return time.Time{}, false
	}
	if s == "" || s[0] < '0' || s[0] > '9' { // ParseUint would take "+1"
		return time.Time{}, false
	}
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil || u > 253402300799 {
		return time.Time{}, false
	}
	return time.Unix(int64(u), 0).UTC(), true
}

func optString(v any) (string, bool) {
	if v == nil {
		return "", true
	}
	s, ok := v.(string)
	return s, ok
}

func optArray(v any) ([]any, bool) {
	if v == nil {
		return nil, true
	}
	a, ok := v.([]any)
	return a, ok
}
