package sandbox

import (
	"time"

	"github.com/bulksend/bulksend/internal/fake"
)

// outcome is what the sandbox answers to a request that passed validation
// and the rate limits.
type outcome int

const (
	accepted  outcome = iota
	late              // accepted, but the answer is held back for LateDelay
	transient         // 131000, 131016 or a bare code 2; nothing is sent
	permanent         // 131026; nothing is sent
)

// fate is everything random about one request, drawn at once from a hash of
// (seed, to, biz_opaque_callback_data, attempt). Because it depends on nothing
// else, concurrency and the order of unrelated requests cannot change it.
type fate struct {
	outcome   outcome
	transient failure // when outcome == transient

	failCode  int  // != 0: the webhooks end in failed with this code
	sentFirst bool // a failed message got a sent status first
	read      bool // delivered messages: also read

	held     bool // answered held_for_quality_assessment
	heldFail bool // held, then dropped: failed 132015 and nothing else
	capped   bool // a marketing message failed 131049 by the per-user cap

	reorder   bool // one status arrives after the status that follows it
	duplicate int  // >= 0: index of a status delivered twice; -1 none

	// timing: uniform draws in [0, 1) that Config's delays scale (see
	// Delay.at), so the same seed gives the same times too
	sentDraw, deliveredDraw, readDraw float64
	holdDraw                          float64 // a held message's assessment, of holdMax
	lateWhich, lateDraw               float64 // which status arrives late, and how late
	dupDraw                           float64 // how much later the duplicate arrives

	talk talk // what the recipient answers, if the message is delivered
}

// talk is what a recipient does back after a message reached them, drawn
// with its fate; whether the template offers a button to tap is known
// only when the message is accepted (see Server.answers). Each kind is
// drawn on its own: a recipient may reply and also stop marketing.
type talk struct {
	reply    bool    // a text reply
	stopWord bool    // the reply is a stop keyword
	textDraw float64 // which text
	tap      bool    // taps one of the template's quick-reply buttons
	tapWhich float64 // which of them
	optOut   bool    // taps the marketing opt-out button, if it has one
	prefStop bool    // stops marketing messages in WhatsApp
	nameDraw float64 // the profile name in contacts
	// when each comes after the message's last status, of Config.ReplyDelay
	replyDraw, tapDraw, optOutDraw, prefDraw float64
}

// rates are the fractions fate draws against, from Config.
type rates struct {
	transient, permanent, late, fail, read, duplicate, reorder float64
	held, heldFail, capped                                     float64
	reply, stop, button, stopPromotions, prefStop              float64
}

// talks reports whether any recipient talks back.
func (r rates) talks() bool {
	return r.reply > 0 || r.button > 0 || r.stopPromotions > 0 || r.prefStop > 0
}

// draw computes the fate of attempt n (1-based) of the message keyed by
// (to, cbd), a template of category (lower case): authentication templates
// are never held (Meta paces marketing and utility templates), and only
// marketing templates meet the per-user marketing cap.
func draw(seed int64, to, cbd string, n int, r rates, category string) fate {
	u := fake.Draws(seed, []string{to, cbd}, n)

	var f fate
	switch x := u(0); {
	case x < r.transient:
		f.outcome = transient
		switch k := u(1); {
		case k < 1.0/3:
			f.transient = errUnknown
		case k < 2.0/3:
			f.transient = errUnavailable
			if u(2) < 0.5 {
				f.transient.status = 503
			}
		default:
			f.transient = errService
		}
		return f
	case x < r.transient+r.permanent:
		f.outcome = permanent
		return f
	case x < r.transient+r.permanent+r.late:
		f.outcome = late
	default:
		f.outcome = accepted
	}
	f.duplicate = -1
	// Draws 12 and up came later: the earlier ones keep their meaning, so
	// a Config without the newer rates replays as before.
	f.held = category != "authentication" && u(12) < r.held
	f.heldFail = f.held && u(13) < r.heldFail
	f.capped = category == "marketing" && u(15) < r.capped
	switch {
	case f.heldFail:
		f.failCode = codePaused
	case f.capped:
		f.failCode = codeEngagement
		f.sentFirst = true
	case u(3) < r.fail:
		f.failCode = codeEngagement
		if u(4) < 0.5 {
			f.failCode = codeUndeliverable
			f.sentFirst = true
		}
	default:
		f.read = u(5) < r.read
	}
	if u(6) < r.duplicate {
		f.duplicate = int(u(7) * 3) // clamped to the statuses present later
	}
	f.reorder = u(8) < r.reorder
	f.sentDraw, f.deliveredDraw, f.readDraw = u(9), u(10), u(11)
	if f.held {
		f.holdDraw = u(14)
	}
	f.lateWhich, f.lateDraw, f.dupDraw = u(16), u(17), u(18)
	if f.failCode == 0 && r.talks() {
		// Draws 19 and up: what the recipient answers. Only a delivered
		// message is answered.
		f.talk = talk{
			reply: u(19) < r.reply, stopWord: u(20) < r.stop, textDraw: u(21), replyDraw: u(22),
			tap: u(23) < r.button, tapWhich: u(24), tapDraw: u(25),
			optOut: u(26) < r.stopPromotions, optOutDraw: u(27),
			prefStop: u(28) < r.prefStop, prefDraw: u(29), nameDraw: u(30),
		}
	}
	return f
}

// holdMax bounds a held message's quality assessment: Meta decides within
// an hour (99th percentile), the sandbox within ten minutes.
const holdMax = 10 * time.Minute

// stream returns independent uniform numbers in [0, 1) derived from h: u(i)
// is a splitmix64 step away from h, so adding a draw never shifts the others.
// usMarketing makes f the fate of a marketing message to a US number:
// accepted, sent, then failed 131049, whatever else was drawn.
func (f *fate) usMarketing() {
	if f.outcome != accepted && f.outcome != late {
		return
	}
	f.held, f.heldFail, f.read = false, false, false
	f.capped, f.failCode, f.sentFirst = true, codeEngagement, true
	f.talk = talk{}
}

// stoppedMarketing makes f the fate of a marketing message to a recipient
// who stopped marketing messages from the business: accepted, then failed
// 131050 and nothing else, whatever else was drawn.
func (f *fate) stoppedMarketing() {
	if f.outcome != accepted && f.outcome != late {
		return
	}
	f.held, f.heldFail, f.read, f.capped, f.sentFirst = false, false, false, false, false
	f.failCode, f.talk = codeStoppedMarketing, talk{}
}
