package smsevent

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"
)

// benchEvents is the size of the log BenchmarkReader reads.
const benchEvents = 60000

// genEvent is the i-th event of a campaign's log as AWS writes it: each
// message is queued, then delivered (a few fail), about 600 bytes a record.
func genEvent(i int) map[string]any {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).UnixMilli()
	msg := i / 2
	ev := map[string]any{
		"eventType":                "TEXT_QUEUED",
		"eventVersion":             "1.0",
		"eventTimestamp":           t0 + int64(i)*150,
		"isFinal":                  false,
		"originationPhoneNumber":   "+12065550152",
		"destinationPhoneNumber":   fmt.Sprintf("+1425555%04d", msg%10000),
		"isInternationalSend":      false,
		"isoCountryCode":           "US",
		"mcc":                      "310",
		"mnc":                      "800",
		"messageId":                fmt.Sprintf("862a8790-60c0-4430-9b2b-%012d", msg),
		"messageRequestTimestamp":  t0 + int64(msg)*300,
		"messageEncoding":          "GSM",
		"messageType":              "PROMOTIONAL",
		"messageStatus":            "QUEUED",
		"messageStatusDescription": "Message is queued for delivery",
		"context":                  map[string]string{"bulksend": fmt.Sprintf("spring-2026:%d", msg+1)},
		"totalMessageParts":        1,
		"totalMessagePrice":        0.00581,
		"totalCarrierFee":          0.00266,
	}
	if i%2 == 1 {
		ev["isFinal"] = true
		if msg%40 == 39 {
			ev["eventType"], ev["messageStatus"], ev["messageStatusDescription"] = "TEXT_CARRIER_UNREACHABLE", "CARRIER_UNREACHABLE", "Carrier unreachable"
		} else {
			ev["eventType"], ev["messageStatus"], ev["messageStatusDescription"] = "TEXT_DELIVERED", "DELIVERED", "Message has been accepted by phone"
		}
	}
	return ev
}

// genLog writes n events as JSON lines.
func genLog(w io.Writer, n int) {
	enc := json.NewEncoder(w)
	for i := range n {
		enc.Encode(genEvent(i))
	}
}

// BenchmarkReader reads a realistic log of events through Statuses, as
// reconcile does: as JSON lines, plain and gzipped, concatenated, as a
// CloudWatch export and as SNS notifications. It prints events per second
// next to the 50,000 that are plenty (an SMS log holds a few events a
// message: a few hundred thousand reconcile in seconds); MB/s is of the
// JSON lines' size.
func BenchmarkReader(b *testing.B) {
	var plain bytes.Buffer
	genLog(&plain, benchEvents)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain.Bytes())
	zw.Close()
	concat := bytes.ReplaceAll(plain.Bytes(), []byte("}\n{"), []byte("}{"))
	var cw, notes bytes.Buffer
	for l := range bytes.Lines(plain.Bytes()) {
		cw.WriteString("2026-11-30T10:00:00.490Z ")
		cw.Write(l)
		notes.WriteString(sns(string(bytes.TrimSpace(l))))
		notes.WriteByte('\n')
	}

	for _, tc := range []struct {
		name string
		log  []byte
		gzip bool
	}{
		{"jsonl", plain.Bytes(), false},
		{"firehose", concat, false},
		{"jsonl.gz", gz.Bytes(), true},
		{"cloudwatch", cw.Bytes(), false},
		{"sns", notes.Bytes(), false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(plain.Len()))
			b.ReportAllocs()
			for b.Loop() {
				var src io.Reader = bytes.NewReader(tc.log)
				if tc.gzip {
					zr, err := gzip.NewReader(src)
					if err != nil {
						b.Fatal(err)
					}
					src = zr
				}
				s := Statuses(NewReader(src))
				n := 0
				for {
					_, err := s.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != benchEvents {
					b.Fatalf("%d events, want %d", n, benchEvents)
				}
			}
			perSec := float64(benchEvents) * float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(perSec, "events/s")
			b.ReportMetric(50000, "target-events/s")
		})
	}
}

// BenchmarkReaderBraces reads 1 GB of '{' (a gzip of 5 MB), each '{' an
// invalid record, streamed from memory: seconds per GB, and B/op, what the
// Reader allocated. Issue 23 asks for no more than the WhatsApp reader
// takes, which internal/whatsapp/webhook's benchmark of the same name measures:
//
//	go test -run '^$' -bench Braces ./internal/sms/smsevent ./internal/whatsapp/webhook
func BenchmarkReaderBraces(b *testing.B) {
	const size = 1 << 30
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(io.LimitReader(&cycle{b: repeated("{", 64<<10)}, size))
		if _, err := r.Next(); err != io.EOF || r.Counts().Invalid != size {
			b.Fatalf("%v %+v", err, r.Counts())
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/GB")
}

// BenchmarkReaderPathological reads 64 MB of each of the pathological
// logs TestReaderLinear counts the work of, in ns/B. internal/whatsapp/webhook's
// benchmark of the same name reads the same logs with the WhatsApp reader.
//
//	go test -run '^$' -bench Pathological ./internal/sms/smsevent ./internal/whatsapp/webhook
func BenchmarkReaderPathological(b *testing.B) {
	const size = 64 << 20
	for _, tc := range pathological {
		b.Run(tc.name, func(b *testing.B) {
			log := repeated(tc.unit, size)
			b.SetBytes(size)
			for b.Loop() {
				if _, _, err := readAll(NewReader(bytes.NewReader(log))); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/size, "ns/B")
		})
	}
}
