package pricing

import (
	"fmt"
	"io"
	"iter"

	"github.com/bulksend/bulksend/internal/termtext"
)

// Tally adds up the cost of messages, counting them per market and category
// so that its memory does not grow with the number of messages: a campaign's
// million phones take as much room as ten.
//
// The zero Tally is not usable; get one from Card.NewTally. A Tally is not
// safe for concurrent use.
type Tally struct {
	card     *Card
	counts   []int64 // [market*numCategories + category], by billed category
	unpriced int64
}

// NewTally returns an empty Tally priced with c.
func (c *Card) NewTally() *Tally {
	return &Tally{card: c, counts: make([]int64, len(c.markets)*int(numCategories))}
}

// Add counts one message of category to phoneE164, and reports whether it
// could be priced (see Card.Price); one that could not is counted in
// Unpriced.
func (t *Tally) Add(phoneE164, category string) bool {
	return t.AddN(phoneE164, category, 1)
}

// AddN counts n messages of category to phoneE164, as Add does. phoneE164
// may be just a calling-code prefix ("+44"), so that counts already grouped
// by prefix can be added in one call. n ≤ 0 adds nothing and reports false.
func (t *Tally) AddN(phoneE164, category string, n int64) bool {
	if n <= 0 {
		return false
	}
	k, ok := parseCategory(category)
	i := t.card.lookup(phoneE164)
	if !ok || i < 0 {
		t.unpriced += n
		return false
	}
	// Count by the category actually billed, so Lines shows the rate used.
	m := &t.card.markets[i]
	if k == authInternational && !m.has[k] {
		k = authentication
	}
	if !m.has[k] {
		t.unpriced += n
		return false
	}
	t.counts[i*int(numCategories)+int(k)] += n
	return true
}

// Line is the cost of the messages of one category to one market.
type Line struct {
	Market   string
	Category string  // as Meta's webhooks spell it: marketing, utility, …
	Count    int64   // messages
	Price    float64 // per message, in the card's currency
	Cost     float64 // Count × Price
}

// Lines returns a Line for each market and category with messages, in the
// card's market order, then category order.
func (t *Tally) Lines() []Line {
	var lines []Line
	for i := range t.card.markets {
		m := &t.card.markets[i]
		for k := range numCategories {
			n := t.counts[i*int(numCategories)+int(k)]
			if n == 0 {
				continue
			}
			lines = append(lines, Line{
				Market: m.name, Category: k.String(), Count: n,
				Price: m.price[k], Cost: float64(n) * m.price[k],
			})
		}
	}
	return lines
}

// Total is the cost of every priced message, in the card's currency.
func (t *Tally) Total() float64 {
	var total float64
	for _, l := range t.Lines() {
		total += l.Cost
	}
	return total
}

// Priced is the number of messages counted in Total.
func (t *Tally) Priced() int64 {
	var n int64
	for _, c := range t.counts {
		n += c
	}
	return n
}

// Unpriced is the number of messages that could not be priced: no market,
// an unknown category, or n/a in the card.
func (t *Tally) Unpriced() int64 { return t.unpriced }

// Estimate prices one message of category to each of phones, a stream that
// is read once and not kept. For a dry run it is a ceiling: only delivered
// messages are charged.
func (c *Card) Estimate(phones iter.Seq[string], category string) *Tally {
	t := c.NewTally()
	for p := range phones {
		t.Add(p, category)
	}
	return t
}

// WriteLines writes, prefix first, each of Lines as a reader checks it
// (count × price = cost) and then what could not be priced.
func (t *Tally) WriteLines(w io.Writer, prefix string) {
	for _, l := range t.Lines() {
		fmt.Fprintf(w, "%s%-32s %-16s %8d × %s = %s\n", prefix, termtext.Escape(l.Market), termtext.Escape(l.Category), l.Count,
			fmt.Sprintf("%.*f", max(t.card.Decimals, 2), l.Price), t.card.Money(l.Cost))
	}
	if n := t.Unpriced(); n > 0 {
		fmt.Fprintf(w, "%s%d messages the card has no price for (not counted)\n", prefix, n)
	}
}

// Money is v in the card's currency as a sum is shown: two decimals and
// the currency's code (the card's own text, escaped for a terminal).
func (c *Card) Money(v float64) string {
	return fmt.Sprintf("%.2f %s", v, termtext.Escape(c.Currency))
}
