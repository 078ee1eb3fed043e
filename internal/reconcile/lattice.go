package reconcile

import (
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
)

// level is how far the statuses prove a message got. A row only ever
// moves up: it takes the highest level any status shows for it, so the
// order in which statuses arrive cannot matter.
type level uint8

const (
	unproven    level = iota // pending, sending, in doubt, or failed before the provider took it (no message ID)
	lvSent                   // Meta took it
	lvFailed                 // Meta took it, then failed to deliver it
	lvDelivered              // on the phone; beats a failed from another device
	lvRead                   // read, which implies delivered
)

// statusLevel is the level a webhook status value proves; ok is false for
// values reconcile ignores ("deleted", "warning", "played", …).
func statusLevel(s string) (l level, ok bool) {
	switch s {
	case "sent":
		return lvSent, true
	case "failed":
		return lvFailed, true
	case "delivered":
		return lvDelivered, true
	case "read":
		return lvRead, true
	}
	return unproven, false
}

// rowLevel is the level a stored row has reached. A failed row without a
// message ID failed before Meta took the message (synchronously, or by the
// in-doubt policy), so a status can still prove it went out.
func rowLevel(s Delivery) level {
	switch s.Status {
	case campaign.Sent:
		return lvSent
	case campaign.Failed:
		if s.MessageID != "" {
			return lvFailed
		}
	case campaign.Delivered:
		return lvDelivered
	case campaign.Read:
		return lvRead
	}
	return unproven
}

var levelStatus = [...]campaign.Status{lvSent: campaign.Sent, lvFailed: campaign.Failed, lvDelivered: campaign.Delivered, lvRead: campaign.Read}

// failure is the error a failed status carries.
type failure struct {
	code   int
	title  string
	reason string // a stable failure name (campaign.FailMarketingCap), "" for none
}

// noDetails is the title of a failed status that came without errors[].
const noDetails = "failed (status webhook without error details)"

// less orders failures so that one of several is chosen whatever the
// order they came in: a failure with a code before one without, then by
// code, then by title, then one with a reason before one without, then by
// reason.
func (f failure) less(g failure) bool {
	if (f.code == 0) != (g.code == 0) {
		return f.code != 0
	}
	if f.code != g.code {
		return f.code < g.code
	}
	if f.title != g.title {
		return f.title < g.title
	}
	if (f.reason == "") != (g.reason == "") {
		return f.reason != ""
	}
	return f.reason < g.reason
}

// failureOf is the failure a row holds.
func failureOf(s *Delivery) failure { return failure{s.Code, s.Title, s.Reason} }

// price is a status's campaign.Pricing in a comparable form (a *bool
// would compare by address).
type price struct {
	category, typ string
	billable      int8 // 0 not said, 1 false, 2 true
	parts         int
	charge        float64
	charged       bool // charge is said
}

// priceOf is p as a price.
func priceOf(p campaign.Pricing) price {
	v := price{category: p.Category, typ: p.Type, parts: p.Parts}
	if p.Charge != nil {
		v.charge, v.charged = *p.Charge, true
	}
	if p.Billable != nil {
		v.billable = 1
		if *p.Billable {
			v.billable = 2
		}
	}
	return v
}

// prices interns the pricings of a batch's statuses: evidence holds a
// pointer, 8 bytes rather than 40, and equal pricings share one, so that
// evidence still compares with ==. Meta's pricings are a handful.
type prices map[price]*price

// intern returns the one *price equal to p's, nil for none.
func (t prices) intern(p campaign.Pricing) *price {
	if unpriced(p) {
		return nil
	}
	v := priceOf(p)
	if q, ok := t[v]; ok {
		return q
	}
	q := &v
	t[v] = q
	return q
}

// less orders prices of statuses with the same timestamp, so that the
// choice does not depend on their order.
func (p price) less(q price) bool {
	if p.category != q.category {
		return p.category < q.category
	}
	if p.typ != q.typ {
		return p.typ < q.typ
	}
	if p.billable != q.billable {
		return p.billable < q.billable
	}
	if p.parts != q.parts {
		return p.parts < q.parts
	}
	if p.charged != q.charged {
		return !p.charged
	}
	return p.charge < q.charge
}

// pricing is p as a campaign.Pricing, with a Billable of its own.
func (p price) pricing() campaign.Pricing {
	v := campaign.Pricing{Category: p.category, Type: p.typ, Parts: p.parts}
	if p.charged {
		c := p.charge
		v.Charge = &c
	}
	if p.billable != 0 {
		b := p.billable == 2
		v.Billable = &b
	}
	return v
}

// unpriced reports whether p says nothing: a row without pricing yet, a
// status without one.
func unpriced(p campaign.Pricing) bool { return p.Unpriced() }

// evidence is what a set of statuses proves about one row. Its zero value
// proves nothing. join merges two of them; it is commutative, associative
// and idempotent, so a row's evidence does not depend on the order or the
// repetition of its statuses.
type evidence struct {
	level level
	id    string // the smallest message ID seen
	// Earliest instant of each status, in Unix milliseconds, 0 if none. A
	// read counts as delivered too.
	sent, delivered, read int64
	fail                  failure // the least failure seen, if hasFail
	hasFail               bool
	// The pricing of the earliest status that carried one (the least of
	// those of that instant), nil if none, and that status's instant.
	price   *price
	priceAt int64
}

// proof returns the evidence of one status, its pricing interned in t; ok
// is false for status values reconcile ignores.
func proof(s *Status, t prices) (e evidence, ok bool) {
	e.level, ok = statusLevel(s.Status)
	if !ok {
		return e, false
	}
	e.id = s.MessageID
	ts := unixMS(s.Timestamp)
	if e.price = t.intern(s.Price); e.price != nil {
		e.priceAt = ts
	}
	switch e.level {
	case lvSent:
		e.sent = ts
	case lvFailed:
		code, title := s.ErrorCode, s.ErrorTitle
		if title == "" && code == 0 {
			title = noDetails
		}
		e.fail, e.hasFail = failure{code, title, s.ErrorReason}, true
	case lvDelivered:
		e.delivered = ts
	case lvRead:
		e.delivered, e.read = ts, ts
	}
	return e, true
}

func (e evidence) join(f evidence) evidence {
	e.level = max(e.level, f.level)
	e.id = minID(e.id, f.id)
	e.sent = earliest(e.sent, f.sent)
	e.delivered = earliest(e.delivered, f.delivered)
	e.read = earliest(e.read, f.read)
	if f.hasFail && (!e.hasFail || f.fail.less(e.fail)) {
		e.fail, e.hasFail = f.fail, true
	}
	if f.price != nil && (e.price == nil || f.priceAt < e.priceAt || (f.priceAt == e.priceAt && f.price.less(*e.price))) {
		e.price, e.priceAt = f.price, f.priceAt
	}
	return e
}

// apply returns s with evidence e applied. Skipped rows never change, and
// nothing moves down: apply(apply(s, e), f) == apply(s, e.join(f)).
//
//   - The status becomes that of the higher of the row's level and e's.
//     When it goes up, the error code, title and reason are replaced:
//     cleared for sent, delivered and read, the webhook's for failed. A
//     row already failed by a webhook keeps the least of the failures
//     (see less).
//   - The message ID is the smallest of the row's and e's. A row with none
//     (in doubt, failed before Meta answered) gets the webhook's; only a
//     row that went out twice has two, and then the choice does not
//     depend on the order of the logs either.
//   - sent_at, delivered_at and read_at become the earliest instant known
//     for that status; a read is also a delivery.
//   - A row without pricing takes e's, that of the earliest status that
//     carried one; a row's pricing is never replaced. So the equation
//     above holds when e and f do not carry different pricings (Meta's
//     statuses carry one per message); when they do, the pricing a row
//     keeps depends on where the batches of a log end.
func apply(s Delivery, e evidence) Delivery {
	if s.Status == campaign.Skipped || e.level == unproven {
		return s
	}
	from := rowLevel(s)
	to := max(from, e.level)
	switch {
	case to > from && to == lvFailed:
		s.Status, s.Code, s.Title, s.Reason = campaign.Failed, e.fail.code, e.fail.title, e.fail.reason
	case to > from:
		s.Status, s.Code, s.Title, s.Reason = levelStatus[to], 0, "", ""
	case to == lvFailed && e.hasFail && e.fail.less(failureOf(&s)):
		s.Code, s.Title, s.Reason = e.fail.code, e.fail.title, e.fail.reason
	}
	if e.price != nil && unpriced(s.Price) {
		s.Price = e.price.pricing()
	}
	s.MessageID = minID(s.MessageID, e.id)
	s.SentAt = earliest(s.SentAt, e.sent)
	s.DeliveredAt = earliest(s.DeliveredAt, e.delivered)
	s.ReadAt = earliest(s.ReadAt, e.read)
	return s
}

// changes reports whether apply(*s, *e) != *s, without building the new
// state. It is for the evidence of a single status, whose failure is set
// only at lvFailed.
func changes(s *Delivery, e *evidence) bool {
	if s.Status == campaign.Skipped || e.level == unproven {
		return false
	}
	from := rowLevel(*s)
	switch {
	case e.level > from && levelStatus[e.level] != s.Status:
		return true
	case e.level > from && e.level == lvFailed:
		if e.fail != failureOf(s) {
			return true
		}
	case e.level > from:
		if s.Code != 0 || s.Title != "" || s.Reason != "" {
			return true
		}
	case from == lvFailed && e.level == lvFailed && e.hasFail && e.fail.less(failureOf(s)):
		return true
	}
	if e.price != nil && unpriced(s.Price) {
		return true
	}
	return minID(s.MessageID, e.id) != s.MessageID || earliest(s.SentAt, e.sent) != s.SentAt ||
		earliest(s.DeliveredAt, e.delivered) != s.DeliveredAt || earliest(s.ReadAt, e.read) != s.ReadAt
}

// minID is the smaller of two message IDs, "" meaning none.
func minID(a, b string) string {
	if a == "" || (b != "" && b < a) {
		return b
	}
	return a
}

// earliest is the earlier of two Unix-millisecond instants, 0 meaning none.
func earliest(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// unixMS is t in Unix milliseconds, the checkpoint's precision; 0 for the
// zero time.
func unixMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
