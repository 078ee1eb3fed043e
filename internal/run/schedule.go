package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/ledger"
	"github.com/bulksend/bulksend/internal/schedule"
	"github.com/bulksend/bulksend/internal/store"
)

// Schedule is when a campaign may send (issue 25): the first run's is
// stored with the settings, and a later run changes what it gives.
type Schedule struct {
	// Window is schedule.ParseWindow's specs ("mon-fri 09:00-20:00"), in
	// each recipient's local time, or in WindowTZ for everyone; nil: any
	// time.
	Window   []string
	WindowTZ string
	// StartAt: nothing before; EndAt: nothing after, and with Expire the
	// rows left then are skipped (expired). Zero: no bound.
	StartAt, EndAt time.Time
	Expire         bool
	// DailyLimit is the moving 24-hour limit of unique recipients: a
	// number, "auto" (what the preflight read of the portfolio), or ""
	// and "none" for no limit.
	DailyLimit string
}

// Budgeter is a channel whose sends count against a moving 24-hour limit
// of unique recipients that outlives one campaign (WhatsApp's messaging
// limit belongs to the business portfolio).
type Budgeter interface {
	// BudgetKey names whose limit sender's sends count against in the
	// operator ledger ("whatsapp:waba:…", "sms:…").
	BudgetKey(s store.Settings, sender string) string
	// DailyLimit is the limit the last preflight read (--daily-limit
	// auto): users, or unlimited; ok is false when nothing was read.
	DailyLimit(s store.Settings) (users int, unlimited, ok bool)
}

// ErrNoLedger refuses a daily limit without the operator ledger: the
// count belongs to every campaign of the portfolio, not to one.
var ErrNoLedger = errors.New("a daily limit needs the operator ledger")

// ErrNoDailyLimit refuses --daily-limit auto when no preflight read it.
var ErrNoDailyLimit = errors.New("the portfolio's messaging limit is unknown: no preflight read it")

// ScheduleError is a schedule setting that cannot be used.
type ScheduleError struct {
	Setting string // the setting's name, as Options.Given names it
	Value   string // its text, when that is what cannot be read
	Err     error
}

func (e *ScheduleError) Error() string {
	if e.Value != "" {
		return fmt.Sprintf("%s %q: %v", e.Setting, e.Value, e.Err)
	}
	return e.Setting + ": " + e.Err.Error()
}
func (e *ScheduleError) Unwrap() error { return e.Err }

// pinSchedule writes the first run's schedule into s.
func pinSchedule(s *store.Settings, sc Schedule) {
	s.Window, s.WindowTZ, s.StartAt, s.EndAt, s.Expire = sc.Window, sc.WindowTZ, utc(sc.StartAt), utc(sc.EndAt), sc.Expire
	s.DailyLimit = dailyLimitSetting(sc.DailyLimit)
}

// resumeSchedule applies what a later run gives to the stored schedule;
// windows reports whether the windows changed (rows an earlier run made
// wait for one are rescheduled).
func resumeSchedule(s *store.Settings, sc Schedule, given func(string) bool) (changed, windows bool) {
	if given("window") && !slices.Equal(sc.Window, s.Window) {
		s.Window, changed, windows = sc.Window, true, true
	}
	if given("window-tz") && sc.WindowTZ != s.WindowTZ {
		s.WindowTZ, changed, windows = sc.WindowTZ, true, true
	}
	if given("start-at") && !sc.StartAt.Equal(s.StartAt) {
		s.StartAt, changed = utc(sc.StartAt), true
	}
	if given("end-at") && !sc.EndAt.Equal(s.EndAt) {
		s.EndAt, changed = utc(sc.EndAt), true
	}
	if given("expire") && sc.Expire != s.Expire {
		s.Expire, changed = sc.Expire, true
	}
	if d := dailyLimitSetting(sc.DailyLimit); given("daily-limit") && d != s.DailyLimit {
		s.DailyLimit, changed = d, true
	}
	return changed, windows
}

func dailyLimitSetting(v string) string {
	if v == "none" || v == "0" {
		return ""
	}
	return v
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// zoner places the campaign's phones in time zones at import: only when
// a window in the recipients' own zones or a send_at column needs it.
type zoner struct {
	fixed schedule.Zones // WindowTZ's, for everyone; nil: each phone's own
	need  bool           // rows get their zones (a window in their zones)
}

func newZoner(s store.Settings) (*zoner, error) {
	z := &zoner{need: len(s.Window) > 0 && s.WindowTZ == ""}
	if s.WindowTZ != "" {
		zs, err := schedule.ParseZones(s.WindowTZ)
		if err != nil {
			return nil, &ScheduleError{Setting: "window-tz", Err: err}
		}
		z.fixed = zs
	}
	return z, nil
}

// window parses the campaign's window and how its zones are found.
func window(s store.Settings) (schedule.Window, *zoner, error) {
	w, err := schedule.ParseWindow(s.Window)
	if err != nil {
		return w, nil, &ScheduleError{Setting: "window", Err: err}
	}
	z, err := newZoner(s)
	return w, z, err
}

// zones are a zone group's zones: WindowTZ's for everyone, else its own.
func (z *zoner) zones(key string) (schedule.Zones, error) {
	if z.fixed != nil || key == "" {
		return z.fixed, nil
	}
	zs, err := schedule.ParseZones(key)
	if err != nil {
		return nil, fmt.Errorf("zones %q: %w", key, err)
	}
	return zs, nil
}

// zonesOf returns phone's zones ("" when unknown) for the zones column.
func zonesOf(phone string) string {
	zs, err := schedule.ZonesOf(phone)
	if err != nil {
		return ""
	}
	return zs.Key()
}

// place sets r's zones (when windows need them) and its send_at, read in
// its zones when cell is a local time.
func (z *zoner) place(r *store.Row, cell string) error {
	var zs schedule.Zones
	if z.fixed != nil {
		zs = z.fixed
	} else if z.need || cell != "" {
		var err error
		if zs, err = schedule.ZonesOf(r.Phone); err != nil {
			zs = nil // send_at then reads as UTC
		}
		if z.need {
			r.Zones = zs.Key()
		}
	}
	if cell == "" {
		return nil
	}
	t, err := schedule.ParseSendAt(cell, zs)
	if err != nil {
		return fmt.Errorf("send_at %q: %w", cell, err)
	}
	r.SendAt = t
	return nil
}

// gate is the engine's checkpoint with the campaign's schedule before it:
// a claim takes only rows whose window is open now in all their zones,
// within the campaign's start and end, and within the daily limit. Rows
// it may not send now wait as rows (next_at, wait): nothing sleeps per
// row, and the engine stops a sender whose next row is due beyond its
// horizon. Its clock may be a test's; what it tells the engine is in the
// engine's clock.
type gate struct {
	*store.Store
	now    func() time.Time
	log    *slog.Logger
	window schedule.Window
	zoner  *zoner // how a zone group's zones are found; nil without a window
	start  time.Time
	end    time.Time
	budget *budget // nil: no daily limit

	mu      sync.Mutex
	recheck time.Time // when a zone group's window next opens or closes; zero: now

	// optOuts, when not nil, keeps in the operator ledger the recipients
	// whose sends failed because they opted out: phones holds the phones
	// of the rows claimed and not yet recorded.
	optOuts *ledger.Ledger
	channel string
	phones  sync.Map // row -> phone
}

// newGate returns the schedule of c's settings before its store; with
// none it only brings the schedule's clock.
func (c *Campaign) newGate(ctx context.Context) (*gate, error) {
	s := c.Settings
	g := &gate{Store: c.Store, now: c.now, log: c.opts.Log, start: s.StartAt, end: s.EndAt, optOuts: c.opts.Ledger, channel: string(c.ch.Name())}
	if len(s.Window) > 0 {
		w, z, err := window(s)
		if err != nil {
			return nil, err
		}
		g.window, g.zoner = w, z
		if z.need {
			if n, err := c.Store.FillZones(ctx, zonesOf); err != nil {
				return nil, err
			} else if n > 0 {
				c.opts.Log.Info("placed the recipients in their time zones for the window", "rows", n)
			}
		}
	}
	b, err := c.newBudget(ctx)
	if err != nil {
		return nil, err
	}
	g.budget = b
	return g, nil
}

// Claim claims what the schedule lets sender send now.
func (g *gate) Claim(ctx context.Context, sender string, _ time.Time, limit int) ([]engine.Job, error) {
	now := g.now()
	if now.Before(g.start) || (!g.end.IsZero() && !now.Before(g.end)) {
		return nil, nil
	}
	if err := g.reschedule(ctx, now); err != nil {
		return nil, err
	}
	if g.budget != nil && g.budget.spent(sender, now) {
		return nil, nil
	}
	jobs, err := g.Store.Claim(ctx, sender, now, limit)
	if err == nil && g.budget != nil && len(jobs) > 0 {
		jobs, err = g.budget.admit(ctx, g.Store, sender, jobs, now)
	}
	if g.optOuts != nil {
		for _, j := range jobs {
			g.phones.Store(j.Row, j.Phone)
		}
	}
	return jobs, err
}

// Record records results, and keeps in the operator ledger the
// recipients a send found opted out, for every later campaign: a STOP
// (all messages), a stop of marketing (marketing only).
func (g *gate) Record(ctx context.Context, results []engine.Result) error {
	if err := g.Store.Record(ctx, results); err != nil || g.optOuts == nil {
		return err
	}
	var outs []ledger.OptOut
	for _, r := range results {
		p, ok := g.phones.LoadAndDelete(r.Row)
		if !ok || r.Outcome != engine.OutcomeFailed {
			continue
		}
		switch r.Reason {
		case campaign.FailOptedOut:
			outs = append(outs, ledger.OptOut{Phone: p.(string), Channel: g.channel, Source: "send failed: opted out", At: r.At})
		case campaign.FailStoppedMarketing:
			outs = append(outs, ledger.OptOut{Phone: p.(string), Channel: g.channel, Source: "send failed: stopped marketing messages", At: r.At, MarketingOnly: true})
		}
	}
	if len(outs) > 0 {
		if _, err := g.optOuts.AddOptOuts(ctx, outs); err != nil {
			g.log.Warn("the operator ledger could not keep opt-outs", "rows", len(outs), "err", err)
		}
	}
	return nil
}

// NextDue is when sender's next row may be sent, in the engine's clock;
// none when that is after the campaign's end.
func (g *gate) NextDue(ctx context.Context, sender string) (time.Time, bool, error) {
	now := g.now()
	if err := g.reschedule(ctx, now); err != nil {
		return time.Time{}, false, err
	}
	t, ok, err := g.Store.NextDue(ctx, sender)
	if err != nil || !ok {
		return t, ok, err
	}
	if t.Before(g.start) {
		t = g.start
	}
	if g.budget != nil {
		if free := g.budget.freeAt(sender); free.After(t) {
			t = free
		}
	}
	if !g.end.IsZero() && !t.Before(g.end) {
		return time.Time{}, false, nil
	}
	return time.Now().Add(t.Sub(now)), true, nil
}

// reschedule makes the rows whose window is closed at now wait for it to
// open, once per boundary: when a zone group's window opens or closes.
func (g *gate) reschedule(ctx context.Context, now time.Time) error {
	if g.window.IsZero() {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.recheck.IsZero() && now.Before(g.recheck) {
		return nil
	}
	groups, err := g.Store.ZoneGroups(ctx)
	if err != nil {
		return err
	}
	var next time.Time
	for _, grp := range groups {
		zs, err := g.zoner.zones(grp.Zones)
		if err != nil {
			return err
		}
		open, change, ok := g.window.Open(now, zs)
		if !ok {
			n, err := g.Store.SkipZones(ctx, grp.Zones, fmt.Sprintf("no window: %s is never open in all of %s at once", g.window, zoneNames(grp.Zones)), now)
			if err != nil {
				return err
			}
			g.log.Warn("rows skipped: the window is never open in all their time zones at once", "zones", zoneNames(grp.Zones), "rows", n)
			continue
		}
		if !open {
			if _, err := g.Store.WaitZones(ctx, grp.Zones, change); err != nil {
				return err
			}
		}
		if next.IsZero() || change.Before(next) {
			next = change
		}
	}
	g.recheck = next
	if next.IsZero() {
		g.recheck = now.Add(time.Hour)
	}
	return nil
}

func zoneNames(key string) string {
	if key == "" {
		return "UTC (no zone known)"
	}
	return strings.ReplaceAll(key, ",", ", ")
}

// finish leaves the rows the schedule holds back waiting with their
// reason, for status and the next run: the start, the daily limit.
func (g *gate) finish(ctx context.Context) error {
	now := g.now()
	if now.Before(g.start) {
		if _, err := g.Store.WaitAll(ctx, g.start, store.WaitStart); err != nil {
			return err
		}
	}
	if g.budget != nil {
		for _, sp := range g.budget.spentSenders(now) {
			if _, err := g.Store.WaitAll(ctx, sp.until, store.WaitBudget, sp.senders...); err != nil {
				return err
			}
		}
	}
	return nil
}

// budget is the daily limit: each claim's recipients are admitted by the
// operator ledger, shared with every campaign of the portfolio.
type budget struct {
	l     *ledger.Ledger
	limit int
	key   func(sender string) string

	mu      sync.Mutex
	until   map[string]time.Time       // by key: spent until then
	senders map[string]map[string]bool // by key: this run's senders that found it spent
}

// newBudget returns the campaign's daily limit, kept in the operator
// ledger; with a ledger and no limit it only records the sends, so that
// a later campaign of the portfolio with a limit counts them.
func (c *Campaign) newBudget(ctx context.Context) (*budget, error) {
	s := c.Settings
	bg, _ := c.ch.(Budgeter)
	limit := 0
	switch s.DailyLimit {
	case "":
	case "auto":
		if bg == nil {
			return nil, &ScheduleError{Setting: "daily-limit", Err: ErrNoDailyLimit}
		}
		users, unlimited, ok := bg.DailyLimit(s)
		if !ok {
			return nil, &ScheduleError{Setting: "daily-limit", Err: ErrNoDailyLimit}
		}
		if unlimited {
			c.opts.Log.Info("the portfolio's messaging limit is unlimited: no daily limit")
		} else {
			limit = users
			c.opts.Log.Info("daily limit: the portfolio's messaging limit", "unique_recipients_per_24h", users)
		}
	default:
		n, err := strconv.Atoi(s.DailyLimit)
		if err != nil || n < 0 {
			return nil, &ScheduleError{Setting: "daily-limit", Err: fmt.Errorf("%q is not a number of recipients or auto", s.DailyLimit)}
		}
		limit = n
	}
	if c.opts.Ledger == nil {
		if limit > 0 {
			return nil, &ScheduleError{Setting: "daily-limit", Err: ErrNoLedger}
		}
		return nil, nil
	}
	key := func(sender string) string { return c.opts.ledgerKey(string(c.ch.Name()) + ":" + sender) }
	if bg != nil {
		key = func(sender string) string { return c.opts.ledgerKey(bg.BudgetKey(s, sender)) }
	}
	return &budget{l: c.opts.Ledger, limit: limit, key: key, until: map[string]time.Time{}, senders: map[string]map[string]bool{}}, nil
}

// spent reports whether sender's limit is spent at now (as the last
// claim found it).
func (b *budget) spent(sender string, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.key(sender)
	if u, ok := b.until[k]; ok {
		if now.Before(u) {
			b.note(k, sender)
			return true
		}
		delete(b.until, k)
		delete(b.senders, k)
	}
	return false
}

func (b *budget) note(k, sender string) {
	if b.senders[k] == nil {
		b.senders[k] = map[string]bool{}
	}
	b.senders[k][sender] = true
}

func (b *budget) freeAt(sender string) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.until[b.key(sender)]
}

// admit lets through the jobs the ledger admits, and puts the others
// back, waiting until the limit has room again.
func (b *budget) admit(ctx context.Context, st *store.Store, sender string, jobs []engine.Job, now time.Time) ([]engine.Job, error) {
	k := b.key(sender)
	phones := make([]string, len(jobs))
	for i, j := range jobs {
		phones[i] = j.Phone
	}
	ok, err := b.l.Admit(ctx, k, phones, now, b.limit)
	if err != nil {
		return nil, errors.Join(err, st.Release(ctx, rowsOf(jobs), now, ""))
	}
	var in []engine.Job
	var out []int64
	for i, j := range jobs {
		if ok[i] {
			in = append(in, j)
		} else {
			out = append(out, j.Row)
		}
	}
	if len(out) == 0 {
		return in, nil
	}
	free, err := b.l.FreeAt(ctx, k, now, b.limit)
	if err != nil {
		return nil, err
	}
	if err := st.Release(ctx, out, free, store.WaitBudget); err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.until[k] = free
	b.note(k, sender)
	b.mu.Unlock()
	return in, nil
}

type spentKey struct {
	until   time.Time
	senders []string
}

// spentSenders returns, per spent limit, until when and the senders of
// this run that share it.
func (b *budget) spentSenders(now time.Time) []spentKey {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []spentKey
	for k, u := range b.until {
		if u.After(now) {
			out = append(out, spentKey{until: u, senders: slices.Sorted(maps.Keys(b.senders[k]))})
		}
	}
	return out
}

func rowsOf(jobs []engine.Job) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.Row
	}
	return out
}

// schedule returns the gate of the campaign's schedule, nil for none,
// with what earlier runs' schedules left waiting decided afresh.
func (c *Campaign) schedule(ctx context.Context) (*gate, error) {
	g, err := c.newGate(ctx)
	if err != nil {
		return nil, err
	}
	// Rows an earlier schedule held back are decided afresh: a start or
	// a budget always (they are checked as rows are claimed), a window when
	// it changed or is gone.
	waits := []store.Wait{store.WaitStart, store.WaitBudget}
	if c.rescheduleWindows || g.window.IsZero() {
		waits = append(waits, store.WaitWindow)
	}
	for _, w := range waits {
		if _, err := c.Store.Unwait(ctx, w); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// endSchedule leaves what the schedule holds back waiting, and at the
// campaign's end with Expire skips the rows left; it returns those.
func (c *Campaign) endSchedule(ctx context.Context, g *gate) (int64, error) {
	if err := g.finish(ctx); err != nil {
		return 0, err
	}
	s := c.Settings
	if s.EndAt.IsZero() || !s.Expire {
		return 0, nil
	}
	now := c.now()
	next, ok, err := c.Store.NextDue(ctx, "")
	if err != nil || !ok {
		return 0, err
	}
	if now.Before(s.EndAt) && next.Before(s.EndAt) {
		return 0, nil // still time to send some
	}
	n, err := c.Store.Expire(ctx, "expired: not sent by the campaign's end, "+s.EndAt.Format(time.RFC3339), now)
	if err == nil && n > 0 {
		c.opts.Log.Warn("rows expired: the campaign's end has come", "rows", n, "end_at", s.EndAt.Format(time.RFC3339))
	}
	return n, err
}

// noteCampaign records in the operator ledger where the campaign's
// checkpoint is: a receiver applies its statuses while it runs (bulksend
// receive finds it so), and its end says when it last ran.
func (c *Campaign) noteCampaign(ctx context.Context, now time.Time) error {
	l := c.opts.Ledger
	if l == nil || c.tmp != "" {
		return nil
	}
	return l.NoteCampaign(ctx, ledger.Campaign{Checkpoint: c.Store.Path(), CSV: c.opts.CSV, Channel: string(c.ch.Name()), ID: c.Settings.CampaignID, LastRun: now})
}

// noteLedger records in the operator ledger where the campaign is and
// what its numbers were learned to accept; a ledger that cannot be
// written is logged, never the run's failure.
func (c *Campaign) noteLedger(ctx context.Context, stats engine.Stats, seeded map[string]float64) {
	l := c.opts.Ledger
	if l == nil || c.tmp != "" {
		return
	}
	now := time.Now()
	err := c.noteCampaign(ctx, now)
	for sender, r := range stats.Learned {
		err = errors.Join(err, l.SetLearned(ctx, c.opts.ledgerKey(sender), r, now))
	}
	// A number that started at a learned limit and probed back up to the
	// rate: what was learned of it no longer holds.
	for sender := range seeded {
		if _, ok := stats.Learned[sender]; !ok && stats.Requests > 0 {
			err = errors.Join(err, l.ClearLearned(ctx, c.opts.ledgerKey(sender)))
		}
	}
	if err != nil {
		c.opts.Log.Warn("the operator ledger could not be written", "ledger", l.Path(), "err", err)
	}
}

// SchedulePlan is what a dry run says of the schedule.
type SchedulePlan struct {
	Window schedule.Window // zero: any time
	Zone   string          // WindowTZ; "": each recipient's own
	// Zones are the pending rows by zone set, most rows first, with
	// whether the window is open there at the plan's instant and when
	// that changes.
	Zones []ZonePlan
	At    time.Time
	// Quiet are the markets' legal hours the recipients fall under, with
	// the rows under each and whether the window keeps within them.
	Quiet []QuietPlan
	// DailyLimit is the limit of unique recipients per moving 24 hours
	// (0: none); Days how many days the pending rows need at it.
	DailyLimit int
	Days       int
	Rows       int64     // the pending rows the plan is for
	SendAt     int64     // pending rows with a send_at still to come
	LastSendAt time.Time // the latest of their send_at; zero: none
	// OpenShare is the share of a week the window is open (1 without
	// one); ETA the estimate under the window, the daily limit and the
	// rate together (see Plan.ScheduleETA).
	OpenShare float64
	ETA       time.Duration
}

// openShare is the share of a week w is open, read every quarter hour.
func openShare(w schedule.Window) float64 {
	if w.IsZero() {
		return 1
	}
	const step = 15 * time.Minute
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC) // a Monday
	open := 0
	n := int(7 * 24 * time.Hour / step)
	for i := range n {
		if ok, _, _ := w.Open(start.Add(time.Duration(i)*step), nil); ok {
			open++
		}
	}
	return float64(open) / float64(n)
}

// eta is how long the rows take under the schedule: the rate's time
// stretched to the hours the window is open, and at least the days the
// daily limit needs. An estimate: retries, throttles and other campaigns
// of the portfolio add to it.
func (sp *SchedulePlan) eta(atRate time.Duration) time.Duration {
	d := atRate
	if sp.OpenShare > 0 && sp.OpenShare < 1 {
		d = time.Duration(float64(atRate) / sp.OpenShare)
		// Nothing goes before the first window opens anywhere, and the
		// rows of a zone set whose window is closed go no sooner than it
		// opens.
		var first, last time.Time
		open := false
		for _, z := range sp.Zones {
			if z.Open {
				open = true
				continue
			}
			if z.Change.IsZero() {
				continue // never open in all its zones: skipped, not sent
			}
			if first.IsZero() || z.Change.Before(first) {
				first = z.Change
			}
			if z.Change.After(last) {
				last = z.Change
			}
		}
		if !open && !first.IsZero() {
			d += first.Sub(sp.At)
		}
		if !last.IsZero() {
			d = max(d, last.Sub(sp.At))
		}
	}
	if sp.Days > 1 {
		d = max(d, time.Duration(sp.Days-1)*24*time.Hour+atRate/time.Duration(sp.Days))
	}
	if !sp.LastSendAt.IsZero() {
		d = max(d, sp.LastSendAt.Sub(sp.At)) // the last row's own time
	}
	return d
}

// PerDay is how many of the pending rows the daily limit lets go on each
// day, the last day taking what is left; nil without a limit.
func (sp *SchedulePlan) PerDay() []int64 {
	if sp.DailyLimit <= 0 {
		return nil
	}
	var days []int64
	for left := sp.Rows; left > 0; left -= int64(sp.DailyLimit) {
		days = append(days, min(left, int64(sp.DailyLimit)))
	}
	return days
}

// ZonePlan is one zone set's pending rows.
type ZonePlan struct {
	Zones  string
	Rows   int64
	Open   bool
	Change time.Time // when it opens (or closes); zero: never opens in all
}

// QuietPlan is one market's legal hours and the rows under them.
type QuietPlan struct {
	Market, Spec string
	Rows         int64
	Within       bool // the campaign's window keeps within them
}

// planSchedule plans the campaign's schedule, nil when it has none and
// no recipient falls under a market's quiet hours.
func (c *Campaign) planSchedule(ctx context.Context, pending int64) (*SchedulePlan, error) {
	s := c.Settings
	now := c.now()
	sp := &SchedulePlan{Zone: s.WindowTZ, At: now, OpenShare: 1, Rows: pending}
	if len(s.Window) > 0 {
		w, z, err := window(s)
		if err != nil {
			return nil, err
		}
		sp.Window, sp.OpenShare = w, openShare(w)
		groups, err := c.Store.ZoneGroups(ctx)
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			zs, err := z.zones(g.Zones)
			if err != nil {
				return nil, err
			}
			open, change, ok := w.Open(now, zs)
			zp := ZonePlan{Zones: g.Zones, Rows: g.Rows, Open: open}
			if ok {
				zp.Change = change
			}
			if z.fixed != nil {
				zp.Zones = s.WindowTZ
			}
			sp.Zones = append(sp.Zones, zp)
		}
		slices.SortFunc(sp.Zones, func(a, b ZonePlan) int { return int(b.Rows - a.Rows) })
	}
	// The markets' hours bind marketing: a read of every phone, made only
	// for a campaign that has a window or is marketing.
	codes := map[string]int64{}
	if len(s.Window) > 0 || strings.EqualFold(s.Category, "marketing") || strings.EqualFold(s.MessageType, "promotional") {
		var err error
		if codes, err = c.Store.AreaCodes(ctx); err != nil {
			return nil, err
		}
	}
	quiet := map[string]*QuietPlan{}
	for ac, n := range codes {
		for _, r := range schedule.QuietRules("+1" + ac + "2000000") {
			q := quiet[r.Market]
			if q == nil {
				q = &QuietPlan{Market: r.Market, Spec: r.Spec, Within: !sp.Window.IsZero() && r.Within(sp.Window)}
				quiet[r.Market] = q
			}
			q.Rows += n
		}
	}
	for _, k := range slices.Sorted(maps.Keys(quiet)) {
		sp.Quiet = append(sp.Quiet, *quiet[k])
	}
	if n, err := strconv.Atoi(s.DailyLimit); err == nil && n > 0 {
		sp.DailyLimit = n
		sp.Days = int((pending + int64(n) - 1) / int64(n))
	} else if s.DailyLimit == "auto" {
		if bg, ok := c.ch.(Budgeter); ok {
			if users, unlimited, ok := bg.DailyLimit(s); ok && !unlimited && users > 0 {
				sp.DailyLimit = users
				sp.Days = int((pending + int64(users) - 1) / int64(users))
			}
		}
	}
	if s.SendAtColumn {
		w, err := c.Store.Waiting(ctx, now)
		if err != nil {
			return nil, err
		}
		sp.SendAt = w.SendAt
		if sp.SendAt > 0 {
			if sp.LastSendAt, err = c.Store.LastSendAt(ctx); err != nil {
				return nil, err
			}
		}
	}
	if sp.Window.IsZero() && len(sp.Quiet) == 0 && sp.DailyLimit == 0 && sp.SendAt == 0 && s.StartAt.IsZero() && s.EndAt.IsZero() {
		return nil, nil
	}
	return sp, nil
}
