// Package metrics exposes a campaign's runs as Prometheus metrics, named
// by Prometheus's conventions (base units, _total counters, _seconds).
//
// A Metrics is an engine.Observer: the engine tells it of every request
// (sends by sender and outcome, answers by error code, API latency) and
// of the time each request waited for its slot. What the engine and the
// checkpoint know at any moment (rows by state, the pace of each sender,
// retries scheduled) is read when the metrics are collected. They are
// written as the text exposition for node_exporter's textfile collector
// (WriteFile, atomically) or served for scraping (Handler).
//
// Every metric carries the constant labels campaign and channel, so that
// the files of several campaigns can share one textfile directory. Each
// Metrics has its own registry, never the global one, and holds no
// process or Go runtime metrics: in a textfile directory they would clash
// with node_exporter's own.
package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
)

// Metric names, for documentation and tests.
const (
	Sends          = "bulksend_sends_total"
	Answers        = "bulksend_api_answers_total"
	Latency        = "bulksend_api_latency_seconds"
	LimiterWait    = "bulksend_limiter_wait_seconds"
	ConfiguredRate = "bulksend_configured_rate_per_second"
	CurrentRate    = "bulksend_current_rate_per_second"
	Rows           = "bulksend_rows"
	RowsInDoubt    = "bulksend_rows_in_doubt"
	Retries        = "bulksend_retries_scheduled_total"
	LastSuccess    = "bulksend_last_success_timestamp_seconds"
	RunStart       = "bulksend_run_start_timestamp_seconds"
	RunEnd         = "bulksend_run_end_timestamp_seconds"
)

var (
	// latencyBuckets span an API's answers, from a fast 50 ms to a 30 s
	// request timeout (an answer that never came counts at its timeout).
	latencyBuckets = []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
	// waitBuckets span a pacer's spacing (12.5 ms at 80/s, a second at
	// 1/s) up to the pauses of a throttled number and a provider's rests.
	waitBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
)

// maxCodes bounds the code label of bulksend_api_answers_total: codes
// beyond the first maxCodes seen count as "other", so an API that
// answers with arbitrary codes cannot grow the series without bound.
const maxCodes = 50

// rowsEvery is how often collection reads the checkpoint's counts at
// most: scrapes and file writes in between reuse the last read.
const rowsEvery = time.Second

// Engine is what a running engine tells at collection time;
// *engine.Engine satisfies it.
type Engine interface {
	// Rates returns the pace of each sender per second now; +Inf when
	// unlimited.
	Rates() map[string]float64
	// Stats returns the run's counters; Retries is read.
	Stats() engine.Stats
}

var _ Engine = (*engine.Engine)(nil)

// Metrics is a campaign's metrics, with their own registry. Make it with
// New (a run) or FromCheckpoint (what a checkpoint alone says). Its
// methods are safe for concurrent use; the Observer methods never block.
type Metrics struct {
	reg     *prometheus.Registry
	sends   *prometheus.CounterVec   // sender, outcome
	answers *prometheus.CounterVec   // code
	latency *prometheus.HistogramVec // sender
	wait    *prometheus.HistogramVec // sender
	codes   sync.Map                 // int → its label value
	nCodes  atomic.Int32
	state   *collector
}

var _ engine.Observer = (*Metrics)(nil)

// New returns the metrics of a run of campaign campaignID on channel
// ("whatsapp" or "sms"). Attach it as engine.Config.Observer, then say
// what it should read at collection with Configure, CountRows and Watch.
func New(campaignID, channel string) *Metrics {
	m := newMetrics(campaignID, channel)
	labels := m.state.labels
	m.sends = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        Sends,
		Help:        "Requests to the provider by sender and outcome: accepted, or the class of the error (throttled, transient, permanent, pair-limited, in_doubt, never_left, sender_rested, paused, fatal).",
		ConstLabels: labels,
	}, []string{"sender", "outcome"})
	m.answers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        Answers,
		Help:        "Answers of the provider by error code (0: accepted; none: an error without a numeric code, as every AWS SMS error or a proxy's 502; other: beyond the first 50 codes). Requests that got no answer (in doubt, never left) are not counted.",
		ConstLabels: labels,
	}, []string{"code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        Latency,
		Help:        "Time from a request leaving to its answer, or to giving it up (in doubt), by sender. Requests that never left are not counted.",
		Buckets:     latencyBuckets,
		ConstLabels: labels,
	}, []string{"sender"})
	m.wait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        LimiterWait,
		Help:        "Time a request waited for a slot in flight and for its sender's pacer before it left, by sender.",
		Buckets:     waitBuckets,
		ConstLabels: labels,
	}, []string{"sender"})
	m.reg.MustRegister(m.sends, m.answers, m.latency, m.wait)
	m.answers.WithLabelValues(m.code(0)) // accepted: present from the start
	return m
}

// State is what a checkpoint alone says of a campaign.
type State struct {
	Counts      campaign.Counts
	LastSuccess time.Time // when the provider last accepted a row; zero: never
	// The last run's start and end; a zero RunEnd: it is running, or it
	// was killed.
	RunStart, RunEnd time.Time
	// The last run's senders and their configured rate (≤ 0: unlimited).
	Senders []string
	Rate    float64
}

// FromCheckpoint returns the gauges a checkpoint alone gives: rows by
// state and in doubt, the last successful send, the last run's start and
// end, and its configured rate per sender. No counter or histogram: they
// belong to a run.
func FromCheckpoint(campaignID, channel string, s State) *Metrics {
	m := newMetrics(campaignID, channel)
	m.Configure(s.Senders, s.Rate)
	m.state.counts, m.state.haveCounts = s.Counts, true
	m.Succeeded(s.LastSuccess)
	m.Began(s.RunStart)
	m.Ended(s.RunEnd)
	return m
}

func newMetrics(campaignID, channel string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), state: newCollector(prometheus.Labels{"campaign": campaignID, "channel": channel})}
	m.reg.MustRegister(m.state)
	return m
}

// outcome is the label value of an attempt's class: spaces become
// underscores ("in doubt" → "in_doubt").
func outcome(class string) string { return strings.ReplaceAll(class, " ", "_") }

// outcomes are the values of the outcome label that Configure
// initializes: accepted and every class of campaign.Class.
func outcomes() []string {
	out := []string{engine.Accepted}
	for c := campaign.Unanswered; c <= campaign.Paused; c++ {
		out = append(out, outcome(c.String()))
	}
	return out
}

// Configure says which senders the run sends from and their configured
// rate per second (SMS: message parts; ≤ 0: unlimited, +Inf). Each
// sender's series start at zero, so that rates are right from the first
// scrape.
func (m *Metrics) Configure(senders []string, rate float64) {
	if rate <= 0 {
		rate = math.Inf(1)
	}
	m.state.mu.Lock()
	m.state.senders, m.state.rate = append([]string(nil), senders...), rate
	m.state.mu.Unlock()
	if m.sends == nil {
		return // FromCheckpoint: gauges only
	}
	for _, s := range senders {
		for _, o := range outcomes() {
			m.sends.WithLabelValues(s, o)
		}
		m.latency.WithLabelValues(s)
		m.wait.WithLabelValues(s)
	}
}

// CountRows says how to read the checkpoint's rows by state: fn is called
// when the metrics are collected, at most once a second.
func (m *Metrics) CountRows(fn func(context.Context) (campaign.Counts, error)) {
	m.state.rowsMu.Lock()
	m.state.countRows, m.state.countsAt = fn, time.Time{}
	m.state.rowsMu.Unlock()
}

// Watch says which engine to read the current pace of each sender and the
// retries scheduled from, when the metrics are collected.
func (m *Metrics) Watch(e Engine) {
	m.state.mu.Lock()
	m.state.engine = e
	m.state.mu.Unlock()
}

// Began records that a run began at t; a zero t changes nothing.
func (m *Metrics) Began(t time.Time) { storeTime(&m.state.runStart, t) }

// Ended records that a run ended at t; a zero t changes nothing. The
// next collection reads the rows again, however recent the last read:
// the metrics written at a run's end hold its final counts.
func (m *Metrics) Ended(t time.Time) {
	storeTime(&m.state.runEnd, t)
	m.state.rowsMu.Lock()
	m.state.countsAt = time.Time{}
	m.state.rowsMu.Unlock()
}

// Succeeded records that the provider accepted a message at t, if later
// than the last one recorded (a run seeds it from the checkpoint).
func (m *Metrics) Succeeded(t time.Time) {
	if t.IsZero() {
		return
	}
	n := t.UnixNano()
	for {
		old := m.state.lastSuccess.Load()
		if old >= n || m.state.lastSuccess.CompareAndSwap(old, n) {
			return
		}
	}
}

func storeTime(v *atomic.Int64, t time.Time) {
	if !t.IsZero() {
		v.Store(t.UnixNano())
	}
}

// Attempted implements engine.Observer.
func (m *Metrics) Attempted(a engine.Attempt) {
	m.sends.WithLabelValues(a.Sender, outcome(a.Class)).Inc()
	if a.Class == campaign.NeverLeft.String() {
		return // no request reached the provider
	}
	m.latency.WithLabelValues(a.Sender).Observe(a.Latency.Seconds())
	if a.Class == campaign.Unanswered.String() {
		return // no answer
	}
	code := noCode
	if a.Class == engine.Accepted || a.Code != 0 {
		code = m.code(a.Code)
	}
	m.answers.WithLabelValues(code).Inc()
	if a.Class == engine.Accepted {
		m.Succeeded(a.At.Add(a.Latency))
	}
}

// Waited implements engine.Observer.
func (m *Metrics) Waited(sender string, d time.Duration) {
	m.wait.WithLabelValues(sender).Observe(d.Seconds())
}

// noCode is the code label of an error answer without a numeric code
// (AWS names its errors; a proxy's 502 has no body to read one from),
// kept apart from the accepted answers' "0".
const noCode = "none"

// code is the label value of an error code: its number, "other" beyond
// the first maxCodes.
func (m *Metrics) code(c int) string {
	if v, ok := m.codes.Load(c); ok {
		return v.(string)
	}
	label := strconv.Itoa(c)
	if m.nCodes.Add(1) > maxCodes {
		label = "other"
	}
	v, _ := m.codes.LoadOrStore(c, label)
	return v.(string)
}

// Handler serves the metrics for scraping (/metrics). A metric that cannot
// be collected (the checkpoint cannot be read) is left out, the rest
// served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Write writes the metrics in the text exposition format.
func (m *Metrics) Write(w io.Writer) error {
	mfs, err := m.reg.Gather()
	if err != nil {
		return fmt.Errorf("collect metrics: %w", err)
	}
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
			return fmt.Errorf("write metrics: %w", err)
		}
	}
	return nil
}

// WriteFile writes the metrics in the text exposition format to path,
// atomically: to a temporary file in the same directory, synced, made
// readable by all (0644, node_exporter may run as another user) and
// renamed over path. A reader sees the previous file or the new one,
// never a part; a failed write leaves the previous file as it was. The
// temporary file's name does not end in .prom, so the textfile collector
// never reads it.
func (m *Metrics) WriteFile(path string) error {
	var buf bytes.Buffer
	if err := m.Write(&buf); err != nil {
		return err
	}
	return writeAtomic(path, buf.Bytes())
}

func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write metrics file: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write metrics file: %w", err)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("write metrics file: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write metrics file: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write metrics file: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write metrics file: %w", err)
	}
	// The rename is durable once the directory is synced; a failure here
	// leaves a complete file in place, so it is not an error of the write.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// CheckDir reports whether a metrics file can be written at path: it
// makes and removes a temporary file in path's directory, as WriteFile
// would.
func CheckDir(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the temporary file's name says nothing
		}
		return fmt.Errorf("directory %s cannot be written: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("directory %s: remove %s: %w", dir, name, err)
	}
	return nil
}
