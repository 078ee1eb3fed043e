package csvin

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReaderLimits covers the limits on a record, lowered to 3 columns and
// 13 bytes a cell (the phone's length): where a record is refused, what the
// error says, that a record at a limit is read, and that reading goes on
// after a refusal at the right line.
func TestReaderLimits(t *testing.T) {
	lim := limits{cols: 3, cell: 13}
	ok := func(line int, params ...string) step {
		return step{rec: Record{Line: line, Phone: "+447400123456", RawPhone: "+447400123456", Params: params}}
	}
	const (
		phone = "+447400123456"
		v13   = "abcdefghijklm"
	)
	tests := []struct {
		name    string
		in      string
		wantErr string // NewReader's error; "" for none
		want    []step
	}{
		{
			name:    "header with too many columns",
			in:      "phone,a,b,c\n" + phone + ",x,y,z\n",
			wantErr: "line 1: too many columns: more than 3",
		},
		{
			name:    "header with too many columns after blank lines",
			in:      "\n\nphone,a,b,c\n",
			wantErr: "line 3: too many columns: more than 3",
		},
		{
			name:    "header cell too long",
			in:      "phone," + v13 + "n\n",
			wantErr: "line 1: cell too long: column 2 holds more than 13 bytes",
		},
		{
			name: "at the limits",
			in:   "phone,a,b\n" + phone + "," + v13 + `,"a""cdefghijklm"` + "\n" + phone + `,"abcdef` + "\r\n" + `hijklm",123` + "\r\n",
			want: []step{ok(2, v13, `a"cdefghijklm`), ok(3, "abcdef\nhijklm", "123")},
		},
		{
			name: "a row with too many columns is passed over",
			in:   "phone,a,b\n" + phone + ",x,y,z,w\n" + phone + ",x,y\n",
			want: []step{{errLine: 2, errIs: ErrTooManyColumns, errText: "line 2: too many columns: more than 3"}, ok(3, "x", "y")},
		},
		{
			name: "an empty fourth field is one too many",
			in:   "phone,a,b\n" + phone + ",x,y,\n" + phone + ",x,y\n",
			want: []step{{errLine: 2, errIs: ErrTooManyColumns}, ok(3, "x", "y")},
		},
		{
			name: "a cell too long is passed over",
			in:   "phone,a,b\n" + phone + "," + v13 + "n,y\n" + phone + ",x,y\n",
			want: []step{{errLine: 2, errIs: ErrCellTooLong, errText: "line 2: cell too long: column 2 holds more than 13 bytes"}, ok(3, "x", "y")},
		},
		{
			name: "a quoted cell too long over lines names both",
			in:   "phone,a,b\n" + phone + ",x,\"abc\nabc\nabc\nabc\nabc\nabc\"\n" + phone + ",x,y\n",
			want: []step{
				{errLine: 2, errIs: ErrCellTooLong, errText: "line 2: cell too long: column 3 holds more than 13 bytes (found at line 5)"},
				ok(8, "x", "y"),
			},
		},
		{
			name: "a line end is the byte too many",
			in:   "phone,a,b\n" + phone + ",x,\"" + v13 + "\n\"\n" + phone + ",x,y\n",
			want: []step{{errLine: 2, errIs: ErrCellTooLong}, ok(4, "x", "y")},
		},
		{
			name: "doubled quotes count once, a CR before LF not at all",
			in: "phone,a,b\n" + phone + ",\"" + strings.Repeat(`""`, 13) + "\",\"" + strings.Repeat(`""`, 14) + "\"\n" +
				phone + "," + v13 + "\r\n",
			want: []step{{errLine: 2, errIs: ErrCellTooLong, errText: "column 3"}, {errLine: 3, errIs: ErrFieldCount}},
		},
		{
			name: "a CR not before LF counts",
			in:   "phone,a,b\n" + phone + ",abcdefghijkl\r,x\n" + phone + ",abcdefghijkl\rm,x\n",
			want: []step{ok(2, "abcdefghijkl\r", "x"), {errLine: 3, errIs: ErrCellTooLong}},
		},
		{
			name: "too many columns after a multi-line cell",
			in:   "phone,a,b\n" + phone + ",\"x\ny\",z,w\n" + phone + ",x,y\n",
			want: []step{{errLine: 2, errIs: ErrTooManyColumns, errText: "(found at line 3)"}, ok(4, "x", "y")},
		},
		{
			name: "a quote error in a refused record ends it with its line",
			in:   "phone,a,b\n" + phone + "," + v13 + "n\"x\n" + phone + ",x,y\n",
			want: []step{{errLine: 2, errIs: ErrCellTooLong}, ok(3, "x", "y")},
		},
		{
			name: "an open quote in a refused record takes the rest",
			in:   "phone,a,b\n" + phone + ",x,y,z,\"w\n" + phone + ",x,y\n",
			want: []step{{errLine: 2, errIs: ErrTooManyColumns}},
		},
		{
			name: "quote errors are encoding/csv's, at their lines",
			in:   "phone,a,b\n" + phone + ",a\"b,x\n" + phone + ",\"a\"b,x,y,z\n" + phone + ",\"a\"\r\"b\n" + phone + ",x,y\n",
			want: []step{
				{errLine: 2, errText: `line 2: column 16: bare " in non-quoted-field`},
				{errLine: 3, errText: `line 3: column 17: extraneous or missing " in quoted-field`},
				{errLine: 4, errText: `line 4: column 17: extraneous or missing " in quoted-field`},
				ok(5, "x", "y"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, split := range []bool{false, true} {
				var src io.Reader = strings.NewReader(tt.in)
				if split {
					src = iotest.OneByteReader(src)
				}
				r, err := newReader(src, Options{}, lim)
				if tt.wantErr != "" {
					var le *LineError
					if err == nil || err.Error() != tt.wantErr || !errors.As(err, &le) {
						t.Fatalf("NewReader: %v, want the *LineError %q", err, tt.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatalf("NewReader: %v", err)
				}
				compareSteps(t, readAll(t, r), tt.want)
			}
		})
	}
}

// TestListReaderLimits: a suppression list has the same limits; comment
// lines are not records, however long; and the limiter does not read past
// the header, after which a line starting with '#' is data.
func TestListReaderLimits(t *testing.T) {
	lim := limits{cols: 3, cell: 14}
	long := "# " + strings.Repeat("a,b,c,", 50) + "\n"
	tests := []struct {
		name string
		in   string
		want []step
	}{
		{
			name: "plain list",
			in:   long + "+447400123456\n+4474001234567890\n+447400123457,a,b,c\n#x,y,z,w\n+447400123458\n",
			want: []step{
				{phone: "+447400123456", line: 2},
				{errLine: 3, errIs: ErrCellTooLong},
				{errLine: 4, errIs: ErrTooManyColumns},
				{phone: "+447400123458", line: 6},
			},
		},
		{
			name: "CSV",
			in:   long + "phone,name\n#+447400123456,x\n+447400123457,y\n",
			want: []step{{errLine: 3, errText: "contains '#'"}, {phone: "+447400123457", line: 4}},
		},
		{
			name: "a refused first line decides nothing",
			in:   "phone,a,b,c\n# comment\nphone,name\n+447400123456,x\n",
			want: []step{{errLine: 1, errIs: ErrTooManyColumns}, {phone: "+447400123456", line: 4}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			compareSteps(t, readList(t, newListReader(strings.NewReader(tt.in), "", lim)), tt.want)
		})
	}
}

// wideCSV is a campaign file whose header has cols columns, then a row as
// wide and a row that fits.
func wideCSV(cols int) []byte {
	var b bytes.Buffer
	b.WriteString("phone")
	b.WriteString(strings.Repeat(",c", cols-1))
	b.WriteString("\n+447400123456")
	b.WriteString(strings.Repeat(",x", cols-1))
	b.WriteString("\n")
	return b.Bytes()
}

// TestWideRecord reads a file of a million columns (2 MB): the header is
// refused at column 1,001, naming line 1, when a few kilobytes of it have
// been read; and a row as wide under a header that fits is passed over, the
// row after it read.
func TestWideRecord(t *testing.T) {
	data := wideCSV(1_000_000)
	src := &countingReader{r: bytes.NewReader(data)}
	_, err := NewReader(src, Options{})
	var le *LineError
	if !errors.As(err, &le) || le.Line != 1 || !errors.Is(err, ErrTooManyColumns) || err.Error() != "line 1: too many columns: more than 1000" {
		t.Fatalf("NewReader: %v, want a *LineError on line 1 wrapping ErrTooManyColumns", err)
	}
	// What is buffered: the header's first 64 KB, for the delimiter, and
	// a buffer more at most.
	if src.n > 3*bufSize {
		t.Errorf("read %d bytes of %d before refusing", src.n, len(data))
	}

	_, row, _ := bytes.Cut(data, []byte("\n"))
	in := "phone,name\n" + string(row) + "+447400123457,ok\n"
	r, err := NewReader(strings.NewReader(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	compareSteps(t, readAll(t, r), []step{
		{errLine: 2, errIs: ErrTooManyColumns, errText: "line 2: too many columns: more than 1000"},
		{rec: Record{Line: 3, Phone: "+447400123457", RawPhone: "+447400123457", Params: []string{"ok"}}},
	})
}

// cellStream is a campaign file with a cell of n bytes (a multiple of 64 KB) on line 2, written
// as it is read, and a row that fits after it.
func cellStream(n int64, quoted bool) io.Reader {
	head, tail := "phone,name\n+447400123456,", "\n+447400123457,ok\n"
	if quoted {
		head, tail = head+`"`, `"`+tail
	}
	x := bytes.Repeat([]byte("x"), 1<<16)
	return io.MultiReader(strings.NewReader(head), &repeatReader{b: x, n: int(n) / len(x)}, strings.NewReader(tail))
}

// TestHugeCell reads a cell of 100 MB, quoted or not: it is refused at
// MaxCell bytes, naming line 2, when little more has been read, and reading
// goes on at the row after it, without holding the cell.
func TestHugeCell(t *testing.T) {
	for _, quoted := range []bool{false, true} {
		t.Run(fmt.Sprintf("quoted=%v", quoted), func(t *testing.T) {
			src := &countingReader{r: cellStream(100<<20, quoted)}
			r, err := NewReader(src, Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Next()
			var le *LineError
			if !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ErrCellTooLong) ||
				err.Error() != "line 2: cell too long: column 2 holds more than 65536 bytes" {
				t.Fatalf("Next: %v, want a *LineError on line 2 wrapping ErrCellTooLong", err)
			}
			if src.n > MaxCell+3*bufSize {
				t.Errorf("read %d bytes before refusing a cell at %d", src.n, MaxCell)
			}
			rec, err := r.Next()
			if err != nil || rec.Line != 3 || rec.Phone != "+447400123457" {
				t.Fatalf("Next = %+v, %v; want the row on line 3", rec, err)
			}
			if _, err := r.Next(); err != io.EOF {
				t.Fatalf("Next = %v, want io.EOF", err)
			}
		})
	}
}

// TestLimiterSync: in sync mode the limiter hands on one line a Read, so
// that what follows a record is not read before the caller has seen it.
func TestLimiterSync(t *testing.T) {
	l := newLimiter(bufio.NewReader(strings.NewReader("a,b\n\n\"x\ny\"\n#c\nd")), ',', defaultLimits)
	l.comment, l.sync = '#', true
	var got []string
	p := make([]byte, 64)
	for {
		n, err := l.Read(p)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(p[:n]))
	}
	if want := []string{"a,b\n", "\n", "\"x\n", "y\"\n", "#\n", "d"}; !reflect.DeepEqual(got, want) {
		t.Errorf("reads %q, want %q", got, want)
	}
}

// FuzzLimiter holds the limiter to encoding/csv: csv reading through it
// reads every record as csv alone does, with the same lines, columns and
// errors, except that a record over the limits is a *LineError on the
// line it starts on, and the records after it are read as before. The
// limits, the delimiter, comments (switched off after the first record, as
// ListReader does) and the buffer sizes come from the input.
func FuzzLimiter(f *testing.F) {
	for _, s := range []string{
		"a,b,c\n1,2,3\n",
		"a,\"b\r\nc\",d\r\n\"x\"\"y\",z\r\n",
		"# c\n\n\"a\"b,c\nd,\"e\n",
		"a,\"b\"\r\"c\nd,e\r\n\r\n\"f\r\"",
		"x,y,z,w,v\n\"1234567\n89\",a\nb\"\"c\n",
		"#a,b\n#\"\nc,d\n#e\n",
	} {
		f.Add([]byte(s), uint8(3), uint8(4), uint8(0))
		f.Add([]byte(s), uint8(255), uint8(255), uint8(0xff))
	}
	f.Fuzz(func(t *testing.T, data []byte, cols, cell, opts uint8) {
		lim := limits{cols: int(cols)%8 + 1, cell: int(cell) % 16}
		if cols == 255 && cell == 255 {
			lim = defaultLimits
		}
		comma := []rune{',', ';', '\t', '|'}[opts&3]
		comments := opts&4 != 0
		small := opts&8 != 0

		ref := csv.NewReader(bytes.NewReader(data))
		var src io.Reader = bytes.NewReader(data)
		if small {
			src = iotest.HalfReader(src)
		}
		size := 64 << 10
		if small {
			size = 16
		}
		l := newLimiter(bufio.NewReaderSize(src, size), comma, lim)
		got := csv.NewReader(bufio.NewReaderSize(l, size))
		for _, r := range []*csv.Reader{ref, got} {
			r.Comma, r.FieldsPerRecord, r.ReuseRecord = comma, -1, true
			if comments {
				r.Comment = '#'
			}
		}
		if comments {
			l.comment, l.sync = '#', true
		}

		for range len(data) + 2 {
			want, werr := ref.Read()
			have, herr := got.Read()
			if werr == io.EOF || herr == io.EOF {
				if werr != herr {
					t.Fatalf("csv: %v; through the limiter: %v", werr, herr)
				}
				return
			}
			var pe *csv.ParseError
			if werr != nil && !errors.As(werr, &pe) {
				t.Fatalf("csv: %v", werr)
			}
			var start int
			if pe != nil {
				start = pe.StartLine
			} else {
				start, _ = ref.FieldPos(0)
			}
			over := len(want) > lim.cols
			for _, f := range want {
				over = over || len(f) > lim.cell
			}
			var le *LineError
			switch {
			case errors.As(herr, &le):
				// Refused: rightly so, unless csv found an error first in
				// a record whose fields so far are within the limits (the
				// one being read when it failed may not be).
				if !errors.Is(herr, ErrTooManyColumns) && !errors.Is(herr, ErrCellTooLong) || le.Line != start || !over && pe == nil {
					t.Fatalf("refused %v; csv read %q, %v from line %d", herr, want, werr, start)
				}
				continue
			case over:
				t.Fatalf("csv read %q, %v from line %d: over %+v, but read through the limiter as %q, %v", want, werr, start, lim, have, herr)
			case errText(herr) != errText(werr) || !slices.Equal(have, want):
				t.Fatalf("through the limiter %q, %v; csv %q, %v", have, herr, want, werr)
			}
			for i := range want {
				wl, wc := ref.FieldPos(i)
				hl, hc := got.FieldPos(i)
				if wl != hl || wc != hc {
					t.Fatalf("field %d of %q at %d:%d, csv says %d:%d", i, want, hl, hc, wl, wc)
				}
			}
			if comments && werr == nil {
				// As ListReader does after a header.
				ref.Comment, got.Comment, l.comment, l.sync = 0, 0, 0, false
				comments = false
			}
		}
		t.Fatal("no io.EOF")
	})
}
