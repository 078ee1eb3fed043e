package cli

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A flushedLog shows its lines within a tick, and all of them after Flush.
func TestFlushedLog(t *testing.T) {
	var out syncBuffer // crash_test.go
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
