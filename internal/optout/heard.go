package optout

import "time"

// Action is what something a recipient did does to their opt-out.
type Action uint8

const (
	Keep          Action = iota // nothing: an ordinary reply, a HELP
	StopAll                     // stop every message from this business (a stop keyword)
	StopMarketing               // stop marketing messages (a "Stop promotions" tap, a user_preferences stop)
	LiftAll                     // messages may come again (START)
	LiftMarketing               // marketing messages may come again (a user_preferences resume)
)

// Heard is what a recipient sent back, in any channel, made plain: a
// reply or a tap (recorded on the row it answers), or a change of their
// preferences; and what it does to their opt-out.
type Heard struct {
	Channel   string    // "whatsapp", "sms"
	Phone     string    // E.164
	Sender    string    // the business number it reached
	At        time.Time // when the recipient sent it
	MessageID string    // the business message it answers, when the provider says
	Text      string    // what it said: the text, or the tapped button's label
	Reply     bool      // a message or a tap, not a preference change
	Action    Action
	Source    string // how, for the ledger's record: "reply STOP", "button Stop promotions", "user_preferences stop"
}

// OfText is what a reply's text does: a stop keyword stops everything, a
// START lifts it. source names it for the ledger ("reply STOP").
func (k Keywords) OfText(text string) (a Action, source string) {
	switch k.Classify(text) {
	case Stop:
		return StopAll, "reply " + clipSource(text)
	case Start:
		return LiftAll, "reply " + clipSource(text)
	}
	return Keep, ""
}

// stopPromotions are the labels of WhatsApp's marketing opt-out button
// (a template's "Stop promotions" quick reply), which arrives with its
// label, localised, as its payload.
var stopPromotions = set(
	"stop promotions", "parar promocoes", "detener promociones", "dejar de recibir promociones",
	"arreter les promotions", "promotionen stoppen", "interrompi promozioni", "stop promoties",
	"hentikan promosi", "promosyonlari durdur", "stop promosi",
)

// IsStopPromotions reports whether a tapped button is the marketing
// opt-out, by its label or payload, in the languages WhatsApp shows it in.
func IsStopPromotions(label string) bool { return stopPromotions[Normalize(label)] }

// clipSource keeps a ledger's "how" short: a keyword, not a paragraph.
func clipSource(text string) string {
	const max = 40
	if r := []rune(text); len(r) > max {
		return string(r[:max]) + "…"
	}
	return text
}
