package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bulksend/bulksend/internal/reconcile"
	"github.com/bulksend/bulksend/internal/termtext"
)

// ReconcileLines say what a reconcile read and what it changed, a line
// each, for the terminal: the events by what they were, what the logs
// held besides statuses, the rows in doubt it settled. The policy for
// rows still in doubt is named as the setting {unmatched}, for the front
// end to name as it sets it.
func ReconcileLines(s reconcile.Summary) []string {
	lines := []string{fmt.Sprintf("%d events read: %d matched (%d applied), %d foreign, %d not statuses, %d invalid, %d unknown status values",
		s.Events, s.Matched, s.Applied, s.Foreign, s.NotStatus, s.Invalid, s.Unknown)}
	if kinds := kindsOtherThanStatuses(s.Kinds); kinds != "" {
		lines = append(lines, "by kind: "+kinds)
	}
	if len(s.FirstInvalidLines) > 0 {
		at := make([]string, len(s.FirstInvalidLines))
		for i, l := range s.FirstInvalidLines {
			at[i] = fmt.Sprint(l)
		}
		lines = append(lines, "first invalid lines: "+strings.Join(at, ", "))
	}
	if len(s.Settled) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(s.Settled)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, s.Settled[k]))
		}
		lines = append(lines, "rows in doubt settled: "+strings.Join(parts, ", "))
	}
	if s.Recovered > 0 {
		lines = append(lines, fmt.Sprintf("%d rows a stopped run left sending had no status: in doubt, then {unmatched} applied", s.Recovered))
	}
	switch {
	case s.Changed > 0 || s.Recovered > 0:
		lines = append(lines, fmt.Sprintf("%d rows changed, %d still in doubt", s.Changed, s.StillInDoubt))
	case s.Matched > 0:
		lines = append(lines, "nothing changed: these logs were applied before")
	default:
		lines = append(lines, "nothing changed: no status of this campaign in these logs")
	}
	return lines
}

// kindsOtherThanStatuses lists what the logs held besides statuses, by
// kind ("messages 3, user_preferences 1"), in name order; "" for nothing.
func kindsOtherThanStatuses(kinds map[string]int64) string {
	var out []string
	for k, n := range kinds {
		if k != "statuses" {
			out = append(out, fmt.Sprintf("%s %d", termtext.Escape(cmp.Or(k, "(no field)")), n))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
