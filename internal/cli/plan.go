package cli

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/report"
	"github.com/bulksend/bulksend/internal/run"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/termtext"
	wachannel "github.com/bulksend/bulksend/internal/whatsapp/channel"
	"github.com/bulksend/bulksend/internal/whatsapp/pricing"
)

// printPlan is a WhatsApp campaign's --dry-run output: what a run would
// send, how long it would take at the configured rate and, with a rate
// card, what it would cost at most.
func printPlan(ctx context.Context, ios *IO, p *run.Plan, card *pricing.Card) error {
	s, r := p.Settings, p.Breakdown
	c := r.Counts
	w := ios.Out
	fmt.Fprintf(w, "plan: template %s/%s%s\n", esc(s.Template), esc(s.Lang), templateNote(s))
	if m, err := wachannel.MappingOf(s); err != nil {
		return err
	} else if m != nil {
		fmt.Fprintf(w, "mapping: %s\n", esc(m.Summary("--param")))
	} else {
		fmt.Fprintf(w, "mapping: %d body parameter column(s) [%s]\n", len(s.Params), termtext.Join(s.Params, " "))
	}
	if s.Encoding != "" { // checkpoints made before it was stored say nothing
		fmt.Fprintf(w, "file: %s, delimiter %q, phones in column %q\n", esc(s.Encoding), cmp.Or(s.Delimiter, ","), cmp.Or(s.PhoneColumn, "phone"))
	}
	if s.ApostrophesRemoved > 0 {
		fmt.Fprintf(w, "note: removed a leading apostrophe (a spreadsheet's text marker) from %d phones\n", s.ApostrophesRemoved)
	}
	fmt.Fprintf(w, "rows: %d total, %d to send, %d skipped, %d in doubt, %d already settled\n",
		c.Total, c.Pending, c.Skipped, c.InDoubt, c.Sent+c.Delivered+c.Read+c.Failed)
	report.WriteSkipped(w, "  skipped ", r.Skipped, r.SkipExamples)
	for _, sc := range r.BySender {
		fmt.Fprintf(w, "sender %s: %d to send at %g/s, about %s\n", esc(sc.Sender), sc.Counts.Pending, s.Rate, p.Duration(sc.Counts.Pending).Round(time.Second))
	}
	if s.Rate > 0 {
		fmt.Fprintf(w, "estimate: about %s at %g msg/s per sender (retries and throttling add to it)\n", p.Longest().Round(time.Second), s.Rate)
	}
	printPlanSchedule(w, p, strings.EqualFold(s.Category, "marketing"))
	if card != nil {
		if err := printCostCeiling(ctx, w, p.Store, s, card); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "dry run: nothing was sent")
	return nil
}

// templateNote says what is known of the template: its category and
// whether the CSV was checked against its approved definition.
func templateNote(s store.Settings) string {
	switch {
	case s.TemplateChecked != "" && s.Category != "":
		return fmt.Sprintf(" (%s; the CSV fits it as approved, per %s)", esc(s.Category), esc(s.TemplateChecked))
	case s.TemplateChecked != "":
		return fmt.Sprintf(" (the CSV fits it as approved, per %s)", esc(s.TemplateChecked))
	case len(s.Mapping) > 0:
		return " (not checked against its approved definition: pass --waba)"
	}
	return ""
}

// esc is an outside value as a terminal gets it (termtext.Escape): a CSV
// cell or header, a sender, a template's name, a webhook's or the API's
// text, a file name. The status view and the plan pass each through it,
// and only those: their own newlines and padding are layout.
func esc(s string) string { return termtext.Escape(s) }
