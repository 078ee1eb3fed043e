package csvin

import (
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

// TestDigitMatcherMatchesRegexp compares the automaton with package regexp
// on every pattern of the library's metadata that the fast path uses, full
// and prefix matches, on random digit strings and on a few with other
// bytes (which the matcher hands to the regexp).
func TestDigitMatcherMatchesRegexp(t *testing.T) {
	coll, err := phonenumbers.MetadataCollection()
	if err != nil {
		t.Fatal(err)
	}
	type pat struct {
		p    string
		full bool
	}
	var pats []pat
	for _, m := range coll.GetMetadata() {
		for _, d := range []*phonenumbers.PhoneNumberDesc{
			m.GetGeneralDesc(), m.GetMobile(), m.GetFixedLine(), m.GetVoip(), m.GetPersonalNumber(), m.GetUan(),
			m.GetTollFree(), m.GetPremiumRate(), m.GetSharedCost(), m.GetPager(), m.GetVoicemail(),
		} {
			if p := d.GetNationalNumberPattern(); p != "" {
				pats = append(pats, pat{p, true})
			}
		}
		for _, p := range []string{m.GetLeadingDigits(), m.GetNationalPrefixForParsing()} {
			if p != "" {
				pats = append(pats, pat{p, false})
			}
		}
	}
	// Assertions and word boundaries the metadata does not use, so that
	// the construction's handling of them (or refusal) is checked too.
	pats = append(pats, pat{`\d{3}$`, false}, pat{`^1|2\d`, true}, pat{`(?m:^1$)`, true}, pat{`1\b`, false}, pat{``, true}, pat{``, false})
	rng := rand.New(rand.NewPCG(3, 4))
	per := 60
	if testing.Short() || raceEnabled {
		per = 20
	}
	built, total, matched := 0, 0, 0
	for _, p := range pats {
		expr := "^(?:" + p.p + ")"
		if p.full {
			expr += "$"
		}
		re := regexp.MustCompile(expr)
		m := newDigitMatcher(p.p, p.full)
		check := func(s string) {
			t.Helper()
			total++
			got, want := m.Match([]byte(s)), re.Match([]byte(s))
			if got != want {
				t.Fatalf("%s on %q: automaton says %v, regexp %v", expr, s, got, want)
			}
			if want {
				matched++
			}
		}
		check("")
		for range per {
			b := make([]byte, rng.IntN(18))
			for i := range b {
				b[i] = byte('0' + rng.IntN(10))
			}
			check(string(b))
		}
		check("12a")
		check("1 2")
		if m.states == nil {
			continue
		}
		built++
		// Random digits rarely match; walks that stay out of the dead
		// state mostly do, and their prefixes mostly do not.
		for range per {
			var b []byte
			for s := &m.states[0]; len(b) < 20; {
				var live []int
				for d, n := range s.next {
					if n >= 0 {
						live = append(live, d)
					}
				}
				if len(live) == 0 {
					break
				}
				d := live[rng.IntN(len(live))]
				b = append(b, byte('0'+d))
				s = &m.states[s.next[d]]
				check(string(b))
			}
		}
	}
	if built < len(pats)-2 {
		t.Errorf("only %d of %d patterns got an automaton", built, len(pats))
	}
	if matched < total/10 {
		t.Errorf("only %d of %d strings matched: the test says little about matches", matched, total)
	}
	t.Logf("%d patterns (%d with an automaton), %d strings, %d matched", len(pats), built, total, matched)
}
