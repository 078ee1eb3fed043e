package bloom

import (
	"hash/maphash"
	"strconv"
	"testing"
)

func TestAddNeverForgets(t *testing.T) {
	f := New(1 << 10)
	for i := range 5000 { // far more than the filter is sized for
		f.Add("+1555" + strconv.Itoa(i))
	}
	for i := range 5000 {
		if !f.Add("+1555" + strconv.Itoa(i)) {
			t.Fatalf("string %d added before was reported new", i)
		}
	}
}

// TestFalsePositiveRate checks the false-positive rates against bounds 2-4
// times the ones Add documents: the seed is random, so a run may draw more.
func TestFalsePositiveRate(t *testing.T) {
	for _, tc := range []struct {
		bytesPerString int
		max            float64
	}{
		{8, 2e-5},
		{4, 2e-4},
		{2, 3e-3},
		{1, 0.05},
	} {
		const n = 200_000
		f := New(n * tc.bytesPerString)
		for i := range n {
			f.Add("+44" + strconv.Itoa(7400000000+i))
		}
		fp := 0
		for i := range n {
			if f.has("+91" + strconv.Itoa(9800000000+i)) {
				fp++
			}
		}
		rate := float64(fp) / n
		t.Logf("%d bytes per string: %d false positives in %d = %.2g", tc.bytesPerString, fp, n, rate)
		if rate > tc.max {
			t.Errorf("%d bytes per string: false-positive rate %.2g, want ≤ %.2g", tc.bytesPerString, rate, tc.max)
		}
	}
}

func BenchmarkAdd(b *testing.B) {
	f := New(8 << 20)
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = "+4474" + strconv.Itoa(10000000+i*7919)
	}
	b.ResetTimer()
	for i := range b.N {
		f.Add(keys[i&(len(keys)-1)])
	}
}

// has is Add without adding.
func (f *Filter) has(s string) bool {
	h := maphash.String(f.seed, s)
	b := f.block(h)
	for i, salt := range salts {
		if b[i]&(uint32(1)<<((uint32(h)*salt)>>27)) == 0 {
			return false
		}
	}
	return true
}
