// Package webhook reads exported logs of WhatsApp Cloud API status webhooks.
//
// An operator's webhook receiver logs each POST body Meta sends; `bulksend
// reconcile` reads that log to settle rows whose send outcome is unknown and
// to record delivered and read. A log is either newline-delimited JSON, one
// webhook body per line, or a JSON array of bodies; Open makes gzip and
// stdin transparent, and a Reader turns the bodies into one Status per
// statuses[] entry, in constant memory however large the log.
//
// The package decodes the few fields it needs with its own small JSON
// scanner instead of encoding/json, which is about ten times slower on
// these bodies (see BenchmarkReader). The scanner accepts exactly the documents
// encoding/json accepts and decodes strings the same way; a differential
// fuzz test (FuzzParse) holds it to that.
package webhook

import (
	"bytes"
	"fmt"
	"io"
	"time"
)

// MaxRecord is the longest line (or array element) a Reader decodes, in
// bytes. Meta's bodies are at most about 3 MB; a longer record is counted
// invalid and skipped, never buffered beyond this size.
const MaxRecord = 16 << 20

// keepFirst is how many line numbers Counts keeps per kind of skipped line.
const keepFirst = 5

// Status is one entry of a webhook's statuses[] array: what happened to one
// message bulksend sent.
type Status struct {
	WAMID         string    // statuses[].id, never empty
	Status        string    // "sent", "delivered", "read", "failed", or whatever else Meta sends; never empty
	Timestamp     time.Time // statuses[].timestamp (unix seconds), in UTC
	RecipientID   string    // statuses[].recipient_id ("" if absent)
	CallbackData  string    // statuses[].biz_opaque_callback_data ("" if absent)
	PhoneNumberID string    // value.metadata.phone_number_id of the change it came in ("" if absent)
	ErrorCode     int       // code of the first statuses[].errors[] entry, 0 if none
	ErrorTitle    string    // title of the same entry, "" if none
	Line          int       // 1-based line of its body; in a JSON array, the body's 1-based position
}

// Counts says what a Reader has seen so far.
//
// Every record (a non-blank line, or an element of a JSON array) is counted
// in Lines and in exactly one of Bodies, NotStatus and Invalid, so
// Lines == Bodies + NotStatus + Invalid.
type Counts struct {
	Lines     int64 // records read: non-blank lines, or array elements
	Bodies    int64 // webhook bodies that carried at least one status
	Statuses  int64 // statuses returned by Next
	NotStatus int64 // webhook bodies without statuses (incoming messages, template updates, …)
	Invalid   int64 // records that are not JSON, not a webhook body, or hold a malformed status

	FirstInvalid   []int // lines (as Status.Line) of the first few invalid records
	FirstNotStatus []int // lines (as Status.Line) of the first few bodies without statuses
}

type mode uint8

const (
	modeDetect     mode = iota // before the first record, or after a JSON array closed
	modeLines                  // newline-delimited JSON
	modeArrayStart             // just after '[': an element or ']' comes next
	modeArray                  // inside a JSON array, after an element's ','
)

// Reader reads statuses from a webhook log. Its input is either
// newline-delimited JSON (one webhook body per line; CRLF line ends, blank
// lines and a leading UTF-8 byte-order mark are fine) or a JSON array of
// webhook bodies, told apart by the first non-space byte being '['. Arrays
// are read element by element, never whole; arrays one after the other
// (concatenated exports) are read in turn, their elements numbered on, and
// lines after an array are read as newline-delimited JSON. An array cut
// short is read up to the cut: a partial last element, or a missing one
// after a ',' or the '[', counts as one invalid record.
//
// A line or element longer than MaxRecord is counted invalid and skipped,
// so memory stays below MaxRecord plus a little however long the log.
//
// A record is valid when it is a JSON object whose "entry" is an array; its
// statuses are the objects in entry[].changes[].value.statuses[]. Along that
// path null counts as absent, and any other JSON type than the expected one
// makes the record invalid. A status needs non-empty "id" and "status"
// strings and a "timestamp" of unix seconds (a string of digits, as Meta
// sends it, or an integer); "recipient_id", "biz_opaque_callback_data" and
// errors[].title must be strings and errors[].code an integer when present.
// One malformed status makes its whole record invalid: none of its statuses
// is returned. Keys are matched exactly; when a key repeats, the last one
// wins, as in encoding/json. Unknown fields, whatever their content, are
// skipped.
//
// A Reader is not safe for concurrent use. Its zero value is not usable:
// create one with NewReader.
type Reader struct {
	src     io.Reader
	buf     []byte
	r, w    int   // buf[r:w] is read but not consumed
	eof     bool  // src said io.EOF
	readErr error // src failed; returned once buffered records are used up
	max     int   // longest record decoded (MaxRecord; tests lower it)

	mode    mode
	started bool // the byte-order-mark check has been done
	line    int  // physical line number of buf[r], 1-based
	elem    int  // array elements seen, across arrays

	sc     scanner
	pos    int   // next status of sc.out to return
	err    error // sticky: io.EOF or the read error
	counts Counts
}

// NewReader returns a Reader that reads the webhook log r. The log must not
// be compressed; Open decompresses.
func NewReader(r io.Reader) *Reader {
	return &Reader{src: r, buf: make([]byte, 64<<10), max: MaxRecord, line: 1}
}

// Next returns the next status of the log. Records that are not status
// webhooks are counted (see Counts) and skipped. At the end of the log Next
// returns io.EOF; if reading the log fails (an I/O error, a truncated or
// corrupt gzip stream) it returns that error, wrapped. Either error is
// returned again by every later call.
func (r *Reader) Next() (Status, error) {
	for {
		if r.pos < len(r.sc.out) {
			s := r.sc.out[r.pos]
			r.pos++
			r.counts.Statuses++
			return s, nil
		}
		if r.err != nil {
			return Status{}, r.err
		}
		r.sc.out, r.pos = r.sc.out[:0], 0
		if err := r.step(); err != nil {
			r.err = err
		}
	}
}

// Counts returns what the Reader has counted so far.
func (r *Reader) Counts() Counts {
	c := r.counts
	c.FirstInvalid = append([]int(nil), c.FirstInvalid...)
	c.FirstNotStatus = append([]int(nil), c.FirstNotStatus...)
	return c
}

// step consumes at most one record and decodes it into r.sc.out. It
// returns io.EOF at the end of the log.
func (r *Reader) step() error {
	switch r.mode {
	case modeDetect:
		if !r.started {
			r.started = true
			r.skipBOM()
		}
		c, err := r.peekNonSpace()
		if err != nil {
			return err
		}
		if c == '[' {
			r.r++
			r.mode = modeArrayStart
		} else {
			r.mode = modeLines
		}
		return nil

	case modeLines:
		rec, line, tooLong, err := r.readLine()
		if err != nil {
			return err
		}
		if tooLong {
			r.count(kindInvalid, line)
			return nil
		}
		if rec = trimSpace(rec); len(rec) > 0 {
			r.record(rec, line)
		}
		return nil

	case modeArrayStart:
		c, err := r.peekNonSpace()
		if err == io.EOF {
			// "[" and nothing more: the log was cut short.
			r.elem++
			r.count(kindInvalid, r.elem)
		}
		if err != nil {
			return err
		}
		if c == ']' {
			r.r++
			r.mode = modeDetect
			return nil
		}
		r.mode = modeArray
		return nil

	default: // modeArray
		rec, res, err := r.readElement()
		if err != nil {
			return err
		}
		r.elem++
		switch res {
		case elemTooLong:
			r.count(kindInvalid, r.elem)
		case elemCut, elemLast, elemNext:
			if rec = trimSpace(rec); len(rec) == 0 {
				r.count(kindInvalid, r.elem) // "[1,,2]", "[1,]", or cut after ','
			} else {
				r.record(rec, r.elem)
			}
		}
		switch res {
		case elemCut:
			return io.EOF
		case elemLast:
			r.mode = modeDetect
		}
		return nil
	}
}

// record decodes one non-blank record and counts it.
func (r *Reader) record(rec []byte, line int) {
	k := r.sc.parse(rec, line)
	if k != kindStatus {
		r.sc.out = r.sc.out[:0]
	}
	r.count(k, line)
}

func (r *Reader) count(k kind, line int) {
	c := &r.counts
	c.Lines++
	switch k {
	case kindStatus:
		c.Bodies++
	case kindNotStatus:
		c.NotStatus++
		if len(c.FirstNotStatus) < keepFirst {
			c.FirstNotStatus = append(c.FirstNotStatus, line)
		}
	default:
		c.Invalid++
		if len(c.FirstInvalid) < keepFirst {
			c.FirstInvalid = append(c.FirstInvalid, line)
		}
	}
}

// fill reads more of src into buf, keeping the unconsumed buf[r:w] (moved to
// the front) and growing buf, up to max+1 bytes, when it is full. It reports
// whether it read anything; when not, r.eof or r.readErr says why.
func (r *Reader) fill() bool {
	if r.eof || r.readErr != nil {
		return false
	}
	if r.r > 0 {
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	if r.w == len(r.buf) {
		n := min(2*len(r.buf), r.max+1)
		if n <= len(r.buf) {
			// Unreachable: callers drop a record before it outgrows max+1.
			r.readErr = fmt.Errorf("read webhook log after line %d: record buffer full", r.line)
			return false
		}
		nb := make([]byte, n)
		copy(nb, r.buf[:r.w])
		r.buf = nb
	}
	for range 100 {
		n, err := r.src.Read(r.buf[r.w:])
		r.w += n
		switch {
		case err == io.EOF:
			r.eof = true
		case err != nil:
			r.readErr = fmt.Errorf("read webhook log after line %d: %w", r.line, err)
		}
		if n > 0 || err != nil {
			return n > 0
		}
	}
	r.readErr = fmt.Errorf("read webhook log after line %d: %w", r.line, io.ErrNoProgress)
	return false
}

// endErr is the error for running out of input: the read error if there
// was one, else io.EOF.
func (r *Reader) endErr() error {
	if r.readErr != nil {
		return r.readErr
	}
	return io.EOF
}

var bom = []byte("\xef\xbb\xbf")

// skipBOM drops a UTF-8 byte-order mark at the start of the log, as some
// Windows tools write one. A read error is left for the caller to meet.
func (r *Reader) skipBOM() {
	for r.w-r.r < len(bom) && r.fill() {
	}
	if bytes.HasPrefix(r.buf[r.r:r.w], bom) {
		r.r += len(bom)
	}
}

// peekNonSpace consumes JSON whitespace and returns the next byte without
// consuming it.
func (r *Reader) peekNonSpace() (byte, error) {
	for {
		for r.r < r.w {
			switch c := r.buf[r.r]; c {
			case '\n':
				r.line++
				fallthrough
			case ' ', '\t', '\r':
				r.r++
			default:
				return c, nil
			}
		}
		if !r.fill() {
			return 0, r.endErr()
		}
	}
}

// readLine returns the next line without its '\n', and its line number. A
// line longer than max is consumed but not returned: tooLong is set. The
// last line may lack its '\n'. At the end of input err is io.EOF; after a
// read error it is that error, and a partial last line is dropped.
func (r *Reader) readLine() (rec []byte, line int, tooLong bool, err error) {
	searched := 0 // bytes of buf[r:w] known to hold no '\n'
	for {
		if i := bytes.IndexByte(r.buf[r.r+searched:r.w], '\n'); i >= 0 {
			end := r.r + searched + i
			rec, line = r.buf[r.r:end], r.line
			r.r = end + 1
			r.line++
			if len(rec) > r.max {
				return nil, line, true, nil
			}
			return rec, line, false, nil
		}
		searched = r.w - r.r
		if searched > r.max {
			return r.discardLine()
		}
		if !r.fill() {
			if r.readErr != nil || r.r == r.w {
				return nil, 0, false, r.endErr()
			}
			rec, line = r.buf[r.r:r.w], r.line
			r.r = r.w
			r.line++
			return rec, line, false, nil
		}
	}
}

// discardLine consumes the rest of a line that is too long to decode.
func (r *Reader) discardLine() (rec []byte, line int, tooLong bool, err error) {
	line = r.line
	r.line++
	for {
		if i := bytes.IndexByte(r.buf[r.r:r.w], '\n'); i >= 0 {
			r.r += i + 1
			return nil, line, true, nil
		}
		r.r = r.w
		if !r.fill() {
			if r.readErr != nil {
				return nil, 0, false, r.readErr
			}
			return nil, line, true, nil
		}
	}
}

// elemResult says how readElement's element ended.
type elemResult uint8

const (
	elemNext    elemResult = iota // at a ',': more elements follow
	elemLast                      // at the array's ']'
	elemTooLong                   // longer than max: consumed, not returned
	elemCut                       // input ended (or failed) before ',' or ']'
)

// Byte classes for readElement: plainArray[c] is true for bytes that need no
// attention between values, plainString[c] for bytes inside a string.
var plainArray, plainString [256]bool

func init() {
	for c := range 256 {
		switch c {
		case '"', '\\', '{', '}', '[', ']', ',', '\n':
		default:
			plainArray[c] = true
		}
		switch c {
		case '"', '\\', '\n':
		default:
			plainString[c] = true
		}
	}
}

// readElement returns the bytes of the next element of a JSON array, up to
// the ',' or ']' that ends it at nesting depth 0 (outside strings), and
// consumes that delimiter. It only tracks strings and brackets, so an
// element that is not JSON still ends at the next delimiter, and decoding
// decides whether it is valid. At the end of input it returns what it has
// with elemCut (nil if that was too long); after a read error it returns the
// error.
func (r *Reader) readElement() (rec []byte, res elemResult, err error) {
	var (
		off     int // bytes of buf[r:w] scanned
		depth   int
		inStr   bool
		esc     bool
		dropped bool // part of the element was dropped: it is too long
	)
	for {
		d := r.buf[r.r:r.w]
		i := off
		for i < len(d) {
			c := d[i]
			if inStr {
				if c == '\n' {
					r.line++
				}
				if esc {
					esc = false
				} else if !plainString[c] {
					switch c {
					case '"':
						inStr = false
					case '\\':
						esc = true
					}
				} else {
					i++
					for i < len(d) && plainString[d[i]] {
						i++
					}
					continue
				}
				i++
				continue
			}
			if plainArray[c] {
				i++
				for i < len(d) && plainArray[d[i]] {
					i++
				}
				continue
			}
			switch c {
			case '"':
				inStr = true
			case '\n':
				r.line++
			case '{', '[':
				depth++
			case '}', ']':
				if depth > 0 {
					depth--
				} else if c == ']' {
					return r.endElement(d, i, dropped, elemLast)
				}
			case ',':
				if depth == 0 {
					return r.endElement(d, i, dropped, elemNext)
				}
			}
			i++
		}
		off = len(d)
		if off > r.max {
			dropped = true
			r.r, off = r.w, 0
		}
		if !r.fill() {
			if r.readErr != nil {
				return nil, elemCut, r.readErr
			}
			rec = r.buf[r.r:r.w]
			r.r = r.w
			if dropped {
				rec = nil
			}
			return rec, elemCut, nil
		}
	}
}

func (r *Reader) endElement(d []byte, i int, dropped bool, res elemResult) ([]byte, elemResult, error) {
	r.r += i + 1
	if dropped || i > r.max {
		return nil, elemTooLong, nil
	}
	return d[:i], res, nil
}

// trimSpace removes JSON whitespace from both ends of b.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n'
}
