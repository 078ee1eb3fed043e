// Package csvin reads campaign CSV files and suppression lists, and turns the
// phone numbers in them into E.164.
//
// A campaign file has a header row. Its "phone" column is required; "from"
// (the sender's phone-number ID), "id" (the operator's own key for the
// row) and "send_at" (the row's earliest send time) are optional; every other column is a template body parameter, in
// header order. Header names are matched case-insensitively after trimming
// spaces; Options.PhoneColumn names another column for the phones.
//
// The file may be written the way spreadsheets and web apps write one: UTF-8
// with or without a byte-order mark, or UTF-16 with one (Excel's "Unicode
// Text"); LF or CRLF line ends; RFC 4180 quoting; fields separated by
// commas, semicolons (Excel in much of Europe) or tabs, whichever the header
// line has most of, unless Options.Delimiter says.
//
// The package tells two kinds of problem apart, because the caller treats
// them differently. A file that is structurally broken (bad quoting, a row
// with the wrong number of fields, bytes that are not UTF-8, a row over
// MaxColumns fields or with a field over MaxCell bytes) is reported as a
// *LineError, and the caller refuses the whole file: an operator would rather
// fix one line than have a million rows imported with their columns shifted.
// A phone number that cannot be used is data about one recipient: its row is
// still returned, with Record.Invalid saying why, and is recorded as skipped.
package csvin

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Errors about the header row. They are returned wrapped, with the detail
// that lets the operator fix the file, and usually inside a *LineError.
var (
	// ErrNoHeader means the file is empty or its first row is data.
	ErrNoHeader = errors.New("no header row")
	// ErrNoPhoneColumn means the header has no "phone" column (or none
	// named Options.PhoneColumn). It comes as a *NoPhoneColumnError.
	ErrNoPhoneColumn = errors.New(`no "phone" column`)
	// ErrDuplicateColumn means two header names are equal once trimmed and
	// case-folded.
	ErrDuplicateColumn = errors.New("duplicate column")
)

// ErrInvalidUTF8 is wrapped by the *LineError for a line that is not text:
// not UTF-8, or in a UTF-16 file not UTF-16 (and then the message says so).
// The CLI can suggest re-saving the file as "CSV UTF-8".
var ErrInvalidUTF8 = errors.New("invalid UTF-8")

// ErrFieldCount is wrapped by the *LineError for a row whose number of fields
// differs from the header's. It is encoding/csv's error, so errors.Is works
// with either name.
var ErrFieldCount = csv.ErrFieldCount

// LineError is a structural problem on one line of a file. Line is the
// physical line (the first line is 1) where the problem is; for a quoted
// field spanning lines it is where the record starts.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return "line " + strconv.Itoa(e.Line) + ": " + e.Err.Error() }

// Unwrap returns the underlying error, so that errors.Is(err, ErrInvalidUTF8)
// and the like work through a *LineError.
func (e *LineError) Unwrap() error { return e.Err }

// Options configures a Reader. The zero value reads files whose numbers all
// carry a country code.
type Options struct {
	// DefaultRegion is an ISO 3166 alpha-2 code ("GB"), any case, for numbers
	// written without a country code ("07400 123456"). Empty means every
	// number must carry one, though not necessarily a '+' (see normalizer).
	DefaultRegion string
	// PhoneColumn names the column that holds the phone numbers, matched
	// like every header name: any case, surrounding spaces ignored. Empty
	// means "phone". With another name, a "phone" column is a parameter like
	// any other.
	PhoneColumn string
	// Delimiter separates fields: ',', ';', '\t' or '|'. Zero means the one
	// the header line has most of among comma, semicolon and tab (see
	// Reader.Delimiter).
	Delimiter rune
}

// Notes counts what a Reader repaired in the rows it has returned, for the
// plan and the log: the rows are imported all the same.
type Notes struct {
	// ApostrophesRemoved counts phones usable only once a leading
	// apostrophe was removed ('+447911123456): web apps write it to defuse
	// formulas, and spreadsheets export text cells with it.
	ApostrophesRemoved int64
}

// Record is one data row of a campaign file.
type Record struct {
	// Line is the physical line where the row starts; the header is line 1
	// in a file with no blank lines before it.
	Line int
	// Phone is the number in E.164 ("+447400123456"), or "" when Invalid.
	Phone string
	// RawPhone is the phone cell with surrounding spaces trimmed, as the
	// operator wrote it (apostrophe included), for reports about skipped
	// rows.
	RawPhone string
	// From is the "from" cell (a sender phone-number ID), trimmed; "" when
	// the file has no such column or the cell is empty, meaning the default
	// sender.
	From string
	// ID is the "id" cell, trimmed; "" when absent.
	ID string
	// SendAt is the "send_at" cell, trimmed, unparsed (its zone may be the
	// recipient's); "" when absent.
	SendAt string
	// Params are the parameter cells in the order of Reader.Params, exactly
	// as written: spaces may be part of a message.
	Params []string
	// Invalid, when not "", says why Phone could not be used ("invalid phone
	// number: too short"). The row is returned all the same so that it can
	// be recorded as skipped.
	Invalid string
}

// Reader reads the data rows of a campaign file one at a time, in constant
// memory. It accepts what the package comment lists, and reports what it
// found through Encoding and Delimiter, and what it repaired through Notes.
// It does not deduplicate phone numbers; that is the caller's business.
//
// A Reader is not safe for concurrent use. Internally, when Next has handed
// out every row it holds, it reads the next few hundred and normalizes their
// phone numbers on other goroutines as it goes, since that costs about as
// much as reading them. No goroutine outlives a call to Next, so a Reader
// dropped halfway needs no Close.
type Reader struct {
	csv      *csv.Reader
	lim      *limiter
	norm     normalizer
	encoding string
	notes    Notes
	header   []string // names as written, trimmed
	params   []string
	width    int // fields per row
	phone    int
	from     int   // -1 when absent
	id       int   // -1 when absent
	sendAt   int   // -1 when absent
	cols     []int // the parameter columns
	skip     []int // unnamed columns: ignored, but must stay empty

	batch   []Record
	cells   []string // the parameter cells of records to come
	pos     int
	pending error // returned once batch is drained
	err     error // sticky: io.EOF or a read error
}

// batchSize is how many rows Next reads ahead to normalize in parallel. It
// bounds the memory a Reader holds and is large enough that starting the
// workers costs little next to the work.
const batchSize = 512

// batchBytes bounds the text of the rows read ahead, for files of wide or
// long rows: 512 rows of MaxColumns cells would be gigabytes.
const batchBytes = 1 << 20

// NewReader reads and checks the header of a campaign file. Errors about the
// header wrap ErrNoHeader, ErrNoPhoneColumn (as a *NoPhoneColumnError) or
// ErrDuplicateColumn, and are *LineError when there is a line to point at;
// an unknown opt.DefaultRegion is ErrUnknownRegion and an unsupported
// opt.Delimiter ErrBadDelimiter.
//
// Unnamed columns (an empty header cell, as spreadsheets write for a stray
// trailing comma) are not parameters; a row with a value in one is a
// *LineError.
//
// A record with more than MaxColumns fields or a field longer than MaxCell
// bytes is a *LineError wrapping ErrTooManyColumns or ErrCellTooLong, found
// before the record is read whole; for the header, NewReader returns it.
func NewReader(r io.Reader, opt Options) (*Reader, error) {
	return newReader(r, opt, defaultLimits)
}

// newReader is NewReader with other limits than MaxColumns and MaxCell.
func newReader(r io.Reader, opt Options, lim limits) (*Reader, error) {
	norm, err := newNormalizer(opt.DefaultRegion)
	if err != nil {
		return nil, err
	}
	if err := checkDelimiter(opt.Delimiter); err != nil {
		return nil, err
	}
	cr, l, enc, err := openInput(r, opt.Delimiter, false, lim)
	if err != nil {
		return nil, err
	}
	rd := &Reader{csv: cr, lim: l, norm: norm, encoding: enc, phone: -1, from: -1, id: -1, sendAt: -1}

	var fields []string
	for {
		fields, err = cr.Read()
		if err == io.EOF {
			return nil, fmt.Errorf("%w: the file is empty", ErrNoHeader)
		}
		if err != nil {
			return nil, readError(err)
		}
		if !allEmpty(fields) {
			break
		}
	}
	line, _ := cr.FieldPos(0)
	if err := checkUTF8(cr, fields, enc); err != nil {
		return nil, err
	}
	if err := rd.mapHeader(fields, opt.PhoneColumn); err != nil {
		return nil, &LineError{Line: line, Err: err}
	}
	return rd, nil
}

func (rd *Reader) mapHeader(fields []string, phoneColumn string) error {
	want := strings.TrimSpace(phoneColumn)
	if want == "" {
		want = "phone"
	}
	wantKey := strings.ToLower(want)
	rd.width = len(fields)
	rd.header = make([]string, len(fields))
	seen := make(map[string]int, len(fields))
	for i, f := range fields {
		name := strings.TrimSpace(f)
		rd.header[i] = name
		if strings.ContainsRune(name, '\r') {
			// encoding/csv ends lines only at \n (and turns a quoted \r\n
			// into \n), so a file saved with old-Mac CR line ends is one long
			// header row and no data.
			return fmt.Errorf("%w: column name %q contains a carriage return (is the file saved with CR line ends?)", ErrNoHeader, name)
		}
		if strings.ContainsRune(name, 0) {
			// Valid UTF-8, but what UTF-16 without a byte-order mark looks
			// like; no column would match.
			return fmt.Errorf("%w: column name %q contains NUL characters (is the file UTF-16 without a byte-order mark?)", ErrInvalidUTF8, name)
		}
		if name == "" {
			rd.skip = append(rd.skip, i)
			continue
		}
		key := strings.ToLower(name)
		if j, dup := seen[key]; dup {
			return fmt.Errorf("%w: %q (columns %d and %d)", ErrDuplicateColumn, name, j+1, i+1)
		}
		seen[key] = i
		switch key {
		case wantKey:
			rd.phone = i
		case "from":
			rd.from = i
		case "id":
			rd.id = i
		case "send_at":
			rd.sendAt = i
		default:
			rd.cols = append(rd.cols, i)
			rd.params = append(rd.params, name)
		}
	}
	if rd.phone >= 0 {
		return nil
	}
	// Say what is wrong in the operator's terms.
	for _, name := range rd.header {
		if _, err := rd.norm.normalize(name); err == nil {
			return fmt.Errorf("%w: the first row holds data (%q); add a header line such as \"phone,name\"", ErrNoHeader, name)
		}
	}
	e := &NoPhoneColumnError{Want: want, Columns: slices.Clone(rd.header), Likely: likelyPhoneColumn(rd.header)}
	if len(fields) == 1 {
		for _, d := range []rune{',', ';', '\t', '|'} {
			if d != rd.csv.Comma && strings.ContainsRune(fields[0], d) {
				e.note = fmt.Sprintf("the header is one column when split at %s, but it contains %s", delimiterName(rd.csv.Comma), delimiterName(d))
				e.Likely = "" // that one column, which is not the answer
				break
			}
		}
	}
	return e
}

// NoPhoneColumnError is the error for a header without the phone column.
// It wraps ErrNoPhoneColumn.
type NoPhoneColumnError struct {
	Want    string   // the column looked for: Options.PhoneColumn, or "phone"
	Columns []string // the header's names, trimmed, "" for an unnamed column
	// Likely is the column whose name most suggests phone numbers, "" if
	// none does; a caller may offer to use it (Options.PhoneColumn).
	Likely string
	note   string // about the delimiter, when the header is one column
}

func (e *NoPhoneColumnError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no %q column (columns: ", e.Want)
	for i, name := range e.Columns {
		if i == 10 {
			b.WriteString(", …")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(name))
	}
	b.WriteString(")")
	if e.note != "" {
		b.WriteString("; " + e.note)
	}
	if e.Likely != "" {
		fmt.Fprintf(&b, "; the phones may be in %q", e.Likely)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrNoPhoneColumn) true whatever column was wanted.
func (e *NoPhoneColumnError) Is(target error) bool { return target == ErrNoPhoneColumn }

// phoneNames are column names that mean phone numbers, best first, in
// lower case with separators removed ("Phone Number", "phone_number").
// The generic "number" and "contact" come last: they more often mean
// something else.
var phoneNames = []string{
	"phone", "phonenumber", "mobile", "mobilenumber", "cell", "cellphone", "cellnumber",
	"whatsapp", "whatsappnumber", "msisdn", "tel", "telephone", "telephonenumber",
	"contactnumber", "number", "contact",
}

// phoneWords suggest phone numbers anywhere in a name ("Customer Phone",
// "Mobile No."), best first. Shorter words ("tel", "cell") would match
// "hotel" and "cancelled".
var phoneWords = []string{"phone", "mobile", "whatsapp", "msisdn"}

// likelyPhoneColumn returns the name in header that most suggests phone
// numbers: the first of phoneNames that a name equals once its case and
// separators are ignored, else the first name containing the first of
// phoneWords; "" if none. Among equals the leftmost column wins.
func likelyPhoneColumn(header []string) string {
	best, rank := "", len(phoneNames)+len(phoneWords)
	for _, name := range header {
		key := squash(name)
		r := slices.Index(phoneNames, key)
		if r < 0 {
			for i, w := range phoneWords {
				if strings.Contains(key, w) {
					r = len(phoneNames) + i
					break
				}
			}
		}
		if r >= 0 && r < rank {
			best, rank = name, r
		}
	}
	return best
}

// squash returns name in lower case with everything but letters and digits
// removed.
func squash(name string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, name)
}

// Params returns the names of the parameter columns, trimmed, in the order of
// Record.Params.
func (rd *Reader) Params() []string { return slices.Clone(rd.params) }

// HasFrom reports whether the file has a "from" column.
func (rd *Reader) HasFrom() bool { return rd.from >= 0 }

// HasSendAt reports whether the file has a "send_at" column.
func (rd *Reader) HasSendAt() bool { return rd.sendAt >= 0 }

// Encoding reports the file's encoding: "UTF-8", "UTF-8 with BOM",
// "UTF-16LE" or "UTF-16BE".
func (rd *Reader) Encoding() string { return rd.encoding }

// Delimiter reports the field delimiter in use: Options.Delimiter, or the
// one detected from the header line.
func (rd *Reader) Delimiter() rune { return rd.csv.Comma }

// Notes reports what the Reader has repaired in the rows Next has returned
// so far; after io.EOF, in the whole file.
func (rd *Reader) Notes() Notes { return rd.notes }

// Next returns the next data row, or io.EOF after the last. Rows whose cells
// are all empty (spreadsheets write them as ",,,") are skipped; blank lines
// are ignored.
//
// A *LineError describes one bad line, which is then passed over: a caller
// that wants to list every problem before refusing the file may keep calling
// Next. Any other error comes from the underlying reader, and every later
// call returns it again.
func (rd *Reader) Next() (Record, error) {
	for rd.pos == len(rd.batch) {
		if rd.pending != nil {
			err := rd.pending
			rd.pending = nil
			return Record{}, err
		}
		if rd.err != nil {
			return Record{}, rd.err
		}
		rd.fill()
	}
	rec := rd.batch[rd.pos]
	rd.batch[rd.pos] = Record{} // let the caller own the only reference
	rd.pos++
	if rec.Phone != "" && rec.RawPhone[0] == '\'' {
		rd.notes.ApostrophesRemoved++
	}
	return rec, nil
}

// fill reads up to batchSize rows, stopping early at an error, and
// normalizes their phone numbers. Normalizing costs about as much as
// reading, so each normChunk rows read are normalized on a goroutine of
// their own while the next are read; fill waits for them all.
func (rd *Reader) fill() {
	if rd.batch == nil {
		// At its full capacity from the start: appending must never move
		// the records that goroutines are normalizing.
		rd.batch = make([]Record, 0, batchSize)
	}
	rd.batch, rd.pos = rd.batch[:0], 0
	var wg sync.WaitGroup
	normalized := 0 // records handed to a goroutine
	parallel := runtime.GOMAXPROCS(0) > 1
	end := rd.csv.InputOffset() + batchBytes
	for len(rd.batch) < batchSize && rd.csv.InputOffset() < end {
		fields, err := rd.csv.Read()
		if err == io.EOF {
			rd.err = io.EOF
			break
		}
		if err != nil {
			if le := readError(err); errors.As(le, new(*LineError)) {
				rd.pending = le
			} else {
				rd.err = le
			}
			break
		}
		if allEmpty(fields) {
			continue
		}
		line, _ := rd.csv.FieldPos(0)
		if !rd.lim.nonASCII {
			// ASCII so far: nothing to check. The limiter has read this
			// row, and no field of it had a byte above 0x7F.
		} else if err := checkUTF8(rd.csv, fields, rd.encoding); err != nil {
			rd.pending = err
			break
		}
		if len(fields) != rd.width {
			rd.pending = &LineError{Line: line, Err: fmt.Errorf("%w: %d, but the header has %d", ErrFieldCount, len(fields), rd.width)}
			break
		}
		if err := rd.checkUnnamed(line, fields); err != nil {
			rd.pending = err
			break
		}
		rd.batch = append(rd.batch, rd.record(line, fields))
		if parallel && len(rd.batch)-normalized == normChunk {
			part := rd.batch[normalized:]
			wg.Go(func() { rd.normalizeRange(part) })
			normalized = len(rd.batch)
		}
	}
	rd.normalizeRange(rd.batch[normalized:])
	wg.Wait()
}

// normChunk is how many rows fill hands to a goroutine to normalize.
const normChunk = 128

func (rd *Reader) checkUnnamed(line int, fields []string) error {
	for _, i := range rd.skip {
		if strings.TrimSpace(fields[i]) != "" {
			return &LineError{Line: line, Err: fmt.Errorf("value %q in column %d, which has no name in the header", fields[i], i+1)}
		}
	}
	return nil
}

// record builds a Record from fields. The strings in fields are substrings
// of one string allocated per row by encoding/csv, so only the slice that
// ReuseRecord recycles needs copying.
func (rd *Reader) record(line int, fields []string) Record {
	rec := Record{Line: line, RawPhone: strings.TrimSpace(fields[rd.phone])}
	if rd.from >= 0 {
		rec.From = strings.TrimSpace(fields[rd.from])
	}
	if rd.id >= 0 {
		rec.ID = strings.TrimSpace(fields[rd.id])
	}
	if rd.sendAt >= 0 {
		rec.SendAt = strings.TrimSpace(fields[rd.sendAt])
	}
	if n := len(rd.cols); n > 0 {
		// The records of a batch share an array of cells, allocated once
		// per batch; each record's slice is capped so that appending to
		// it cannot reach its neighbour's.
		if len(rd.cells) < n {
			rd.cells = make([]string, n*batchSize)
		}
		rec.Params, rd.cells = rd.cells[:n:n], rd.cells[n:]
		for i, c := range rd.cols {
			rec.Params[i] = fields[c]
		}
	}
	return rec
}

func (rd *Reader) normalizeRange(recs []Record) {
	for i := range recs {
		phone, err := rd.norm.normalize(recs[i].RawPhone)
		if err != nil {
			recs[i].Invalid = err.Error()
			continue
		}
		recs[i].Phone = phone
	}
}

// readError turns an error from csv.Reader.Read into a *LineError where it
// is about the file's content. The limiter's come as one already.
func readError(err error) error {
	if le := (*LineError)(nil); errors.As(err, &le) {
		return err
	}
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return fmt.Errorf("read: %w", err)
	}
	if pe.StartLine != pe.Line {
		// A quoted field that runs on: point at where it starts, which
		// is where the stray quote is.
		return &LineError{Line: pe.StartLine, Err: fmt.Errorf("%w (found at line %d, column %d, in a quoted field that starts on this line)", pe.Err, pe.Line, pe.Column)}
	}
	return &LineError{Line: pe.Line, Err: fmt.Errorf("column %d: %w", pe.Column, pe.Err)}
}

// checkUTF8 returns a *LineError naming the physical line of the first
// invalid UTF-8 in fields, the row cr has just read from a file in encoding
// enc. In UTF-16 files, what was not UTF-16 reaches here as invalid UTF-8.
func checkUTF8(cr *csv.Reader, fields []string, enc string) error {
	for i, f := range fields {
		if utf8.ValidString(f) {
			continue
		}
		line, _ := cr.FieldPos(i)
		bad := 0
		for bad < len(f) {
			r, size := utf8.DecodeRuneInString(f[bad:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			bad += size
		}
		line += strings.Count(f[:bad], "\n")
		if enc == encUTF16LE || enc == encUTF16BE {
			return &LineError{Line: line, Err: badUTF16{enc: enc, field: i + 1}}
		}
		return &LineError{Line: line, Err: fmt.Errorf("%w in field %d", ErrInvalidUTF8, i+1)}
	}
	return nil
}

// badUTF16 is the ErrInvalidUTF8 of a UTF-16 file, whose operator would be
// puzzled by a message about UTF-8.
type badUTF16 struct {
	enc   string
	field int
}

func (e badUTF16) Error() string {
	return "invalid " + e.enc + " in field " + strconv.Itoa(e.field) + " (an unpaired surrogate or a stray byte)"
}

func (e badUTF16) Is(target error) bool { return target == ErrInvalidUTF8 }

func allEmpty(fields []string) bool {
	for _, f := range fields {
		if strings.TrimSpace(f) != "" {
			return false
		}
	}
	return true
}
