package cli

import (
	"context"
	"log/slog"
	"net"
	"strings"

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

// openMetrics checks that the metrics file can be written (by making and
// removing a temporary file beside it) and listens on the metrics
// address, before anything is sent: either failing is a usage error that
// names it. The endpoint answers 503 until the run starts sending.
func (o *runOptions) openMetrics() (*metrics.Output, error) {
	if o.metricsFile == "" && o.metricsAddr == "" {
		return nil, nil
	}
	mo := metrics.NewOutput(o.metricsFile, o.metricsEvery, o.log)
	if mo.File() != "" {
		if err := metrics.CheckDir(mo.File()); err != nil {
			return nil, usagef("point --metrics-file at a directory this user can write, e.g. node_exporter's --collector.textfile.directory; nothing was sent",
				"--metrics-file %s: %w", mo.File(), err)
		}
		if !strings.HasSuffix(mo.File(), ".prom") {
			o.log.Warn("node_exporter's textfile collector reads only files named *.prom", "metrics_file", mo.File())
		}
	}
	if o.metricsAddr != "" {
		l, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			return nil, usagef("choose a free port (another bulksend may be running there), or drop --metrics-addr; nothing was sent",
				"--metrics-addr %s: %w", o.metricsAddr, err)
		}
		mo.Serve(l, listen.Metrics)
		o.log.Info("serving metrics", "url", "http://"+l.Addr().String()+"/metrics")
	}
	return mo, nil
}

// attachMetrics makes the run's metrics and attaches them to cfg as its
// observer and to mo: what each request does, the checkpoint's rows at
// collection (read beside the run's connection), the senders' configured
// rate, and the last success the checkpoint recorded.
func attachMetrics(ctx context.Context, mo *metrics.Output, log *slog.Logger, st *store.Store, cfg *engine.Config, channel campaign.Channel) {
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
		log.Warn("metrics: the last successful send could not be read", "err", err)
	} else if ok {
		m.Succeeded(t)
	}
	cfg.Observer = m
	mo.Attach(m)
}

// leaveMetrics writes what the checkpoint says to the metrics file when
// the run ends before it began sending (an import or preflight error,
// nothing due): the file must not keep an earlier run's figures. A
// checkpoint with no campaign yet leaves the file as it is.
func leaveMetrics(ctx context.Context, mo *metrics.Output, log *slog.Logger, st *store.Store) {
	if mo.Attached() || mo.File() == "" {
		return
	}
	settings, err := st.Settings(ctx)
	if err != nil || settings.CampaignID == "" {
		return
	}
	m, err := metrics.OfCheckpoint(ctx, st, settings)
	if err == nil {
		err = m.WriteFile(mo.File())
	}
	if err != nil {
		log.Warn("metrics file not written", "file", mo.File(), "err", err)
	}
}

// printMetrics prints what the checkpoint alone says in the Prometheus
// text exposition format, for a cron job that only wants state.
func printMetrics(ctx context.Context, ios *IO, st *store.Store, settings store.Settings) error {
	m, err := metrics.OfCheckpoint(ctx, st, settings)
	if err != nil {
		return err
	}
	return m.Write(ios.Out)
}
