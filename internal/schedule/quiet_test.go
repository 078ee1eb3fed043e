package schedule

import (
	"slices"
	"strings"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

func TestQuietRules(t *testing.T) {
	tests := []struct {
		name   string
		number string
		want   []string // Market: Spec
	}{
		{"New York", "+12125550123", []string{"US: 08:00-21:00"}},
		{"Florida", "+13055550123", []string{"US: 08:00-21:00", "US-FL: 08:00-20:00"}},
		{"Florida's newest overlay", "+13245550123", []string{"US: 08:00-21:00", "US-FL: 08:00-20:00"}},
		{"Washington", "+12065550123", []string{"US: 08:00-21:00", "US-WA: 08:00-20:00"}},
		{"Oklahoma", "+14055550123", []string{"US: 08:00-21:00", "US-OK: 08:00-20:00"}},
		{"Maryland", "+14105550123", []string{"US: 08:00-21:00", "US-MD: 08:00-20:00"}},
		{"Connecticut", "+12035550123", []string{"US: 08:00-21:00", "US-CT: 09:00-20:00"}},
		{"Texas", "+12145550123", []string{"US: 08:00-21:00", "US-TX: mon-sat 09:00-21:00; sun 12:00-21:00"}},
		{"Washington, D.C. is no state of these", "+12025550123", []string{"US: 08:00-21:00"}},
		{"Puerto Rico", "+17875550123", []string{"US: 08:00-21:00"}},
		{"US toll-free", "+18005550100", []string{"US: 08:00-21:00"}},
		{"Toronto", "+14165550123", nil},
		{"Vancouver", "+16045550123", nil},
		{"Jamaica", "+18765550123", nil},
		{"London", "+442073238299", nil},
		{"not E.164", "2125550123", nil},
		{"too short for +1", "+1212555", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range QuietRules(tt.number) {
				got = append(got, r.Market+": "+r.Spec)
				if r.Window.String() != r.Spec {
					t.Errorf("%s: Window %q, Spec %q", r.Market, r.Window, r.Spec)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("QuietRules(%s) = %q, want %q", tt.number, got, tt.want)
			}
		})
	}
}

// TestStateAreaCodes checks stateAreaCodes against the states that
// libphonenumber's geocoding data gives the area codes.
func TestStateAreaCodes(t *testing.T) {
	names := map[string]string{
		"Florida": "FL", "Washington State": "WA", "Oklahoma": "OK",
		"Maryland": "MD", "Connecticut": "CT", "Texas": "TX",
	}
	stateOf := func(g string) string {
		if s, ok := names[g]; ok {
			return s
		}
		if i := strings.LastIndex(g, ", "); i >= 0 {
			if s := g[i+2:]; slices.Contains([]string{"FL", "WA", "OK", "MD", "CT", "TX"}, s) {
				return s
			}
			return "other"
		}
		if g == "" {
			return ""
		}
		return "other"
	}
	cc := int32(1)
	for npa := 200; npa <= 999; npa++ {
		// The area code's own entry, else what most of its exchanges say.
		nn := uint64(npa) * 10000000
		g, _ := phonenumbers.GetGeocodingForNumber(&phonenumbers.PhoneNumber{CountryCode: &cc, NationalNumber: &nn}, "en")
		geo := stateOf(g)
		if geo == "" {
			votes := map[string]int{}
			for ex := 200; ex <= 999; ex += 13 {
				nn := uint64(npa)*10000000 + uint64(ex)*10000
				g, _ := phonenumbers.GetGeocodingForNumber(&phonenumbers.PhoneNumber{CountryCode: &cc, NationalNumber: &nn}, "en")
				if s := stateOf(g); s != "" {
					votes[s]++
				}
			}
			for s, n := range votes {
				if n > votes[geo] {
					geo = s
				}
			}
		}
		table := stateAreaCodes[npa]
		if geo == "other" {
			geo = ""
		}
		if geo != table {
			t.Errorf("area code %d: table says %q, geocoding data %q", npa, table, geo)
		}
	}
}
