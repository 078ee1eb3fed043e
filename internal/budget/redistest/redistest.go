// Package redistest starts a real redis-server for tests, on a free
// loopback port, with nothing saved to disk. A test on a machine without
// redis-server is skipped, saying so (Debian: apt-get install
// redis-server).
package redistest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Server is a redis-server started for a test. It is stopped when the
// test ends.
type Server struct {
	tb   testing.TB
	bin  string
	dir  string
	Port int
	cmd  *exec.Cmd
	out  *bytes.Buffer
}

// Start starts a redis-server, or skips tb when there is none.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Skip("no redis-server on PATH (Debian: apt-get install redis-server): skipped")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{tb: tb, bin: bin, dir: tb.TempDir(), Port: port}
	s.Restart()
	tb.Cleanup(s.Stop)
	return s
}

// URL is the server's redis:// URL, database 0.
func (s *Server) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.Port) }

// Addr is the server's HOST:PORT.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// Restart starts the server again on its port, after Stop.
func (s *Server) Restart() {
	s.tb.Helper()
	if s.cmd != nil {
		s.tb.Fatal("redistest: the server runs")
	}
	s.out = &bytes.Buffer{}
	s.cmd = exec.Command(s.bin, "--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", s.dir)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		s.tb.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.tb.Fatalf("redis-server did not listen on %s: %v\n%s", s.Addr(), err, s.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (as a crash would: SIGKILL) and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// CPU is the server's user and system CPU time so far, in seconds (from
// /proc: Linux only; 0 elsewhere).
func (s *Server) CPU() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command's name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ
}
