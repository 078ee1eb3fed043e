// Package listentest is the suite every bulksend listener passes: idle,
// dripping and slow-reading clients are cut off within the listener's
// limits, a flood above its connection cap waits without touching the
// connections already open, and the server goes on answering. It runs
// over real TCP on 127.0.0.1 with short limits (Limits), and waits with
// generous deadlines, never asserting how long something took: a loaded
// two-core machine passes it.
package listentest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/listen"
)

// Target is a listener under test and what to ask it.
type Target struct {
	Server *listen.Server
	// Get is a path the server answers a GET of with 200, e.g. "/metrics".
	Get string
	// Post is a path a POST with a body goes to (the sandbox reads it; a
	// handler that does not, the server drains it).
	Post string
	// Header is sent with every request (a token).
	Header http.Header
}

// Start serves a new listener within lim for one test; it is closed when
// the test ends.
type Start func(t *testing.T, lim listen.Limits) Target

// Limits are the short limits the suite serves with: a connection that
// says nothing is closed after ReadHeader, a kept-alive one after Idle.
func Limits() listen.Limits {
	return listen.Limits{
		ReadHeader: 300 * time.Millisecond,
		Read:       600 * time.Millisecond,
		Write:      600 * time.Millisecond,
		Idle:       300 * time.Millisecond,
		MaxConns:   4,
	}
}

// patience bounds every wait of the suite: far beyond the limits, so that
// only a listener that never cuts a client off fails.
const patience = 60 * time.Second

// Run runs the suite against the listeners start makes.
func Run(t *testing.T, start Start) {
	t.Run("idle connections above the cap", func(t *testing.T) { idleAboveCap(t, start) })
	t.Run("kept-alive connection closed when idle", func(t *testing.T) { keptAliveIdle(t, start) })
	t.Run("dripped headers cut off", func(t *testing.T) { drip(t, start, false) })
	t.Run("dripped body cut off", func(t *testing.T) { drip(t, start, true) })
	t.Run("slow reader cut off", func(t *testing.T) { slowReader(t, start) })
}

// idleAboveCap opens three times the cap of connections that say nothing,
// beside one already open: the open one is still answered at once, a new
// client is answered once the silent ones are closed (it waits for a slot,
// it is not refused), and every silent one is closed by the server.
func idleAboveCap(t *testing.T, start Start) {
	lim := Limits()
	lim.Idle = patience // the connection opened first must outlive the flood
	tg := start(t, lim)
	addr := tg.Server.Addr().String()

	before := dial(t, addr, 0)
	br := bufio.NewReader(before)
	get(t, tg, before, br)

	// The most connections the server holds at once: the flood never
	// takes it beyond the cap (its file descriptors are bounded).
	most := make(chan int)
	stop := make(chan struct{})
	go func() {
		n := 0
		for {
			n = max(n, tg.Server.Conns())
			select {
			case <-stop:
				most <- n
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	silent := make([]net.Conn, 3*lim.MaxConns)
	for i := range silent {
		silent[i] = dial(t, addr, 0)
	}
	get(t, tg, before, br) // the connection open before the flood goes on

	hc := &http.Client{Timeout: patience, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+tg.Get, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range tg.Header {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s with %d silent connections open: %v", tg.Get, len(silent), err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s with %d silent connections open: %s", tg.Get, len(silent), resp.Status)
	}
	for i, c := range silent {
		if err := waitClosed(c); err != nil {
			t.Fatalf("silent connection %d of %d: %v", i+1, len(silent), err)
		}
	}
	close(stop)
	if n := <-most; n > lim.MaxConns {
		t.Errorf("%d connections open at once, over the cap of %d", n, lim.MaxConns)
	}
	before.Close()
	hc.CloseIdleConnections()
	waitConns(t, tg.Server)
}

// keptAliveIdle makes a request on a kept-alive connection, then lets it
// idle: the server closes it.
func keptAliveIdle(t *testing.T, start Start) {
	tg := start(t, Limits())
	c := dial(t, tg.Server.Addr().String(), 0)
	get(t, tg, c, bufio.NewReader(c))
	if err := waitClosed(c); err != nil {
		t.Fatalf("idle kept-alive connection: %v", err)
	}
	waitConns(t, tg.Server)
}

// drip sends a request's headers (or, with body, its body) a byte every
// 20 ms, much slower than the listener's read limits allow: the server
// cuts the connection off long before the drip ends.
func drip(t *testing.T, start Start, body bool) {
	tg := start(t, Limits())
	c := dial(t, tg.Server.Addr().String(), 0)
	const bytes = int(patience / (20 * time.Millisecond))
	var head strings.Builder
	if body {
		fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: sandbox\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", tg.Post, bytes)
		writeHeader(&head, tg.Header)
		head.WriteString("\r\n")
	} else {
		fmt.Fprintf(&head, "GET %s HTTP/1.1\r\nHost: sandbox\r\n", tg.Get)
		writeHeader(&head, tg.Header)
		head.WriteString("X-Drip: ")
	}
	if _, err := io.WriteString(c, head.String()); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- waitClosed(c) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for sent := 0; sent < bytes; sent++ {
		select {
		case err := <-ended:
			if err != nil {
				t.Fatalf("after %d bytes dripped: %v", sent, err)
			}
			waitConns(t, tg.Server)
			return
		case <-tick.C:
		}
		if _, err := c.Write([]byte{'a'}); err != nil {
			break // cut off: ended says how
		}
	}
	if err := <-ended; err != nil {
		t.Fatalf("a client dripping a byte every 20 ms: %v (limits %+v)", err, tg.Server.Limits())
	}
	waitConns(t, tg.Server)
}

// slowReader pipelines requests on a connection with a small receive
// buffer and reads none of the answers: once the buffers are full the
// server cannot write, and closes the connection, which the client still
// holds open.
func slowReader(t *testing.T, start Start) {
	tg := start(t, Limits())
	c := dial(t, tg.Server.Addr().String(), 4<<10)
	get(t, tg, c, bufio.NewReader(c)) // accepted and answered: counted open
	var req strings.Builder
	fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: sandbox\r\n", tg.Get)
	writeHeader(&req, tg.Header)
	req.WriteString("\r\n")
	batch := []byte(strings.Repeat(req.String(), 64))
	stop := make(chan struct{})
	written := make(chan struct{})
	go func() {
		defer close(written)
		rest := batch
		for {
			select {
			case <-stop:
				return
			default:
			}
			// A deadline lets stop be seen; a request half written is
			// finished, so that the server never sees a malformed one.
			c.SetWriteDeadline(time.Now().Add(time.Second))
			n, err := c.Write(rest)
			if rest = rest[n:]; len(rest) == 0 {
				rest = batch
			}
			if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				return // cut off
			}
		}
	}()
	defer func() { close(stop); <-written }()
	for deadline := time.Now().Add(patience); tg.Server.Conns() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a client reading no answer was not cut off in %v (limits %+v)", patience, tg.Server.Limits())
		}
	}
}

// dial connects to addr, with a receive buffer of rcvbuf bytes if not 0;
// the connection is closed when the test ends.
func dial(t *testing.T, addr string, rcvbuf int) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: patience}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
			return errors.Join(err, serr)
		}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// get GETs the target's Get on c and reads the answer, which must be 200.
func get(t *testing.T, tg Target, c net.Conn, br *bufio.Reader) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://sandbox"+tg.Get, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range tg.Header {
		req.Header[k] = v
	}
	c.SetDeadline(time.Now().Add(patience))
	defer c.SetDeadline(time.Time{})
	if err := req.Write(c); err != nil {
		t.Fatalf("GET %s: %v", tg.Get, err)
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatalf("GET %s: %v", tg.Get, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", tg.Get, resp.Status)
	}
	if resp.Close {
		t.Fatalf("GET %s: the server closes the connection after answering", tg.Get)
	}
}

// waitClosed reads c until the server closes it; it fails if that takes
// longer than patience.
func waitClosed(c net.Conn) error {
	c.SetReadDeadline(time.Now().Add(patience))
	_, err := io.Copy(io.Discard, c)
	switch {
	case err == nil, errors.Is(err, syscall.ECONNRESET):
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("the server kept the connection open for %v", patience)
	}
	return err
}

// waitConns waits until the server has no connection open: each it
// accepted gave its slot back.
func waitConns(t *testing.T, s *listen.Server) {
	t.Helper()
	for deadline := time.Now().Add(patience); s.Conns() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still counted open %v after the clients' were closed", s.Conns(), patience)
		}
	}
}

func writeHeader(b *strings.Builder, h http.Header) {
	for k, vs := range h {
		for _, v := range vs {
			fmt.Fprintf(b, "%s: %s\r\n", k, v)
		}
	}
}
