package report

import (
	"bufio"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
)

//go:embed page.html.tmpl
var pageText string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"num":   num,
	"short": short,
	"ts": func(v any) string {
		switch t := v.(type) {
		case time.Time:
			return stamp(t)
		case *time.Time:
			if t != nil {
				return stamp(*t)
			}
		}
		return "–"
	},
	"pct": func(n, of int64) string {
		if of == 0 {
			return "–"
		}
		p := 100 * float64(n) / float64(of)
		if p > 0 && p < 0.1 {
			return "<0.1%"
		}
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	},
	"clock":      func(t *time.Time) string { return clock(*t) },
	"secs":       func(s float64) string { return span(time.Duration(s * float64(time.Second))) },
	"usd":        func(v float64) string { return fmt.Sprintf("$%.4f", v) },
	"unfinished": func(c campaign.Counts) int64 { return c.Pending + c.Sending + c.InDoubt },
	"runSpan":    func(r Run) string { return span(runUntil(r).Sub(r.StartedAt)) },
}).Parse(pageText))

// stamp is an instant as the page writes it: UTC to the second.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// maxRatePanels is how many numbers the rate chart draws a panel for;
// the others are in its table.
const maxRatePanels = 12

// view is what the page template reads: the report and its charts.
type view struct {
	*Report
	Legend, RunsChart, StatesChart, ErrorsChart, ClassesChart template.HTML
	RateCharts                                                []template.HTML
	LatencyChart, FunnelChart, SkippedChart, PricingChart     template.HTML
	HiddenSenders, Killed                                     int
	States                                                    []stateRow
	// NoHistory: rows were sent, but no run was recorded (a checkpoint
	// from before the attempts record).
	NoHistory bool
}

type stateRow struct {
	Name, Key, Meaning string
	N                  int64
}

// Render writes r as one self-contained HTML page: inline CSS and SVG, no
// script, no reference to anything outside it. Render only writes to w:
// making the file appear only when complete is the caller's (cli writes a
// temporary file and renames it).
func Render(w io.Writer, r *Report) error {
	c := r.Counts
	v := view{Report: r, States: []stateRow{
		{"pending", "pending", "not sent yet, or waiting for a retry", c.Pending},
		{"sending", "sending", "claimed by a run that is sending, or was killed", c.Sending},
		{"in doubt", "in_doubt", "no answer came: may have been sent", c.InDoubt},
		{"sent", "sent", "accepted; no status said delivered yet", c.Sent},
		{"delivered", "delivered", "a status said delivered", c.Delivered},
		{"read", "read", "a status said read", c.Read},
		{"failed", "failed", "failed for good (see the error codes)", c.Failed},
		{"skipped", "skipped", "never sent (see skipped rows)", c.Skipped},
	}}
	v.NoHistory = len(r.Runs) == 0 && c.Total-c.Pending-c.Skipped > 0
	for _, run := range r.Runs {
		if run.End == RunKilled {
			v.Killed++
		}
	}
	var items []barItem
	for _, s := range v.States {
		items = append(items, barItem{label: s.Name, value: s.N, note: share(s.N, c.Total)})
	}
	v.StatesChart = bars("states", "Rows by state", items)
	if len(r.Runs) > 0 {
		v.Legend = legend()
		v.RateCharts, v.HiddenSenders = rateCharts(r, maxRatePanels)
		v.RunsChart = timelineChart(r.Runs)
	}
	items = nil
	for i, e := range r.Errors {
		if i == 12 {
			break
		}
		label := string(e.Status) + " · " + e.Title
		if e.Code != 0 {
			label = string(e.Status) + " · " + strconv.Itoa(e.Code) + " " + e.Title
		}
		items = append(items, barItem{label: clip(label, 48), value: e.Rows})
	}
	v.ErrorsChart = bars("errors", "Rows by status and last error", items)
	items = nil
	for _, cc := range r.Attempts.ByClass {
		items = append(items, barItem{label: cc.Class, value: cc.Attempts, note: share(cc.Attempts, r.Attempts.Total)})
	}
	v.ClassesChart = bars("classes", "Attempts by answer", items)
	v.LatencyChart = latencyChart(r.Latency)
	f := r.Funnel
	v.FunnelChart = bars("funnel", "Accepted, delivered, read and replied", []barItem{
		{label: "accepted", value: f.Accepted, note: share(f.Accepted, c.Total) + " of rows"},
		{label: "delivered (or read)", value: f.Delivered, note: share(f.Delivered, f.Accepted) + " of accepted"},
		{label: "read", value: f.Read, note: share(f.Read, f.Accepted) + " of accepted"},
		{label: "replied", value: f.Replied, note: share(f.Replied, f.Accepted) + " of accepted"},
		{label: "failed after acceptance", value: f.FailedAfterAccept, note: share(f.FailedAfterAccept, f.Accepted) + " of accepted"},
		{label: "no status yet", value: f.Unconfirmed, note: share(f.Unconfirmed, f.Accepted) + " of accepted"},
	})
	items = nil
	for _, s := range r.Skipped {
		items = append(items, barItem{label: string(s.Kind), value: s.Rows, note: share(s.Rows, c.Total) + " of rows"})
	}
	v.SkippedChart = bars("skipped", "Skipped rows by reason", items)
	items = nil
	for _, p := range r.Pricing.Categories {
		items = append(items, barItem{label: p.Category, value: p.Rows})
	}
	v.PricingChart = bars("pricing", "Rows by pricing category", items)

	bw := bufio.NewWriter(w)
	if err := page.Execute(bw, v); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return nil
}

// share is n as a percentage of of, in brackets; "" when of is 0.
func share(n, of int64) string {
	if of == 0 {
		return ""
	}
	p := 100 * float64(n) / float64(of)
	if p > 0 && p < 0.1 {
		return "(<0.1%)"
	}
	return "(" + strconv.FormatFloat(p, 'f', 1, 64) + "%)"
}

// clip shortens s to n runes, with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// legend is the rate chart's key, each entry drawn as it is in the chart.
func legend() template.HTML {
	sw := func(id, body, text string) string {
		return `<span><svg width="34" height="14" viewBox="0 0 34 14" aria-hidden="true">` +
			`<defs><pattern id="` + id + `" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" class="pat-bg"/><line x1="0" y1="0" x2="0" y2="6" class="pat-ink" stroke-width="2.5"/></pattern></defs>` +
			body + `</svg>` + esc(text) + `</span>`
	}
	return template.HTML(
		sw("lg-a", `<rect x="1" y="4" width="32" height="10" class="achfill"/><path d="M1 4H33" class="ach"/>`, "achieved: accepted per second (solid line over a filled area)") +
			sw("lg-c", `<path d="M1 7H33" class="cfg"/>`, "configured rate (dashed)") +
			sw("lg-t", `<rect x="3" y="1" width="28" height="12" class="thr" fill="url(#lg-t)"/>`, "throttled answers (hatched bars)"))
}
