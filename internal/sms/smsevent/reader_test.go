package smsevent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// e is a one-line SMS event of message id.
func e(id string) string {
	return `{"eventType":"TEXT_DELIVERED","messageId":"` + id + `","eventTimestamp":1796032800310,"context":{"bulksend":"spring-2026:1"}}`
}

// cut is s cut short just after the first occurrence of after.
func cut(s, after string) string { return s[:strings.Index(s, after)+len(after)] }

// pretty is e(id) over several lines, indented by indent.
func pretty(id, indent string) string {
	return strings.ReplaceAll("{\n  \"eventType\": \"TEXT_DELIVERED\",\n  \"messageId\": \""+id+"\",\n  \"eventTimestamp\": 1796032800310,\n"+
		"  \"context\": {\n    \"bulksend\": \"spring-2026:1\"\n  }\n}", "\n", "\n"+indent)
}

const voice = `{"eventType":"VOICE_COMPLETED","messageId":"v","eventTimestamp":1796032800310}`

// TestReader covers finding records: each form alone and mixed, the
// CloudWatch prefix, and how broken records are skipped. want lists the
// events read as "messageId@line".
func TestReader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     string
		want   []string
		counts Counts // but Events, which is len(want)
	}{
		{"empty", "", nil, Counts{}},
		{"blank", "\n \r\n\t\n", nil, Counts{}},
		{"JSON lines", e("a") + "\n" + e("b") + "\n", []string{"a@1", "b@2"}, Counts{Records: 2}},
		{"CRLF, blank lines, no final newline", e("a") + "\r\n\r\n" + e("b"), []string{"a@1", "b@3"}, Counts{Records: 2}},
		{"byte-order mark", "\xef\xbb\xbf" + e("a") + "\n" + e("b"), []string{"a@1", "b@2"}, Counts{Records: 2}},
		{"concatenated", e("a") + e("b") + e("c"), []string{"a@1", "b@1", "c@1"}, Counts{Records: 3}},
		{"concatenated across lines", e("a") + "\n" + pretty("b", "") + pretty("c", "  ") + " " + e("d") + "\n\n" + e("e"),
			[]string{"a@1", "b@2", "c@9", "d@16", "e@18"}, Counts{Records: 5}},
		{"JSON array", "[" + e("a") + "," + e("b") + "]", []string{"a@1", "b@1"}, Counts{Records: 2}},
		{"pretty array", "[\n  " + pretty("a", "  ") + ",\n  " + pretty("b", "  ") + "\n]\n", []string{"a@2", "b@10"}, Counts{Records: 2}},
		{"arrays one after the other, nested, empty", "[" + e("a") + "][[" + e("b") + "],[]]\n[]\n[" + e("c") + ",\n" + e("d") + "]",
			[]string{"a@1", "b@1", "c@3", "d@4"}, Counts{Records: 4}},
		{"array elements that are not objects", "[\n" + e("a") + ",\n42,\n\"x\",\n" + e("b") + "\n]",
			[]string{"a@2", "b@5"}, Counts{Records: 4, Invalid: 2, FirstInvalid: []int{3, 4}}},
		{"a scalar element costs the rest of its line", "[1," + e("a") + "]\n" + e("b"),
			[]string{"b@2"}, Counts{Records: 2, Invalid: 1, FirstInvalid: []int{1}}},
		{"mixed", e("a") + "\n" + sns(e("b")) + "\n" + voice + e("c") + "\n[" + e("d") + "]\n2026-11-30T10:00:00.490Z " + e("f"),
			[]string{"a@1", "b@2", "c@3", "d@4", "f@5"}, Counts{Records: 6, NotEvent: 1}},

		// CloudWatch Logs.
		{"CloudWatch export", "2026-11-30T10:00:00.490Z " + e("a") + "\n2026-11-30T10:00:03.130Z\t" + e("b") + "\n",
			[]string{"a@1", "b@2"}, Counts{Records: 2}},
		{"date-times", "2026-11-30T10:00:00Z " + e("a") + "\n2026-11-30T10:00:00.490000+00:00 " + e("b") +
			"\n2026-11-30T10:00:00-0800 " + e("c") + "\n2026-11-30 10:00:00.490 " + e("d") + "\n2026-11-30t10:00:00z " + e("f") +
			"\n2026-11-30T10:00:00 " + e("g"),
			[]string{"a@1", "b@2", "c@3", "d@4", "f@5", "g@6"}, Counts{Records: 6}},
		{"aws logs tail, with the log stream", "2026-11-30T10:00:00.490000+00:00 2026/11/30/[$LATEST]sms " + e("a") + "\n" +
			"2026-11-30T10:00:01.000000+00:00 sms-events  \t " + e("b"), []string{"a@1", "b@2"}, Counts{Records: 2}},
		{"not a CloudWatch line", "2026-11-30T10:00:00Z two words " + e("a") + "\n2026-11-30T10:00:00Z" + e("b") +
			"\n2026-11-30 hello " + e("c") + "\n2026-11-30T10:00:00+08 " + e("d") + "\n2026-11-30T10:00:00Z START RequestId\n" + e("f"),
			[]string{"f@6"}, Counts{Records: 6, Invalid: 5, FirstInvalid: []int{1, 2, 3, 4, 5}}},
		{"a date-time in mid-line", e("a") + " 2026-11-30T10:00:00Z " + e("b") + "\n" + e("c"),
			[]string{"a@1", "c@2"}, Counts{Records: 3, Invalid: 1, FirstInvalid: []int{1}}},
		{"CloudWatch line whose message is not JSON", "2026-11-30T10:00:00Z {not json}\n" + e("a"),
			[]string{"a@2"}, Counts{Records: 2, Invalid: 1, FirstInvalid: []int{1}}},

		// What is not a record.
		{"log lines", "INFO starting\n" + e("a") + "\n42\n\"x\"\n[INFO] done\n" + e("b"),
			[]string{"a@2", "b@6"}, Counts{Records: 6, Invalid: 4, FirstInvalid: []int{1, 3, 4, 5}}},
		{"separators alone", "[\n,\n]\n]]\n,,", nil, Counts{}},
		{"first five invalid lines", strings.Repeat("x\n", 7) + e("a"), []string{"a@8"}, Counts{Records: 8, Invalid: 7, FirstInvalid: []int{1, 2, 3, 4, 5}}},

		// Broken records.
		{"line cut in a string", e("a")[:40] + "\n" + e("b"), []string{"b@2"}, Counts{Records: 2, Invalid: 1, FirstInvalid: []int{1}}},
		{"line cut between values", `{"eventType":"TEXT_DELIVERED","isFinal":tr` + "\n" + e("b"), []string{"b@2"}, Counts{Records: 2, Invalid: 1, FirstInvalid: []int{1}}},
		{"a bad line in the middle", e("a") + "\n" + e("b")[:70] + "\n" + e("c") + "\n" + e("d"),
			[]string{"a@1", "c@3", "d@4"}, Counts{Records: 4, Invalid: 1, FirstInvalid: []int{2}}},
		{"record cut where a value starts swallows the next", `{"eventType":"TEXT_DELIVERED","context":` + "\n" + e("b") + "\n" + e("c"),
			[]string{"b@2", "c@3"}, Counts{Records: 3, Invalid: 1, FirstInvalid: []int{1}}},
		{"each record cut short by the next line that starts one", `{"a":` + "\n" + `{"b":[` + "\n" + e("c") + "\n" + e("d"),
			[]string{"c@3", "d@4"}, Counts{Records: 4, Invalid: 2, FirstInvalid: []int{1, 2}}},
		{"swallowed to the end of the log", `{"a":[` + "\n" + e("b"), []string{"b@2"}, Counts{Records: 2, Invalid: 1, FirstInvalid: []int{1}}},
		{"indented deeper is inside", "{\n\"a\":\n  {\"x\":1}\n" + e("b"), []string{"b@4"}, Counts{Records: 2, Invalid: 1, FirstInvalid: []int{1}}},
		{"mismatched bracket skips its line", `{"a":[}, "b": 1` + "\n" + e("b"), []string{"b@2"}, Counts{Records: 2, Invalid: 1, FirstInvalid: []int{1}}},
		{"concatenated, one cut short", e("a") + cut(e("b"), `"b"`) + e("c") + e("d"),
			[]string{"a@1", "c@1", "d@1"}, Counts{Records: 4, Invalid: 1, FirstInvalid: []int{1}}},
		{"concatenated, one cut short in a string", e("a") + e("b")[:60] + e("c") + "\n" + e("d"),
			[]string{"a@1", "d@2"}, Counts{Records: 3, Invalid: 1, FirstInvalid: []int{1}}},
		{"cut short at the end", e("a") + "\n" + e("b")[:60], []string{"a@1"}, Counts{Records: 2, Invalid: 1, FirstInvalid: []int{2}}},
		{"pretty, cut short", pretty("a", "")[:60] + "\n" + pretty("b", "") + "\n" + e("c"),
			[]string{"b@5", "c@13"}, Counts{Records: 3, Invalid: 1, FirstInvalid: []int{1}}},
		{"balanced but not JSON", `{"eventType" "TEXT_DELIVERED"}` + e("a") + "\n" + e("b"),
			[]string{"a@1", "b@2"}, Counts{Records: 3, Invalid: 1, FirstInvalid: []int{1}}},
		{"not JSON, skipped to where the next record meets it", `{"a":1 "b"}` + strings.Repeat(" ", 700) + e("b") + "\n" + e("c"),
			[]string{"b@1", "c@2"}, Counts{Records: 3, Invalid: 1, FirstInvalid: []int{1}}},
		{"not JSON, skipped to the next line that starts a record", strings.Replace(pretty("a", ""), `"a",`, `"a" x,`, 1) + "\n" + pretty("b", ""),
			[]string{"b@9"}, Counts{Records: 2, Invalid: 1, FirstInvalid: []int{1}}},
		{"cut short, intact, cut short", `{"a":` + "\n" + `{"x":1}` + "\n" + `{"b":` + "\n" + e("c"),
			[]string{"c@4"}, Counts{Records: 4, NotEvent: 1, Invalid: 2, FirstInvalid: []int{1, 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, c := checkReader(t, []byte(tc.in))
			var got []string
			for _, ev := range evs {
				got = append(got, fmt.Sprintf("%s@%d", ev.MessageID, ev.Line))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("events %q, want %q", got, tc.want)
			}
			want := tc.counts
			want.Events = int64(len(tc.want))
			if !equalCounts(c, want) {
				t.Errorf("counts %+v, want %+v", c, want)
			}
		})
	}
}

// checkReader reads in, in one go and one byte at a time, checks that
// both read the same and that the counts add up, and returns what was
// read.
func checkReader(t *testing.T, in []byte) ([]Event, Counts) {
	t.Helper()
	got, c, err := readAll(NewReader(bytes.NewReader(in)))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if c.Records != c.Events+c.NotEvent+c.Invalid || c.Events != int64(len(got)) || len(c.FirstInvalid) != int(min(c.Invalid, keepFirst)) {
		t.Fatalf("counts do not add up: %+v, %d events", c, len(got))
	}
	slow := newReader(iotest.OneByteReader(bytes.NewReader(in)), 0, MaxRecord)
	got1, c1, err := readAll(slow)
	if err != nil || !slices.Equal(got, got1) || !equalCounts(c, c1) {
		t.Fatalf("read a byte at a time: %v\n%+v %+v\nwant\n%+v %+v", err, got1, c1, got, c)
	}
	return got, c
}

// TestReaderMaxRecord: a record longer than the limit is invalid, whether
// it ends or breaks, and the records around it are read at their lines.
func TestReaderMaxRecord(t *testing.T) {
	long := `{"eventType":"TEXT_DELIVERED","messageId":"m","eventTimestamp":1,"x":"` + strings.Repeat("y", 300) + `"}`
	for _, tc := range []struct {
		name string
		in   string
		want []string
		c    Counts
	}{
		{"ends", e("a") + "\n" + long + "\n" + e("b"), []string{"a@1", "b@3"}, Counts{Records: 3, Events: 2, Invalid: 1, FirstInvalid: []int{2}}},
		{"ends mid-line", e("a") + long + e("b"), []string{"a@1", "b@1"}, Counts{Records: 3, Events: 2, Invalid: 1, FirstInvalid: []int{1}}},
		{"spans lines", strings.Replace(long, `,"x"`, ",\n\n\"x\"", 1) + "\n" + e("b"), []string{"b@4"}, Counts{Records: 2, Events: 1, Invalid: 1, FirstInvalid: []int{1}}},
		{"breaks", long[:len(long)-2] + "\n" + e("b") + "\n" + e("c"), []string{"b@2", "c@3"}, Counts{Records: 3, Events: 2, Invalid: 1, FirstInvalid: []int{1}}},
		{"swallows no line that starts a record", `{"a":[` + strings.Repeat(`"y",`, 80) + "\n" + e("b") + "\n" + e("c"), []string{"b@2", "c@3"}, Counts{Records: 3, Events: 2, Invalid: 1, FirstInvalid: []int{1}}},
		{"cut short by the end", e("a") + "\n" + long[:250], []string{"a@1"}, Counts{Records: 2, Events: 1, Invalid: 1, FirstInvalid: []int{2}}},
		{"a long invalid line", strings.Repeat("x", 1000) + "\n" + e("a"), []string{"a@2"}, Counts{Records: 2, Events: 1, Invalid: 1, FirstInvalid: []int{1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReader(iotest.HalfReader(strings.NewReader(tc.in)), 0, 200)
			got, c, err := readAll(r)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, ev := range got {
				ids = append(ids, fmt.Sprintf("%s@%d", ev.MessageID, ev.Line))
			}
			if !slices.Equal(ids, tc.want) || !equalCounts(c, tc.c) {
				t.Errorf("got %q %+v, want %q %+v", ids, c, tc.want, tc.c)
			}
		})
	}
}

// TestReaderReadError: the events before a read error are returned, then
// the error, wrapped and naming the line, at every later call.
func TestReaderReadError(t *testing.T) {
	boom := errors.New("connection reset")
	src := io.MultiReader(strings.NewReader(e("a")+"\n"+e("b")+"\n"+e("c")[:30]), iotest.ErrReader(boom))
	r := NewReader(src)
	got, _, err := readAll(r)
	if len(got) != 2 || !errors.Is(err, boom) || !strings.Contains(err.Error(), "read SMS event log after line 3") {
		t.Fatalf("got %d events and %v", len(got), err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Errorf("again: %v", err)
	}
	if _, err := Statuses(r).Next(); !errors.Is(err, boom) {
		t.Errorf("through Statuses: %v", err)
	}
}

// TestReaderEOF: io.EOF is returned at the end, and again.
func TestReaderEOF(t *testing.T) {
	r := NewReader(strings.NewReader(e("a")))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("got %v, want io.EOF", err)
		}
	}
}

// TestReaderMemory reads a log far larger than its buffers, and a record
// far longer than MaxRecord, in bounded memory: records are consumed as
// they are read, and a long one is skipped without being kept.
func TestReaderMemory(t *testing.T) {
	var b bytes.Buffer
	genLog(&b, 20000) // about 12 MB
	r := NewReader(&b)
	before := heap()
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 10000 {
			if grown := heap() - before; grown > 2<<20 {
				t.Errorf("halfway through a 12 MB log, the heap grew by %d bytes", grown)
			}
		}
	}
	if n != 20000 {
		t.Errorf("%d events", n)
	}

	const size = 32 << 20
	long := io.MultiReader(strings.NewReader(`{"eventType":"TEXT_DELIVERED","x":"`),
		io.LimitReader(ys{}, size), strings.NewReader("\"}\n"+e("b")+"\n"))
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	got, c, err := readAll(NewReader(long))
	runtime.ReadMemStats(&m1)
	if err != nil || len(got) != 1 || got[0].Line != 2 || !equalCounts(c, Counts{Records: 2, Events: 1, Invalid: 1, FirstInvalid: []int{1}}) {
		t.Errorf("a record of 32 MB, then an event: %v %+v %+v", err, got, c)
	}
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 8*MaxRecord {
		t.Errorf("reading a record of 32 MB allocated %d bytes", alloc)
	}
}

// heap is how many bytes the heap holds after a collection.
func heap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// ys reads as an endless run of 'y'.
type ys struct{}

func (ys) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'y'
	}
	return len(p), nil
}

// pathological are logs of garbage, each a pattern repeated: what a reader
// that gets them wrong spends time on out of proportion to their size.
var pathological = []struct {
	name, unit string
}{
	{"braces", "{"},
	{"brackets", "["},
	{"quotes", `"`},
	{"spaces", " "},
	{"newlines", "\n"},
	{"blank lines", " \r\n"},
	{"braces on lines", "{\n"},
	{"braces and spaces", "{ "},
	{"keys", `{"a":`},
	{"keys without values", `{"a"`},
	{"empty objects", "{}"},
	{"unterminated string", `{"a":"` + strings.Repeat("x", 1<<20)},
	{"unterminated strings on lines", `{"a":"xxxxxxxxxx` + "\n"},
	{"deep arrays", `{"a":` + strings.Repeat("[", 1<<20)},
	{"deep objects", `{"a":`},
	{"words", "x"},
	{"digits on lines", "1\n"},
	{"dates on lines", "2026-11-30T10:00:00 x\n"},
	{"cut records", `{"eventType":"TEXT_DELIVERED","messageId":"`},
	{"objects on lines", strings.Repeat(`{"x":1}`, 4000) + "\n"},
	{"events on lines", strings.Repeat(`{"eventType":"TEXT_DELIVERED","messageId":"m","eventTimestamp":1}`, 400) + "\n"},
}

// repeated is unit repeated to size bytes.
func repeated(unit string, size int) []byte {
	return bytes.Repeat([]byte(unit), size/len(unit)+1)[:size]
}

// TestReaderLinear: on every pathological log the Reader looks at each byte
// a few times at most, whatever the log's size. It counts the bytes it
// looks at (Reader.work), so that the test holds on a loaded machine and
// under the race detector; BenchmarkReaderPathological times the same logs.
func TestReaderLinear(t *testing.T) {
	const small, large = 256 << 10, 2 << 20
	for _, tc := range pathological {
		t.Run(tc.name, func(t *testing.T) {
			perByte := func(size int) float64 {
				r := NewReader(bytes.NewReader(repeated(tc.unit, size)))
				if _, _, err := readAll(r); err != nil {
					t.Fatal(err)
				}
				return float64(r.work) / float64(size)
			}
			s, l := perByte(small), perByte(large)
			if l > 6 || l > 1.25*s+0.01 {
				t.Errorf("looked at each byte %.2f times in %d bytes, %.2f times in %d", s, small, l, large)
			}
		})
	}
}

// TestReaderLongLines: a line far longer than the buffer, whatever it
// holds, is read in bounded memory: nothing of the log is kept but the
// record being read, at most MaxRecord bytes.
func TestReaderLongLines(t *testing.T) {
	const size = 64 << 20
	for _, tc := range []struct{ name, head, unit string }{
		{"text", "", "x"},
		{"braces", "", "{"},
		{"a string", `{"a":"`, "x"},
		{"spaces", "", " "},
		{"an array", `{"a":[`, "1,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unit := repeated(tc.unit, 64<<10)
			log := io.MultiReader(strings.NewReader(tc.head), io.LimitReader(&cycle{b: unit}, size), strings.NewReader("\n"+e("b")+"\n"))
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			got, _, err := readAll(NewReader(log))
			runtime.ReadMemStats(&m1)
			if err != nil || len(got) != 1 || got[0].MessageID != "b" {
				t.Errorf("a line of 64 MB, then an event: %v %+v", err, got)
			}
			if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 4*MaxRecord {
				t.Errorf("reading a line of 64 MB allocated %d bytes", alloc)
			}
		})
	}
}

// cycle reads as b over and over.
type cycle struct {
	b   []byte
	off int
}

func (c *cycle) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], c.b[c.off:])
		n += k
		c.off = (c.off + k) % len(c.b)
	}
	return n, nil
}
