// Package logfile opens the logs bulksend appends to (the sandboxes'
// webhooks, event records and accepted sends) so that nothing planted in
// their place is written through, and writes them through a buffer that
// is flushed every tick.
package logfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ErrForeign is why a log is refused: what is in its place is not a file
// bulksend may append to.
var ErrForeign = errors.New("the sandbox appends its logs only to a regular file of this user's with one name, never through a link")

// ForeignError is a log refused: Path is in its place, and Why says what
// it is.
type ForeignError struct{ Path, Why string }

func (e *ForeignError) Error() string { return fmt.Sprintf("%s %s: %v", e.Path, e.Why, ErrForeign) }
func (e *ForeignError) Unwrap() error { return ErrForeign }

// Hint says what to do; nothing was written to the file.
func (e *ForeignError) Hint() string {
	return "move that file away (nothing was written to it), then run the same command again: nothing was sent"
}

// Append opens the log at path to append to it, making it (0600: it holds
// phone numbers) if it is not there. A symbolic link in its place is not
// followed (O_NOFOLLOW), and a file there that is not a regular file of
// this user's with one name (a FIFO or device, another user's file, a hard
// link to some other file) is refused with a *ForeignError and left as it
// is: appending would write the log into its target. An existing log is
// appended to, never truncated.
func Append(path string) (*os.File, error) {
	// O_NONBLOCK: opening a FIFO to write would wait for a reader.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	var why string
	switch {
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EMLINK): // EMLINK: the BSDs' O_NOFOLLOW
		why = "is a symbolic link"
		if target, rerr := os.Readlink(path); rerr == nil {
			why += " to " + strconv.Quote(target)
		}
	case errors.Is(err, syscall.ENXIO):
		why = "is a FIFO or socket with no reader"
	case err != nil:
		return nil, err
	default:
		why, err = foreign(f)
		if err != nil || why != "" {
			f.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if why != "" {
		return nil, &ForeignError{Path: path, Why: why}
	}
	return f, nil
}

// foreign says why f, just opened, is not a log bulksend may append to,
// or "" if it is.
func foreign(f *os.File) (string, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Sprintf("is not a regular file (%s)", fi.Mode().Type()), nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", nil
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Sprintf("belongs to another user (uid %d, not %d)", st.Uid, uid), nil
	}
	if st.Nlink > 1 {
		return fmt.Sprintf("has %d names (hard links)", st.Nlink), nil
	}
	return "", nil
}

// Close flushes buf (if not nil) and closes f, a log written: an error
// here means the log is short, and reconcile would read too little from it.
func Close(path string, buf interface{ Flush() error }, f *os.File) error {
	var ferr error
	if buf != nil {
		ferr = buf.Flush()
	}
	cerr := f.Close()
	if err := errors.Join(ferr, cerr); err != nil {
		return fmt.Errorf("sandbox log %s: %w", path, err)
	}
	return nil
}

// FlushInterval is how often a Flushed log is flushed: a reader of the
// file sees each line within it.
const FlushInterval = 250 * time.Millisecond

// Flushed is a log written through a buffer, flushed every FlushInterval
// and by Flush: a write call a tick rather than one a line (one a line
// cost a sandbox accepting 10,000 sends a second a twentieth of its CPU).
// A write error sticks: later writes and Flush return it. It is safe for
// concurrent use.
type Flushed struct {
	mu   sync.Mutex
	bw   *bufio.Writer
	stop chan struct{} // closed by Flush
	done chan struct{} // closed when the flushing goroutine has returned
}

// NewFlushed starts a Flushed log writing to w; Flush stops it.
func NewFlushed(w io.Writer) *Flushed {
	l := &Flushed{bw: bufio.NewWriterSize(w, 1<<16), stop: make(chan struct{}), done: make(chan struct{})}
	go l.flushEvery(FlushInterval)
	return l
}

func (l *Flushed) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bw.Write(p)
}

func (l *Flushed) flushEvery(d time.Duration) {
	defer close(l.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.mu.Lock()
			l.bw.Flush()
			l.mu.Unlock()
		case <-l.stop:
			return
		}
	}
}

// Flush stops the ticking and flushes what is left, the log's last write
// before its file is closed.
func (l *Flushed) Flush() error {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bw.Flush()
}
