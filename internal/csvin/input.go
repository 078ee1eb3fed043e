package csvin

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrBadDelimiter is returned for an Options.Delimiter other than the ones
// spreadsheets write. Like ErrUnknownRegion it is a configuration mistake,
// not a problem with the file.
var ErrBadDelimiter = errors.New("unsupported delimiter")

// The encodings a file can be in, as Reader.Encoding reports them.
const (
	encUTF8    = "UTF-8"
	encUTF8BOM = "UTF-8 with BOM"
	encUTF16LE = "UTF-16LE"
	encUTF16BE = "UTF-16BE"
)

// bufSize is the size of the buffers between the file and encoding/csv. The
// delimiter is detected within the first one.
const bufSize = 64 << 10

// checkDelimiter returns an error wrapping ErrBadDelimiter unless d is 0
// (detect) or one of the delimiters spreadsheets write.
func checkDelimiter(d rune) error {
	switch d {
	case 0, ',', ';', '\t', '|':
		return nil
	}
	return fmt.Errorf("%w %s (want ',', ';', tab or '|')", ErrBadDelimiter, delimiterName(d))
}

// delimiterName is d for a message: "','", "tab".
func delimiterName(d rune) string {
	if d == '\t' {
		return "tab"
	}
	return strconv.QuoteRune(d)
}

// openInput returns the csv.Reader the package uses for r: strict RFC 4180
// quoting, any number of fields per row (checked by the caller, with a
// better message), and the record slice reused between rows. It reads the
// byte-order mark, if any, decodes UTF-16 to UTF-8 as it streams, and splits
// fields at delim, or at the delimiter detected from the header line when
// delim is 0. With comments, lines whose first non-space character is '#'
// are passed over by the detection, as ListReader passes them over.
//
// Between the text and the csv.Reader is the limiter that refuses records
// over lim; a caller that sets the csv.Reader's Comment sets the limiter's.
func openInput(r io.Reader, delim rune, comments bool, lim limits) (cr *csv.Reader, l *limiter, encoding string, err error) {
	br := bufio.NewReaderSize(r, bufSize)
	start, err := br.Peek(3)
	if err != nil && err != io.EOF {
		return nil, nil, "", fmt.Errorf("read: %w", err)
	}
	encoding = encUTF8
	switch {
	case bytes.HasPrefix(start, []byte("\xEF\xBB\xBF")):
		br.Discard(3)
		encoding = encUTF8BOM
	case bytes.HasPrefix(start, []byte("\xFF\xFE")):
		br.Discard(2)
		encoding = encUTF16LE
		br = bufio.NewReaderSize(&utf16Reader{src: br}, bufSize)
	case bytes.HasPrefix(start, []byte("\xFE\xFF")):
		br.Discard(2)
		encoding = encUTF16BE
		br = bufio.NewReaderSize(&utf16Reader{src: br, bigEndian: true}, bufSize)
	}
	if delim == 0 {
		delim = detectDelimiter(br, comments)
	}
	l = newLimiter(br, delim, lim)
	cr = csv.NewReader(bufio.NewReaderSize(l, bufSize)) // a *bufio.Reader: csv uses it as it is
	cr.Comma = delim
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	return cr, l, encoding, nil
}

// detectDelimiter returns the delimiter of the header line at the start of
// br without consuming it, so that the detection costs only that line. See
// headerDelimiter.
func detectDelimiter(br *bufio.Reader, comments bool) rune {
	for n := 4 << 10; ; n *= 2 {
		// Peek(n) fills the buffer up to n bytes; past the buffer's size it
		// returns what is buffered with an error, so the loop ends.
		p, err := br.Peek(n)
		if d, ok := headerDelimiter(p, comments, err != nil); ok {
			return d
		}
	}
}

// headerDelimiter returns the delimiter of the first line of p that is not
// blank (nothing but spaces and delimiters): whichever of comma, semicolon
// and tab occurs most often outside double quotes, comma on a tie, and comma
// when there are none, which makes a header of one column. With comments,
// a line whose first non-space character is '#' is skipped, and a '#' ends
// the counting on a line (a trailing comment in a plain suppression list).
//
// ok is false when p ends before that line does and more may follow; with
// final, p is all there is and the line is taken as it is. A quoted field
// may hold newlines, so a line here is a record.
func headerDelimiter(p []byte, comments, final bool) (d rune, ok bool) {
	var n [3]int // commas, semicolons, tabs
	quoted, content := false, false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if quoted {
			// A doubled quote closes and reopens: still quoted.
			switch c {
			case '"':
				quoted = false
			case ' ', '\t', '\r', '\n':
			default:
				content = true
			}
			continue
		}
		switch c {
		case '"':
			quoted = true
		case ',':
			n[0]++
		case ';':
			n[1]++
		case '\t':
			n[2]++
		case ' ', '\r':
		case '#':
			if !comments {
				content = true
				break
			}
			end := bytes.IndexByte(p[i:], '\n')
			if end < 0 {
				i = len(p)
				break
			}
			i += end - 1 // the newline is next
		case '\n':
			if content {
				return mostFrequent(n), true
			}
			n = [3]int{}
		default:
			content = true
		}
	}
	if !final {
		return 0, false
	}
	return mostFrequent(n), true
}

// mostFrequent is the delimiter counted most often in n; ties go to the
// earlier of comma, semicolon and tab.
func mostFrequent(n [3]int) rune {
	d, best := ',', n[0]
	if n[1] > best {
		d, best = ';', n[1]
	}
	if n[2] > best {
		d = '\t'
	}
	return d
}

// utf16Reader decodes UTF-16 from src, whose byte-order mark has been read,
// into UTF-8, a buffer at a time.
//
// It does not use golang.org/x/text's decoder because that turns an unpaired
// surrogate into U+FFFD, which is valid UTF-8: the broken text would reach
// the data silently. Here an unpaired surrogate, and an odd byte at the end,
// become the byte 0xFF, which is never valid UTF-8, so the row is refused
// with its line number, like a bad byte in a UTF-8 file.
type utf16Reader struct {
	src       *bufio.Reader
	bigEndian bool
	err       error // from src, once its buffered bytes are decoded

	pend []byte // decoded bytes that did not fit in a short p
	pbuf [utf8.UTFMax]byte
}

func (u *utf16Reader) Read(p []byte) (int, error) {
	if len(u.pend) == 0 && len(p) < utf8.UTFMax {
		// Too short for any code point: decode one aside.
		n, err := u.read(u.pbuf[:])
		if n == 0 {
			return 0, err
		}
		u.pend = u.pbuf[:n]
	}
	if len(u.pend) > 0 {
		n := copy(p, u.pend)
		u.pend = u.pend[n:]
		return n, nil
	}
	return u.read(p)
}

// read decodes into p, which has room for at least one code point, what
// src has buffered, reading more only when that is less than a code point.
func (u *utf16Reader) read(p []byte) (int, error) {
	if u.err == nil {
		// Two units: a surrogate pair is decoded whole.
		if _, err := u.src.Peek(4); err != nil {
			u.err = err
		}
	}
	in, _ := u.src.Peek(u.src.Buffered())
	n, used := u.decode(p, in, u.err != nil)
	u.src.Discard(used)
	if n == 0 {
		return 0, u.err
	}
	return n, nil
}

// decode decodes whole code points from in into p while p has room for
// one more, and returns the bytes written and read. With final, in is the
// end of the text: a high surrogate or a byte left over there is invalid.
func (u *utf16Reader) decode(p, in []byte, final bool) (n, used int) {
	for used+2 <= len(in) && n+utf8.UTFMax <= len(p) {
		c := u.unit(in[used:])
		switch {
		case c < utf8.RuneSelf:
			p[n] = byte(c)
			n++
			used += 2
		case !utf16.IsSurrogate(c):
			n += utf8.EncodeRune(p[n:], c)
			used += 2
		case c < 0xDC00 && used+4 <= len(in):
			if r := utf16.DecodeRune(c, u.unit(in[used+2:])); r != utf8.RuneError {
				n += utf8.EncodeRune(p[n:], r)
				used += 4
				break
			}
			p[n] = 0xFF // a high surrogate without a low one
			n++
			used += 2
		case c < 0xDC00 && !final:
			return n, used // its low surrogate is not buffered yet
		default:
			p[n] = 0xFF // unpaired
			n++
			used += 2
		}
	}
	if final && used+1 == len(in) && n < len(p) {
		p[n] = 0xFF // an odd number of bytes
		n++
		used++
	}
	return n, used
}

// unit is the UTF-16 code unit at the start of b.
func (u *utf16Reader) unit(b []byte) rune {
	if u.bigEndian {
		return rune(b[0])<<8 | rune(b[1])
	}
	return rune(b[1])<<8 | rune(b[0])
}
