package logfile

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// A Flushed log shows its lines within a tick, and all of them after Flush.
func TestFlushed(t *testing.T) {
	var out syncBuffer
	l := NewFlushed(&out)
	l.Write([]byte("one\n"))
	deadline := time.Now().Add(10 * FlushInterval)
	for out.String() != "one\n" {
		if time.Now().After(deadline) {
			t.Fatalf("after %v the log holds %q", 10*FlushInterval, out.String())
		}
		time.Sleep(FlushInterval / 10)
	}
	l.Write([]byte("two\n"))
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "one\ntwo\n" {
		t.Errorf("after Flush the log holds %q", got)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// A write error is not lost: Flush returns it.
func TestFlushedError(t *testing.T) {
	l := NewFlushed(failingWriter{})
	l.Write([]byte(strings.Repeat("x", 10)))
	if err := l.Flush(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Flush = %v, want the write error", err)
	}
}

// syncBuffer is a bytes.Buffer safe for the flushing goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
