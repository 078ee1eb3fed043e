package smsevent

import (
	"bytes"
	"fmt"
	"io"
)

// Reader reads SMS events from a log (see the package comment for its
// forms). CRLF line ends, blank lines and a leading UTF-8 byte-order mark
// are fine.
//
// Records. A '{' starts a record that ends at its matching '}', found by a
// byte scan that tracks strings and brackets; it may span lines or share
// one with other records. Between records, '[', ']' and ',' are skipped,
// so the elements of a JSON array are records like any other. A line that
// starts with a date-time (2026-11-30T10:00:00.000Z, with optional
// fraction and zone, 'T' or a space in the middle), then blanks and '{',
// optionally with one word (a log stream) and blanks before the '{', is a
// CloudWatch Logs line: its record is the object after the prefix.
// Anything else, such as a log line, a bare number or string, is one
// invalid record together with the rest of its line.
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
// everywhere. Keys match exactly; when a key repeats, the last one wins, as
// in encoding/json.
//
// Recovery. An object whose brackets cannot balance is broken where that
// shows: at a newline inside a string, at a '{' or '[' where no value can
// start (after a complete value, as when a record was cut short and the
// next one follows it), at a closing bracket that does not match, or at
// the end of the log. It is one invalid record. It may have swallowed an
// intact record, so reading goes back to the line, after its first, that
// starts with '{' indented no deeper than its first line and whose value
// closed last before the break; without one, reading resumes at the break
// (the rest of its line is skipped when the break is a closing bracket).
// Going back never goes before the previous going back's break, so that
// reading takes time linear in the log's size however it is broken. A
// record longer than MaxRecord is scanned to its end or break without
// being kept, and never gone back into.
//
// Numbers (Event.Line, Counts.FirstInvalid): a record is numbered by the
// physical line, 1-based, on which it starts.
//
// A Reader is not safe for concurrent use. Its zero value is not usable:
// create one with NewReader.
type Reader struct {
	src     io.Reader
	buf     []byte
	r, w    int   // buf[r:w] is read but not consumed
	off     int64 // offset in the log of buf[0]
	eof     bool  // src said io.EOF
	readErr error // src failed; returned when reading reaches it
	max     int   // longest record decoded (MaxRecord; tests lower it)

	started bool  // the byte-order-mark check has been done
	line    int   // physical line of buf[r], 1-based
	bol     bool  // buf[r] is at the start of its line, after blanks at most
	indent  int   // blanks before buf[r] on its line, when bol
	horizon int64 // offset in the log of the last break gone back from

	stack   []uint64 // scan's open brackets, one bit per level: 1 for '['
	prevSig byte     // last non-blank byte scan dropped
	cands   []cand   // lookBack's open candidate lines

	p      parser
	err    error // sticky: io.EOF or the read error
	counts Counts
}

// NewReader returns a Reader of the SMS event log r. The log must not be
// compressed: webhook.Open decompresses.
func NewReader(r io.Reader) *Reader {
	rd := &Reader{src: r, buf: make([]byte, 64<<10), max: MaxRecord, line: 1, bol: true}
	rd.p.seen.m = make(map[string]string)
	return rd
}

// Next returns the next event of the log. Records that are not events
// are counted (see Counts) and skipped. At the end of the log Next returns
// io.EOF; if reading the log fails (an I/O error, a truncated or corrupt
// gzip stream) it returns that error, wrapped. Either is returned again by
// every later call.
func (r *Reader) Next() (Event, error) {
	for r.err == nil {
		ev, ok, err := r.step()
		if err != nil {
			r.err = err
			break
		}
		if ok {
			return ev, nil
		}
	}
	return Event{}, r.err
}

// Counts returns what the Reader has counted so far.
func (r *Reader) Counts() Counts {
	c := r.counts
	c.FirstInvalid = append([]int(nil), c.FirstInvalid...)
	return c
}

// step consumes at most one record; ok says it was an event.
func (r *Reader) step() (ev Event, ok bool, err error) {
	if !r.started {
		r.started = true
		r.skipBOM()
	}
	c, err := r.skipSpace()
	if err != nil {
		return Event{}, false, err
	}
	if c == '{' {
		return r.object()
	}
	if r.bol && isDigit(c) {
		if n := r.prefix(); n > 0 {
			r.consume(n) // the next step reads the object after it
			return Event{}, false, nil
		}
	}
	r.count(kindInvalid, r.line)
	return Event{}, false, r.skipLine()
}

// object reads the record starting with the '{' at buf[r].
func (r *Reader) object() (Event, bool, error) {
	line, indent := r.line, 0
	if r.bol {
		indent = r.indent
	}
	r.bol = false
	// Most records are whole in buf and valid: decoding one finds its end
	// too. Anything else is left to scan, which finds where it ends or
	// breaks, reading more of the log as it needs.
	if ev, k, n, ok := r.p.decodeFirst(r.buf[r.r:r.w], line); ok && n <= r.max {
		r.consume(n)
		r.count(k, line)
		return ev, k == kindEvent, nil
	}
	n, broke, dropped, err := r.scan()
	if err != nil {
		return Event{}, false, err
	}
	if broke {
		r.broken(line, indent, n, dropped)
		return Event{}, false, nil
	}
	if dropped || n > r.max {
		r.count(kindInvalid, line)
		r.consume(n)
		return Event{}, false, nil
	}
	ev, k := r.p.decode(r.buf[r.r:r.r+n], line)
	r.consume(n)
	r.count(k, line)
	return ev, k == kindEvent, nil
}

// scan finds the end of the object at buf[r] by tracking strings and
// brackets: n is its length, or where it broke (see Reader) when broke is
// true. dropped says it grew longer than max and its start is gone.
func (r *Reader) scan() (n int, broke, dropped bool, err error) {
	var (
		off   int // bytes of buf[r:w] scanned
		depth int // brackets open
		inStr bool
		esc   bool
	)
	for {
		d := r.buf[r.r:r.w]
		i := off
		for i < len(d) {
			c := d[i]
			if inStr {
				switch {
				case c == '\n':
					return i, true, dropped, nil // a JSON string holds no newline
				case esc:
					esc = false
				case c == '"':
					inStr = false
				case c == '\\':
					esc = true
				default:
					i++
					for i < len(d) && plainString[d[i]] {
						i++
					}
					continue
				}
				i++
				continue
			}
			if plainValue[c] {
				i++
				for i < len(d) && plainValue[d[i]] {
					i++
				}
				continue
			}
			switch c {
			case '"':
				inStr = true
			case '{', '[':
				// Past maxDepth brackets are only counted: the record is
				// invalid anyway.
				if depth > 0 && depth <= maxDepth && !r.canOpen(d, i, r.inArray(depth)) {
					return i, true, dropped, nil
				}
				if depth < maxDepth {
					r.push(depth, c == '[')
				}
				depth++
			default: // '}', ']'
				if depth <= maxDepth && r.inArray(depth) != (c == ']') {
					return i, true, dropped, nil
				}
				depth--
				if depth == 0 {
					return i + 1, false, dropped, nil
				}
			}
			i++
		}
		off = len(d)
		if off > r.max {
			// Too long to decode: scan on for its end, dropping what is
			// scanned, so that the buffer stays within max+1 bytes.
			if j := lastNonSpace(d); j >= 0 {
				r.prevSig = d[j]
			}
			r.consume(off)
			dropped, off = true, 0
		}
		if !r.fill() {
			if r.readErr != nil {
				return 0, false, dropped, r.readErr
			}
			return off, true, dropped, nil // cut short by the end of the log
		}
	}
}

// Byte classes for scan: plainValue[c] needs no attention outside
// strings, plainString[c] none inside.
var plainValue, plainString [256]bool

func init() {
	for c := range 256 {
		switch c {
		case '"', '{', '}', '[', ']':
		default:
			plainValue[c] = true
		}
		switch c {
		case '"', '\\', '\n':
		default:
			plainString[c] = true
		}
	}
}

// inArray reports whether the innermost of depth (at most maxDepth) open
// brackets is a '['.
func (r *Reader) inArray(depth int) bool {
	d := depth - 1
	return r.stack[d/64]&(1<<(d%64)) != 0
}

// push records the bracket opened at depth (0 for the outermost).
func (r *Reader) push(depth int, array bool) {
	for depth/64 >= len(r.stack) {
		r.stack = append(r.stack, 0)
	}
	bit := uint64(1) << (depth % 64)
	if array {
		r.stack[depth/64] |= bit
	} else {
		r.stack[depth/64] &^= bit
	}
}

// canOpen reports whether a value may start at d[i], inside an array or
// an object: only after ':' in an object, or after '[' or ',' in an array.
// This is what shows a record that runs into the next one as broken.
func (r *Reader) canOpen(d []byte, i int, inArray bool) bool {
	j := i - 1
	for j >= 0 && isSpace(d[j]) {
		j--
	}
	p := r.prevSig // d[0] is not the record's '{': its start was dropped
	if j >= 0 {
		p = d[j]
	}
	if inArray {
		return p == '[' || p == ','
	}
	return p == ':'
}

// broken handles an object, started on line at indentation indent, that
// scan found broken b bytes into buf[r:]: it counts one invalid record and
// leaves buf[r] where reading resumes (see Reader).
func (r *Reader) broken(line, indent, b int, dropped bool) {
	r.count(kindInvalid, line)
	d := r.buf[r.r:r.w]
	if !dropped {
		from := max(0, int(r.horizon-r.off)-r.r)
		if ls := r.lookBack(d, b, indent, from); ls > 0 {
			r.horizon = r.off + int64(r.r+b)
			r.consume(ls)
			r.bol, r.indent = true, 0
			return
		}
	}
	if b < len(d) && (d[b] == '}' || d[b] == ']') {
		r.consume(b + 1)
		r.skipLine() // an error here is met again by the next step
		return
	}
	r.consumeTo(b)
}

// cand is a line lookBack may go back to: where it starts, and the depth
// of the brackets open before its '{'.
type cand struct{ ls, depth int }

// lookBack returns where in d the line starts that broken goes back to for
// an object broken at d[b], 0 if none: of the lines starting in d[from:],
// after the object's first, whose first non-blank byte is a '{' at most
// indent deep, the one whose value closed last before b. scan found no
// break in d[:b]: strings hold no newline and brackets match.
func (r *Reader) lookBack(d []byte, b, indent, from int) int {
	var (
		best, depth int
		inStr, esc  bool
	)
	cands := r.cands[:0] // open, innermost last
	for i := 0; i < b; i++ {
		c := d[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '"':
				inStr = false
			case c == '\\':
				esc = true
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if n := len(cands); n > 0 && cands[n-1].depth == depth {
				best, cands = cands[n-1].ls, cands[:n-1]
			}
		case '\n':
			ls := i + 1
			f := ls
			for f < b && (d[f] == ' ' || d[f] == '\t' || d[f] == '\r') {
				f++
			}
			if f < b && d[f] == '{' && f-ls <= indent && ls >= from {
				cands = append(cands, cand{ls, depth})
			}
		}
	}
	r.cands = cands
	return best
}

// prefix returns the length of the CloudWatch Logs prefix (see Reader) at
// buf[r], up to the '{' after it, or 0 if the line has none.
func (r *Reader) prefix() int {
	r.peek(600) // a date-time, a log stream's name (at most 512 bytes), blanks
	d := r.buf[r.r:r.w]
	if i := bytes.IndexByte(d, '\n'); i >= 0 {
		d = d[:i]
	}
	n := dateTime(d)
	if n == 0 {
		return 0
	}
	if j := skipBlanks(d, n); j > n {
		if j < len(d) && d[j] == '{' {
			return j
		}
		// One word, the log stream: anything but blanks and '{'.
		k := j
		for k < len(d) && d[k] != ' ' && d[k] != '\t' && d[k] != '{' && d[k] != '\r' {
			k++
		}
		if k > j {
			if l := skipBlanks(d, k); l > k && l < len(d) && d[l] == '{' {
				return l
			}
		}
	}
	return 0
}

// dateTime returns the length of the date-time that d starts with, 0 if
// none: YYYY-MM-DD, 'T', 't' or ' ', hh:mm:ss, then an optional fraction
// and an optional zone (Z, ±hh:mm or ±hhmm).
func dateTime(d []byte) int {
	const form = "dddd-dd-ddTdd:dd:dd"
	if len(d) < len(form) {
		return 0
	}
	for i := range len(form) {
		switch c := d[i]; form[i] {
		case 'd':
			if !isDigit(c) {
				return 0
			}
		case 'T':
			if c != 'T' && c != 't' && c != ' ' {
				return 0
			}
		default:
			if c != form[i] {
				return 0
			}
		}
	}
	n := len(form)
	if n+1 < len(d) && d[n] == '.' && isDigit(d[n+1]) {
		n += 2
		for n < len(d) && isDigit(d[n]) {
			n++
		}
	}
	if n < len(d) && (d[n] == 'Z' || d[n] == 'z') {
		return n + 1
	}
	if n < len(d) && (d[n] == '+' || d[n] == '-') {
		z := d[n+1:]
		switch {
		case len(z) >= 5 && isDigit(z[0]) && isDigit(z[1]) && z[2] == ':' && isDigit(z[3]) && isDigit(z[4]):
			return n + 6
		case len(z) >= 4 && isDigit(z[0]) && isDigit(z[1]) && isDigit(z[2]) && isDigit(z[3]):
			return n + 5
		}
		return 0
	}
	return n
}

// skipBlanks returns the index of the first byte of d from i on that is
// not a space or a tab.
func skipBlanks(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t') {
		i++
	}
	return i
}

// skipBOM consumes a UTF-8 byte-order mark at the start of the log. A
// read error is met again by what reads next.
func (r *Reader) skipBOM() {
	r.peek(3)
	if bytes.HasPrefix(r.buf[r.r:r.w], []byte("\xef\xbb\xbf")) {
		r.r += 3
	}
}

// peek fills buf until it holds n bytes after r, the log ends, or buf
// cannot hold more without outgrowing max+1 bytes.
func (r *Reader) peek(n int) {
	for r.w-r.r < n {
		if r.r == 0 && r.w == len(r.buf) && len(r.buf) > r.max {
			return
		}
		if !r.fill() {
			return
		}
	}
}

// skipSpace consumes blanks, line ends and the separators '[', ']' and ','
// and returns the byte after them, without consuming it.
func (r *Reader) skipSpace() (byte, error) {
	for {
		for r.r < r.w {
			switch c := r.buf[r.r]; c {
			case '\n':
				r.line++
				r.bol, r.indent = true, 0
			case ' ', '\t', '\r':
				r.indent++
			case '[', ']', ',':
				r.bol = false
			default:
				return c, nil
			}
			r.r++
		}
		if !r.fill() {
			return 0, r.endErr()
		}
	}
}

// skipLine consumes the rest of the current line and its '\n', without
// keeping it.
func (r *Reader) skipLine() error {
	for {
		if i := bytes.IndexByte(r.buf[r.r:r.w], '\n'); i >= 0 {
			r.r += i + 1
			r.line++
			r.bol, r.indent = true, 0
			return nil
		}
		r.r = r.w
		r.bol = false
		if !r.fill() {
			return r.endErr()
		}
	}
}

// consume consumes n bytes of buf[r:], which end in the middle of a line.
func (r *Reader) consume(n int) {
	r.line += bytes.Count(r.buf[r.r:r.r+n], nl)
	r.r += n
	r.bol = false
}

// consumeTo consumes n bytes of buf[r:] and finds out whether what follows
// starts its line, after blanks: resuming at a break, a '{' that starts a
// line is then taken as indented as it is.
func (r *Reader) consumeTo(n int) {
	d := r.buf[r.r : r.r+n]
	r.consume(n)
	i := len(d)
	for i > 0 && (d[i-1] == ' ' || d[i-1] == '\t' || d[i-1] == '\r') {
		i--
	}
	if i > 0 && d[i-1] == '\n' {
		r.bol, r.indent = true, len(d)-i
	}
}

var nl = []byte{'\n'}

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

// fill reads more of src into buf, keeping the unconsumed buf[r:w] (moved
// to the front) and growing buf, up to max+1 bytes, when it is full. It
// reports whether it read anything; when not, r.eof or r.readErr says why.
func (r *Reader) fill() bool {
	if r.eof || r.readErr != nil {
		return false
	}
	if r.r > 0 {
		r.off += int64(r.r)
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	if r.w == len(r.buf) {
		n := min(2*len(r.buf), r.max+1)
		if n <= len(r.buf) {
			// Unreachable: scan drops a record before it outgrows max+1,
			// and nothing else keeps more than a line's first bytes.
			r.readErr = fmt.Errorf("read SMS event log after line %d: record buffer full", r.line)
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
			r.readErr = fmt.Errorf("read SMS event log after line %d: %w", r.line, err)
		}
		if n > 0 || err != nil {
			return n > 0
		}
	}
	r.readErr = fmt.Errorf("read SMS event log after line %d: %w", r.line, io.ErrNoProgress)
	return false
}

// endErr is why fill read nothing: io.EOF or the read error.
func (r *Reader) endErr() error {
	if r.readErr != nil {
		return r.readErr
	}
	return io.EOF
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// lastNonSpace is the index of the last byte of d that is not blank, -1 if
// none.
func lastNonSpace(d []byte) int {
	i := len(d) - 1
	for i >= 0 && isSpace(d[i]) {
		i--
	}
	return i
}
