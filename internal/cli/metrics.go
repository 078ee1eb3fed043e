package cli

import (
	"errors"

	"github.com/bulksend/bulksend/internal/metrics"
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

// openMetrics sets up the run's metrics output (metrics.Open) before
// anything is sent: a file that cannot be written or an address that
// cannot be listened on is a usage error that names its flag.
func (o *runOptions) openMetrics() (*metrics.Output, error) {
	mo, err := metrics.Open(o.metricsFile, o.metricsEvery, o.metricsAddr, o.log)
	var fileErr *metrics.FileError
	var listenErr *metrics.ListenError
	switch {
	case errors.As(err, &fileErr):
		return nil, usagef("point --metrics-file at a directory this user can write, e.g. node_exporter's --collector.textfile.directory; nothing was sent",
			"--metrics-file %s: %w", fileErr.File, fileErr.Err)
	case errors.As(err, &listenErr):
		return nil, usagef("choose a free port (another bulksend may be running there), or drop --metrics-addr; nothing was sent",
			"--metrics-addr %s: %w", listenErr.Addr, listenErr.Err)
	}
	return mo, err
}
