package metrics

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bulksend/bulksend/internal/campaign"
)

// collector makes the metrics that are read when they are collected
// rather than counted as they happen: rows by state, rates, retries and
// the timestamps.
type collector struct {
	labels prometheus.Labels
	now    func() time.Time // time.Now; tests set it

	rowsD, inDoubtD, configuredD, currentD, retriesD, lastSuccessD, runStartD, runEndD *prometheus.Desc

	mu      sync.Mutex
	senders []string
	rate    float64 // configured; +Inf unlimited
	engine  Engine  // nil: not watching a run

	rowsMu     sync.Mutex // held while the checkpoint is read: one read at a time
	countRows  func(context.Context) (campaign.Counts, error)
	counts     campaign.Counts
	haveCounts bool
	countsAt   time.Time // of the last successful read; zero: read at the next collection

	lastSuccess, runStart, runEnd atomic.Int64 // Unix ns; 0: unknown
}

func newCollector(labels prometheus.Labels) *collector {
	d := func(name, help string, variable ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, variable, labels)
	}
	return &collector{
		labels:       labels,
		now:          time.Now,
		rowsD:        d(Rows, "Rows of the campaign by state (pending, sending, in_doubt, sent, delivered, read, failed, skipped), as the checkpoint holds them.", "state"),
		inDoubtD:     d(RowsInDoubt, "Rows whose request may have reached the provider with no answer: settle them with bulksend reconcile."),
		configuredD:  d(ConfiguredRate, "The rate a run was given per sender, per second (SMS: message parts); +Inf: unlimited.", "sender"),
		currentD:     d(CurrentRate, "The pace each sender is sent at now, per second: the configured rate less 2% headroom, lowered while the provider throttles; +Inf: unlimited.", "sender"),
		retriesD:     d(Retries, "Retries this run scheduled: transient errors, pair limits, throttled SMS."),
		lastSuccessD: d(LastSuccess, "When the provider last accepted a message of the campaign, in seconds since the Unix epoch."),
		runStartD:    d(RunStart, "When the last run began, in seconds since the Unix epoch."),
		runEndD:      d(RunEnd, "When the last run ended, in seconds since the Unix epoch; absent while it runs, or when it was killed."),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.rowsD, c.inDoubtD, c.configuredD, c.currentD, c.retriesD, c.lastSuccessD, c.runStartD, c.runEndD} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. Only what is known is
// collected: no rows before they could be read, no current rate without
// a run to watch, no end while a run runs.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.collectRows(ch)
	c.mu.Lock()
	senders, rate, eng := c.senders, c.rate, c.engine
	c.mu.Unlock()
	for _, s := range senders {
		ch <- prometheus.MustNewConstMetric(c.configuredD, prometheus.GaugeValue, rate, s)
	}
	if eng != nil {
		for s, r := range eng.Rates() {
			ch <- prometheus.MustNewConstMetric(c.currentD, prometheus.GaugeValue, r, s)
		}
		ch <- prometheus.MustNewConstMetric(c.retriesD, prometheus.CounterValue, float64(eng.Stats().Retries))
	}
	for _, t := range []struct {
		d *prometheus.Desc
		v *atomic.Int64
	}{{c.lastSuccessD, &c.lastSuccess}, {c.runStartD, &c.runStart}, {c.runEndD, &c.runEnd}} {
		if ns := t.v.Load(); ns != 0 {
			ch <- prometheus.MustNewConstMetric(t.d, prometheus.GaugeValue, float64(ns)/1e9)
		}
	}
}

// collectRows collects the rows by state, read from the checkpoint at
// most every rowsEvery. A failed read makes the rows an invalid metric:
// the exposition fails (a file is not written, a scrape serves the rest).
func (c *collector) collectRows(ch chan<- prometheus.Metric) {
	c.rowsMu.Lock()
	defer c.rowsMu.Unlock()
	if now := c.now(); c.countRows != nil && (c.countsAt.IsZero() || now.Sub(c.countsAt) >= rowsEvery) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		counts, err := c.countRows(ctx)
		cancel()
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.rowsD, err)
			return
		}
		c.counts, c.haveCounts, c.countsAt = counts, true, now
	}
	if !c.haveCounts {
		return
	}
	for _, st := range campaign.Statuses {
		ch <- prometheus.MustNewConstMetric(c.rowsD, prometheus.GaugeValue, float64(count(c.counts, st)), string(st))
	}
	ch <- prometheus.MustNewConstMetric(c.inDoubtD, prometheus.GaugeValue, float64(c.counts.InDoubt))
}

// count is the number of rows of n in status s.
func count(n campaign.Counts, s campaign.Status) int64 {
	switch s {
	case campaign.Pending:
		return n.Pending
	case campaign.Sending:
		return n.Sending
	case campaign.InDoubt:
		return n.InDoubt
	case campaign.Sent:
		return n.Sent
	case campaign.Delivered:
		return n.Delivered
	case campaign.Read:
		return n.Read
	case campaign.Failed:
		return n.Failed
	case campaign.Skipped:
		return n.Skipped
	}
	return 0
}
