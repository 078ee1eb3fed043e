package pricing

import (
	"iter"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// loadFiles loads a card and, when mapping is not "", its mapping from
// testdata.
func loadFiles(t testing.TB, card, mapping string) *Card {
	t.Helper()
	cf, err := os.Open(filepath.Join("testdata", card))
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	var c *Card
	if mapping == "" {
		c, err = Load(cf, nil)
	} else {
		mf, err2 := os.Open(filepath.Join("testdata", mapping))
		if err2 != nil {
			t.Fatal(err2)
		}
		defer mf.Close()
		c, err = Load(cf, mf)
	}
	if err != nil {
		t.Fatalf("Load(%s, %s): %v", card, mapping, err)
	}
	return c
}

func usd(t testing.TB) *Card { return loadFiles(t, "ratecard-usd.csv", "calling-codes.csv") }

// near says whether two amounts agree far below a card's fourth decimal.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestPrice(t *testing.T) {
	c := usd(t)
	tests := []struct {
		name, phone, category string
		price                 float64
		market                string
		ok                    bool
	}{
		{"US is North America", "+12025550123", "marketing", 0.03, "North America", true},
		{"Canada shares +1", "+14165550123", "utility", 0.004, "North America", true},
		{"+1 809 is longer than +1", "+18095551234", "marketing", 0.07, "Rest of Latin America", true},
		{"+1 876 Jamaica", "+18765550123", "utility", 0.011, "Rest of Latin America", true},
		{"+1 80 is still +1", "+18005550123", "marketing", 0.03, "North America", true},
		{"UK", "+447400123456", "utility", 0.02, "United Kingdom", true},
		{"Brazil", "+5511987654321", "marketing", 0.06, "Brazil", true},
		{"Germany", "+4915112345678", "marketing", 0.13, "Germany", true},
		{"India", "+919876543210", "authentication", 0.0015, "India", true},
		{"Nigeria", "+2348031234567", "marketing", 0.05, "Nigeria", true},
		{"a Rest of group", "+254712345678", "marketing", 0.02, "Rest of Africa", true},
		{"+420 in a group with an ampersand", "+420601123456", "marketing", 0.08, "Rest of Central & Eastern Europe", true},
		{"unlisted code is Other", "+33612345678", "marketing", 0.055, "Other", true},
		{"+4 alone is Other", "+4", "marketing", 0.055, "Other", true},
		{"without the plus", "447400123456", "marketing", 0.06, "United Kingdom", true},
		{"marketing_lite is billed as marketing", "+5511987654321", "marketing_lite", 0.06, "Brazil", true},
		{"categories in any case", "+5511987654321", "MARKETING", 0.06, "Brazil", true},
		{"authentication-international", "+919876543210", "authentication-international", 0.03, "India", true},
		{"analytics spelling", "+2348031234567", "AUTHENTICATION_INTERNATIONAL", 0.07, "Nigeria", true},
		{"no international rate: authentication's", "+447400123456", "authentication-international", 0.02, "United Kingdom", true},
		{"n/a is not a price", "+5511987654321", "service", 0, "Brazil", false},
		{"unknown category", "+5511987654321", "referral_conversion", 0, "Brazil", false},
		{"empty category", "+5511987654321", "", 0, "Brazil", false},
		{"empty phone", "", "marketing", 0, "", false},
		{"plus alone", "+", "marketing", 0, "", false},
		{"not E.164", "+44 7400 123456", "marketing", 0, "", false},
		{"letters", "+44abc", "marketing", 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			price, market, ok := c.Price(tt.phone, tt.category)
			if !near(price, tt.price) || market != tt.market || ok != tt.ok {
				t.Errorf("Price(%q, %q) = %v, %q, %v; want %v, %q, %v",
					tt.phone, tt.category, price, market, ok, tt.price, tt.market, tt.ok)
			}
			if m, ok := c.Market(tt.phone); m != tt.market || ok != (tt.market != "") {
				t.Errorf("Market(%q) = %q, %v; want %q", tt.phone, m, ok, tt.market)
			}
		})
	}
}

func TestPriceWithoutOther(t *testing.T) {
	c := mustLoad(t, "Market,Marketing,Calling code\nBrazil,0.06,55\n", "")
	if _, m, ok := c.Price("+33612345678", "marketing"); ok || m != "" {
		t.Errorf("no Other market: Price of +33 = %q, %v; want no market", m, ok)
	}
	if p, m, ok := c.Price("+5511987654321", "marketing"); !ok || m != "Brazil" || !near(p, 0.06) {
		t.Errorf("Price of +55 = %v, %q, %v", p, m, ok)
	}
}

func TestCard(t *testing.T) {
	c := usd(t)
	if c.Currency != "USD" || c.Decimals != 4 {
		t.Errorf("Currency, Decimals = %q, %d; want USD, 4", c.Currency, c.Decimals)
	}
	want := []string{"Brazil", "Germany", "India", "Nigeria", "United Kingdom", "North America",
		"Rest of Africa", "Rest of Central & Eastern Europe", "Rest of Latin America", "Other"}
	if got := c.Markets(); !slices.Equal(got, want) {
		t.Errorf("Markets() = %q\nwant %q", got, want)
	}
}

// phones yields each of list n times over, without allocating, as a
// campaign's recipients stream out of its checkpoint.
func phones(list []string, n int) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := range n {
			if !yield(list[i%len(list)]) {
				return
			}
		}
	}
}

func TestEstimate(t *testing.T) {
	c := usd(t)
	list := []string{
		"+12025550123", "+12025550124", "+447400123456", "+5511987654321",
		"+18095551234", "+33612345678", "not a phone", "",
	}
	tally := c.Estimate(phones(list, 8000), "marketing")
	want := []Line{
		{"Brazil", "marketing", 1000, 0.06, 60},
		{"United Kingdom", "marketing", 1000, 0.06, 60},
		{"North America", "marketing", 2000, 0.03, 60},
		{"Rest of Latin America", "marketing", 1000, 0.07, 70},
		{"Other", "marketing", 1000, 0.055, 55},
	}
	got := tally.Lines()
	if len(got) != len(want) {
		t.Fatalf("Lines() = %v\nwant %v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Market != w.Market || g.Category != w.Category || g.Count != w.Count || !near(g.Price, w.Price) || !near(g.Cost, w.Cost) {
			t.Errorf("line %d = %+v; want %+v", i, g, w)
		}
	}
	if !near(tally.Total(), 305) || tally.Priced() != 6000 || tally.Unpriced() != 2000 {
		t.Errorf("Total, Priced, Unpriced = %v, %d, %d; want 305, 6000, 2000", tally.Total(), tally.Priced(), tally.Unpriced())
	}
}

// TestEstimateMemory checks that a million phones are priced in constant
// memory: Estimate allocates the same for ten phones as for a million.
func TestEstimateMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a million lookups")
	}
	c := usd(t)
	list := []string{"+12025550123", "+447400123456", "+5511987654321", "+18095551234", "+33612345678"}
	small := testing.AllocsPerRun(3, func() { c.Estimate(phones(list, 10), "marketing") })
	large := testing.AllocsPerRun(1, func() { c.Estimate(phones(list, 1_000_000), "marketing") })
	if large > small {
		t.Errorf("Estimate allocates %v times for a million phones, %v for ten", large, small)
	}
}

func TestTally(t *testing.T) {
	c := usd(t)
	tally := c.NewTally()
	// The status command adds billed rows with the category of each.
	adds := []struct {
		phone, category string
		n               int64
		ok              bool
	}{
		{"+447400123456", "utility", 3, true},
		{"+44", "marketing", 10, true}, // counts already grouped by prefix
		{"+447400123456", "authentication-international", 1, true},
		{"+5511987654321", "service", 2, false}, // n/a in the card
		{"+5511987654321", "group_marketing", 4, false},
		{"+5511987654321", "marketing", 0, false},
		{"+5511987654321", "marketing", -5, false},
		{"", "marketing", 1, false},
	}
	for _, a := range adds {
		if ok := tally.AddN(a.phone, a.category, a.n); ok != a.ok {
			t.Errorf("AddN(%q, %q, %d) = %v; want %v", a.phone, a.category, a.n, ok, a.ok)
		}
	}
	if !tally.Add("+919876543210", "authentication_international") {
		t.Error("Add(India, authentication_international) = false")
	}
	want := []Line{
		{"India", "authentication-international", 1, 0.03, 0.03},
		{"United Kingdom", "marketing", 10, 0.06, 0.6},
		{"United Kingdom", "utility", 3, 0.02, 0.06},
		// no international rate: billed, and shown, as authentication
		{"United Kingdom", "authentication", 1, 0.02, 0.02},
	}
	got := tally.Lines()
	if len(got) != len(want) {
		t.Fatalf("Lines() = %v\nwant %v", got, want)
	}
	for i := range want {
		if g, w := got[i], want[i]; g.Market != w.Market || g.Category != w.Category || g.Count != w.Count || !near(g.Cost, w.Cost) {
			t.Errorf("line %d = %+v; want %+v", i, g, w)
		}
	}
	if !near(tally.Total(), 0.71) || tally.Priced() != 15 || tally.Unpriced() != 7 {
		t.Errorf("Total, Priced, Unpriced = %v, %d, %d; want 0.71, 15, 7", tally.Total(), tally.Priced(), tally.Unpriced())
	}
}

// TestConcurrentPrice runs lookups from several goroutines, for the race
// detector: a Card is read-only after Load.
func TestConcurrentPrice(t *testing.T) {
	c := usd(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tally := c.Estimate(phones([]string{"+12025550123", "+447400123456"}, 1000), "utility")
			if tally.Priced() != 1000 {
				t.Errorf("Priced() = %d", tally.Priced())
			}
		}()
	}
	wg.Wait()
}

func BenchmarkPrice(b *testing.B) {
	c := usd(b)
	list := []string{"+12025550123", "+447400123456", "+5511987654321", "+18095551234", "+33612345678"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.Price(list[i%len(list)], "marketing")
	}
}

// A sum of prices is shown and stored to the card's precision.
func TestRound(t *testing.T) {
	var sum float64 // summed at run time, as a tally sums
	for _, p := range []float64{0.02, 0.02, 0.004, 0.04} {
		sum += p
	}
	if sum == 0.084 {
		t.Fatal("the float sum is exact: the test proves nothing")
	}
	for _, tc := range []struct {
		decimals int
		v, want  float64
	}{
		{4, sum, 0.084}, {4, 0.6053000000000001, 0.6053}, {0, 1.234, 1.23}, {2, 0.125, 0.13},
	} {
		c := &Card{Decimals: tc.decimals}
		if got := c.Round(tc.v); got != tc.want {
			t.Errorf("Round(%v) with %d decimals = %v, want %v", tc.v, tc.decimals, got, tc.want)
		}
	}
}
