package metrics

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
	"github.com/bulksend/bulksend/internal/store"
)

// Output is where a run's metrics go: a file rewritten every few seconds
// and at exit (node_exporter's textfile collector) and an endpoint served
// while the run runs. Once set up, a failure to write or serve is logged
// once and never stops the campaign. A nil *Output does nothing; its
// methods are for one run, called in order: Serve, Attach, Start, Finish.
type Output struct {
	file  string
	every time.Duration
	log   *slog.Logger

	srv     *listen.Server // nil when not serving
	handler atomic.Pointer[http.Handler]
	served  chan struct{} // closed when the server stops serving

	m         *Metrics
	stopWrite chan struct{}
	written   chan struct{} // closed when the writer is done
	fileWarn  sync.Once
	serveWarn sync.Once
	closeOnce sync.Once
}

// NewOutput returns an output that writes file ("" for none) every
// interval once the run starts.
func NewOutput(file string, every time.Duration, log *slog.Logger) *Output {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Output{file: file, every: every, log: log}
}

// FileError is a metrics file that cannot be written: Err says why.
type FileError struct {
	File string
	Err  error
}

func (e *FileError) Error() string { return e.File + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// ListenError is a metrics address that cannot be listened on.
type ListenError struct {
	Addr string
	Err  error
}

func (e *ListenError) Error() string { return e.Addr + ": " + e.Err.Error() }
func (e *ListenError) Unwrap() error { return e.Err }

// Open sets up a run's output before anything is sent: it checks that
// file ("" for none) can be written, by making and removing a temporary
// file beside it (a *FileError if not), and serves the endpoint on addr
// ("" for none; a *ListenError if it cannot listen there), which answers
// 503 until the run starts sending. Neither: nil, no output.
func Open(file string, every time.Duration, addr string, log *slog.Logger) (*Output, error) {
	if file == "" && addr == "" {
		return nil, nil
	}
	mo := NewOutput(file, every, log)
	if file != "" {
		if err := CheckDir(file); err != nil {
			return nil, &FileError{File: file, Err: err}
		}
		if !strings.HasSuffix(file, ".prom") {
			mo.log.Warn("node_exporter's textfile collector reads only files named *.prom", "metrics_file", file)
		}
	}
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, &ListenError{Addr: addr, Err: err}
		}
		mo.Serve(l, listen.Metrics)
		mo.log.Info("serving metrics", "url", "http://"+l.Addr().String()+"/metrics")
	}
	return mo, nil
}

// Serve serves the endpoint /metrics on l within lim (listen.Metrics; a
// test's own, shorter). It answers 503 until the run starts sending.
func (mo *Output) Serve(l net.Listener, lim listen.Limits) {
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

// Server is the endpoint's server, nil when not serving.
func (mo *Output) Server() *listen.Server { return mo.srv }

// Attach makes m the run's metrics.
func (mo *Output) Attach(m *Metrics) {
	if mo != nil {
		mo.m = m
	}
}

// Attached reports whether the run attached its metrics: it began sending.
func (mo *Output) Attached() bool { return mo != nil && mo.m != nil }

// File is the file written, "" for none.
func (mo *Output) File() string {
	if mo == nil {
		return ""
	}
	return mo.file
}

// Start watches eng, which began at started: the endpoint serves the
// metrics, and the file is written now and every interval.
func (mo *Output) Start(eng Engine, started time.Time) {
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
func (mo *Output) write() {
	if err := mo.m.WriteFile(mo.file); err != nil {
		mo.fileWarn.Do(func() {
			mo.log.Warn("metrics file not written: the campaign goes on (further failures are not logged)", "file", mo.file, "err", err)
		})
	}
}

// Finish records the end of the run, writes the metrics file a last time
// and stops serving.
func (mo *Output) Finish() {
	if mo == nil || mo.m == nil {
		mo.Close()
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
	mo.Close()
}

// Close stops serving; it may be called more than once.
func (mo *Output) Close() {
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

// ObserveRun makes the run's metrics and attaches them to cfg as its
// observer and to mo: what each request does, the checkpoint's rows at
// collection (read beside the run's connection), the senders' configured
// rate, and the last success the checkpoint recorded.
func (mo *Output) ObserveRun(ctx context.Context, st *store.Store, cfg *engine.Config, channel campaign.Channel) {
	if mo == nil {
		return
	}
	m := New(cfg.CampaignID, string(channel))
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
	mo.Attach(m)
}

// Leave writes what the checkpoint says to the metrics file when the run
// ends before it began sending (an import or preflight error, nothing
// due): the file must not keep an earlier run's figures. A checkpoint
// with no campaign yet leaves the file as it is.
func (mo *Output) Leave(ctx context.Context, st *store.Store) {
	if mo.Attached() || mo.File() == "" {
		return
	}
	settings, err := st.Settings(ctx)
	if err != nil || settings.CampaignID == "" {
		return
	}
	m, err := OfCheckpoint(ctx, st, settings)
	if err == nil {
		err = m.WriteFile(mo.File())
	}
	if err != nil {
		mo.log.Warn("metrics file not written", "file", mo.File(), "err", err)
	}
}
