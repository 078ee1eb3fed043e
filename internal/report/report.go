// Package report is a campaign's report: Gather reads the figures from a
// checkpoint into a Report (what `bulksend report --json` prints), and
// Render draws it as one self-contained HTML page (inline CSS, charts drawn
// here as inline SVG, no script, nothing fetched), readable printed and
// without colour: every series is told apart by a pattern, a marker or a
// dash style and labelled where it is drawn.
//
// It is an adapter beside cli: it reads the SQLite checkpoint through the
// store and writes HTML. Memory does not grow with the campaign: attempts
// are streamed into fixed buckets, and quantiles are computed by SQLite.
package report

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/store"
)

// Report is a campaign's figures. Its JSON is what `bulksend report
// --json` prints; fields are only ever added, never renamed. Times are
// UTC; durations are in the unit their name says.
type Report struct {
	GeneratedAt time.Time        `json:"generated_at"`
	Campaign    Campaign         `json:"campaign"`
	Counts      campaign.Counts  `json:"counts"`
	Buckets     campaign.Buckets `json:"buckets"`
	Runs        []Run            `json:"runs"`
	Senders     []Sender         `json:"senders"`
	// Rate is each sender's achieved rate over the runs' time.
	Rate     Series   `json:"rate"`
	Attempts Attempts `json:"attempts"`
	// Errors counts the rows by status and last error (failed, retrying,
	// in doubt), most rows first, with the title the provider gave.
	Errors          []store.ErrorCount `json:"errors"`
	Latency         Latency            `json:"latency"`
	Funnel          store.Funnel       `json:"funnel"`
	TimeToDelivered Quantiles          `json:"time_to_delivered"`
	TimeToRead      Quantiles          `json:"time_to_read"`
	Skipped         []Skip             `json:"skipped"`
	FailedByReason  map[string]int64   `json:"failed_by_reason"`
	Pricing         Pricing            `json:"pricing"`
	Parts           *store.Parts       `json:"parts,omitempty"` // SMS only
	// Schedule is when the campaign may send and what waits (issue 25);
	// nil when it has no schedule and nothing waits.
	Schedule *Schedule `json:"schedule,omitempty"`
}

// Schedule is the campaign's schedule, its waiting rows, and the days its
// runs span.
type Schedule struct {
	Window     []string   `json:"window,omitempty"`
	WindowTZ   string     `json:"window_tz,omitempty"`
	StartAt    *time.Time `json:"start_at,omitempty"`
	EndAt      *time.Time `json:"end_at,omitempty"`
	DailyLimit string     `json:"daily_limit,omitempty"`
	// Waiting rows by what they wait for (pending in the counts), and the
	// earliest a waiting row may be sent.
	WaitingWindow int64      `json:"waiting_window"`
	WaitingSendAt int64      `json:"waiting_send_at"`
	WaitingBudget int64      `json:"waiting_budget"`
	WaitingStart  int64      `json:"waiting_start"`
	NextSendAt    *time.Time `json:"next_send_at"`
	// Days is how many calendar days (UTC) the runs span, first start to
	// last end.
	Days int `json:"days"`
}

// schedule reads the schedule's part of the report.
func schedule(ctx context.Context, st *store.Store, s store.Settings, runs []Run, now time.Time) (*Schedule, error) {
	w, err := st.Waiting(ctx, now)
	if err != nil {
		return nil, err
	}
	if len(s.Window) == 0 && s.StartAt.IsZero() && s.EndAt.IsZero() && s.DailyLimit == "" && w.Total() == w.Retry {
		return nil, nil
	}
	sc := &Schedule{Window: s.Window, WindowTZ: s.WindowTZ, DailyLimit: s.DailyLimit,
		WaitingWindow: w.Window, WaitingSendAt: w.SendAt, WaitingBudget: w.Budget, WaitingStart: w.Start}
	utcPtr := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		t = t.UTC()
		return &t
	}
	sc.StartAt, sc.EndAt, sc.NextSendAt = utcPtr(s.StartAt), utcPtr(s.EndAt), utcPtr(w.Next)
	if len(runs) > 0 {
		last := runs[len(runs)-1].StartedAt
		if e := runs[len(runs)-1].EndedAt; e != nil {
			last = *e
		}
		sc.Days = DaysSpanned(runs[0].StartedAt, last)
	}
	return sc, nil
}

// DaysSpanned is how many calendar days (UTC) the runs from first to last
// touch: 1 for runs within one day.
func DaysSpanned(first, last time.Time) int {
	day := func(t time.Time) time.Time {
		t = t.UTC()
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	}
	return int(day(last).Sub(day(first))/(24*time.Hour)) + 1
}

// Campaign is what the campaign is: the report's header.
type Campaign struct {
	ID       string           `json:"id"`
	Channel  campaign.Channel `json:"channel"`
	Template string           `json:"template,omitempty"` // WhatsApp
	Lang     string           `json:"lang,omitempty"`
	Category string           `json:"category,omitempty"`
	API      string           `json:"api,omitempty"`
	Text     string           `json:"text,omitempty"` // SMS: the body with its {{column}} placeholders
	Senders  []string         `json:"senders"`        // every sender number that has rows
	Rows     int64            `json:"rows"`
	Runs     int              `json:"runs"`
	// Rate is the configured rate per sender of the last run (0: no
	// limit), in RateUnit.
	Rate      float64   `json:"rate"`
	RateUnit  string    `json:"rate_unit"`
	CreatedAt time.Time `json:"created_at"`
	// Running names the process sending now, "" when none is.
	Running string `json:"running,omitempty"`
}

// Run ends.
const (
	RunEnded   = "ended"   // it recorded its end
	RunKilled  = "killed"  // it never recorded its end, and no process holds the checkpoint
	RunRunning = "running" // it is sending now
)

// Run is one run of the campaign: the first, or a resume.
type Run struct {
	ID        int64      `json:"id"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"` // nil: killed or running
	// End is RunEnded, RunKilled or RunRunning.
	End     string   `json:"end"`
	Version string   `json:"version"`
	PID     int      `json:"pid"`
	Rate    float64  `json:"rate"` // per sender; 0: no limit
	Senders []string `json:"senders"`
	// What its requests were answered.
	Attempts  int64 `json:"attempts"`
	Accepted  int64 `json:"accepted"`
	Throttled int64 `json:"throttled"`
	Other     int64 `json:"other_errors"`
	// When its first request left and its last answer came; nil without
	// attempts.
	FirstAttempt *time.Time `json:"first_attempt,omitempty"`
	LastAnswer   *time.Time `json:"last_answer,omitempty"`
}

// Sender is one sender number's figures.
type Sender struct {
	Sender    string          `json:"from"`
	Counts    campaign.Counts `json:"counts"`
	Attempts  int64           `json:"attempts"`
	Accepted  int64           `json:"accepted"`
	Throttled int64           `json:"throttled"`
	// MeanRate is what it achieved, accepted (SMS: their parts) per second
	// over the time of the runs it sent in; PeakRate its busiest bucket.
	MeanRate float64 `json:"mean_rate"`
	PeakRate float64 `json:"peak_rate"`
}

// Series is each sender's achieved rate over time. Only the runs' time is
// shown: one segment per run, each cut into buckets of BucketSeconds
// from its start (its last bucket may be shorter).
type Series struct {
	BucketSeconds float64   `json:"bucket_seconds"`
	Unit          string    `json:"unit"` // "messages/s" or "parts/s"
	Segments      []Segment `json:"segments"`
}

// Segment is one run's stretch of time: from its start to its end (or its
// last answer, for a run that never recorded its end).
type Segment struct {
	Run   int64     `json:"run"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Rate is the run's configured rate per sender (0: no limit).
	Rate    float64        `json:"configured_rate"`
	Senders []SenderSeries `json:"senders"` // those with attempts in it, by number
}

// SenderSeries is one sender's attempts in a segment, per bucket.
type SenderSeries struct {
	Sender string `json:"from"`
	// Accepted counts the accepted attempts (SMS: their parts), Throttled
	// the attempts answered throttled, in each bucket.
	Accepted  []int64 `json:"accepted"`
	Throttled []int64 `json:"throttled"`
}

// Attempts counts every request of every run by how it was answered.
type Attempts struct {
	Total   int64        `json:"total"`
	ByClass []ClassCount `json:"by_class"` // most first
	// ByCode counts the answers that carried an error code, and those
	// that named an error without a code (AWS's, Code 0), most first.
	ByCode []CodeCount `json:"by_code"`
}

// ClassCount is how many attempts were answered in one class:
// "accepted" or a campaign.Class ("throttled", "transient", "in doubt"…).
type ClassCount struct {
	Class    string `json:"class"`
	Attempts int64  `json:"attempts"`
}

// CodeCount is how many attempts were answered with one error code. The
// title is the one rows hold for it ("" when no row keeps it: a throttled
// row that was sent later forgets its code). An error without a code
// (AWS names its errors, "ThrottlingException") has Code 0 and its name
// as Error and as Title.
type CodeCount struct {
	Code     int    `json:"code"`
	Error    string `json:"error,omitempty"`
	Class    string `json:"class"`
	Title    string `json:"title"`
	Attempts int64  `json:"attempts"`
}

// Latency is the distribution of the attempts' latencies.
type Latency struct {
	Attempts int64   `json:"attempts"`
	P50      float64 `json:"p50_ms"`
	P90      float64 `json:"p90_ms"`
	P99      float64 `json:"p99_ms"`
	Max      float64 `json:"max_ms"`
	// Histogram's bins are equal but the last, which holds every latency
	// from its From on (its To is 0).
	Histogram []Bin `json:"histogram"`
}

// Bin is one bar of the latency histogram: [From, To) milliseconds.
type Bin struct {
	From     float64 `json:"from_ms"`
	To       float64 `json:"to_ms,omitempty"`
	Attempts int64   `json:"attempts"`
}

// Quantiles are a duration's p50, p90 and p99 over N rows.
type Quantiles struct {
	N   int64   `json:"n"`
	P50 float64 `json:"p50_seconds"`
	P90 float64 `json:"p90_seconds"`
	P99 float64 `json:"p99_seconds"`
}

// Skip is one kind of skipped row, with the first such row's line and
// reason (what to look at to fix the file; its phone is left out).
type Skip struct {
	Kind   campaign.SkipKind `json:"kind"`
	Rows   int64             `json:"rows"`
	Line   int64             `json:"example_line"`
	Reason string            `json:"example_reason"`
}

// Pricing is what status webhooks said of billing.
type Pricing struct {
	Categories []Category `json:"categories"` // most rows first
	Billable   int64      `json:"billable"`   // delivered rows a status said billable
	Held       int64      `json:"held"`       // sent rows WhatsApp holds back
	HeldAtSend int64      `json:"held_at_send"`
}

// Category is how many rows a status webhook gave a pricing category.
type Category struct {
	Category string `json:"category"`
	Rows     int64  `json:"rows"`
}

// maxBuckets is about how many buckets the rate series has in all: a
// point every 4 px of a 1,000 px chart.
const maxBuckets = 240

// latencyBins is about how many bins the latency histogram has below
// its overflow bin.
const latencyBins = 40

// Gather reads the report of the campaign in st, as at instant now. It
// reads while a run sends (SQLite's WAL), and streams the attempts once.
// Every figure comes from one snapshot of the checkpoint (one read-only
// transaction, store.View): counts, funnel, quantiles and attempts agree
// with each other whatever the run records while they are read.
func Gather(ctx context.Context, st *store.Store, now time.Time) (r *Report, err error) {
	err = st.View(ctx, func(v *store.Store) error {
		r, err = gather(ctx, v, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// afterBreakdown, when a test sets it, is called by gather once it has
// read the breakdown, before the other figures: where a write by a run
// would land between two of the queries.
var afterBreakdown func()

// gather reads the report from st, a view of the checkpoint.
func gather(ctx context.Context, st *store.Store, now time.Time) (*Report, error) {
	settings, err := st.Settings(ctx)
	if err != nil {
		return nil, err
	}
	channel, err := campaign.ParseChannel(settings.Channel)
	if err != nil {
		return nil, err
	}
	br, err := st.Breakdown(ctx)
	if err != nil {
		return nil, err
	}
	if afterBreakdown != nil {
		afterBreakdown()
	}
	r := &Report{
		GeneratedAt: now.UTC(),
		Campaign: Campaign{
			ID: settings.CampaignID, Channel: channel, Template: settings.Template, Lang: settings.Lang,
			Category: settings.Category, API: cmp.Or(settings.API, "messages"), Rows: br.Counts.Total,
			Rate: settings.Rate, RateUnit: "messages/s", CreatedAt: settings.CreatedAt.UTC(),
		},
		Counts:         br.Counts,
		Buckets:        campaign.BucketsOf(br.Counts, br.FailedByReason[campaign.FailThrottleExhausted]),
		FailedByReason: br.FailedByReason,
		Pricing:        Pricing{Billable: br.Billable, Held: br.Held, HeldAtSend: br.WasHeld, Categories: []Category{}},
		Skipped:        []Skip{},
	}
	if channel == campaign.SMS {
		r.Campaign.Template, r.Campaign.Lang, r.Campaign.API = "", "", ""
		r.Campaign.Text, r.Campaign.RateUnit = settings.Text, "parts/s"
		p, err := st.Parts(ctx)
		if err != nil {
			return nil, err
		}
		r.Parts = &p
	}
	for _, s := range br.BySender {
		r.Campaign.Senders = append(r.Campaign.Senders, s.Sender)
	}
	for kind, n := range br.Skipped {
		ex := br.SkipExamples[kind]
		r.Skipped = append(r.Skipped, Skip{Kind: kind, Rows: n, Line: ex.Line, Reason: ex.Reason})
	}
	slices.SortFunc(r.Skipped, func(a, b Skip) int { return cmp.Or(cmp.Compare(b.Rows, a.Rows), cmp.Compare(a.Kind, b.Kind)) })
	for c, n := range br.ByPricingCategory {
		r.Pricing.Categories = append(r.Pricing.Categories, Category{Category: c, Rows: n})
	}
	slices.SortFunc(r.Pricing.Categories, func(a, b Category) int {
		return cmp.Or(cmp.Compare(b.Rows, a.Rows), cmp.Compare(a.Category, b.Category))
	})
	if r.Errors, err = st.ErrorCounts(ctx); err != nil {
		return nil, err
	}
	if r.Errors == nil {
		r.Errors = []store.ErrorCount{}
	}
	if r.Funnel, err = st.Funnel(ctx); err != nil {
		return nil, err
	}
	if r.TimeToDelivered, err = quantiles(ctx, st, store.TimeToDelivered); err != nil {
		return nil, err
	}
	if r.TimeToRead, err = quantiles(ctx, st, store.TimeToRead); err != nil {
		return nil, err
	}
	if err := r.gatherAttempts(ctx, st, br.BySender); err != nil {
		return nil, err
	}
	if r.Schedule, err = schedule(ctx, st, settings, r.Runs, now); err != nil {
		return nil, err
	}
	return r, nil
}

func quantiles(ctx context.Context, st *store.Store, m store.Measure) (Quantiles, error) {
	n, q, err := st.Quantiles(ctx, m, 0.5, 0.9, 0.99)
	if err != nil {
		return Quantiles{}, err
	}
	return Quantiles{N: n, P50: q[0].Seconds(), P90: q[1].Seconds(), P99: q[2].Seconds()}, nil
}

// gatherAttempts reads the runs and streams the attempts into the runs'
// and senders' counts, the rate series and the latency histogram.
func (r *Report) gatherAttempts(ctx context.Context, st *store.Store, bySender []store.SenderCount) error {
	runs, err := st.Runs(ctx)
	if err != nil {
		return err
	}
	spans, err := st.RunSpans(ctx)
	if err != nil {
		return err
	}
	holder, running := store.Holder(st.Path())
	if running {
		r.Campaign.Running = holder
	}
	r.Runs, r.Rate = timeline(runs, spans, holder)
	r.Campaign.Runs = len(runs)
	if len(runs) > 0 {
		r.Campaign.Rate = runs[len(runs)-1].Rate
	}
	r.Rate.Unit = r.Campaign.RateUnit

	n, lq, err := st.Quantiles(ctx, store.AttemptLatency, 0.5, 0.9, 0.99, 1)
	if err != nil {
		return err
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	r.Latency = Latency{Attempts: n, P50: ms(lq[0]), P90: ms(lq[1]), P99: ms(lq[2]), Max: ms(lq[3])}
	hist := newHistogram(lq[2], lq[3], latencyBins)

	acc := newAccumulator(r.Runs, &r.Rate)
	if err := st.ScanAttempts(ctx, r.Campaign.Channel == campaign.SMS, func(a store.AttemptRow) error {
		acc.add(a)
		hist.add(a.Latency)
		return nil
	}); err != nil {
		return err
	}
	r.Latency.Histogram = []Bin{}
	if n > 0 {
		r.Latency.Histogram = hist.bins()
	}
	titles := map[int]string{}
	for _, e := range r.Errors {
		if e.Title != "" && e.Code != 0 {
			titles[e.Code] = cmp.Or(titles[e.Code], e.Title)
		}
	}
	r.Attempts = acc.attempts(titles)
	r.Senders = acc.senders(bySender, &r.Rate)
	// Lists are empty, never null, in the JSON: a script ranges over them.
	if r.Runs == nil {
		r.Runs = []Run{}
	}
	if r.Rate.Segments == nil {
		r.Rate.Segments = []Segment{}
	}
	if r.Senders == nil {
		r.Senders = []Sender{}
	}
	if r.Campaign.Senders == nil {
		r.Campaign.Senders = []string{}
	}
	return nil
}

// runEnd says how a run ended: it recorded its end, it is sending now
// (the process holding the checkpoint is the run's), or it was killed.
func runEnd(run store.Run, holder string) string {
	switch {
	case !run.EndedAt.IsZero():
		return RunEnded
	case holder != "" && strings.HasPrefix(holder, fmt.Sprintf("pid %d ", run.PID)):
		return RunRunning
	}
	return RunKilled
}

// timeline makes the runs of the report and the segments of the rate
// series: one per run, and one for attempts outside any recorded run.
// Buckets are allocated later, by the accumulator, for the senders that
// send in each.
func timeline(runs []store.Run, spans []store.RunSpan, holder string) ([]Run, Series) {
	spanOf := map[int64]store.RunSpan{}
	for _, s := range spans {
		spanOf[s.Run] = s
	}
	recorded := map[int64]bool{}
	var out []Run
	for _, run := range runs {
		r := Run{ID: run.ID, StartedAt: run.StartedAt.UTC(), End: runEnd(run, holder), Version: run.Version, PID: run.PID,
			Rate: run.Rate, Senders: slices.Clone(run.Senders)}
		if !run.EndedAt.IsZero() {
			t := run.EndedAt.UTC()
			r.EndedAt = &t
		}
		recorded[run.ID] = true
		out = append(out, r)
	}
	// Attempts recorded under no run (written before BeginRun, or of a
	// run whose record is gone) get a run of their own, by their times.
	for _, s := range spans {
		if !recorded[s.Run] {
			end := s.Answered.UTC()
			out = append(out, Run{ID: s.Run, StartedAt: s.First.UTC(), EndedAt: &end, End: RunEnded, Senders: []string{}})
		}
	}
	for i := range out {
		if s, ok := spanOf[out[i].ID]; ok {
			first, last := s.First.UTC(), s.Answered.UTC()
			out[i].FirstAttempt, out[i].LastAnswer = &first, &last
		}
	}
	slices.SortStableFunc(out, func(a, b Run) int { return a.StartedAt.Compare(b.StartedAt) })

	var ser Series
	var total time.Duration
	for _, run := range out {
		seg := Segment{Run: run.ID, Start: run.StartedAt, End: runUntil(run), Rate: run.Rate, Senders: []SenderSeries{}}
		total += seg.End.Sub(seg.Start)
		ser.Segments = append(ser.Segments, seg)
	}
	ser.BucketSeconds = bucketWidth(total, maxBuckets).Seconds()
	return out, ser
}

// runUntil is when a run's segment ends: its recorded end, or its last
// answer if later (or if it recorded none); its start if it has neither.
func runUntil(r Run) time.Time {
	end := r.StartedAt
	if r.EndedAt != nil && r.EndedAt.After(end) {
		end = *r.EndedAt
	}
	if r.LastAnswer != nil && r.LastAnswer.After(end) {
		end = *r.LastAnswer
	}
	return end
}

// steps are the bucket widths the rate series may use, in seconds.
var steps = []int{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400}

// bucketWidth is the narrowest of steps that cuts total into at most about
// n buckets.
func bucketWidth(total time.Duration, n int) time.Duration {
	for _, s := range steps {
		if total <= time.Duration(s)*time.Second*time.Duration(n) {
			return time.Duration(s) * time.Second
		}
	}
	return time.Duration(steps[len(steps)-1]) * time.Second
}

// classOrder is the order classes are listed in when counts tie.
var classOrder = []string{engine.Accepted, campaign.Throttled.String(), campaign.Transient.String(), campaign.Permanent.String(),
	campaign.Unanswered.String(), campaign.NeverLeft.String(), campaign.PairLimited.String(), campaign.SenderRested.String(),
	campaign.Paused.String(), campaign.Fatal.String()}
