package webhook

import (
	"cmp"
	"time"
)

// Inbound is a message a recipient sent to a business number: text, a tap
// of a template's quick-reply button (type "button": button.payload /
// button.text), an interactive reply (interactive.button_reply or
// list_reply: id / title), a reaction, or media and the rest (Type only).
type Inbound struct {
	MessageID     string    // messages[].id ("" if absent)
	From          string    // messages[].from: the sender's wa_id, digits; never empty
	PhoneNumberID string    // value.metadata.phone_number_id: the business number that received it
	Timestamp     time.Time // messages[].timestamp, in UTC; zero if absent or not unix seconds
	Type          string    // messages[].type: text, button, interactive, reaction, image, …
	Text          string    // text.body, button.text, the reply's title, the reaction's emoji; "" for media and the rest
	Payload       string    // button.payload, the interactive reply's id; "" otherwise
	Context       string    // context.id, the wamid of the business message it answers (for a reaction, the one reacted to); "" if none
	Line          int       // number of its body, as Status.Line
}

// Preference is one entry of a user_preferences change: a user stopped or
// resumed marketing messages from the business number.
type Preference struct {
	WAID          string    // user_preferences[].wa_id; never empty
	PhoneNumberID string    // value.metadata.phone_number_id
	Category      string    // user_preferences[].category, e.g. "marketing_messages"
	Value         string    // user_preferences[].value: "stop" or "resume" (as Meta sends it); never empty
	Timestamp     time.Time // user_preferences[].timestamp, in UTC; zero if absent or not unix seconds
	Line          int       // number of its body, as Status.Line
}

// TemplateUpdate is a message_template_status_update or
// message_template_quality_update change.
type TemplateUpdate struct {
	Name     string // value.message_template_name
	Language string // value.message_template_language
	Event    string // value.event (APPROVED, PAUSED, DISABLED, REJECTED, …), or for a quality update value.new_quality_score (GREEN, YELLOW, RED, UNKNOWN)
	Reason   string // value.reason ("" if absent or null)
	ID       string // value.message_template_id, the digits of Meta's integer
	Line     int    // number of its body, as Status.Line
}

// Other receives what a log holds besides statuses, as the Reader meets it:
// synchronously, from within Next, in log order, each body's before Next
// returns that body's statuses. A nil function leaves that kind unread
// (still counted). The functions must not call the Reader's Next.
type Other struct {
	Inbound    func(Inbound)
	Preference func(Preference)
	Template   func(TemplateUpdate)
}

// SetOther sets where the Reader hands what is not a status, from the next
// record it reads on.
func (r *Reader) SetOther(o Other) { r.other = o }

// deliver counts the kinds of a valid record's changes and hands its other
// content to r.other.
func (r *Reader) deliver() {
	sc := &r.sc
	for _, k := range sc.kinds {
		if k == kindStatuses {
			r.statusChanges++ // most changes: no map on the status path
			continue
		}
		if r.counts.Kinds == nil {
			r.counts.Kinds = make(map[string]int64)
		}
		r.counts.Kinds[k]++
	}
	r.counts.Dropped += sc.dropped
	for i := range sc.others {
		switch it := &sc.others[i]; it.what {
		case itemInbound:
			if r.other.Inbound != nil {
				r.other.Inbound(it.in)
			}
		case itemPreference:
			if r.other.Preference != nil {
				r.other.Preference(it.pref)
			}
		case itemTemplate:
			if r.other.Template != nil {
				r.other.Template(it.tmpl)
			}
		}
	}
	sc.others, sc.kinds, sc.dropped = sc.others[:0], sc.kinds[:0], 0
}

// kindStatuses is the kind of a change that holds statuses and no inbound
// message, whatever its field.
const kindStatuses = "statuses"

type itemKind uint8

const (
	itemInbound itemKind = iota + 1
	itemPreference
	itemTemplate
)

// item is one thing a record holds besides statuses.
type item struct {
	what itemKind
	in   Inbound
	pref Preference
	tmpl TemplateUpdate
}

// otherValue is what a change's value holds that its change decides on
// once it has read the field too (which may come before or after it).
type otherValue struct {
	messages                  bool  // value.messages held a message, handed out or dropped
	droppedMsgs, droppedPrefs int64 // of the last messages and user_preferences members

	event, name, language, reason, id, quality string // a template update's
}

// otherMember decodes a member of a change's value, with key k, that is
// not statuses or metadata. Nothing here makes a record invalid: a part of
// the wrong shape is dropped (counted) or read as absent.
func (s *scanner) otherMember(k []byte, base mark, v *otherValue) {
	switch string(k) {
	case "messages":
		s.others = s.others[:base.others] // only messages add to others before endValue
		v.messages, v.droppedMsgs = s.messages()
	case "user_preferences":
		s.prefs = s.prefs[:0]
		v.droppedPrefs = s.preferences()
	case "event":
		v.event = s.loose()
	case "message_template_name":
		v.name = s.loose()
	case "message_template_language":
		v.language = s.loose()
	case "message_template_id":
		v.id = s.loose()
	case "reason":
		v.reason = s.loose()
	case "new_quality_score":
		v.quality = s.loose()
	default:
		s.skip()
	}
}

// endValue finishes a value that started at base: its messages and
// preferences get its phone_number_id, and its preferences follow its
// messages.
func (s *scanner) endValue(base mark, pnid string, v *otherValue) {
	for i := base.others; i < len(s.others); i++ {
		s.others[i].in.PhoneNumberID = pnid
	}
	for _, p := range s.prefs {
		p.PhoneNumberID = pnid
		s.others = append(s.others, item{what: itemPreference, pref: p})
	}
	s.prefs = s.prefs[:0]
	s.dropped += v.droppedMsgs + v.droppedPrefs
}

// endChange notes the kind of a change that started at base, and its
// template update if it is one.
func (s *scanner) endChange(base mark, field string, v *otherValue) {
	kind := field
	switch {
	case v.messages:
		kind = "messages"
	case len(s.out) > base.out:
		kind = kindStatuses
	}
	s.kinds = append(s.kinds, kind)
	switch field {
	case "message_template_status_update", "message_template_quality_update":
		t := TemplateUpdate{Name: v.name, Language: v.language, Event: cmp.Or(v.event, v.quality), Reason: v.reason, ID: v.id, Line: s.line}
		if t.Name == "" && t.ID == "" {
			s.dropped++
			return
		}
		s.others = append(s.others, item{what: itemTemplate, tmpl: t})
	}
}

// fields are the change fields Meta documents, so that naming a change's
// kind costs no allocation.
var fields = []string{
	"messages", "user_preferences", "message_template_status_update", "message_template_quality_update",
	"message_template_components_update", "template_category_update", "phone_number_quality_update",
	"phone_number_name_update", "account_update", "account_alerts", "account_review_update",
	"business_capability_update", "security", "history", "smb_message_echoes", "smb_app_state_sync",
	"partner_solutions", "payment_configuration_update", "automatic_events", "flows",
	"group_lifecycle_update", "group_participants_update", "group_settings_update", "group_status_update",
}

// field decodes a change's field: "" if it is not a string.
func (s *scanner) field() string {
	if s.peek() != '"' {
		s.skip()
		return ""
	}
	raw, esc := s.str()
	if esc {
		raw = s.unquote(raw)
	}
	for _, f := range fields {
		if string(raw) == f {
			return f
		}
	}
	return string(raw)
}

// loose decodes a member read as it comes: a string, or the text of a
// number (Meta writes IDs both ways); anything else is "".
func (s *scanner) loose() string {
	switch c := s.peek(); {
	case c == '"':
		return s.text()
	case c == '-' || '0' <= c && c <= '9':
		return string(s.number())
	}
	s.skip()
	return ""
}

// each calls fn with the key of each member of the object that comes next;
// fn must consume the member's value. Anything but an object is skipped.
func (s *scanner) each(fn func(k []byte)) {
	if s.peek() != '{' {
		s.skip()
		return
	}
	s.enter()
	for more := s.first('}'); more; more = s.next('}') {
		k := s.key()
		if s.syntax {
			return
		}
		fn(k)
	}
}

// messages decodes value.messages into s.others. held says whether it held
// a message (handed out or dropped).
func (s *scanner) messages() (held bool, dropped int64) {
	switch s.peek() {
	case 'n':
		s.null()
		return false, 0
	case '[':
	default:
		s.skip()
		return true, 1
	}
	s.enter()
	for more := s.first(']'); more; more = s.next(']') {
		if s.peek() == 'n' {
			s.null()
			continue
		}
		held = true
		in, ok := s.message()
		if !ok {
			dropped++
			continue
		}
		s.others = append(s.others, item{what: itemInbound, in: in})
	}
	return held, dropped
}

// message decodes one messages[] element; ok is false for one that is not
// an object with a non-empty from.
func (s *scanner) message() (in Inbound, ok bool) {
	if s.peek() != '{' {
		s.skip()
		return in, false
	}
	var body, btnText, btnPayload, iType, ctx, emoji, reacted string
	var button, list reply
	s.each(func(k []byte) {
		switch string(k) {
		case "id":
			in.MessageID = s.loose()
		case "from":
			in.From = s.loose()
		case "timestamp":
			in.Timestamp, _ = s.timestamp()
		case "type":
			in.Type = s.loose()
		case "text":
			body = ""
			s.each(func(k []byte) {
				if string(k) == "body" {
					body = s.loose()
					return
				}
				s.skip()
			})
		case "button":
			btnText, btnPayload = "", ""
			s.each(func(k []byte) {
				switch string(k) {
				case "text":
					btnText = s.loose()
				case "payload":
					btnPayload = s.loose()
				default:
					s.skip()
				}
			})
		case "interactive":
			iType, button, list = "", reply{}, reply{}
			s.each(func(k []byte) {
				switch string(k) {
				case "type":
					iType = s.loose()
				case "button_reply":
					button = s.reply()
				case "list_reply":
					list = s.reply()
				default:
					s.skip()
				}
			})
		case "context":
			ctx = ""
			s.each(func(k []byte) {
				if string(k) == "id" {
					ctx = s.loose()
					return
				}
				s.skip()
			})
		case "reaction":
			emoji, reacted = "", ""
			s.each(func(k []byte) {
				switch string(k) {
				case "emoji":
					emoji = s.loose()
				case "message_id":
					reacted = s.loose()
				default:
					s.skip()
				}
			})
		default:
			s.skip()
		}
	})
	switch in.Type {
	case "text":
		in.Text = body
	case "button":
		in.Text, in.Payload = btnText, btnPayload
	case "interactive":
		r := button
		if iType == "list_reply" || iType != "button_reply" && button == (reply{}) {
			r = list
		}
		in.Text, in.Payload = r.title, r.id
	case "reaction":
		in.Text = emoji
		ctx = cmp.Or(ctx, reacted)
	}
	in.Context, in.Line = ctx, s.line
	return in, in.From != ""
}

// reply is an interactive button_reply or list_reply.
type reply struct{ id, title string }

func (s *scanner) reply() reply {
	var r reply
	s.each(func(k []byte) {
		switch string(k) {
		case "id":
			r.id = s.loose()
		case "title":
			r.title = s.loose()
		default:
			s.skip()
		}
	})
	return r
}

// preferences decodes value.user_preferences into s.prefs and returns how
// many entries it dropped: not an object with non-empty wa_id and value.
func (s *scanner) preferences() (dropped int64) {
	switch s.peek() {
	case 'n':
		s.null()
		return 0
	case '[':
	default:
		s.skip()
		return 1
	}
	s.enter()
	for more := s.first(']'); more; more = s.next(']') {
		switch s.peek() {
		case 'n':
			s.null()
			continue
		case '{':
		default:
			s.skip()
			dropped++
			continue
		}
		var p Preference
		s.each(func(k []byte) {
			switch string(k) {
			case "wa_id":
				p.WAID = s.loose()
			case "category":
				p.Category = s.loose()
			case "value":
				p.Value = s.loose()
			case "timestamp":
				p.Timestamp, _ = s.timestamp()
			default:
				s.skip()
			}
		})
		if p.WAID == "" || p.Value == "" {
			dropped++
			continue
		}
		p.Line = s.line
		s.prefs = append(s.prefs, p)
	}
	return dropped
}
