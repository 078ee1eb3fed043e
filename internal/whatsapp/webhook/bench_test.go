package webhook

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// benchEvents is the size of the log BenchmarkReader reads.
const benchEvents = 60000

// genLog writes a realistic status log of n events, one body per line:
// every message gets sent and delivered, most get read, some fail, as a
// campaign's webhook receiver would log them (500-700 bytes a line).
func genLog(w io.Writer, n int) {
	t0 := time.Date(2026, 9, 1, 9, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		msg := i / 3
		st := Status{
			WAMID:        fmt.Sprintf("wamid.HBgLMTY1MDUw%010dVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA", msg),
			RecipientID:  fmt.Sprintf("1650555%04d", msg%10000),
			CallbackData: fmt.Sprintf("bulksend:01J9ZK3X8W2Q:%d", msg),
			Timestamp:    t0.Add(time.Duration(i) * time.Second),
		}
		switch {
		case msg%50 == 49 && i%3 == 1:
			st.Status, st.ErrorCode, st.ErrorTitle = "failed", 131049, "This message was not delivered to maintain healthy ecosystem engagement."
		case i%3 == 0:
			st.Status = "sent"
		case i%3 == 1:
			st.Status = "delivered"
		default:
			st.Status = "read"
		}
		w.Write(Body("106540352242922", st))
		w.Write([]byte{'\n'})
	}
}

// toArray turns an NDJSON log into a JSON array of the same bodies.
func toArray(ndjson []byte) []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, line := range bytes.Split(bytes.TrimSpace(ndjson), []byte{'\n'}) {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.Write(line)
	}
	b.WriteString("\n]\n")
	return b.Bytes()
}

// toPretty turns an NDJSON log into the same bodies pretty-printed, one
// after the other, as `jq .` writes them.
func toPretty(ndjson []byte) []byte {
	var b bytes.Buffer
	for line := range bytes.Lines(ndjson) {
		if err := json.Indent(&b, bytes.TrimSpace(line), "", "  "); err != nil {
			panic(err) // genLog writes JSON
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// BenchmarkReader measures the Reader on a 60,000-event log, in statuses/s
// (the figure `bulksend reconcile` needs: its target is 500,000 per second
// for the reader alone), next to encoding/json decoding the same bodies.
// B/status is the size of the NDJSON form; pretty-printed the log is about
// twice as large, and MB/s is of the form read.
//
//	go test -run x -bench Reader -benchmem ./internal/whatsapp/webhook
func BenchmarkReader(b *testing.B) {
	var ndjson bytes.Buffer
	genLog(&ndjson, benchEvents)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(ndjson.Bytes())
	zw.Close()
	array := toArray(ndjson.Bytes())
	pretty := toPretty(ndjson.Bytes())
	concatenated := bytes.ReplaceAll(ndjson.Bytes(), []byte("}\n{"), []byte("}{"))

	run := func(b *testing.B, size int, open func() io.Reader) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			r := NewReader(open())
			n := 0
			for {
				_, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != benchEvents {
				b.Fatalf("read %d statuses, want %d (counts %+v)", n, benchEvents, r.Counts())
			}
		}
		b.ReportMetric(float64(benchEvents)*float64(b.N)/b.Elapsed().Seconds(), "statuses/s")
		b.ReportMetric(float64(ndjson.Len())/benchEvents, "B/status")
	}
	b.Run("ndjson", func(b *testing.B) {
		run(b, ndjson.Len(), func() io.Reader { return bytes.NewReader(ndjson.Bytes()) })
	})
	b.Run("array", func(b *testing.B) {
		run(b, len(array), func() io.Reader { return bytes.NewReader(array) })
	})
	b.Run("pretty", func(b *testing.B) {
		run(b, len(pretty), func() io.Reader { return bytes.NewReader(pretty) })
	})
	b.Run("concatenated", func(b *testing.B) {
		run(b, len(concatenated), func() io.Reader { return bytes.NewReader(concatenated) })
	})
	b.Run("gzip", func(b *testing.B) {
		run(b, ndjson.Len(), func() io.Reader {
			zr, err := gzip.NewReader(bytes.NewReader(gz.Bytes()))
			if err != nil {
				b.Fatal(err)
			}
			return zr
		})
	})
	// The reference: encoding/json into a struct holding only the fields
	// the Reader returns, one line at a time.
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(ndjson.Len()))
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			for line := range bytes.Lines(ndjson.Bytes()) {
				var body refBody
				if err := json.Unmarshal(line, &body); err != nil {
					b.Fatal(err)
				}
				for _, e := range body.Entry {
					for _, c := range e.Changes {
						n += len(c.Value.Statuses)
					}
				}
			}
			if n != benchEvents {
				b.Fatalf("decoded %d statuses, want %d", n, benchEvents)
			}
		}
		b.ReportMetric(float64(benchEvents)*float64(b.N)/b.Elapsed().Seconds(), "statuses/s")
	})
}

type refBody struct {
	Entry []struct {
		Changes []struct {
			Value struct {
				Metadata struct {
					PhoneNumberID string `json:"phone_number_id"`
				} `json:"metadata"`
				Statuses []struct {
					ID           string `json:"id"`
					Status       string `json:"status"`
					Timestamp    string `json:"timestamp"`
					RecipientID  string `json:"recipient_id"`
					CallbackData string `json:"biz_opaque_callback_data"`
					Errors       []struct {
						Code  int    `json:"code"`
						Title string `json:"title"`
					} `json:"errors"`
					Pricing *struct {
						Category string `json:"category"`
						Type     string `json:"type"`
						Billable *bool  `json:"billable"`
					} `json:"pricing"`
				} `json:"statuses"`
			} `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}

// pathological are the logs of garbage internal/sms/smsevent's benchmarks and
// linearity test read, for the same figures of this Reader.
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

// BenchmarkReaderBraces reads 1 GB of '{', streamed from memory: the
// reference for internal/sms/smsevent's benchmark of the same name (issue 23).
func BenchmarkReaderBraces(b *testing.B) {
	const size = 1 << 30
	chunk := repeated("{", 64<<10)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		src := io.LimitReader(io.MultiReader(func() []io.Reader {
			rs := make([]io.Reader, size/len(chunk))
			for i := range rs {
				rs[i] = bytes.NewReader(chunk)
			}
			return rs
		}()...), size)
		r := NewReader(src)
		if _, err := r.Next(); err != io.EOF {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/GB")
}

// BenchmarkReaderPathological reads 64 MB of each pathological log, in
// ns/B, beside internal/sms/smsevent's benchmark of the same name.
func BenchmarkReaderPathological(b *testing.B) {
	const size = 64 << 20
	for _, tc := range pathological {
		b.Run(tc.name, func(b *testing.B) {
			log := repeated(tc.unit, size)
			b.SetBytes(size)
			for b.Loop() {
				r := NewReader(bytes.NewReader(log))
				for {
					if _, err := r.Next(); err == io.EOF {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/size, "ns/B")
		})
	}
}
