package channel

import (
	"strings"

	"github.com/bulksend/bulksend/internal/optout"
	"github.com/bulksend/bulksend/internal/whatsapp/webhook"
)

// Hearing turns what a webhook log holds besides statuses into what
// recipients said back (replies, taps, preference changes) for hear,
// which is called in log order. keywords are the stop and start words.
func Hearing(keywords optout.Keywords, hear func(optout.Heard)) webhook.Other {
	return webhook.Other{
		Inbound: func(in webhook.Inbound) {
			if h, ok := heardOfMessage(keywords, in); ok {
				hear(h)
			}
		},
		Preference: func(p webhook.Preference) {
			if h, ok := heardOfPreference(p); ok {
				hear(h)
			}
		},
	}
}

// heardOfMessage is an inbound message as heard: a reply (text, a tap, a
// reaction, media) recorded on the row it answers, which stops or lifts
// opt-outs when its text is a keyword or its button the marketing opt-out.
func heardOfMessage(k optout.Keywords, in webhook.Inbound) (optout.Heard, bool) {
	phone, ok := e164(in.From)
	if !ok {
		return optout.Heard{}, false
	}
	h := optout.Heard{Channel: "whatsapp", Phone: phone, Sender: in.PhoneNumberID, At: in.Timestamp,
		MessageID: in.Context, Text: in.Text, Reply: true}
	if h.Text == "" {
		h.Text = "(" + in.Type + ")"
	}
	switch in.Type {
	case "text":
		h.Action, h.Source = k.OfText(in.Text)
	case "button", "interactive":
		if optout.IsStopPromotions(in.Payload) || optout.IsStopPromotions(in.Text) {
			h.Action, h.Source = optout.StopMarketing, "button "+in.Text
		}
	}
	return h, true
}

// heardOfPreference is a user_preferences change: a stop or a resume of
// marketing messages.
func heardOfPreference(p webhook.Preference) (optout.Heard, bool) {
	phone, ok := e164(p.WAID)
	if !ok || !strings.HasPrefix(p.Category, "marketing") {
		return optout.Heard{}, false
	}
	h := optout.Heard{Channel: "whatsapp", Phone: phone, Sender: p.PhoneNumberID, At: p.Timestamp, Source: "user_preferences " + p.Value}
	switch p.Value {
	case "stop":
		h.Action = optout.StopMarketing
	case "resume":
		h.Action = optout.LiftMarketing
	default:
		return optout.Heard{}, false
	}
	return h, true
}

// e164 is a wa_id (the phone's digits) as E.164.
func e164(waID string) (string, bool) {
	waID = strings.TrimPrefix(waID, "+")
	if len(waID) < 7 || len(waID) > 15 {
		return "", false
	}
	for i := 0; i < len(waID); i++ {
		if waID[i] < '0' || waID[i] > '9' {
			return "", false
		}
	}
	return "+" + waID, true
}
