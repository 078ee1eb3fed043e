package pricing

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Errors about a file as a whole, returned inside a *ParseError.
var (
	// ErrNoHeader: no row looks like the header the file needs.
	ErrNoHeader = errors.New("no header row found")
	// ErrNoPrices: the card has a header but no market with a price.
	ErrNoPrices = errors.New("no market has a price")
	// ErrNoCallingCodes: neither the card nor the mapping gives a calling
	// code, so every number would be priced as Other.
	ErrNoCallingCodes = errors.New("no calling codes: give the calling-code mapping with the rate card")
	// ErrTooLarge: the input is far larger than any rate card.
	ErrTooLarge = errors.New("file too large for a rate card")
)

// The two inputs, as errors name them.
const (
	fileCard    = "rate card"
	fileMapping = "calling-code mapping"
)

// maxInput bounds each file: Meta's card is a few kilobytes and the mapping
// a few more, so anything this big is the wrong file.
const maxInput = 4 << 20

// maxPrefix bounds a calling-code prefix: E.164 numbers have at most 15
// digits, and a prefix is shorter than a number.
const maxPrefix = 15

// ParseError is a problem in the rate card or the mapping.
type ParseError struct {
	File string // "rate card" or "calling-code mapping"
	Line int    // 1-based line where the row starts; 0 for the whole file
	Err  error
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s line %d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Load reads a rate card and, when mapping is not nil, the calling-code
// mapping that goes with it. The accepted layouts are in the package
// comment. Errors are *ParseError; the sentinels above are inside those that
// are about a whole file.
func Load(card, mapping io.Reader) (*Card, error) {
	c := &Card{prefixes: map[string]int{}, other: -1}
	b := builder{card: c, index: map[string]int{}, prefixLine: map[string]source{}}
	if err := b.readCard(card); err != nil {
		return nil, err
	}
	if mapping != nil {
		if err := b.readMapping(mapping); err != nil {
			return nil, err
		}
	}
	if len(c.prefixes) == 0 {
		return nil, &ParseError{File: fileCard, Err: ErrNoCallingCodes}
	}
	return c, nil
}

// source is where a calling code was given.
type source struct {
	file string
	line int
}

// builder holds what Load needs while it reads.
type builder struct {
	card       *Card
	index      map[string]int    // marketKey(name) → index in card.markets
	prefixLine map[string]source // where each prefix was given
}

// column is what a header cell names.
type column int

const (
	colNone column = iota
	colMarket
	colCountry
	colCurrency
	colCode        // "country code": may be ISO letters, so ranked below
	colCallingCode // a column that says calling or dial
	colPrice       // + category
)

// classify names the column a header cell is. Names are compared without
// case, spaces, punctuation or line breaks ("Authentication-\nInternational"
// is authenticationinternational), and prices and markets by their start.
func classify(h string) (column, category) {
	n := squash(h)
	switch {
	case n == "":
		return colNone, 0
	case strings.HasPrefix(n, "authenticationinternational"), strings.HasPrefix(n, "authenticationintl"),
		strings.HasPrefix(n, "authinternational"), strings.HasPrefix(n, "authintl"):
		return colPrice, authInternational
	case strings.HasPrefix(n, "authentication"), n == "auth":
		return colPrice, authentication
	case strings.HasPrefix(n, "marketinglite"), strings.HasPrefix(n, "mmlite"):
		return colNone, 0 // billed as marketing: the marketing column prices it
	case strings.HasPrefix(n, "marketing"):
		return colPrice, marketing
	case strings.HasPrefix(n, "utility"):
		return colPrice, utility
	case strings.HasPrefix(n, "service"):
		return colPrice, service
	case strings.HasPrefix(n, "market"), n == "countryregion", n == "countryorregion",
		n == "region", n == "pricingregion", n == "billingregion":
		return colMarket, 0
	case n == "country", n == "countryname", n == "countries":
		return colCountry, 0
	case n == "currency":
		return colCurrency, 0
	case strings.Contains(n, "calling"), strings.Contains(n, "dial"),
		n == "prefix", n == "prefixes", n == "phonecode", n == "phoneprefix", n == "e164prefix":
		return colCallingCode, 0
	case n == "countrycode", n == "countrycodes", n == "code", n == "codes", n == "cc":
		return colCode, 0
	}
	return colNone, 0
}

// squash lower-cases s and keeps only its letters and digits.
func squash(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// header is the layout of a file, found from its header row.
type header struct {
	market, country, currency, code int // -1 when absent
	price                           [numCategories]int
	nPrices                         int
}

// parseHeader reads rec as a header row.
func parseHeader(rec []string) header {
	h := header{market: -1, country: -1, currency: -1, code: -1}
	for k := range h.price {
		h.price[k] = -1
	}
	codeRank := colNone
	for i, cell := range rec {
		col, k := classify(cell)
		switch col {
		case colMarket:
			if h.market < 0 {
				h.market = i
			}
		case colCountry:
			if h.country < 0 {
				h.country = i
			}
		case colCurrency:
			if h.currency < 0 {
				h.currency = i
			}
		case colCode, colCallingCode:
			// "Calling code" wins over "Country code", which may hold "US".
			if col > codeRank {
				h.code, codeRank = i, col
			}
		case colPrice:
			if h.price[k] < 0 {
				h.price[k] = i
				h.nPrices++
			}
		}
	}
	return h
}

// name returns the row's market: its market cell, else its country cell,
// with line breaks and runs of spaces made one space; fromCountry says
// it is the country.
func (h *header) name(rec []string) (name string, fromCountry bool) {
	if name = clean(cell(rec, h.market)); name != "" {
		return name, false
	}
	return clean(cell(rec, h.country)), true
}

// cell returns rec[i], or "" when the row is short or i < 0.
func cell(rec []string, i int) string {
	if i < 0 || i >= len(rec) {
		return ""
	}
	return rec[i]
}

// clean trims s and makes each run of white space in it one space.
func clean(s string) string { return strings.Join(strings.Fields(s), " ") }

// marketKey is how market names are compared: "Rest of Central & Eastern
// Europe" is "rest of central and eastern europe".
func marketKey(name string) string {
	var b strings.Builder
	for _, f := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '&'
	}) {
		for i, part := range strings.Split(f, "&") {
			if i > 0 {
				b.WriteString(" and")
			}
			if part != "" {
				if b.Len() > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(part)
			}
		}
	}
	return b.String()
}

// table is a file split into records, with the header found.
type table struct {
	delim rune
	pre   [][]string // records before the header
	h     header
	rows  [][]string // records after it
	lines []int      // the line each of rows starts on
}

// readTable reads r, finds the delimiter and the header row (the first for
// which ok is true), and returns the records around it.
func readTable(file string, r io.Reader, ok func(header) bool) (*table, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, &ParseError{File: file, Err: err}
	}
	if len(data) > maxInput {
		return nil, &ParseError{File: file, Err: ErrTooLarge}
	}
	text, err := decode(data)
	if err != nil {
		return nil, &ParseError{File: file, Err: err}
	}
	// The delimiter is the first of these that yields a header: a line of
	// one delimiter read with another is one cell, which is never a header.
	var firstErr error
	for _, d := range []rune{',', ';', '\t'} {
		t, err := split(file, text, d, ok)
		if err == nil {
			return t, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// decode returns data as UTF-8 text without a byte-order mark. UTF-16 with a
// mark is what Excel writes as "Unicode text".
func decode(data []byte) (string, error) {
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		data = data[3:]
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		be := data[0] == 0xFE
		data = data[2:]
		if len(data)%2 != 0 {
			return "", errors.New("UTF-16 text with an odd number of bytes")
		}
		u := make([]uint16, len(data)/2)
		for i := range u {
			if be {
				u[i] = uint16(data[2*i])<<8 | uint16(data[2*i+1])
			} else {
				u[i] = uint16(data[2*i+1])<<8 | uint16(data[2*i])
			}
		}
		return string(utf16.Decode(u)), nil
	}
	if !utf8.Valid(data) {
		return "", errors.New("not UTF-8 text (save it as CSV UTF-8)")
	}
	return string(data), nil
}

// split reads text as CSV separated by delim, up to and after the header.
func split(file, text string, delim rune, ok func(header) bool) (*table, error) {
	cr := csv.NewReader(strings.NewReader(text))
	cr.Comma = delim
	cr.FieldsPerRecord = -1 // notes and short rows are normal
	cr.LazyQuotes = true
	t := &table{delim: delim}
	found := false
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, &ParseError{File: file, Line: pe.Line, Err: pe.Err}
			}
			return nil, &ParseError{File: file, Err: err}
		}
		line, _ := cr.FieldPos(0)
		if !found {
			if h := parseHeader(rec); ok(h) {
				t.h, found = h, true
				continue
			}
			t.pre = append(t.pre, rec)
			continue
		}
		t.rows = append(t.rows, rec)
		t.lines = append(t.lines, line)
	}
	if !found {
		return nil, &ParseError{File: file, Err: ErrNoHeader}
	}
	return t, nil
}

// readCard reads the rate card into b.card.
func (b *builder) readCard(r io.Reader) error {
	t, err := readTable(fileCard, r, func(h header) bool {
		return (h.market >= 0 || h.country >= 0) && h.nPrices > 0
	})
	if err != nil {
		if errors.Is(err, ErrNoHeader) {
			return &ParseError{File: fileCard, Err: fmt.Errorf("%w: want Market and price columns such as Marketing, Utility", ErrNoHeader)}
		}
		return err
	}
	c := b.card
	currencyLine := 0
	for j, rec := range t.rows {
		line := t.lines[j]
		name, _ := t.h.name(rec)
		if name == "" || isRepeatedHeader(rec, t.h) {
			if codes := cell(rec, t.h.code); strings.TrimSpace(codes) != "" && name == "" {
				return &ParseError{File: fileCard, Line: line, Err: errors.New("calling codes without a market")}
			}
			continue
		}
		m := market{name: name, line: line}
		cells := 0
		for k, i := range t.h.price {
			if i < 0 || strings.TrimSpace(cell(rec, i)) == "" {
				continue
			}
			cells++
			p, dec, ok, err := parseAmount(cell(rec, i), t.delim)
			if err != nil {
				return &ParseError{File: fileCard, Line: line, Err: fmt.Errorf("%s price of %s: %w", category(k), name, err)}
			}
			if ok {
				m.price[k], m.has[k] = p, true
				c.Decimals = max(c.Decimals, dec)
			}
		}
		codes := cell(rec, t.h.code)
		if cells == 0 && strings.TrimSpace(codes) == "" {
			continue // a note below the table: "Note: …", with no prices
		}
		if cur := currencyCode(cell(rec, t.h.currency)); cur != "" {
			switch {
			case c.Currency == "":
				c.Currency, currencyLine = cur, line
			case cur != c.Currency:
				return &ParseError{File: fileCard, Line: line, Err: fmt.Errorf(
					"currency %s, but line %d has %s: a rate card has one currency", cur, currencyLine, c.Currency)}
			}
		}
		i, err := b.addMarket(m)
		if err != nil {
			return err
		}
		if err := b.addCodes(fileCard, line, codes, i); err != nil {
			return err
		}
	}
	priced := false
	for _, m := range c.markets {
		for _, has := range m.has {
			priced = priced || has
		}
	}
	if !priced {
		return &ParseError{File: fileCard, Err: ErrNoPrices}
	}
	if c.Currency == "" {
		c.Currency = titleCurrency(t.pre)
	}
	return nil
}

// isRepeatedHeader reports whether rec is the header again, as when two
// tables are pasted one after the other.
func isRepeatedHeader(rec []string, h header) bool {
	col, _ := classify(cell(rec, h.market))
	return h.market >= 0 && col == colMarket
}

// addMarket adds m to the card and returns its index. A market given twice
// (a card with one row per country) must have the same prices each time.
func (b *builder) addMarket(m market) (int, error) {
	key := marketKey(m.name)
	if i, ok := b.index[key]; ok {
		prev := &b.card.markets[i]
		if prev.has != m.has || prev.price != m.price {
			return 0, &ParseError{File: fileCard, Line: m.line, Err: fmt.Errorf(
				"%s has other prices on line %d", m.name, prev.line)}
		}
		return i, nil
	}
	i := len(b.card.markets)
	b.card.markets = append(b.card.markets, m)
	b.index[key] = i
	if key == "other" || key == "rest of world" || key == "rest of the world" {
		b.card.other = i
	}
	return i, nil
}

// readMapping reads the calling-code mapping into b.card.
func (b *builder) readMapping(r io.Reader) error {
	t, err := readTable(fileMapping, r, func(h header) bool {
		return h.code >= 0 && (h.market >= 0 || h.country >= 0)
	})
	if err != nil {
		if errors.Is(err, ErrNoHeader) {
			return &ParseError{File: fileMapping, Err: fmt.Errorf("%w: want a calling-code column and a Market or Country column", ErrNoHeader)}
		}
		return err
	}
	for j, rec := range t.rows {
		line := t.lines[j]
		codes := cell(rec, t.h.code)
		name, fromCountry := t.h.name(rec)
		if strings.TrimSpace(codes) == "" || isRepeatedHeader(rec, t.h) {
			continue
		}
		if name == "" {
			return &ParseError{File: fileMapping, Line: line, Err: errors.New("calling codes without a market")}
		}
		i, ok := b.index[marketKey(name)]
		if !ok {
			if fromCountry {
				continue // a country without its own rates: Other prices it
			}
			return &ParseError{File: fileMapping, Line: line, Err: fmt.Errorf(
				"market %q is not in the rate card (are both files from the same release?)", name)}
		}
		if err := b.addCodes(fileMapping, line, codes, i); err != nil {
			return err
		}
	}
	return nil
}

// addCodes gives the calling codes in s to market i.
func (b *builder) addCodes(file string, line int, s string, i int) error {
	codes, err := parseCodes(s)
	if err != nil {
		return &ParseError{File: file, Line: line, Err: err}
	}
	c := b.card
	for _, code := range codes {
		if j, ok := c.prefixes[code]; ok {
			if j != i {
				at := b.prefixLine[code]
				return &ParseError{File: file, Line: line, Err: fmt.Errorf(
					"+%s is given to %s here and to %s on %s line %d", code, c.markets[i].name, c.markets[j].name, at.file, at.line)}
			}
			continue
		}
		c.prefixes[code] = i
		b.prefixLine[code] = source{file, line}
		c.maxPrefix = max(c.maxPrefix, len(code))
	}
	return nil
}

// parseCodes reads a cell of calling codes: several separated by , ; / or |,
// each one the digits in it ("+1 809" is 1809). Pieces with no digits ("n/a",
// "—") are skipped.
func parseCodes(s string) ([]string, error) {
	var codes []string
	for _, piece := range strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ';' || r == '/' || r == '|' || r == '\n' || r == '\r'
	}) {
		var d strings.Builder
		for _, r := range piece {
			if r >= '0' && r <= '9' {
				d.WriteRune(r)
			}
		}
		code := d.String()
		switch {
		case code == "":
			continue
		case code[0] == '0':
			return nil, fmt.Errorf("calling code %q starts with 0", strings.TrimSpace(piece))
		case len(code) > maxPrefix:
			return nil, fmt.Errorf("calling code %q is longer than a phone number", strings.TrimSpace(piece))
		}
		codes = append(codes, code)
	}
	return codes, nil
}

// currencySymbols are the currency marks Meta's cards use instead of codes.
var currencySymbols = map[string]string{
	"$US": "USD", "US$": "USD", "$": "USD", "€": "EUR", "£": "GBP",
	"₹": "INR", "R$": "BRL", "RP": "IDR",
}

// currencyCode returns the currency a Currency cell names, upper-cased.
func currencyCode(s string) string {
	s = strings.ToUpper(clean(s))
	if code, ok := currencySymbols[s]; ok {
		return code
	}
	return s
}

// titleCurrency finds the currency in a title line above the header, such
// as "Cost per message in EUR on the WhatsApp Business Platform".
var titleCurrencyRE = regexp.MustCompile(`\bin ([A-Z]{3})\b`)

func titleCurrency(pre [][]string) string {
	for _, rec := range pre {
		for _, f := range rec {
			if m := titleCurrencyRE.FindStringSubmatch(f); m != nil {
				return m[1]
			}
		}
	}
	return ""
}

// parseAmount reads a price cell. ok is false for a cell that says the
// price is not available; decimals is the number of digits after the
// decimal mark. delim is the file's delimiter: a lone comma is a decimal
// comma in a file separated by semicolons, and a thousands separator in
// "2,280" otherwise.
func parseAmount(s string, delim rune) (v float64, decimals int, ok bool, err error) {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "", "n/a", "na", "n.a.", "not available", "unavailable", "none":
		return 0, 0, false, nil
	case "free":
		return 0, 0, true, nil
	}
	if strings.Trim(t, "-–—") == "" {
		return 0, 0, false, nil // dashes
	}
	// The number is the run from the first digit or mark to the last;
	// around it only a currency sign or code may stand.
	isNum := func(r rune) bool { return r >= '0' && r <= '9' || r == '.' || r == ',' }
	first := strings.IndexFunc(t, isNum)
	last := strings.LastIndexFunc(t, isNum)
	if first < 0 {
		return 0, 0, false, fmt.Errorf("%q is not a price", t)
	}
	prefix, num, suffix := t[:first], t[first:last+1], t[last+1:]
	if strings.ContainsAny(prefix, "-−") {
		return 0, 0, false, fmt.Errorf("%q is negative", t)
	}
	if strings.ContainsFunc(prefix+suffix, func(r rune) bool { return unicode.IsDigit(r) }) {
		return 0, 0, false, fmt.Errorf("%q is not a price", t)
	}
	var digits strings.Builder
	for _, r := range num {
		switch {
		case isNum(r):
			digits.WriteRune(r)
		case r == ' ' || r == '\u00a0' || r == '\u202f' || r == '\'':
			// a thousands space (1 234,5) or apostrophe (1'234.5)
		default:
			return 0, 0, false, fmt.Errorf("%q is not a price", t)
		}
	}
	n, decimals, err := normalizeNumber(digits.String(), delim)
	if err != nil {
		return 0, 0, false, fmt.Errorf("%q: %w", t, err)
	}
	v, err = strconv.ParseFloat(n, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, 0, false, fmt.Errorf("%q is not a price", t)
	}
	return v, decimals, true, nil
}

// normalizeNumber turns digits with '.' and ',' marks into what
// strconv.ParseFloat reads, deciding which mark is the decimal one.
func normalizeNumber(m string, delim rune) (string, int, error) {
	dots, commas := strings.Count(m, "."), strings.Count(m, ",")
	var thousands, decimal byte
	switch {
	case dots > 0 && commas > 0:
		// The last mark is the decimal one: 1,234.5 and 1.234,5.
		if strings.LastIndexByte(m, '.') > strings.LastIndexByte(m, ',') {
			thousands, decimal = ',', '.'
		} else {
			thousands, decimal = '.', ','
		}
	case commas > 1:
		thousands = ','
	case dots > 1:
		thousands = '.'
	case commas == 1:
		if delim != ';' && grouped(m, ',') {
			thousands = ','
		} else {
			decimal = ','
		}
	case dots == 1:
		decimal = '.'
	}
	intPart, frac := m, ""
	if decimal != 0 {
		i := strings.IndexByte(m, decimal)
		if strings.IndexByte(m[i+1:], decimal) >= 0 || strings.IndexByte(m[i+1:], thousands) >= 0 {
			return "", 0, errors.New("not a number")
		}
		intPart, frac = m[:i], m[i+1:]
	}
	if thousands != 0 {
		if !grouped(intPart, thousands) {
			return "", 0, errors.New("not a number")
		}
		intPart = strings.ReplaceAll(intPart, string(thousands), "")
	}
	if intPart == "" && frac == "" {
		return "", 0, errors.New("not a number")
	}
	if intPart == "" {
		intPart = "0"
	}
	if frac == "" {
		return intPart, 0, nil
	}
	return intPart + "." + frac, len(frac), nil
}

// grouped reports whether s is digits in thousands groups split by sep:
// 1 to 3 digits not starting with 0, then groups of 3.
func grouped(s string, sep byte) bool {
	parts := strings.Split(s, string(sep))
	if len(parts) < 2 || len(parts[0]) == 0 || len(parts[0]) > 3 || parts[0][0] == '0' {
		return false
	}
	for _, p := range parts[1:] {
		if len(p) != 3 {
			return false
		}
	}
	return true
}
