package report

import (
	"reflect"
	"testing"
	"time"
)

func TestBucketWidth(t *testing.T) {
	for _, tc := range []struct {
		name  string
		total time.Duration
		want  time.Duration
	}{
		{"nothing", 0, time.Second},
		{"a minute", time.Minute, time.Second},
		{"four minutes fit 240 buckets of 1 s", 4 * time.Minute, time.Second},
		{"just over", 4*time.Minute + time.Second, 2 * time.Second},
		{"an hour", time.Hour, 15 * time.Second},
		{"a million rows at 2 × 80/s", 6250 * time.Second, 30 * time.Second},
		{"a day", 24 * time.Hour, 600 * time.Second},
		{"a year", 365 * 24 * time.Hour, 86400 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bucketWidth(tc.total, maxBuckets); got != tc.want {
				t.Errorf("bucketWidth(%v) = %v, want %v", tc.total, got, tc.want)
			}
		})
	}
}

func TestNiceStep(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{0, 1}, {-3, 1}, {0.3, 0.5}, {1, 1}, {1.01, 2}, {2, 2}, {3, 5}, {5, 5}, {6, 10}, {156.25, 200}, {1e6 + 1, 2e6},
	} {
		if got := niceStep(tc.in); got != tc.want {
			t.Errorf("niceStep(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestSegmentBuckets: the last bucket takes the remainder, so it spans
// half a width to one and a half; a bucket's span for a rate is at least
// a second.
func TestSegmentBuckets(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dur   time.Duration
		width float64
		n     int
		spans []float64
	}{
		{"whole buckets", 3 * time.Second, 1, 3, []float64{1, 1, 1}},
		{"a short remainder joins the last", 3100 * time.Millisecond, 1, 3, []float64{1, 1, 1.1}},
		{"a long remainder is a bucket", 3600 * time.Millisecond, 1, 4, []float64{1, 1, 1, 1}},
		{"shorter than a bucket", 300 * time.Millisecond, 5, 1, []float64{1}},
		{"wide buckets", 95 * time.Second, 30, 3, []float64{30, 30, 35}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seg := Segment{Start: t0, End: t0.Add(tc.dur)}
			if n := seg.Buckets(tc.width); n != tc.n {
				t.Fatalf("Buckets = %d, want %d", n, tc.n)
			}
			var spans []float64
			for i := range tc.n {
				spans = append(spans, seg.BucketSpan(i, tc.width))
			}
			for i := range spans {
				if d := spans[i] - tc.spans[i]; d > 1e-9 || d < -1e-9 {
					t.Fatalf("spans %v, want %v", spans, tc.spans)
				}
			}
		})
	}
}

func TestHistogram(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p99, max time.Duration
		values   []time.Duration
		want     []Bin
	}{
		{
			// 200 ms × 1.25 / 40 = 6.25 ms: bins of 10 ms to 250 ms; the
			// 5 s timeout goes to the open bin.
			name: "timeouts apart", p99: 200 * time.Millisecond, max: 5 * time.Second,
			values: []time.Duration{0, 9 * time.Millisecond, 10 * time.Millisecond, 249 * time.Millisecond, 250 * time.Millisecond, 5 * time.Second},
			want: func() []Bin {
				b := make([]Bin, 25)
				for i := range b {
					b[i] = Bin{From: float64(10 * i), To: float64(10 * (i + 1))}
				}
				b[0].Attempts, b[1].Attempts, b[24].Attempts = 2, 1, 1
				return append(b, Bin{From: 250, Attempts: 2})
			}(),
		},
		{
			// Bins stop at the one holding the max: no empty tail, no open bin.
			name: "bins end at the max", p99: 100 * time.Millisecond, max: 12 * time.Millisecond,
			values: []time.Duration{time.Millisecond, 12 * time.Millisecond},
			want:   []Bin{{From: 0, To: 5, Attempts: 1}, {From: 5, To: 10}, {From: 10, To: 15, Attempts: 1}},
		},
		{
			name: "all the same", p99: 0, max: 0, values: []time.Duration{0, 0},
			want: []Bin{{From: 0, To: 0.001, Attempts: 2}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistogram(tc.p99, tc.max, latencyBins)
			for _, v := range tc.values {
				h.add(v)
			}
			if got := h.bins(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("bins\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{num(0), "0"}, {num(999), "999"}, {num(1000), "1,000"}, {num(-1234567), "-1,234,567"},
		{short(0), "0"}, {short(2.0 / 12), "0.2"}, {short(79.6), "80"}, {short(12345), "12,345"},
		{span(850 * time.Millisecond), "850ms"}, {span(12300 * time.Millisecond), "12.3s"}, {span(245 * time.Second), "4m05s"},
		{span(2*time.Hour + 3*time.Minute), "2h03m"}, {span(76 * time.Hour), "3d04h"},
		{clip("abcdef", 4), "abc…"}, {clip("abc", 4), "abc"},
		{share(1, 3), "(33.3%)"}, {share(1, 10000), "(<0.1%)"}, {share(1, 0), ""},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestLayoutX: segments share the width by duration after a minimum each,
// with fixed gaps; instants map inside their segment.
func TestLayoutX(t *testing.T) {
	segs := []Segment{
		{Start: t0, End: t0.Add(30 * time.Second)},
		{Start: t0.Add(time.Hour), End: t0.Add(time.Hour + 10*time.Second)},
	}
	l := layoutX(segs, 100, 500)
	// gap 22, minimum 26 each: 500 - 22 - 52 = 426 shared 3:1.
	want := [][2]float64{{100, 100 + 26 + 319.5}, {100 + 26 + 319.5 + 22, 600}}
	for i := range segs {
		if d0, d1 := l.x0[i]-want[i][0], l.x1[i]-want[i][1]; d0*d0 > 1e-9 || d1*d1 > 1e-9 {
			t.Errorf("segment %d at [%v, %v], want %v", i, l.x0[i], l.x1[i], want[i])
		}
	}
	if x := l.at(0, t0.Add(15*time.Second)); x != 100+(26+319.5)/2 {
		t.Errorf("middle of segment 0 at %v", x)
	}
	if x := l.at(1, t0.Add(2*time.Hour)); x != 600 {
		t.Errorf("past the end of segment 1 at %v, want its end", x)
	}
}
