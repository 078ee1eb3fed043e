package webhook

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
)

// seeds are records for the fuzz corpora: real bodies and the edge cases
// of TestReader.
func seeds() []string {
	var b bytes.Buffer
	genLog(&b, 3)
	s := strings.Split(strings.TrimSpace(b.String()), "\n")
	return append(s,
		hook(st("w1", "sent"), st("w2", "read")),
		hook(st("w1", "failed", `"errors":[null,{"code":131026,"title":"t"}]`)),
		hook(`{"\u0069d":"wamid.\u0041B\"C","status":"se\u006et","timestamp":"\u0031750030073","biz_opaque_callback_data":"\ud83d\ude00 \ud800 caf\u00e9"}`),
		hook(`{"id":"a","id":"w1","status":"sent","timestamp":1750030073}`),
		`{"entry":5,"entry":[{"changes":[{"value":{"statuses":[`+st("x", "sent")+`],"metadata":{"phone_number_id":"A"}}}]}]}`,
		`{"entry":[null,{"changes":null},{"changes":[null,{"value":null}]}]}`,
		incoming, templateUpdate, errorsOnly,
		`{"x":[[[{"a":[true,false,null,-1.5e-3,0,"]}\"{"]}]]],"entry":[]}`,
		"hello", "{", `{"entry":[]} {}`, `[1,{"a":"]"},]`, "\xef\xbb\xbf"+hook(st("w", "read")),
	)
}

// maxFuzz bounds fuzz inputs: the mutator grows them towards 100 MB, which
// takes seconds an input (one byte at a time) and finds nothing new.
const maxFuzz = 64 << 10

// FuzzReader feeds arbitrary logs to a Reader. It must not panic, its
// counts must add up, and the statuses must be those the encoding/json
// reference (refParse) finds line by line; reading one byte at a time must
// not change anything.
func FuzzReader(f *testing.F) {
	s := seeds()
	f.Add([]byte(strings.Join(s[:3], "\r\n\n")))
	f.Add([]byte("[" + s[0] + "," + s[1] + "]\n" + s[2] + "\n"))
	f.Add([]byte("[" + s[0] + ",,"))
	f.Add([]byte("\n\n  \t\r\n"))
	for _, rec := range s[3:] {
		f.Add([]byte(rec + "\n" + rec))
		f.Add([]byte("[" + rec + "]"))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > maxFuzz {
			t.Skip()
		}
		r := NewReader(bytes.NewReader(in))
		got, c, err := readAll(r)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if c.Lines != c.Bodies+c.NotStatus+c.Invalid {
			t.Fatalf("counts do not add up: %+v", c)
		}
		if c.Statuses != int64(len(got)) || c.Bodies > c.Statuses || (c.Bodies == 0) != (c.Statuses == 0) {
			t.Fatalf("read %d statuses, counts %+v", len(got), c)
		}
		// (Line numbers need not increase: "[0]\n0" has element 1, then line 2.)
		if int64(len(c.FirstInvalid)) != min(c.Invalid, keepFirst) || int64(len(c.FirstNotStatus)) != min(c.NotStatus, keepFirst) {
			t.Fatalf("first lines do not match counts: %+v", c)
		}
		for _, s := range got {
			if s.WAMID == "" || s.Status == "" || s.Line < 1 {
				t.Fatalf("status without id, status or line: %+v", s)
			}
		}

		got1, c1, err := readAll(NewReader(&chunkReader{b: in}))
		if err != nil || !slices.Equal(got, got1) || !equalCounts(c, c1) {
			t.Fatalf("in small chunks: %v\n %v %+v\nwant %v %+v", err, got1, c1, got, c)
		}

		small := NewReader(bytes.NewReader(in))
		small.max = 16
		_, cs, err := readAll(small)
		if err != nil || cs.Lines != cs.Bodies+cs.NotStatus+cs.Invalid {
			t.Fatalf("with a 16-byte maximum: %v, counts %+v", err, cs)
		}

		// Newline-delimited input: check every line against the reference.
		text := bytes.TrimPrefix(in, bom)
		if head := trimSpace(text); len(head) > 0 && head[0] == '[' {
			return
		}
		var want []Status
		var wc Counts
		for i, line := range bytes.Split(text, []byte{'\n'}) {
			rec := trimSpace(line)
			if len(rec) == 0 {
				continue
			}
			k, sts := refParse(rec, i+1)
			wc.Lines++
			switch k {
			case kindStatus:
				wc.Bodies++
				wc.Statuses += int64(len(sts))
				want = append(want, sts...)
			case kindNotStatus:
				wc.NotStatus++
				if len(wc.FirstNotStatus) < keepFirst {
					wc.FirstNotStatus = append(wc.FirstNotStatus, i+1)
				}
			default:
				wc.Invalid++
				if len(wc.FirstInvalid) < keepFirst {
					wc.FirstInvalid = append(wc.FirstInvalid, i+1)
				}
			}
		}
		if !slices.Equal(got, want) || !equalCounts(c, wc) {
			t.Fatalf("reader and reference differ:\n got %v %+v\nwant %v %+v", got, c, want, wc)
		}
	})
}

// chunkReader returns b in chunks of 1 to 7 bytes, so that records and
// tokens straddle reads everywhere.
type chunkReader struct {
	b []byte
	n int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	r.n = r.n%7 + 1
	n := copy(p[:min(len(p), r.n)], r.b)
	r.b = r.b[n:]
	return n, nil
}

// FuzzParse checks the scanner against the encoding/json reference on
// single records: same verdict, same statuses.
func FuzzParse(f *testing.F) {
	for _, s := range seeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		if len(rec) > maxFuzz {
			t.Skip()
		}
		var s scanner
		k := s.parse(rec, 7)
		wk, want := refParse(rec, 7)
		if k != wk {
			t.Fatalf("parse = kind %d (%s), reference says %d\n%q", k, s.why, wk, rec)
		}
		if k == kindInvalid && json.Valid(rec) != (s.why != whySyntax) {
			t.Fatalf("parse says %q, json.Valid says %v\n%q", s.why, json.Valid(rec), rec)
		}
		if k == kindStatus && !slices.Equal(s.out, want) {
			t.Fatalf("parse found\n %v\nreference\n %v\n%q", s.out, want, rec)
		}
	})
}

// TestParseDepth checks nesting at and over encoding/json's limit of 10000
// (the body's own object is depth 1).
func TestParseDepth(t *testing.T) {
	for _, tt := range []struct {
		depth int
		want  kind
	}{
		{maxDepth, kindNotStatus},
		{maxDepth + 1, kindInvalid},
		{1000000, kindInvalid},
	} {
		rec := []byte(`{"x":` + strings.Repeat("[", tt.depth-1) + strings.Repeat("]", tt.depth-1) + `,"entry":[]}`)
		var s scanner
		if k := s.parse(rec, 1); k != tt.want || json.Valid(rec) != (tt.want != kindInvalid) {
			t.Errorf("depth %d: parse = %d, json.Valid = %v; want %d", tt.depth, k, json.Valid(rec), tt.want)
		}
	}
}

// TestParseAllocs checks that decoding a status costs only its strings.
func TestParseAllocs(t *testing.T) {
	rec := Body(pnid, Status{WAMID: "wamid.1", Status: "delivered", Timestamp: t0, RecipientID: "16505551234", CallbackData: "bulksend:c:1"})
	var s scanner
	allocs := testing.AllocsPerRun(100, func() {
		if s.parse(rec, 1) != kindStatus {
			t.Fatal("not a status")
		}
	})
	if allocs > 1 { // one string holds id, recipient_id and biz_opaque_callback_data
		t.Errorf("parse allocates %v times per status, want at most 1", allocs)
	}
}
