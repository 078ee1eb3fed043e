package csvin

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf16"
)

// utf16Text is s in UTF-16 with a byte-order mark, as Excel saves
// "Unicode Text". s must be valid UTF-8.
func utf16Text(s string, bigEndian bool) string {
	return string(utf16Bytes(bigEndian, append([]uint16{0xFEFF}, utf16.Encode([]rune(s))...)...))
}

// utf16Bytes is units in the byte order asked for, for writing broken
// UTF-16.
func utf16Bytes(bigEndian bool, units ...uint16) []byte {
	b := make([]byte, 0, 2*len(units))
	for _, u := range units {
		if bigEndian {
			b = append(b, byte(u>>8), byte(u))
		} else {
			b = append(b, byte(u), byte(u>>8))
		}
	}
	return b
}

func TestDetectDelimiter(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		opt        Options
		want       rune
		wantParams []string
	}{
		{name: "comma", in: "phone,name\n+447400123456,Ann\n", want: ',', wantParams: []string{"name"}},
		{name: "semicolon", in: "phone;name;amount\n+447400123456;Ann;1,50\n", want: ';', wantParams: []string{"name", "amount"}},
		{name: "tab", in: "phone\tname\n", want: '\t', wantParams: []string{"name"}},
		{name: "one column", in: "phone\n+447400123456\n", want: ','},
		{name: "one column, no newline", in: "phone", want: ','},
		{name: "tie between comma and semicolon goes to comma", in: "phone,a;b\n", want: ',', wantParams: []string{"a;b"}},
		{name: "tie between semicolon and tab goes to semicolon", in: "phone;a\tb\n", want: ';', wantParams: []string{"a\tb"}},
		{name: "most frequent wins", in: "phone;a,b;c,d;e\n", want: ';', wantParams: []string{"a,b", "c,d", "e"}},
		{name: "quoted commas do not count", in: "\"first, last\";phone;\"x,y,z\"\n", want: ';', wantParams: []string{"first, last", "x,y,z"}},
		{name: "quoted semicolons and tabs do not count", in: "phone,\"a;b;c\",\"d\te\tf\"\n", want: ',', wantParams: []string{"a;b;c", "d\te\tf"}},
		{name: "doubled quotes stay inside the field", in: "phone;\"say \"\"a,b,c\"\"\"\n", want: ';', wantParams: []string{`say "a,b,c"`}},
		{name: "quoted newline does not end the header", in: "phone;\"two\nlines,\"\n", want: ';', wantParams: []string{"two\nlines,"}},
		{name: "blank and empty lines before the header", in: "\n;;\n\t\t\n  \r\nphone;name\n", want: ';', wantParams: []string{"name"}},
		{name: "empty quoted cells before the header", in: "\"\"\n\" \";\"\"\nphone;name\n", want: ';', wantParams: []string{"name"}},
		{name: "only the header line counts", in: "phone;name\n+447400123456;\"a,b,c,d\"\n", want: ';', wantParams: []string{"name"}},
		{name: "BOM and CRLF", in: "\ufeffphone;name\r\n", want: ';', wantParams: []string{"name"}},
		{name: "forced over the header", in: "phone,name;x;y\n", opt: Options{Delimiter: ','}, want: ',', wantParams: []string{"name;x;y"}},
		{name: "forced pipe", in: "phone|name\n", opt: Options{Delimiter: '|'}, want: '|', wantParams: []string{"name"}},
		{name: "forced tab", in: "phone\tname;x\n", opt: Options{Delimiter: '\t'}, want: '\t', wantParams: []string{"name;x"}},
		{name: "a '#' is data", in: "# of items,x;phone;a\n", want: ';', wantParams: []string{"# of items,x", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(strings.NewReader(tt.in), tt.opt)
			if err != nil {
				t.Fatalf("NewReader: %v", err)
			}
			if got := r.Delimiter(); got != tt.want {
				t.Errorf("Delimiter() = %q, want %q", got, tt.want)
			}
			if !reflect.DeepEqual(r.Params(), tt.wantParams) {
				t.Errorf("Params() = %q, want %q", r.Params(), tt.wantParams)
			}
		})
	}
}

// TestDetectDelimiterLongHeader checks a header that needs more than the
// first peek, and one longer than the buffer, and that detection consumes
// nothing.
func TestDetectDelimiterLongHeader(t *testing.T) {
	tests := []struct {
		name   string
		header string
		want   rune
	}{
		// Semicolons lead for the first 4 KiB, commas over the line.
		{"longer than the first peek", "phone;" + strings.Repeat("a;", 2100) + strings.Repeat("b,", 2200), ','},
		// Past the buffer only the first 64 KiB count.
		{"longer than the buffer", "phone;" + strings.Repeat("a;", bufSize/2) + strings.Repeat("b,", bufSize), ';'},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.header + "\n+447400123456\n"
			br := bufio.NewReaderSize(strings.NewReader(in), bufSize)
			if got := detectDelimiter(br, false); got != tt.want {
				t.Errorf("detectDelimiter = %q, want %q", got, tt.want)
			}
			if rest, err := io.ReadAll(br); err != nil || string(rest) != in {
				t.Errorf("after detection the reader holds %d bytes, %v; want all %d", len(rest), err, len(in))
			}
		})
	}
	if d, ok := headerDelimiter([]byte("phone;a;b"), false, false); ok {
		t.Errorf("headerDelimiter decided %q before the line ended", d)
	}
	if d, ok := headerDelimiter([]byte("phone;a;b"), false, true); !ok || d != ';' {
		t.Errorf("headerDelimiter at the end of the input = %q, %v; want ';'", d, ok)
	}
}

func TestBadDelimiter(t *testing.T) {
	for _, d := range []rune{':', ' ', '"', '\n', '\r', 'x', 0xFFFD, -1} {
		if _, err := NewReader(strings.NewReader("phone\n"), Options{Delimiter: d}); !errors.Is(err, ErrBadDelimiter) || errors.As(err, new(*LineError)) {
			t.Errorf("Delimiter %q: err = %v, want ErrBadDelimiter, not about a line", d, err)
		}
	}
}

func TestEncodings(t *testing.T) {
	const text = "phone\tname\tnote\r\n" +
		"+44 7400 123456\tZoë\tok\r\n" +
		"'+447400123457\t山田\t\"two\r\nlines\"\r\n" +
		"4.47400E+11\tAnn 😀\tx\r\n" +
		"\r\n" +
		"+447400123458\t\"Tab\tin\"\ty\r\n"
	want := []step{
		{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "+44 7400 123456", Params: []string{"Zoë", "ok"}}},
		{rec: Record{Line: 3, Phone: "+447400123457", RawPhone: "'+447400123457", Params: []string{"山田", "two\nlines"}}},
		{rec: Record{Line: 5, RawPhone: "4.47400E+11", Params: []string{"Ann 😀", "x"},
			Invalid: "invalid phone number: Excel turned it into 4.47400E+11 and dropped digits: format the column as Text and export again"}},
		{rec: Record{Line: 7, Phone: "+447400123458", RawPhone: "+447400123458", Params: []string{"Tab\tin", "y"}}},
	}
	tests := []struct {
		name    string
		in      string
		wantEnc string
	}{
		{"UTF-8", text, "UTF-8"},
		{"UTF-8 with BOM", "\ufeff" + text, "UTF-8 with BOM"},
		{"UTF-16LE", utf16Text(text, false), "UTF-16LE"},
		{"UTF-16BE", utf16Text(text, true), "UTF-16BE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte at a time splits every code unit and surrogate pair
			// across reads.
			for _, rd := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				r, err := NewReader(rd, Options{})
				if err != nil {
					t.Fatalf("NewReader: %v", err)
				}
				if r.Encoding() != tt.wantEnc || r.Delimiter() != '\t' {
					t.Errorf("Encoding, Delimiter = %q, %q; want %q, tab", r.Encoding(), r.Delimiter(), tt.wantEnc)
				}
				compareSteps(t, readAll(t, r), want)
				if n := r.Notes().ApostrophesRemoved; n != 1 {
					t.Errorf("ApostrophesRemoved = %d, want 1", n)
				}
			}
		})
	}
}

func TestBrokenUTF16(t *testing.T) {
	const (
		high = 0xD83D // of U+1F600
		low  = 0xDE00
	)
	enc := func(s string) []uint16 { return utf16.Encode([]rune(s)) }
	cat := func(parts ...[]uint16) []uint16 {
		var all []uint16
		for _, p := range parts {
			all = append(all, p...)
		}
		return all
	}
	tests := []struct {
		name  string
		units []uint16
		odd   bool // one more byte at the end
		want  []step
	}{
		{
			name:  "high surrogate without a low one",
			units: cat(enc("phone,name\r\n+447400123456,a"), []uint16{high}, enc("b\r\n+447400123457,c\r\n")),
			want: []step{
				{errLine: 2, errIs: ErrInvalidUTF8, errText: "line 2: invalid UTF-16%s in field 2 (an unpaired surrogate or a stray byte)"},
				{rec: Record{Line: 3, Phone: "+447400123457", RawPhone: "+447400123457", Params: []string{"c"}}},
			},
		},
		{
			name:  "low surrogate alone",
			units: cat(enc("phone,name\n+447400123456,\"x\ny"), []uint16{low}, enc("\"\n")),
			want:  []step{{errLine: 3, errIs: ErrInvalidUTF8}},
		},
		{
			name:  "high surrogate at the very end",
			units: cat(enc("phone,name\n+447400123456,x"), []uint16{high}),
			want:  []step{{errLine: 2, errIs: ErrInvalidUTF8}},
		},
		{
			name:  "odd number of bytes",
			units: enc("phone,name\n+447400123456,x"),
			odd:   true,
			want:  []step{{errLine: 2, errIs: ErrInvalidUTF8}},
		},
		{
			name:  "a valid pair, for contrast",
			units: cat(enc("phone,name\n+447400123456,x"), []uint16{high, low}),
			want:  []step{{rec: Record{Line: 2, Phone: "+447400123456", RawPhone: "+447400123456", Params: []string{"x😀"}}}},
		},
	}
	for _, tt := range tests {
		for _, be := range []bool{false, true} {
			name, order := tt.name+"/LE", "LE"
			if be {
				name, order = tt.name+"/BE", "BE"
			}
			t.Run(name, func(t *testing.T) {
				in := utf16Bytes(be, append([]uint16{0xFEFF}, tt.units...)...)
				if tt.odd {
					in = append(in, 'x')
				}
				want := slices.Clone(tt.want)
				for i := range want {
					want[i].errText = strings.ReplaceAll(want[i].errText, "%s", order)
				}
				r, err := NewReader(bytes.NewReader(in), Options{})
				if err != nil {
					t.Fatalf("NewReader: %v", err)
				}
				compareSteps(t, readAll(t, r), want)
			})
		}
	}
}

// TestUTF16ReaderShortBuffers reads through buffers too short for a code
// point, which bufio.Reader passes when its buffer is nearly full.
func TestUTF16ReaderShortBuffers(t *testing.T) {
	const text = "a\u00e9\u4e2d😀z"
	in := []byte(utf16Text(text, false))[2:]
	for _, size := range []int{1, 2, 3, 4, 5} {
		src := bufio.NewReaderSize(bytes.NewReader(in), 16)
		u := &utf16Reader{src: src}
		var out []byte
		buf := make([]byte, size)
		for range 100 {
			n, err := u.Read(buf)
			out = append(out, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("size %d: Read: %v", size, err)
			}
		}
		if string(out) != text {
			t.Errorf("size %d: read %q, want %q", size, out, text)
		}
	}
}

// TestUTF16ReaderError checks that an error from the file comes after the
// text before it, and stays.
func TestUTF16ReaderError(t *testing.T) {
	boom := errors.New("boom")
	in := []byte(utf16Text("phone\n+447400123456\n", true))
	r, err := NewReader(io.MultiReader(bytes.NewReader(in), iotest.ErrReader(boom)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := r.Next(); err != nil || rec.Phone != "+447400123456" {
		t.Fatalf("Next = %+v, %v", rec, err)
	}
	for range 2 {
		if _, err := r.Next(); !errors.Is(err, boom) {
			t.Fatalf("Next = %v, want %v", err, boom)
		}
	}
}

// TestUTF16Streams checks that a UTF-16 file is decoded as it is read, not
// read whole: NewReader and the first rows consume only a few buffers of a
// file that would take 200 MB.
func TestUTF16Streams(t *testing.T) {
	row := utf16Bytes(false, utf16.Encode([]rune("+447400123456,Zoë\r\n"))...)
	src := &countingReader{r: io.MultiReader(
		strings.NewReader(utf16Text("phone,name\r\n", false)),
		&repeatReader{b: row, n: 200 << 20 / len(row)},
	)}
	r, err := NewReader(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 * batchSize {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if limit := int64(4 * bufSize); src.n > limit {
		t.Errorf("read %d bytes for %d rows, want at most %d", src.n, 2*batchSize, limit)
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// repeatReader is b n times.
type repeatReader struct {
	b   []byte
	n   int
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	total := 0
	for len(p) > 0 && r.n > 0 {
		k := copy(p, r.b[r.off:])
		p, total, r.off = p[k:], total+k, r.off+k
		if r.off == len(r.b) {
			r.off, r.n = 0, r.n-1
		}
	}
	if total == 0 && r.n == 0 {
		return 0, io.EOF
	}
	return total, nil
}
