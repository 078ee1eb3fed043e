package smsevent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
)

// Reader reads SMS events from a log (see the package comment for its
// forms). CRLF line ends, blank lines and a leading UTF-8 byte-order mark
// are fine.
//
// Records. Between records, blanks, line ends and the separators '[', ']'
// and ',' are skipped, so the elements of a JSON array are records like
// any other. A '{' starts a record, which encoding/json reads to its end:
// it may span lines or share one with other records. A line that starts
// with a date-time (2026-11-30T10:00:00.000Z, with optional fraction and
// zone, 'T' or a space in the middle), then blanks and '{', optionally
// with one word (a log stream) and blanks before the '{', is a CloudWatch
// Logs line: its record is the object after the prefix. Anything else,
// such as a log line, a bare number or string, is one invalid record
// together with the rest of its line.
//
// A record is decoded as JSON. It is an event when it is an object whose
// eventType starts with "TEXT_", or an SNS notification (Type
// "Notification") whose Message string holds one. Any other JSON object, as
// a voice or MMS event, an SNS subscription confirmation or a notification
// whose Message does not start with '{' (text, or another JSON value), is
// counted NotEvent. A record is invalid if it is not JSON, is longer than
// MaxRecord, is a notification without a Message string or whose Message
// starts with '{' but is not JSON, or is an event whose messageId is not a
// non-empty string, whose eventTimestamp is not a positive whole number of
// milliseconds (a JSON number or a string of digits), whose isFinal is not
// a boolean (or "true" or "false"), whose originationPhoneNumber or
// messageStatusDescription is not a string, or whose context is not an
// object with a string "bulksend" (when present). These are the fields
// reconcile uses; any other field of the wrong type is read as absent: a
// price that is not a non-negative number (or a string holding one) below a
// million dollars, parts that are not a whole number. null is absent
// everywhere. Keys match exactly; when a key repeats, the last one wins.
//
// Recovery. A record never runs into a line that starts another: a line
// whose first non-blank byte is a '{' or '[' indented no deeper than the
// first line of the record, or a CloudWatch Logs line. A record still open
// there was cut short (as when a Firehose delivery failed half-way and was
// retried): it is invalid, and reading goes on at that line. A record that
// is not JSON is invalid and reading goes on where the decoder found it
// broken, if that is a '{' (the record was cut short and the next one
// follows it on the line); otherwise the rest of it is skipped, up to the
// next '{' that follows a '}' on a line (blanks between: where
// concatenated records meet) or the next line that starts a record. A
// record longer than MaxRecord is skipped the same way from its
// MaxRecord-th byte on, without being kept. Only the first 600 bytes of a
// line are looked at to tell whether it starts a record.
//
// Numbers (Event.Line, Counts.FirstInvalid): a record is numbered by the
// physical line, 1-based, on which it starts.
//
// A Reader is not safe for concurrent use. Its zero value is not usable:
// create one with NewReader.
type Reader struct {
	br  *bufio.Reader
	dec *json.Decoder // reads records through feed; replaced after an error, which it keeps
	max int           // longest record decoded (MaxRecord; tests lower it)
	rec fields        // the record dec decodes into

	// The log is read in pieces: a line, or the first or next bufio
	// buffer's worth of a longer one (bufio.Reader.ReadSlice).
	piece  []byte
	pos    int  // piece[pos:] is not read yet
	head   bool // piece starts its line
	eol    bool // piece ends its line
	line   int  // piece's line, 1-based
	indent int  // blanks at the start of piece's line (all of piece when it is all blanks)
	base   int  // indent of the first line of the record dec decodes
	fed    int  // bytes of that record given to dec

	err    error // sticky: io.EOF or the read error, once reading hit it
	failed error // sticky: what Next returns
	counts Counts
}

// lineHead is how much of a line's start is looked at to tell whether it
// starts a record: blanks, a date-time, a log stream's name (at most 512
// bytes) and blanks.
const lineHead = 600

// errTooLong is what feed says of a record that goes on past MaxRecord
// bytes.
var errTooLong = errors.New("record too long")

// NewReader returns a Reader of the SMS event log r. The log must not be
// compressed: webhook.Open decompresses.
func NewReader(r io.Reader) *Reader { return newReader(r, 64<<10, MaxRecord) }

// newReader is NewReader with a read buffer of size bytes (at least
// lineHead) and records of at most limit bytes.
func newReader(src io.Reader, size, limit int) *Reader {
	r := &Reader{br: bufio.NewReaderSize(src, max(size, lineHead)), max: limit, rec: fields{}, eol: true}
	r.dec = json.NewDecoder((*feed)(r))
	return r
}

// Next returns the next event of the log. Records that are not events
// are counted (see Counts) and skipped. At the end of the log Next returns
// io.EOF; if reading the log fails (an I/O error, a truncated or corrupt
// gzip stream) it returns that error, wrapped. Either is returned again by
// every later call.
func (r *Reader) Next() (Event, error) {
	for r.failed == nil {
		ev, ok, err := r.step()
		if err != nil {
			r.failed = err
			break
		}
		if ok {
			return ev, nil
		}
	}
	return Event{}, r.failed
}

// Counts returns what the Reader has counted so far.
func (r *Reader) Counts() Counts {
	c := r.counts
	c.FirstInvalid = append([]int(nil), c.FirstInvalid...)
	return c
}

// step reads at most one record; ok says it was an event.
func (r *Reader) step() (Event, bool, error) {
	c, err := r.skipSpace()
	if err != nil {
		return Event{}, false, err
	}
	if r.head && r.pos == blanks(r.piece) && isDigit(c) {
		if i := prefix(r.piece); i >= 0 {
			r.pos, c = i, '{'
		}
	}
	if c != '{' {
		r.count(kindInvalid, r.line)
		return Event{}, false, r.skipLine()
	}
	return r.record()
}

// record reads the record that starts with the '{' at piece[pos].
func (r *Reader) record() (Event, bool, error) {
	line := r.line
	r.base, r.fed = r.indent, 0
	start := r.dec.InputOffset()
	clear(r.rec)
	err := r.dec.Decode(&r.rec)
	if err == nil {
		// feed stops at each '}': dec holds nothing past the record,
		// which ends at piece[pos].
		ev, k := r.rec.event(line, false)
		r.count(k, line)
		return ev, k == kindEvent, nil
	}
	if err == r.err && err != io.EOF {
		return Event{}, false, err // reading the log failed
	}
	r.count(kindInvalid, line)
	r.dec = json.NewDecoder((*feed)(r))
	if errors.Is(err, io.ErrUnexpectedEOF) {
		// Cut short by the end of the log or by a line that starts a
		// record: piece, whose start is yet to read.
		return Event{}, false, nil
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		// Byte k of the record broke it. dec reads all it has before it
		// asks for more, so k is in piece, fed-k bytes before pos.
		k := int(syn.Offset-start) - 1
		r.pos -= r.fed - k
		if r.piece[r.pos] == '{' {
			return Event{}, false, nil
		}
	}
	return Event{}, false, r.skip() // errTooLong, or a syntax error
}

// feed is the Reader as the io.Reader its Decoder reads: the record that
// starts at piece[pos], up to a line that starts another (io.EOF), or
// errTooLong past MaxRecord bytes. It gives at most up to the next '}' at
// a time, so that the Decoder never holds what follows a record: a record
// ends with a '}', and the Decoder reads on only until it has one.
type feed Reader

func (f *feed) Read(p []byte) (int, error) {
	r := (*Reader)(f)
	if r.pos == len(r.piece) {
		if err := r.next(); err != nil {
			return 0, err
		}
		if r.head && startsRecord(r.piece, r.base) {
			return 0, io.EOF
		}
	}
	if r.fed == r.max {
		return 0, errTooLong
	}
	d := r.piece[r.pos:]
	if i := bytes.IndexByte(d, '}'); i >= 0 {
		d = d[:i+1]
	}
	n := copy(p, d[:min(len(d), r.max-r.fed)])
	r.pos += n
	r.fed += n
	return n, nil
}

// skipSpace skips blanks, line ends and the separators '[', ']' and ','
// and returns the byte after them, without reading it.
func (r *Reader) skipSpace() (byte, error) {
	for {
		for ; r.pos < len(r.piece); r.pos++ {
			switch c := r.piece[r.pos]; c {
			case ' ', '\t', '\r', '\n':
			case '[', ']', ',':
			default:
				return c, nil
			}
		}
		if err := r.next(); err != nil {
			return 0, err
		}
	}
}

// skipLine skips the rest of the line.
func (r *Reader) skipLine() error {
	for {
		r.pos = len(r.piece)
		if r.eol {
			return nil
		}
		if err := r.next(); err != nil {
			return err
		}
	}
}

// skip skips the rest of a broken record, from piece[pos] on: up to the
// next '{' after a '}' on a line, blanks between, or the next line that
// starts a record.
func (r *Reader) skip() error {
	closed := false // the last non-blank byte of the line was a '}'
	for {
		for ; r.pos < len(r.piece); r.pos++ {
			switch r.piece[r.pos] {
			case '}':
				closed = true
			case ' ', '\t', '\r':
			case '{':
				if closed {
					return nil
				}
				fallthrough
			default:
				closed = false
			}
		}
		if err := r.next(); err != nil {
			return err
		}
		if r.head {
			if startsRecord(r.piece, r.base) {
				return nil
			}
			closed = false
		}
	}
}

// next makes the next piece of the log current.
func (r *Reader) next() error {
	if r.err != nil {
		return r.err
	}
	if r.eol {
		r.line++
	}
	p, err := r.br.ReadSlice('\n')
	if err != nil && err != bufio.ErrBufferFull {
		r.err = io.EOF
		if err != io.EOF {
			r.err = fmt.Errorf("read SMS event log after line %d: %w", r.line, err)
		}
		if len(p) == 0 {
			return r.err
		}
	}
	r.head, r.eol = r.eol, p[len(p)-1] == '\n'
	if r.head {
		if r.line == 1 {
			p = bytes.TrimPrefix(p, []byte("\xef\xbb\xbf"))
		}
		r.indent = blanks(p)
	}
	r.piece, r.pos = p, 0
	return nil
}

// count counts a record of kind k that starts on line.
func (r *Reader) count(k kind, line int) {
	c := &r.counts
	c.Records++
	switch k {
	case kindEvent:
		c.Events++
	case kindNotEvent:
		c.NotEvent++
	default:
		c.Invalid++
		if len(c.FirstInvalid) < keepFirst {
			c.FirstInvalid = append(c.FirstInvalid, line)
		}
	}
}

// startsRecord reports whether the line that d starts with starts a
// record (see Reader): its first non-blank byte is a '{' or '[' at most
// base blanks in, or it is a CloudWatch Logs line.
func startsRecord(d []byte, base int) bool {
	d = d[:min(len(d), lineHead)]
	i := blanks(d)
	return i < len(d) && (i <= base && (d[i] == '{' || d[i] == '[') || isDigit(d[i]) && prefix(d) >= 0)
}

// cloudWatch matches the start of a CloudWatch Logs line (see Reader) up
// to the '{' of its record.
var cloudWatch = regexp.MustCompile(`^[ \t\r]*\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(?:\.\d+)?(?:[Zz]|[+-]\d\d:?\d\d)?[ \t]+(?:[^ \t\r\n{]+[ \t]+)?\{`)

// prefix returns where the '{' is that follows a CloudWatch Logs prefix
// at the start of the line that d starts with, -1 if it has none.
func prefix(d []byte) int {
	m := cloudWatch.Find(d[:min(len(d), lineHead)])
	return len(m) - 1 // m ends with the '{'
}

// blanks is how many blanks d starts with.
func blanks(d []byte) int {
	i := 0
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\r') {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
