// Package cli is bulksend's command line: one file per command, each an
// options struct and a runX function; the commands that stand apart from
// a campaign run (sandbox, optouts) have packages of their own below it,
// and what every command shares is cmdutil. It alone prints errors or
// chooses an exit code; the map from error to exit code is exitCode
// below, and README.md documents it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bulksend/bulksend/internal/budget"
	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/cli/cmdutil"
	"github.com/bulksend/bulksend/internal/cli/optoutscmd"
	"github.com/bulksend/bulksend/internal/cli/sandboxcmd"
	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/redact"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/termtext"
	"github.com/bulksend/bulksend/internal/whatsapp"
	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// Exit codes: part of the product, cron jobs read them (see cmdutil).
const (
	ExitOK         = cmdutil.ExitOK
	ExitFatal      = cmdutil.ExitFatal
	ExitUsage      = cmdutil.ExitUsage
	ExitUnfinished = cmdutil.ExitUnfinished
	ExitLocked     = cmdutil.ExitLocked
)

const exitCodesHelp = `Exit status:
  0  finished: no row pending, sending or in doubt
  1  fatal: authentication, template or account error, I/O error
  2  usage error or bad input (flags, CSV, a webhook log with no status
     webhook in it)
  3  unfinished, run again later: interrupted, retries scheduled for later,
     rows waiting for their window, send_at, start or the daily limit
     (the last line names the next send time), rows in doubt, API or
     --budget server unreachable
  4  another bulksend holds this checkpoint (harmless from cron)`

// The shared pieces of every command, by the names the commands of this
// package use.
type (
	IO             = cmdutil.IO
	usageError     = cmdutil.UsageError
	interruptWords = cmdutil.Interrupt
)

var (
	usagef        = cmdutil.Usagef
	noArgs        = cmdutil.NoArgs
	signalContext = cmdutil.SignalContext
)

// Main runs bulksend with args and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ios := &IO{In: stdin, Out: stdout, Err: stderr, Getenv: os.Getenv, Abort: os.Exit}
	// Undocumented, for internal/bench: a CPU profile of the whole process.
	if path := os.Getenv("BULKSEND_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
	}
	// Undocumented, for internal/bench: an execution trace (go tool trace).
	if path := os.Getenv("BULKSEND_TRACE"); path != "" {
		if f, err := os.Create(path); err == nil {
			defer f.Close()
			if trace.Start(f) == nil {
				defer trace.Stop()
			}
		}
	}
	return runMain(args, ios)
}

func runMain(args []string, ios *IO) int {
	root := newRoot(ios)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	return printError(ios.Err, err)
}

// printError writes err's line and its hint's, and returns its exit code.
// Both are escaped (errorText): a hint may name a provider's resource.
func printError(w io.Writer, err error) int {
	code, hint := exitCode(err)
	var unfinished *unfinishedError
	if errors.As(err, &unfinished) {
		fmt.Fprintf(w, "bulksend: %s\n", errorText(err))
	} else {
		fmt.Fprintf(w, "bulksend: error: %s\n", errorText(err))
	}
	if hint != "" {
		fmt.Fprintf(w, "bulksend: hint: %s\n", termtext.Escape(hint))
	}
	return code
}

// errorText is err's message for a terminal. Errors carry outside values
// (CSV cells and headers, webhook titles, API answers, file names), so
// the message is escaped whole (termtext.Escape): a newline, a carriage
// return or an ESC sequence in one of them neither breaks the line nor
// reaches the terminal. The one layout of bulksend's own that an error
// holds, the list of template.Problems one per line, keeps its lines:
// each problem is escaped on its own.
func errorText(err error) string {
	msg := err.Error()
	var probs template.Problems
	if !errors.As(err, &probs) || len(probs) < 2 {
		return termtext.Escape(msg)
	}
	list := probs.Error()
	i := strings.LastIndex(msg, list)
	if i < 0 { // a wrapper that does not show it as it is
		return termtext.Escape(msg)
	}
	escaped := make(template.Problems, len(probs))
	for j, p := range probs {
		escaped[j] = termtext.Escape(p)
	}
	return termtext.Escape(msg[:i]) + escaped.Error() + termtext.Escape(msg[i+len(list):])
}

// unfinishedError ends a run that has more to do later: exit 3. The
// summary has been printed already.
type unfinishedError struct{ reason, hint string }

func (e *unfinishedError) Error() string { return e.reason }

// exitCode is the one map from error to exit code and hint.
func exitCode(err error) (int, string) {
	var (
		usage      *usageError
		locked     *store.LockedError
		fatal      *engine.FatalError
		lineErr    *csvin.LineError
		unfinished *unfinishedError
	)
	switch {
	case errors.As(err, &unfinished):
		return ExitUnfinished, unfinished.hint
	case errors.As(err, &usage):
		return ExitUsage, usage.Hint
	case errors.As(err, &locked):
		return ExitLocked, "wait for that run to finish; a crashed run releases the lock by itself"
	case errors.As(err, &fatal):
		return ExitFatal, apiHint(err)
	case errors.Is(err, csvin.ErrInvalidUTF8):
		return ExitUsage, "save the file as \"CSV UTF-8\" and run again: nothing was sent"
	case errors.Is(err, csvin.ErrBadDelimiter):
		return ExitUsage, `--delimiter takes ",", ";", "tab" or "|"`
	case errors.Is(err, csvin.ErrUnknownRegion):
		return ExitUsage, "--default-region takes a two-letter ISO 3166 code, e.g. GB, US, BR"
	case errors.Is(err, csvin.ErrTooManyColumns), errors.Is(err, csvin.ErrCellTooLong):
		return ExitUsage, "a row or a cell is far larger than any template or SMS takes: is this the right file, saved as CSV? nothing was sent"
	case errors.As(err, &lineErr), errors.Is(err, csvin.ErrNoHeader), errors.Is(err, csvin.ErrNoPhoneColumn), errors.Is(err, csvin.ErrDuplicateColumn):
		return ExitUsage, "fix the CSV and run again: nothing was sent"
	case errors.Is(err, budget.ErrUnavailable):
		return ExitUnfinished, budgetHint
	case errors.Is(err, engine.ErrUnreachable):
		return ExitUnfinished, "check the network and --api-url, then run the same command again"
	case errors.Is(err, context.Canceled):
		return ExitUnfinished, "run the same command again to resume"
	case errors.Is(err, store.ErrCorrupt):
		return ExitFatal, "keep the checkpoint file as it is: a new one would send every row again. " +
			"'sqlite3 CHECKPOINT .recover | sqlite3 recovered.db' saves what can be read, and " +
			"'sqlite3 CHECKPOINT \"PRAGMA integrity_check\"' says what is damaged (attach its output when you ask for help)"
	case errors.Is(err, store.ErrNotCheckpoint):
		return ExitUsage, "point --db at a CAMPAIGN.bulksend.db file, or at a new name for a new campaign; if this file was a checkpoint, keep it as it is: it is damaged"
	case errors.Is(err, store.ErrHardLinked):
		return ExitUsage, "a checkpoint has one name: remove the other hard links (or copy the file) and run again"
	case errors.Is(err, store.ErrReadOnly):
		return ExitUsage, "copy the checkpoint (and its CSV) to a writable folder to resume it there; status, export and report read it where it is"
	case errors.Is(err, store.ErrNewerSchema):
		return ExitFatal, "upgrade bulksend to the release that wrote this checkpoint, or newer"
	case errors.Is(err, store.ErrDiskFull), errors.Is(err, syscall.ENOSPC):
		return ExitFatal, "the disk is full: free space, then run the same command again; rows whose answers could not be recorded are kept for 'bulksend reconcile' (the next run holds them in doubt)"
	}
	return ExitFatal, apiHint(err)
}

// flagHints name the flags that fix a provider's fatal answer: the
// provider's package knows what is wrong, not which flag sets it.
var flagHints = []struct {
	kind error
	hint string
}{
	{whatsapp.ErrToken, "the access token is expired or invalid: get a new one, set WHATSAPP_TOKEN (or --token-file) and run the same command again; nothing more was sent"},
	{whatsapp.ErrTemplate, "the template does not exist in this language or is not approved: check --template and --lang in WhatsApp Manager"},
	{whatsapp.ErrParamCount, "the request's parameters (header, body or buttons) do not match the template's: check the CSV's columns against it with --waba and --dry-run"},
	{whatsapp.ErrParameters, "the API rejected the request's shape: check --template, --lang, --from and the CSV's parameter columns"},
}

// apiHint is the hint for a provider's answer in err: the flags to fix,
// else the provider's own advice; "" when err holds no provider answer.
func apiHint(err error) string {
	var api *whatsapp.APIError
	if errors.As(err, &api) && errors.Is(api, whatsapp.ErrEndpoint) {
		return fmt.Sprintf("the API answered HTTP %d without an error body: check --api-url, --api-version and the --from phone-number IDs", api.HTTPStatus)
	}
	var explicit *hintError
	if errors.As(err, &explicit) {
		return explicit.hint
	}
	for _, h := range flagHints {
		if errors.Is(err, h.kind) {
			return h.hint
		}
	}
	var adviser interface{ Hint() string }
	if !errors.As(err, &adviser) {
		return ""
	}
	if h := adviser.Hint(); h != "" {
		return flagNames(h)
	}
	return "fix the cause above, then run the same command again to resume"
}

func newRoot(ios *IO) *cobra.Command {
	var logLevel, logFormat string
	root := &cobra.Command{
		Use:   "bulksend",
		Short: "Run WhatsApp template-message and SMS campaigns from a CSV, crash-safe and paced",
		Long: `bulksend sends one WhatsApp Cloud API template message (or, with --channel sms,
one SMS through AWS End User Messaging) to every recipient of a CSV file,
paced per sender number, with a SQLite checkpoint beside the CSV so that a
crash, a Ctrl-C or an API outage never sends a message twice or skips one.

` + exitCodesHelp,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(ios.In)
	// Help asked for (--help, help CMD) goes to stdout, as gh's and restic's
	// do, so that 'bulksend run --help | grep rate' finds it; errors and
	// logs go to stderr (usage is never printed on an error: SilenceUsage).
	root.SetOut(ios.Out)
	root.SetErr(ios.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{Err: err, Hint: "see '" + c.CommandPath() + " --help'"}
	})
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	logger := func() (*slog.Logger, error) { return newLogger(ios.Err, logLevel, logFormat) }
	root.AddCommand(newRunCmd(ios, logger), newStatusCmd(ios), newExportCmd(ios), newReconcileCmd(ios, logger), sandboxcmd.New(ios, logger), newReportCmd(ios), newReceiveCmd(ios, logger), optoutscmd.New(ios, func(c campaign.Channel) bool { return channels[c] != nil }), newVersionCmd(ios))
	// --version prints what 'bulksend version' prints, on stdout (cobra's
	// own --version would print on root's output: stderr, with the help).
	var showVersion bool
	root.Flags().BoolVar(&showVersion, "version", false, "print the version line of 'bulksend version'")
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if showVersion {
			return runVersion(ios, &versionOptions{})
		}
		return cmd.Help()
	}
	return root
}

// newLogger is the log of --log-level and --log-format, written to w.
// Recipients' phones are masked at info and above: logs are mailed by
// cron and kept by collectors. Outside values need no escaping here: the
// text format quotes (strconv.Quote) every message, key and value that
// holds a control character, a space or invalid UTF-8, and the JSON
// format escapes control characters; TestLogEscapes holds them to it.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, usagef("", "invalid --log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		return slog.New(flagWords{redact.NewHandler(slog.NewTextHandler(w, opts))}), nil
	case "json":
		return slog.New(flagWords{redact.NewHandler(slog.NewJSONHandler(w, opts))}), nil
	}
	return nil, usagef("", "invalid --log-format %q: want text or json", format)
}

// What each command says when interrupted once, and twice.
var (
	runInterrupt = interruptWords{
		Stopping: "stopping: no new sends, waiting for requests in flight (interrupt again to abort)",
		Aborted:  "aborted: rows in flight stay in doubt until the next run",
	}
	reconcileInterrupt = interruptWords{
		Stopping: "stopping: what was applied stays; the rest is not read (interrupt again to abort)",
		Aborted:  "aborted: what was applied stays; run the same command again to finish",
	}
	receiveInterrupt = interruptWords{
		Stopping: "stopping: no new webhooks; the kept ones are synced (interrupt again to abort)",
		Aborted:  "aborted: what was answered 200 is on disk",
	}
	watchInterrupt = interruptWords{Stopping: "stopped watching", Aborted: "aborted"}
)

// settingRef is a setting a package below the command line names in a
// hint, a template problem or a log message, {from}: they say what is
// wrong, and only the command line knows which flag sets it.
var settingRef = regexp.MustCompile(`\{([a-z][a-z-]*)\}`)

// flagNames is text with the settings it names as the flags that set them
// ({from} is --from); braces around anything else stay, and so do a
// template's placeholders ({{text}} is the body's, not --text).
func flagNames(text string) string {
	if !strings.Contains(text, "{") {
		return text
	}
	var b strings.Builder
	last := 0
	for _, m := range settingRef.FindAllStringSubmatchIndex(text, -1) {
		start, end, name := m[0], m[1], text[m[2]:m[3]]
		doubled := start > 0 && text[start-1] == '{' || end < len(text) && text[end] == '}'
		if doubled || !flagOfAny[name] {
			continue
		}
		b.WriteString(text[last:start])
		b.WriteString("--" + name)
		last = end
	}
	b.WriteString(text[last:])
	return b.String()
}

// flagOfAny are the flags of every command: a setting below the command
// line is set by one of them (--from by run's, --apply by receive's).
// Filled by init: the commands' code refers to flagNames.
var flagOfAny = map[string]bool{}

func init() {
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { flagOfAny[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { flagOfAny[f.Name] = true })
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(newRoot(&IO{}))
}

// flagWords is a log handler that names flags in messages (flagNames):
// packages below the command line log {rate}, the operator reads --rate.
type flagWords struct{ next slog.Handler }

func (h flagWords) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }
func (h flagWords) WithAttrs(as []slog.Attr) slog.Handler          { return flagWords{h.next.WithAttrs(as)} }
func (h flagWords) WithGroup(name string) slog.Handler             { return flagWords{h.next.WithGroup(name)} }
func (h flagWords) Handle(ctx context.Context, r slog.Record) error {
	r.Message = flagNames(r.Message)
	return h.next.Handle(ctx, r)
}
