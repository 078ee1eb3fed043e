package reconcile

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
)

var kinds = []string{"sent", "delivered", "read", "failed", "deleted"}

// at is the instant n seconds after a fixed base.
func at(sec float64) time.Time { return time.UnixMilli(1750030000_000 + int64(sec*1000)) }

var yes, no = true, false

// pricings are the pricings statuses carry in these tests, the zero one
// (none) first.
var pricings = []campaign.Pricing{
	{},
	{Category: "marketing", Type: "regular", Billable: &yes},
	{Category: "marketing", Type: "regular"},
	{Category: "utility", Type: "free_customer_service", Billable: &no},
	{Billable: &no},
	// What SMS events say was billed: parts, and a charge (0 is a charge).
	{Parts: 2, Charge: &smsCharge},
	{Parts: 2, Charge: &zero},
	{Parts: 3},
}

var smsCharge, zero = 0.01743, 0.0

// randomEvidence is the evidence of a random status; its pricing is none
// or, if one is true, any, else pricings[1], the one pricing Meta gives all
// the statuses of a message.
func randomEvidence(r *rand.Rand, anyPrice bool) evidence {
	s := Status{
		Status: kinds[r.IntN(4)], MessageID: fmt.Sprintf("w%d", r.IntN(3)), Timestamp: at(float64(r.IntN(5))),
		ErrorCode: []int{0, 131026, 131049}[r.IntN(3)], ErrorTitle: []string{"", "a", "b"}[r.IntN(3)],
		ErrorReason: []string{"", "", campaign.FailMarketingCap}[r.IntN(3)],
	}
	if anyPrice {
		s.Price = pricings[r.IntN(len(pricings))]
	} else if r.IntN(2) == 0 {
		s.Price = pricings[1]
	}
	e, _ := proof(&s, testPrices)
	return e
}

// testPrices interns the pricings of the tests' evidence.
var testPrices = prices{}

func randomState(r *rand.Rand) Delivery {
	s := Delivery{Row: 1}
	s.Status = campaign.Statuses[r.IntN(len(campaign.Statuses))]
	if r.IntN(2) == 0 {
		s.MessageID = fmt.Sprintf("w%d", r.IntN(3))
	}
	if r.IntN(2) == 0 {
		s.Code, s.Title = 131049, "x"
		if r.IntN(2) == 0 {
			s.Reason = campaign.FailMarketingCap
		}
	}
	for _, t := range []*int64{&s.SentAt, &s.DeliveredAt, &s.ReadAt} {
		if r.IntN(2) == 0 {
			*t = at(float64(r.IntN(5))).UnixMilli()
		}
	}
	if r.IntN(3) == 0 {
		s.Price = pricings[r.IntN(len(pricings))]
	}
	return s
}

// same compares deliveries with their pricing's billable flag by value.
func same(a, b Delivery) bool {
	return priceOf(a.Price) == priceOf(b.Price) && clearPrice(a) == clearPrice(b)
}

func clearPrice(d Delivery) Delivery {
	d.Price = campaign.Pricing{}
	return d
}

// TestLattice checks the algebra the order independence rests on: join is
// commutative, associative and idempotent, and applying evidence in two
// steps is applying their join.
func TestLattice(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 100_000 {
		a, b, c := randomEvidence(r, true), randomEvidence(r, true), randomEvidence(r, true)
		if s := randomState(r); changes(&s, &a) != !same(apply(s, a), s) {
			t.Fatalf("%d: changes(%+v, %+v) = %v, apply gives %+v", i, s, a, changes(&s, &a), apply(s, a))
		}
		if a.join(b) != b.join(a) {
			t.Fatalf("%d: join not commutative: %+v %+v", i, a, b)
		}
		if a.join(b).join(c) != a.join(b.join(c)) {
			t.Fatalf("%d: join not associative: %+v %+v %+v", i, a, b, c)
		}
		if a.join(a) != a || a.join(evidence{}) != a {
			t.Fatalf("%d: join not idempotent: %+v", i, a)
		}
		// Applying in steps is applying the join when the statuses agree
		// on pricing, as Meta's do (see apply).
		a, b = randomEvidence(r, false), randomEvidence(r, false)
		s := randomState(r)
		two, one := apply(apply(s, a), b), apply(s, a.join(b))
		if !same(two, one) {
			t.Fatalf("%d: from %+v: apply a then b = %+v, apply a⊔b = %+v (a %+v, b %+v)", i, s, two, one, a, b)
		}
		if again := apply(one, a.join(b)); !same(again, one) {
			t.Fatalf("%d: apply not idempotent: %+v then %+v", i, one, again)
		}
		if !unpriced(s.Price) && priceOf(one.Price) != priceOf(s.Price) {
			t.Fatalf("%d: pricing of %+v replaced by %+v", i, s, one.Price)
		}
		if s.Status == campaign.Skipped && !same(one, s) {
			t.Fatalf("%d: skipped row changed to %+v", i, one)
		}
		if rowLevel(one) < rowLevel(s) {
			t.Fatalf("%d: %+v moved down to %+v", i, s, one)
		}
	}
}

// TestFirstPricing: of the statuses of one batch, the earliest that
// carried a pricing gives it (the least, of those of one instant); a row
// that has one keeps it.
func TestFirstPricing(t *testing.T) {
	marketing, free := pricings[1], pricings[3]
	st := func(kind string, sec float64, p campaign.Pricing) evidence {
		e, _ := proof(&Status{Status: kind, MessageID: "w1", Timestamp: at(sec), Price: p}, testPrices)
		return e
	}
	tests := []struct {
		name   string
		row    campaign.Pricing
		ev     []evidence
		want   campaign.Pricing
		change bool
	}{
		{"the earliest status's", campaign.Pricing{}, []evidence{st("delivered", 20, free), st("sent", 10, marketing)}, marketing, true},
		{"a status without pricing gives none", campaign.Pricing{}, []evidence{st("sent", 5, campaign.Pricing{}), st("delivered", 20, free)}, free, true},
		{"the least of one instant", campaign.Pricing{}, []evidence{st("sent", 10, marketing), st("delivered", 10, free)}, marketing, true},
		{"a row's pricing stays", free, []evidence{st("sent", 1, marketing)}, free, false},
		{"billable alone is a pricing", campaign.Pricing{}, []evidence{st("sent", 1, pricings[4])}, pricings[4], true},
		{"ignored statuses give none", campaign.Pricing{}, []evidence{st("deleted", 1, marketing)}, campaign.Pricing{}, false},
		{"SMS parts and charge", campaign.Pricing{}, []evidence{st("delivered", 20, pricings[5])}, pricings[5], true},
		{"a charge of 0 is a charge, not none", campaign.Pricing{}, []evidence{st("failed", 5, pricings[6]), st("delivered", 20, pricings[5])}, pricings[6], true},
		{"parts alone are a pricing", campaign.Pricing{}, []evidence{st("delivered", 20, pricings[7])}, pricings[7], true},
		{"the least charge of one instant", campaign.Pricing{}, []evidence{st("delivered", 10, pricings[5]), st("delivered", 10, pricings[6])}, pricings[6], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e evidence
			for _, f := range tt.ev {
				e = e.join(f)
			}
			row := Delivery{Row: 1, Status: campaign.Sent, MessageID: "w1", SentAt: at(1).UnixMilli(), Price: tt.row}
			got := apply(row, e)
			if priceOf(got.Price) != priceOf(tt.want) {
				t.Errorf("pricing %+v, want %+v", got.Price, tt.want)
			}
			if changed := !same(got, row); changed != tt.change {
				t.Errorf("changed %v, want %v", changed, tt.change)
			}
		})
	}
}
