// Package enginetest holds what tests of the engine's seams share: Memory,
// an in-memory engine.Checkpoint, and CheckpointSuite, the conformance
// tests that every Checkpoint (Memory and the SQLite store) must pass.
package enginetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
)

// Row is one recipient to send, as a test seeds a checkpoint with it.
type Row struct {
	Row    int64
	Phone  string
	Sender string
	Params []string
	Parts  int // an SMS row's parts: the job's Cost; 0 for a WhatsApp row (cost 1)
}

// State is what Memory holds of one row.
type State struct {
	Row
	Status      campaign.Status
	Attempts    int
	NextAt      time.Time
	AttemptedAt time.Time
	MessageID   string
	Held        bool // sent, held back by the provider
	Code        int
	Title       string
	Reason      string // failed: a stable failure name
	Throttles   int    // throttled tries
}

// Memory is an engine.Checkpoint in memory, with the SQLite store's
// semantics (CheckpointSuite holds both to them) and no durability. Make it
// with NewMemory. It is safe for concurrent use.
type Memory struct {
	mu   sync.Mutex
	rows []State // in row order
	at   map[int64]int
}

var _ engine.Checkpoint = (*Memory)(nil)

// NewMemory returns a checkpoint holding rows, all pending and due.
func NewMemory(rows ...Row) *Memory {
	m := &Memory{at: make(map[int64]int, len(rows))}
	for _, r := range rows {
		m.rows = append(m.rows, State{Row: r, Status: campaign.Pending, NextAt: ms(time.Time{})})
	}
	slices.SortFunc(m.rows, func(a, b State) int { return int(a.Row.Row - b.Row.Row) })
	for i, s := range m.rows {
		m.at[s.Row.Row] = i
	}
	return m
}

// Claim implements engine.Checkpoint.
func (m *Memory) Claim(ctx context.Context, sender string, now time.Time, limit int) ([]engine.Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now = ms(now)
	var due []*State
	for i := range m.rows {
		s := &m.rows[i]
		if s.Status == campaign.Pending && s.Sender == sender && !s.NextAt.After(now) {
			due = append(due, s)
		}
	}
	slices.SortStableFunc(due, func(a, b *State) int { return a.NextAt.Compare(b.NextAt) })
	jobs := make([]engine.Job, 0, min(limit, len(due)))
	for _, s := range due[:min(limit, len(due))] {
		s.Status, s.Attempts, s.AttemptedAt = campaign.Sending, s.Attempts+1, now
		jobs = append(jobs, engine.Job{Row: s.Row.Row, Phone: s.Phone, Sender: s.Sender, Params: slices.Clone(s.Params), Attempts: s.Attempts,
			Cost: max(1, s.Parts), Throttles: s.Throttles})
	}
	return jobs, nil
}

// Record implements engine.Checkpoint.
func (m *Memory) Record(ctx context.Context, results []engine.Result) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range results {
		i, ok := m.at[r.Row]
		if !ok || m.rows[i].Status != campaign.Sending {
			continue
		}
		s := &m.rows[i]
		switch r.Outcome {
		case engine.OutcomeSent:
			s.Status, s.MessageID, s.Held, s.Code, s.Title = campaign.Sent, r.MessageID, r.Held, 0, ""
		case engine.OutcomeFailed:
			s.Status, s.Code, s.Title, s.Reason = campaign.Failed, r.Code, r.Title, r.Reason
			if r.Throttled {
				s.Throttles++
			}
		case engine.OutcomeRetry:
			s.Status, s.Code, s.Title, s.NextAt = campaign.Pending, r.Code, r.Title, ms(r.NextAt)
		case engine.OutcomeInDoubt:
			s.Status, s.Code, s.Title = campaign.InDoubt, r.Code, r.Title
		case engine.OutcomeRelease:
			s.Status, s.Attempts, s.NextAt = campaign.Pending, s.Attempts-1, ms(r.NextAt)
		case engine.OutcomeThrottled:
			s.Status, s.Attempts, s.Throttles = campaign.Pending, s.Attempts-1, s.Throttles+1
			s.Code, s.Title, s.NextAt = r.Code, r.Title, ms(r.NextAt)
		default:
			return fmt.Errorf("record row %d: unknown outcome %d", r.Row, r.Outcome)
		}
	}
	return nil
}

// NextDue implements engine.Checkpoint.
func (m *Memory) NextDue(ctx context.Context, sender string) (time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var next time.Time
	ok := false
	for _, s := range m.rows {
		if s.Status == campaign.Pending && (sender == "" || s.Sender == sender) && (!ok || s.NextAt.Before(next)) {
			next, ok = s.NextAt, true
		}
	}
	return next, ok, nil
}

// Counts returns the number of rows in each status.
func (m *Memory) Counts() campaign.Counts {
	m.mu.Lock()
	defer m.mu.Unlock()
	var c campaign.Counts
	for _, s := range m.rows {
		c.Add(s.Status, 1)
	}
	return c
}

// State returns row's state; ok is false for a row it does not hold.
func (m *Memory) State(row int64) (s State, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, ok := m.at[row]
	if !ok {
		return State{}, false
	}
	s = m.rows[i]
	s.Params = slices.Clone(s.Params)
	return s, true
}

// ms is t at the store's precision, Unix milliseconds; the zero time is
// the Unix epoch, as the store reads back an unset instant.
func ms(t time.Time) time.Time {
	if t.IsZero() {
		return time.UnixMilli(0)
	}
	return time.UnixMilli(t.UnixMilli())
}
