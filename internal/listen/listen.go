// Package listen serves bulksend's HTTP endpoints (--metrics-addr, the
// sandboxes, and any to come) so that no client can hold them: every
// server it makes has read, write and idle timeouts and a cap on the
// connections it keeps open. An idle, dripping or slow-reading client is
// cut off in bounded time, and a flood of them waits in the kernel's
// accept queue instead of taking the process's file descriptors, which a
// run needs for its sends and its checkpoint.
package listen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits bound what clients can hold of one server. A zero field takes
// its default, so the zero Limits is a safe server for any purpose;
// Metrics and Sandbox are bulksend's own.
type Limits struct {
	// ReadHeader is how long a client has to send a request's headers. A
	// new connection's first request waits this long for its first byte
	// too: a connection opened and left silent is closed after it. 0
	// means 10s.
	ReadHeader time.Duration
	// Read is how long a client has to send a whole request, headers and
	// body: a body dripped byte by byte is cut off after it. 0 means 30s.
	Read time.Duration
	// Hold is the longest a handler may legitimately keep its answer back
	// (the sandboxes' latency and late answers); the default Write adds
	// it, so that no held answer is cut off.
	Hold time.Duration
	// Write is how long the server has, from the end of a request's
	// headers, to read its body, answer and write the answer out: a client
	// that reads its answer too slowly is cut off after it. 0 means Read
	// + Hold + 30s.
	Write time.Duration
	// Idle is how long a kept-alive connection may wait for its next
	// request. 0 means 2m.
	Idle time.Duration
	// MaxConns caps the connections open at once. When it is reached, new
	// connections wait, unaccepted, in the kernel's queue until one
	// closes; those open are not touched. It is lowered, whatever it says,
	// to half the process's file-descriptor limit (see fdLimit). 0 means
	// 256.
	MaxConns int
	// MaxHeaderBytes bounds a request's headers. 0 means 64 KiB.
	MaxHeaderBytes int
}

// resolved is l with its defaults filled in and MaxConns within the
// process's file-descriptor budget.
func (l Limits) resolved() Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&l.ReadHeader, 10*time.Second)
	def(&l.Read, 30*time.Second)
	l.Hold = max(l.Hold, 0)
	def(&l.Write, l.Read+l.Hold+30*time.Second)
	def(&l.Idle, 2*time.Minute)
	if l.MaxConns <= 0 {
		l.MaxConns = 256
	}
	if n := fdLimit() / 2; n > 0 && l.MaxConns > n {
		l.MaxConns = n
	}
	l.MaxConns = max(l.MaxConns, 1)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = 64 << 10
	}
	return l
}

// Server is an http.Server with Limits, on a listener that caps its
// connections. Its methods are safe for concurrent use.
type Server struct {
	hs  *http.Server
	ln  *capped
	lim Limits
}

// New returns a server of h on l within lim; Serve starts it. log, if not
// nil, gets what net/http would print to stderr (at warn level) and,
// once, the cap being reached. The server owns l from now on: Close and
// Shutdown close it.
func New(l net.Listener, h http.Handler, lim Limits, log *slog.Logger) *Server {
	lim = lim.resolved()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("addr", l.Addr().String())
	var full sync.Once
	s := &Server{
		lim: lim,
		ln: newCapped(l, lim.MaxConns, func() {
			full.Do(func() {
				log.Warn("listener at its connection cap: new connections wait until one closes (logged once)", "max_conns", lim.MaxConns)
			})
		}),
	}
	s.hs = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: lim.ReadHeader,
		ReadTimeout:       lim.Read,
		WriteTimeout:      lim.Write,
		IdleTimeout:       lim.Idle,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s
}

// Limits are the server's limits, defaults filled in.
func (s *Server) Limits() Limits { return s.lim }

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Conns is the number of connections open now.
func (s *Server) Conns() int { return int(s.ln.open.Load()) }

// Serve serves until Close or Shutdown, then returns nil; any other error
// ends serving and is returned.
func (s *Server) Serve() error {
	if err := s.hs.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting, closes idle connections and waits for those
// answering until ctx is done (http.Server.Shutdown).
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.hs.Shutdown(ctx)
	s.ln.Close() // also when Serve was never called
	return err
}

// Close closes the listener and every connection at once.
func (s *Server) Close() error {
	err := s.hs.Close()
	s.ln.Close()
	return err
}

// Loopback serves h on a free port of 127.0.0.1 within lim until the
// server is closed; its URL is "http://" + Addr().
func Loopback(h http.Handler, lim Limits, log *slog.Logger) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on 127.0.0.1: %w", err)
	}
	srv := New(l, h, lim, log)
	go srv.Serve()
	return srv, nil
}
