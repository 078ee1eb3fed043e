package pricing

import (
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf16"
)

// mustLoad loads a card and a mapping ("" for none) given as text.
func mustLoad(t testing.TB, card, mapping string) *Card {
	t.Helper()
	c, err := load(card, mapping)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func load(card, mapping string) (*Card, error) {
	var m io.Reader
	if mapping != "" {
		m = strings.NewReader(mapping)
	}
	return Load(strings.NewReader(card), m)
}

// utf16le encodes s as UTF-16LE with a byte-order mark, as Excel saves
// "Unicode text".
func utf16le(s string) string {
	b := []byte{0xFF, 0xFE}
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return string(b)
}

// metaMapping is a mapping in the layout of testdata/calling-codes.csv.
const metaMapping = "Country,Country calling code,Market\n" +
	"United States,1,North America\nUnited Kingdom,44,United Kingdom\nBrazil,55,Brazil\n"

// Mappings for cards with fewer markets.
const (
	brazilMapping = "Country,Country calling code,Market\nBrazil,55,Brazil\n"
	naMapping     = "Country,Country calling code,Market\nUnited States,1,North America\n"
	bothMapping   = naMapping + "Brazil,55,Brazil\n"
)

type want struct {
	phone, category string
	price           float64
	market          string
}

func TestLoadLayouts(t *testing.T) {
	tests := []struct {
		name          string
		card, mapping string
		currency      string
		decimals      int
		prices        []want
	}{{
		name: "Meta's layout",
		card: "\"Cost per message in USD on the WhatsApp Business Platform, effective July 1, 2026\",,,,,,\r\n" +
			"Note: rates are illustrative.,,,,,,\r\n" +
			"Market,Currency,Marketing,Utility,Authentication,\"Authentication-\r\nInternational\",Service\r\n" +
			"Brazil,USD,0.0625,0.0068,0.0068,n/a,n/a\r\n" +
			"North America,USD,0.0250,0.0034,0.0034,n/a,n/a\r\n" +
			"United Kingdom,USD,0.0529,0.0220,0.0220,0.0500,n/a\r\n" +
			"Other,USD,0.0604,0.0077,0.0077,n/a,n/a\r\n",
		mapping:  metaMapping,
		currency: "USD", decimals: 4,
		prices: []want{
			{"+5511987654321", "marketing", 0.0625, "Brazil"},
			{"+12025550123", "utility", 0.0034, "North America"},
			{"+447400123456", "authentication-international", 0.05, "United Kingdom"},
			{"+33612345678", "authentication", 0.0077, "Other"},
		},
	}, {
		name: "semicolons, BOM, decimal commas, euro signs, empty n/a, mapping by semicolons too",
		card: "\ufeffMARKET;CURRENCY;MARKETING;UTILITY;AUTHENTICATION;AUTHENTICATION INTERNATIONAL;SERVICE\n" +
			"Brazil;€;€0,0550;€0,0070;€0,0070;;\nOther;€;0,051 €;0,0065 €;0,0065 €;;\n",
		mapping:  "\ufeffCountry;Calling code;Market\nBrazil;+55;Brazil\n",
		currency: "EUR", decimals: 4,
		prices: []want{
			{"+5511987654321", "marketing", 0.055, "Brazil"},
			{"+33612345678", "utility", 0.0065, "Other"},
		},
	}, {
		name:     "tabs",
		card:     "Market\tCurrency\tMarketing\nBrazil\tGBP\t0.05\nOther\tGBP\t0.04\n",
		mapping:  "Country\tDial code\tMarket\nBrazil\t55\tBrazil\n",
		currency: "GBP", decimals: 2,
		prices: []want{{"+5511987654321", "marketing", 0.05, "Brazil"}, {"+33612345678", "marketing", 0.04, "Other"}},
	}, {
		name:     "UTF-16 with a byte-order mark",
		card:     utf16le("Market\tCurrency\tMarketing\r\nBrazil\tINR\t₹4.5000\r\n"),
		mapping:  utf16le("Country\tCountry calling code\tMarket\r\nBrazil\t55\tBrazil\r\n"),
		currency: "INR", decimals: 4,
		prices: []want{{"+5511987654321", "marketing", 4.5, "Brazil"}},
	}, {
		name: "header names with units and spacing, columns reordered, extra columns",
		card: "  Utility rate ,Marketing (USD),Notes, Market (per rate card) ,Meta Business Agent\n" +
			"0.004,0.03,whatever,North America,$0.10 USD / 1 M tokens\n",
		mapping:  naMapping,
		decimals: 3,
		prices:   []want{{"+12025550123", "utility", 0.004, "North America"}, {"+12025550123", "marketing", 0.03, "North America"}},
	}, {
		name: "currency symbols and codes around prices, $US currency, Free",
		card: "Market,Currency,Marketing,Utility,Service\n" +
			"North America,$US,$0.0250,US$ 0.0034,Free\nBrazil,$US,0.0625 USD,-,--\n",
		mapping:  bothMapping,
		currency: "USD", decimals: 4,
		prices: []want{
			{"+12025550123", "marketing", 0.025, "North America"},
			{"+12025550123", "utility", 0.0034, "North America"},
			{"+12025550123", "service", 0, "North America"},
			{"+5511987654321", "marketing", 0.0625, "Brazil"},
		},
	}, {
		name:     "currency from the title line when there is no Currency column",
		card:     "Cost per message in EUR effective October 1 2026\nMarket,Marketing\nOther,0.05\nBrazil,0.06\n",
		mapping:  brazilMapping,
		currency: "EUR", decimals: 2,
		prices: []want{{"+5511987654321", "marketing", 0.06, "Brazil"}},
	}, {
		name: "large prices: thousands separators as written",
		card: "Market,Currency,Marketing,Utility,Authentication\n" +
			"Brazil,IDR,\"2,280\",\"1,234.50\",\"1.234,50\"\nOther,IDR,1 234,0.5,1'234.5\n",
		mapping:  brazilMapping,
		currency: "IDR", decimals: 2,
		prices: []want{
			{"+5511987654321", "marketing", 2280, "Brazil"},
			{"+5511987654321", "utility", 1234.5, "Brazil"},
			{"+5511987654321", "authentication", 1234.5, "Brazil"},
			{"+33612345678", "marketing", 1234, "Other"},
			{"+33612345678", "authentication", 1234.5, "Other"},
		},
	}, {
		name: "calling codes in the card, one row per market",
		card: "Market,Country calling codes,Currency,Marketing\n" +
			"North America,+1,USD,0.025\nRest of Latin America,\"+1 809, +1 829; 1-876 / 1876\",USD,0.07\n" +
			"Kazakhstan,+7 7,USD,0.09\nRussia,+7,USD,0.08\nOther,n/a,USD,0.06\n",
		currency: "USD", decimals: 3,
		prices: []want{
			{"+12025550123", "marketing", 0.025, "North America"},
			{"+18295550123", "marketing", 0.07, "Rest of Latin America"},
			{"+18765550123", "marketing", 0.07, "Rest of Latin America"},
			{"+77011234567", "marketing", 0.09, "Kazakhstan"},
			{"+79161234567", "marketing", 0.08, "Russia"},
			{"+33612345678", "marketing", 0.06, "Other"},
		},
	}, {
		name: "calling codes in the card, one row per country with its market's prices",
		card: "Country,Calling code,Market,Marketing,Utility\n" +
			"United States,1,North America,0.025,0.0034\nCanada,1,North America,0.025,0.0034\n" +
			"Kenya,254,Rest of Africa,0.0225,0.004\nGhana,233,Rest of Africa,0.0225,0.004\n",
		decimals: 4,
		prices: []want{
			{"+12025550123", "marketing", 0.025, "North America"},
			{"+233201234567", "utility", 0.004, "Rest of Africa"},
		},
	}, {
		name:     "codes in the card and in a mapping are merged",
		card:     "Market,Calling code,Marketing\nNorth America,1,0.025\nBrazil,,0.06\n",
		mapping:  "Country,Calling code,Market\nUnited States,1,North America\nBrazil,55,Brazil\n",
		decimals: 3,
		prices:   []want{{"+12025550123", "marketing", 0.025, "North America"}, {"+5511987654321", "marketing", 0.06, "Brazil"}},
	}, {
		name:     "market names match ignoring case, spacing and & against and",
		card:     "Market,Marketing\nRest of Central & Eastern Europe,0.08\nOther,0.06\n",
		mapping:  "Country,Calling code,Market\nCzech Republic,420,rest of  central and eastern europe\n",
		decimals: 2,
		prices:   []want{{"+420601123456", "marketing", 0.08, "Rest of Central & Eastern Europe"}},
	}, {
		name:     "mapping without markets: a country with its own row, the rest Other",
		card:     "Market,Marketing\nBrazil,0.06\nOther,0.05\n",
		mapping:  "Country name,Dialing code,ISO code\nBrazil,55,BR\nFrance,33,FR\n",
		decimals: 2,
		prices:   []want{{"+5511987654321", "marketing", 0.06, "Brazil"}, {"+33612345678", "marketing", 0.05, "Other"}},
	}, {
		name:     "a blank market cell in the mapping: Other prices the country",
		card:     "Market,Marketing\nBrazil,0.06\nOther,0.05\n",
		mapping:  "Country,Calling code,Market\nBrazil,55,Brazil\nFrance,33,\n",
		decimals: 2,
		prices:   []want{{"+33612345678", "marketing", 0.05, "Other"}},
	}, {
		name:     "Calling code wins over an ISO Country code column",
		card:     "Market,Marketing\nBrazil,0.06\n",
		mapping:  "Country code,Country,Calling code,Market\nBR,Brazil,55,Brazil\n",
		decimals: 2,
		prices:   []want{{"+5511987654321", "marketing", 0.06, "Brazil"}},
	}, {
		name: "notes and blank lines below the table, a repeated header",
		card: "Market,Currency,Marketing\nBrazil,USD,0.06\n,,\n\nMarket,Currency,Marketing\n" +
			"Other,USD,0.05\n\"Note: rates change on the first day of a quarter\",,\n",
		mapping:  brazilMapping,
		currency: "USD", decimals: 2,
		prices: []want{{"+33612345678", "marketing", 0.05, "Other"}},
	}, {
		name:     "Rest of World is the fallback too",
		card:     "Market,Marketing\nBrazil,0.06\nRest of World,0.05\n",
		mapping:  brazilMapping,
		decimals: 2,
		prices:   []want{{"+33612345678", "marketing", 0.05, "Rest of World"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.card, tt.mapping)
			if c.Currency != tt.currency || c.Decimals != tt.decimals {
				t.Errorf("Currency, Decimals = %q, %d; want %q, %d", c.Currency, c.Decimals, tt.currency, tt.decimals)
			}
			for _, w := range tt.prices {
				p, m, ok := c.Price(w.phone, w.category)
				if !ok || m != w.market || !near(p, w.price) {
					t.Errorf("Price(%q, %q) = %v, %q, %v; want %v, %q", w.phone, w.category, p, m, ok, w.price, w.market)
				}
			}
		})
	}
}

// TestTestdata loads the European card, whose codes are inline, and checks
// it prices like the USD card in its own currency.
func TestTestdata(t *testing.T) {
	c := loadFiles(t, "ratecard-eur-inline.csv", "")
	if c.Currency != "EUR" || c.Decimals != 4 {
		t.Errorf("Currency, Decimals = %q, %d; want EUR, 4", c.Currency, c.Decimals)
	}
	for _, w := range []want{
		{"+12025550123", "marketing", 0.028, "North America"},
		{"+18495550123", "marketing", 0.065, "Rest of Latin America"},
		{"+2348031234567", "authentication-international", 0.065, "Nigeria"},
		{"+5511987654321", "service", 0, "Brazil"}, // n/a: not ok
		{"+81312345678", "marketing", 0.051, "Other"},
	} {
		p, m, ok := c.Price(w.phone, w.category)
		if m != w.market || !near(p, w.price) || ok != (w.category != "service") {
			t.Errorf("Price(%q, %q) = %v, %q, %v; want %v, %q", w.phone, w.category, p, m, ok, w.price, w.market)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name          string
		card, mapping string
		file          string
		line          int
		is            error
		contains      string
	}{
		{name: "empty card", card: "", file: fileCard, is: ErrNoHeader},
		{name: "no price column", card: "Market,Currency\nBrazil,USD\n", file: fileCard, is: ErrNoHeader},
		{name: "no market column", card: "Marketing,Utility\n0.1,0.2\n", file: fileCard, is: ErrNoHeader},
		{name: "all n/a", card: "Market,Marketing\nBrazil,n/a\n", mapping: brazilMapping, file: fileCard, is: ErrNoPrices},
		{name: "no calling codes anywhere", card: "Market,Marketing\nBrazil,0.06\n", file: fileCard, is: ErrNoCallingCodes},
		{name: "mapping has no codes that apply", card: "Market,Marketing\nBrazil,0.06\n",
			mapping: "Country,Calling code\nFrance,33\n", file: fileCard, is: ErrNoCallingCodes},
		{name: "text as price", card: "Title\nMarket,Marketing\nBrazil,0.06\nOther,call us\n", mapping: brazilMapping,
			file: fileCard, line: 4, contains: `marketing price of Other: "call us" is not a price`},
		{name: "negative price", card: "Market,Utility\nBrazil,-0.01\n", mapping: brazilMapping,
			file: fileCard, line: 2, contains: "negative"},
		{name: "exponent", card: "Market,Utility\nBrazil,1e-3\n", mapping: brazilMapping, file: fileCard, line: 2, contains: "not a price"},
		{name: "two numbers", card: "Market,Utility\nBrazil,0.01 0.02\n", mapping: brazilMapping, file: fileCard, line: 2, contains: "not a number"},
		{name: "digits in the currency text", card: "Market,Utility\nBrazil,0.01 per 1000\n", mapping: brazilMapping,
			file: fileCard, line: 2, contains: "not a price"},
		{name: "two decimal marks", card: "Market;Utility\nBrazil;0,01,5\n", mapping: brazilMapping, file: fileCard, line: 2, contains: "not a number"},
		{name: "bad thousands groups", card: "Market,Utility\nBrazil,\"12,34,5\"\n", mapping: brazilMapping, file: fileCard, line: 2, contains: "not a number"},
		{name: "huge", card: "Market,Utility\nBrazil," + strings.Repeat("9", 400) + "\n", mapping: brazilMapping,
			file: fileCard, line: 2, contains: "not a price"},
		{name: "two currencies", card: "Market,Currency,Marketing\nBrazil,USD,0.06\nOther,EUR,0.05\n", mapping: brazilMapping,
			file: fileCard, line: 3, contains: "currency EUR, but line 2 has USD"},
		{name: "a market twice with other prices", card: "Market,Marketing\nBrazil,0.06\nbrazil,0.07\n", mapping: brazilMapping,
			file: fileCard, line: 3, contains: "brazil has other prices on line 2"},
		{name: "codes without a market in the card", card: "Market,Calling code,Marketing\n,55,0.06\n",
			file: fileCard, line: 2, contains: "calling codes without a market"},
		{name: "code starting with 0", card: "Market,Calling code,Marketing\nBrazil,0055,0.06\n",
			file: fileCard, line: 2, contains: `calling code "0055" starts with 0`},
		{name: "code too long", card: "Market,Calling code,Marketing\nBrazil,1234567890123456,0.06\n",
			file: fileCard, line: 2, contains: "longer than a phone number"},
		{name: "mapping without a header", card: "Market,Marketing\nBrazil,0.06\n", mapping: "Brazil,55\n",
			file: fileMapping, is: ErrNoHeader},
		{name: "mapping names a market the card lacks", card: "Market,Marketing\nBrazil,0.06\n",
			mapping: "Country,Calling code,Market\nBrazil,55,Brazil\nBangladesh,880,Bangladesh\n",
			file:    fileMapping, line: 3, contains: `market "Bangladesh" is not in the rate card`},
		{name: "one code, two markets", card: "Market,Marketing\nBrazil,0.06\nOther,0.05\n",
			mapping: "Country,Calling code,Market\nBrazil,55,Brazil\n\nX,55,Other\n",
			file:    fileMapping, line: 4, contains: "+55 is given to Other here and to Brazil on calling-code mapping line 2"},
		{name: "a card code and a mapping code disagree", card: "Market,Calling code,Marketing\nBrazil,55,0.06\nOther,,0.05\n",
			mapping: "Country,Calling code,Market\nX,55,Other\n",
			file:    fileMapping, line: 2, contains: "and to Brazil on rate card line 2"},
		{name: "codes without a market in the mapping", card: "Market,Marketing\nBrazil,0.06\n",
			mapping: "Country,Calling code,Market\n,55,\n", file: fileMapping, line: 2, contains: "calling codes without a market"},
		{name: "not UTF-8", card: "Market,Marketing\nBr\xe9sil,0.06\n", file: fileCard, contains: "not UTF-8"},
		{name: "odd UTF-16", card: "\xff\xfeM", file: fileCard, contains: "odd number of bytes"},
		{name: "too large", card: "Market,Marketing\n" + strings.Repeat("x", maxInput), file: fileCard, is: ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(tt.card, tt.mapping)
			if err == nil {
				t.Fatalf("Load = %v, nil; want an error", c.Markets())
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Load error %v (%T) is not a *ParseError", err, err)
			}
			if pe.File != tt.file || pe.Line != tt.line {
				t.Errorf("error %q is about %s line %d; want %s line %d", err, pe.File, pe.Line, tt.file, tt.line)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not say %q", err, tt.contains)
			}
		})
	}
}

func TestParseAmount(t *testing.T) {
	tests := []struct {
		in       string
		delim    rune
		v        float64
		decimals int
		ok       bool
	}{
		{"0.0411", ',', 0.0411, 4, true},
		{" 0.0411 ", ',', 0.0411, 4, true},
		{"$0.0411", ',', 0.0411, 4, true},
		{"US$ 0.0411", ',', 0.0411, 4, true},
		{"0.0411 USD", ',', 0.0411, 4, true},
		{"€0,0712", ';', 0.0712, 4, true},
		{"0,0712", ',', 0.0712, 4, true}, // not thousands: 4 digits after
		{"0,071", ',', 0.071, 3, true},   // not thousands: starts with 0
		{"2,280", ',', 2280, 0, true},
		{"2,280", ';', 2.28, 3, true},
		{"1,234.5", ',', 1234.5, 1, true},
		{"1.234,5", ';', 1234.5, 1, true},
		{"1.234.567", ',', 1234567, 0, true},
		{"1,234,567", ';', 1234567, 0, true},
		{"1 234,56", ';', 1234.56, 2, true},
		{"1\u00a0234.56", ',', 1234.56, 2, true},
		{".5", ',', 0.5, 1, true},
		{"5.", ',', 5, 0, true},
		{"7", ',', 7, 0, true},
		{"Free", ',', 0, 0, true},
		{"0", ',', 0, 0, true},
		{"", ',', 0, 0, false},
		{"n/a", ',', 0, 0, false},
		{"N/A", ',', 0, 0, false},
		{"NA", ',', 0, 0, false},
		{"-", ',', 0, 0, false},
		{"--", ',', 0, 0, false},
		{"—", ',', 0, 0, false},
		{"Not available", ',', 0, 0, false},
	}
	for _, tt := range tests {
		v, dec, ok, err := parseAmount(tt.in, tt.delim)
		if err != nil || !near(v, tt.v) || dec != tt.decimals || ok != tt.ok {
			t.Errorf("parseAmount(%q, %q) = %v, %d, %v, %v; want %v, %d, %v",
				tt.in, tt.delim, v, dec, ok, err, tt.v, tt.decimals, tt.ok)
		}
	}
	for _, in := range []string{"abc", "-0.5", "−0.5", "1e5", "0.1.2", ",", ".", "1,2,3", "1..2", "0.5 and 0.6", "1 and 2"} {
		if v, _, ok, err := parseAmount(in, ','); err == nil {
			t.Errorf("parseAmount(%q) = %v, %v, nil; want an error", in, v, ok)
		}
	}
}

func TestMarketKey(t *testing.T) {
	for in, want := range map[string]string{
		"Rest of Central & Eastern Europe":    "rest of central and eastern europe",
		"rest of central and eastern europe":  "rest of central and eastern europe",
		"Rest of Central&Eastern Europe":      "rest of central and eastern europe",
		" Rest  of\nCentral & Eastern Europe": "rest of central and eastern europe",
		"North America":                       "north america",
		"Other":                               "other",
		"Côte d'Ivoire":                       "côte d ivoire",
	} {
		if got := marketKey(in); got != want {
			t.Errorf("marketKey(%q) = %q; want %q", in, got, want)
		}
	}
}
