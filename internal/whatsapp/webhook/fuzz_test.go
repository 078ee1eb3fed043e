package webhook

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
)

// seeds are records for the fuzz corpora: real bodies and the edge cases
// of TestReader.
func seeds() []string {
	var b bytes.Buffer
	genLog(&b, 3)
	s := strings.Split(strings.TrimSpace(b.String()), "\n")
	s = append(s,
		hook(st("w1", "sent"), st("w2", "read")),
		hook(st("w1", "failed", `"errors":[null,{"code":131026,"title":"t"}]`)),
		hook(`{"\u0069d":"wamid.\u0041B\"C","status":"se\u006et","timestamp":"\u0031750030073","biz_opaque_callback_data":"\ud83d\ude00 \ud800 caf\u00e9"}`),
		hook(`{"id":"a","id":"w1","status":"sent","timestamp":1750030073}`),
		hook(st("w1", "delivered", `"pricing":{"billable":false,"pricing_model":"PMP","type":"free_customer_service","category":"marketing_lite"}`),
			st("w2", "sent", `"pricing":{"category":"utility","billable":"x","category":7,"type":null}`),
			st("w3", "read", `"pricing":["marketing"]`), st("w4", "sent", `"pricing":{"billable":null,"category":"m\u0061rketing"},"pricing":null`)),
		hook(st("w1", "failed", `"errors":[{"code":131049,"title":"t"}]`, `"pricing":{"billable":true}`)),
		`{"entry":5,"entry":[{"changes":[{"value":{"statuses":[`+st("x", "sent")+`],"metadata":{"phone_number_id":"A"}}}]}]}`,
		`{"entry":[null,{"changes":null},{"changes":[null,{"value":null}]}]}`,
		incoming, templateUpdate, errorsOnly,
		`{"x":[[[{"a":[true,false,null,-1.5e-3,0,"]}\"{"]}]]],"entry":[]}`,
		"hello", "{", `{"entry":[]} {}`, `[1,{"a":"]"},]`, "\xef\xbb\xbf"+hook(st("w", "read")),
		`{"entry":[{"changes":[{"value":{"messages":[{"from":1,"id":"m","type":"interactive","interactive":{"type":"x","list_reply":{"id":"a"}}},5],`+
			`"user_preferences":[{"wa_id":"1","value":"stop","timestamp":"1"},[]],"messages":null},"field":"messages"},`+
			`{"field":"message_template_quality_update","value":{"new_quality_score":"RED","message_template_id":-0.5e1}}]}]}`,
	)
	for _, name := range []string{openapi, docs} {
		b, err := os.ReadFile(corpus(name))
		if err != nil {
			panic(err)
		}
		s = append(s, strings.Split(strings.TrimSpace(string(b)), "\n")...)
	}
	return s
}

// maxFuzz bounds fuzz inputs: the mutator grows them towards 100 MB, which
// takes seconds an input (one byte at a time) and finds nothing new.
const maxFuzz = 64 << 10

// FuzzReader feeds arbitrary logs to a Reader. For any input it must not
// panic, its counts must add up and cover the whole input, reading in small
// chunks or with a buffer that starts tiny must not change anything, and the
// buffer must stay within max+1 bytes. Then two properties tie the splitting
// of a log into records to the encoding/json reference (refParse):
//
//   - forms: the lines of the input that are one JSON object each, written
//     as NDJSON, pretty-printed (CRLF), concatenated, as a JSON array, and
//     in a mix of these, read as the same records with the same statuses,
//     numbered as the Reader's doc says;
//   - recovery: whatever text comes before it (with '[' and ']' taken out,
//     as an array left open rightly swallows the rest), a body on a line of
//     its own is read, at its line.
func FuzzReader(f *testing.F) {
	s := seeds()
	f.Add([]byte(strings.Join(s[:3], "\r\n\n")))
	f.Add([]byte("[" + s[0] + "," + s[1] + "]\n" + s[2] + "\n"))
	f.Add([]byte("[" + s[0] + ",,"))
	f.Add([]byte("\n\n  \t\r\n"))
	f.Add([]byte(pretty(s[0], "") + "\n" + pretty(s[1], "  ") + s[2]))
	f.Add([]byte(s[0] + s[1] + " " + s[2]))
	f.Add([]byte(pretty(s[0], "")[:300] + "\n" + pretty(s[1], "") + "\n" + s[2]))
	f.Add([]byte("2026-11-29 POST /webhook\n" + pretty(s[0], "") + "\nINFO ok\n{\"a\":[}\n" + s[1]))
	f.Add([]byte(`{"a":"x` + "\n" + `{"b":` + s[0] + "\n" + s[1]))
	for _, rec := range s[3:] {
		f.Add([]byte(rec + "\n" + rec))
		f.Add([]byte("[" + rec + "]"))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > maxFuzz {
			t.Skip()
		}
		got, c := checkReader(t, in)

		grown := NewReader(bytes.NewReader(in))
		grown.buf, grown.max = make([]byte, 1), len(in)+1 // every record fits
		got1, c1, err := readAll(grown)
		if err != nil || !slices.Equal(got, got1) || !equalCounts(c, c1) {
			t.Fatalf("with a buffer growing from 1 byte: %v\n %v %+v\nwant %v %+v", err, got1, c1, got, c)
		}
		if len(grown.buf) > grown.max+1 {
			t.Fatalf("buffer grew to %d bytes, max is %d", len(grown.buf), grown.max)
		}

		small := NewReader(bytes.NewReader(in))
		small.buf, small.max = make([]byte, 4), 16
		_, cs, err := readAll(small)
		if err != nil || cs.Lines != cs.Bodies+cs.NotStatus+cs.Invalid || cs.Bytes != int64(len(in)) {
			t.Fatalf("with a 16-byte maximum: %v, counts %+v", err, cs)
		}
		if len(small.buf) > small.max+1 {
			t.Fatalf("buffer grew to %d bytes with a 16-byte maximum", len(small.buf))
		}

		var recs [][]byte
		for line := range bytes.Lines(in) {
			if rec := trimSpace(line); len(rec) > 0 && rec[0] == '{' && json.Valid(rec) {
				recs = append(recs, rec)
			}
		}
		checkForms(t, recs)
		checkRecovery(t, in)
	})
}

// checkReader reads in whole and in small chunks and checks what holds for
// any input.
func checkReader(t *testing.T, in []byte) ([]Status, Counts) {
	t.Helper()
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
	if c.Bytes != int64(len(in)) || c.TextLines != textLines(string(in)) {
		t.Fatalf("read %d bytes, %d lines of %d, %d", c.Bytes, c.TextLines, len(in), textLines(string(in)))
	}
	// (Numbers need not increase: "[0]\n0" has element 1, then line 2.)
	if int64(len(c.FirstInvalid)) != min(c.Invalid, keepFirst) || int64(len(c.FirstNotStatus)) != min(c.NotStatus, keepFirst) {
		t.Fatalf("first numbers do not match counts: %+v", c)
	}
	for _, s := range got {
		if s.WAMID == "" || s.Status == "" || s.Line < 1 || int64(s.Line) > max(c.TextLines, c.Lines) {
			t.Fatalf("status without id, status or a possible number: %+v", s)
		}
	}
	got1, c1, err := readAll(NewReader(&chunkReader{b: in}))
	if err != nil || !slices.Equal(got, got1) || !equalCounts(c, c1) || c1.TextLines != c.TextLines || !maps.Equal(c.Kinds, c1.Kinds) || c.Dropped != c1.Dropped {
		t.Fatalf("in small chunks: %v\n %v %+v\nwant %v %+v", err, got1, c1, got, c)
	}
	// What is handed out besides statuses does not change what is read,
	// nor how the log is cut into reads.
	got2, o, _, err := readOthers(NewReader(bytes.NewReader(in)))
	_, o1, _, err1 := readOthers(NewReader(&chunkReader{b: in}))
	if err != nil || err1 != nil || !slices.Equal(got, got2) || !equalOthers(o, o1) || !maps.Equal(o.Kinds, c.Kinds) || o.Dropped != c.Dropped {
		t.Fatalf("handing out others: %v %v\n %+v\n %+v\n counts %+v", err, err1, o, o1, c)
	}
	var changes int64
	for _, n := range o.Kinds {
		changes += n
	}
	if c.Bodies > 0 && o.Kinds["statuses"]+o.Kinds["messages"] == 0 || changes < c.Bodies || int64(len(o.In)+len(o.Pref)+len(o.Tmpl)) > 0 && c.Bodies+c.NotStatus == 0 {
		t.Fatalf("kinds %v do not fit counts %+v", o.Kinds, c)
	}
	return got, c
}

// checkForms checks that recs, valid JSON objects, read the same in every
// form a log takes.
func checkForms(t *testing.T, recs [][]byte) {
	t.Helper()
	if len(recs) == 0 {
		return
	}
	compact := make([][]byte, len(recs))
	indented := make([][]byte, len(recs))
	for i, rec := range recs {
		var b bytes.Buffer
		if err := json.Compact(&b, rec); err != nil {
			t.Fatal(err)
		}
		compact[i] = b.Bytes()
		ind, err := json.MarshalIndent(json.RawMessage(rec), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		indented[i] = bytes.ReplaceAll(ind, []byte("\n"), []byte("\r\n"))
	}

	type form struct {
		name string
		log  []byte
		nums []int // number of each record
	}
	var forms []form
	add := func(name string, build func(i int, b *bytes.Buffer, line, elem int) int) {
		var b bytes.Buffer
		nums := make([]int, len(recs))
		line, elem := 1, 0
		for i := range recs {
			start := b.Len()
			nums[i] = build(i, &b, line, elem)
			if nums[i] < 0 { // an element
				elem++
				nums[i] = elem
			}
			line += bytes.Count(b.Bytes()[start:], []byte("\n"))
		}
		forms = append(forms, form{name, b.Bytes(), nums})
	}
	add("ndjson", func(i int, b *bytes.Buffer, line, _ int) int {
		b.Write(compact[i])
		b.WriteByte('\n')
		return line
	})
	add("pretty crlf", func(i int, b *bytes.Buffer, line, _ int) int {
		b.Write(indented[i])
		b.WriteString("\r\n")
		return line
	})
	add("concatenated", func(i int, b *bytes.Buffer, line, _ int) int {
		b.Write(compact[i])
		return line
	})
	add("array", func(i int, b *bytes.Buffer, line, _ int) int {
		if i == 0 {
			b.WriteString("[\n")
		} else {
			b.WriteString(",\n")
		}
		b.Write(indented[i])
		if i == len(recs)-1 {
			b.WriteString("\n]")
		}
		return -1
	})
	add("mixed", func(i int, b *bytes.Buffer, line, _ int) int {
		switch i % 4 {
		case 0:
			b.Write(indented[i])
			b.WriteString(" ")
		case 1:
			b.Write(compact[i])
			b.WriteString("\n")
		case 2:
			b.Write(compact[i]) // the next one follows on the same line
		default:
			b.WriteString("[")
			b.Write(compact[i])
			b.WriteString("]\n")
			return -1
		}
		return line
	})

	for _, fm := range forms {
		var want []Status
		var wc Counts
		wo := others{Kinds: map[string]int64{}}
		for i, rec := range recs {
			k, sts := refParse(rec, fm.nums[i])
			if k != kindInvalid {
				o := refOther(rec, fm.nums[i])
				wo.In, wo.Pref, wo.Tmpl = append(wo.In, o.In...), append(wo.Pref, o.Pref...), append(wo.Tmpl, o.Tmpl...)
				wo.Order, wo.Dropped = append(wo.Order, o.Order...), wo.Dropped+o.Dropped
				for k, n := range o.Kinds {
					wo.Kinds[k] += n
				}
			}
			wc.Lines++
			switch k {
			case kindStatus:
				wc.Bodies++
				wc.Statuses += int64(len(sts))
				want = append(want, sts...)
			case kindNotStatus:
				wc.NotStatus++
				if len(wc.FirstNotStatus) < keepFirst {
					wc.FirstNotStatus = append(wc.FirstNotStatus, fm.nums[i])
				}
			default:
				wc.Invalid++
				if len(wc.FirstInvalid) < keepFirst {
					wc.FirstInvalid = append(wc.FirstInvalid, fm.nums[i])
				}
			}
		}
		got, c := checkReader(t, fm.log)
		if !slices.Equal(got, want) || !equalCounts(c, wc) {
			t.Fatalf("%s: reader and reference differ:\n got %v %+v\nwant %v %+v\nlog %q", fm.name, got, c, want, wc, fm.log)
		}
		if _, o, _, _ := readOthers(NewReader(bytes.NewReader(fm.log))); !equalOthers(o, wo) {
			t.Fatalf("%s: reader and reference differ besides statuses:\n got %+v\nwant %+v\nlog %q", fm.name, o, wo, fm.log)
		}
	}
}

// checkRecovery checks that a body on its own line after the text of in is
// read, unless in leaves a top-level array open (its '[' are taken out).
func checkRecovery(t *testing.T, in []byte) {
	t.Helper()
	text := bytes.Clone(in)
	for i, c := range text {
		switch c {
		case '[':
			text[i] = '('
		case ']':
			text[i] = ')'
		}
	}
	body := hook(st("w.recovered", "read"))
	log := append(append(text, '\n'), body+"\n"...)
	got, _ := checkReader(t, log)
	want := want("w.recovered", "read", bytes.Count(text, []byte("\n"))+2)
	if len(got) == 0 || got[len(got)-1] != want {
		t.Fatalf("the body after the text was not read last:\n got %v\nwant %v\nlog %q", got, want, log)
	}
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
		if k != kindInvalid {
			if got, want := scanned(&s), refOther(rec, 7); !equalOthers(got, want) {
				t.Fatalf("parse found besides statuses\n %+v\nreference\n %+v\n%q", got, want, rec)
			}
		}
		for _, st := range s.out {
			checkReconcile(t, st)
		}
	})
}

// scanned is what s found besides statuses in the record it parsed.
func scanned(s *scanner) others {
	o := others{Kinds: map[string]int64{}, Dropped: s.dropped}
	for _, k := range s.kinds {
		o.Kinds[k]++
	}
	for _, it := range s.others {
		o.Order = append(o.Order, it.what)
		switch it.what {
		case itemInbound:
			o.In = append(o.In, it.in)
		case itemPreference:
			o.Pref = append(o.Pref, it.pref)
		case itemTemplate:
			o.Tmpl = append(o.Tmpl, it.tmpl)
		}
	}
	return o
}

// checkReconcile checks what reconcile reads of st: its pricing, billable
// nil when not said, and the marketing-cap reason exactly for a failed
// status of code 131049.
func checkReconcile(t *testing.T, st Status) {
	t.Helper()
	rs := st.reconcile()
	p := rs.Price
	if p.Category != st.Pricing.Category || p.Type != st.Pricing.Type || (p.Billable != nil) != st.Pricing.HasBillable ||
		p.Billable != nil && *p.Billable != st.Pricing.Billable || !st.Pricing.HasBillable && st.Pricing.Billable {
		t.Fatalf("pricing %+v reads as %+v (billable %s)", st.Pricing, p, billable(p))
	}
	if capped := st.Status == "failed" && st.ErrorCode == 131049; capped != (rs.ErrorReason == campaign.FailMarketingCap) || !capped && rs.ErrorReason != "" {
		t.Fatalf("status %q code %d has reason %q", st.Status, st.ErrorCode, rs.ErrorReason)
	}
	if rs.MessageID != st.WAMID || rs.Status != st.Status || rs.Sender != st.PhoneNumberID || rs.ErrorCode != st.ErrorCode {
		t.Fatalf("%+v reads as %+v", st, rs)
	}
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
