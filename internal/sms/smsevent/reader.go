package smsevent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Reader reads SMS events from a log (see the package comment for its
// forms). CRLF line ends, blank lines and a leading UTF-8 byte-order mark
// are fine.
//
// Records. Between records, blanks, line ends and the separators '[', ']'
// and ',' are skipped, so the elements of a JSON array are records like
// any other. A '{' starts a record, which ends where encoding/json would
// end it: it may span lines or share one with other records. A line that starts
// with a date-time (2026-11-30T10:00:00.000Z, with optional fraction and
// zone, 'T' or a space in the middle), then blanks and '{', optionally
// with one word (a log stream) and blanks before the '{', is a CloudWatch
// Logs line: its record is the object after the prefix. Anything else,
// such as a log line, a bare number or string, is one invalid record
// together with the rest of its line.
//
// A record is decoded as JSON. It is an event when it is an object whose
// eventType starts with "TEXT_", an SNS notification (Type "Notification")
// whose Message string holds one, an EventBridge event (an object with a
// "detail-type" and no eventType) whose detail object is one, or a
// notification whose Message is such an EventBridge event; no other
// nesting is unwrapped (a notification in a notification, an EventBridge
// event in a detail). Any other JSON object, as a voice or MMS event, an
// EventBridge registration change, an SNS subscription confirmation, an
// inbound SMS message or a notification whose Message does not start with
// '{' (text, or another JSON value), is counted NotEvent. A record is
// invalid if it is not JSON, is longer than MaxRecord, is a notification
// without a Message string or whose Message starts with '{' but is not
// JSON, is an EventBridge event whose detail-type is not a string or whose
// detail is not an object, or is an event whose messageId is not a
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
// is not JSON is invalid and reading goes on where encoding/json would find
// it broken, if that is a '{' (the record was cut short and the next one
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
// Cost. Reading takes time linear in the log's size whatever it holds,
// each byte looked at a few times at most (TestReaderLinear counts them), and
// memory for one record of at most MaxRecord bytes besides a 64 KB buffer,
// however long its lines.
//
// A Reader is not safe for concurrent use. Its zero value is not usable:
// create one with NewReader.
type Reader struct {
	br  *bufio.Reader
	sc  scanner // finds where a record ends or breaks
	max int     // longest record decoded (MaxRecord; tests lower it)
	rec fields  // the record decoded
	ev  Event   // the event it was, for Next
	// dec decodes a record once it has ended, from src: one Decoder for
	// all, as json.Unmarshal would allocate its state for each.
	dec *json.Decoder
	src bytes.Reader
	buf []byte // a record that spans pieces, as far as read

	// The log is read in pieces: a line, or the first or next bufio
	// buffer's worth of a longer one (bufio.Reader.ReadSlice).
	piece  []byte
	pos    int  // piece[pos:] is not read yet
	head   bool // piece starts its line
	eol    bool // piece ends its line
	line   int  // piece's line, 1-based
	indent int  // blanks at the start of piece's line (all of piece when it is all blanks)
	base   int  // indent of the first line of the record being read

	// work counts the bytes the Reader has looked at, every time it
	// looked: the tests hold it to a few times the log's size.
	work int64

	err    error // sticky: io.EOF or the read error, once reading hit it
	failed error // sticky: what Next returns
	counts Counts

	onInbound func(Inbound) // see SetInbound
}

// SetInbound makes the Reader give fn each inbound SMS message it meets
// (a reply to a two-way number), synchronously, in log order, before Next
// returns the events that follow it. fn must not call Next.
func (r *Reader) SetInbound(fn func(Inbound)) { r.onInbound = fn }

// inbound gives the inbound message rec holds to onInbound. The record is
// decoded again: replies are few beside events.
func (r *Reader) inbound(rec []byte) {
	if r.onInbound == nil {
		return
	}
	if in, ok := ParseInbound(rec); ok {
		r.onInbound(in)
	}
}

// lineHead is how much of a line's start is looked at to tell whether it
// starts a record: blanks, a date-time, a log stream's name (at most 512
// bytes) and blanks.
const lineHead = 600

// NewReader returns a Reader of the SMS event log r. The log must not be
// compressed: logfile.Open decompresses.
func NewReader(r io.Reader) *Reader { return newReader(r, 64<<10, MaxRecord) }

// newReader is NewReader with a read buffer of size bytes (at least
// lineHead) and records of at most limit bytes.
func newReader(src io.Reader, size, limit int) *Reader {
	return &Reader{br: bufio.NewReaderSize(src, max(size, lineHead)), max: limit, rec: fields{}, eol: true}
}

// Next returns the next event of the log. Records that are not events
// are counted (see Counts) and skipped. At the end of the log Next returns
// io.EOF; if reading the log fails (an I/O error, a truncated or corrupt
// gzip stream) it returns that error, wrapped. Either is returned again by
// every later call.
func (r *Reader) Next() (Event, error) {
	for r.failed == nil {
		ok, err := r.step()
		if err != nil {
			r.failed = err
			break
		}
		if ok {
			return r.ev, nil
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
func (r *Reader) step() (bool, error) {
	c, err := r.skipSpace()
	if err != nil {
		return false, err
	}
	first := r.head && r.pos == r.indent // the record is the first on its line
	if isDigit(c) && first {
		if i := r.prefix(r.piece); i >= 0 {
			r.pos, c = i, '{'
		}
	}
	if c != '{' {
		r.count(kindInvalid, r.line, 1)
		return false, r.skipLine()
	}
	if n := r.braces(); n > 0 {
		r.count(kindInvalid, r.line, n)
		first = false
	}
	return r.record(first)
}

// braces passes over the records, from the '{' at piece[pos], that are a
// '{' broken by another '{' after it on the piece (blanks between), and
// returns how many; piece[pos] is then the '{' of the next record. A run of
// '{' is a common shape of garbage, and each '{' of it is a record.
func (r *Reader) braces() int {
	d, i, n := r.piece, r.pos, 0
	for r.max >= 2 {
		j := i + 1
		for j < len(d) && d[j] == '{' {
			switch {
			case j+len(braceBlock) <= len(d) && bytes.Equal(d[j:j+len(braceBlock)], braceBlock):
				j += len(braceBlock)
			case j+64 <= len(d) && bytes.Equal(d[j:j+64], braceBlock[:64]):
				j += 64
			default:
				j++
			}
		}
		n += j - 1 - i // each '{' but the last is broken by the next
		i = j - 1
		k := j
		for k < len(d) && (d[k] == ' ' || d[k] == '\t' || d[k] == '\r') {
			k++
		}
		if k == len(d) || d[k] != '{' || k-i >= r.max {
			break
		}
		n++ // broken by the '{' at d[k]
		i = k
	}
	r.work += int64(i - r.pos)
	r.pos = i
	return n
}

// braceBlock is what braces compares a run with, a block at a time.
var braceBlock = bytes.Repeat([]byte("{"), 4<<10)

// record reads the record that starts with the '{' at piece[pos]: the
// scanner finds where it ends, in this piece or a later one, or where it
// breaks, and the record is decoded once it has ended.
//
// first says the record is the first on its line (after a CloudWatch
// prefix, if any): then it may be all the rest of the line.
func (r *Reader) record(first bool) (bool, error) {
	line := r.line
	if first {
		if ok, done := r.wholeLine(); done {
			return ok, nil
		}
	}
	r.base = r.indent
	r.sc.reset()
	r.buf = r.buf[:0]
	from, fed := r.pos, 0 // the record is buf, then piece[from:pos]; fed bytes in all
	for {
		d := r.piece[r.pos:]
		d = d[:min(len(d), r.max-fed)]
		n, res := r.sc.scan(d)
		r.work += int64(n)
		r.pos += n
		fed += n
		switch res {
		case scanDone:
			rec := r.piece[from:r.pos]
			if len(r.buf) > 0 {
				r.keep(rec)
				rec = r.buf
			}
			r.work += int64(len(rec)) // mayBeEvent's look, then decode's
			k := kindNotEvent
			if mayBeEvent(rec) {
				r.work += int64(len(rec))
				clear(r.rec)
				k = kindInvalid
				if r.decode(rec) {
					r.ev, k = r.rec.event(line, 0)
				}
			}
			if k == kindInbound {
				r.inbound(rec)
			}
			r.count(k, line, 1)
			return k == kindEvent, nil
		case scanBroken:
			r.count(kindInvalid, line, 1)
			if r.piece[r.pos] == '{' {
				return false, nil // cut short, and the next record follows
			}
			return false, r.skip()
		}
		if r.pos < len(r.piece) {
			r.count(kindInvalid, line, 1) // longer than max
			return false, r.skip()
		}
		r.keep(r.piece[from:])
		from = 0
		if err := r.next(); err != nil {
			if err == io.EOF {
				r.count(kindInvalid, line, 1) // cut short by the end of the log
				return false, nil
			}
			return false, err
		}
		if r.head && r.startsRecord(r.piece, r.base) {
			r.count(kindInvalid, line, 1) // cut short by a line that starts a record
			return false, nil
		}
		if fed == r.max {
			r.count(kindInvalid, line, 1) // longer than max
			return false, r.skip()
		}
	}
}

// wholeLine reads the record at piece[pos], the first on its line, if it
// is the rest of the line (JSON lines, CloudWatch Logs) and may be an
// event, and reports whether it did (done) and found an event (ok). The
// decoder checks the syntax then: it decodes all the rest of the line only
// if that is one JSON object, which is then what the scanner would have
// found. Anything else is left to record, having cost a look at the line,
// once a line.
func (r *Reader) wholeLine() (ok, done bool) {
	if !r.head || !r.eol {
		return false, false
	}
	end := len(r.piece) - 1 // the '\n'
	for end > r.pos && (r.piece[end-1] == ' ' || r.piece[end-1] == '\t' || r.piece[end-1] == '\r') {
		end--
	}
	rec := r.piece[r.pos:end]
	if len(rec) > r.max || rec[len(rec)-1] != '}' {
		return false, false
	}
	r.work += int64(len(rec)) // mayBeEvent's look, then decode's
	if !mayBeEvent(rec) {
		return false, false
	}
	r.work += int64(len(rec))
	clear(r.rec)
	if !r.decode(rec) {
		return false, false
	}
	r.pos = end
	ev, k := r.rec.event(r.line, 0)
	r.ev = ev
	if k == kindInbound {
		r.inbound(rec)
	}
	r.count(k, r.line, 1)
	return k == kindEvent, true
}

// decode decodes rec into r.rec, and reports whether rec was one JSON
// object and nothing more.
func (r *Reader) decode(rec []byte) bool {
	r.src.Reset(rec)
	if r.dec == nil {
		r.dec = json.NewDecoder(&r.src)
	}
	start := r.dec.InputOffset()
	if r.dec.Decode(&r.rec) != nil || r.dec.InputOffset()-start != int64(len(rec)) {
		r.dec = nil // it keeps its error, or holds what followed
		return false
	}
	return true
}

// mayBeEvent reports whether the JSON object rec may be an event, an SNS
// notification or an inbound message: whether it may have an "eventType",
// a "Type" or an "inboundMessageId" key (an EventBridge event's detail has
// an "eventType"). With no escape in it, a key is written as it is;
// without any, it is an object and nothing more, and decoding it would
// cost far more than scanning it did.
func mayBeEvent(rec []byte) bool {
	return bytes.IndexByte(rec, '\\') >= 0 || bytes.Contains(rec, []byte(`"eventType"`)) || bytes.Contains(rec, []byte(`"Type"`)) ||
		bytes.Contains(rec, []byte(`"inboundMessageId"`))
}

// keep appends d to buf, doubling its capacity as it grows, so that a
// record of MaxRecord bytes costs at most twice that.
func (r *Reader) keep(d []byte) {
	if n := len(r.buf) + len(d); n > cap(r.buf) {
		b := make([]byte, len(r.buf), min(max(2*cap(r.buf), n, 4<<10), r.max))
		copy(b, r.buf)
		r.buf = b
	}
	r.buf = append(r.buf, d...)
}

// skipSpace skips blanks, line ends and the separators '[', ']' and ','
// and returns the byte after them, without reading it.
func (r *Reader) skipSpace() (byte, error) {
	for {
		i := r.pos
		for i < len(r.piece) && between[r.piece[i]] {
			i++
		}
		r.work += int64(i - r.pos)
		r.pos = i
		if i < len(r.piece) {
			return r.piece[i], nil
		}
		if r.eol {
			r.passLines()
		}
		if err := r.next(); err != nil {
			return 0, err
		}
	}
}

// between marks the bytes skipSpace skips.
var between = func() (b [256]bool) {
	for _, c := range []byte(" \t\r\n[],") {
		b[c] = true
	}
	return b
}()

// passLines passes over the whole lines buffered in br, after a piece
// that ended its line, that hold no record or are one invalid record: what
// step would do with them, a line costing a few bytes' work rather than a
// call of ReadSlice and of step. It stops at a line that holds what may
// start a record ('{', or a digit that may start a CloudWatch prefix).
func (r *Reader) passLines() {
	if r.line == 0 {
		return // the byte-order mark is next's to drop
	}
	d, _ := r.br.Peek(r.br.Buffered())
	used, i := 0, 0 // d[:used] is the lines passed over
	for {
		// Blank lines, and what skipSpace skips at the start of the next.
		for i < len(d) && between[d[i]] {
			if d[i] == '\n' {
				used = i + 1
				r.line++
			}
			i++
		}
		if i == len(d) {
			break
		}
		l := d[used:] // the line d[i] is the first byte of note on
		if c := d[i]; c == '{' || isDigit(c) && i-used == blanks(l) && r.prefix(l) >= 0 {
			break
		}
		nl := bytes.IndexByte(d[i:], '\n')
		if nl < 0 {
			break
		}
		r.count(kindInvalid, r.line+1, 1) // as step counts it, then skips the line
		r.line++
		i += nl + 1
		used = i
	}
	r.work += int64(i)
	r.br.Discard(used)
}

// skipLine skips the rest of the line.
func (r *Reader) skipLine() error {
	for {
		r.work += int64(len(r.piece) - r.pos)
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
		d := r.piece
		for r.pos < len(d) {
			if closed {
				// Blanks, then a '{' ends the skip; anything else does not.
				i := r.pos
				for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\r') {
					i++
				}
				r.work += int64(i - r.pos)
				r.pos = i
				if i == len(d) {
					break
				}
				if d[i] == '{' {
					return nil
				}
				closed = false
			}
			j := bytes.IndexByte(d[r.pos:], '}')
			if j < 0 {
				r.work += int64(len(d) - r.pos)
				r.pos = len(d)
				break
			}
			r.work += int64(j + 1)
			r.pos += j + 1
			closed = true
		}
		if err := r.next(); err != nil {
			return err
		}
		if r.head {
			if r.startsRecord(r.piece, r.base) {
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

// count counts n records of kind k that start on line.
func (r *Reader) count(k kind, line int, n int) {
	c := &r.counts
	c.Records += int64(n)
	switch k {
	case kindEvent:
		c.Events += int64(n)
	case kindNotEvent:
		c.NotEvent += int64(n)
	case kindInbound:
		c.NotEvent += int64(n)
		c.Inbound += int64(n)
	default:
		c.Invalid += int64(n)
		for range min(n, keepFirst-len(c.FirstInvalid)) {
			c.FirstInvalid = append(c.FirstInvalid, line)
		}
	}
}

// startsRecord reports whether the line that d starts with starts a
// record (see Reader): its first non-blank byte is a '{' or '[' at most
// base blanks in, or it is a CloudWatch Logs line.
func (r *Reader) startsRecord(d []byte, base int) bool {
	d = d[:min(len(d), lineHead)]
	i := blanks(d)
	r.work += int64(i + 1)
	return i < len(d) && (i <= base && (d[i] == '{' || d[i] == '[') || isDigit(d[i]) && r.prefix(d) >= 0)
}

// prefix returns where the '{' is that follows a CloudWatch Logs prefix
// at the start of the line that d starts with, -1 if it has none: blanks,
// a date-time (2026-11-30T10:00:00, with an optional fraction and zone, 'T'
// or a space in the middle), blanks, and optionally one word (a log stream)
// and blanks. It is the regular expression cloudWatch (in the tests)
// written out, as it runs on every line that starts with a digit.
func (r *Reader) prefix(d []byte) int {
	d = d[:min(len(d), lineHead)]
	i := blanks(d)
	r.work += int64(i + 1)
	const shape = "dddd-dd-dd_dd:dd:dd"
	if len(d)-i < len(shape) {
		return -1
	}
	for k := range len(shape) {
		switch c := d[i+k]; shape[k] {
		case 'd':
			if !isDigit(c) {
				return -1
			}
		case '_':
			if c != 'T' && c != 't' && c != ' ' {
				return -1
			}
		default:
			if c != shape[k] {
				return -1
			}
		}
	}
	i += len(shape)
	if i+1 < len(d) && d[i] == '.' && isDigit(d[i+1]) {
		i += 2
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	i = zone(d, i)
	j := spaces(d, i)
	r.work += int64(j)
	if j == i || j == len(d) {
		return -1
	}
	if d[j] == '{' {
		return j
	}
	k := j // a log stream's name
	for k < len(d) && d[k] != ' ' && d[k] != '\t' && d[k] != '\r' && d[k] != '\n' && d[k] != '{' {
		k++
	}
	l := spaces(d, k)
	r.work += int64(l - j)
	if l == k || l == len(d) || d[l] != '{' {
		return -1
	}
	return l
}

// zone returns where the zone (Z, +hh:mm, +hhmm, -hh:mm or -hhmm) that may
// start at d[i] ends: i if there is none.
func zone(d []byte, i int) int {
	if i < len(d) && (d[i] == 'Z' || d[i] == 'z') {
		return i + 1
	}
	if i+5 > len(d) || d[i] != '+' && d[i] != '-' || !isDigit(d[i+1]) || !isDigit(d[i+2]) {
		return i
	}
	j := i + 3
	if d[j] == ':' {
		j++
	}
	if j+2 > len(d) || !isDigit(d[j]) || !isDigit(d[j+1]) {
		return i
	}
	return j + 2
}

// spaces returns where the spaces and tabs from d[i] on end.
func spaces(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t') {
		i++
	}
	return i
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
