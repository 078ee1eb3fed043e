package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/engine/enginetest"
	"github.com/bulksend/bulksend/internal/pace"
)

// The engine's unit tests run on an in-memory checkpoint inside a
// synctest bubble: backoffs, pauses and pacing pass in fake time, so no
// test waits for real, and instants are exact.

// fakeSender answers with fn; it counts the calls per row and keeps the
// instant of each.
type fakeSender struct {
	fn    func(m campaign.Message, call int) (campaign.Receipt, error)
	mu    sync.Mutex
	calls map[int64]int
	at    []time.Time
	rows  []int64 // in the order sent, beside at
}

func (f *fakeSender) Send(ctx context.Context, m campaign.Message) (campaign.Receipt, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[int64]int{}
	}
	f.calls[m.Row]++
	call := f.calls[m.Row]
	f.at = append(f.at, time.Now())
	f.rows = append(f.rows, m.Row)
	f.mu.Unlock()
	return f.fn(m, call)
}

func (f *fakeSender) count(row int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[row]
}

func accept(m campaign.Message, _ int) (campaign.Receipt, error) {
	return campaign.Receipt{ID: fmt.Sprintf("wamid.%d", m.Row)}, nil
}

// sendErr is an error as a channel adapter classifies it.
func sendErr(class campaign.Class, code int) error {
	title := fmt.Sprintf("test %d", code)
	return &campaign.SendError{Class: class, Code: code, Title: title, Err: errors.New(title)}
}

func checkpoint(n int, senders ...string) *enginetest.Memory {
	var rows []enginetest.Row
	for i := 1; i <= n; i++ {
		rows = append(rows, enginetest.Rows(int64(i), 1, senders[i%len(senders)])...)
	}
	return enginetest.NewMemory(rows...)
}

// config is a run with the production defaults for backoff and pacing:
// in fake time they cost nothing.
func config(cp engine.Checkpoint, s engine.Sender, senders ...string) engine.Config {
	return engine.Config{
		Checkpoint: cp, Sender: s, Senders: senders, CampaignID: "c1",
		Concurrency: 8, MaxAttempts: 3,
	}
}

func TestOutcomesByErrorClass(t *testing.T) {
	cases := []struct {
		name   string
		answer func(call int) error
		want   campaign.Counts
		calls  int     // per row
		rate   float64 // per number; 0 unlimited
	}{
		{"accepted", func(int) error { return nil }, campaign.Counts{Total: 20, Sent: 20}, 1, 0},
		{"permanent fails the row", func(int) error { return sendErr(campaign.Permanent, 131026) }, campaign.Counts{Total: 20, Failed: 20}, 1, 0},
		{"transient retries then succeeds", func(c int) error {
			if c < 3 {
				return sendErr(campaign.Transient, 131000)
			}
			return nil
		}, campaign.Counts{Total: 20, Sent: 20}, 3, 0},
		{"transient until max attempts fails", func(int) error { return sendErr(campaign.Transient, 131016) }, campaign.Counts{Total: 20, Failed: 20}, 3, 0},
		{"throttled does not spend attempts", func(c int) error {
			if c < 5 {
				return sendErr(campaign.Throttled, 130429)
			}
			return nil
		}, campaign.Counts{Total: 20, Sent: 20}, 5, 1000}, // the pacer pauses throttled numbers
		{"pair limit retries the recipient", func(c int) error {
			if c < 2 {
				return sendErr(campaign.PairLimited, 131056)
			}
			return nil
		}, campaign.Counts{Total: 20, Sent: 20}, 2, 0},
		{"unanswered leaves the row in doubt", func(int) error {
			return &campaign.SendError{Class: campaign.Unanswered, Title: "context deadline exceeded"}
		}, campaign.Counts{Total: 20, InDoubt: 20}, 1, 0},
		{"an unclassified error is in doubt, never resent", func(int) error { return errors.New("mystery") }, campaign.Counts{Total: 20, InDoubt: 20}, 1, 0},
		{"never left is retried without spending attempts", func(c int) error {
			if c < 4 {
				return &campaign.SendError{Class: campaign.NeverLeft, Err: syscall.ECONNREFUSED}
			}
			return nil
		}, campaign.Counts{Total: 20, Sent: 20}, 4, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cp := checkpoint(20, "A", "B")
				fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
					if m.Ref != (campaign.Ref{Campaign: "c1", Row: m.Row}) {
						t.Errorf("ref %+v", m.Ref)
					}
					if err := tc.answer(call); err != nil {
						return campaign.Receipt{}, err
					}
					return accept(m, call)
				}}
				cfg := config(cp, fs, "A", "B")
				cfg.Rate = tc.rate
				// Above the 60 never-sent answers of the never-left case: with
				// random jitter, 50 of them could come in a row and stop the
				// run, which TestUnreachableStops tests.
				cfg.Unreachable = 100
				if err := engine.New(cfg).Run(context.Background()); err != nil {
					t.Fatalf("Run: %v", err)
				}
				if got := cp.Counts(); got != tc.want {
					t.Fatalf("counts = %+v, want %+v", got, tc.want)
				}
				for row := int64(1); row <= 20; row++ {
					if n := fs.count(row); n != tc.calls {
						t.Fatalf("row %d sent %d times, want %d", row, n, tc.calls)
					}
				}
			})
		})
	}
}

// TestRecordedFailure: a failed row keeps the code, title and reason of
// the answer that failed it, at once or after its last attempt.
func TestRecordedFailure(t *testing.T) {
	cases := []struct {
		name   string
		class  campaign.Class
		reason string
		title  string
	}{
		{"permanent", campaign.Permanent, "", "test 131026"},
		{"permanent with a reason", campaign.Permanent, campaign.FailMarketingCap, "test 131026"},
		{"out of attempts", campaign.Transient, "", "test 131026 (after 3 attempts)"},
		{"out of attempts with a reason", campaign.Transient, "flaky", "test 131026 (after 3 attempts)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cp := checkpoint(1, "A")
				fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
					return campaign.Receipt{}, &campaign.SendError{Class: tc.class, Code: 131026, Title: "test 131026", Reason: tc.reason}
				}}
				if err := engine.New(config(cp, fs, "A")).Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				s, _ := cp.State(1)
				if s.Status != campaign.Failed || s.Code != 131026 || s.Title != tc.title || s.Reason != tc.reason {
					t.Errorf("row 1: %s #%d %q reason %q, want failed #131026 %q reason %q", s.Status, s.Code, s.Title, s.Reason, tc.title, tc.reason)
				}
			})
		})
	}
}

// TestHeldSendsAreCountedAndRecorded: a send the provider accepted but
// held is sent, recorded as held and counted apart.
func TestHeldSendsAreCountedAndRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cp := checkpoint(10, "A", "B")
		held := func(row int64) bool { return row%3 == 0 }
		fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
			rc, err := accept(m, call)
			rc.Held = held(m.Row)
			return rc, err
		}}
		eng := engine.New(config(cp, fs, "A", "B"))
		if err := eng.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := eng.Stats(); st.Sent != 10 || st.Held != 3 {
			t.Errorf("stats: %d sent, %d held; want 10 sent, 3 of them held", st.Sent, st.Held)
		}
		for row := int64(1); row <= 10; row++ {
			if s, _ := cp.State(row); s.Status != campaign.Sent || s.MessageID == "" || s.Held != held(row) {
				t.Errorf("row %d: %s %q held %v, want sent, held %v", row, s.Status, s.MessageID, s.Held, held(row))
			}
		}
	})
}

// logs keeps the records of a run's log.
type logs struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logs) WithGroup(string) slog.Handler            { return l }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}

// warnings counts the warnings whose message holds s.
func (l *logs) warnings(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Level == slog.LevelWarn && strings.Contains(r.Message, s) {
			n++
		}
	}
	return n
}

// TestSenderRested: a number the provider restricts sends nothing more in
// the run: its rows wait with no attempt spent, the answers of its
// requests in flight are recorded, and the other numbers finish.
func TestSenderRested(t *testing.T) {
	cases := []struct {
		name    string
		senders []string
	}{
		{"the other number finishes", []string{"A", "B"}},
		{"the only number: the run ends", []string{"A"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rows []enginetest.Row
				for i, s := range tc.senders {
					rows = append(rows, enginetest.Rows(int64(i*10+1), 10, s)...)
				}
				cp := enginetest.NewMemory(rows...)
				restricted := &campaign.SendError{Class: campaign.SenderRested, Code: 131048, Title: "Spam rate limit hit"}
				var mu sync.Mutex
				var restedAt time.Time
				var fromA []time.Time
				fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
					mu.Lock()
					if m.From == "A" {
						fromA = append(fromA, time.Now())
					}
					mu.Unlock()
					// Only the first call: a run that sent A's rows again would
					// be accepted, and caught.
					if m.From == "A" && m.Row == 3 && call == 1 {
						mu.Lock()
						restedAt = time.Now()
						mu.Unlock()
						return campaign.Receipt{}, restricted
					}
					time.Sleep(time.Second) // rows 1 and 2 are in flight when row 3 is answered
					if m.From == "A" && m.Row == 2 && call == 1 {
						return campaign.Receipt{}, restricted // the same news again: one rest, one warning
					}
					return accept(m, call)
				}}
				cfg := config(cp, fs, tc.senders...)
				cfg.Rate, cfg.Concurrency = 10, 40 // A's requests leave 0.1 s apart
				var log logs
				cfg.Log = slog.New(&log)
				eng := engine.New(cfg)
				start := time.Now()
				if err := eng.Run(context.Background()); err != nil {
					t.Fatalf("Run: %v, want nil: a rest is not an error", err)
				}
				if el := time.Since(start); el > 3*time.Second {
					t.Errorf("the run took %v, want it to end once the requests in flight are answered", el)
				}
				if got, want := eng.Rested(), []engine.Rest{{Sender: "A", Code: 131048, Title: "Spam rate limit hit"}}; !slices.Equal(got, want) {
					t.Errorf("Rested() = %+v, want %+v", got, want)
				}
				if n := log.warnings("rested"); n != 1 {
					t.Errorf("%d warnings of a rested number, want 1", n)
				}
				for i, at := range fromA {
					if at.After(restedAt) {
						t.Errorf("A's request %d left %v after A was rested", i, at.Sub(restedAt))
					}
				}
				for row := int64(1); row <= 10; row++ {
					s, _ := cp.State(row)
					switch {
					case row == 1:
						if s.Status != campaign.Sent {
							t.Errorf("row 1 (in flight at the rest) is %s, want sent", s.Status)
						}
					case s.Status != campaign.Pending || s.Attempts != 0:
						t.Errorf("row %d is %s after %d attempts, want pending with none spent", row, s.Status, s.Attempts)
					case row > 3 && fs.count(row) != 0:
						t.Errorf("row %d sent after A was rested", row)
					}
				}
				if len(tc.senders) > 1 {
					for row := int64(11); row <= 20; row++ {
						if s, _ := cp.State(row); s.Status != campaign.Sent {
							t.Errorf("B's row %d is %s, want sent", row, s.Status)
						}
					}
				}
			})
		})
	}
}

// restRecorder wraps an answer and notes the rests it asks for: when the
// first was answered and when the longest ends.
type restRecorder struct {
	mu         sync.Mutex
	first, end time.Time
}

func (r *restRecorder) note(rc campaign.Receipt, err error) {
	d := rc.RestFor
	if se := (*campaign.SendError)(nil); errors.As(err, &se) {
		d = se.RestFor
	}
	if d <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.first.IsZero() {
		r.first = now
	}
	if end := now.Add(d); end.After(r.end) {
		r.end = end
	}
}

func paused(d time.Duration) error {
	return &campaign.SendError{Class: campaign.Paused, Code: 134101, Title: "template still syncing", RestFor: d}
}

func budgetSpent(row int64, d time.Duration) campaign.Receipt {
	return campaign.Receipt{ID: fmt.Sprintf("wamid.%d", row), RestFor: d}
}

// restCase is a run in which the provider asks for a rest. Each answer
// comes after latency; rate and concurrency choose where the next request
// waits when the rest comes: in the pacer or in the gate.
type restCase struct {
	name        string
	rate        float64
	concurrency int
	latency     time.Duration
	answer      func(m campaign.Message, call int) (campaign.Receipt, error)
}

// run runs tc on rows of one number: the run must return nil and warn of
// the rest once.
func (tc restCase) run(t *testing.T, rows int, horizon time.Duration) (*enginetest.Memory, *fakeSender, *engine.Engine, *restRecorder) {
	t.Helper()
	cp := checkpoint(rows, "A")
	var rests restRecorder
	fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
		time.Sleep(tc.latency) // the next request is waiting when the rest comes
		rc, err := tc.answer(m, call)
		rests.note(rc, err)
		return rc, err
	}}
	cfg := config(cp, fs, "A")
	cfg.Rate, cfg.Concurrency, cfg.RetryHorizon = tc.rate, tc.concurrency, horizon
	var log logs
	cfg.Log = slog.New(&log)
	eng := engine.New(cfg)
	if err := eng.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v, want nil: a rest is not an error", err)
	}
	if rests.first.IsZero() {
		t.Fatal("no answer asked for a rest: the test proves nothing")
	}
	if n := log.warnings("send nothing more"); n != 1 {
		t.Errorf("%d warnings of the rest, want 1", n)
	}
	return cp, fs, eng, &rests
}

// TestRestWithinHorizon: when the provider asks for a rest that ends
// within the retry horizon, no request leaves until it ends, then the run
// goes on at once and sends every row, the paused one with no attempt
// spent.
func TestRestWithinHorizon(t *testing.T) {
	cases := []restCase{
		{"paused, next request waiting in the pacer", 1, 8, 10 * time.Millisecond, func(m campaign.Message, call int) (campaign.Receipt, error) {
			if m.Row == 3 && call == 1 {
				return campaign.Receipt{}, paused(30 * time.Second)
			}
			return accept(m, call)
		}},
		{"paused, next request waiting in the gate", 0, 1, time.Second, func(m campaign.Message, call int) (campaign.Receipt, error) {
			if m.Row == 3 && call == 1 {
				return campaign.Receipt{}, paused(30 * time.Second)
			}
			return accept(m, call)
		}},
		{"call budget spent", 1, 8, 10 * time.Millisecond, func(m campaign.Message, call int) (campaign.Receipt, error) {
			if m.Row == 3 {
				return budgetSpent(m.Row, 30*time.Second), nil
			}
			return accept(m, call)
		}},
		// Row 2 is answered after row 3, while row 4 waits in the pacer.
		{"a shorter rest does not shorten it", 1, 8, 10 * time.Millisecond, func(m campaign.Message, call int) (campaign.Receipt, error) {
			switch {
			case m.Row == 3 && call == 1:
				return campaign.Receipt{}, paused(30 * time.Second)
			case m.Row == 2:
				time.Sleep(1500 * time.Millisecond)
				return budgetSpent(m.Row, 5*time.Second), nil
			}
			return accept(m, call)
		}},
		{"a longer rest extends it", 1, 8, 10 * time.Millisecond, func(m campaign.Message, call int) (campaign.Receipt, error) {
			switch {
			case m.Row == 3 && call == 1:
				return campaign.Receipt{}, paused(30 * time.Second)
			case m.Row == 2:
				time.Sleep(1500 * time.Millisecond)
				return budgetSpent(m.Row, time.Minute), nil
			}
			return accept(m, call)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const rows = 8
				cp, fs, eng, rests := tc.run(t, rows, 5*time.Minute)
				if c := cp.Counts(); c.Sent != rows {
					t.Fatalf("counts = %+v, want all %d sent", c, rows)
				}
				resumed := false
				for i, at := range fs.at {
					if at.After(rests.first) && at.Before(rests.end) {
						t.Errorf("request %d left %v into a rest of %v", i, at.Sub(rests.first), rests.end.Sub(rests.first))
					}
					resumed = resumed || at.Equal(rests.end)
				}
				if !resumed {
					t.Errorf("no request left when the rest ended, %v after it began", rests.end.Sub(rests.first))
				}
				for row := int64(1); row <= rows; row++ {
					if s, _ := cp.State(row); s.Attempts != 1 {
						t.Errorf("row %d sent after %d attempts, want 1: a rest spends none", row, s.Attempts)
					}
				}
				if u := eng.RestUntil(); !u.IsZero() {
					t.Errorf("RestUntil() = %v after the rest, want zero", u)
				}
			})
		})
	}
}

// TestRestReleasesClaimedRows: rows claimed when a rest begins go back to
// pending, due at its end, rather than wait it out as sending: a crash
// during the rest would leave them in doubt though they never left.
func TestRestReleasesClaimedRows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cp := checkpoint(40, "A")
		fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
			if m.Row == 3 && call == 1 {
				return campaign.Receipt{}, paused(30 * time.Second)
			}
			return accept(m, call)
		}}
		cfg := config(cp, fs, "A")
		cfg.Rate = 10 // a claim holds a second's rows: several are claimed when the rest comes
		mid := make(chan campaign.Counts, 1)
		go func() {
			time.Sleep(10 * time.Second)
			mid <- cp.Counts()
		}()
		if err := engine.New(cfg).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		during := <-mid
		if during.Sending != 0 || during.Pending == 0 {
			t.Errorf("10 s into the rest: %+v, want no row sending and the rest pending", during)
		}
		if c := cp.Counts(); c.Sent != 40 {
			t.Errorf("after the rest: %+v, want all 40 sent", c)
		}
	})
}

// TestRestBeyondHorizon: a rest that ends beyond the retry horizon stops
// the run at once: no request leaves after it, and the rows it kept back
// are pending with no attempt spent, due when it ends.
func TestRestBeyondHorizon(t *testing.T) {
	cases := []restCase{
		{"paused", 0, 1, time.Second, func(m campaign.Message, call int) (campaign.Receipt, error) {
			if m.Row == 3 && call == 1 {
				return campaign.Receipt{}, paused(10 * time.Minute)
			}
			return accept(m, call)
		}},
		{"call budget spent", 1, 8, 10 * time.Millisecond, func(m campaign.Message, call int) (campaign.Receipt, error) {
			if m.Row == 3 {
				return budgetSpent(m.Row, 10*time.Minute), nil
			}
			return accept(m, call)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const rows = 8
				start := time.Now()
				cp, fs, eng, rests := tc.run(t, rows, 5*time.Minute)
				if el := time.Since(start); el > time.Minute {
					t.Errorf("the run took %v, want it to stop at the rest", el)
				}
				for i, at := range fs.at {
					if at.After(rests.first) {
						t.Errorf("request %d left %v after the rest began", i, at.Sub(rests.first))
					}
				}
				if u := eng.RestUntil(); !u.Equal(rests.end) {
					t.Errorf("RestUntil() = %v, want %v", u, rests.end)
				}
				c := cp.Counts()
				if c.Sending != 0 || c.InDoubt != 0 || c.Pending < rows-3 || c.Sent+c.Pending != rows {
					t.Fatalf("counts = %+v, want the rows after the rest pending", c)
				}
				keptBack := 0
				for row := int64(1); row <= rows; row++ {
					s, _ := cp.State(row)
					if s.Status != campaign.Pending {
						continue
					}
					if s.Attempts != 0 {
						t.Errorf("row %d pending after %d attempts, want none spent", row, s.Attempts)
					}
					if claimed := !s.AttemptedAt.IsZero(); claimed {
						keptBack++
						if end := time.UnixMilli(rests.end.UnixMilli()); !s.NextAt.Equal(end) { // the checkpoint keeps milliseconds
							t.Errorf("row %d (claimed, kept back) due %v, want at the rest's end %v", row, s.NextAt, end)
						}
					}
				}
				if keptBack == 0 {
					t.Error("no claimed row was kept back: the test proves nothing about their due time")
				}
			})
		})
	}
}

func TestFatalStopsAtOnceAndLeavesRowsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cp := checkpoint(500, "A")
		var calls atomic.Int64
		fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
			if calls.Add(1) > 10 {
				return campaign.Receipt{}, sendErr(campaign.Fatal, 190)
			}
			return accept(m, call)
		}}
		cfg := config(cp, fs, "A")
		cfg.Concurrency = 2
		err := engine.New(cfg).Run(context.Background())
		var fatal *engine.FatalError
		if !errors.As(err, &fatal) || fatal.Err.Code != 190 {
			t.Fatalf("Run: %v, want a fatal 190", err)
		}
		c := cp.Counts()
		if c.Sent < 10 || c.Failed != 0 || c.Sending != 0 || c.InDoubt != 0 || c.Sent+c.Pending != 500 {
			t.Fatalf("counts = %+v: want 10+ sent, the rest pending, none failed", c)
		}
		if calls.Load() > 20 {
			t.Fatalf("%d requests: the run did not stop at once", calls.Load())
		}
	})
}

func TestCancelDrainsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cp := checkpoint(2000, "A")
		ctx, fs, calls := cancelledAt50(200 * time.Millisecond) // in flight while the cancel lands
		err := engine.New(config(cp, fs, "A")).Run(ctx)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v, want context.Canceled", err)
		}
		c := cp.Counts()
		if c.Sending != 0 || c.InDoubt != 0 {
			t.Fatalf("counts = %+v: a drained run leaves no row sending or in doubt", c)
		}
		if c.Sent != calls.Load() {
			t.Fatalf("sent = %d, requests = %d: every answered request must be recorded", c.Sent, calls.Load())
		}
		if c.Sent+c.Pending != 2000 {
			t.Fatalf("counts = %+v do not add up", c)
		}
	})
}

// cancelledAt50 returns a context and a sender that accepts each message
// after latency and cancels the context at the 50th request, and the
// count of requests.
func cancelledAt50(latency time.Duration) (context.Context, *fakeSender, *atomic.Int64) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := new(atomic.Int64)
	fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
		if calls.Add(1) == 50 {
			cancel()
		}
		time.Sleep(latency)
		return accept(m, call)
	}}
	return ctx, fs, calls
}

// countingObserver counts what the engine observes.
type countingObserver struct{ attempted, waited atomic.Int64 }

func (o *countingObserver) Attempted(engine.Attempt)     { o.attempted.Add(1) }
func (o *countingObserver) Waited(string, time.Duration) { o.waited.Add(1) }

// TestWaitsObservedOnlyForRequestsThatLeft: a stop ends the waits of rows
// claimed but not sent; they are not limiter waits (one per request).
func TestWaitsObservedOnlyForRequestsThatLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cp := checkpoint(2000, "A")
		ctx, fs, calls := cancelledAt50(0)
		obs := &countingObserver{}
		cfg := config(cp, fs, "A")
		cfg.Rate, cfg.Observer = 100, obs
		if err := engine.New(cfg).Run(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v, want context.Canceled", err)
		}
		if a, w := obs.attempted.Load(), obs.waited.Load(); a != calls.Load() || w != a {
			t.Fatalf("%d requests, %d attempts observed, %d waits observed: want one wait per request", calls.Load(), a, w)
		}
	})
}

func TestUnreachableStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cp := checkpoint(100, "A")
		fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
			return campaign.Receipt{}, &campaign.SendError{Class: campaign.NeverLeft, Err: syscall.ECONNREFUSED}
		}}
		cfg := config(cp, fs, "A")
		cfg.Unreachable = 10
		err := engine.New(cfg).Run(context.Background())
		if !errors.Is(err, engine.ErrUnreachable) {
			t.Fatalf("Run: %v, want ErrUnreachable", err)
		}
		if c := cp.Counts(); c.Pending != 100 {
			t.Fatalf("counts = %+v, want all 100 pending", c)
		}
	})
}

// TestRetriesWithinHorizonAreWaitedFor: a transient error's retry, due
// within the horizon, is sent by the same run once due and not before.
func TestRetriesWithinHorizonAreWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cp := checkpoint(1, "A")
		fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
			if call == 1 {
				return campaign.Receipt{}, sendErr(campaign.Transient, 131000)
			}
			return accept(m, call)
		}}
		cfg := config(cp, fs, "A")
		cfg.BackoffBase, cfg.BackoffMax = 40*time.Second, time.Minute
		cfg.Jitter = func() float64 { return 0.5 } // the first retry is due in 20 s
		if err := engine.New(cfg).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if c := cp.Counts(); c.Sent != 1 {
			t.Fatalf("counts = %+v, want the row sent on its retry", c)
		}
		if gap := fs.at[1].Sub(fs.at[0]); gap < 20*time.Second || gap > 21*time.Second {
			t.Fatalf("retry sent %v after the first attempt, want 20 s (the backoff)", gap)
		}
	})
}

// TestTransientErrorsRetryAtOnceWhileRare: after 500 accepted answers, a
// transient error now and then is retried at once, however long the
// backoff; when they become common (the API in trouble), the rows back
// off. The backoff here is half an hour, beyond the horizon: a row that
// backs off is left pending by the run.
func TestTransientErrorsRetryAtOnceWhileRare(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fails      func(row int64) bool // its first attempt
		sent, most int64                // rows sent, at least and at most
	}{
		{"rare", func(row int64) bool { return row > 500 && row%25 == 0 }, 1000, 1000},
		// About a dozen errors in a row take the share over a tenth: those
		// rows are retried at once, the others wait.
		{"common", func(row int64) bool { return row > 500 }, 505, 530},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cp := checkpoint(1000, "A")
				fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
					if call == 1 && tc.fails(m.Row) {
						return campaign.Receipt{}, sendErr(campaign.Transient, 131000)
					}
					return accept(m, call)
				}}
				cfg := config(cp, fs, "A")
				cfg.Concurrency = 1 // answers in row order
				cfg.BackoffBase, cfg.BackoffMax, cfg.RetryHorizon = time.Hour, time.Hour, time.Minute
				cfg.Jitter = func() float64 { return 0.5 }
				if err := engine.New(cfg).Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				c := cp.Counts()
				if c.Sent < tc.sent || c.Sent > tc.most || c.Sent+c.Pending != 1000 {
					t.Fatalf("counts = %+v, want %d to %d sent, the others pending", c, tc.sent, tc.most)
				}
			})
		})
	}
}

// TestIdleNumberDoesNotWaitForTheFlush: once a number has nothing due
// but answers to come, they are recorded as they come, not at the next
// batch flush: the retries they schedule go, and the run ends, at once.
func TestIdleNumberDoesNotWaitForTheFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cp := checkpoint(3, "A")
		fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
			time.Sleep(200 * time.Millisecond)
			if call == 1 && m.Row == 3 {
				return campaign.Receipt{}, sendErr(campaign.Transient, 131000)
			}
			return accept(m, call)
		}}
		cfg := config(cp, fs, "A")
		cfg.FlushEvery = 10 * time.Second
		cfg.BackoffBase = time.Millisecond
		start := time.Now()
		if err := engine.New(cfg).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if c := cp.Counts(); c.Sent != 3 {
			t.Fatalf("counts = %+v, want 3 sent", c)
		}
		// Two round trips: the first answers, then the retry's.
		if el := time.Since(start); el > 500*time.Millisecond {
			t.Fatalf("the run took %v, want two round trips (400 ms)", el)
		}
	})
}

func TestRetriesBeyondHorizonEndTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cp := checkpoint(5, "A")
		fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
			return campaign.Receipt{}, sendErr(campaign.Transient, 131000)
		}}
		cfg := config(cp, fs, "A")
		cfg.BackoffBase, cfg.BackoffMax, cfg.RetryHorizon = time.Hour, time.Hour, time.Minute
		cfg.Jitter = func() float64 { return 0.5 } // retries due in 30 minutes
		start := time.Now()
		if err := engine.New(cfg).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el > time.Minute {
			t.Fatalf("the run took %v: it waited for retries beyond its horizon", el)
		}
		if c := cp.Counts(); c.Pending != 5 {
			t.Fatalf("counts = %+v, want 5 pending with retries scheduled", c)
		}
		next, ok, _ := cp.NextDue(context.Background(), "A")
		if !ok || next.Sub(start) < 29*time.Minute {
			t.Fatalf("next retry due %v after the start, want about 30 minutes", next.Sub(start))
		}
		for row := int64(1); row <= 5; row++ {
			if n := fs.count(row); n != 1 {
				t.Fatalf("row %d sent %d times, want 1", row, n)
			}
		}
	})
}

// TestPacing: sends of one number leave evenly spaced at the configured
// rate less the pacer's headroom, each number on its own.
func TestPacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rows, rate = 200, 50.0
		cp := checkpoint(rows, "A", "B")
		var mu sync.Mutex
		at := map[string][]time.Time{}
		fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
			mu.Lock()
			at[m.From] = append(at[m.From], time.Now())
			mu.Unlock()
			time.Sleep(150 * time.Millisecond) // latency: several requests in flight
			return accept(m, call)
		}}
		cfg := config(cp, fs, "A", "B")
		cfg.Rate, cfg.Concurrency = rate, 0
		if err := engine.New(cfg).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, sender := range []string{"A", "B"} {
			ts := at[sender]
			if len(ts) != rows/2 {
				t.Fatalf("sender %s sent %d, want %d", sender, len(ts), rows/2)
			}
			limit := pace.Paced(rate)
			want := time.Duration(float64(time.Second) / limit)
			for i := 1; i < len(ts); i++ {
				if gap := ts[i].Sub(ts[i-1]); gap < want-time.Millisecond || gap > want+time.Millisecond {
					t.Fatalf("sender %s: send %d came %v after the one before, want %v", sender, i, gap, want)
				}
			}
		}
	})
}

// mostInASecond is the most instants of ts within one second, (t−1s, t];
// it sorts ts.
func mostInASecond(ts []time.Time) int {
	slices.SortFunc(ts, time.Time.Compare)
	most, lo := 0, 0
	for hi, at := range ts {
		for !ts[lo].After(at.Add(-time.Second)) {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	return most
}

// dialingSender is a provider whose first requests wait for their new
// connections (with Meta, a TLS handshake) before they are written: it
// tells the engine when each request was written (campaign.Departed) and
// keeps those instants.
type dialingSender struct {
	dialed int64         // rows up to this one wait for a connection
	dial   time.Duration // how long
	mu     sync.Mutex
	left   []time.Time
}

func (d *dialingSender) Send(ctx context.Context, m campaign.Message) (campaign.Receipt, error) {
	if m.Row <= d.dialed {
		time.Sleep(d.dial)
	}
	now := time.Now()
	campaign.Departed(ctx, now)
	d.mu.Lock()
	d.left = append(d.left, now)
	d.mu.Unlock()
	time.Sleep(50 * time.Millisecond)
	return accept(m, 1)
}

// TestDialedSendsHoldTheOnesASecondLater: the first 20 requests of a
// number at 100/s wait 150 ms for their connections and are written
// together. The engine counts them from when they were written, so the
// sends a second later wait for room: no second of requests as written
// holds more than the pace, where counting them from when they began put
// 113 in one.
func TestDialedSendsHoldTheOnesASecondLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rows, rate = 300, 100.0
		ds := &dialingSender{dialed: 20, dial: 150 * time.Millisecond}
		cfg := config(checkpoint(rows, "A"), ds, "A")
		cfg.Rate, cfg.Concurrency = rate, 0
		if err := engine.New(cfg).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(ds.left) != rows {
			t.Fatalf("%d requests written, want %d", len(ds.left), rows)
		}
		if most, want := mostInASecond(ds.left), int(math.Ceil(pace.Paced(rate))); most > want {
			t.Errorf("%d requests written within one second, want at most %d", most, want)
		}
	})
}

// failingRecord is a checkpoint whose writes of results fail (a full disk).
type failingRecord struct {
	*enginetest.Memory
	err error
}

func (f failingRecord) Record(ctx context.Context, rs []engine.Result) error { return f.err }

// TestRecordFailureStopsAndKeepsTheFatalAnswer: a result that cannot be
// written stops the run (an unrecorded answer is a future duplicate), and
// a fatal answer met on the way is still returned with it.
func TestRecordFailureStopsAndKeepsTheFatalAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		diskFull := errors.New("database or disk is full")
		cp := failingRecord{checkpoint(50, "A"), diskFull}
		fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
			return campaign.Receipt{}, sendErr(campaign.Fatal, 190)
		}}
		err := engine.New(config(cp, fs, "A")).Run(context.Background())
		var fatal *engine.FatalError
		if !errors.Is(err, diskFull) || !errors.As(err, &fatal) || fatal.Err.Code != 190 {
			t.Fatalf("Run: %v, want the record failure and the fatal 190", err)
		}
	})
}

// interruptedRead is a checkpoint whose reads of when sender's rows fall
// due last until the run stops them, as a read of the SQLite store can be
// cut short.
type interruptedRead struct {
	*enginetest.Memory
	sender string
}

func (c interruptedRead) NextDue(ctx context.Context, sender string) (time.Time, bool, error) {
	if sender != c.sender {
		return c.Memory.NextDue(ctx, sender)
	}
	<-ctx.Done()
	return time.Time{}, false, fmt.Errorf("next due: %w", ctx.Err())
}

// TestRestStopIsNoError: a rest beyond the horizon stops the run while
// another number's claimer reads the checkpoint; the read cut short is not
// the run's error.
func TestRestStopIsNoError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cp := interruptedRead{checkpoint(5, "A"), "B"} // B has no rows: its claimer waits in NextDue
		fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
			time.Sleep(10 * time.Millisecond)
			return budgetSpent(m.Row, 10*time.Minute), nil
		}}
		cfg := config(cp, fs, "A", "B")
		cfg.Concurrency = 1
		eng := engine.New(cfg)
		if err := eng.Run(context.Background()); err != nil {
			t.Fatalf("Run: %v, want nil: the run stopped for a rest", err)
		}
		if eng.RestUntil().IsZero() {
			t.Fatal("the run did not rest: the test proves nothing")
		}
	})
}

// TestThrottleTries: with a limit of throttled tries (SMS), a row the
// provider throttles every time is sent exactly that many times, waits
// a 4× backoff between tries, and fails as throttle_exhausted without
// spending an attempt; a row that gets through before the limit is sent.
func TestThrottleTries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cp := checkpoint(4, "A")
		fs := &fakeSender{fn: func(m campaign.Message, call int) (campaign.Receipt, error) {
			if m.Row%2 == 0 || call < 5 { // even rows: always; odd rows: the 5th try gets through
				return campaign.Receipt{}, sendErr(campaign.Throttled, 0)
			}
			return accept(m, call)
		}}
		cfg := config(cp, fs, "A")
		cfg.ThrottleTries, cfg.MaxAttempts = 5, 1
		cfg.Jitter = func() float64 { return 0.999 } // the longest waits: 2, 8, 32, 128 s
		start := time.Now()
		if err := engine.New(cfg).Run(context.Background()); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if c := cp.Counts(); c.Sent != 2 || c.Failed != 0+2 {
			t.Fatalf("counts = %+v, want 2 sent (odd rows) and 2 failed (even rows)", c)
		}
		for row := int64(1); row <= 4; row++ {
			if n := fs.count(row); n != 5 {
				t.Errorf("row %d sent %d times, want 5", row, n)
			}
			st, _ := cp.State(row)
			switch {
			case row%2 == 0 && (st.Reason != campaign.FailThrottleExhausted || st.Throttles != 5 || !strings.Contains(st.Title, "throttled 5 times")):
				t.Errorf("row %d = %+v, want failed throttle_exhausted after 5 recorded throttles", row, st)
			case row%2 == 1 && (st.Status != campaign.Sent || st.Throttles != 4):
				t.Errorf("row %d = %+v, want sent after 4 throttles", row, st)
			}
		}
		// 2+8+32+128 s of backoff at most (jitter 0.999), plus the pacer's
		// pauses, which mostly overlap with them (under -race on a loaded
		// machine the goroutines' order left 5.9 s of them outside once).
		if took := time.Since(start); took < 169*time.Second || took > 180*time.Second {
			t.Errorf("run took %v, want about 170 s: the waits grow 2, 8, 32, 128 s", took)
		}
	})
}

// TestPartsPaceTheSender: an SMS of k parts costs k tokens of its sender's
// pacer. It leaves when its first token is due and the next send waits
// for the other k−1.
func TestPartsPaceTheSender(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rows := enginetest.Rows(1, 4, "A")
		for i, parts := range []int{3, 1, 2, 1} {
			rows[i].Parts = parts
		}
		cp := enginetest.NewMemory(rows...)
		fs := &fakeSender{fn: accept}
		cfg := config(cp, fs, "A")
		cfg.Rate = 1 / 0.98 // exactly one part a second after headroom (2% below 50/s)
		start := time.Now()
		if err := engine.New(cfg).Run(context.Background()); err != nil {
			t.Fatalf("Run: %v", err)
		}
		var got []time.Duration
		for _, at := range fs.at {
			got = append(got, at.Sub(start).Round(time.Millisecond))
		}
		want := []time.Duration{0, 3 * time.Second, 4 * time.Second, 6 * time.Second}
		if !slices.Equal(got, want) {
			t.Fatalf("sends at %v, want %v: 3 parts, 1, 2, 1 at one part a second", got, want)
		}
	})
}

// claimLimits records the limit of every claim.
type claimLimits struct {
	engine.Checkpoint
	mu     sync.Mutex
	limits []int
}

func (c *claimLimits) Claim(ctx context.Context, sender string, now time.Time, limit int) ([]engine.Job, error) {
	c.mu.Lock()
	c.limits = append(c.limits, limit)
	c.mu.Unlock()
	return c.Checkpoint.Claim(ctx, sender, now, limit)
}

// TestClaimsSizedInParts: at 400 parts/s a claim holds a tenth of a
// second of parts: 40 one-part rows, or 10 rows of 4 parts once the first
// claim has shown what the rows cost; at 20 parts/s, rows of several parts
// are claimed 4 at a time all the same, for the dispatcher to choose from.
func TestClaimsSizedInParts(t *testing.T) {
	for _, tc := range []struct {
		parts int
		rate  float64
		first int // the limit of the first claim
		want  int // the limit of the claims after the first
	}{{0, 400, 40, 40}, {1, 400, 40, 40}, {4, 400, 40, 10}, {2, 400, 40, 20}, {1, 20, 2, 2}, {3, 20, 2, 4}} {
		synctest.Test(t, func(t *testing.T) {
			rows := enginetest.Rows(1, 400, "A")
			for i := range rows {
				rows[i].Parts = tc.parts
			}
			cp := &claimLimits{Checkpoint: enginetest.NewMemory(rows...)}
			cfg := config(cp, &fakeSender{fn: accept}, "A")
			cfg.Rate = tc.rate
			if err := engine.New(cfg).Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			cp.mu.Lock()
			defer cp.mu.Unlock()
			if len(cp.limits) < 3 || cp.limits[0] != tc.first {
				t.Fatalf("%d-part rows at %g/s: claim limits %v, want %d first", tc.parts, tc.rate, cp.limits, tc.first)
			}
			for _, l := range cp.limits[1 : len(cp.limits)-1] {
				if l != tc.want {
					t.Fatalf("%d-part rows at %g/s: claim limits %v, want %d after the first", tc.parts, tc.rate, cp.limits, tc.want)
				}
			}
		})
	}
}

// TestSmallerRowsFillTheRoom: at 10 parts/s, a row of 2 or 3 parts that
// waits for room in the second lets rows of fewer parts claimed after it
// go first, into the room it waits for, but no more than 8 of them; no
// second ever holds more than 10 parts, and every row goes once.
func TestSmallerRowsFillTheRoom(t *testing.T) {
	for _, tc := range []struct {
		name     string
		parts    func(row int) int
		reorders bool // false: claim order already fills every second
	}{
		{"a few large rows", func(row int) int { return map[int]int{5: 3, 6: 2, 12: 3, 13: 3, 20: 2, 27: 3}[row] }, true},
		{"every third row large", func(row int) int {
			if row%3 == 0 {
				return 3
			}
			return 1
		}, false},
		{"large rows in a run", func(row int) int {
			if row >= 10 && row < 20 {
				return 3
			}
			return 1
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rows := enginetest.Rows(1, 60, "A")
				cost := map[int64]int{}
				for i := range rows {
					rows[i].Parts = max(tc.parts(i+1), 1)
					cost[rows[i].Row] = rows[i].Parts
				}
				cp := enginetest.NewMemory(rows...)
				fs := &fakeSender{fn: accept}
				cfg := config(cp, fs, "A")
				cfg.Rate = 10
				if err := engine.New(cfg).Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				if c := cp.Counts(); c.Sent != 60 || len(fs.rows) != 60 {
					t.Fatalf("counts %+v, %d sends: want 60 sent once each", c, len(fs.rows))
				}
				at := map[int64]time.Time{}
				for i, a := range fs.at {
					at[fs.rows[i]] = a
					parts := 0
					for j := range fs.at {
						if d := a.Sub(fs.at[j]); d >= 0 && d < time.Second {
							parts += cost[fs.rows[j]]
						}
					}
					if parts > 10 {
						t.Fatalf("%d parts in the second up to row %d's send, want at most 10", parts, fs.rows[i])
					}
				}
				ahead := 0 // rows sent before a larger one claimed earlier
				for row, c := range cost {
					if c == 1 {
						continue
					}
					passed := 0
					for r := range cost {
						if r > row && at[r].Before(at[row]) {
							passed++
						}
					}
					if passed > 8 {
						t.Errorf("row %d of %d parts went after %d rows claimed after it, want at most 8", row, c, passed)
					}
					ahead += passed
				}
				if tc.reorders && ahead == 0 {
					t.Errorf("sent in claim order %v: no smaller row filled the room a larger one waited for", fs.rows)
				}
			})
		})
	}
}
