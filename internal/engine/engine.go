// Package engine is the send loop: for each sender number it claims due
// rows from the checkpoint, paces them, sends them with a bounded number
// of requests in flight, and records every outcome in batched
// transactions. Retries live in the checkpoint (attempts, next_at), never
// in sleeping goroutines.
//
// The engine owns its two seams: the Checkpoint it claims from and records
// to (the SQLite store in production) and the Sender it calls (a channel's
// client). It decides what becomes of a row by the class of the send error
// alone (campaign.Class), never by a provider's code.
//
// The provider can ask for rests. A sender number rested (SenderRested)
// sends nothing more in this run while the others go on; a rest of the
// whole run (SendError.RestFor, Receipt.RestFor) holds every request until
// it ends, and stops the run when it ends beyond the retry horizon. Rows
// a rest keeps from leaving stay pending with no attempt spent.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/pace"
)

// Checkpoint is the durable state the engine sends from. Implementations
// must be safe for concurrent use: claims of several sender numbers and
// the recording of results run at once.
type Checkpoint interface {
	// Claim marks up to limit pending rows of sender that are due at now
	// as sending, in one durable step, and returns them in order of due
	// time, then row. Each job's Attempts counts this claim. The write
	// must be durable before Claim returns: a crash after a request
	// leaves must never make its row look unsent.
	Claim(ctx context.Context, sender string, now time.Time, limit int) ([]Job, error)
	// Record applies results in one durable step. A result for a row
	// that is no longer sending changes nothing.
	Record(ctx context.Context, results []Result) error
	// NextDue returns when the earliest pending row of sender ("": of any
	// sender) falls due; ok is false when there is none.
	NextDue(ctx context.Context, sender string) (t time.Time, ok bool, err error)
}

// Sender sends one message and returns the provider's receipt. Its
// errors should be *campaign.SendError: the class decides what becomes of
// the row. Any other error is taken as Unanswered (in doubt), the only
// safe guess. A Sender that can tell when its request was written calls
// campaign.Departed with its ctx then: the pacer counts the request from
// that instant (a new connection's dial delays it).
type Sender interface {
	Send(ctx context.Context, m campaign.Message) (campaign.Receipt, error)
}

// Job is a claimed row: it is sending in the checkpoint.
type Job struct {
	Row      int64
	Phone    string
	Sender   string
	Params   []string
	Attempts int // including this one
	// Cost is what the send costs the sender's pacer: 1 for a WhatsApp
	// message, its parts for an SMS. 0 counts as 1.
	Cost int
	// Throttles is how many tries of this row were throttled before this
	// one (see Config.ThrottleTries).
	Throttles int
}

// Outcome is what became of one claimed row.
type Outcome int

const (
	OutcomeSent      Outcome = iota + 1 // accepted: MessageID set
	OutcomeFailed                       // permanent: Code and Title set
	OutcomeRetry                        // pending again from NextAt; the attempt counts
	OutcomeInDoubt                      // request left, no answer
	OutcomeRelease                      // not the row's doing: pending again from NextAt, the attempt does not count
	OutcomeThrottled                    // the sender was throttled: pending again from NextAt, the attempt does not count, one more throttled try
)

// Result is the outcome of one claimed row.
type Result struct {
	Row       int64
	Outcome   Outcome
	MessageID string
	Held      bool // sent, but held back by the provider (campaign.Receipt.Held)
	Code      int
	Title     string
	Reason    string // failed: campaign.SendError.Reason
	// Throttled: the answer was a throttle; a failed row counts it among
	// its throttled tries (OutcomeThrottled always does).
	Throttled bool
	NextAt    time.Time
	At        time.Time
	// Attempt is the request that led to this result; its At is zero when
	// no request was made (a row released by a rest or a stop).
	Attempt Attempt
}

// Attempt is one request to the provider, as the attempts record and
// metrics see it.
type Attempt struct {
	Row     int64
	Sender  string
	At      time.Time     // when the request left
	Latency time.Duration // until its answer came, or it was given up
	Class   string        // "accepted", or the campaign.Class of the error ("throttled", "in doubt"…)
	Code    int           // the provider's error code; 0 for none
}

// Accepted is the Class of an attempt the provider accepted.
const Accepted = "accepted"

// Observer is told what a run does as it happens, for metrics. Its
// methods are called from many goroutines at once and must not block.
type Observer interface {
	// Attempted: a request was answered (or given up).
	Attempted(a Attempt)
	// Waited: a request of sender waited d for a slot in flight and its
	// pacer before it left.
	Waited(sender string, d time.Duration)
}

// Config is what a run needs. Zero values take the defaults noted.
type Config struct {
	Checkpoint  Checkpoint
	Sender      Sender
	Senders     []string // sender numbers with rows to send
	CampaignID  string
	Rate        float64 // per sender number per second; ≤ 0: unlimited
	Concurrency int     // requests in flight; 0: rate × observed latency
	MaxAttempts int     // default 5
	// ThrottleTries: a row throttled this many times fails with
	// campaign.FailThrottleExhausted, and each throttled try waits
	// campaign.Backoff (ThrottleBase, ThrottleMax, growth 4) before the next
	// (SMS: 5 tries, 2 s to 256 s). 0: throttled rows are retried at once
	// and without limit, the pacer alone slowing them (WhatsApp, whose
	// numbers recover within seconds).
	ThrottleTries int
	ThrottleBase  time.Duration // default 2s
	ThrottleMax   time.Duration // default 256s

	BackoffBase  time.Duration  // first transient retry delay bound while such errors are common (see calm); default 1s
	BackoffMax   time.Duration  // default 5m
	PairBase     time.Duration  // pair-limit retries wait PairBase·4^(attempt-1), as Meta advises; default 1s
	RetryHorizon time.Duration  // wait in the run for retries due within this; default 5m
	FlushEvery   time.Duration  // result batching; default 100ms
	Unreachable  int            // consecutive never-sent errors that stop the run; default 50
	Jitter       func() float64 // uniform in [0,1) for backoff jitter; default math/rand/v2

	// Learned are limits an earlier run learned, per sender number: each
	// starts there, below Rate, and is probed up after a quiet spell.
	Learned map[string]float64
	// Standard is what every sender number of the channel accepts a second
	// (WhatsApp: 80): told more, a number not yet seen to accept it keeps
	// few sends beyond it in flight (pace.Pacer.Standard). 0: none.
	Standard float64
	// Proven are sender numbers known to accept more than Standard (a
	// WhatsApp throughput level of HIGH): they are not held.
	Proven []string

	// Book, if not nil, is a book of send slots shared with every other
	// process sending from these numbers: each send books its slot there
	// too. A Book that cannot be reached stops the run (Run returns its
	// error) after the requests in flight; nothing leaves unbooked.
	Book pace.Book

	Observer Observer // nil: none
	// Log's messages name a setting as {rate}: the front end says what
	// sets it.
	Log *slog.Logger
}

// FatalError stops a run: the provider refused in a way no retry fixes.
// Err is the Sender's error; errors.As reaches the provider's own.
type FatalError struct{ Err *campaign.SendError }

func (e *FatalError) Error() string { return e.Err.Error() }
func (e *FatalError) Unwrap() error { return e.Err }

// ErrUnreachable stops a run whose requests cannot leave this machine.
var ErrUnreachable = errors.New("the API cannot be reached")

// Rest is a sender number that sends nothing more in a run: the provider
// restricted it (campaign.SenderRested).
type Rest struct {
	Sender string
	Code   int    // the provider's code, e.g. WhatsApp's 131048
	Title  string // its short meaning
}

// pauseWithoutLength is the rest of a Paused answer that says not how
// long: the adapter should say, and resending at once would only meet the
// same answer.
const pauseWithoutLength = time.Minute

// Stats are live counters of a run. Read them with Engine.Stats.
type Stats struct {
	Started   time.Time
	Requests  int64 // requests that left, answered or not
	Sent      int64 // accepted by the API
	SentCost  int64 // of Sent, what they cost the pacers: their parts for SMS, one each else
	Held      int64 // of Sent, held back by the provider (they may still fail)
	Failed    int64 // failed permanently
	Retries   int64 // scheduled retries (transient, pair limit)
	Throttled int64 // throttling answers (130429 and kin)
	InDoubt   int64
	InFlight  int
	Limit     int // current concurrency bound
	// Learned holds the sender numbers that throttles showed to accept
	// less than the configured rate, with what they accept per second.
	Learned map[string]float64
}

// Engine runs one campaign. Make it with New; run it once.
type Engine struct {
	cfg     Config
	pacer   *pace.Pacer
	learned sync.Map // sender -> true once the log said what it accepts
	gate    *gate
	log     *slog.Logger

	results chan done
	stopReq context.CancelFunc // stops claiming (fatal error, unreachable)

	mu       sync.Mutex
	fatal    error
	pending  map[string]int // per sender: claimed but not yet recorded
	recorded chan struct{}  // closed and replaced after each flush
	// idling is, per sender, whether its claimer has nothing due and waits
	// for its rows' answers to be recorded: while it does, that sender's
	// answers are recorded as they come, not a flush later (the end of a
	// campaign, its retries). Made by New.
	idling   map[string]*atomic.Bool
	flushNow chan struct{} // a claimer began idling: record what is held

	stopSender map[string]context.CancelFunc // set by Run before any send; stops one sender's claimer and dispatcher
	rests      []Rest                        // senders rested, in order
	restUntil  time.Time                     // no request leaves before this
	restStop   bool                          // a rest beyond the horizon stopped the run

	troubles map[string]*trouble // per sender, made by New

	started                                                   time.Time
	sent, sentCost, held, failed, retries, throttled, inDoubt atomic.Int64
	requests                                                  atomic.Int64
	unsentStreak                                              atomic.Int64
}

// New returns an engine for cfg.
func New(cfg Config) *Engine {
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.BackoffBase <= 0 {
		cfg.BackoffBase = time.Second
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = 5 * time.Minute
	}
	if cfg.ThrottleBase <= 0 {
		cfg.ThrottleBase = 2 * time.Second
	}
	if cfg.ThrottleMax <= 0 {
		cfg.ThrottleMax = 256 * time.Second
	}
	if cfg.PairBase <= 0 {
		cfg.PairBase = time.Second
	}
	if cfg.RetryHorizon <= 0 {
		cfg.RetryHorizon = 5 * time.Minute
	}
	if cfg.FlushEvery <= 0 {
		cfg.FlushEvery = 100 * time.Millisecond
	}
	if cfg.Unreachable <= 0 {
		cfg.Unreachable = 50
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Observer == nil {
		cfg.Observer = noObserver{}
	}
	total := cfg.Rate * float64(len(cfg.Senders))
	troubles := make(map[string]*trouble, len(cfg.Senders))
	idling := make(map[string]*atomic.Bool, len(cfg.Senders))
	for _, s := range cfg.Senders {
		troubles[s] = &trouble{share: 1}
		idling[s] = &atomic.Bool{}
	}
	pacer := pace.New(cfg.Rate)
	if cfg.Book != nil {
		pacer = pace.Shared(cfg.Rate, cfg.Book)
	}
	pacer.Standard(cfg.Standard)
	for _, s := range cfg.Proven {
		pacer.Prove(s)
	}
	for s, l := range cfg.Learned {
		pacer.Seed(s, l, time.Now())
	}
	return &Engine{
		cfg:      cfg,
		pacer:    pacer,
		gate:     newGate(cfg.Concurrency, total),
		log:      cfg.Log,
		results:  make(chan done, 4096),
		pending:  map[string]int{},
		recorded: make(chan struct{}),
		flushNow: make(chan struct{}, 1),
		troubles: troubles,
		idling:   idling,
		started:  time.Now(), // set here: Stats may be read before Run starts
	}
}

// Stats returns a snapshot of the run's counters.
func (e *Engine) Stats() Stats {
	limit, used := e.gate.snapshot()
	return Stats{
		Started: e.started, Requests: e.requests.Load(), Sent: e.sent.Load(), SentCost: e.sentCost.Load(), Held: e.held.Load(), Failed: e.failed.Load(), Retries: e.retries.Load(),
		Throttled: e.throttled.Load(), InDoubt: e.inDoubt.Load(), InFlight: used, Limit: limit,
		Learned: e.learnedLimits(),
	}
}

// slower is how far under the configured rate a learned limit must be to
// be told: a few percent is the noise of a loaded machine or network.
const slower = 0.95

// learnedLimits returns the senders whose learned limit is clearly below
// the configured rate; nil when none is.
func (e *Engine) learnedLimits() map[string]float64 {
	var out map[string]float64
	for _, s := range e.cfg.Senders {
		if l := e.pacer.Learned(s); e.cfg.Rate > 0 && l < slower*e.cfg.Rate {
			if out == nil {
				out = map[string]float64{}
			}
			out[s] = l
		}
	}
	return out
}

// Rested returns the sender numbers rested so far, in the order they were
// rested. It is safe to call while Run runs.
func (e *Engine) Rested() []Rest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.rests)
}

// RestUntil returns when the rest the provider asked for ends; zero when
// the run is not resting. After a Run that a rest beyond the retry
// horizon stopped, it says when a new run may send. A rest holds every
// sender of the run: a call budget belongs to a business account, and a
// campaign's numbers normally share one.
func (e *Engine) RestUntil() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.restUntil.After(time.Now()) {
		return time.Time{}
	}
	return e.restUntil
}

// Run sends until no row is due within the retry horizon, ctx is
// cancelled, or a fatal error. Cancelling ctx stops claiming; requests in
// flight finish (bounded by the sender's timeout) and are recorded, rows
// claimed but not sent go back to pending, and Run returns ctx's error.
// A fatal API answer returns a *FatalError after the same drain.
//
// Rests are not errors: a run that rested senders (Rested) or stopped
// for a rest beyond the horizon (RestUntil) returns nil with their rows
// still pending.
func (e *Engine) Run(ctx context.Context) error {
	claimCtx, stop := context.WithCancel(ctx)
	defer stop()
	e.stopReq = stop
	senderCtx := make(map[string]context.Context, len(e.cfg.Senders))
	e.mu.Lock()
	e.stopSender = make(map[string]context.CancelFunc, len(e.cfg.Senders))
	for _, s := range e.cfg.Senders {
		c, cancel := context.WithCancel(claimCtx)
		defer cancel()
		senderCtx[s], e.stopSender[s] = c, cancel
	}
	e.mu.Unlock()

	recErr := make(chan error, 1)
	go func() { recErr <- e.record() }()

	var sends sync.WaitGroup
	var dispatchers sync.WaitGroup
	dispatchErr := make(chan error, len(e.cfg.Senders))
	for _, s := range e.cfg.Senders {
		dispatchers.Add(1)
		go func() {
			defer dispatchers.Done()
			if err := e.dispatch(senderCtx[s], ctx, s, &sends); err != nil {
				dispatchErr <- err
				stop()
			}
		}()
	}
	dispatchers.Wait()
	sends.Wait()
	close(e.results)
	rerr := <-recErr
	close(dispatchErr)

	e.mu.Lock()
	fatal := e.fatal
	e.mu.Unlock()
	switch {
	case rerr != nil && fatal != nil && fatal != rerr:
		return errors.Join(rerr, fatal) // the fatal answer stays visible, with its hint
	case rerr != nil:
		return rerr
	case fatal != nil:
		return fatal
	}
	for err := range dispatchErr {
		return err
	}
	return ctx.Err()
}

// dispatch sends the rows of one sender number. A claimer goroutine keeps
// the next batch ready, so sending never stops to wait for a claim. ctx
// is done when the sender stops: the run stops or the sender is rested.
//
// Rows go in claim order, except that a row of fewer parts may go before
// one that waits for room in the second for all of its own (pick).
func (e *Engine) dispatch(ctx, parent context.Context, sender string, sends *sync.WaitGroup) error {
	// One claim ready beside the rows held: a crash leaves them in doubt.
	// For rows of one part that is two claims at most; rows of several
	// parts are held to choose from: up to maxHeld−1 rows and two claims.
	batches := make(chan []Job)
	claimErr := make(chan error, 1)
	go func() {
		defer close(batches)
		claimErr <- e.claim(ctx, sender, batches)
	}()
	var held []heldJob // claimed, not sent, in claim order
	for open := true; open || len(held) > 0; {
		if len(held) == 0 {
			var jobs []Job
			if jobs, open = <-batches; !open {
				break
			}
			held = hold(held, jobs)
		} else if open && len(held) < maxHeld && slices.ContainsFunc(held, severalParts) {
			// The batch the claimer has ready joins this one, so that
			// there is a choice of sizes at its end too (rows of one part
			// have no use for one: they go in claim order).
			select {
			case jobs, ok := <-batches:
				held, open = hold(held, jobs), ok
			default:
			}
		}
		i := e.pick(sender, held)
		j := held[i].Job
		slot, ok := e.slot(ctx, sender, j.Cost)
		if !ok {
			// Stopped, or resting: rows claimed do not wait out a rest
			// as sending (a crash would leave them in doubt); they go
			// back due at its end, and the claimer waits it out.
			jobs := make([]Job, len(held))
			for k, h := range held {
				jobs[k] = h.Job
			}
			e.release(sender, jobs)
			held = held[:0]
			continue
		}
		for k := range held[:i] {
			held[k].passed++
		}
		held = slices.Delete(held, i, i+1)
		sends.Add(1)
		// In-flight requests outlive a cancelled run: they are bounded
		// by the request timeout and their answers must be recorded.
		go e.send(context.WithoutCancel(parent), j, slot, sends)
	}
	return <-claimErr
}

const (
	// maxHeld bounds the rows a dispatcher takes in from the claimer
	// before sending them: its choice of sizes.
	maxHeld = 8
	// maxPassed is how many rows may go before a row claimed ahead of
	// them; then none may pass it, and it waits for its room: no row
	// waits on forever.
	maxPassed = 8
)

// heldJob is a claimed row a dispatcher holds, and how many rows claimed
// after it went before it.
type heldJob struct {
	Job
	passed int
}

func severalParts(h heldJob) bool { return h.Cost > 1 }

func hold(held []heldJob, jobs []Job) []heldJob {
	for _, j := range jobs {
		held = append(held, heldJob{Job: j})
	}
	return held
}

// pick returns which held row goes next: the first, unless it must wait
// for room in the second for all its parts (an SMS of several) and a row
// of fewer parts could leave sooner, in the room the first waits for;
// then the one of those that can leave soonest, among the rows up to the
// first that maxPassed rows have passed. A strict window holds a row of k
// parts until k are free, and in claim order that room goes unused (on a
// mix of 1, 2 and 3 parts, 3 to 5% of the rate).
func (e *Engine) pick(sender string, held []heldJob) int {
	if len(held) < 2 || held[0].Cost <= 1 || held[0].passed >= maxPassed {
		return 0
	}
	now := time.Now()
	first := e.pacer.Due(sender, now, held[0].Cost)
	if first <= 0 {
		return 0
	}
	best, soonest := 0, first
	for i, h := range held[1:] {
		if h.Cost < held[0].Cost {
			// Fewer parts: room grows with fewer, never more.
			if d := e.pacer.Due(sender, now, h.Cost); d < soonest {
				best, soonest = i+1, d
			}
		}
		if h.passed >= maxPassed {
			break
		}
	}
	return best
}

// slot waits until a request of sender that costs cost may leave: a slot
// in flight and the pacer's send slot. It reports false when ctx is done
// or the run rests.
func (e *Engine) slot(ctx context.Context, sender string, cost int) (pace.Send, bool) {
	if !e.RestUntil().IsZero() {
		return pace.Send{}, false
	}
	start := time.Now()
	// The slot in flight first, then the pacer's send slot: booked the
	// other way round, a send held up by the gate would leave late and the
	// next one at once, two requests back to back.
	if err := e.gate.acquire(ctx); err != nil {
		return pace.Send{}, false
	}
	slot, err := e.pacer.WaitN(ctx, sender, cost)
	if err != nil {
		e.gate.giveBack()
		if ctx.Err() == nil {
			// The shared book is gone: sending on by this process's pace
			// alone would overrun the number with the other processes.
			e.setFatal(err)
		}
		return pace.Send{}, false
	}
	// Checked again: a rest or a stop that came while this waited in the
	// gate or the pacer must hold this request too.
	if ctx.Err() != nil || !e.RestUntil().IsZero() {
		e.gate.giveBack()
		e.pacer.Answered(slot, pace.Unsent, time.Now())
		return pace.Send{}, false
	}
	// Only a request that leaves has waited: a stop or a rest is not a
	// wait for the limiter.
	e.cfg.Observer.Waited(sender, time.Since(start))
	return slot, true
}

// waitRest waits for the rest of the run to end, or ctx.
func (e *Engine) waitRest(ctx context.Context) error {
	for {
		// Read again after each wait: a later answer may extend the rest.
		d := time.Until(e.RestUntil())
		if d <= 0 {
			return ctx.Err()
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// release puts claimed rows that never left back to pending, no attempt
// spent. During a rest they fall due at its end, so that a run resumed
// before then does not send them early.
func (e *Engine) release(sender string, jobs []Job) {
	now := time.Now()
	next := e.RestUntil() // zero: due as they were
	for _, j := range jobs {
		e.results <- done{Result: Result{Row: j.Row, Outcome: OutcomeRelease, NextAt: next, At: now}, sender: sender}
	}
}

// claim claims batches of sender's due rows into out until none is due
// within the retry horizon or ctx is done.
func (e *Engine) claim(ctx context.Context, sender string, out chan<- []Job) error {
	cost := 1.0 // the mean cost of the last claim's jobs: SMS claims are sized in parts
	for ctx.Err() == nil {
		// Rows claimed during a rest would sit sending until it ends, and
		// in doubt after a crash.
		if e.waitRest(ctx) != nil {
			break
		}
		// Not cancellable: a claim interrupted after it committed would
		// leave rows sending that nobody sends.
		jobs, err := e.cfg.Checkpoint.Claim(context.WithoutCancel(ctx), sender, time.Now(), e.claimSize(sender, cost))
		if err != nil {
			return err
		}
		if len(jobs) > 0 {
			n := 0
			for _, j := range jobs {
				n += max(j.Cost, 1)
			}
			cost = float64(n) / float64(len(jobs))
		}
		if len(jobs) == 0 {
			more, err := e.idle(ctx, sender)
			if err != nil && ctx.Err() != nil {
				// A read cut short by the stop (a rest, a fatal answer, a
				// signal) is not the run's error: the stop says why.
				return nil
			}
			if err != nil || !more {
				return err
			}
			continue
		}
		e.mu.Lock()
		e.pending[sender] += len(jobs)
		e.mu.Unlock()
		select {
		case out <- jobs:
		case <-ctx.Done():
			e.release(sender, jobs)
		}
	}
	return nil
}

// claimSize is a tenth of a second of work: a crash leaves the rows of
// its last claim in doubt, so claims stay small (a claim is one cheap
// transaction, ten a second per number), but for a number that sends
// rows of several parts at least half what a dispatcher holds to choose
// from. The rate is in the pacer's units
// (an SMS campaign's parts): cost is what a claimed job has cost of late,
// so that a claim of multi-part rows holds a tenth of a second of parts.
func (e *Engine) claimSize(sender string, cost float64) int {
	r := e.pacer.Rate(sender)
	if math.IsInf(r, 1) || r <= 0 {
		limit, _ := e.gate.snapshot()
		return max(256, 2*limit)
	}
	n := int(math.Ceil(r / 10 / max(cost, 1)))
	if cost > 1 {
		// Rows of several parts: a few to choose from (pick), whatever
		// the rate.
		n = max(n, maxHeld/2)
	}
	return max(1, min(200, n))
}

// idle is called when sender has nothing due. It waits for claimed rows
// to be recorded (their outcome may be a retry) and for retries due within
// the horizon; it reports whether there may be more to send.
func (e *Engine) idle(ctx context.Context, sender string) (bool, error) {
	e.mu.Lock()
	inflight := e.pending[sender]
	wait := e.recorded
	e.mu.Unlock()
	if inflight > 0 {
		if b := e.idling[sender]; b != nil {
			b.Store(true)
			defer b.Store(false)
		}
		select {
		case e.flushNow <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
		case <-wait:
		}
		return true, nil
	}
	due, ok, err := e.cfg.Checkpoint.NextDue(ctx, sender)
	if err != nil || !ok {
		return false, err
	}
	d := time.Until(due)
	if d > e.cfg.RetryHorizon {
		e.log.Info("the next row is due beyond the horizon: the run ends for this sender", "sender", sender, "next", due.Format(time.RFC3339))
		return false, nil
	}
	if d > 0 {
		e.log.Debug("waiting for retries", "sender", sender, "in", d.Round(time.Millisecond))
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	return true, nil
}

func (e *Engine) send(ctx context.Context, j Job, slot pace.Send, sends *sync.WaitGroup) {
	defer sends.Done()
	msg := campaign.Message{
		Row: j.Row, From: j.Sender, To: j.Phone,
		Params: j.Params, Ref: campaign.Ref{Campaign: e.cfg.CampaignID, Row: j.Row},
	}
	start := time.Now()
	e.pacer.Left(slot, start)
	ctx = campaign.WithDeparted(ctx, func(at time.Time) { e.pacer.Left(slot, at) })
	e.requests.Add(1)
	rc, err := e.cfg.Sender.Send(ctx, msg)
	now := time.Now()
	e.gate.release(now.Sub(start))
	r := e.outcome(j, rc, err, now)
	e.learn(slot, err, now)
	r.Attempt = Attempt{Row: j.Row, Sender: j.Sender, At: start, Latency: now.Sub(start), Class: Accepted}
	if err != nil {
		r.Attempt.Class, r.Attempt.Code = classOf(err)
	}
	e.cfg.Observer.Attempted(r.Attempt)
	e.results <- done{Result: r, sender: j.Sender}
}

// classOf is how an attempt's error is recorded: its class and code.
func classOf(err error) (string, int) {
	var se *campaign.SendError
	if !errors.As(err, &se) {
		return campaign.Unanswered.String(), 0
	}
	return se.Class.String(), se.Code
}

// Rates returns the pace each sender number is sent at now, per second
// (learning and headroom included); +Inf when unlimited.
func (e *Engine) Rates() map[string]float64 {
	out := make(map[string]float64, len(e.cfg.Senders))
	for _, s := range e.cfg.Senders {
		out[s] = e.pacer.Rate(s)
	}
	return out
}

// Split makes this run send from sender at share (0 to 1] of the rate
// from now: other runs send from the number too.
func (e *Engine) Split(sender string, share float64) {
	e.pacer.Split(sender, share, time.Now())
}

// Limits returns what each sender number is believed to accept per
// second: the configured rate until a throttle shows less; +Inf when
// unlimited.
func (e *Engine) Limits() map[string]float64 {
	out := make(map[string]float64, len(e.cfg.Senders))
	for _, s := range e.cfg.Senders {
		out[s] = e.pacer.Limit(s)
	}
	return out
}

// learn passes the API's answer to the pacer: whether the send counted
// against its number's throughput. The first time a number shows it
// accepts less than the configured rate, the log says so.
func (e *Engine) learn(slot pace.Send, err error, now time.Time) {
	v := pace.Counted
	var se *campaign.SendError
	if errors.As(err, &se) {
		switch se.Class {
		case campaign.Throttled:
			v = pace.Throttled
		case campaign.Unanswered:
			// It may have counted.
		case campaign.NeverLeft:
			v = pace.Unsent
		default:
			v = pace.NotCounted
		}
	}
	c, lowered := e.pacer.Answered(slot, v, now)
	if !lowered || math.IsInf(c.Ceiling, 1) || c.Limit >= slower*c.Ceiling {
		return
	}
	if _, told := e.learned.LoadOrStore(c.From, true); told {
		return
	}
	e.log.Warn(fmt.Sprintf("number %s accepts about %.0f/s, not %.0f/s: pass {rate} %.0f", c.From, c.Limit, c.Ceiling, c.Limit),
		"sender", c.From, "learned_per_second", math.Round(c.Limit), "rate", c.Ceiling)
}

type noObserver struct{}

func (noObserver) Attempted(Attempt)            {}
func (noObserver) Waited(string, time.Duration) {}

// outcome decides what becomes of a row from the answer to its request.
func (e *Engine) outcome(j Job, rc campaign.Receipt, err error, now time.Time) Result {
	r := Result{Row: j.Row, At: now}
	if err == nil {
		e.calm(j.Sender, false)
		e.unsentStreak.Store(0)
		e.sent.Add(1)
		e.sentCost.Add(int64(max(j.Cost, 1)))
		if rc.Held {
			e.held.Add(1)
		}
		if rc.RestFor > 0 {
			e.rest(now, now.Add(rc.RestFor), "row", j.Row)
		}
		r.Outcome, r.MessageID, r.Held = OutcomeSent, rc.ID, rc.Held
		return r
	}
	var se *campaign.SendError
	if !errors.As(err, &se) {
		se = &campaign.SendError{Class: campaign.Unanswered, Title: err.Error(), Err: err}
	}
	if se.Class != campaign.NeverLeft {
		e.unsentStreak.Store(0)
	}
	calm := e.calm(j.Sender, se.Class == campaign.Transient || se.Class == campaign.Unanswered || se.Class == campaign.NeverLeft)
	restFor := se.RestFor
	if se.Class == campaign.Paused && restFor <= 0 {
		restFor = pauseWithoutLength
	}
	if restFor > 0 {
		// Any answer may carry it, whatever becomes of its row.
		e.rest(now, now.Add(restFor), "row", j.Row, "code", se.Code, "title", se.Title)
	}
	r.Code, r.Title = se.Code, se.Title
	switch se.Class {
	case campaign.Fatal:
		e.setFatal(&FatalError{Err: se})
		r.Outcome = OutcomeRelease // not this row's fault
	case campaign.Throttled:
		e.throttled.Add(1)
		// Not the recipient's fault: the attempt does not count.
		r.Outcome, r.NextAt, r.Throttled = OutcomeThrottled, now, true
		if tries := j.Throttles + 1; e.cfg.ThrottleTries > 0 {
			if tries >= e.cfg.ThrottleTries {
				e.failed.Add(1)
				r.Outcome, r.Reason, r.Throttled = OutcomeFailed, campaign.FailThrottleExhausted, true
				r.Title = fmt.Sprintf("%s (throttled %d times)", r.Title, tries)
				return r
			}
			e.retries.Add(1)
			r.NextAt = now.Add(campaign.Backoff(tries, e.cfg.ThrottleBase, e.cfg.ThrottleMax, 4, e.cfg.Jitter()))
		}
	case campaign.SenderRested:
		e.restSender(j.Sender, se)
		// Not the recipient's fault: the row waits for a run this sender
		// may send in, and no attempt is spent.
		r.Outcome, r.NextAt = OutcomeRelease, e.dueAfterRest(now)
	case campaign.Paused:
		r.Outcome, r.NextAt = OutcomeRelease, e.dueAfterRest(now)
	case campaign.PairLimited:
		// Meta: retry after 4^X seconds.
		return e.retry(r, j, se, now.Add(campaign.Backoff(j.Attempts, e.cfg.PairBase, 0, 4, 1)))
	case campaign.Transient:
		// A lone error among accepted answers is the API's noise: waiting
		// to retry it only makes a tail at the campaign's end. Common,
		// they are the API in trouble, and retries back off.
		if calm {
			return e.retry(r, j, se, now)
		}
		return e.retry(r, j, se, now.Add(campaign.Backoff(j.Attempts, e.cfg.BackoffBase, e.cfg.BackoffMax, 2, e.cfg.Jitter())))
	case campaign.Permanent:
		e.failed.Add(1)
		r.Outcome, r.Reason = OutcomeFailed, se.Reason
	case campaign.NeverLeft:
		// Safe to send again, and no attempt spent.
		if n := e.unsentStreak.Add(1); n >= int64(e.cfg.Unreachable) {
			e.setFatal(fmt.Errorf("%w: %d requests in a row could not be sent, the last: %v", ErrUnreachable, n, err))
		}
		r.Code, r.Title = 0, ""
		r.Outcome, r.NextAt = OutcomeRelease, now.Add(campaign.Backoff(1, e.cfg.BackoffBase, e.cfg.BackoffMax, 2, e.cfg.Jitter()))
	default: // Unanswered, or a class this engine does not know
		e.inDoubt.Add(1)
		r.Outcome = OutcomeInDoubt
	}
	return r
}

// Answers that show the API in trouble (a transient error, no answer, a
// request that never left) are rare on a number below this share of its
// recent answers; over it its transient errors back off.
const rareTrouble = 0.1

// trouble is the share of a number's answers that show the API in
// trouble, a moving average over about its last 128 answers. It starts
// at 1: a number is calm only once about 300 answers showed it (under a
// second at 500/s), so an API failing from the start is backed off from.
type trouble struct {
	mu    sync.Mutex
	share float64
}

// calm records whether an answer to a request of sender shows the API in
// trouble, and reports whether such answers are rare on the number.
func (e *Engine) calm(sender string, troubled bool) bool {
	t := e.troubles[sender]
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	x := 0.0
	if troubled {
		x = 1
	}
	t.share += (x - t.share) / 128
	return t.share < rareTrouble
}

func (e *Engine) retry(r Result, j Job, se *campaign.SendError, at time.Time) Result {
	if j.Attempts >= e.cfg.MaxAttempts {
		e.failed.Add(1)
		r.Outcome, r.Reason = OutcomeFailed, se.Reason
		r.Title = fmt.Sprintf("%s (after %d attempts)", r.Title, j.Attempts)
		return r
	}
	e.retries.Add(1)
	r.Outcome, r.NextAt = OutcomeRetry, at
	return r
}

// dueAfterRest is when a row released at now falls due: at the end of
// the run's rest, if any.
func (e *Engine) dueAfterRest(now time.Time) time.Time {
	if until := e.RestUntil(); until.After(now) {
		return until
	}
	return now
}

// restSender stops sender for the rest of the run: its claimer claims no
// more and the rows it holds go back; its requests in flight finish.
func (e *Engine) restSender(sender string, se *campaign.SendError) {
	e.mu.Lock()
	first := !slices.ContainsFunc(e.rests, func(r Rest) bool { return r.Sender == sender })
	if first {
		e.rests = append(e.rests, Rest{Sender: sender, Code: se.Code, Title: se.Title})
	}
	stop := e.stopSender[sender]
	e.mu.Unlock()
	if !first {
		return
	}
	e.log.Warn("sender rested for the rest of the run: its rows wait", "sender", sender, "code", se.Code, "title", se.Title)
	if stop != nil {
		stop()
	}
}

// rest holds every request of the run until until (a later, longer rest
// extends it, a shorter one changes nothing). A rest that ends beyond the
// retry horizon stops the run; rows it keeps from leaving fall due at its
// end. attrs say what asked for it, for the log.
func (e *Engine) rest(now, until time.Time, attrs ...any) {
	e.mu.Lock()
	began := !e.restUntil.After(now)
	longer := until.After(e.restUntil)
	if longer {
		e.restUntil = until
	}
	stop := longer && until.Sub(now) > e.cfg.RetryHorizon && !e.restStop
	if stop {
		e.restStop = true
	}
	e.mu.Unlock()
	// Once per rest: the answers to the requests in flight repeat it.
	attrs = append([]any{"until", until.Format(time.RFC3339), "for", until.Sub(now).Round(time.Second)}, attrs...)
	switch {
	case stop:
		e.log.Warn("the API asks to send nothing more until then, beyond the retry horizon: stopping the run", attrs...)
		e.stopReq()
	case began && longer:
		e.log.Warn("the API asks to send nothing more until then: waiting", attrs...)
	case longer:
		e.log.Debug("rest extended", attrs...)
	}
}

// setFatal stops the run with err, which Run returns. The caller reports
// err; the log only says that the run is stopping, as the drain of the
// requests in flight may take a while.
func (e *Engine) setFatal(err error) {
	e.mu.Lock()
	first := e.fatal == nil
	if first {
		e.fatal = err
	}
	e.mu.Unlock()
	if first {
		e.log.Warn("stopping the run: no new sends, waiting for requests in flight")
	}
	e.stopReq()
}

// done is a result on its way to the checkpoint.
type done struct {
	Result
	sender string // its claim is counted in pending[sender]
}

// record writes results in batches until the results channel closes. A
// failed write stops the run: an unrecorded answer is a future duplicate.
func (e *Engine) record() error {
	tick := time.NewTicker(e.cfg.FlushEvery)
	defer tick.Stop()
	const maxBatch = 512
	var batch []Result
	var senders []string
	var failed error
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if failed == nil {
			// A cancelled run must still record what its requests did.
			if err := e.cfg.Checkpoint.Record(context.Background(), batch); err != nil {
				failed = err
				e.setFatal(err)
			}
		}
		e.mu.Lock()
		for _, s := range senders {
			e.pending[s]--
		}
		close(e.recorded)
		e.recorded = make(chan struct{})
		e.mu.Unlock()
		batch, senders = batch[:0], senders[:0]
	}
	for {
		select {
		case d, ok := <-e.results:
			if !ok {
				flush()
				return failed
			}
			batch = append(batch, d.Result)
			senders = append(senders, d.sender)
			if b := e.idling[d.sender]; len(batch) >= maxBatch || b != nil && b.Load() {
				flush()
			}
		case <-tick.C:
			flush()
		case <-e.flushNow:
			flush()
		}
	}
}
