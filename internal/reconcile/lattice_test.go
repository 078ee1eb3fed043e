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

func randomEvidence(r *rand.Rand) evidence {
	e, _ := proof(kinds[r.IntN(4)], fmt.Sprintf("w%d", r.IntN(3)), at(float64(r.IntN(5))), []int{0, 131026, 131049}[r.IntN(3)], []string{"", "a", "b"}[r.IntN(3)])
	return e
}

func randomState(r *rand.Rand) Delivery {
	s := Delivery{Row: 1}
	s.Status = campaign.Statuses[r.IntN(len(campaign.Statuses))]
	if r.IntN(2) == 0 {
		s.WAMID = fmt.Sprintf("w%d", r.IntN(3))
	}
	if r.IntN(2) == 0 {
		s.Code, s.Title = 131049, "x"
	}
	for _, t := range []*int64{&s.SentAt, &s.DeliveredAt, &s.ReadAt} {
		if r.IntN(2) == 0 {
			*t = at(float64(r.IntN(5))).UnixMilli()
		}
	}
	return s
}

// TestLattice checks the algebra the order independence rests on: join is
// commutative, associative and idempotent, and applying evidence in two
// steps is applying their join.
func TestLattice(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 100_000 {
		a, b, c := randomEvidence(r), randomEvidence(r), randomEvidence(r)
		if s := randomState(r); changes(&s, &a) != (apply(s, a) != s) {
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
		s := randomState(r)
		two, one := apply(apply(s, a), b), apply(s, a.join(b))
		if two != one {
			t.Fatalf("%d: from %+v: apply a then b = %+v, apply a⊔b = %+v (a %+v, b %+v)", i, s, two, one, a, b)
		}
		if again := apply(one, a.join(b)); again != one {
			t.Fatalf("%d: apply not idempotent: %+v then %+v", i, one, again)
		}
		if s.Status == campaign.Skipped && one != s {
			t.Fatalf("%d: skipped row changed to %+v", i, one)
		}
		if rowLevel(one) < rowLevel(s) {
			t.Fatalf("%d: %+v moved down to %+v", i, s, one)
		}
	}
}
