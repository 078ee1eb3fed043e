package csvin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Limits on one record: far above what a campaign can use (a template's
// whole body is at most 1,024 characters, an SMS a few hundred), and low
// enough that a file's worst record costs tens of megabytes, not the
// file's size. A record over either is refused with a *LineError while it
// is read, before it is held in memory whole.
const (
	// MaxColumns is the most fields a record may have.
	MaxColumns = 1000
	// MaxCell is the longest a field may be, in bytes of its value as read
	// (UTF-8, doubled quotes undone, CRLF as LF).
	MaxCell = 64 << 10
)

// ErrTooManyColumns and ErrCellTooLong are wrapped by the *LineError of a
// record over MaxColumns or MaxCell. The record is passed over, as any
// other *LineError's.
var (
	ErrTooManyColumns = errors.New("too many columns")
	ErrCellTooLong    = errors.New("cell too long")
)

// limits are the limits a limiter enforces: MaxColumns and MaxCell, lower
// in tests.
type limits struct{ cols, cell int }

var defaultLimits = limits{cols: MaxColumns, cell: MaxCell}

// lexState is where a limiter is in the CSV syntax, as encoding/csv reads
// it with LazyQuotes and TrimLeadingSpace off.
type lexState uint8

const (
	lexRecord  lexState = iota // at the start of a line, between records
	lexField                   // at the start of a field
	lexBare                    // in a field that is not quoted
	lexQuoted                  // in a quoted field
	lexQuote                   // after a '"' in a quoted field: the closing one, or the first of two
	lexQuoteCR                 // after a closing '"' and a '\r'
	lexLine                    // in the rest of a line that encoding/csv drops (a comment, or after a quote error)
)

// limiter hands the text of a file (UTF-8, after the byte-order mark) on to
// encoding/csv, and refuses a record that goes over a limit as soon as it
// does: it hands on the record up to that byte, then returns a *LineError
// from Read, then passes over the rest of the record. encoding/csv returns
// that error from its Read (it returns any error of its reader), with what
// it got of the record; its next Read starts at the next record.
//
// encoding/csv reads a whole line before it parses it, and a whole record
// before it returns it, so the limiter must know where records and fields
// are: it follows the syntax as encoding/csv does, byte by byte, errors
// included (after a quote error encoding/csv drops the rest of the line,
// and so does the limiter, keeping the '\n'). Of the lines it passes over it
// hands on only their line ends, as blank lines, so that encoding/csv's line
// numbers stay the file's. FuzzLimiter holds the two to agreeing.
type limiter struct {
	src     *bufio.Reader
	comma   byte
	comment byte // encoding/csv's Comment, 0 for none
	// sync makes Read hand on at most one line: a ListReader changes
	// comment after the header, and must find the lines after it unread.
	sync bool
	lim  limits
	// bare and quoted mark the bytes that end a run of plain bytes in a
	// field that is not quoted and in one that is; and, until one is
	// met, the bytes of no ASCII character.
	bare, quoted [256]bool
	// nonASCII is set once a field holds a byte of no ASCII character:
	// until then the text encoding/csv has read is valid UTF-8.
	nonASCII bool

	state  lexState
	line   int  // the physical line of the next byte, 1-based
	start  int  // the line the current record starts on
	fields int  // fields of the current record begun so far
	n      int  // bytes of the current field's value so far
	cr     bool // the last byte was a '\r' not counted in n: it is not in the value if a '\n' follows
	quiet  bool // passing over a refused record: nothing of it is handed on but line ends
	dropNL bool // while quiet: the next '\n' is not handed on either (encoding/csv counted its line)
	err    error
}

func newLimiter(src *bufio.Reader, comma rune, lim limits) *limiter {
	l := &limiter{src: src, comma: byte(comma), lim: lim, line: 1}
	for _, c := range []byte{l.comma, '"', '\n', '\r'} {
		l.bare[c] = true
	}
	for _, c := range []byte{'"', '\n', '\r'} {
		l.quoted[c] = true
	}
	for c := 0x80; c < 0x100; c++ {
		l.bare[c], l.quoted[c] = true, true
	}
	return l
}

// sawNonASCII records that a field holds a byte of no ASCII character, and
// makes such bytes plain from here on.
func (l *limiter) sawNonASCII() {
	l.nonASCII = true
	for c := 0x80; c < 0x100; c++ {
		l.bare[c], l.quoted[c] = false, false
	}
}

// Read hands on what is buffered in src, less what encoding/csv is not to
// see, and reads src only when nothing is buffered.
func (l *limiter) Read(p []byte) (int, error) {
	for {
		if l.err != nil {
			err := l.err
			l.err = nil
			return 0, err
		}
		if l.src.Buffered() == 0 {
			if _, err := l.src.Peek(1); err != nil {
				return 0, err
			}
		}
		in, _ := l.src.Peek(min(l.src.Buffered(), len(p)))
		used, n := l.lex(in, p)
		l.src.Discard(used)
		if n > 0 {
			return n, nil
		}
	}
}

// lex reads in, writes to out (at least as long) what encoding/csv is to
// see of it, and returns how many bytes of in it used and of out it wrote.
// It stops early at a record over a limit, having set l.err, and in sync
// mode after a line end.
//
// It runs once over every byte of a file, so its state is in locals and
// the common steps (a run of plain bytes, a comma, a closing quote) take few
// branches.
func (l *limiter) lex(in, out []byte) (used, w int) {
	var (
		i, e    = 0, 0 // in[e:i] is yet to be written to out
		st      = l.state
		n       = l.n
		fields  = l.fields
		line    = l.line
		cr      = l.cr
		bare    = &l.bare
		quoted  = &l.quoted
		comma   = l.comma
		maxCell = l.lim.cell
		maxCols = l.lim.cols
		err     error // a refusal, at in[i]
	)
	for i < len(in) {
		if l.quiet {
			w += copy(out[w:], in[e:i])
			l.line = line
			var nls int
			i, nls = l.pass(in, i, out[w:])
			w += nls
			e, st, line = i, l.state, l.line
			n, fields, cr = 0, 0, false
			if l.sync && nls > 0 {
				goto done
			}
			continue
		}
		switch st {
		case lexRecord:
			switch c := in[i]; {
			case c == '\n':
				line++
				i++
				if l.sync {
					goto done
				}
				continue
			case c == l.comment && c != 0:
				st = lexLine
				i++
				continue
			}
			l.start, fields, n = line, 1, 0
			st = lexField
			fallthrough
		case lexField:
			if in[i] == '"' {
				st = lexQuoted
				i++
				continue
			}
			st = lexBare
			fallthrough
		case lexBare:
			if cr {
				// The '\r' before in[i] is in the value unless a '\n' follows.
				cr = false
				if in[i] != '\n' {
					if n == maxCell {
						err = l.cellError(fields, line)
						goto done
					}
					n++
				}
			}
			s := i
			for i < len(in) && !bare[in[i]] {
				i++
			}
			if n+i-s > maxCell {
				i = s + maxCell - n
				err = l.cellError(fields, line)
				goto done
			}
			n += i - s
			if i == len(in) {
				continue
			}
			switch c := in[i]; {
			case c == comma:
				if fields == maxCols {
					err = l.columnsError(line)
					goto done
				}
				fields++
				n = 0
				i++
				st = lexField
			case c == '\n':
				line++
				i++
				st = lexRecord
				if l.sync {
					goto done
				}
			case c == '\r':
				cr = true
				i++
			case c >= utf8.RuneSelf:
				l.sawNonASCII()
			default: // a bare quote: encoding/csv drops the rest of the line
				st = lexLine
				i++
			}
		case lexQuoted:
			if cr {
				cr = false
				if in[i] != '\n' {
					if n == maxCell {
						err = l.cellError(fields, line)
						goto done
					}
					n++
				}
			}
			s := i
			for i < len(in) && !quoted[in[i]] {
				i++
			}
			if n+i-s > maxCell {
				i = s + maxCell - n
				err = l.cellError(fields, line)
				goto done
			}
			n += i - s
			if i == len(in) {
				continue
			}
			switch in[i] {
			case '"':
				st = lexQuote
				i++
			case '\r':
				cr = true
				i++
			case '\n': // in the value
				if n == maxCell {
					err = l.cellError(fields, line)
					goto done
				}
				n++
				line++
				i++
				if l.sync {
					goto done
				}
			default:
				l.sawNonASCII()
			}
		case lexQuote:
			switch c := in[i]; {
			case c == comma:
				if fields == maxCols {
					err = l.columnsError(line)
					goto done
				}
				fields++
				n = 0
				i++
				st = lexField
			case c == '"': // a doubled quote: one in the value
				if n == maxCell {
					err = l.cellError(fields, line)
					goto done
				}
				n++
				i++
				st = lexQuoted
			case c == '\n':
				line++
				i++
				st = lexRecord
				if l.sync {
					goto done
				}
			case c == '\r':
				i++
				st = lexQuoteCR
			default: // a quote error: encoding/csv drops the rest of the line
				i++
				st = lexLine
			}
		case lexQuoteCR:
			i++
			if in[i-1] != '\n' {
				st = lexLine // a quote error, as above; in[i-1] shows it
				continue
			}
			line++
			st = lexRecord
			if l.sync {
				goto done
			}
		case lexLine:
			// encoding/csv drops the rest of the line: so does the limiter,
			// so that a long one is not buffered.
			w += copy(out[w:], in[e:i])
			j := bytes.IndexByte(in[i:], '\n')
			if j < 0 {
				e, i = len(in), len(in)
				continue
			}
			e = i + j
			i = e + 1
			line++
			st = lexRecord
			if l.sync {
				goto done
			}
		}
	}
done:
	w += copy(out[w:], in[e:i])
	l.state, l.n, l.fields, l.line, l.cr = st, n, fields, line, cr
	if err != nil {
		// The record goes up to in[i], not included; pass over the rest.
		l.err = &LineError{Line: l.start, Err: err}
		l.quiet, l.dropNL, l.cr = true, true, false
	}
	return i, w
}

func (l *limiter) columnsError(line int) error {
	return fmt.Errorf("%w: more than %d%s", ErrTooManyColumns, l.lim.cols, l.foundAt(line))
}

func (l *limiter) cellError(field, line int) error {
	return fmt.Errorf("%w: column %d holds more than %d bytes%s", ErrCellTooLong, field, l.lim.cell, l.foundAt(line))
}

// foundAt says where a record that started on an earlier line went over a
// limit.
func (l *limiter) foundAt(line int) string {
	if line == l.start {
		return ""
	}
	return fmt.Sprintf(" (found at line %d)", line)
}

// pass passes over the refused record from in[i] on, following its syntax
// only to find where it ends, and writes to out the line ends encoding/csv
// is to count. It returns where it stopped: at the end of in, or after the
// record's last '\n' (and then l.quiet is false), and how many it wrote.
func (l *limiter) pass(in []byte, i int, out []byte) (int, int) {
	n := 0
	for i < len(in) {
		switch l.state {
		case lexField:
			if in[i] == '"' {
				l.state = lexQuoted
				i++
				continue
			}
			l.state = lexBare
			continue
		case lexQuoted:
			// Only the line ends in the value matter here.
			j := bytes.IndexByte(in[i:], '"')
			if j < 0 {
				j = len(in) - i
			} else {
				l.state = lexQuote
			}
			for range bytes.Count(in[i:i+j], nl) {
				l.line++
				if l.dropNL {
					l.dropNL = false
					continue
				}
				out[n] = '\n'
				n++
			}
			i += j
			if l.state == lexQuote {
				i++
			}
			continue
		case lexQuote:
			switch in[i] {
			case '"':
				l.state = lexQuoted
			case l.comma:
				l.state = lexField
			case '\n':
				return l.passed(i, out, n)
			case '\r':
				l.state = lexQuoteCR
			default:
				l.state = lexLine
			}
			i++
			continue
		case lexQuoteCR:
			if in[i] == '\n' {
				return l.passed(i, out, n)
			}
			l.state = lexLine
			i++
			continue
		}
		if l.state == lexBare {
			for i < len(in) && in[i] != l.comma && in[i] != '"' && in[i] != '\n' {
				i++
			}
			if i == len(in) {
				break
			}
			switch in[i] {
			case l.comma:
				l.state = lexField
				i++
				continue
			case '\n':
				return l.passed(i, out, n)
			}
			l.state = lexLine // a bare quote
		}
		// lexLine: the record ends with the line.
		j := bytes.IndexByte(in[i:], '\n')
		if j < 0 {
			return len(in), n
		}
		return l.passed(i+j, out, n)
	}
	return i, n
}

// passed ends the refused record at the '\n' at in[i].
func (l *limiter) passed(i int, out []byte, n int) (int, int) {
	l.line++
	l.state = lexRecord
	l.quiet = false
	if l.dropNL {
		l.dropNL = false
		return i + 1, n
	}
	out[n] = '\n'
	return i + 1, n + 1
}

var nl = []byte{'\n'}
