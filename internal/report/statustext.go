package report

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/ledger"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/termtext"
)

// StatusText is what the status view says that a Status does not hold:
// the channel's sections, and how the operator sets a run's settings.
type StatusText struct {
	// Channel is the sections the channel adds after the pricing (a rate
	// card's bill, the last preflight), each starting with its blank line.
	Channel string
	// Setting is how the operator sets a run's setting ("rate", "budget"):
	// the advice names it so, and only the command line knows its flags.
	Setting func(name string) string
}

// termEsc is an outside value as a terminal gets it (termtext.Escape): a
// sender, a template's name, a webhook's or the API's text, a file name.
// The view's own newlines and padding are layout, not values.
func termEsc(s string) string { return termtext.Escape(s) }

// WriteText writes the status view of s, the status of the campaign in st
// whose settings are settings, to w. A campaign that runs shows the other
// runs on this machine that share its numbers, from the operator ledger.
func (s *Status) WriteText(ctx context.Context, w io.Writer, st *store.Store, settings store.Settings, t StatusText) {
	fmt.Fprintf(w, "campaign %s · %s\n", termEsc(s.CampaignID), heading(s.Channel, settings))
	if s.LockedBy != "" {
		fmt.Fprintf(w, "running: %s\n", termEsc(s.LockedBy))
		writeShares(ctx, w, st, settings, t.Setting)
	}
	c := s.Counts
	fmt.Fprintf(w, "\n%-10s %10s\n", "state", "rows")
	for _, r := range []struct {
		name string
		n    int64
	}{{"pending", c.Pending}, {"sending", c.Sending}, {"in_doubt", c.InDoubt}, {"sent", c.Sent}, {"delivered", c.Delivered}, {"read", c.Read}, {"failed", c.Failed}, {"skipped", c.Skipped}, {"total", c.Total}} {
		fmt.Fprintf(w, "%-10s %10d\n", r.name, r.n)
	}
	b := s.Buckets
	fmt.Fprintf(w, "\n%-13s %10d  (sent, delivered or read)\n%-13s %10d  (failed: throttled on every try)\n%-13s %10d  (every other failure, and the skipped rows)\n%-13s %10d  (pending, sending or in doubt)\n",
		"success", b.Success, "hard throttle", b.HardThrottle, "other", b.Other, "unfinished", b.Unfinished)
	if s.Replied > 0 {
		fmt.Fprintf(w, "\nreplied: %d rows (the recipient answered: export shows the first reply of each)\n", s.Replied)
	}
	if p := s.Parts; p != nil {
		fmt.Fprintf(w, "\nparts: %d planned, %d in rows sent or delivered; %d rows need UCS-2; %d throttled tries\n", p.Planned, p.Sent, p.UCS2Rows, p.Throttled)
		if p.BilledRows > 0 {
			fmt.Fprintf(w, "billed (from events): %d parts, $%.4f with carrier fees, for %d rows\n", p.BilledParts, p.Charged, p.BilledRows)
		}
	}
	if len(s.Skipped) > 0 {
		fmt.Fprintf(w, "\nskipped by reason:\n")
		WriteSkipped(w, "  ", s.Skipped, s.SkipExamples)
	}
	if s.Held > 0 {
		fmt.Fprintf(w, "held       %10d  (sent, but held back by WhatsApp's template pacing: they may still fail with 132015)\n", s.Held)
	}
	if s.WasHeld > 0 {
		fmt.Fprintf(w, "\nheld at send (template pacing): %d rows, %d still held\n", s.WasHeld, s.Held)
	}
	if len(s.FailedByReason) > 0 {
		fmt.Fprintf(w, "\nfailed by reason:\n")
		for _, k := range slices.Sorted(maps.Keys(s.FailedByReason)) {
			fmt.Fprintf(w, "  %-20s %8d%s\n", termEsc(k), s.FailedByReason[k], reasonNote(k, t.Setting))
		}
	}
	if len(s.ByPricingCategory) > 0 {
		fmt.Fprintf(w, "\npricing (as status webhooks reported it), rows by category; %d billable: delivered or read and said billable (Meta bills a message when it is delivered: rows only sent, or failed, are not, nor free ones)\n", s.Billable)
		for _, k := range slices.Sorted(maps.Keys(s.ByPricingCategory)) {
			fmt.Fprintf(w, "  %-14s %8d\n", termEsc(k), s.ByPricingCategory[k])
		}
	}
	if settings.API == "marketing" {
		fmt.Fprintf(w, "\nmarketing messages API: %d billed marketing_lite, %d fell back to Cloud API (marketing)\n",
			s.ByPricingCategory["marketing_lite"], s.ByPricingCategory["marketing"])
	}
	io.WriteString(w, t.Channel)
	if len(s.Errors) > 0 {
		fmt.Fprintf(w, "\nerrors (last error of each row):\n")
		for _, e := range s.Errors {
			code := "" // AWS names its errors; it has no codes
			if e.Code != 0 {
				code = strconv.Itoa(e.Code)
			}
			fmt.Fprintf(w, "  %-9s %7s  %10d  %s\n", e.Status, code, e.Rows, termEsc(e.Title))
		}
	}
	fmt.Fprintf(w, "\nper sender:\n")
	for _, sc := range s.Senders {
		fmt.Fprintf(w, "  %-20s %s\n", termEsc(sc.Sender), CountsLine(sc.Counts))
	}
	if s.Retrying > 0 {
		fmt.Fprintf(w, "\nretries scheduled: %d, next due %s\n", s.Retrying, s.NextRetry)
	}
	s.writeSchedule(w)
	if c.InDoubt > 0 {
		fmt.Fprintf(w, "\nrows in doubt: %d (settle them with 'bulksend reconcile')\n", c.InDoubt)
	}
	if s.RatePerSec > 0 {
		fmt.Fprintf(w, "\nrate (last minute): %.1f msg/s", s.RatePerSec)
		if s.ETASeconds > 0 {
			fmt.Fprintf(w, " · ETA %s", (time.Duration(s.ETASeconds) * time.Second).String())
		}
		fmt.Fprintln(w)
	}
	if s.Deliveries > 0 {
		fmt.Fprintf(w, "\ntime to delivered (%d messages): p50 %.1fs · p90 %.1fs · p99 %.1fs\n", s.Deliveries, s.DeliveryP50, s.DeliveryP90, s.DeliveryP99)
	}
	if len(s.Learned) > 0 {
		fmt.Fprintf(w, "\nnumbers slower than %s %g (run %d found):\n", t.Setting("rate"), s.LearnedOf, s.LearnedRun)
		for _, n := range slices.Sorted(maps.Keys(s.Learned)) {
			fmt.Fprintf(w, "  %-20s accepts about %.0f/s\n", termEsc(n), s.Learned[n])
		}
	}
}

// heading is the campaign's channel and message: an SMS campaign's
// senders, a WhatsApp campaign's template.
func heading(ch campaign.Channel, s store.Settings) string {
	switch {
	case ch == campaign.SMS:
		return "SMS from " + termtext.Join(s.Senders, ", ")
	case s.Category != "":
		return fmt.Sprintf("template %s/%s (%s)", termEsc(s.Template), termEsc(s.Lang), termEsc(s.Category))
	}
	return fmt.Sprintf("template %s/%s", termEsc(s.Template), termEsc(s.Lang))
}

// reasonNote explains a failure reason; setting names a run's setting
// as the operator sets it (StatusText.Setting).
func reasonNote(reason string, setting func(string) string) string {
	switch reason {
	case campaign.FailMarketingCap:
		return "  WhatsApp's per-user marketing cap: no run resends these (Meta: wait 24 h; resending makes it worse)"
	case campaign.FailThrottleExhausted:
		return "  throttled on every try: lower " + setting("rate") + ", or ask AWS for more parts per second"
	case campaign.FailOptedOut:
		return "  the recipient replied STOP: never a success, never resent; the operator ledger keeps it for every later campaign"
	case campaign.FailStoppedMarketing:
		return "  the recipient stopped marketing messages: the operator ledger keeps it, later marketing campaigns skip them"
	}
	return ""
}

// CountsLine is a campaign's counts on one line, each state by name.
func CountsLine(c campaign.Counts) string {
	return fmt.Sprintf("%d rows = %d sent + %d delivered + %d read + %d failed + %d skipped + %d pending + %d sending + %d in doubt",
		c.Total, c.Sent, c.Delivered, c.Read, c.Failed, c.Skipped, c.Pending, c.Sending, c.InDoubt)
}

// WriteSkipped writes each kind of skip with its count and its first row,
// which is what an operator needs to find the others in the file.
func WriteSkipped(w io.Writer, prefix string, skipped map[campaign.SkipKind]int64, examples map[campaign.SkipKind]store.SkipExample) {
	for _, k := range slices.Sorted(maps.Keys(skipped)) {
		fmt.Fprintf(w, "%s%-10s %8d", prefix, termEsc(string(k)), skipped[k])
		if e, ok := examples[k]; ok {
			fmt.Fprintf(w, "  e.g. line %d: %s", e.Line, termEsc(e.Reason))
			if e.Phone != "" && !strings.Contains(e.Reason, e.Phone) {
				fmt.Fprintf(w, " (%s)", termEsc(e.Phone))
			}
		}
		fmt.Fprintln(w)
	}
}

// writeSchedule writes the schedule and the rows waiting for it.
func (s *Status) writeSchedule(w io.Writer) {
	if len(s.Window) == 0 && s.StartAt == "" && s.EndAt == "" && s.DailyLimit == "" && s.NextSendAt == nil {
		return
	}
	fmt.Fprintf(w, "\nschedule:")
	if len(s.Window) > 0 {
		zone := "each recipient's local time"
		if s.WindowTZ != "" {
			zone = termEsc(s.WindowTZ)
		}
		fmt.Fprintf(w, " window %s (%s);", termEsc(strings.Join(s.Window, "; ")), zone)
	}
	if s.StartAt != "" {
		fmt.Fprintf(w, " start %s;", s.StartAt)
	}
	if s.EndAt != "" {
		fmt.Fprintf(w, " end %s;", s.EndAt)
	}
	if s.DailyLimit != "" {
		fmt.Fprintf(w, " daily limit %s unique recipients per moving 24 h;", termEsc(s.DailyLimit))
	}
	if s.Days > 0 {
		fmt.Fprintf(w, " runs span %d day(s);", s.Days)
	}
	fmt.Fprintln(w)
	if s.NextSendAt != nil {
		fmt.Fprintf(w, "waiting (pending): %d for their window, %d for their send_at, %d for the daily limit, %d for the start; next send at %s\n",
			s.WaitingWindow, s.WaitingSendAt, s.WaitingBudget, s.WaitingStart, *s.NextSendAt)
	}
}

// writeShares writes, for a campaign that runs, the other runs on this
// machine that send from its numbers now (the operator ledger's leases),
// which split each number's rate with it. Nothing when the ledger does
// not exist or cannot be read: status only reads.
func writeShares(ctx context.Context, w io.Writer, st *store.Store, settings store.Settings, setting func(string) string) {
	path, err := ledger.DefaultPath()
	if err != nil {
		return
	}
	if _, err := os.Stat(path); err != nil {
		return
	}
	l, err := ledger.Open(ctx, path)
	if err != nil {
		return
	}
	defer l.Close()
	self, _ := filepath.Abs(st.Path())
	for _, s := range settings.Senders {
		live, err := l.SenderLeases(ctx, s, time.Now())
		if err != nil {
			return
		}
		var others []string
		mine := false
		for _, x := range live {
			if x.Checkpoint == self {
				mine = true
				continue
			}
			others = append(others, fmt.Sprintf("pid %d (%s)", x.PID, termEsc(x.Checkpoint)))
		}
		if !mine || len(others) == 0 {
			continue
		}
		fmt.Fprintf(w, "number %s is shared with %d other run(s) on this machine, %s: each sends at %.4g/s of %g/s (runs on several hosts share a number through %s)\n",
			termEsc(s), len(others), strings.Join(others, ", "), settings.Rate/float64(len(others)+1), settings.Rate, setting("budget"))
	}
}
