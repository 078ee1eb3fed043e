package pricing

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// maxFuzz bounds fuzz inputs: a rate card is a few kilobytes, and bigger
// inputs only slow the mutator down.
const maxFuzz = 16 << 10

// fuzzPhones are numbers every loaded card is asked to price.
var fuzzPhones = []string{"+12025550123", "+18095551234", "+447400123456", "+5511987654321", "+33612345678", "+7", ""}

// FuzzLoad feeds arbitrary cards and mappings to Load. It must not panic; an
// error must be a *ParseError; a loaded card must have only prices that are
// finite and not negative, a market for every prefix, and price any number
// consistently between Price, Market and a Tally.
func FuzzLoad(f *testing.F) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add(read("ratecard-usd.csv"), read("calling-codes.csv"))
	f.Add(read("ratecard-eur-inline.csv"), []byte(nil))
	f.Add([]byte("Market;Marketing;Utility\nBrazil;0,05;€1.234,5\nOther;n/a;\"2,280\""), []byte("Country;Calling code\nBrazil;+55 / 1-809"))
	f.Add([]byte("Country,Calling code,Market,Marketing\nX,1,North America,0.025\nY,1 809,Rest,0.07\n"), []byte("Country,Dial code,Market\nZ,44,Rest\n"))
	f.Add([]byte(utf16le("Market\tAuthentication-International\tCurrency\r\nOther\t$1e400\t$US\r\n")), []byte("\xef\xbb\xbfCountry\tPrefix\r\nOther\t999999999999999\r\n"))
	f.Fuzz(func(t *testing.T, card, mapping []byte) {
		if len(card) > maxFuzz || len(mapping) > maxFuzz {
			return
		}
		var c *Card
		var err error
		if len(mapping) == 0 { // the fuzzer's nil: no mapping
			c, err = Load(bytes.NewReader(card), nil)
		} else {
			c, err = Load(bytes.NewReader(card), bytes.NewReader(mapping))
		}
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *ParseError", err, err)
			}
			return
		}
		for _, m := range c.markets {
			for k, p := range m.price {
				if math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
					t.Fatalf("%s %s price is %v", m.name, category(k), p)
				}
			}
		}
		if len(c.prefixes) == 0 {
			t.Fatal("a card without calling codes loaded")
		}
		for code, i := range c.prefixes {
			if i < 0 || i >= len(c.markets) || code == "" || len(code) > c.maxPrefix || code[0] == '0' {
				t.Fatalf("prefix %q → market %d of %d (max prefix %d)", code, i, len(c.markets), c.maxPrefix)
			}
		}
		tally := c.NewTally()
		var sum float64
		phones := append(fuzzPhones[:len(fuzzPhones):len(fuzzPhones)], "+"+firstPrefix(c))
		for _, phone := range phones {
			for _, cat := range []string{"marketing", "utility", "authentication", "authentication-international", "service", "marketing_lite"} {
				p, m, ok := c.Price(phone, cat)
				if ok && (math.IsNaN(p) || math.IsInf(p, 0) || p < 0) {
					t.Fatalf("Price(%q, %q) = %v", phone, cat, p)
				}
				if mm, mok := c.Market(phone); mm != m || (mok != (m != "")) {
					t.Fatalf("Market(%q) = %q, %v; Price says %q", phone, mm, mok, m)
				}
				if tally.Add(phone, cat) != ok {
					t.Fatalf("Tally.Add(%q, %q) disagrees with Price's %v", phone, cat, ok)
				}
				if ok {
					sum += p
				}
			}
		}
		if got := tally.Total(); math.Abs(got-sum) > 1e-9*math.Max(1, sum) {
			t.Fatalf("Tally.Total() = %v; the prices add up to %v", got, sum)
		}
	})
}

// firstPrefix returns some calling code of c, so that every fuzzed card is
// asked about a number it maps.
func firstPrefix(c *Card) string {
	for code := range c.prefixes {
		return code
	}
	return ""
}

// FuzzPrice asks the test card about arbitrary numbers and categories: it
// must not panic, and a price must be one of the card's.
func FuzzPrice(f *testing.F) {
	c := usd(f)
	for _, p := range fuzzPhones {
		f.Add(p, "marketing")
	}
	f.Add("+18765550123", "AUTHENTICATION_INTERNATIONAL")
	f.Add("+9", "marketing lite")
	f.Fuzz(func(t *testing.T, phone, cat string) {
		p, m, ok := c.Price(phone, cat)
		if !ok {
			return
		}
		k, _ := parseCategory(cat)
		for _, mk := range c.markets {
			if mk.name == m {
				if want, _ := mk.priceOf(k); want != p {
					t.Fatalf("Price(%q, %q) = %v from %s, whose price is %v", phone, cat, p, m, want)
				}
				return
			}
		}
		t.Fatalf("Price(%q, %q) names market %q, not in the card", phone, cat, m)
	})
}
