package whatsapp

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// UsageHeader is the response header in which Graph reports how much of a
// business's hourly call budgets its calls used.
const UsageHeader = "X-Business-Use-Case-Usage"

// ParseUsage reads an X-Business-Use-Case-Usage header. Its value is a JSON
// object keyed by business ID, each an array of objects {type, call_count,
// total_cputime, total_time, estimated_time_to_regain_access}: the first
// four say which budget and how much of it was used (percentages of an
// hourly allowance), the last how many minutes until calls are no longer
// throttled. rest is the largest estimated_time_to_regain_access of all
// the objects, 0 when none is above 0; a rest too long for a Duration is
// the longest Duration.
//
// ok is false, and rest 0, for a header that is empty, not JSON or not of
// that shape: an object of arrays (or null) of objects (or null) whose
// estimated_time_to_regain_access, when present and not null, is a number.
// Other members are not looked at. Keys match exactly, and the last of
// repeated keys counts, as when Graph's JSON is read into maps.
func ParseUsage(h string) (rest time.Duration, ok bool) {
	if h == "" {
		return 0, false // most answers carry none
	}
	// Unmarshal, not a Decoder: it refuses a second value or trailing
	// garbage as the header's one value must, and allocates far less (it
	// is read on every send). Values stay raw: only one member is read.
	var usage map[string][]map[string]json.RawMessage
	if err := json.Unmarshal([]byte(h), &usage); err != nil || usage == nil {
		return 0, false
	}
	var most float64
	for _, budgets := range usage {
		for _, b := range budgets {
			v, present := b["estimated_time_to_regain_access"]
			if !present || string(v) == "null" {
				continue
			}
			if c := v[0]; c != '-' && (c < '0' || c > '9') {
				return 0, false // not a number
			}
			m, err := strconv.ParseFloat(string(v), 64)
			if err != nil && !math.IsInf(m, 0) {
				return 0, false
			}
			most = max(most, m)
		}
	}
	return minutes(most), true
}

// minutes is m minutes as a Duration: 0 for m <= 0, the longest Duration
// for m too large.
func minutes(m float64) time.Duration {
	d := m * float64(time.Minute)
	switch {
	case !(d > 0):
		return 0
	case d >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(d)
}
