package smsevent

import (
	"math"
	"strings"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/reconcile"
)

// Statuses returns r as the source of statuses that reconcile reads: one
// status per event, mapped as the package comment's table says.
func Statuses(r *Reader) reconcile.Source { return source{r} }

type source struct{ r *Reader }

func (s source) Next() (reconcile.Status, error) {
	ev, err := s.r.Next()
	if err != nil {
		return reconcile.Status{}, err
	}
	return ev.status(), nil
}

func (s source) Counts() reconcile.SourceCounts {
	c := s.r.Counts()
	return reconcile.SourceCounts{Statuses: c.Events, Invalid: c.Invalid, NotStatus: c.NotEvent, FirstInvalid: c.FirstInvalid}
}

// outcome is what an event type says of a message: its status, and for a
// failure its reason (the type without "TEXT_", lowercased).
type outcome struct {
	status campaign.Status
	reason string
}

// outcomes are the event types with another outcome than sent.
var outcomes = func() map[string]outcome {
	m := map[string]outcome{
		"TEXT_DELIVERED":  {status: campaign.Delivered},
		"TEXT_SUCCESSFUL": {status: campaign.Delivered},
	}
	for _, t := range []string{
		"TEXT_BLOCKED", "TEXT_CARRIER_BLOCKED", "TEXT_SPAM", "TEXT_PROTECT_BLOCKED",
		"TEXT_TTL_EXPIRED", "TEXT_CARRIER_UNREACHABLE", "TEXT_UNREACHABLE",
		"TEXT_INVALID", "TEXT_INVALID_MESSAGE",
	} {
		m[t] = outcome{campaign.Failed, failReason(t)}
	}
	return m
}()

func failReason(eventType string) string {
	return strings.ToLower(strings.TrimPrefix(eventType, "TEXT_"))
}

// unknown is the type AWS gives a message whose carrier said nothing
// within 72 hours; with isFinal it is a failure.
const unknown = "TEXT_UNKNOWN"

// status is ev as reconcile reads it.
func (ev Event) status() reconcile.Status {
	o, ok := outcomes[ev.Type]
	if !ok {
		o.status = campaign.Sent // queued, pending, sent, and types not known here
		if ev.Type == unknown && ev.IsFinal {
			o = outcome{campaign.Failed, failReason(unknown)}
		}
	}
	s := reconcile.Status{
		MessageID: ev.MessageID,
		Status:    string(o.status),
		Timestamp: ev.Timestamp,
		Sender:    ev.Origination,
	}
	// What was billed only from a final event (or a delivered or failed
	// one): a reconcile keeps a row's first pricing, and an event on the
	// way (queued, pending) may not carry the final figures yet.
	final := ev.IsFinal || o.status != campaign.Sent
	if final {
		s.Price.Parts = ev.Parts
	}
	s.Ref, _ = campaign.ParseRefKey(ev.Bulksend)
	if o.status == campaign.Failed {
		s.ErrorTitle, s.ErrorReason = ev.Type, o.reason
		if ev.StatusDescription != "" {
			s.ErrorTitle += ": " + ev.StatusDescription
		}
	}
	if ev.HasPrice && final {
		c := charge(ev.Price, ev.CarrierFee)
		s.Price.Charge = &c
	}
	return s
}

// charge is price plus fee, rounded to a billionth of a dollar so that a
// sum of prices given to five places shows as such (0.00581 + 0.00266 is
// 0.00847, not 0.008470000000000001). Both are below maxPrice.
func charge(price, fee float64) float64 {
	return math.Round((price+fee)*1e9) / 1e9
}
