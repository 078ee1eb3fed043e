// Package run is the use case of a campaign run, below any front end. It
// opens and locks a campaign's checkpoint, imports its CSV on the first
// run or checks a resume against it, prepares the rows (those a stopped
// run left sending, the in-doubt policy, the suppression list), lets the
// channel read its senders before the first send, and then either plans
// (a dry run) or drives the engine; both come back as values, a Plan or an
// Outcome. What is particular to a channel (a template or an SMS body,
// the provider's client or its sandbox, a preflight, opt-out lists) comes
// through the Channel seam. What the operator reads (words, hints, flags,
// exit codes, progress) is the front end's: errors here say what is
// wrong, with the values a front end needs to say how to fix it.
package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/ledger"
	"github.com/bulksend/bulksend/internal/pace"
	"github.com/bulksend/bulksend/internal/store"
)

// Options are a run's inputs, parsed once by the front end; nothing here
// changes them.
type Options struct {
	CSV string // the campaign's file
	DB  string // its checkpoint
	// From are the senders given for the first run (a CSV's from column
	// overrides them row by row); compared with the stored ones on a resume.
	From []string
	// Rate, Concurrency, MaxAttempts and ThrottleTries are pinned by the
	// first run and may change on a later one, where they are Given.
	Rate                                    float64
	Concurrency, MaxAttempts, ThrottleTries int
	// Given says whether the operator gave a setting this run, by its name
	// (the names are the flags' own: "rate", "from", "template"…). A resume
	// changes only what was given, and refuses a pinned setting given with
	// another value (*ChangedError). nil: nothing was given.
	Given func(setting string) bool

	// Schedule is when to send; its settings are stored, and a later run
	// changes those it gives (Given: "window", "window-tz", "start-at",
	// "end-at", "expire", "daily-limit").
	Schedule Schedule
	// Ledger is the operator ledger, shared by every campaign of this
	// user: the daily limit's count, what numbers were learned to accept,
	// where campaigns are. nil: none (a daily limit is then refused).
	Ledger *ledger.Ledger
	// Book, if not nil, is the sender numbers' budget shared with every
	// process sending from them (engine.Config.Book).
	Book pace.Book
	// LedgerScope keeps a rehearsal apart in the ledger: where the sends
	// go when not to the provider ("sandbox", a URL); "" for the provider.
	LedgerScope string
	// Now is the schedule's clock; nil: time.Now. Tests move it.
	Now func() time.Time

	InDoubt      campaign.Policy
	InDoubtGrace time.Duration
	Exclude      string // a suppression list file; "" for none

	// How the CSV is read on the first run.
	Region, PhoneColumn string
	Delimiter           rune // 0: detected

	// DryRun plans instead of sending: from a read of a campaign that
	// exists (Campaign.ReadOnly), else from an import into a temporary
	// checkpoint that is removed on Close.
	DryRun bool

	// Version is the program's, recorded with each run.
	Version string
	Log     *slog.Logger
	// Locked, if not nil, is called once the checkpoint is locked and
	// before it is opened: for what the front end opens only when this
	// run owns the campaign (a metrics port another run of it may hold).
	Locked func() error
}

func (o *Options) given(setting string) bool { return o.Given != nil && o.Given(setting) }

// ledgerKey is key as the ledger keeps it for this run's scope.
func (o *Options) ledgerKey(key string) string {
	if o.LedgerScope == "" {
		return key
	}
	return o.LedgerScope + "|" + key
}

// now is the schedule's clock.
func (c *Campaign) now() time.Time {
	if c.opts.Now != nil {
		return c.opts.Now()
	}
	return time.Now()
}

// ErrCSVChanged refuses a CSV that differs from the one the checkpoint was
// imported from: a checkpoint belongs to one list.
var ErrCSVChanged = errors.New("the CSV changed since this checkpoint was made")

// ErrNoSender refuses a first run with no sender: the CSV has no from
// column and no senders were given.
var ErrNoSender = errors.New("no sender: the CSV has no from column and no sender was given")

// ChangedError refuses a resume given a pinned setting with another value
// than the campaign's: it cannot change once sending started. A setting
// given once per value has them joined by ListSep (List).
type ChangedError struct{ Setting, Was, Now string }

func (e *ChangedError) Error() string {
	was, now := strings.ReplaceAll(e.Was, ListSep, ", "), strings.ReplaceAll(e.Now, ListSep, ", ")
	return fmt.Sprintf("setting %s %q differs from this campaign's %q: it cannot change once sending started", e.Setting, now, was)
}

// Pinned is a setting the first run fixes: its stored value (Was) and
// this run's (Now), compared when the setting is given.
type Pinned struct{ Setting, Was, Now string }

// ListSep joins the values of a setting given once per value (List): a
// character no value holds, so that the front end can say each as it was
// given.
const ListSep = "\x1f"

// List is the values of a setting given once per value, as Pinned holds
// them.
func List(values []string) string { return strings.Join(values, ListSep) }

// Stored returns the settings of the campaign in the checkpoint at db,
// nil when there is none (no file, or one a failed first run left without
// a campaign). It reads without taking the checkpoint.
func Stored(db string) (*store.Settings, error) {
	if _, err := os.Stat(db); err != nil {
		return nil, nil
	}
	s, err := store.ReadSettings(db)
	if errors.Is(err, store.ErrNoSettings) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// Campaign is a campaign's checkpoint, opened and locked for a run.
type Campaign struct {
	// Store is the checkpoint; Settings its campaign's, as this run sends
	// it (a resume's changes saved).
	Store    *store.Store
	Settings store.Settings
	// ReadOnly is a dry run of a campaign that exists: it plans from a
	// read and changes nothing.
	ReadOnly bool

	opts  Options
	ch    Channel
	bound Binding // the first run's, nil on a resume
	// severalParts: this run imported a row of more than one part (an
	// SMS of several); without one, the plan's pending parts are its
	// pending rows.
	severalParts bool
	lock         *store.Lock
	tmp          string // a dry run's temporary folder
	// rescheduleWindows: this run changed the window, so rows an earlier
	// run made wait for one are scheduled afresh.
	rescheduleWindows bool
}

// Open opens the campaign of o for a run through ch: it locks the
// checkpoint (a *store.LockedError when another process holds it), opens
// it, and imports the CSV on the first run or checks this run's settings
// against the stored ones on a resume. A Checker channel is checked
// before anything is made. ctx bounds the import: cancelled, it rolls
// back and leaves no campaign.
func Open(ctx context.Context, o Options, ch Channel) (_ *Campaign, err error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	stored, err := Stored(o.DB)
	if err != nil {
		return nil, err
	}
	c := &Campaign{opts: o, ch: ch}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	db := o.DB
	if o.DryRun {
		if stored != nil {
			c.ReadOnly = true
		} else {
			if c.tmp, err = os.MkdirTemp("", "bulksend-dry-run-"); err != nil {
				return nil, err
			}
			db = filepath.Join(c.tmp, "plan.db")
		}
	}
	if ck, ok := ch.(Checker); ok {
		if err := ck.Check(ctx); err != nil {
			return nil, err
		}
	}
	if c.lock, err = store.Acquire(db, "run"); err != nil {
		return nil, err
	}
	if o.Locked != nil {
		if err := o.Locked(); err != nil {
			return nil, err
		}
	}
	if c.Store, err = store.Open(db); err != nil {
		return nil, err
	}
	if c.Settings, err = c.settings(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Close closes the checkpoint and releases its lock; a dry run's
// temporary checkpoint is removed.
func (c *Campaign) Close() error {
	var errs []error
	if c.Store != nil {
		errs = append(errs, c.Store.Close())
	}
	errs = append(errs, c.lock.Release())
	if c.tmp != "" {
		errs = append(errs, os.RemoveAll(c.tmp))
	}
	return errors.Join(errs...)
}

// DryRun reports whether this run plans rather than sends.
func (c *Campaign) DryRun() bool { return c.opts.DryRun }

// Log is the run's logger.
func (c *Campaign) Log() *slog.Logger { return c.opts.Log }

// Binding is the first run's binding of the CSV to the channel's
// message, nil on a resume.
func (c *Campaign) Binding() Binding { return c.bound }

// SaveSettings stores c.Settings, as a channel changed them (a
// preflight's record).
func (c *Campaign) SaveSettings(ctx context.Context) error {
	_, err := c.Store.SaveSettings(ctx, c.Settings)
	return err
}

// settings returns the campaign's settings: imported now on the first
// run, checked against this run's on later ones.
func (c *Campaign) settings(ctx context.Context) (store.Settings, error) {
	s, err := c.Store.Settings(ctx)
	if errors.Is(err, store.ErrNoSettings) {
		return c.importCSV(ctx)
	}
	if err != nil {
		return s, err
	}
	o := &c.opts
	sum, size, err := hashFile(o.CSV)
	if err != nil {
		return s, err
	}
	if sum != s.CSVHash || size != s.CSVSize {
		return s, fmt.Errorf("%w (%s)", ErrCSVChanged, c.Store.Path())
	}
	pinned := append(c.ch.Pinned(s),
		Pinned{"from", strings.Join(s.Senders, ","), strings.Join(o.From, ",")},
		Pinned{"default-region", s.DefaultRegion, o.Region},
		Pinned{"phone-column", or(s.PhoneColumn, "phone"), o.PhoneColumn},
		Pinned{"delimiter", or(s.Delimiter, ","), DelimiterName(o.Delimiter)},
	)
	for _, p := range pinned {
		if o.given(p.Setting) && p.Now != p.Was {
			return s, &ChangedError{Setting: p.Setting, Was: p.Was, Now: p.Now}
		}
	}
	if err := c.ch.Resume(ctx, s); err != nil {
		return s, err
	}
	changed := false
	if o.given("rate") && o.Rate != s.Rate {
		s.Rate, changed = o.Rate, true
	}
	if o.given("concurrency") && o.Concurrency != s.Concurrency {
		s.Concurrency, changed = o.Concurrency, true
	}
	if o.given("max-attempts") && o.MaxAttempts != s.MaxAttempts {
		s.MaxAttempts, changed = o.MaxAttempts, true
	}
	if o.given("throttle-tries") && o.ThrottleTries != s.ThrottleTries {
		s.ThrottleTries, changed = o.ThrottleTries, true
	}
	if sc, windows := resumeSchedule(&s, o.Schedule, o.given); sc {
		changed = true
		c.rescheduleWindows = windows
	}
	if changed && !c.ReadOnly {
		n, err := c.Store.SaveSettings(ctx, s)
		if err != nil {
			return s, err
		}
		if n > 0 {
			o.Log.Warn("rows waiting for a retry had no attempts left under the new maximum: failed", "rows", n)
		}
	}
	return s, nil
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// ParseDelimiter reads a delimiter's name: "" (0, detect), ",", ";", "|",
// "tab" or `\t`.
func ParseDelimiter(s string) (rune, bool) {
	switch s {
	case "":
		return 0, true
	case ",", ";", "|":
		return rune(s[0]), true
	case "tab", `\t`:
		return '\t', true
	}
	return 0, false
}

// DelimiterName is how the plan and the settings name a delimiter.
func DelimiterName(r rune) string {
	switch r {
	case 0:
		return ""
	case '\t':
		return "tab"
	}
	return string(r)
}

// Seconds is a duration as the settings store it.
func Seconds(d time.Duration) string { return strconv.Itoa(int(d.Seconds())) }
