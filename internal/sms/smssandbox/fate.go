package smssandbox

import (
	"maps"
	"slices"
	"time"

	"github.com/bulksend/bulksend/internal/fake"
)

// outcome is what becomes of a send that passed validation, ThrottleAlways
// and the budget.
type outcome int

const (
	accepted      outcome = iota
	late                  // accepted, the answer held back LateDelay
	throttled             // ThrottleRate: other traffic on the number
	internalSent          // InternalServerException, yet the message went out
	internalEaten         // InternalServerException, nothing sent
)

// sent reports whether the message goes out: it charges the budget and
// gets an event.
func (o outcome) sent() bool { return o == accepted || o == late || o == internalSent }

// failures are the final events FailRate draws from.
var failures = []string{
	"TEXT_CARRIER_UNREACHABLE",
	"TEXT_BLOCKED",
	"TEXT_SPAM",
	"TEXT_INVALID",
	"TEXT_TTL_EXPIRED",
}

// fate is everything random about one attempt, drawn at once from a hash of
// (seed, destination, context, attempt). It depends on nothing else, so
// concurrency and the order of unrelated requests cannot change it.
type fate struct {
	outcome outcome
	event   string        // the final event type of a sent message
	after   time.Duration // from acceptance to the final event
	reply   string        // what the recipient replies to a delivered message; "" for no reply
	// replyAfter is from the final event to the reply.
	replyAfter time.Duration
}

// stopReplies are the stop keywords StopRate draws from: AWS's own and
// the forms a recipient types (lower case, with a word of courtesy, the
// French one AWS honours in Canada).
var stopReplies = []string{"STOP", "stop", "UNSUBSCRIBE", "Stop please", "ARRET"}

// helpReply is what HelpRate draws.
const helpReply = "HELP"

// freeReplies are the ordinary replies, none of them a keyword.
var freeReplies = []string{
	"Thanks!",
	"What time does the sale end?",
	"Can I still use last month's code?",
	"Who is this?",
	"ok see you there",
}

// rates are the fractions fate draws against, from Config.
type rates struct {
	throttle, internal, late, fail float64
	eventDelay                     time.Duration
	reply, stop, help              float64
	replyDelay                     time.Duration
}

// draw computes the fate of attempt n (1-based) to dest with context ctx.
// ThrottleRate, InternalRate and LateRate partition one draw, so their sum
// should not exceed 1.
func draw(seed int64, dest string, ctx map[string]string, n int, r rates) fate {
	u := fake.Draws(seed, []string{dest, contextKey(ctx)}, n)

	var f fate
	switch x := u(0); {
	case x < r.throttle:
		f.outcome = throttled
		return f
	case x < r.throttle+r.internal:
		f.outcome = internalEaten
		if u(1) < 0.5 {
			f.outcome = internalSent
		}
	case x < r.throttle+r.internal+r.late:
		f.outcome = late
	}
	f.event = "TEXT_DELIVERED"
	if u(2) < r.fail {
		f.event = failures[int(u(3)*float64(len(failures)))]
	}
	// Mean eventDelay, from half to one and a half of it.
	f.after = time.Duration((0.5 + u(4)) * float64(r.eventDelay))
	// Draws 5 on are the reply's, after the others: a reply rate changes
	// no send's outcome or event.
	if f.event == "TEXT_DELIVERED" && u(5) < r.reply {
		switch x := u(6); {
		case x < r.stop:
			f.reply = pick(stopReplies, u(7))
		case x < r.stop+r.help:
			f.reply = helpReply
		default:
			f.reply = pick(freeReplies, u(7))
		}
		f.replyAfter = time.Duration((0.5 + u(8)) * float64(r.replyDelay))
	}
	return f
}

// pick is the element of list a uniform x in [0, 1) falls on.
func pick(list []string, x float64) string { return list[int(x*float64(len(list)))] }

// contextKey is ctx in a canonical form: keys sorted, NUL-separated.
func contextKey(ctx map[string]string) string {
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(ctx)) {
		b = append(b, k...)
		b = append(b, 0)
		b = append(b, ctx[k]...)
		b = append(b, 0)
	}
	return string(b)
}

// stream returns independent uniform numbers in [0, 1) derived from h: u(i)
// is a splitmix64 step away from h, so adding a draw never shifts the others.
