package sandbox

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// talkback is one thing a recipient sends back after a message reached
// them: a text reply, a tap of one of its template's quick-reply buttons,
// or a stop of marketing messages (Meta's user_preferences webhook).
type talkback struct {
	kind    backKind
	id      string // the incoming message's wamid (reply, tap)
	text    string // the reply's body, the button's label
	payload string // the button's payload
	name    string // the recipient's profile name, in contacts
}

type backKind int

const (
	backText backKind = iota
	backButton
	backPreference
)

// The texts recipients reply with. Stop keywords come in the forms
// people type them: any case, with words around, in other languages.
var (
	replyTexts   = []string{"Thanks!", "what time do you open?", "Is this still on?", "Ok 👍", "Can I change my delivery address?", "Who is this?"}
	stopTexts    = []string{"STOP", "stop please", "Unsubscribe", "PARAR", "désabonner"}
	profileNames = []string{"Maria Silva", "Sheena Nelson", "Zoë Dubois", "Ahmed Khan", "Li Wei", "João Pereira"}
)

// optOutLabel is the label of a marketing template's opt-out button as
// GET message_templates lists it (a QUICK_REPLY), and the payload its tap
// arrives with.
const optOutLabel = "Stop promotions"

// pick is the element of list that a uniform draw u in [0, 1) selects.
func pick[T any](list []T, u float64) T { return list[min(int(u*float64(len(list))), len(list)-1)] }

// answers returns what the recipient of an accepted message sends back
// (its fate's talk), each an event timed ReplyDelay after the message's
// last status, and counts them in Stats. Only a delivered message is
// answered; a button is tapped only where the template has one: any
// quick-reply button but the opt-out for ButtonRate, the opt-out of a
// marketing template for StopPromotionsRate. A stop of marketing is
// remembered from its time on: later marketing sends to the recipient
// fail 131050.
func (s *Server) answers(req sendRequest, tmpl Template, waID string, at time.Time, ft fate) []event {
	t := ft.talk
	if ft.failCode != 0 || !(t.reply || t.tap || t.optOut || t.prefStop) {
		return nil
	}
	_, done, read := s.times(at, ft)
	last := done
	if ft.read {
		last = read
	}
	name := pick(profileNames, t.nameDraw)
	var out []event
	add := func(b talkback, u float64) {
		b.name = name
		if b.kind != backPreference {
			b.id = s.wamid(waID)
		}
		out = append(out, event{at: last.Add(s.replyDelay.at(u)), back: &b})
	}
	if t.reply {
		s.stats.replies.Add(1)
		text := pick(replyTexts, t.textDraw)
		if t.stopWord {
			s.stats.stops.Add(1)
			text = pick(stopTexts, t.textDraw)
		}
		add(talkback{kind: backText, text: text}, t.replyDraw)
	}
	if t.tap || t.optOut {
		optOut, others := s.quickReplies(req, tmpl)
		if t.tap && len(others) > 0 {
			s.stats.taps.Add(1)
			b := pick(others, t.tapWhich)
			add(talkback{kind: backButton, text: b.Text, payload: b.Payload}, t.tapDraw)
		}
		if t.optOut && optOut {
			s.stats.taps.Add(1)
			s.stats.optOuts.Add(1)
			add(talkback{kind: backButton, text: optOutLabel, payload: optOutLabel}, t.optOutDraw)
		}
	}
	if t.prefStop {
		s.stats.prefStops.Add(1)
		add(talkback{kind: backPreference}, t.prefDraw)
		s.stopMarketing(waID, out[len(out)-1].at)
	}
	return out
}

// quickReplies reads the quick-reply buttons of the template a send
// names: whether it is a marketing template with the opt-out button, and
// its other quick-reply buttons, each with the payload the send gave it
// or, without one, its label (as Meta reports a tap).
func (s *Server) quickReplies(req sendRequest, tmpl Template) (optOut bool, others []whButton) {
	d, ok := s.definition(req.Template.Name, req.Template.Language.Code)
	if !ok {
		return false, nil
	}
	payloads := sentPayloads(req.Template.Components)
	marketing := strings.EqualFold(tmpl.Category, "marketing")
	for i, b := range d.Buttons() {
		if d.ButtonNeeds(i) != "payload" {
			continue
		}
		if marketing && isOptOut(b) {
			optOut = true
			continue
		}
		p := payloads[i]
		if p == "" {
			p = b.Text
		}
		others = append(others, whButton{Payload: p, Text: b.Text})
	}
	return optOut, others
}

// isOptOut reports whether b is a marketing template's opt-out button.
func isOptOut(b template.Button) bool {
	return strings.EqualFold(b.Type, "QUICK_REPLY") && strings.EqualFold(strings.TrimSpace(b.Text), optOutLabel)
}

// sentPayloads are the quick-reply payloads a send gave, by button index.
// The send was checked already: what does not parse is passed over.
func sentPayloads(cs []sendComponent) map[int]string {
	out := map[int]string{}
	for n, c := range cs {
		if !strings.EqualFold(c.Type, "button") {
			continue
		}
		sub, f := subType(n, c.SubType)
		i, ok := buttonIndex(c.Index)
		if f.code != 0 || sub != "quick_reply" || !ok || len(c.Parameters) != 1 {
			continue
		}
		if ps, f := decodeParams("", c.Parameters); f.code == 0 {
			out[i] = ps[0].Payload
		}
	}
	return out
}

// stopMarketing records that waID stops marketing messages at t; an
// earlier stop stands.
func (s *Server) stopMarketing(waID string, t time.Time) {
	s.stopMu.Lock()
	defer s.stopMu.Unlock()
	if old, ok := s.stopped[waID]; !ok || t.Before(old) {
		s.stopped[waID] = t
	}
}

// stoppedBy reports whether waID had stopped marketing messages by t.
func (s *Server) stoppedBy(waID string, t time.Time) bool {
	s.stopMu.Lock()
	defer s.stopMu.Unlock()
	at, ok := s.stopped[waID]
	return ok && !at.After(t)
}

// backBody serialises what the recipient sent back as Meta's webhook POST
// body, stamped stamp: a messages change (a text, or a button reply in
// the context of the message it answers) or a user_preferences change,
// both with the recipient's contact. Non-ASCII characters are escaped
// (\u00e9), as Meta writes them and signs them.
func (p *plan) backBody(b *talkback, stamp time.Time, wabaID string) []byte {
	v := whValue{
		MessagingProduct: "whatsapp",
		Metadata:         whMetadata{DisplayPhoneNumber: p.num.display, PhoneNumberID: p.num.id},
		Contacts:         []whContact{{Profile: whProfile{Name: b.name}, WaID: p.waID}},
	}
	field := "messages"
	m := whMessage{From: p.waID, ID: b.id, Timestamp: strconv.FormatInt(stamp.Unix(), 10)}
	switch b.kind {
	case backText:
		m.Type, m.Text = "text", &whText{Body: b.text}
		v.Messages = []whMessage{m}
	case backButton:
		m.Type, m.Button = "button", &whButton{Payload: b.payload, Text: b.text}
		m.Context = &whContext{From: p.num.display, ID: p.wamid}
		v.Messages = []whMessage{m}
	case backPreference:
		field = "user_preferences"
		v.UserPreferences = []whPreference{{
			WaID: p.waID, Detail: "User requested to stop marketing messages",
			Category: "marketing_messages", Value: "stop", Timestamp: stamp.Unix(),
		}}
	}
	body, _ := json.Marshal(webhookBody{
		Object: "whatsapp_business_account",
		Entry:  []whEntry{{ID: wabaID, Changes: []whChange{{Field: field, Value: v}}}},
	})
	return escapeUnicode(body)
}

// escapeUnicode rewrites the non-ASCII characters of JSON text b as \u
// escapes (UTF-16 surrogate pairs beyond the BMP), which changes no
// decoded value: json.Marshal escapes only what it must.
func escapeUnicode(b []byte) []byte {
	out := make([]byte, 0, len(b)+16)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r < utf8.RuneSelf:
			out = append(out, b[0])
		case r > 0xffff:
			r -= 0x10000
			out = appendU(appendU(out, 0xd800+(r>>10)), 0xdc00+(r&0x3ff))
		default:
			out = appendU(out, r)
		}
		b = b[n:]
	}
	return out
}

func appendU(b []byte, r rune) []byte {
	b = append(b, `\u`...)
	for i := 3; i >= 0; i-- {
		b = append(b, "0123456789abcdef"[r>>(4*i)&0xf])
	}
	return b
}
