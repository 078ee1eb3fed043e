// Package webhook reads exported logs of WhatsApp Cloud API webhooks.
//
// An operator's webhook receiver logs each POST body Meta sends; `bulksend
// reconcile` reads that log to settle rows whose send outcome is unknown and
// to record delivered and read. A log is any sequence of JSON values: one
// webhook body per line (NDJSON), bodies pretty-printed over many lines (as
// `jq .` writes them), bodies one after the other with nothing between
// them, JSON arrays of bodies, or a mix of these. Open makes gzip and stdin
// transparent, and a Reader turns the bodies into one Status per
// statuses[] entry, in constant memory however large the log; what else
// the bodies hold (inbound messages, marketing preferences, template
// updates) it hands to the functions of an Other, and counts by kind.
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
	"maps"
	"time"
)

// MaxRecord is the longest record (a top-level value, or an element of a
// top-level array) a Reader decodes, in bytes. Meta's bodies are at most
// about 3 MB; a longer record is counted invalid and skipped, never
// buffered beyond this size.
const MaxRecord = 16 << 20

// keepFirst is how many record numbers Counts keeps per kind of skipped record.
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
	Pricing       Pricing   // statuses[].pricing, zero if absent (see Reader)
	Line          int       // number of its body: see Reader
}

// Pricing is a status's pricing object: how Meta bills the message. Meta
// sends one with the sent status and with one of delivered or read.
type Pricing struct {
	Category    string // pricing.category: marketing, marketing_lite, utility, authentication, service, …; "" if absent
	Type        string // pricing.type: regular, free_customer_service, free_entry_point, …; "" if absent
	Billable    bool   // pricing.billable, when HasBillable
	HasBillable bool   // pricing.billable is present (Meta says it will be deprecated)
}

// Counts says what a Reader has seen so far.
//
// Every record (see Reader) is counted in Lines and in exactly one of
// Bodies, NotStatus and Invalid, so Lines == Bodies + NotStatus + Invalid.
// Bytes and TextLines say how much of the log that was, so that a log that
// yields nothing can be described ("39 lines, none a webhook body").
type Counts struct {
	Lines     int64 // records read: top-level values, array elements, and stretches of text that are not JSON
	Bodies    int64 // webhook bodies that carried at least one status
	Statuses  int64 // statuses returned by Next
	NotStatus int64 // webhook bodies without statuses (incoming messages, template updates, …)
	Invalid   int64 // records that are not JSON, not a webhook body, or hold a malformed status
	Bytes     int64 // bytes of the log consumed (all of it at the end, a byte-order mark included)
	TextLines int64 // physical lines consumed, a last line without '\n' included

	FirstInvalid   []int // numbers (as Status.Line) of the first few invalid records
	FirstNotStatus []int // numbers (as Status.Line) of the first few bodies without statuses

	// Kinds counts the changes (entry[].changes[]) of valid records by
	// kind: a change that holds an inbound message is "messages", one that
	// holds statuses and no inbound message "statuses", and any other its
	// field ("user_preferences", "message_template_status_update",
	// "account_update", "messages" for an errors-only change, …; "" when
	// it has no field string). nil until a change is counted.
	Kinds map[string]int64
	// Dropped counts the inbound messages, user_preferences entries and
	// template updates of valid records that were not handed to Other
	// because they are malformed (see Reader).
	Dropped int64
}

type mode uint8

const (
	modeTop        mode = iota // between top-level values
	modeArrayStart             // just after a top-level '[': an element or ']' comes next
	modeArray                  // inside a top-level array, after an element's ','
)

// Reader reads statuses from a webhook log: any sequence of JSON values,
// separated by whitespace or by nothing. CRLF line ends, blank lines and a
// leading UTF-8 byte-order mark are fine.
//
// Records. A top-level '{' starts a record that ends at its matching '}',
// found by a byte scan that tracks strings and brackets; it may span lines
// (pretty-printed) or share one with other values. A top-level '[' opens an
// array whose elements are the records, read one by one, never the array
// whole; an element ends at the next ',' or ']' outside strings and
// brackets, whatever it holds. Arrays one after the other are read in turn,
// their elements numbered on. An array cut short is read up to the cut: a
// partial last element, or a missing one after a ',' or the '[', counts as
// one invalid record (an array left open takes in the rest of the log).
// Only '{' and '[' start a record: any other byte at the top level (a log
// line such as "2026-11-29 POST /webhook", a bare number or string, a stray
// ',') starts an invalid record.
//
// Recovery. A record that is JSON but not a webhook body is invalid, and
// reading goes on right after it. A record that is not JSON is one invalid
// record together with the text up to the resync point, where reading
// resumes: the next line whose first non-space byte is '{' or '['. Where the
// search for it starts depends on the record:
//
//  1. after a stray byte, or an object whose brackets balance but which is
//     not JSON, the search starts on the next line, so that a bad line in
//     NDJSON, a run of log lines, or a body with a syntax error costs one
//     invalid record and the next body is read;
//  2. an object whose brackets cannot balance is broken where that shows:
//     at a newline inside a string, a '{' or '[' where no value can start
//     (after a complete value, as when a body was cut short and the next one
//     follows it), a closing bracket that does not match, or the end of the
//     log. It may have swallowed an intact body, so reading goes back to the
//     line, after its first, that starts with '{' or '[' indented no deeper
//     than its first line and whose value closed last before the break (an
//     object that starts mid-line counts as indented 0). Lines indented
//     deeper are taken to be inside it: a cut-short pretty-printed body is
//     one invalid record, not one per nested object. Without such a line,
//     reading resumes at the break if that is a '{' or '[' starting a line
//     other than the object's first, else the search starts on the line
//     after the break. Going back never goes before the break of the
//     previous going back, so that reading takes time linear in the log's
//     size however the log is broken.
//
// A record longer than MaxRecord is counted invalid and skipped: the rest of
// it is scanned, not kept, and the search starts on the line after the one
// it ends on or, if it breaks, after the line of the break. Memory stays
// below MaxRecord plus a little however long the log.
//
// Numbers (Status.Line, Counts.FirstInvalid, Counts.FirstNotStatus): a
// record is numbered by the physical line, 1-based, on which it starts; an
// element of a top-level array by its 1-based position among the elements
// of all the log's arrays.
//
// A record is valid when it is a JSON object whose "entry" is an array; its
// statuses are the objects in entry[].changes[].value.statuses[]. Along that
// path null counts as absent, and any other JSON type than the expected one
// makes the record invalid. A status needs non-empty "id" and "status"
// strings and a "timestamp" of unix seconds (a string of digits, as Meta
// sends it, or an integer); "recipient_id", "biz_opaque_callback_data" and
// errors[].title must be strings and errors[].code an integer when present.
// One malformed status makes its whole record invalid: none of its statuses
// is returned. "pricing" is the exception: when it is not an object whose
// category and type are strings and billable a boolean (each may be absent
// or null), the status is read without it, as it says how the message was
// billed, not what happened to it. Keys are matched exactly; when a key repeats, the last one
// wins, as in encoding/json. Unknown fields, whatever their content, are
// skipped.
//
// Besides statuses. A valid record's changes are counted by kind
// (Counts.Kinds) and what they hold besides statuses is handed to the
// functions of SetOther: the inbound messages of value.messages[], the
// entries of value.user_preferences[], and the value of a change whose
// field is message_template_status_update or message_template_quality_update.
// None of it decides whether a record is valid, so a malformed part never
// costs a body its statuses: a message needs a "from", a preference a
// "wa_id" and a "value", a template update a name or an id (strings, or
// numbers taken as their digits), or it is dropped and counted in
// Counts.Dropped; any other member of the wrong type reads as absent. An
// invalid record hands out nothing, as it returns no status.
//
// A Reader is not safe for concurrent use. Its zero value is not usable:
// create one with NewReader.
type Reader struct {
	src     io.Reader
	buf     []byte
	r, w    int   // buf[r:w] is read but not consumed
	off     int64 // offset in the log of buf[0]
	prev    byte  // the byte consumed before buf[0], if any
	eof     bool  // src said io.EOF
	readErr error // src failed; returned once buffered records are used up
	max     int   // longest record decoded (MaxRecord; tests lower it)

	mode    mode
	started bool // the byte-order-mark check has been done
	line    int  // physical line number of buf[r], 1-based
	bol     bool // buf[r] is at the beginning of its line, after whitespace at most
	indent  int  // whitespace bytes before buf[r] on its line, when bol
	elem    int  // array elements seen, across arrays

	stack   []uint64 // scan's open brackets, one bit per level: 1 for '['
	prevSig byte     // last non-space byte scan dropped
	horizon int64    // offset in the log of the last break that broken went back from
	cands   []cand   // lookBack's candidate lines

	sc     scanner
	pos    int   // next status of sc.out to return
	err    error // sticky: io.EOF or the read error
	counts Counts

	other         Other // where deliver hands what is not a status
	statusChanges int64 // Counts.Kinds["statuses"], kept out of the map
}

// NewReader returns a Reader that reads the webhook log r. The log must not
// be compressed; Open decompresses.
func NewReader(r io.Reader) *Reader {
	return &Reader{src: r, buf: make([]byte, 64<<10), max: MaxRecord, line: 1, bol: true}
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
	c.Kinds = maps.Clone(c.Kinds)
	if r.statusChanges > 0 {
		if c.Kinds == nil {
			c.Kinds = make(map[string]int64)
		}
		c.Kinds[kindStatuses] += r.statusChanges
	}
	c.Bytes = r.off + int64(r.r)
	c.TextLines = int64(r.line - 1)
	last := r.prev
	if r.r > 0 {
		last = r.buf[r.r-1]
	}
	if c.Bytes > 0 && last != '\n' {
		c.TextLines++ // the line under way, or a last line without '\n'
	}
	return c
}

// step consumes at most one record and decodes it into r.sc.out. It
// returns io.EOF at the end of the log.
func (r *Reader) step() error {
	switch r.mode {
	case modeTop:
		if !r.started {
			r.started = true
			r.skipBOM()
		}
		c, err := r.peekNonSpace()
		if err != nil {
			return err
		}
		switch c {
		case '{':
			return r.object()
		case '[':
			r.r++
			r.bol = false
			r.mode = modeArrayStart
			return nil
		}
		// Not a value that can be a body: a log line, a scalar, a stray
		// byte. It and the lines up to the next likely record are one.
		r.count(kindInvalid, r.line)
		r.bol = false
		return r.skipToRecord()

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
		r.bol = false
		if c == ']' {
			r.r++
			r.mode = modeTop
			return nil
		}
		r.mode = modeArray
		return nil

	default: // modeArray
		rec, res, err := r.readElement()
		if err != nil {
			return err
		}
		r.bol = false
		r.elem++
		switch res {
		case elemTooLong:
			r.count(kindInvalid, r.elem)
		case elemCut, elemLast, elemNext:
			if rec = trimSpace(rec); len(rec) == 0 {
				r.count(kindInvalid, r.elem) // "[1,,2]", "[1,]", or cut after ','
			} else {
				r.finish(r.sc.parse(rec, r.elem), r.elem)
			}
		}
		switch res {
		case elemCut:
			return io.EOF
		case elemLast:
			r.mode = modeTop
		}
		return nil
	}
}

// object reads the top-level object at buf[r]. An object alone on its line
// (NDJSON) is decoded straight from the line, as fast as the scanner goes;
// anything else, and any line the scanner rejects, is left to scan, which
// finds the object's end first.
func (r *Reader) object() error {
	line, indent := r.line, 0
	if r.bol {
		indent = r.indent
		if n, ok := r.restOfLine(); ok {
			// A line that does not end in '}' cannot hold a whole object:
			// the first line of a pretty-printed body is not decoded twice.
			if rec := r.buf[r.r : r.r+n]; lastNonSpace(rec) == '}' {
				k := r.sc.decode(rec, line)
				if !r.sc.syntax {
					r.r += r.sc.i
					r.bol = false
					r.finish(k, line)
					return nil
				}
			}
		}
	}
	r.sc.out = r.sc.out[:0] // what decode found before failing
	r.bol = false
	return r.scan(line, indent)
}

// scan finds the end of the object at buf[r], which starts on line, by
// tracking strings and brackets, and decodes it; or it finds the object
// broken (see Reader) and resumes after it. A read error is returned as it
// is met.
func (r *Reader) scan(line, indent int) error {
	var (
		off     int // bytes of buf[r:w] scanned
		depth   int // brackets open
		inStr   bool
		esc     bool
		dropped bool // the object is longer than max: scanned bytes are dropped
	)
	for {
		d := r.buf[r.r:r.w]
		i := off
		for i < len(d) {
			c := d[i]
			if inStr {
				switch {
				case c == '\n':
					return r.broken(line, indent, i, dropped) // a JSON string holds no newline
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
				// Past maxDepth the brackets are only counted: the object is
				// invalid anyway, and breaking there could lose a body it
				// swallowed.
				if depth > 0 && depth <= maxDepth && !r.canOpen(d, i, r.inArray(depth)) {
					return r.broken(line, indent, i, dropped)
				}
				if depth < maxDepth {
					r.push(depth, c == '[')
				}
				depth++
			default: // '}', ']'
				if depth <= maxDepth && r.inArray(depth) != (c == ']') {
					return r.broken(line, indent, i, dropped)
				}
				depth--
				if depth == 0 {
					return r.end(line, i+1, dropped)
				}
			}
			i++
		}
		off = len(d)
		if off > r.max {
			// Too long to decode: keep scanning for its end, dropping what
			// is scanned so that the buffer stays below max+1 bytes.
			if j := lastNonSpaceAt(d); j >= 0 {
				r.prevSig = d[j]
			}
			r.consume(off)
			dropped, off = true, 0
		}
		if !r.fill() {
			if r.readErr != nil {
				return r.readErr
			}
			return r.broken(line, indent, off, dropped) // cut short by the end of the log
		}
	}
}

// Byte classes for scan: plainValue[c] is true for bytes that need no
// attention outside strings.
var plainValue [256]bool

func init() {
	for c := range 256 {
		switch c {
		case '"', '{', '}', '[', ']':
		default:
			plainValue[c] = true
		}
	}
}

// inArray reports whether the innermost of depth (at most maxDepth) open
// brackets is a '['.
func (r *Reader) inArray(depth int) bool {
	d := depth - 1
	return r.stack[d/64]&(1<<(d%64)) != 0
}

// push records the bracket opened at depth (0 for the outermost; less than
// maxDepth).
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

// canOpen reports whether a value may start at d[i], inside an array
// (inArray) or an object: only after ':' in an object, or after '[' or ','
// in an array. This is what makes a body that runs into the next one (after
// its '}') show as broken.
func (r *Reader) canOpen(d []byte, i int, inArray bool) bool {
	j := i - 1
	for j >= 0 && isSpace(d[j]) {
		j--
	}
	p := r.prevSig // d[0] was not the object's '{': its start was dropped
	if j >= 0 {
		p = d[j]
	}
	if inArray {
		return p == '[' || p == ','
	}
	return p == ':'
}

// end handles an object that scan found to end n bytes into buf[r:] (after
// dropping some, if dropped).
func (r *Reader) end(line, n int, dropped bool) error {
	if dropped || n > r.max {
		r.count(kindInvalid, line)
		r.consume(n)
		return r.skipToRecord()
	}
	k := r.sc.parse(r.buf[r.r:r.r+n], line)
	r.consume(n)
	r.finish(k, line)
	if k == kindInvalid && r.sc.why == whySyntax {
		return r.skipToRecord() // JSON that is not a body needs no resync
	}
	return nil
}

// broken handles an object, started on line at indentation indent, that
// scan found broken b bytes into buf[r:]: it counts one invalid record and
// leaves buf[r] at the resync point (see Reader).
func (r *Reader) broken(line, indent, b int, dropped bool) error {
	r.count(kindInvalid, line)
	d := r.buf[r.r:r.w]
	if !dropped && b <= r.max {
		// All of it is at hand: look back for a body it swallowed.
		from := max(0, int(r.horizon-r.off)-r.r)
		if ls := r.lookBack(d, b, indent, from); ls > 0 {
			r.horizon = r.off + int64(r.r+b)
			r.consume(ls)
			r.bol, r.indent = true, 0
			return nil
		}
		if b < len(d) && (d[b] == '{' || d[b] == '[') {
			// The break is a line, not the first, that starts a value:
			// resume there.
			ls := b
			for ls > 0 && (d[ls-1] == ' ' || d[ls-1] == '\t' || d[ls-1] == '\r') {
				ls--
			}
			if ls > 0 && d[ls-1] == '\n' {
				r.consume(ls)
				r.bol, r.indent = true, 0
				return nil
			}
		}
	}
	r.consume(b)
	return r.skipToRecord()
}

// cand is a line lookBack may go back to: where it starts, and the depth of
// the brackets open before its value.
type cand struct{ ls, depth int }

// lookBack returns where in d the line starts that broken goes back to for
// an object broken at d[b], 0 if none: of the lines from d[from:] on, after
// the object's first, that start with '{' or '[' at most indent deep, the
// one whose value closed last before b. It reads d[:b] once; scan found no
// break there, so strings hold no newline and the brackets match.
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
			if f < b && (d[f] == '{' || d[f] == '[') && f-ls <= indent && ls >= from {
				cands = append(cands, cand{ls, depth})
			}
		}
	}
	r.cands = cands
	return best
}

// consume consumes n bytes of buf[r:], which end in the middle of a line.
func (r *Reader) consume(n int) {
	r.line += bytes.Count(r.buf[r.r:r.r+n], nl)
	r.r += n
	r.bol = false
}

var nl = []byte{'\n'}

// skipToRecord consumes the rest of the current line and then every line up
// to the next one whose first non-space byte is '{' or '['.
func (r *Reader) skipToRecord() error {
	for {
		if err := r.skipLine(); err != nil {
			return err
		}
		c, err := r.peekNonSpace()
		if err != nil {
			return err
		}
		if c == '{' || c == '[' {
			return nil
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
		if !r.fill() {
			return r.endErr()
		}
	}
}

// restOfLine reads the rest of the line at buf[r] into buf and returns its
// length without the '\n'. ok is false if it is longer than max or than buf
// (scan then grows buf as far as the object needs, not as far as a line of
// many objects would), or if reading failed (scan then meets the error).
func (r *Reader) restOfLine() (n int, ok bool) {
	searched := 0 // bytes of buf[r:w] known to hold no '\n'
	for {
		if i := bytes.IndexByte(r.buf[r.r+searched:r.w], '\n'); i >= 0 {
			n = searched + i
			return n, n <= r.max
		}
		searched = r.w - r.r
		if searched > r.max || searched == len(r.buf) {
			return 0, false
		}
		if !r.fill() {
			return searched, r.readErr == nil
		}
	}
}

// finish counts a decoded record and hands out what it holds besides
// statuses.
func (r *Reader) finish(k kind, line int) {
	if k != kindStatus {
		r.sc.out = r.sc.out[:0]
	}
	r.count(k, line)
	if k != kindInvalid {
		r.deliver()
	}
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
		r.prev = r.buf[r.r-1]
		r.off += int64(r.r)
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
				r.bol, r.indent = true, 0
			case ' ', '\t', '\r':
				r.indent++ // read only while bol
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

// lastNonSpaceAt is the index of the last non-space byte of b, -1 if none.
func lastNonSpaceAt(b []byte) int {
	i := len(b) - 1
	for i >= 0 && isSpace(b[i]) {
		i--
	}
	return i
}

// lastNonSpace is the last non-space byte of b, 0 if none.
func lastNonSpace(b []byte) byte {
	if i := lastNonSpaceAt(b); i >= 0 {
		return b[i]
	}
	return 0
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
