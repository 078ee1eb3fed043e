package schedule

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	dayMinutes  = 24 * 60
	weekMinutes = 7 * dayMinutes
	minuteNs    = int64(time.Minute)
	weekNs      = weekMinutes * minuteNs
)

// dayNames are the days of the week from Monday, the first day of a
// Window's week (ISO 8601), as specs write them.
var dayNames = [7]string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}

// fullDayNames are accepted too: an operator who writes "saturday" means it.
var fullDayNames = [7]string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}

// span is a range of a week's wall-clock minutes, counted from Monday
// 00:00: start < end <= weekMinutes.
type span struct{ start, end int32 }

// Window is a weekly set of local wall-clock ranges, such as "mon-fri
// 09:00-20:00". It says nothing about a time zone: Open reads it on the
// wall clock of each zone it is given.
//
// The zero Window has no ranges and is always open (no window was set).
// A Window is immutable and safe for concurrent use.
type Window struct {
	spans []span  // sorted, disjoint and not touching
	edges []int32 // minutes of the week where openness changes, sorted; the week is circular
}

// ParseWindow parses operator specs into the union of their ranges. A spec
// is "HH:MM-HH:MM" (every day) or "DAYS HH:MM-HH:MM", where DAYS is a day
// ("sat"), a range of days ("mon-fri", or "fri-mon", which wraps past
// Sunday), or a comma-separated list of those ("mon,wed,fri-sun"); case
// does not matter. The end may be 24:00. A range whose end is before its
// start crosses midnight and belongs to its start day: "fri 22:00-02:00" is
// Friday 22:00 to Saturday 02:00. A blank spec is skipped, so no specs give
// the zero Window.
func ParseWindow(specs []string) (Window, error) {
	var all []span
	for _, spec := range specs {
		if strings.TrimSpace(spec) == "" {
			continue
		}
		s, err := parseSpec(spec)
		if err != nil {
			return Window{}, fmt.Errorf("window %q: %w", spec, err)
		}
		all = append(all, s...)
	}
	return newWindow(all), nil
}

// parseSpec returns the spans of one spec.
func parseSpec(spec string) ([]span, error) {
	fields := strings.Fields(strings.ToLower(spec))
	var days [7]bool
	var hours string
	switch len(fields) {
	case 1:
		if _, err := parseDays(fields[0]); err == nil {
			return nil, errors.New(`days but no hours: want "DAYS HH:MM-HH:MM", like "mon-fri 09:00-20:00"`)
		}
		days = [7]bool{true, true, true, true, true, true, true}
		hours = fields[0]
	case 2:
		var err error
		if days, err = parseDays(fields[0]); err != nil {
			return nil, err
		}
		hours = fields[1]
	default:
		return nil, errors.New(`want "HH:MM-HH:MM" or "DAYS HH:MM-HH:MM", like "mon-fri 09:00-20:00"`)
	}
	from, to, ok := strings.Cut(hours, "-")
	if !ok {
		return nil, fmt.Errorf("hours %q: want HH:MM-HH:MM, like 09:00-20:00", hours)
	}
	start, err := parseClock(from)
	if err != nil {
		return nil, err
	}
	if start == dayMinutes {
		return nil, errors.New("24:00 can only end a range")
	}
	end, err := parseClock(to)
	if err != nil {
		return nil, err
	}
	if start == end {
		return nil, fmt.Errorf("%s-%s is empty (start and end are the same; a whole day is 00:00-24:00)", from, to)
	}
	length := end - start
	if end < start {
		length += dayMinutes // crosses midnight into the next day
	}
	var out []span
	for d, on := range days {
		if !on {
			continue
		}
		s := int32(d*dayMinutes) + start
		e := s + length
		if e > weekMinutes { // Sunday into Monday
			out = append(out, span{s, weekMinutes}, span{0, e - weekMinutes})
		} else {
			out = append(out, span{s, e})
		}
	}
	return out, nil
}

// parseDays parses DAYS: a comma-separated list of days and day ranges.
func parseDays(s string) ([7]bool, error) {
	var days [7]bool
	for item := range strings.SplitSeq(s, ",") {
		from, to, isRange := strings.Cut(item, "-")
		a, err := parseDay(from)
		if err != nil {
			return days, err
		}
		if !isRange {
			days[a] = true
			continue
		}
		b, err := parseDay(to)
		if err != nil {
			return days, err
		}
		if a == b {
			// A whole week or one day? Make the operator say which.
			return days, fmt.Errorf("day range %q starts and ends on the same day (write %q for one day, or leave the days out for every day)", item, dayNames[a])
		}
		for d := a; ; d = (d + 1) % 7 {
			days[d] = true
			if d == b {
				break
			}
		}
	}
	return days, nil
}

func parseDay(s string) (int, error) {
	for i := range dayNames {
		if s == dayNames[i] || s == fullDayNames[i] {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown day %q (want mon, tue, wed, thu, fri, sat or sun)", s)
}

// parseClock parses "HH:MM" (or "H:MM") from 00:00 to 24:00 into minutes.
func parseClock(s string) (int32, error) {
	h, m, ok := strings.Cut(s, ":")
	bad := func() (int32, error) {
		return 0, fmt.Errorf("time %q: want HH:MM from 00:00 to 24:00", s)
	}
	if !ok || len(h) < 1 || len(h) > 2 || len(m) != 2 || !allDigits(h) || !allDigits(m) {
		return bad()
	}
	hh, _ := strconv.Atoi(h)
	mm, _ := strconv.Atoi(m)
	if hh > 24 || mm > 59 || (hh == 24 && mm != 0) {
		return bad()
	}
	return int32(hh*60 + mm), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// newWindow merges spans into a Window.
func newWindow(spans []span) Window {
	if len(spans) == 0 {
		return Window{}
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	merged := spans[:1]
	for _, s := range spans[1:] {
		last := &merged[len(merged)-1]
		if s.start <= last.end {
			last.end = max(last.end, s.end)
		} else {
			merged = append(merged, s)
		}
	}
	merged = slices.Clip(merged)
	edges := make([]int32, 0, 2*len(merged))
	for _, s := range merged {
		edges = append(edges, s.start, s.end)
	}
	// Sunday 24:00 meeting Monday 00:00 is no change: the week goes round.
	if edges[0] == 0 && edges[len(edges)-1] == weekMinutes {
		edges = edges[1 : len(edges)-1]
	}
	return Window{spans: merged, edges: edges}
}

// IsZero reports whether w is the zero Window, which is always open.
func (w Window) IsZero() bool { return len(w.spans) == 0 }

// contains reports whether the minute of the week m is in w.
func (w Window) contains(m int32) bool {
	i, found := slices.BinarySearchFunc(w.spans, m, func(s span, m int32) int { return cmp.Compare(s.start, m) })
	if found {
		return true
	}
	return i > 0 && m < w.spans[i-1].end
}

// covers reports whether every minute of o is in w.
func (w Window) covers(o Window) bool {
	for _, s := range o.spans {
		i, found := slices.BinarySearchFunc(w.spans, s.start, func(x span, m int32) int { return cmp.Compare(x.start, m) })
		if !found {
			i--
		}
		if i < 0 || s.end > w.spans[i].end {
			return false // spans do not touch, so one must hold all of s
		}
	}
	return true
}

// untilEdge returns how much wall-clock time passes from p (nanoseconds
// into the week) until openness next changes, strictly after p; false if
// it never does (w covers the whole week).
func (w Window) untilEdge(p int64) (int64, bool) {
	if len(w.edges) == 0 {
		return 0, false
	}
	i, _ := slices.BinarySearchFunc(w.edges, p, func(e int32, p int64) int {
		if int64(e)*minuteNs <= p {
			return -1
		}
		return 1
	})
	if i == len(w.edges) {
		return int64(w.edges[0])*minuteNs + weekNs - p, true
	}
	return int64(w.edges[i])*minuteNs - p, true
}

// piece is one range of a canonical spec: a start day and minutes from
// that day's midnight; end <= start means it crosses midnight.
type piece struct {
	day        int
	start, end int32
}

// Specs returns w's canonical specs: ranges cut at midnight except where a
// range crossing midnight can be written as one ("fri 22:00-02:00"), days
// with the same hours grouped ("mon-fri 09:00-20:00"), ordered by first
// day then by hours. Equal Windows give equal specs, and ParseWindow(Specs())
// gives w back. The zero Window has none.
func (w Window) Specs() []string {
	if w.IsZero() {
		return nil
	}
	var pieces []piece
	for _, s := range w.spans {
		for a := s.start; a < s.end; {
			b := min(s.end, (a/dayMinutes+1)*dayMinutes)
			pieces = append(pieces, piece{int(a / dayMinutes), a % dayMinutes, b - (a/dayMinutes)*dayMinutes})
			a = b
		}
	}
	// Join a range running to midnight with the next day's range from
	// midnight when the two can be written as one spec, Sunday to Monday
	// included. A join takes a piece that ends at 24:00 and one that starts
	// at 00:00 and cannot end there, so no piece is in two joins.
	fromMidnight := [7]int{-1, -1, -1, -1, -1, -1, -1}
	for i, p := range pieces {
		if p.start == 0 {
			fromMidnight[p.day] = i
		}
	}
	joined := make([]bool, len(pieces))
	for i, p := range pieces {
		if p.end != dayMinutes || p.start == 0 {
			continue
		}
		if j := fromMidnight[(p.day+1)%7]; j >= 0 && pieces[j].end < p.start {
			pieces[i].end = pieces[j].end
			joined[j] = true
		}
	}
	type group struct {
		start, end int32
		days       [7]bool
	}
	var groups []*group
	byHours := map[[2]int32]*group{}
	for i, p := range pieces {
		if joined[i] {
			continue
		}
		g := byHours[[2]int32{p.start, p.end}]
		if g == nil {
			g = &group{start: p.start, end: p.end}
			byHours[[2]int32{p.start, p.end}] = g
			groups = append(groups, g)
		}
		g.days[p.day] = true
	}
	type spec struct {
		first int // the day the first run of days starts on
		start int32
		end   int32
		text  string
	}
	specs := make([]spec, 0, len(groups))
	for _, g := range groups {
		days, first := formatDays(g.days)
		text := clock(g.start) + "-" + clock(g.end%dayMinutes)
		if g.end == dayMinutes {
			text = clock(g.start) + "-24:00"
		}
		if days != "" {
			text = days + " " + text
		}
		specs = append(specs, spec{first, g.start, g.end, text})
	}
	slices.SortFunc(specs, func(a, b spec) int {
		return cmp.Or(cmp.Compare(a.first, b.first), cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
	})
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.text
	}
	return out
}

// formatDays writes a set of days as runs, "" for all seven; first is the
// day its first run starts on.
func formatDays(days [7]bool) (text string, first int) {
	n := 0
	for _, on := range days {
		if on {
			n++
		}
	}
	if n == 7 {
		return "", 0
	}
	var runs []string
	first = -1
	for d := range 7 {
		if !days[d] || days[(d+6)%7] {
			continue // not the start of a run
		}
		e := d
		for days[(e+1)%7] {
			e = (e + 1) % 7
		}
		if first < 0 {
			first = d
		}
		if e == d {
			runs = append(runs, dayNames[d])
		} else {
			runs = append(runs, dayNames[d]+"-"+dayNames[e])
		}
	}
	return strings.Join(runs, ","), first
}

func clock(m int32) string {
	return fmt.Sprintf("%02d:%02d", m/60, m%60)
}

// String returns w's canonical specs joined by "; ", such as "mon-fri
// 09:00-20:00; sat 10:00-18:00", and "" for the zero Window:
// ParseWindow(strings.Split(w.String(), "; ")) gives w back.
func (w Window) String() string { return strings.Join(w.Specs(), "; ") }
