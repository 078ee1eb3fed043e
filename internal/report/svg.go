package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// This file draws the report's charts as inline SVG. Nothing is told by
// colour alone: series differ by pattern (solid, hatched, dotted), marker
// or dash style, and carry their labels where they are drawn. The page's
// stylesheet gives the classes used here their look, screen and print.

// svg is an SVG document being written. Text is escaped; attribute strings
// are this file's own constants and numbers.
type svg struct {
	b strings.Builder
}

// newSVG starts an SVG of w × h px whose accessible name is title and
// longer description desc; id prefixes its patterns' ids, unique in the page.
func newSVG(id string, w, h float64, title, desc string) *svg {
	s := &svg{}
	fmt.Fprintf(&s.b, `<svg class="chart" id="%s" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-labelledby="%s-t %s-d">`,
		id, f(w), f(h), f(w), f(h), id, id)
	fmt.Fprintf(&s.b, `<title id="%s-t">%s</title><desc id="%s-d">%s</desc>`, id, esc(title), id, esc(desc))
	fmt.Fprintf(&s.b, `<defs>`+
		`<pattern id="%[1]s-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" class="pat-bg"/><line x1="0" y1="0" x2="0" y2="6" class="pat-ink" stroke-width="2.5"/></pattern>`+
		`<pattern id="%[1]s-cross" width="7" height="7" patternUnits="userSpaceOnUse"><rect width="7" height="7" class="pat-bg"/><path d="M0 0L7 7M7 0L0 7" class="pat-ink" stroke-width="1.3"/></pattern>`+
		`<pattern id="%[1]s-dots" width="5" height="5" patternUnits="userSpaceOnUse"><rect width="5" height="5" class="pat-bg"/><circle cx="2.5" cy="2.5" r="1.2" class="pat-dot"/></pattern>`+
		`</defs>`, id)
	return s
}

func (s *svg) add(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

// text writes escaped text at (x, y); anchor is start, middle or end.
func (s *svg) text(x, y float64, anchor, class, text string) {
	s.add(`<text x="%s" y="%s" text-anchor="%s" class="%s">%s</text>`, f(x), f(y), anchor, class, esc(text))
}

func (s *svg) line(x1, y1, x2, y2 float64, class string) {
	s.add(`<line x1="%s" y1="%s" x2="%s" y2="%s" class="%s"/>`, f(x1), f(y1), f(x2), f(y2), class)
}

func (s *svg) rect(x, y, w, h float64, class, fill string) {
	if fill != "" {
		fill = ` fill="` + fill + `"`
	}
	s.add(`<rect x="%s" y="%s" width="%s" height="%s" class="%s"%s/>`, f(x), f(y), f(max(w, 0)), f(max(h, 0)), class, fill)
}

func (s *svg) done() template.HTML {
	s.b.WriteString(`</svg>`)
	return template.HTML(s.b.String()) // built from escaped text and this file's own markup
}

func esc(s string) string { return html.EscapeString(s) }

// f formats a coordinate: at most one decimal.
func f(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// niceMax is a round number at least v, for an axis's top.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	step := niceStep(v / 4)
	return math.Ceil(v/step) * step
}

// ticks are the round values from 0 to top, about n of them.
func ticks(top float64, n int) []float64 {
	step := niceStep(top / float64(n))
	var out []float64
	for v := 0.0; v <= top*(1+1e-9); v += step {
		out = append(out, v)
	}
	return out
}

// num formats n with thousands separators.
func num(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// short formats a rate or count compactly: 1 decimal below 10, none above.
func short(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) < 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return num(int64(math.Round(v)))
}

// clock is an instant as the charts label it: UTC time of day.
func clock(t time.Time) string { return t.UTC().Format("15:04:05") }

// span formats a duration for a person: 850ms, 12.3s, 4m05s, 2h03m, 3d04h.
func span(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// barItem is one bar of a bar chart: its label, its value, and a note
// written after the value.
type barItem struct {
	label string
	value int64
	note  string // after the value, e.g. "(92.1% of accepted)"
}

// bars draws items as horizontal bars on a shared scale (the largest
// value), one fill for all: the labels beside them tell them apart, and
// each value is written at its bar's end.
func bars(id, title string, items []barItem) template.HTML {
	const (
		w      = 1000.0
		labelW = 330.0
		rowH   = 24.0
		top    = 6.0
	)
	h := top*2 + rowH*float64(max(1, len(items)))
	var desc []string
	var scale int64
	for _, it := range items {
		scale = max(scale, it.value)
		desc = append(desc, fmt.Sprintf("%s: %s", it.label, num(it.value)))
	}
	s := newSVG(id, w, h, title, strings.Join(desc, "; "))
	plotW := w - labelW - 260
	for i, it := range items {
		y := top + float64(i)*rowH
		s.text(labelW-8, y+rowH/2+4, "end", "lbl", it.label)
		bw := 0.0
		if scale > 0 {
			bw = plotW * float64(it.value) / float64(scale)
		}
		if it.value > 0 {
			bw = max(bw, 1.5)
		}
		s.rect(labelW, y+4, bw, rowH-8, "bar", "")
		v := num(it.value)
		if it.note != "" {
			v += "  " + it.note
		}
		s.text(labelW+bw+6, y+rowH/2+4, "start", "val", v)
	}
	s.line(labelW, top, labelW, top+rowH*float64(len(items)), "ax")
	return s.done()
}

// xLayout places a series' segments side by side: each gets a minimum
// width plus a share of the rest by its duration; gaps between them are
// fixed (the time between runs is not drawn, only named).
type xLayout struct {
	x0, x1 []float64
	segs   []Segment
}

func layoutX(segs []Segment, left, width float64) xLayout {
	k := len(segs)
	l := xLayout{segs: segs, x0: make([]float64, k), x1: make([]float64, k)}
	if k == 0 {
		return l
	}
	gap := 0.0
	if k > 1 {
		gap = min(22, 0.15*width/float64(k-1))
	}
	minW := min(26, 0.3*width/float64(k))
	avail := width - gap*float64(k-1) - minW*float64(k)
	var total float64
	for _, s := range segs {
		total += s.End.Sub(s.Start).Seconds()
	}
	x := left
	for i, s := range segs {
		share := 0.0
		if total > 0 {
			share = avail * s.End.Sub(s.Start).Seconds() / total
		} else {
			share = avail / float64(k)
		}
		l.x0[i], l.x1[i] = x, x+minW+share
		x = l.x1[i] + gap
	}
	return l
}

// at is the x of instant t in segment i.
func (l xLayout) at(i int, t time.Time) float64 {
	s := l.segs[i]
	d := s.End.Sub(s.Start).Seconds()
	if d <= 0 {
		return l.x0[i]
	}
	frac := min(1, max(0, t.Sub(s.Start).Seconds()/d))
	return l.x0[i] + frac*(l.x1[i]-l.x0[i])
}

// bucketX is the left and right x of bucket b of segment i.
func (l xLayout) bucketX(i, b int, width float64) (float64, float64) {
	s := l.segs[i]
	from, to := s.bucketBounds(b, width)
	sec := func(v float64) time.Time { return s.Start.Add(time.Duration(v * float64(time.Second))) }
	return l.at(i, sec(from)), l.at(i, sec(to))
}

// ratePanel is one panel of the rate chart: a sender, or all of them.
type ratePanel struct {
	name, summary string
	// series per segment: nil where the sender did not send
	accepted, throttled [][]int64
	// configured rate per segment (0: no limit)
	rate []float64
}

// rateCharts draws, per sender (and for all of them first when there are
// several), the accepted attempts per second in each bucket as a filled
// step line against the configured rate (dashed), with the throttled
// answers per bucket as hatched bars in a strip below, on one time axis:
// the runs side by side, each labelled, the time between them named. Each
// panel is an SVG of its own, with its own axis, so that a printed page
// may end between two. It returns the panels and how many numbers it left
// out (past maxPanels).
func rateCharts(r *Report, maxPanels int) ([]template.HTML, int) {
	ser := r.Rate
	unit := "msg/s"
	if ser.Unit == "parts/s" {
		unit = "parts/s"
	}
	var panels []ratePanel
	k := len(ser.Segments)
	senderIdx := map[string]int{}
	for _, s := range r.Senders {
		if s.Attempts == 0 {
			continue
		}
		senderIdx[s.Sender] = len(panels)
		summary := fmt.Sprintf("mean %s %s · peak %s %s · %s accepted · %s throttled", short(s.MeanRate), unit, short(s.PeakRate), unit, num(s.Accepted), num(s.Throttled))
		panels = append(panels, ratePanel{name: "number " + s.Sender, summary: summary,
			accepted: make([][]int64, k), throttled: make([][]int64, k), rate: make([]float64, k)})
	}
	hidden := 0
	if len(panels) > maxPanels {
		hidden = len(panels) - maxPanels
	}
	all := ratePanel{name: "all numbers", accepted: make([][]int64, k), throttled: make([][]int64, k), rate: make([]float64, k)}
	var allAccepted, allThrottled int64
	for i, seg := range ser.Segments {
		n := seg.Buckets(ser.BucketSeconds)
		all.accepted[i], all.throttled[i] = make([]int64, n), make([]int64, n)
		all.rate[i] = seg.Rate * float64(len(seg.Senders))
		for _, ss := range seg.Senders {
			p, ok := senderIdx[ss.Sender]
			if !ok {
				continue
			}
			panels[p].accepted[i], panels[p].throttled[i] = ss.Accepted, ss.Throttled
			panels[p].rate[i] = seg.Rate
			for b := range ss.Accepted {
				all.accepted[i][b] += ss.Accepted[b]
				all.throttled[i][b] += ss.Throttled[b]
				allAccepted += ss.Accepted[b]
				allThrottled += ss.Throttled[b]
			}
		}
	}
	panels = panels[:len(panels)-hidden]
	if len(senderIdx) > 1 {
		all.name = fmt.Sprintf("all %d numbers", len(senderIdx))
		var messages int64
		for _, sd := range r.Senders {
			messages += sd.Accepted
		}
		accepted := num(messages) + " accepted"
		if unit == "parts/s" {
			accepted += " (" + num(allAccepted) + " parts)"
		}
		all.summary = fmt.Sprintf("%s · %s throttled · configured: the sum of the numbers' rates", accepted, num(allThrottled))
		panels = append([]ratePanel{all}, panels...)
	}
	var out []template.HTML
	for p, pan := range panels {
		out = append(out, ratePanelChart(fmt.Sprintf("rate-%d", p), ser, pan, unit))
	}
	return out, hidden
}

// ratePanelChart draws one panel of the rate chart (see rateCharts).
func ratePanelChart(id string, ser Series, pan ratePanel, unit string) template.HTML {
	const (
		w      = 1000.0
		left   = 64.0
		right  = 16.0
		top    = 40.0 // title, run labels
		plotH  = 110.0
		stripH = 26.0
		bottom = 40.0 // time axis, gaps
	)
	plotW := w - left - right
	h := top + plotH + 6 + stripH + bottom
	var peak float64
	var thrTotal int64
	for i, seg := range ser.Segments {
		for b, n := range pan.accepted[i] {
			peak = max(peak, float64(n)/seg.BucketSpan(b, ser.BucketSeconds))
		}
		for _, n := range pan.throttled[i] {
			thrTotal += n
		}
	}
	desc := fmt.Sprintf("%s: accepted %s per %s-second bucket over %d runs, peak %s; dashed: the configured rate; hatched bars below: %s throttled answers.",
		pan.name, unit, short(ser.BucketSeconds), len(ser.Segments), short(peak), num(thrTotal))
	s := newSVG(id, w, h, "Achieved send rate of "+pan.name+" against its configured rate, with throttling", desc)
	lay := layoutX(ser.Segments, left, plotW)
	s.text(left, 14, "start", "ptitle", pan.name+" ("+unit+")")
	s.text(w-right, 14, "end", "psum", pan.summary)
	// Run labels over the plot.
	for i, seg := range ser.Segments {
		mid := (lay.x0[i] + lay.x1[i]) / 2
		label := fmt.Sprintf("run %d", seg.Run)
		if lay.x1[i]-lay.x0[i] < 40 {
			label = strconv.FormatInt(seg.Run, 10)
		}
		s.text(mid, top-8, "middle", "runlbl", label)
	}
	py := top
	// The y scale: round, above the highest rate drawn or configured.
	yTop := peak
	for i := range ser.Segments {
		yTop = max(yTop, pan.rate[i])
	}
	yTop = niceMax(yTop * 1.08)
	y := func(v float64) float64 { return py + plotH - plotH*v/yTop }
	for i := range ser.Segments {
		s.rect(lay.x0[i], py, lay.x1[i]-lay.x0[i], plotH, "plotbg", "")
	}
	for _, t := range ticks(yTop, 4) {
		for i := range ser.Segments {
			s.line(lay.x0[i], y(t), lay.x1[i], y(t), "grid")
		}
		s.text(left-6, y(t)+4, "end", "tick", short(t))
	}
	var maxThr int64
	for i := range ser.Segments {
		for _, n := range pan.throttled[i] {
			maxThr = max(maxThr, n)
		}
	}
	sy := py + plotH + 6
	for i, seg := range ser.Segments {
		if acc := pan.accepted[i]; acc != nil {
			var steps strings.Builder
			for b, n := range acc {
				bx0, bx1 := lay.bucketX(i, b, ser.BucketSeconds)
				v := y(float64(n) / seg.BucketSpan(b, ser.BucketSeconds))
				fmt.Fprintf(&steps, "L%s %sL%s %s", f(bx0), f(v), f(bx1), f(v))
			}
			x0, _ := lay.bucketX(i, 0, ser.BucketSeconds)
			_, xe := lay.bucketX(i, len(acc)-1, ser.BucketSeconds)
			line := steps.String()
			s.add(`<path d="M%s %s%sL%s %sZ" class="achfill"/>`, f(x0), f(y(0)), line, f(xe), f(y(0)))
			s.add(`<path d="M%s" class="ach"/>`, line[1:])
		}
		if rate := pan.rate[i]; rate > 0 {
			s.line(lay.x0[i], y(rate), lay.x1[i], y(rate), "cfg")
		}
		// The throttle strip.
		s.rect(lay.x0[i], sy, lay.x1[i]-lay.x0[i], stripH, "stripbg", "")
		for b, n := range pan.throttled[i] {
			if n == 0 {
				continue
			}
			bx0, bx1 := lay.bucketX(i, b, ser.BucketSeconds)
			bh := max(2, stripH*float64(n)/float64(maxThr))
			s.rect(bx0, sy+stripH-bh, max(bx1-bx0, 1.5), bh, "thr", "url(#"+id+"-hatch)")
		}
	}
	// Direct labels: the configured rate where it is first drawn and
	// wherever a run changed it (if there is room), and the throttle
	// strip's scale.
	last := -1.0
	for i := range ser.Segments {
		if rate := pan.rate[i]; rate > 0 && rate != last && (last < 0 || lay.x1[i]-lay.x0[i] > 130) {
			s.text(lay.x0[i]+4, y(rate)-4, "start", "cfglbl", "configured "+short(rate)+" "+unit)
			last = rate
		}
	}
	s.text(left-6, sy+10, "end", "thrlbl", "throttled")
	s.text(left-6, sy+stripH-1, "end", "tick", "max "+num(maxThr))
	// The time axis: each run's start, and round times within it; the
	// time between runs under the breaks.
	ay := sy + stripH + 1
	lastX := -1e9
	for i, seg := range ser.Segments {
		s.line(lay.x0[i], ay, lay.x1[i], ay, "ax")
		for _, t := range timeTicks(seg.Start, seg.End, (lay.x1[i]-lay.x0[i])/95) {
			x := lay.at(i, t)
			if x-lastX < 70 {
				continue
			}
			s.line(x, ay, x, ay+4, "ax")
			s.text(x, ay+15, "middle", "tick", clock(t))
			lastX = x
		}
		if i > 0 {
			gx := (lay.x1[i-1] + lay.x0[i]) / 2
			prev := ser.Segments[i-1]
			s.add(`<path d="M%s %sl4 -8M%s %sl4 -8" class="brk"/>`, f(gx-5), f(ay+4), f(gx), f(ay+4))
			s.text(gx, ay+29, "middle", "gaplbl", "+"+span(max(0, seg.Start.Sub(prev.End))))
		}
	}
	return s.done()
}

// timeTicks are round instants within [from, to], about n of them (at least
// from itself).
func timeTicks(from, to time.Time, n float64) []time.Time {
	out := []time.Time{from}
	d := to.Sub(from)
	if n < 1.5 || d <= 0 {
		return out
	}
	var step time.Duration
	for _, s := range steps {
		step = time.Duration(s) * time.Second
		if float64(d)/float64(step) <= n {
			break
		}
	}
	for t := from.Truncate(step).Add(step); !t.After(to); t = t.Add(step) {
		out = append(out, t)
	}
	return out
}

// timelineChart draws each run as a band on a true time axis, one row per
// run: solid when it recorded its end, cross-hatched and marked ✕ when it
// was killed, dotted and marked ▶ while it runs; its attempts written beside.
func timelineChart(runs []Run) template.HTML {
	const (
		w      = 1000.0
		labelW = 400.0
		right  = 90.0
		rowH   = 26.0
		top    = 8.0
		bottom = 52.0
	)
	h := top + rowH*float64(max(1, len(runs))) + bottom
	var from, to time.Time
	for i, r := range runs {
		end := runUntil(r)
		if i == 0 || r.StartedAt.Before(from) {
			from = r.StartedAt
		}
		if i == 0 || end.After(to) {
			to = end
		}
	}
	var desc []string
	for _, r := range runs {
		desc = append(desc, fmt.Sprintf("run %d %s, %s attempts", r.ID, r.End, num(r.Attempts)))
	}
	s := newSVG("runs", w, h, "Runs of the campaign on a time axis", strings.Join(desc, "; "))
	plotW := w - labelW - right
	total := to.Sub(from).Seconds()
	x := func(t time.Time) float64 {
		if total <= 0 {
			return labelW
		}
		return labelW + plotW*t.Sub(from).Seconds()/total
	}
	for i, r := range runs {
		y := top + rowH*float64(i)
		s.line(labelW, y+rowH, w-right, y+rowH, "grid")
		label := fmt.Sprintf("run %d · %s → ", r.ID, clock(r.StartedAt))
		switch r.End {
		case RunEnded:
			label += clock(*r.EndedAt)
		default:
			label += r.End
		}
		label += " · " + num(r.Attempts) + " attempts"
		s.text(labelW-10, y+rowH/2+4, "end", "lbl", label)
		x0, x1 := x(r.StartedAt), x(runUntil(r))
		bw := max(x1-x0, 3)
		switch r.End {
		case RunEnded:
			s.rect(x0, y+5, bw, rowH-10, "band", "")
		case RunKilled:
			s.rect(x0, y+5, bw, rowH-10, "band-k", "url(#runs-cross)")
			s.text(x0+bw+4, y+rowH/2+5, "start", "mark", "✕ killed")
		case RunRunning:
			s.rect(x0, y+5, bw, rowH-10, "band-r", "url(#runs-dots)")
			s.text(x0+bw+4, y+rowH/2+5, "start", "mark", "▶ running")
		}
	}
	ay := top + rowH*float64(len(runs)) + 2
	s.line(labelW, ay, w-right, ay, "ax")
	lastX := -1e9
	for _, t := range timeTicks(from, to, plotW/110) {
		tx := x(t)
		if tx-lastX < 80 {
			continue
		}
		s.line(tx, ay, tx, ay+5, "ax")
		s.text(tx, ay+18, "middle", "tick", clock(t))
		lastX = tx
	}
	s.text(labelW, ay+32, "start", "unit", "time of day (UTC), "+from.UTC().Format("2006-01-02"))
	s.text(labelW, ay+46, "start", "unit", "solid band: the run ended · cross-hatched ✕: killed, no end recorded · dotted ▶: running now")
	return s.done()
}

// latencyChart draws the latency histogram: a bar per bin, the open bin
// apart and labelled, and p50, p90 and p99 as vertical lines each with its
// own dash style and label.
func latencyChart(l Latency) template.HTML {
	const (
		w      = 1000.0
		left   = 64.0
		right  = 20.0
		top    = 58.0
		plotH  = 180.0
		bottom = 48.0
	)
	h := top + plotH + bottom
	desc := fmt.Sprintf("Histogram of %s attempt latencies; p50 %s ms, p90 %s ms, p99 %s ms, max %s ms.", num(l.Attempts), short(l.P50), short(l.P90), short(l.P99), short(l.Max))
	s := newSVG("latency", w, h, "Latency of the requests", desc)
	bins := l.Histogram
	if len(bins) == 0 {
		s.text(w/2, top+plotH/2, "middle", "lbl", "no attempts recorded")
		return s.done()
	}
	open := bins[len(bins)-1].To == 0 && len(bins) > 1
	regular := len(bins)
	if open {
		regular--
	}
	plotW := w - left - right
	slot := plotW / float64(regular+map[bool]int{true: 2, false: 0}[open])
	var maxN int64
	for _, b := range bins {
		maxN = max(maxN, b.Attempts)
	}
	yTop := niceMax(float64(maxN) * 1.05)
	y := func(v float64) float64 { return top + plotH - plotH*v/yTop }
	for _, t := range ticks(yTop, 4) {
		s.line(left, y(t), w-right, y(t), "grid")
		s.text(left-6, y(t)+4, "end", "tick", short(t))
	}
	s.text(left-6, top-8, "end", "unit", "attempts")
	binW := bins[0].To - bins[0].From
	xOf := func(ms float64) float64 { return left + slot*ms/binW }
	for i, b := range bins[:regular] {
		x := left + slot*float64(i)
		s.rect(x+0.5, y(float64(b.Attempts)), slot-1, y(0)-y(float64(b.Attempts)), "bar", "")
	}
	if open {
		b := bins[len(bins)-1]
		x := left + slot*float64(regular+1)
		s.rect(x, y(float64(b.Attempts)), slot, y(0)-y(float64(b.Attempts)), "bar-open", "url(#latency-hatch)")
		s.text(x+slot/2, y(float64(b.Attempts))-5, "middle", "val", num(b.Attempts))
		s.text(x+slot/2, top+plotH+32, "middle", "tick", "≥ "+short(b.From)+" ms")
	}
	s.line(left, y(0), w-right, y(0), "ax")
	// Round labels along the x axis.
	step := niceStep(binW * float64(regular) / 8)
	for v := 0.0; v <= binW*float64(regular)+1e-9; v += step {
		s.line(xOf(v), y(0), xOf(v), y(0)+5, "ax")
		s.text(xOf(v), y(0)+17, "middle", "tick", short(v))
	}
	s.text(left+plotW/2, top+plotH+40, "middle", "unit", "latency (ms), from the request leaving to its answer")
	// The percentiles: lines to the top, labels staggered.
	for i, p := range []struct {
		name  string
		v     float64
		class string
	}{{"p50", l.P50, "p50"}, {"p90", l.P90, "p90"}, {"p99", l.P99, "p99"}} {
		x := xOf(p.v)
		if p.v >= binW*float64(regular) {
			x = left + slot*float64(regular) + slot/2
		}
		ly := top - 40 + float64(i)*15
		s.line(x, ly-8, x, y(0), p.class)
		s.text(x+4, ly, "start", "plbl", fmt.Sprintf("%s %s ms", p.name, short(p.v)))
	}
	return s.done()
}
