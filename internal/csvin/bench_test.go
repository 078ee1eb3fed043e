package csvin

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// benchRows is the size of the file the issue asks about.
const benchRows = 1_000_000

// benchCSV builds a campaign file of n rows in memory: valid UK, US,
// Brazilian and Indian mobile numbers (SampleNumber), written the ways
// exports write them, with an id and two parameters.
func benchCSV(n int, national bool) []byte {
	var b bytes.Buffer
	b.Grow(n * 56)
	b.WriteString("phone,id,name,amount\n")
	for i := range n {
		phone := SampleNumber(i)
		switch {
		case national:
			// UK numbers as a UK operator types them; the rest with
			// their country code. Read with DefaultRegion "GB".
			if i%4 == 1 {
				phone = "0" + phone[3:7] + " " + phone[7:]
			}
		case i%3 == 1:
			phone = phone[:3] + " " + phone[3:7] + " " + phone[7:] // "+44 7400 000000"
		case i%3 == 2:
			phone = phone[1:] // wa_id style, no '+'
		}
		fmt.Fprintf(&b, "%s,row-%d,\"Name %d, Jr\",%d.%02d\n", phone, i, i, i%1000, i%100)
	}
	return b.Bytes()
}

// BenchmarkReader reads a 1,000,000-row file per iteration and reports
// rows/s. Run it with
//
//	go test -run '^$' -bench Reader -benchtime 3x ./internal/csvin
//
// "international" has every number with its country code (E.164, spaced,
// or digits only); "national-GB" writes the UK quarter as 07400 000000,
// which only phonenumbers.Parse can read.
func BenchmarkReader(b *testing.B) {
	for _, bc := range []struct {
		name     string
		national bool
		region   string
	}{
		{"international", false, ""},
		{"national-GB", true, "GB"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			data := benchCSV(benchRows, bc.national)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				r, err := NewReader(bytes.NewReader(data), Options{DefaultRegion: bc.region})
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for {
					rec, err := r.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					if rec.Invalid != "" {
						b.Fatalf("line %d: %s", rec.Line, rec.Invalid)
					}
					n++
				}
				if n != benchRows {
					b.Fatalf("read %d rows, want %d", n, benchRows)
				}
			}
			b.ReportMetric(float64(benchRows*b.N)/time.Since(start).Seconds(), "rows/s")
		})
	}
}

// BenchmarkNormalize compares the normalizer with phonenumbers' Parse,
// IsValidNumber and Format, per number.
func BenchmarkNormalize(b *testing.B) {
	nums := make([]string, 4096)
	for i := range nums {
		nums[i] = SampleNumber(i)
	}
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if _, err := normalize(nums[i%len(nums)], ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("phonenumbers", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if _, err := libInternational([]byte(nums[i%len(nums)][1:])); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("national-GB", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			n := nums[(i*4+1)%len(nums)]
			if _, err := normalize("0"+strings.TrimPrefix(n, "+44"), "GB"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEncodings reads the "international" file of BenchmarkReader, a
// tenth of it, as European Excel (semicolons) and Excel's Unicode Text
// (tab-separated UTF-16LE) write it, for comparison with the comma-separated
// UTF-8 it is made from. Run it with
//
//	go test -run '^$' -bench Encodings -benchtime 3x ./internal/csvin
func BenchmarkEncodings(b *testing.B) {
	const rows = benchRows / 10
	utf8Data := benchCSV(rows, false)
	for _, bc := range []struct {
		name string
		data []byte
	}{
		{"utf-8-comma", utf8Data},
		{"utf-8-semicolon", bytes.ReplaceAll(utf8Data, []byte(","), []byte(";"))},
		{"utf-16le-tab", []byte(utf16Text(string(bytes.ReplaceAll(utf8Data, []byte(","), []byte("\t"))), false))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.data)))
			b.ReportAllocs()
			start := time.Now()
			for range b.N {
				r, err := NewReader(bytes.NewReader(bc.data), Options{})
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for {
					rec, err := r.Next()
					if err == io.EOF {
						break
					}
					if err != nil || rec.Invalid != "" {
						b.Fatalf("line %d: %v %s", rec.Line, err, rec.Invalid)
					}
					n++
				}
				if n != rows {
					b.Fatalf("read %d rows, want %d", n, rows)
				}
			}
			b.ReportMetric(float64(rows*b.N)/time.Since(start).Seconds(), "rows/s")
		})
	}
}
