package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/store"
)

// fakeSender answers with fn; it records every message it was given.
type fakeSender struct {
	fn    func(m campaign.Message, call int) (string, error)
	mu    sync.Mutex
	calls map[int64]int
}

func (f *fakeSender) Send(ctx context.Context, m campaign.Message) (string, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[int64]int{}
	}
	f.calls[m.Row]++
	call := f.calls[m.Row]
	f.mu.Unlock()
	return f.fn(m, call)
}

func (f *fakeSender) count(row int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[row]
}

func newCheckpoint(t *testing.T, n int, senders ...string) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "c.bulksend.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	i := 0
	_, err = st.Import(context.Background(), func() (store.Row, error) {
		if i == n {
			return store.Row{}, io.EOF
		}
		i++
		return store.Row{Row: int64(i), Line: i + 1, Phone: fmt.Sprintf("+4477009%05d", i), Sender: senders[i%len(senders)], Params: []string{"x"}}, nil
	}, func() store.Settings { return store.Settings{CampaignID: "c1"} })
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func apiErr(code, status int) error {
	return &campaign.APIError{HTTPStatus: status, Code: code, Message: fmt.Sprintf("(#%d) test", code)}
}

func testConfig(st *store.Store, s campaign.Sender, senders ...string) Config {
	return Config{
		Store: st, Sender: s, Senders: senders, CampaignID: "c1", Template: "t", Lang: "en_US",
		Rate: 0, Concurrency: 8, MaxAttempts: 3,
		BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, PairBase: time.Millisecond,
		FlushEvery: 5 * time.Millisecond, Unreachable: 1000,
	}
}

func counts(t *testing.T, st *store.Store) campaign.Counts {
	t.Helper()
	c, err := st.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOutcomesByErrorClass(t *testing.T) {
	cases := []struct {
		name    string
		answer  func(call int) (string, error)
		want    campaign.Counts
		calls   int     // per row
		rate    float64 // per number; 0 unlimited
		wantErr bool
	}{
		{"accepted", func(int) (string, error) { return "wamid.x", nil }, campaign.Counts{Total: 20, Sent: 20}, 1, 0, false},
		{"permanent 131026 fails the row", func(int) (string, error) { return "", apiErr(131026, 400) }, campaign.Counts{Total: 20, Failed: 20}, 1, 0, false},
		{"transient 131000 retries then succeeds", func(c int) (string, error) {
			if c < 3 {
				return "", apiErr(131000, 500)
			}
			return "wamid.x", nil
		}, campaign.Counts{Total: 20, Sent: 20}, 3, 0, false},
		{"transient until max attempts fails", func(int) (string, error) { return "", apiErr(131016, 503) }, campaign.Counts{Total: 20, Failed: 20}, 3, 0, false},
		{"throttled 130429 does not spend attempts", func(c int) (string, error) {
			if c < 5 {
				return "", apiErr(130429, 400)
			}
			return "wamid.x", nil
		}, campaign.Counts{Total: 20, Sent: 20}, 5, 1000, false}, // the pacer pauses throttled numbers
		{"pair limit 131056 retries the recipient", func(c int) (string, error) {
			if c < 2 {
				return "", apiErr(131056, 400)
			}
			return "wamid.x", nil
		}, campaign.Counts{Total: 20, Sent: 20}, 2, 0, false},
		{"timeout leaves the row in doubt", func(int) (string, error) {
			return "", fmt.Errorf("context deadline exceeded: %w", campaign.ErrInDoubt)
		}, campaign.Counts{Total: 20, InDoubt: 20}, 1, 0, false},
		{"dial failure is retried without spending attempts", func(c int) (string, error) {
			if c < 4 {
				return "", fmt.Errorf("request not sent: %w", syscall.ECONNREFUSED)
			}
			return "wamid.x", nil
		}, campaign.Counts{Total: 20, Sent: 20}, 4, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := newCheckpoint(t, 20, "A", "B")
			fs := &fakeSender{fn: func(m campaign.Message, call int) (string, error) {
				if m.CallbackData != campaign.CallbackData("c1", m.Row) {
					t.Errorf("callback data %q", m.CallbackData)
				}
				w, err := tc.answer(call)
				if w != "" {
					w = fmt.Sprintf("wamid.%d", m.Row)
				}
				return w, err
			}}
			cfg := testConfig(st, fs, "A", "B")
			cfg.Rate = tc.rate
			err := New(cfg).Run(context.Background())
			if (err != nil) != tc.wantErr {
				t.Fatalf("Run: %v", err)
			}
			if got := counts(t, st); got != tc.want {
				t.Fatalf("counts = %+v, want %+v", got, tc.want)
			}
			for row := int64(1); row <= 20; row++ {
				if n := fs.count(row); n != tc.calls {
					t.Fatalf("row %d sent %d times, want %d", row, n, tc.calls)
				}
			}
		})
	}
}

func TestFatalStopsAtOnceAndLeavesRowsPending(t *testing.T) {
	st := newCheckpoint(t, 500, "A")
	var calls atomic.Int64
	fs := &fakeSender{fn: func(m campaign.Message, call int) (string, error) {
		if calls.Add(1) > 10 {
			return "", apiErr(190, 401)
		}
		return fmt.Sprintf("wamid.%d", m.Row), nil
	}}
	cfg := testConfig(st, fs, "A")
	cfg.Concurrency = 2
	err := New(cfg).Run(context.Background())
	var fatal *FatalError
	if !errors.As(err, &fatal) || fatal.Err.Code != 190 {
		t.Fatalf("Run: %v, want a fatal 190", err)
	}
	c := counts(t, st)
	if c.Sent < 10 || c.Failed != 0 || c.Sending != 0 || c.InDoubt != 0 || c.Sent+c.Pending != 500 {
		t.Fatalf("counts = %+v: want 10+ sent, the rest pending, none failed", c)
	}
	if calls.Load() > 20 {
		t.Fatalf("%d requests: the run did not stop at once", calls.Load())
	}
}

func TestCancelDrainsInFlight(t *testing.T) {
	st := newCheckpoint(t, 2000, "A")
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	fs := &fakeSender{fn: func(m campaign.Message, call int) (string, error) {
		if calls.Add(1) == 50 {
			cancel()
		}
		time.Sleep(2 * time.Millisecond) // in flight while the cancel lands
		return fmt.Sprintf("wamid.%d", m.Row), nil
	}}
	cfg := testConfig(st, fs, "A")
	err := New(cfg).Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
	c := counts(t, st)
	if c.Sending != 0 || c.InDoubt != 0 {
		t.Fatalf("counts = %+v: a drained run leaves no row sending or in doubt", c)
	}
	if c.Sent != calls.Load() {
		t.Fatalf("sent = %d, requests = %d: every answered request must be recorded", c.Sent, calls.Load())
	}
	if c.Sent+c.Pending != 2000 {
		t.Fatalf("counts = %+v do not add up", c)
	}
}

func TestUnreachableStops(t *testing.T) {
	st := newCheckpoint(t, 100, "A")
	fs := &fakeSender{fn: func(m campaign.Message, call int) (string, error) {
		return "", fmt.Errorf("request not sent: %w", syscall.ECONNREFUSED)
	}}
	cfg := testConfig(st, fs, "A")
	cfg.Unreachable = 10
	cfg.BackoffBase = time.Hour
	err := New(cfg).Run(context.Background())
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Run: %v, want ErrUnreachable", err)
	}
	if c := counts(t, st); c.Pending != 100 {
		t.Fatalf("counts = %+v, want all 100 pending", c)
	}
}

func TestRetriesBeyondHorizonEndTheRun(t *testing.T) {
	st := newCheckpoint(t, 5, "A")
	fs := &fakeSender{fn: func(m campaign.Message, call int) (string, error) { return "", apiErr(131000, 500) }}
	cfg := testConfig(st, fs, "A")
	cfg.BackoffBase, cfg.BackoffMax, cfg.RetryHorizon = time.Hour, time.Hour, time.Minute
	cfg.Jitter = func() float64 { return 0.5 } // retries due in 30 minutes
	done := make(chan error)
	go func() { done <- New(cfg).Run(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run waited for retries beyond its horizon")
	}
	if c := counts(t, st); c.Pending != 5 {
		t.Fatalf("counts = %+v, want 5 pending with retries scheduled", c)
	}
	for row := int64(1); row <= 5; row++ {
		if n := fs.count(row); n != 1 {
			t.Fatalf("row %d sent %d times, want 1", row, n)
		}
	}
}
