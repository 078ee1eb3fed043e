package engine_test

import (
	"context"
	"errors"
	"fmt"
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
	fn    func(m campaign.Message, call int) (string, error)
	mu    sync.Mutex
	calls map[int64]int
	at    []time.Time
}

func (f *fakeSender) Send(ctx context.Context, m campaign.Message) (campaign.Receipt, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[int64]int{}
	}
	f.calls[m.Row]++
	call := f.calls[m.Row]
	f.at = append(f.at, time.Now())
	f.mu.Unlock()
	id, err := f.fn(m, call)
	return campaign.Receipt{ID: id}, err
}

func (f *fakeSender) count(row int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[row]
}

func accept(m campaign.Message, _ int) (string, error) { return fmt.Sprintf("wamid.%d", m.Row), nil }

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
		Checkpoint: cp, Sender: s, Senders: senders, CampaignID: "c1", Template: "t", Lang: "en_US",
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
				fs := &fakeSender{fn: func(m campaign.Message, call int) (string, error) {
					if m.CallbackData != campaign.CallbackData("c1", m.Row) {
						t.Errorf("callback data %q", m.CallbackData)
					}
					if err := tc.answer(call); err != nil {
						return "", err
					}
					return accept(m, call)
				}}
				cfg := config(cp, fs, "A", "B")
				cfg.Rate = tc.rate
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

func TestRecordedCodeAndTitle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cp := checkpoint(2, "A")
		fs := &fakeSender{fn: func(m campaign.Message, call int) (string, error) {
			if m.Row == 1 {
				return "", sendErr(campaign.Permanent, 131026)
			}
			return "", sendErr(campaign.Transient, 131000)
		}}
		if err := engine.New(config(cp, fs, "A")).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct {
			row   int64
			title string
		}{{1, "test 131026"}, {2, "test 131000 (after 3 attempts)"}} {
			s, _ := cp.State(w.row)
			if s.Status != campaign.Failed || s.Title != w.title {
				t.Errorf("row %d: %s %q, want failed %q", w.row, s.Status, s.Title, w.title)
			}
		}
	})
}

func TestFatalStopsAtOnceAndLeavesRowsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cp := checkpoint(500, "A")
		var calls atomic.Int64
		fs := &fakeSender{fn: func(m campaign.Message, call int) (string, error) {
			if calls.Add(1) > 10 {
				return "", sendErr(campaign.Fatal, 190)
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
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int64
		fs := &fakeSender{fn: func(m campaign.Message, call int) (string, error) {
			if calls.Add(1) == 50 {
				cancel()
			}
			time.Sleep(200 * time.Millisecond) // in flight while the cancel lands
			return accept(m, call)
		}}
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

func TestUnreachableStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cp := checkpoint(100, "A")
		fs := &fakeSender{fn: func(m campaign.Message, call int) (string, error) {
			return "", &campaign.SendError{Class: campaign.NeverLeft, Err: syscall.ECONNREFUSED}
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
		fs := &fakeSender{fn: func(m campaign.Message, call int) (string, error) {
			if call == 1 {
				return "", sendErr(campaign.Transient, 131000)
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

func TestRetriesBeyondHorizonEndTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cp := checkpoint(5, "A")
		fs := &fakeSender{fn: func(m campaign.Message, call int) (string, error) { return "", sendErr(campaign.Transient, 131000) }}
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
		fs := &fakeSender{fn: func(m campaign.Message, call int) (string, error) {
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
			limit := rate * pace.Headroom
			want := time.Duration(float64(time.Second) / limit)
			for i := 1; i < len(ts); i++ {
				if gap := ts[i].Sub(ts[i-1]); gap < want-time.Millisecond || gap > want+time.Millisecond {
					t.Fatalf("sender %s: send %d came %v after the one before, want %v", sender, i, gap, want)
				}
			}
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
		fs := &fakeSender{fn: func(m campaign.Message, call int) (string, error) { return "", sendErr(campaign.Fatal, 190) }}
		err := engine.New(config(cp, fs, "A")).Run(context.Background())
		var fatal *engine.FatalError
		if !errors.Is(err, diskFull) || !errors.As(err, &fatal) || fatal.Err.Code != 190 {
			t.Fatalf("Run: %v, want the record failure and the fatal 190", err)
		}
	})
}
