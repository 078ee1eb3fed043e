package csvin

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ListReader reads a suppression list, the numbers that must not be
// messaged (--exclude FILE). The file is either a CSV whose header has a
// "phone" column (any case), such as an export of opt-outs, or plain text
// with one number per line (what comes before the first comma, semicolon or
// tab). Which one is decided by the first line that is neither blank nor a
// comment: it is a header if one of its fields is "phone". Blank lines are
// ignored. Lines starting with '#' are comments before that first line and
// in plain text, where anything after a '#' is a comment too; in a CSV every
// row after the header is data.
//
// The encodings, delimiters and phone formats are those Reader accepts, with
// the delimiter detected from that first line: a list exported from the
// same spreadsheet as the campaign must suppress the same numbers.
//
// A ListReader is not safe for concurrent use.
type ListReader struct {
	csv   *csv.Reader
	lim   *limiter
	enc   string
	norm  normalizer
	col   int  // the phone column; -1 until the first line is seen
	plain bool // no header: one number per line
	err   error
}

// NewListReader returns a ListReader reading r, with region as in
// normalizer. Problems with region or the start of r are returned by the
// first call to Next.
//
// A line over MaxColumns fields or with a field over MaxCell bytes is a
// *LineError wrapping ErrTooManyColumns or ErrCellTooLong.
func NewListReader(r io.Reader, region string) *ListReader {
	return newListReader(r, region, defaultLimits)
}

// newListReader is NewListReader with other limits than MaxColumns and
// MaxCell.
func newListReader(r io.Reader, region string, lim limits) *ListReader {
	l := &ListReader{col: -1}
	if l.norm, l.err = newNormalizer(region); l.err != nil {
		return l
	}
	if l.csv, l.lim, l.enc, l.err = openInput(r, 0, true, lim); l.err != nil {
		return l
	}
	// Until the first line says whether comments go on (see Next), the
	// limiter must not read past the line the csv.Reader is on.
	l.csv.Comment, l.lim.comment, l.lim.sync = '#', '#', true
	return l
}

// Next returns the next number in E.164 and the line it is on, or io.EOF
// after the last.
//
// A *LineError is about one line, which Next has then passed over, so the
// caller may go on calling Next. If errors.Is(err, ErrInvalidPhone) the line
// held something that is not a usable phone number; a caller would usually
// count or log these and go on, since a suppression list exported from
// another system often has a few. Otherwise the line is structurally broken
// (bad quoting, invalid UTF-8, a second "phone" column), which suggests the
// file is not what the operator thinks it is. Any other error, including a
// bad region, is final: every later call returns it again.
func (l *ListReader) Next() (phone string, line int, err error) {
	for l.err == nil {
		fields, err := l.csv.Read()
		if err == io.EOF {
			l.err = io.EOF
			break
		}
		if err != nil {
			err = readError(err)
			var le *LineError
			if errors.As(err, &le) {
				return "", le.Line, err
			}
			l.err = err
			break
		}
		line, _ := l.csv.FieldPos(0)
		if err := checkUTF8(l.csv, fields, l.enc); err != nil {
			return "", err.(*LineError).Line, err
		}
		if allEmpty(fields) || (l.csv.Comment != 0 && strings.HasPrefix(strings.TrimSpace(fields[0]), "#")) {
			continue
		}
		if l.col < 0 {
			col, err := listHeader(fields)
			if col >= 0 {
				// A CSV: from here on every row is data, even one whose
				// first cell starts with '#' (an order number, say);
				// skipping it could message someone who opted out.
				l.col = col
				l.csv.Comment, l.lim.comment = 0, 0
			}
			l.lim.sync = false // comments stay as they are from here on
			if err != nil {
				return "", line, &LineError{Line: line, Err: err}
			}
			if col >= 0 {
				continue
			}
			l.col, l.plain = 0, true
		}
		var raw string
		if l.col < len(fields) {
			raw = fields[l.col]
		}
		if l.plain {
			raw, _, _ = strings.Cut(raw, "#")
			if i := strings.IndexAny(raw, ",;\t"); i >= 0 {
				// Split at the detected delimiter already; this is for
				// the lines that use another.
				raw = raw[:i]
			}
		}
		phone, err := l.norm.normalize(raw)
		if err != nil {
			return "", line, &LineError{Line: line, Err: fmt.Errorf("%q: %w", strings.TrimSpace(raw), err)}
		}
		return phone, line, nil
	}
	return "", 0, l.err
}

// listHeader returns the index of the "phone" field if fields is a header,
// or -1 if it is not. With two "phone" fields it returns the first and an
// error.
func listHeader(fields []string) (int, error) {
	col := -1
	for i, f := range fields {
		if strings.EqualFold(strings.TrimSpace(f), "phone") {
			if col >= 0 {
				return col, fmt.Errorf("%w: %q (columns %d and %d)", ErrDuplicateColumn, strings.TrimSpace(f), col+1, i+1)
			}
			col = i
		}
	}
	return col, nil
}
