// Package cmdutil is what bulksend's commands share, in the root package
// cli and in the commands that stand apart from a run in packages of
// their own (sandboxcmd, optoutscmd), as gh's pkg/cmdutil: where a command
// reads and writes, the usage error (exit 2) with its hint, and
// interrupts. The map from every error to its exit code stays in cli.
package cmdutil

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/bulksend/bulksend/internal/termtext"
)

// Exit codes: part of the product, cron jobs read them.
const (
	ExitOK         = 0 // finished: no row pending, sending or in doubt
	ExitFatal      = 1 // auth, template or account error; I/O
	ExitUsage      = 2 // usage or bad input
	ExitUnfinished = 3 // run again later: interrupted, retries later, rows in doubt, unreachable
	ExitLocked     = 4 // another run holds this checkpoint
)

// IO is where a command reads and writes. stdout is data; everything
// else goes to stderr.
type IO struct {
	In     io.Reader
	Out    io.Writer
	Err    io.Writer
	Getenv func(string) string
	// Abort ends the process at once on a second interrupt.
	Abort func(code int)
}

// IsTerminal reports whether stderr, where progress goes, is a terminal.
func (s *IO) IsTerminal() bool {
	f, ok := s.Err.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// UsageError is a wrong flag, argument or input file: exit 2.
type UsageError struct {
	Err  error
	Hint string
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError of the message format makes, with hint.
func Usagef(hint, format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...), Hint: hint}
}

// NoArgs refuses arguments to a command that takes none: a usage error.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return Usagef("see '"+cmd.CommandPath()+" --help'", "%s takes no arguments, got %q", cmd.Name(), args[0])
	}
	return nil
}

// Esc is outside text made safe for a terminal (termtext.Escape).
func Esc(s string) string { return termtext.Escape(s) }

// Interrupt is what a command says when the first interrupt stops it and
// when a second aborts it.
type Interrupt struct{ Stopping, Aborted string }

// SignalContext returns a context cancelled by the first interrupt (or
// when parent is done); a second interrupt ends the process at once with
// exit 3 (for run: rows in flight stay sending and the next run treats
// them as in doubt). stop releases the signal handler; it may be called
// more than once.
func SignalContext(parent context.Context, ios *IO, log *slog.Logger, words Interrupt) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case s := <-sigs:
			log.Warn(words.Stopping, "signal", s.String())
			cancel()
		}
		select {
		case <-done:
		case <-sigs:
			fmt.Fprintln(ios.Err, "bulksend: "+words.Aborted)
			ios.Abort(ExitUnfinished)
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			close(done)
			signal.Stop(sigs)
			cancel()
		})
	}
}
