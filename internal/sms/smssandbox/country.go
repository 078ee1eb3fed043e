package smssandbox

import "strings"

// The sandbox knows no numbering plan: countries, prices and blocks go by
// the calling code, the destination's leading digits. +1 counts as the US.

// callingCodes maps the calling codes of common destinations to ISO
// 3166-1 alpha-2 codes, for isoCountryCode in events and IsoCountryCode in
// DescribePhoneNumbers. Others report "".
var callingCodes = map[string]string{
	"1": "US", "7": "RU", "20": "EG", "27": "ZA", "30": "GR", "31": "NL", "32": "BE", "33": "FR",
	"34": "ES", "36": "HU", "39": "IT", "40": "RO", "41": "CH", "43": "AT", "44": "GB", "45": "DK",
	"46": "SE", "47": "NO", "48": "PL", "49": "DE", "51": "PE", "52": "MX", "53": "CU", "54": "AR",
	"55": "BR", "56": "CL", "57": "CO", "58": "VE", "60": "MY", "61": "AU", "62": "ID", "63": "PH",
	"64": "NZ", "65": "SG", "66": "TH", "81": "JP", "82": "KR", "84": "VN", "86": "CN", "90": "TR",
	"91": "IN", "92": "PK", "234": "NG", "254": "KE", "351": "PT", "353": "IE", "358": "FI",
	"420": "CZ", "852": "HK", "966": "SA", "971": "AE", "972": "IL",
}

// defaultPrice is the price of a part to a destination PricePerPart does
// not name, in US dollars.
const defaultPrice = 0.0075

// usCarrierFee is the US carriers' pass-through fee per part (AWS-EVT's
// totalCarrierFee); other destinations have none in the sandbox.
const usCarrierFee = 0.0025

// longestPrefix returns the longest of prefixes that the digits of phone
// start with, or "".
func longestPrefix(phone string, prefixes []string) string {
	d := strings.TrimPrefix(phone, "+")
	best := ""
	for _, p := range prefixes {
		p = strings.TrimPrefix(p, "+")
		if p != "" && len(p) > len(best) && strings.HasPrefix(d, p) {
			best = p
		}
	}
	return best
}

func isoCountry(phone string) string {
	d := strings.TrimPrefix(phone, "+")
	for n := 3; n >= 1; n-- {
		if len(d) >= n {
			if c, ok := callingCodes[d[:n]]; ok {
				return c
			}
		}
	}
	return ""
}

// pricePerPart is a part's price to phone.
func (s *Server) pricePerPart(phone string) float64 {
	d := strings.TrimPrefix(phone, "+")
	best, price := "", defaultPrice
	for p, v := range s.cfg.PricePerPart {
		p = strings.TrimPrefix(p, "+")
		if p != "" && len(p) > len(best) && strings.HasPrefix(d, p) {
			best, price = p, v
		}
	}
	return price
}

func carrierFee(phone string) float64 {
	if isoCountry(phone) == "US" {
		return usCarrierFee
	}
	return 0
}
