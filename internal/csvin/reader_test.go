package csvin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestNewReaderHeader(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		opt        Options
		wantParams []string
		wantFrom   bool
		wantID     bool
		wantErr    error  // errors.Is target; nil means success
		wantLine   int    // line of the *LineError; 0 means not a *LineError
		wantText   string // substring of the error text
	}{
		{name: "phone only", in: "phone\n", wantParams: nil},
		{name: "all columns", in: "phone,from,id,name,code\n", wantParams: []string{"name", "code"}, wantFrom: true, wantID: true},
		{name: "case and spaces", in: " Phone ,FROM, Id , First Name \n", wantParams: []string{"First Name"}, wantFrom: true, wantID: true},
		{name: "phone not first", in: "name,phone,amount\n", wantParams: []string{"name", "amount"}},
		{name: "BOM", in: "\ufeffphone,name\n", wantParams: []string{"name"}},
		{name: "CRLF", in: "phone,name\r\n+447400123456,Ann\r\n", wantParams: []string{"name"}},
		{name: "no newline at end", in: "phone,name", wantParams: []string{"name"}},
		{name: "quoted names with comma and quote", in: "\"phone\",\"first, last\",\"say \"\"hi\"\"\"\n", wantParams: []string{"first, last", `say "hi"`}},
		{name: "quoted name with newline", in: "phone,\"two\nlines\"\n", wantParams: []string{"two\nlines"}},
		{name: "blank lines before header", in: "\n\nphone,name\n", wantParams: []string{"name"}},
		{name: "unnamed column is not a parameter", in: "phone,name,,\n", wantParams: []string{"name"}},
		{name: "region", in: "phone\n", opt: Options{DefaultRegion: "gb"}},

		{name: "empty file", in: "", wantErr: ErrNoHeader, wantText: "no header row: the file is empty"},
		{name: "only BOM", in: "\ufeff", wantErr: ErrNoHeader},
		{name: "only blank lines", in: "\n\r\n\n", wantErr: ErrNoHeader},
		{name: "only empty cells", in: ",,\n,\n", wantErr: ErrNoHeader},
		{name: "first row is data", in: "+447400123456,Ann\n+447400123457,Bob\n", wantErr: ErrNoHeader, wantLine: 1,
			wantText: `line 1: no header row: the first row holds data ("+447400123456")`},
		{name: "first row is national data", in: "07400 123456,Ann\n", opt: Options{DefaultRegion: "GB"}, wantErr: ErrNoHeader, wantLine: 1},
		{name: "missing phone column", in: "mobile,name\n", wantErr: ErrNoPhoneColumn, wantLine: 1,
			wantText: `line 1: no "phone" column (columns: "mobile", "name")`},
		{name: "semicolons split a one-column header under a forced comma", in: "phone;name\n", opt: Options{Delimiter: ','}, wantErr: ErrNoPhoneColumn, wantLine: 1,
			wantText: `line 1: no "phone" column (columns: "phone;name"); the header is one column when split at ',', but it contains ';'`},
		{name: "tabs split a one-column header under a forced semicolon", in: "phone\tname\n", opt: Options{Delimiter: ';'}, wantErr: ErrNoPhoneColumn, wantLine: 1,
			wantText: "when split at ';', but it contains tab"},
		{name: "unsupported delimiter", in: "phone\n", opt: Options{Delimiter: ':'}, wantErr: ErrBadDelimiter, wantText: `unsupported delimiter ':' (want ',', ';', tab or '|')`},
		{name: "NUL in a column name", in: "p\x00h\x00o\x00n\x00e\x00\n\x00", wantErr: ErrInvalidUTF8, wantLine: 1, wantText: "is the file UTF-16 without a byte-order mark?"},
		{name: "duplicate parameter", in: "phone,Name,x,name \n", wantErr: ErrDuplicateColumn, wantLine: 1,
			wantText: `line 1: duplicate column: "name" (columns 2 and 4)`},
		{name: "duplicate phone", in: "phone,PHONE\n", wantErr: ErrDuplicateColumn, wantLine: 1},
		{name: "duplicate from", in: "phone,from,From\n", wantErr: ErrDuplicateColumn, wantLine: 1},
		{name: "error line after blank lines", in: "\n\nphone,phone\n", wantErr: ErrDuplicateColumn, wantLine: 3},
		{name: "CR line ends", in: "phone,name\r+447400123456,Ann\r", wantErr: ErrNoHeader, wantLine: 1, wantText: "CR line ends"},
		{name: "invalid UTF-8", in: "phone,n\xe9m\n", wantErr: ErrInvalidUTF8, wantLine: 1, wantText: "line 1: invalid UTF-8 in field 2"},
		{name: "UTF-16 cut short", in: "\xff\xfep\x00h\x00o", wantErr: ErrInvalidUTF8, wantLine: 1, wantText: "line 1: invalid UTF-16LE in field 1 (an unpaired surrogate or a stray byte)"},
		{name: "broken quoting", in: "phone,\"name\n", wantLine: 1, wantText: `extraneous or missing " in quoted-field`},
		{name: "bare quote", in: "phone,na\"me\n", wantLine: 1, wantText: `line 1: column 9: bare " in non-quoted-field`},
		{name: "unknown region", in: "phone\n", opt: Options{DefaultRegion: "XX"}, wantErr: ErrUnknownRegion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(strings.NewReader(tt.in), tt.opt)
			if tt.wantErr == nil && tt.wantLine == 0 {
				if err != nil {
					t.Fatalf("NewReader: %v", err)
				}
				if !reflect.DeepEqual(r.Params(), tt.wantParams) {
					t.Errorf("Params() = %q, want %q", r.Params(), tt.wantParams)
				}
				if r.HasFrom() != tt.wantFrom || (r.id >= 0) != tt.wantID {
					t.Errorf("from, id columns = %v, %v; want %v, %v", r.HasFrom(), r.id >= 0, tt.wantFrom, tt.wantID)
				}
				return
			}
			if err == nil {
				t.Fatal("NewReader succeeded, want an error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %q does not wrap %q", err, tt.wantErr)
			}
			var le *LineError
			if got := errors.As(err, &le); got != (tt.wantLine > 0) {
				t.Errorf("error %q: is *LineError = %v, want %v", err, got, tt.wantLine > 0)
			} else if got && le.Line != tt.wantLine {
				t.Errorf("error %q: Line = %d, want %d", err, le.Line, tt.wantLine)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not contain %q", err, tt.wantText)
			}
		})
	}
}

// step is one result of Reader.Next or ListReader.Next, for comparing
// sequences of them.
type step struct {
	rec     Record // for Reader
	phone   string // for ListReader
	line    int
	errLine int    // a *LineError on this line
	errIs   error  // which it wraps, if that matters
	errText string // substring of its text, if that matters
}

func readAll(t *testing.T, r *Reader) []step {
	t.Helper()
	var out []step
	for range 10000 {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		var le *LineError
		if !errors.As(err, &le) {
			if err != nil {
				t.Fatalf("Next: unexpected error %v", err)
			}
			out = append(out, step{rec: rec})
			continue
		}
		out = append(out, step{errLine: le.Line, errIs: le.Err, errText: le.Error()})
	}
	t.Fatal("Next did not reach io.EOF")
	return nil
}

func compareSteps(t *testing.T, got, want []step) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d results, want %d:", len(got), len(want))
		for _, s := range got {
			t.Logf("  %+v", s)
		}
		return
	}
	for i := range want {
		g, w := got[i], want[i]
		if w.errLine == 0 {
			if g.errLine != 0 {
				t.Errorf("result %d: error %q, want %+v", i, g.errText, w.rec)
			} else if !reflect.DeepEqual(g.rec, w.rec) || g.phone != w.phone || g.line != w.line {
				t.Errorf("result %d:\n got %+v %q %d\nwant %+v %q %d", i, g.rec, g.phone, g.line, w.rec, w.phone, w.line)
			}
			continue
		}
		if g.errLine != w.errLine {
			t.Errorf("result %d: got %+v, want a *LineError on line %d", i, g, w.errLine)
			continue
		}
		if w.errIs != nil && !errors.Is(g.errIs, w.errIs) {
			t.Errorf("result %d: error %q does not wrap %q", i, g.errText, w.errIs)
		}
		if !strings.Contains(g.errText, w.errText) {
			t.Errorf("result %d: error %q does not contain %q", i, g.errText, w.errText)
		}
	}
}

func TestReaderRecords(t *testing.T) {
	tests := []struct {
		name string
		in   string
		opt  Options
		want []step
	}{
		{
			name: "all columns",
			in:   "phone,from,id,name,code\n+44 7400 123456, 1065403522 , row-1 ,Ann,A1\n",
			want: []step{{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "+44 7400 123456", From: "1065403522", ID: "row-1", Params: []string{"Ann", "A1"}}}},
		},
		{
			name: "a send_at column is the row's, not a parameter",
			in:   "phone,Send_At,name\n+447400123456, 2026-12-24 09:00 ,Ann\n",
			want: []step{{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "+447400123456", SendAt: "2026-12-24 09:00", Params: []string{"Ann"}}}},
		},
		{
			name: "parameters keep their spaces",
			in:   "phone,name,greeting\n +447400123456 , Ann ,  hello  \n",
			want: []step{{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "+447400123456", Params: []string{" Ann ", "  hello  "}}}},
		},
		{
			name: "columns in any order",
			in:   "Name,ID,Phone\nAnn,7,447400123456\n",
			want: []step{{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "447400123456", ID: "7", Params: []string{"Ann"}}}},
		},
		{
			name: "no parameters",
			in:   "phone\n+447400123456\n",
			want: []step{{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "+447400123456"}}},
		},
		{
			name: "BOM and CRLF",
			in:   "\ufeffphone,name\r\n+447400123456,Ann\r\n+12025550123,Bob\r\n",
			want: []step{
				{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "+447400123456", Params: []string{"Ann"}}},
				{rec: Record{Line: 3, Phone: "+12025550123", RawPhone: "+12025550123", Params: []string{"Bob"}}},
			},
		},
		{
			name: "quoted fields with commas, quotes and newlines",
			in: "phone,msg,other\n" +
				"\"+447400123456\",\"Hello, \"\"Ann\"\"\",x\n" +
				"+447400123457,\"line one\nline two\r\nline three\",y\n" +
				"+447400123458,plain,z\n",
			want: []step{
				{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "+447400123456", Params: []string{`Hello, "Ann"`, "x"}}},
				{rec: Record{Line: 3, Phone: "+447400123457", RawPhone: "+447400123457", Params: []string{"line one\nline two\nline three", "y"}}},
				{rec: Record{Line: 6, Phone: "+447400123458", RawPhone: "+447400123458", Params: []string{"plain", "z"}}},
			},
		},
		{
			name: "blank lines, empty rows and no final newline",
			in:   "phone,name\n\n+447400123456,Ann\n,\n  ,  \n\n+447400123457,Bob",
			want: []step{
				{rec: Record{Line: 3, Phone: "+447400123456", RawPhone: "+447400123456", Params: []string{"Ann"}}},
				{rec: Record{Line: 7, Phone: "+447400123457", RawPhone: "+447400123457", Params: []string{"Bob"}}},
			},
		},
		{
			name: "trailing empty lines",
			in:   "phone\n+447400123456\n\n\n\r\n",
			want: []step{{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "+447400123456"}}},
		},
		{
			name: "invalid phones are returned with a reason",
			in:   "phone,name\nnot a number,Ann\n,Bob\n+44 7400,Cy\n",
			want: []step{
				{rec: Record{Line: 2, RawPhone: "not a number", Params: []string{"Ann"}, Invalid: "invalid phone number: contains letters"}},
				{rec: Record{Line: 3, RawPhone: "", Params: []string{"Bob"}, Invalid: "invalid phone number: empty"}},
				{rec: Record{Line: 4, RawPhone: "+44 7400", Params: []string{"Cy"}, Invalid: "invalid phone number: too short"}},
			},
		},
		{
			name: "national numbers with a region",
			opt:  Options{DefaultRegion: "GB"},
			in:   "phone\n07400 123456\n+1 202 555 0123\n(202) 555-0123\n",
			want: []step{
				{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "07400 123456"}},
				{rec: Record{Line: 3, Phone: "+12025550123", RawPhone: "+1 202 555 0123"}},
				{rec: Record{Line: 4, RawPhone: "(202) 555-0123", Invalid: "invalid phone number: not a valid +44 number"}},
			},
		},
		{
			name: "national numbers without a region",
			in:   "phone\n07400 123456\n",
			want: []step{{rec: Record{Line: 2, RawPhone: "07400 123456", Invalid: "invalid phone number: no country code"}}},
		},
		{
			name: "empty unnamed column",
			in:   "phone,name,\n+447400123456,Ann,\n+447400123457,Bob, \n",
			want: []step{
				{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "+447400123456", Params: []string{"Ann"}}},
				{rec: Record{Line: 3, Phone: "+447400123457", RawPhone: "+447400123457", Params: []string{"Bob"}}},
			},
		},
		{
			name: "a BOM after the start is data",
			in:   "phone,name\n+447400123456,\ufeffAnn\n",
			want: []step{{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "+447400123456", Params: []string{"\ufeffAnn"}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(strings.NewReader(tt.in), tt.opt)
			if err != nil {
				t.Fatalf("NewReader: %v", err)
			}
			compareSteps(t, readAll(t, r), tt.want)
		})
	}
}

func TestReaderLineErrors(t *testing.T) {
	ok := func(line int, phone string) step {
		return step{rec: Record{Line: line, Phone: phone, RawPhone: phone, Params: []string{"x"}}}
	}
	tests := []struct {
		name string
		in   string
		want []step
	}{
		{
			name: "too few fields",
			in:   "phone,name\n+447400123456,x\n+447400123457\n+447400123458,x\n",
			want: []step{ok(2, "+447400123456"), {errLine: 3, errIs: ErrFieldCount, errText: "line 3: wrong number of fields: 1, but the header has 2"}, ok(4, "+447400123458")},
		},
		{
			name: "too many fields, from an unquoted comma",
			in:   "phone,name\n+447400123456,Smith, Ann\n",
			want: []step{{errLine: 2, errIs: ErrFieldCount, errText: "3, but the header has 2"}},
		},
		{
			name: "bare quote",
			in:   "phone,name\n+447400123456,x\n+447400123457,5\" screen\n+447400123458,x\n",
			want: []step{ok(2, "+447400123456"), {errLine: 3, errText: `line 3: column 16: bare " in non-quoted-field`}, ok(4, "+447400123458")},
		},
		{
			name: "text after closing quote",
			in:   "phone,name\n+447400123456,\"x\"y\n",
			want: []step{{errLine: 2, errText: `extraneous or missing " in quoted-field`}},
		},
		{
			name: "unterminated quote points at its start",
			in:   "phone,name\n+447400123456,x\n+447400123457,\"open\n+447400123458,x\n+447400123459,x\n",
			want: []step{ok(2, "+447400123456"), {errLine: 3, errText: "line 3: extraneous or missing \" in quoted-field (found at line 5, column 17"}},
		},
		{
			name: "line numbers after a multi-line field",
			in:   "phone,name\n+447400123456,\"a\nb\nc\"\n+447400123457,x\n+447400123458\n",
			want: []step{
				{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "+447400123456", Params: []string{"a\nb\nc"}}},
				ok(5, "+447400123457"),
				{errLine: 6, errIs: ErrFieldCount},
			},
		},
		{
			name: "line numbers after a multi-line field with CRLF",
			in:   "phone,name\r\n+447400123456,\"a\r\nb\"\r\n+447400123457\r\n",
			want: []step{
				{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "+447400123456", Params: []string{"a\nb"}}},
				{errLine: 4, errIs: ErrFieldCount},
			},
		},
		{
			name: "invalid UTF-8",
			in:   "phone,name\n+447400123456,x\n+447400123457,\xc3\x28\n+447400123458,x\n",
			want: []step{ok(2, "+447400123456"), {errLine: 3, errIs: ErrInvalidUTF8, errText: "line 3: invalid UTF-8 in field 2"}, ok(4, "+447400123458")},
		},
		{
			name: "invalid UTF-8 on the third line of a quoted field",
			in:   "phone,name\n+447400123456,\"a\nb\nc\xff\"\n",
			want: []step{{errLine: 4, errIs: ErrInvalidUTF8}},
		},
		{
			name: "invalid UTF-8 in the phone",
			in:   "phone,name\n+44\xff7400123456,x\n",
			want: []step{{errLine: 2, errIs: ErrInvalidUTF8, errText: "field 1"}},
		},
		{
			name: "value in an unnamed column",
			in:   "phone,name,\n+447400123456,x,\n+447400123457,x,oops\n",
			want: []step{ok(2, "+447400123456"), {errLine: 3, errText: `line 3: value "oops" in column 3, which has no name in the header`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(strings.NewReader(tt.in), Options{})
			if err != nil {
				t.Fatalf("NewReader: %v", err)
			}
			compareSteps(t, readAll(t, r), tt.want)
		})
	}
}

// TestReaderManyRows crosses batch boundaries, where rows are normalized in
// parallel and errors are held back until the rows before them are out.
func TestReaderManyRows(t *testing.T) {
	const n = 3*batchSize + 17
	var b strings.Builder
	b.WriteString("id,phone,n\n")
	var want []step
	line := 2
	for i := range n {
		switch {
		case i%97 == 5: // wrong field count
			fmt.Fprintf(&b, "%d,%s\n", i, SampleNumber(i))
			want = append(want, step{errLine: line, errIs: ErrFieldCount})
		case i%89 == 7: // invalid phone
			fmt.Fprintf(&b, "%d,+44 12,%d\n", i, i)
			want = append(want, step{rec: Record{Line: line, RawPhone: "+44 12", ID: fmt.Sprint(i), Params: []string{fmt.Sprint(i)}, Invalid: "invalid phone number: too short"}})
		case i%61 == 3: // a multi-line parameter
			fmt.Fprintf(&b, "%d,%s,\"%d\n\"\n", i, SampleNumber(i), i)
			want = append(want, step{rec: Record{Line: line, Phone: SampleNumber(i), RawPhone: SampleNumber(i), ID: fmt.Sprint(i), Params: []string{fmt.Sprint(i) + "\n"}}})
			line++
		default:
			fmt.Fprintf(&b, "%d,%s,%d\n", i, SampleNumber(i), i)
			want = append(want, step{rec: Record{Line: line, Phone: SampleNumber(i), RawPhone: SampleNumber(i), ID: fmt.Sprint(i), Params: []string{fmt.Sprint(i)}}})
		}
		line++
	}
	r, err := NewReader(strings.NewReader(b.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	compareSteps(t, readAll(t, r), want)
}

// TestReaderRecordsAreCopies checks that a Record stays intact after later
// calls to Next, although the CSV reader reuses its buffers.
func TestReaderRecordsAreCopies(t *testing.T) {
	in := "phone,a,b\n"
	for i := range 2*batchSize + 3 {
		in += fmt.Sprintf("%s,a%d,b%d\n", SampleNumber(i), i, i)
	}
	r, err := NewReader(strings.NewReader(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var recs []Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	for i, rec := range recs {
		want := []string{fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)}
		if rec.Phone != SampleNumber(i) || !reflect.DeepEqual(rec.Params, want) {
			t.Fatalf("record %d = %+v, want %s %q", i, rec, SampleNumber(i), want)
		}
	}
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	header := strings.NewReader("phone,name\n+447400123456,x\n")
	r, err := NewReader(io.MultiReader(header, iotest.ErrReader(boom)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := r.Next()
	if err != nil || rec.Line != 2 {
		t.Fatalf("Next = %+v, %v; want the row on line 2", rec, err)
	}
	for range 2 {
		_, err = r.Next()
		if !errors.Is(err, boom) {
			t.Fatalf("Next error = %v, want %v (every time)", err, boom)
		}
		var le *LineError
		if errors.As(err, &le) {
			t.Fatalf("a read error is not a *LineError: %v", err)
		}
	}

	_, err = NewReader(iotest.ErrReader(boom), Options{})
	if !errors.Is(err, boom) {
		t.Fatalf("NewReader error = %v, want %v", err, boom)
	}
}

func TestReaderAfterEOF(t *testing.T) {
	r, err := NewReader(strings.NewReader("phone\n+447400123456\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("Next = %v, want io.EOF", err)
		}
	}
}

func TestReaderFixtures(t *testing.T) {
	tests := []struct {
		file       string
		opt        Options
		wantRows   int
		wantBad    int
		wantLines  []int // lines of *LineErrors
		wantEnc    string
		wantDelim  rune
		wantFixed  int64 // Notes().ApostrophesRemoved
		wantParams []string
	}{
		{file: "campaign.csv", wantRows: 6, wantBad: 1, wantEnc: "UTF-8", wantDelim: ',', wantParams: []string{"name", "order"}},
		{file: "excel-uk.csv", opt: Options{DefaultRegion: "GB"}, wantRows: 3, wantBad: 0, wantEnc: "UTF-8 with BOM", wantDelim: ',', wantParams: []string{"First name", "Amount"}},
		{file: "broken.csv", wantRows: 3, wantLines: []int{4, 6}, wantEnc: "UTF-8", wantDelim: ',', wantParams: []string{"name"}},
		// European Excel: semicolons, decimal commas, a German column name,
		// a web app's apostrophes, a number in scientific notation.
		{file: "excel-de.csv", opt: Options{DefaultRegion: "DE", PhoneColumn: "mobil"}, wantRows: 5, wantBad: 1,
			wantEnc: "UTF-8 with BOM", wantDelim: ';', wantFixed: 2, wantParams: []string{"Name", "Betrag", "Stadt"}},
		// Excel's "Unicode Text": UTF-16LE, tabs, CRLF.
		{file: "excel-unicode.csv", wantRows: 4, wantBad: 1, wantEnc: "UTF-16LE", wantDelim: '\t', wantFixed: 1, wantParams: []string{"name", "city"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r, err := NewReader(openFixture(t, tt.file), tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			var rows, bad int
			var lines []int
			for _, s := range readAll(t, r) {
				switch {
				case s.errLine != 0:
					lines = append(lines, s.errLine)
				case s.rec.Invalid != "":
					bad++
					rows++
				default:
					rows++
				}
			}
			if rows != tt.wantRows || bad != tt.wantBad || !reflect.DeepEqual(lines, tt.wantLines) {
				t.Errorf("rows, invalid, error lines = %d, %d, %v; want %d, %d, %v", rows, bad, lines, tt.wantRows, tt.wantBad, tt.wantLines)
			}
			if r.Encoding() != tt.wantEnc || r.Delimiter() != tt.wantDelim || r.Notes().ApostrophesRemoved != tt.wantFixed {
				t.Errorf("Encoding, Delimiter, ApostrophesRemoved = %q, %q, %d; want %q, %q, %d",
					r.Encoding(), r.Delimiter(), r.Notes().ApostrophesRemoved, tt.wantEnc, tt.wantDelim, tt.wantFixed)
			}
			if !reflect.DeepEqual(r.Params(), tt.wantParams) {
				t.Errorf("Params() = %q, want %q", r.Params(), tt.wantParams)
			}
		})
	}
}

// TestReaderSpreadsheetFixtures checks the rows of the spreadsheet exports
// in full: line numbers after multi-line cells, decoded text, reasons.
func TestReaderSpreadsheetFixtures(t *testing.T) {
	tests := []struct {
		file string
		opt  Options
		want []step
	}{
		{
			file: "excel-de.csv",
			opt:  Options{DefaultRegion: "DE", PhoneColumn: "Mobil"},
			want: []step{
				{rec: Record{Line: 2, Phone: "+491701234567", RawPhone: "+49 170 1234567", Params: []string{"Anna", "12,50", "Köln"}}},
				{rec: Record{Line: 3, Phone: "+491701234568", RawPhone: "'+491701234568", Params: []string{"Ben", "7,00", "München"}}},
				{rec: Record{Line: 4, RawPhone: "4,91701E+11", Params: []string{"Carla", "0,99", "Berlin"},
					Invalid: "invalid phone number: Excel turned it into 4,91701E+11 and dropped digits: format the column as Text and export again"}},
				{rec: Record{Line: 5, Phone: "+491701234569", RawPhone: "0049 170 1234569", Params: []string{"Dora; Jr", "1,00", "Frankfurt\nam Main"}}},
				{rec: Record{Line: 7, Phone: "+491701234560", RawPhone: "'0170 1234560", Params: []string{"Emil", "3,00", "Bonn"}}},
			},
		},
		{
			file: "excel-unicode.csv",
			want: []step{
				{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "+44 7400 123456", Params: []string{"Zoë", "London"}}},
				{rec: Record{Line: 3, Phone: "+447400123457", RawPhone: "'+447400123457", Params: []string{"山田 太郎", "Leeds\nWest Yorkshire"}}},
				{rec: Record{Line: 5, RawPhone: "4.474E+11", Params: []string{"Ann 😀", "York"},
					Invalid: "invalid phone number: Excel turned it into 4.474E+11 and dropped digits: format the column as Text and export again"}},
				{rec: Record{Line: 7, Phone: "+447400123458", RawPhone: "+447400123458", Params: []string{"Tab\there", "Bath"}}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r, err := NewReader(openFixture(t, tt.file), tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			compareSteps(t, readAll(t, r), tt.want)
		})
	}
}

// openFixture opens a file in the repository's testdata/csv.
func openFixture(t *testing.T, name string) io.Reader {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "csv", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestPhoneColumnOption(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		column     string
		wantParams []string // success
		wantErr    string   // else the whole error text
	}{
		{name: "default is phone", in: "Name,Phone\n", wantParams: []string{"Name"}},
		{name: "named column", in: "Name,Phone Number,City\n", column: "Phone Number", wantParams: []string{"Name", "City"}},
		{name: "case differs", in: "Name,PHONE NUMBER\n", column: "phone number", wantParams: []string{"Name"}},
		{name: "spaces around the option", in: "Name,Mobile\n", column: "  mobile ", wantParams: []string{"Name"}},
		{name: "spaces around the header name", in: "Name, Mobile \n", column: "Mobile", wantParams: []string{"Name"}},
		{name: "blank option means phone", in: "phone,name\n", column: "   ", wantParams: []string{"name"}},
		{name: "a phone column is then a parameter", in: "phone,Mobile\n", column: "mobile", wantParams: []string{"phone"}},
		{name: "missing named column", in: "Name,Phone Number,City\n", column: "Mobile",
			wantErr: `line 1: no "Mobile" column (columns: "Name", "Phone Number", "City"); the phones may be in "Phone Number"`},
		{name: "missing default column", in: "Name,Phone Number,City\n",
			wantErr: `line 1: no "phone" column (columns: "Name", "Phone Number", "City"); the phones may be in "Phone Number"`},
		{name: "no suggestion", in: "Name,City\n",
			wantErr: `line 1: no "phone" column (columns: "Name", "City")`},
		{name: "separators are not ignored in the option", in: "Name,Phone_Number\n", column: "phone number",
			wantErr: `line 1: no "phone number" column (columns: "Name", "Phone_Number"); the phones may be in "Phone_Number"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(strings.NewReader(tt.in), Options{PhoneColumn: tt.column})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("NewReader: %v", err)
				}
				if !reflect.DeepEqual(r.Params(), tt.wantParams) {
					t.Errorf("Params() = %q, want %q", r.Params(), tt.wantParams)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("NewReader error = %v, want %s", err, tt.wantErr)
			}
			var npc *NoPhoneColumnError
			if !errors.Is(err, ErrNoPhoneColumn) || !errors.As(err, &npc) {
				t.Fatalf("error %v: want ErrNoPhoneColumn in a *NoPhoneColumnError", err)
			}
		})
	}
}

func TestNoPhoneColumnError(t *testing.T) {
	_, err := NewReader(strings.NewReader(" Name ,,Customer Phone,a,b,c,d,e,f,g,h,i\n"), Options{})
	var npc *NoPhoneColumnError
	if !errors.As(err, &npc) {
		t.Fatalf("err = %v, want a *NoPhoneColumnError", err)
	}
	want := NoPhoneColumnError{Want: "phone", Columns: []string{"Name", "", "Customer Phone", "a", "b", "c", "d", "e", "f", "g", "h", "i"}, Likely: "Customer Phone"}
	if npc.Want != want.Want || !reflect.DeepEqual(npc.Columns, want.Columns) || npc.Likely != want.Likely {
		t.Errorf("got %+v, want %+v", *npc, want)
	}
	const text = `no "phone" column (columns: "Name", "", "Customer Phone", "a", "b", "c", "d", "e", "f", "g", …); the phones may be in "Customer Phone"`
	if npc.Error() != text {
		t.Errorf("Error() = %s\nwant      %s", npc.Error(), text)
	}
}

func TestLikelyPhoneColumn(t *testing.T) {
	tests := []struct {
		name   string
		header []string
		want   string
	}{
		{"none", []string{"Name", "City", "Amount"}, ""},
		{"empty header", nil, ""},
		{"phone number with a space", []string{"Name", "Phone Number"}, "Phone Number"},
		{"underscore", []string{"name", "mobile_number"}, "mobile_number"},
		{"dash and capitals", []string{"Name", "WhatsApp-Number"}, "WhatsApp-Number"},
		{"camel case", []string{"PhoneNumber", "Name"}, "PhoneNumber"},
		{"msisdn", []string{"MSISDN", "Name"}, "MSISDN"},
		{"tel with a dot", []string{"Name", "Tel."}, "Tel."},
		{"phone beats mobile", []string{"Mobile", "Phone Number"}, "Phone Number"},
		{"mobile beats tel", []string{"Tel", "Mobile"}, "Mobile"},
		{"specific beats number", []string{"Number", "Cell"}, "Cell"},
		{"number beats contact", []string{"Contact", "Number"}, "Number"},
		{"exact name beats a word inside", []string{"Customer Phone", "Telephone"}, "Telephone"},
		{"word inside", []string{"Name", "Mobile No."}, "Mobile No."},
		{"better word inside", []string{"Mobile (work)", "Customer Phone"}, "Customer Phone"},
		{"leftmost among equals", []string{"Phone 1", "Phone 2"}, "Phone 1"},
		{"short words only whole", []string{"Hotel", "Cancelled"}, ""},
		{"contact name is not a phone", []string{"Contact Name", "Account Number"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := likelyPhoneColumn(tt.header); got != tt.want {
				t.Errorf("likelyPhoneColumn(%q) = %q, want %q", tt.header, got, tt.want)
			}
		})
	}
}

func TestReaderNotes(t *testing.T) {
	in := "phone,name\n" +
		"'+447911123456,fixed\n" +
		"  '+44 7911 123457 ,fixed after spaces\n" +
		"'07911 123458,fixed with the region\n" +
		"+447911123459,nothing to fix\n" +
		"'+44 7911,still too short\n" +
		"''+447911123460,two apostrophes\n" +
		"',only an apostrophe\n"
	for i := range 2 * batchSize {
		// Across batches, which are normalized in parallel.
		in += "'" + SampleNumber(i) + ",x\n"
	}
	r, err := NewReader(strings.NewReader(in), Options{DefaultRegion: "GB"})
	if err != nil {
		t.Fatal(err)
	}
	var invalid []string
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Invalid != "" {
			invalid = append(invalid, rec.RawPhone+": "+rec.Invalid)
		}
	}
	if got, want := r.Notes(), (Notes{ApostrophesRemoved: 3 + 2*batchSize}); got != want {
		t.Errorf("Notes() = %+v, want %+v", got, want)
	}
	wantInvalid := []string{
		"'+44 7911: invalid phone number: too short",
		"''+447911123460: invalid phone number: contains '\\''",
		"': invalid phone number: empty",
	}
	if !reflect.DeepEqual(invalid, wantInvalid) {
		t.Errorf("invalid rows = %q, want %q", invalid, wantInvalid)
	}
}
