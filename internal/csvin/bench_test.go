package csvin

import (
	"bytes"
	"errors"
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

// BenchmarkWideRecord reads a 12 MB file of 1,000,000 columns: "header",
// refused at column 1,001 of its header; "row", a row as wide under a
// header that fits, passed over to the row after it. It prints what was
// read of the file before the refusal, and B/op what was allocated (before
// issue 23: the whole file taken in, 1.5 GB of memory, 8 s). Run it with
//
//	go test -run '^$' -bench WideRecord -benchmem ./internal/csvin
func BenchmarkWideRecord(b *testing.B) {
	var wide bytes.Buffer
	wide.WriteString("phone")
	for i := 1; i < 1_000_000; i++ {
		fmt.Fprintf(&wide, ",p%d", i)
	}
	wide.WriteString("\n")
	row := "+447400123456" + strings.Repeat(",a", 999_999) + "\n"
	for _, bc := range []struct {
		name string
		data []byte
		want error
	}{
		{"header", append(wide.Bytes(), row+row...), ErrTooManyColumns},
		{"row", []byte("phone,name\n" + row + "+447400123457,ok\n"), nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.data)))
			b.ReportAllocs()
			var read int64
			for b.Loop() {
				src := &countingReader{r: bytes.NewReader(bc.data)}
				r, err := NewReader(src, Options{})
				if bc.want != nil {
					if !errors.Is(err, bc.want) {
						b.Fatal(err)
					}
					read = src.n
					continue
				}
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.Next(); !errors.Is(err, ErrTooManyColumns) {
					b.Fatal(err)
				}
				read = src.n
				if rec, err := r.Next(); err != nil || rec.Line != 3 {
					b.Fatal(rec, err)
				}
			}
			b.ReportMetric(float64(read), "B-read-at-refusal")
		})
	}
}

// BenchmarkHugeCell reads a file with a 100 MB cell on line 2, written as
// it is read: refused at MaxCell bytes, then passed over to the row after
// it. It prints what was read before the refusal, and B/op what was
// allocated (before issue 23: 870 MB of memory). Run it with
//
//	go test -run '^$' -bench HugeCell -benchmem ./internal/csvin
func BenchmarkHugeCell(b *testing.B) {
	const size = 100 << 20
	for _, quoted := range []bool{false, true} {
		b.Run(fmt.Sprintf("quoted=%v", quoted), func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			var read int64
			for b.Loop() {
				src := &countingReader{r: cellStream(size, quoted)}
				r, err := NewReader(src, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.Next(); !errors.Is(err, ErrCellTooLong) {
					b.Fatal(err)
				}
				read = src.n
				if rec, err := r.Next(); err != nil || rec.Line != 3 {
					b.Fatal(rec, err)
				}
			}
			b.ReportMetric(float64(read), "B-read-at-refusal")
		})
	}
}
