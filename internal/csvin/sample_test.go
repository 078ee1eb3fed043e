package csvin

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

// checkSample fails t unless SampleNumber(i) is a valid number, by
// phonenumbers' own Parse and IsValidNumber rather than this package's fast
// path, and, if full, a mobile number of the country its position promises.
func checkSample(t *testing.T, i int, full bool) string {
	t.Helper()
	s := SampleNumber(i)
	pn, err := phonenumbers.Parse(s, "")
	if err != nil {
		t.Fatalf("SampleNumber(%d) = %q: %v", i, s, err)
	}
	if !phonenumbers.IsValidNumber(pn) {
		t.Fatalf("SampleNumber(%d) = %q is not valid", i, s)
	}
	if got := phonenumbers.Format(pn, phonenumbers.E164); got != s {
		t.Fatalf("SampleNumber(%d) = %q is not E.164 (%q)", i, s, got)
	}
	if !full {
		return s
	}
	wantRegion := [4]string{"US", "GB", "BR", "IN"}[i%4]
	if got := phonenumbers.GetRegionCodeForNumber(pn); got != wantRegion {
		t.Fatalf("SampleNumber(%d) = %q is in %s, want %s", i, s, got, wantRegion)
	}
	switch typ := phonenumbers.GetNumberType(pn); typ {
	case phonenumbers.MOBILE, phonenumbers.FIXED_LINE_OR_MOBILE: // the US does not tell them apart
	default:
		t.Fatalf("SampleNumber(%d) = %q has type %v, want a mobile", i, s, typ)
	}
	return s
}

func TestSampleNumber(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	seen := make(map[string]int, n)
	for i := range n {
		s := SampleNumber(i)
		if raceEnabled && i%17 != 0 {
			// normalize's validity agrees with phonenumbers (see
			// TestFastPathMatchesLibrary), and is ten times faster.
			if got, err := normalize(s, ""); got != s {
				t.Fatalf("SampleNumber(%d) = %q: normalize = %q, %v", i, s, got, err)
			}
		} else {
			checkSample(t, i, i%53 < 4)
		}
		if j, dup := seen[s]; dup {
			t.Fatalf("SampleNumber(%d) = SampleNumber(%d) = %q", i, j, s)
		}
		seen[s] = i
	}
}

func TestSampleNumberWholeRange(t *testing.T) {
	// Every prefix at both ends of its subscriber digits, and a stride
	// through the rest.
	tail, stride := 4*len(usAreaCodes), 9973
	if raceEnabled {
		tail, stride = 64, 99991
	}
	for i := SampleCount - tail; i < SampleCount; i++ {
		checkSample(t, i, true)
	}
	for i := 0; i < SampleCount; i += stride {
		checkSample(t, i, true)
	}
	if got, want := SampleNumber(SampleCount-1), "+919809"; !strings.HasPrefix(got, want) {
		t.Errorf("last sample %q, want prefix %q", got, want)
	}
}

func TestSampleNumberFictional(t *testing.T) {
	n := len(usAreaCodes) / 3
	for k := range 100 * n {
		s := SampleNumber(4 * k)
		if s[5:10] != "55501" {
			t.Fatalf("SampleNumber(%d) = %q, want +1 NXX 555-01XX", 4*k, s)
		}
	}
	if s := SampleNumber(4 * 100 * n); s[5:10] == "55501" {
		t.Errorf("SampleNumber(%d) = %q, want the first one past the fictional range", 4*100*n, s)
	}
}

func TestSampleNumberPanics(t *testing.T) {
	for _, i := range []int{-1, SampleCount} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("SampleNumber(%d) did not panic", i)
				}
			}()
			SampleNumber(i)
		})
	}
}

func ExampleSampleNumber() {
	for i := range 4 {
		fmt.Println(SampleNumber(i))
	}
	// Output:
	// +12015550100
	// +447400000000
	// +5511950000000
	// +919800000000
}
