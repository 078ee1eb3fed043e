package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/bulksend/bulksend/internal/ledger"
	"github.com/bulksend/bulksend/internal/redact"
	"github.com/bulksend/bulksend/internal/run"
	"github.com/bulksend/bulksend/internal/store"
)

// now is the schedule's clock: a test moves it (never the engine's).
var now = time.Now

// scheduleOptions are run's flags of when to send.
type scheduleOptions struct {
	window     []string
	windowTZ   string
	startAt    string
	endAt      string
	expire     bool
	dailyLimit string
	ledger     string
}

func (s *scheduleOptions) flags(f *pflag.FlagSet) {
	f.StringArrayVar(&s.window, "window", nil, `send only inside this window of the recipient's local time, e.g. "09:00-20:00" or "mon-fri 09:00-20:00" (repeatable: the union)`)
	f.StringVar(&s.windowTZ, "window-tz", "", "read --window in this time zone for every recipient (e.g. America/New_York) instead of each phone's own")
	f.StringVar(&s.startAt, "start-at", "", "send nothing before this time (RFC 3339, or YYYY-MM-DD HH:MM in this machine's zone)")
	f.StringVar(&s.endAt, "end-at", "", "send nothing after this time; rows left stay pending (or --expire)")
	f.BoolVar(&s.expire, "expire", false, "with --end-at: rows not sent by then end skipped (expired)")
	f.StringVar(&s.dailyLimit, "daily-limit", "", "at most this many unique recipients in any moving 24 hours, shared by every campaign of the portfolio through the ledger; auto: the portfolio's messaging limit as the preflight reads it; none: no limit")
	f.StringVar(&s.ledger, "ledger", "", "the operator ledger (default $BULKSEND_LEDGER, else bulksend/ledger.db in the user's state directory)")
}

// schedule parses the flags into the run's schedule; errors name the flag.
func (s *scheduleOptions) schedule() (run.Schedule, error) {
	sc, err := run.ParseSchedule(run.ScheduleSpec{Window: s.window, WindowTZ: s.windowTZ, StartAt: s.startAt, EndAt: s.endAt, Expire: s.expire, DailyLimit: s.dailyLimit})
	var se *run.ScheduleError
	if !errors.As(err, &se) {
		return sc, err
	}
	switch {
	case errors.Is(err, run.ErrNotTime):
		return sc, usagef("e.g. 2026-12-24T09:00:00+01:00, or 2026-12-24 09:00 in this machine's zone", "--%s %q is not a time", se.Setting, se.Value)
	case errors.Is(err, run.ErrEndNotAfterStart):
		return sc, usagef("", "--end-at %s is not after --start-at %s", s.endAt, s.startAt)
	case errors.Is(err, run.ErrExpireWithoutEnd):
		return sc, usagef("add --end-at TIME", "--expire needs --end-at: it expires the rows left at the campaign's end")
	case errors.Is(err, run.ErrNotNumber):
		return sc, usagef("a number of unique recipients (e.g. 2000), auto or none", "--daily-limit %q is not a number", s.dailyLimit)
	case se.Setting == "window-tz":
		return sc, usagef("name an IANA time zone, e.g. America/New_York or Europe/Berlin", "--window-tz %q: %w", s.windowTZ, se.Err)
	case se.Setting == "window":
		return sc, usagef(`e.g. --window "mon-fri 09:00-20:00" --window "sat 10:00-18:00"`, "--window: %w", se.Err)
	}
	return sc, err
}

// openLedger opens the operator ledger. A run needs it for a daily limit;
// without one a ledger that cannot be opened is logged and the run goes
// on without it (nothing is counted for the portfolio).
func (s *scheduleOptions) openLedger(ctx context.Context, o *runOptions, sc run.Schedule) (*ledger.Ledger, error) {
	path := s.ledger
	if path == "" {
		var err error
		if path, err = ledger.DefaultPath(); err != nil {
			if sc.DailyLimit != "" && sc.DailyLimit != "none" {
				return nil, usagef("pass --ledger PATH or set $BULKSEND_LEDGER", "--daily-limit needs the operator ledger: %w", err)
			}
			o.log.Warn("no operator ledger: this run's sends are not counted for the portfolio's daily limit", "err", err)
			return nil, nil
		}
	}
	l, err := ledger.Open(ctx, path)
	if err != nil {
		if s.ledger != "" || (sc.DailyLimit != "" && sc.DailyLimit != "none") {
			return nil, usagef("pass --ledger PATH (or $BULKSEND_LEDGER) to a file of your own", "operator ledger: %w", err)
		}
		o.log.Warn("the operator ledger cannot be opened: this run's sends are not counted for the portfolio's daily limit", "ledger", path, "err", err)
		return nil, nil
	}
	return l, nil
}

// scheduleWords are the run package's schedule errors as the operator
// reads them.
func scheduleWords(err error) error {
	var se *run.ScheduleError
	if !errors.As(err, &se) {
		return nil
	}
	switch {
	case errors.Is(err, run.ErrNoDailyLimit):
		return &usageError{Err: fmt.Errorf("--daily-limit auto: %w", se.Err), Hint: "give --daily-limit N, or let the preflight read the numbers (drop --no-preflight)"}
	case errors.Is(err, run.ErrNoLedger):
		return &usageError{Err: fmt.Errorf("--daily-limit: %w", se.Err), Hint: "pass --ledger PATH or set $BULKSEND_LEDGER"}
	}
	return &usageError{Err: fmt.Errorf("--%s: %w", se.Setting, se.Err)}
}

// waitingWords says what the pending rows wait for, for the exit-3 line.
func waitingWords(out *run.Outcome) string {
	w := out.Waiting
	var parts []string
	for _, p := range []struct {
		n    int64
		what string
	}{{w.Window, "their window"}, {w.SendAt, "their send_at"}, {w.Budget, "the daily limit"}, {w.Start, "the start"}, {w.Retry, "a retry"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d for %s", p.n, p.what))
		}
	}
	return strings.Join(parts, ", ")
}

// ledgerScope is where this run's sends go, when not to the provider
// itself: the operator ledger keeps a rehearsal's counts and learned
// limits apart from the real numbers' ("" for the provider).
func (o *runOptions) ledgerScope(ios *IO, ch *channelEntry) string {
	if o.sandbox {
		return store.SandboxScope
	}
	if u := ch.endpoint(o, ios); u != "" {
		return redact.URL(u)
	}
	return ""
}

// printPlanSchedule is the dry run's schedule: the window in each zone
// set, the markets' quiet hours, the days the daily limit needs; and a
// warning when a marketing or promotional campaign has no window.
func printPlanSchedule(w io.Writer, p *run.Plan, marketing bool) {
	sp, s := p.Schedule, p.Settings
	if marketing && len(s.Window) == 0 {
		fmt.Fprintf(w, "warning: a marketing campaign without --window sends at any hour of its recipients' day (US rules allow marketing messages 08:00-21:00 recipient local time, some states less); e.g. --window \"09:00-20:00\"\n")
	}
	if sp == nil {
		return
	}
	if !sp.Window.IsZero() {
		zone := "each recipient's local time"
		if sp.Zone != "" {
			zone = esc(sp.Zone)
		}
		fmt.Fprintf(w, "window: %s (%s); at %s:\n", esc(sp.Window.String()), zone, sp.At.Format(time.RFC3339))
		for i, z := range sp.Zones {
			if i == 10 {
				fmt.Fprintf(w, "  … and %d more zone sets\n", len(sp.Zones)-i)
				break
			}
			state := "closed, opens " + z.Change.Format(time.RFC3339)
			switch {
			case z.Change.IsZero():
				state = "never open in all of them at once: these rows will be skipped"
			case z.Open:
				state = "open until " + z.Change.Format(time.RFC3339)
			}
			fmt.Fprintf(w, "  %-40s %8d rows  %s\n", esc(zoneLabel(z.Zones)), z.Rows, state)
		}
	}
	for _, q := range sp.Quiet {
		verdict := "the window keeps within them"
		if !q.Within {
			verdict = "WARNING: the campaign's window does not keep within them"
		}
		fmt.Fprintf(w, "quiet hours: %d rows fall under %s (marketing %s recipient local time): %s\n", q.Rows, esc(q.Market), esc(q.Spec), verdict)
	}
	if sp.SendAt > 0 {
		fmt.Fprintf(w, "send_at: %d rows wait for their own send time, the last at %s\n", sp.SendAt, sp.LastSendAt.UTC().Format(time.RFC3339))
	}
	if !s.StartAt.IsZero() || !s.EndAt.IsZero() {
		fmt.Fprintf(w, "campaign: %s to %s\n", whenOr(s.StartAt, "now"), whenOr(s.EndAt, "no end"))
	}
	if sp.DailyLimit > 0 {
		fmt.Fprintf(w, "daily limit: %d unique recipients per moving 24 hours: the rows to send need at least %d day(s) (less what other campaigns of the portfolio send)\n", sp.DailyLimit, sp.Days)
		if days := sp.PerDay(); len(days) > 1 {
			fmt.Fprintf(w, "  rows a day: %s\n", perDay(days))
		}
	}
	if !sp.Window.IsZero() || sp.DailyLimit > 0 || sp.SendAt > 0 {
		fmt.Fprintf(w, "estimate under the schedule: about %s (the window open %.0f%% of the week; the rate, the daily limit, send_at and the first opening together; retries and throttles add to it)\n",
			roundDays(sp.ETA), 100*sp.OpenShare)
	}
}

// perDay lists the rows of each day, the first 7 and then the rest.
func perDay(days []int64) string {
	var parts []string
	for i, n := range days {
		if i == 7 {
			parts = append(parts, fmt.Sprintf("… and %d more days", len(days)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("day %d %d", i+1, n))
	}
	return strings.Join(parts, ", ")
}

// roundDays is a long estimate as an operator reads it.
func roundDays(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%.1f days", d.Hours()/24)
	}
	return d.Round(time.Minute).String()
}

func zoneLabel(key string) string {
	if key == "" {
		return "(zone unknown: UTC)"
	}
	return strings.ReplaceAll(key, ",", " + ")
}

func whenOr(t time.Time, none string) string {
	if t.IsZero() {
		return none
	}
	return t.Format(time.RFC3339)
}
