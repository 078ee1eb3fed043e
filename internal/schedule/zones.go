package schedule

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Zones is the set of time zones a recipient may be in. ZonesOf and
// ParseZones return it sorted by name and without duplicates; nil means
// none known, which Open reads as UTC. The Zones they return are shared:
// do not modify them.
type Zones []*time.Location

// Key returns the canonical form of zs: its location names sorted and
// joined by ",", "" for none. ParseZones(zs.Key()) gives zs back, so the key
// can be stored and rows grouped by it.
func (z Zones) Key() string {
	switch len(z) {
	case 0:
		return ""
	case 1:
		return locName(z[0])
	}
	names := make([]string, len(z))
	for i, l := range z {
		names[i] = locName(l)
	}
	slices.Sort(names)
	return strings.Join(slices.Compact(names), ",")
}

// locName is l's name; a nil *time.Location is UTC, as package time reads it.
func locName(l *time.Location) string {
	if l == nil {
		return "UTC"
	}
	return l.String()
}

// ParseZones parses a Key back into Zones. An unknown zone name is an
// error, and so is "Local": the machine's zone is not a recipient's, and
// not the same on the next machine that reads a stored key.
func ParseZones(key string) (Zones, error) {
	if key == "" {
		return nil, nil
	}
	if v, ok := zonesByKey.Load(key); ok {
		return v.(Zones), nil
	}
	var zs Zones
	for name := range strings.SplitSeq(key, ",") {
		l, err := loadLocation(name)
		if err != nil {
			return nil, fmt.Errorf("zones %q: %w", key, err)
		}
		zs = append(zs, l)
	}
	zs = sortZones(zs)
	v, _ := zonesByKey.LoadOrStore(key, zs)
	return v.(Zones), nil
}

// zonesByKey caches ParseZones: it is called for every zone group and at
// import, and a key names few zones, of which a campaign has few sets.
var zonesByKey sync.Map // string → Zones

// locations caches time.LoadLocation, which reads and parses a file on
// every call.
var locations sync.Map // string → *time.Location

func loadLocation(name string) (*time.Location, error) {
	if v, ok := locations.Load(name); ok {
		return v.(*time.Location), nil
	}
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("time zone %q: want an IANA name such as Europe/Berlin", name)
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %w", name, err)
	}
	v, _ := locations.LoadOrStore(name, l)
	return v.(*time.Location), nil
}

// sortZones sorts zs by name and drops duplicates, in place.
func sortZones(zs Zones) Zones {
	slices.SortFunc(zs, func(a, b *time.Location) int { return strings.Compare(locName(a), locName(b)) })
	return slices.CompactFunc(zs, func(a, b *time.Location) bool { return locName(a) == locName(b) })
}

var utcOnly = Zones{time.UTC}

// openHorizon is how far Open looks for an opening: a week, and a day for
// the spread of the zones and a DST change.
const openHorizon = 8 * 24 * time.Hour

// Open reports whether w is open at t in every zone of zs at once, reading
// w on each zone's wall clock (so across a DST change a window keeps its
// local hours, and a wall-clock range that a change skips or repeats is
// skipped or repeated), and when that changes. If open, change is the
// instant the common opening ends, when w closes in some zone; the zero
// time if it never does (w covers the whole week). If closed, change is the
// earliest instant after t at which w is open in all zones at once, and ok
// is false when there is none within 8 days: w is narrower than the spread
// of the zones. Empty zs means UTC. The zero Window is always open: true,
// the zero time, true.
func (w Window) Open(t time.Time, zs Zones) (open bool, change time.Time, ok bool) {
	if w.IsZero() {
		return true, time.Time{}, true
	}
	if len(zs) == 0 {
		zs = utcOnly
	}
	if w.openAll(t, zs) {
		// Two weeks: a week-long opening can outlast a week by a DST gap.
		limit := t.Add(2*openHorizon - 24*time.Hour)
		for _, z := range zs {
			if c, found := w.nextChange(t, z, limit); found && (change.IsZero() || c.Before(change)) {
				change = c
			}
		}
		return true, inLoc(change, t), true
	}
	limit := t.Add(openHorizon)
	cur := t
	for {
		next, allOpen := cur, true
		for _, z := range zs {
			if w.openIn(cur, z) {
				continue
			}
			// Nothing opens everywhere before this zone opens.
			allOpen = false
			c, found := w.nextChange(cur, z, limit)
			if !found {
				return false, time.Time{}, false
			}
			if c.After(next) {
				next = c
			}
		}
		if allOpen {
			return false, inLoc(cur, t), true
		}
		cur = next
	}
}

// inLoc returns c in t's location, the zero time as it is.
func inLoc(c, t time.Time) time.Time {
	if c.IsZero() {
		return c
	}
	return c.In(t.Location())
}

func (w Window) openAll(t time.Time, zs Zones) bool {
	for _, z := range zs {
		if !w.openIn(t, z) {
			return false
		}
	}
	return true
}

// openIn reports whether w is open at t on loc's wall clock.
func (w Window) openIn(t time.Time, loc *time.Location) bool {
	return w.contains(int32(weekPos(t.In(zoneOrUTC(loc))) / minuteNs))
}

func zoneOrUTC(loc *time.Location) *time.Location {
	if loc == nil {
		return time.UTC
	}
	return loc
}

// weekPos returns how far into its week (from Monday 00:00) the wall clock
// of local reads, in nanoseconds.
func weekPos(local time.Time) int64 {
	day := (int64(local.Weekday()) + 6) % 7
	h, m, s := local.Clock()
	return ((day*24+int64(h))*60+int64(m))*minuteNs + int64(s)*int64(time.Second) + int64(local.Nanosecond())
}

// nextChange returns the first instant after t, up to limit, at which w's
// openness on loc's wall clock differs from its openness at t; false if
// there is none by limit. The wall clock runs with time except at the
// zone's offset changes, where it jumps.
func (w Window) nextChange(t time.Time, loc *time.Location, limit time.Time) (time.Time, bool) {
	loc = zoneOrUTC(loc)
	was := w.openIn(t, loc)
	for cur := t; !cur.After(limit); {
		local := cur.In(loc)
		d, found := w.untilEdge(weekPos(local))
		if !found {
			return time.Time{}, false // open all week
		}
		at := cur.Add(time.Duration(d))
		_, jump := local.ZoneBounds()
		if jump.IsZero() || at.Before(jump) {
			return at, !at.After(limit)
		}
		// The clock jumps before it reaches the edge: across a skipped
		// range it may land inside or outside w.
		if w.openIn(jump, loc) != was {
			return jump, !jump.After(limit)
		}
		cur = jump
	}
	return time.Time{}, false
}

// wallInstant returns the instant at which loc's wall clock reads wall (a
// time in UTC whose fields are the wall clock's). A wall time the clock
// reads twice (when it falls back) gives the later instant; one it never
// reads (when it springs forward over it) gives the first instant after
// the gap, when the clock jumps.
func wallInstant(wall time.Time, loc *time.Location) time.Time {
	loc = zoneOrUTC(loc)
	// No offset is more than a day (±26 h) away from UTC, so the zone
	// periods that can hold wall are among those in this range.
	from, to := wall.Add(-26*time.Hour), wall.Add(26*time.Hour)
	var best, gap time.Time
	found := false
	for cur := from; ; {
		local := cur.In(loc)
		_, offset := local.Zone()
		start, end := local.ZoneBounds()
		c := wall.Add(-time.Duration(offset) * time.Second)
		if !c.Before(start) && (end.IsZero() || c.Before(end)) {
			best, found = c, true // periods come in order: the last to hold wall is the later
		}
		if end.IsZero() || end.After(to) {
			break
		}
		if gap.IsZero() && !c.Before(end) {
			// wall is after this period ends on its clock; if it is
			// before the next period starts on that one's, the clock
			// jumped over it here.
			_, next := end.In(loc).Zone()
			if wall.Add(-time.Duration(next) * time.Second).Before(end) {
				gap = end
			}
		}
		cur = end
	}
	if !found {
		return gap
	}
	return best
}
