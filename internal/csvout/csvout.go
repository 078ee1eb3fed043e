// Package csvout writes CSV that a spreadsheet opens as data. Excel,
// LibreOffice and Google Sheets take a cell that starts with =, +, -, @,
// a tab or a carriage return for a formula and run it: an outside value
// (a CSV cell, a webhook's error title) such as =HYPERLINK(…) or
// =cmd|' /C calc'!A0 would become a live link or a command. A Writer
// writes such a cell with a leading apostrophe, the text marker of
// spreadsheets, unless its column holds numbers or phone numbers and the
// cell is one.
package csvout

import (
	"encoding/csv"
	"io"
)

// Kind says what a column holds, and so which cells of it are written as
// they are.
type Kind int

const (
	// Text is any text: a cell that a spreadsheet would take for a formula
	// gets a leading apostrophe. The zero value: a column is text unless
	// it says otherwise.
	Text Kind = iota
	// Number is a column of decimal numbers: a cell that is one (-12,
	// 0.0042) is written as it is; any other cell as Text.
	Number
	// Phone is a column of phone numbers: a cell in E.164 (a '+' and
	// digits only) is written as it is; any other cell (an invalid phone
	// as it was written) as Text.
	Phone
)

// Column is a column of a CSV file: its header and what it holds.
type Column struct {
	Name string
	Kind Kind
}

// Neutralize returns cell as a spreadsheet must get it to show it as text:
// with a leading apostrophe when it starts with a formula character (=,
// +, -, @, tab, carriage return), unless it is a number in a Number
// column or E.164 in a Phone column. Any other cell is returned as it is:
// removing the apostrophe always gives back the cell.
func Neutralize(cell string, k Kind) string {
	if cell == "" || !formulaStart(cell[0]) {
		return cell
	}
	switch {
	case k == Number && isNumber(cell), k == Phone && isE164(cell):
		return cell
	}
	return "'" + cell
}

// formulaStart reports whether a cell starting with c is a formula to a
// spreadsheet (OWASP's list for CSV injection).
func formulaStart(c byte) bool {
	switch c {
	case '=', '+', '-', '@', '\t', '\r':
		return true
	}
	return false
}

// isNumber reports whether s is a decimal number as strconv formats the
// export's integers and decimals: an optional '-', digits, and an
// optional '.' and digits.
func isNumber(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	whole, frac := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			whole, frac = s[:i], s[i+1:]
			if frac == "" {
				return false
			}
			break
		}
	}
	return whole != "" && digits(whole) && digits(frac)
}

// isE164 reports whether s is '+' and one or more digits.
func isE164(s string) bool {
	return len(s) > 1 && s[0] == '+' && digits(s[1:])
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Writer writes CSV records of its columns, each cell neutralised for its
// column's Kind (see Neutralize), or exactly as given when raw. It is a
// csv.Writer underneath: writes are buffered, and Flush reports the
// first error. It is not safe for concurrent use.
type Writer struct {
	cw   *csv.Writer
	cols []Column
	raw  bool
	rec  []string
}

// NewWriter returns a Writer of cols to w; WriteHeader writes their names.
// With raw, cells are written exactly as given.
func NewWriter(w io.Writer, cols []Column, raw bool) *Writer {
	return &Writer{cw: csv.NewWriter(w), cols: cols, raw: raw, rec: make([]string, 0, len(cols))}
}

// WriteHeader writes the columns' names, as they are.
func (w *Writer) WriteHeader() error {
	w.rec = w.rec[:0]
	for _, c := range w.cols {
		w.rec = append(w.rec, c.Name)
	}
	return w.cw.Write(w.rec)
}

// Write writes one record; cell i is of column i (a cell beyond the
// columns is Text).
func (w *Writer) Write(cells ...string) error {
	if w.raw {
		return w.cw.Write(cells)
	}
	w.rec = w.rec[:0]
	for i, c := range cells {
		k := Text
		if i < len(w.cols) {
			k = w.cols[i].Kind
		}
		w.rec = append(w.rec, Neutralize(c, k))
	}
	return w.cw.Write(w.rec)
}

// Flush writes what is buffered to the underlying io.Writer and returns
// the first error of any write.
func (w *Writer) Flush() error {
	w.cw.Flush()
	return w.cw.Error()
}
