package schedule

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

// benchNumbers returns n distinct valid numbers in a campaign's mix: US 30%,
// India 20%, Brazil and Britain 15% each, Mexico and Germany 10% each,
// mobiles and landlines, from the area codes people live in.
func benchNumbers(tb testing.TB, n int) []string {
	tb.Helper()
	rng := rand.New(rand.NewPCG(25, 25))
	digits := func(k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		return string(b)
	}
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	gen := func() string {
		switch r := rng.IntN(100); {
		case r < 30:
			npa := pick("212", "213", "305", "312", "415", "469", "512", "617", "702", "713", "786", "818", "832", "917", "206", "208", "404", "480", "602", "928")
			return "+1" + npa + strconv.Itoa(2+rng.IntN(8)) + digits(6)
		case r < 50:
			return "+91" + strconv.Itoa(6+rng.IntN(4)) + digits(9)
		case r < 65:
			ddd := pick("11", "21", "31", "41", "51", "61", "71", "81", "85", "92")
			if rng.IntN(10) < 7 {
				return "+55" + ddd + "9" + digits(8)
			}
			return "+55" + ddd + strconv.Itoa(2+rng.IntN(4)) + digits(7)
		case r < 75:
			if a := pick("55", "33", "81"); rng.IntN(2) == 0 {
				return "+52" + a + digits(8)
			}
			return "+52" + pick("222", "664", "998") + digits(7)
		case r < 90:
			if rng.IntN(10) < 7 {
				return "+447" + strconv.Itoa(4+rng.IntN(6)) + digits(8)
			}
			return "+4420" + digits(8)
		default:
			if rng.IntN(10) < 7 {
				return "+49" + pick("151", "152", "157", "160", "162", "170", "171", "172", "176", "178") + digits(8)
			}
			return "+4930" + digits(8)
		}
	}
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		s := gen()
		if seen[s] {
			continue
		}
		if p, err := phonenumbers.Parse(s, ""); err == nil && phonenumbers.IsValidNumber(p) {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// BenchmarkZonesOf: the cost of ZonesOf per imported row. cached: every
// class already seen (the steady state of a large import); import: a
// fresh index every 100,000 distinct numbers, so each pass pays for its
// classes and area codes as a 100k-row import would; library: what
// phonenumbers.Parse, GetNumberType and GetTimezonesForNumber cost
// without a cache, the reference.
func BenchmarkZonesOf(b *testing.B) {
	numbers := benchNumbers(b, 100_000)
	b.Run("cached", func(b *testing.B) {
		x := &zoneIndex{}
		for _, n := range numbers {
			if _, err := x.zonesOf(n, false); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if _, err := x.zonesOf(numbers[i%len(numbers)], false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("import", func(b *testing.B) {
		var x *zoneIndex
		b.ReportAllocs()
		for i := range b.N {
			if i%len(numbers) == 0 {
				x = &zoneIndex{}
			}
			if _, err := x.zonesOf(numbers[i%len(numbers)], false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			p, err := phonenumbers.Parse(numbers[i%len(numbers)], "")
			if err != nil {
				b.Fatal(err)
			}
			_ = phonenumbers.GetNumberType(p)
			if _, err := phonenumbers.GetTimezonesForNumber(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
