package listen_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/listen"
	"github.com/bulksend/bulksend/internal/listen/listentest"
)

// serve serves h on 127.0.0.1 within lim until the test ends.
func serve(t *testing.T, h http.Handler, lim listen.Limits) *listen.Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := listen.New(l, h, lim, slog.New(slog.DiscardHandler))
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

func plain() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("POST /read", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		io.WriteString(w, "read\n")
	})
	return mux
}

// TestPlainListener runs the listeners' suite against a plain handler:
// what listen.New gives any server.
func TestPlainListener(t *testing.T) {
	listentest.Run(t, func(t *testing.T, lim listen.Limits) listentest.Target {
		return listentest.Target{Server: serve(t, plain(), lim), Get: "/ok", Post: "/read"}
	})
}

// TestLimitsDefaults: a zero field takes its default, Write makes room
// for Hold, and no listener may keep more than half the process's file
// descriptors, whatever its cap says.
func TestLimitsDefaults(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lim := func(in listen.Limits) listen.Limits {
		s := listen.New(l, http.NotFoundHandler(), in, nil)
		return s.Limits()
	}
	for _, tc := range []struct {
		name string
		in   listen.Limits
		want listen.Limits
	}{
		{"zero", listen.Limits{}, listen.Limits{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: time.Minute, Idle: 2 * time.Minute, MaxConns: 256, MaxHeaderBytes: 64 << 10}},
		{"hold lengthens the default write", listen.Limits{Read: time.Second, Hold: 70 * time.Second},
			listen.Limits{ReadHeader: 10 * time.Second, Read: time.Second, Hold: 70 * time.Second, Write: 101 * time.Second, Idle: 2 * time.Minute, MaxConns: 256, MaxHeaderBytes: 64 << 10}},
		{"an explicit write is kept", listen.Limits{Write: 5 * time.Second, Hold: time.Minute},
			listen.Limits{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Hold: time.Minute, Write: 5 * time.Second, Idle: 2 * time.Minute, MaxConns: 256, MaxHeaderBytes: 64 << 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lim(tc.in); got != tc.want {
				t.Errorf("limits %+v\nwant   %+v", got, tc.want)
			}
		})
	}
	t.Run("the cap stays within half the file descriptors", func(t *testing.T) {
		got := lim(listen.Limits{MaxConns: 1 << 30}).MaxConns
		if got >= 1<<30 || got < 1 {
			t.Errorf("MaxConns %d: want it lowered to half the process's limit on open files", got)
		}
	})
	t.Run("the sandbox's write outlasts its longest hold", func(t *testing.T) {
		sb := lim(listen.Sandbox(70 * time.Second))
		if sb.Write <= sb.Hold+sb.Read {
			t.Errorf("sandbox write %v, hold %v, read %v: an answer held that long is cut off", sb.Write, sb.Hold, sb.Read)
		}
	})
}

// TestCapReleasedOnce: a connection closed twice gives one slot back,
// not two, so the cap holds; every slot comes back when its connection
// closes.
func TestCapReleasedOnce(t *testing.T) {
	lim := listentest.Limits()
	lim.MaxConns = 2
	lim.Idle = time.Minute
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hold", func(w http.ResponseWriter, r *http.Request) { <-release })
	// A hijacked connection is the handler's: it closes it twice.
	mux.HandleFunc("GET /twice", func(w http.ResponseWriter, r *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		c.Close()
		c.Close()
	})
	s := serve(t, mux, lim)
	defer close(release)

	for range 5 {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET /twice HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(time.Minute))
		io.Copy(io.Discard, c)
		c.Close()
	}
	waitConns(t, s, 0)

	// Two connections held: both slots taken, no more (a third waits).
	for range 3 {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	waitConns(t, s, 2)
	time.Sleep(100 * time.Millisecond) // what a third slot would let in
	if n := s.Conns(); n != 2 {
		t.Fatalf("%d connections open with a cap of 2", n)
	}
}

// TestCloseEndsWaitingAccept: with every slot taken, Serve waits for one;
// Close and Shutdown still end it.
func TestCloseEndsWaitingAccept(t *testing.T) {
	for _, stop := range []struct {
		name string
		stop func(*listen.Server) error
	}{
		{"close", (*listen.Server).Close},
		{"shutdown", func(s *listen.Server) error {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			s.Shutdown(ctx) // the held connection outlasts ctx
			return s.Close()
		}},
	} {
		t.Run(stop.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			release := make(chan struct{})
			defer close(release)
			s := listen.New(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }),
				listen.Limits{MaxConns: 1}, slog.New(slog.DiscardHandler))
			served := make(chan error, 1)
			go func() { served <- s.Serve() }()
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			waitConns(t, s, 1)
			stop.stop(s)
			select {
			case err := <-served:
				if err != nil {
					t.Errorf("Serve: %v, want nil after %s", err, stop.name)
				}
			case <-time.After(time.Minute):
				t.Fatal("Serve still waiting for a slot after Close")
			}
		})
	}
}

func waitConns(t *testing.T, s *listen.Server, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); s.Conns() != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", s.Conns(), n)
		}
	}
}
