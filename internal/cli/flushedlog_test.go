package cli

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe to read while flushedLog writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A flushedLog shows its lines within a tick, and all of them after Flush.
func TestFlushedLog(t *testing.T) {
	var out lockedBuffer
	l := newFlushedLog(&out)
	l.Write([]byte("one\n"))
	deadline := time.Now().Add(10 * logFlushInterval)
	for out.String() != "one\n" {
		if time.Now().After(deadline) {
			t.Fatalf("after %v the log holds %q", 10*logFlushInterval, out.String())
		}
		time.Sleep(logFlushInterval / 10)
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
func TestFlushedLogError(t *testing.T) {
	l := newFlushedLog(failingWriter{})
	l.Write([]byte(strings.Repeat("x", 10)))
	if err := l.Flush(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Flush = %v, want the write error", err)
	}
}
