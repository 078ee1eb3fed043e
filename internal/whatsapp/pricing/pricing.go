// Package pricing reads Meta's published WhatsApp rate card and prices
// template messages with it: a ceiling for a campaign before it is sent, and
// the cost of what the status webhooks say was billed.
//
// Since 2025-07-01 Meta charges per delivered template message, by the
// template's category and by the market of the recipient's country calling
// code. A market is a country ("Brazil", "United Kingdom") or a group of
// countries ("North America", "Rest of Africa"); "Other" (or "Rest of
// World") is every calling code that no market lists. The rate card gives each market's price per
// category in one currency; a separate mapping says which calling codes
// belong to which market.
//
// # The rate card
//
// Meta publishes the card as CSV, one per currency. Any lines before the
// header row (a title such as "Cost per message in USD ...", notes) are
// skipped; the header row is the first one with a market column and at least
// one price column. Meta's reads (prices here and in testdata are
// illustrative, not Meta's)
//
//	Market,Currency,Marketing,Utility,Authentication,"Authentication-
//	International",Service
//	Brazil,USD,0.0600,0.0080,0.0080,n/a,n/a
//	India,USD,0.0100,0.0015,0.0015,0.0300,n/a
//	...
//	North America,USD,0.0300,0.0040,0.0040,n/a,n/a
//	Other,USD,0.0550,0.0070,0.0070,n/a,n/a
//
// (the Authentication-International header holds a line break inside its
// quotes). Header names are matched ignoring case, spaces, punctuation and
// line breaks, and by their start, so "Marketing (USD)" is the marketing
// column. The market column may be called Market (also "Market (per rate
// card)"), Country/Region, Region or Country. The price columns are
// Marketing, Utility, Authentication, Authentication-International and
// Service; other columns are ignored, and a card without some price column
// simply has no price for that category. The optional Currency column gives
// the card's currency ("USD"; "$US", "US$", "€", "£", "₹", "R$" and "Rp" are
// read as USD, EUR, GBP, INR, BRL and IDR); every row must agree. Without
// it, the currency is taken from a title line such as "Cost per message in
// EUR".
//
// A price cell holds a number, with or without a currency symbol or code
// around it ("0.0411", "$0.0411", "0.0411 USD"). An empty cell, "n/a", "NA"
// or dashes mean the market has no price for that category; "Free" is 0.
// Decimals are written with a point, or with a comma in a file separated by
// semicolons ("0,0712"). Thousands separators are not expected, but "1,234.5"
// and "1.234,5" are read as people mean them, and in a comma-separated file
// "2,280" is two thousand two hundred and eighty.
//
// # The calling-code mapping
//
// The mapping is a second CSV, passed to Load next to the card, with a
// header row and one row per country (lines before the header are skipped):
//
//	Country,Country calling code,Market
//	United States,1,North America
//	Dominican Republic,"1 809, 1 829, 1 849",Rest of Latin America
//	United Kingdom,44,United Kingdom
//
// Meta's pricing page publishes this mapping next to the cards, but its exact
// column names could not be confirmed when this was written, so the reader
// takes any of several: the calling-code column may be called Country
// calling code, Calling code, Dial code, Prefix or Country code (a column
// with "calling" or "dial" in its name wins over "Country code", which may
// hold ISO letters). A cell may hold several codes separated
// by commas, semicolons, slashes or bars; within one code everything but the
// digits is ignored, so "+1 809", "1-809" and "1809" are the same prefix,
// and a country's numbers can be split further than its country code (+1 809
// is the Dominican Republic inside North America's +1). The market column is
// named as in the card; names are matched ignoring case, spacing and "&"
// versus "and", and a market the card does not have is an error, because the
// two files then come from different releases. A row without a market (no
// market column, or an empty cell) names its country instead: a country the
// card lists is priced as such, the others fall to Other.
//
// The codes may also sit in the card itself, in a calling-code column next to
// the prices (one row per market with all its codes, or one row per country
// with its market's prices repeated); then no mapping is needed. Codes from
// both are merged; one prefix given to two markets is an error.
//
// Both files may be UTF-8, with or without a byte-order mark, or UTF-16 with
// one, and separated by commas, semicolons or tabs. Errors name the file and
// the line (*ParseError).
//
// # Prices
//
// A phone number is priced by the longest calling-code prefix the card knows,
// falling back to the Other market. Prices are float64 in the card's
// currency, as printed (Meta prints at most four decimals; Card.Decimals says
// how many the card used). Sums are taken per market and category, count
// times price, so a million phones add about fifty products, not a million
// rounding errors: the result is good to far below the card's last digit,
// which is what an estimate printed at that precision needs.
//
// A Card is immutable after Load and safe for concurrent use.
package pricing

import (
	"math"
	"strings"
)

// category is a priced template category, in the order of the card's columns.
type category int

const (
	marketing category = iota
	utility
	authentication
	authInternational
	service
	numCategories
)

// categoryNames are the categories as Meta's status webhooks spell them.
var categoryNames = [numCategories]string{
	"marketing", "utility", "authentication", "authentication-international", "service",
}

func (k category) String() string { return categoryNames[k] }

// parseCategory reads a category as a webhook's pricing.category spells it,
// in any case and with '_' or ' ' for '-' (pricing_analytics writes
// AUTHENTICATION_INTERNATIONAL). marketing_lite, the Marketing Messages API's
// category, is billed at the marketing rate.
func parseCategory(s string) (category, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.ReplaceAll(s, "_", "-")
	s = strings.ReplaceAll(s, " ", "-")
	switch s {
	case "marketing", "marketing-lite":
		return marketing, true
	case "utility":
		return utility, true
	case "authentication":
		return authentication, true
	case "authentication-international":
		return authInternational, true
	case "service":
		return service, true
	}
	return 0, false
}

// market is one row of the card.
type market struct {
	name  string
	price [numCategories]float64
	has   [numCategories]bool // false: n/a in this market
	line  int                 // where the card gives it, for messages
}

// Card is a loaded rate card with its calling-code mapping.
type Card struct {
	// Currency is the card's currency as an ISO 4217 code ("USD"), or what
	// the card wrote when it is not one of the symbols Load knows; "" when
	// the card does not say.
	Currency string
	// Decimals is the most digits after the decimal point in any price of
	// the card: the precision to print its sums at.
	Decimals int

	markets   []market
	prefixes  map[string]int // calling-code digits → index in markets
	maxPrefix int            // length of the longest key in prefixes
	other     int            // index of the Other market; -1 when none
}

// Markets returns the names of the card's markets, in the card's order.
// Round is v, an amount of the card's currency (a sum of its prices),
// rounded to the card's precision (its most decimals, at least the
// minor unit's two): a sum of floats such as 0.6053000000000001 is 0.6053
// wherever it is shown or stored.
func (c *Card) Round(v float64) float64 {
	p := math.Pow(10, float64(max(c.Decimals, 2)))
	return math.Round(v*p) / p
}

func (c *Card) Markets() []string {
	names := make([]string, len(c.markets))
	for i, m := range c.markets {
		names[i] = m.name
	}
	return names
}

// Market returns the market of an E.164 number ("+447400123456"; the '+'
// may be left out): the one of its longest calling-code prefix the card
// knows, else Other. ok is false when neither applies, or the number has no
// digits or anything but digits after its '+'.
func (c *Card) Market(phoneE164 string) (market string, ok bool) {
	i := c.lookup(phoneE164)
	if i < 0 {
		return "", false
	}
	return c.markets[i].name, true
}

// Price returns what one delivered message of category to phoneE164 costs,
// in c.Currency, and the market that price is from. category is as Meta's
// status webhooks spell pricing.category: marketing, marketing_lite (billed
// as marketing), utility, authentication, authentication-international or
// service, in any case.
//
// ok is false when the number has no market (see Market), the category is
// not one of these, or the market's price for it is n/a; market is still
// set when it is known. The exception is authentication-international in a
// market with no such rate: Meta bills authentication there at the
// authentication rate, so that is returned, which makes it safe to ask for
// authentication-international as the ceiling of an authentication campaign.
func (c *Card) Price(phoneE164, category string) (price float64, market string, ok bool) {
	i := c.lookup(phoneE164)
	if i < 0 {
		return 0, "", false
	}
	m := &c.markets[i]
	k, known := parseCategory(category)
	if !known {
		return 0, m.name, false
	}
	p, ok := m.priceOf(k)
	return p, m.name, ok
}

// priceOf is the market's price for k, with authentication standing in for
// a missing authentication-international rate (see Price).
func (m *market) priceOf(k category) (float64, bool) {
	if k == authInternational && !m.has[k] {
		k = authentication
	}
	return m.price[k], m.has[k]
}

// lookup returns the index of phone's market, or -1. It does not allocate,
// as it runs once per recipient of a campaign.
func (c *Card) lookup(phone string) int {
	digits := strings.TrimPrefix(phone, "+")
	if digits == "" {
		return -1
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return -1
		}
	}
	for n := min(len(digits), c.maxPrefix); n > 0; n-- {
		if i, ok := c.prefixes[digits[:n]]; ok {
			return i
		}
	}
	return c.other
}
