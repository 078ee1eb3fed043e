package cli

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/listen"
	"github.com/bulksend/bulksend/internal/metrics"
	"github.com/bulksend/bulksend/internal/store"
)

// checkMetricsFlags refuses metrics flags that cannot work together.
func (o *runOptions) checkMetricsFlags() error {
	if o.metricsFile == "" && o.metricsAddr == "" {
		if o.changed("metrics-interval") {
			return usagef("", "--metrics-interval goes with --metrics-file")
		}
		return nil
	}
	if o.dryRun {
		return usagef("drop --metrics-file and --metrics-addr from the dry run", "--metrics-file and --metrics-addr watch a run that sends; a dry run sends nothing")
	}
	if o.changed("metrics-interval") && o.metricsFile == "" {
		return usagef("", "--metrics-interval goes with --metrics-file")
	}
	if o.metricsEvery <= 0 {
		return usagef("", "invalid --metrics-interval %v", o.metricsEvery)
	}
	return nil
}

// metricsOutput is where a run's metrics go: a file rewritten every few
// seconds and at exit (--metrics-file) and an endpoint served while the
// run runs (--metrics-addr). Both are checked by openMetrics before
// anything is sent; after that, a failure to write or serve is logged
// once and never stops the campaign. A nil *metricsOutput does nothing.
type metricsOutput struct {
	file  string
	every time.Duration
	log   *slog.Logger

	srv     *listen.Server // nil without --metrics-addr
	handler atomic.Pointer[http.Handler]
	served  chan struct{} // closed when the server stops serving

	m         *metrics.Metrics
	stopWrite chan struct{}
	written   chan struct{} // closed when the writer is done
	fileWarn  sync.Once
	serveWarn sync.Once
	closeOnce sync.Once
}

// openMetrics checks that the metrics file can be written (by making and
// removing a temporary file beside it) and listens on the metrics
// address, before anything is sent: either failing is a usage error that
// names it. The endpoint answers 503 until the run starts sending.
func (o *runOptions) openMetrics() (*metricsOutput, error) {
	if o.metricsFile == "" && o.metricsAddr == "" {
		return nil, nil
	}
	mo := &metricsOutput{file: o.metricsFile, every: o.metricsEvery, log: o.log}
	if mo.file != "" {
		if err := metrics.CheckDir(mo.file); err != nil {
			return nil, usagef("point --metrics-file at a directory this user can write, e.g. node_exporter's --collector.textfile.directory; nothing was sent",
				"--metrics-file %s: %w", mo.file, err)
		}
		if !strings.HasSuffix(mo.file, ".prom") {
			o.log.Warn("node_exporter's textfile collector reads only files named *.prom", "metrics_file", mo.file)
		}
	}
	if o.metricsAddr != "" {
		l, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			return nil, usagef("choose a free port (another bulksend may be running there), or drop --metrics-addr; nothing was sent",
				"--metrics-addr %s: %w", o.metricsAddr, err)
		}
		mo.serve(l, listen.Metrics)
		o.log.Info("serving metrics", "url", "http://"+l.Addr().String()+"/metrics")
	}
	return mo, nil
}

// serve serves the endpoint on l within lim (listen.Metrics; a test's
// own, shorter).
func (mo *metricsOutput) serve(l net.Listener, lim listen.Limits) {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if h := mo.handler.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.Error(w, "bulksend: the run has not started sending yet", http.StatusServiceUnavailable)
	})
	mo.srv = listen.New(l, mux, lim, mo.log.With("listener", "metrics"))
	mo.served = make(chan struct{})
	go func() {
		defer close(mo.served)
		if err := mo.srv.Serve(); err != nil {
			mo.serveWarn.Do(func() {
				mo.log.Warn("metrics endpoint stopped: the campaign goes on", "err", err)
			})
		}
	}()
}

// attach makes the run's metrics and attaches them to cfg as its
// observer: what each request does, the checkpoint's rows at collection
// (read beside the run's connection), the senders' configured rate, and
// the last success the checkpoint recorded.
func (mo *metricsOutput) attach(ctx context.Context, st *store.Store, cfg *engine.Config, channel campaign.Channel) {
	if mo == nil {
		return
	}
	m := metrics.New(cfg.CampaignID, string(channel))
	m.Configure(cfg.Senders, cfg.Rate)
	// Counting rows scans them all (a second on millions): on a view,
	// beside the connection the run claims and records on.
	m.CountRows(func(ctx context.Context) (c campaign.Counts, err error) {
		err = st.View(ctx, func(v *store.Store) error {
			c, err = v.Counts(ctx)
			return err
		})
		return c, err
	})
	if t, ok, err := st.LastSent(ctx); err != nil {
		mo.log.Warn("metrics: the last successful send could not be read", "err", err)
	} else if ok {
		m.Succeeded(t)
	}
	cfg.Observer = m
	mo.m = m
}

// start watches eng, which began at started: the endpoint serves the
// metrics, and the file is written now and every interval.
func (mo *metricsOutput) start(eng *engine.Engine, started time.Time) {
	if mo == nil || mo.m == nil {
		return
	}
	mo.m.Watch(eng)
	mo.m.Began(started)
	h := mo.m.Handler()
	mo.handler.Store(&h)
	if mo.file == "" {
		return
	}
	mo.stopWrite, mo.written = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(mo.written)
		t := time.NewTicker(mo.every)
		defer t.Stop()
		for {
			mo.write()
			select {
			case <-mo.stopWrite:
				return
			case <-t.C:
			}
		}
	}()
	mo.log.Info("writing metrics", "file", mo.file, "every", mo.every)
}

// write writes the metrics file; the first failure is logged.
func (mo *metricsOutput) write() {
	if err := mo.m.WriteFile(mo.file); err != nil {
		mo.fileWarn.Do(func() {
			mo.log.Warn("metrics file not written: the campaign goes on (further failures are not logged)", "file", mo.file, "err", err)
		})
	}
}

// finish records the end of the run, writes the metrics file a last time
// and stops serving.
func (mo *metricsOutput) finish() {
	if mo == nil || mo.m == nil {
		mo.close()
		return
	}
	mo.m.Ended(time.Now())
	if mo.written != nil {
		close(mo.stopWrite)
		<-mo.written
	}
	if mo.file != "" {
		mo.write()
	}
	mo.close()
}

// close stops serving; it may be called more than once.
func (mo *metricsOutput) close() {
	if mo == nil || mo.srv == nil {
		return
	}
	mo.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if mo.srv.Shutdown(ctx) != nil {
			mo.srv.Close()
		}
		<-mo.served
	})
}

// leave writes what the checkpoint says to the metrics file when the run
// ends before it began sending (an import or preflight error, nothing
// due): the file must not keep an earlier run's figures. A checkpoint
// with no campaign yet leaves the file as it is.
func (mo *metricsOutput) leave(ctx context.Context, st *store.Store) {
	if mo == nil || mo.m != nil || mo.file == "" {
		return
	}
	settings, err := st.Settings(ctx)
	if err != nil || settings.CampaignID == "" {
		return
	}
	m, err := checkpointMetrics(ctx, st, settings)
	if err == nil {
		err = m.WriteFile(mo.file)
	}
	if err != nil {
		mo.log.Warn("metrics file not written", "file", mo.file, "err", err)
	}
}

// printMetrics prints what the checkpoint alone says in the Prometheus
// text exposition format, for a cron job that only wants state.
func printMetrics(ctx context.Context, ios *IO, st *store.Store, settings store.Settings) error {
	m, err := checkpointMetrics(ctx, st, settings)
	if err != nil {
		return err
	}
	return m.Write(ios.Out)
}

// checkpointMetrics are the metrics the checkpoint alone gives: rows by
// state, the last success, the last run's start, end and rate.
func checkpointMetrics(ctx context.Context, st *store.Store, settings store.Settings) (*metrics.Metrics, error) {
	channel, err := campaign.ParseChannel(settings.Channel)
	if err != nil {
		return nil, err
	}
	var s metrics.State
	if s.Counts, err = st.Counts(ctx); err != nil {
		return nil, err
	}
	if s.LastSuccess, _, err = st.LastSent(ctx); err != nil {
		return nil, err
	}
	runs, err := st.Runs(ctx)
	if err != nil {
		return nil, err
	}
	if len(runs) > 0 {
		last := runs[len(runs)-1]
		s.RunStart, s.RunEnd, s.Senders, s.Rate = last.StartedAt, last.EndedAt, last.Senders, last.Rate
	}
	return metrics.FromCheckpoint(settings.CampaignID, string(channel), s), nil
}
