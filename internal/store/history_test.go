package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/engine"
)

// TestCheck: Check tells a checkpoint from other files, and changes none.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	good := newStore(t, phones(1, "A")...).Path()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("phone,name\n+447400000001,Ana\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "foreign.db")
	db, err := sql.Open("sqlite3", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	unset := filepath.Join(dir, "unset.db")
	s, err := Open(unset) // made, never set up
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	newer := filepath.Join(dir, "newer.db")
	s, err = Open(newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	s.Close()

	for _, tc := range []struct {
		name, path string
		want       error
	}{
		{"a checkpoint", good, nil},
		{"a text file", text, ErrNotCheckpoint},
		{"an empty file", empty, ErrNotCheckpoint},
		{"another program's SQLite file", foreign, ErrNotCheckpoint},
		{"a checkpoint never set up", unset, ErrNoSettings},
		{"a newer bulksend's", newer, ErrNewerSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := os.ReadFile(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			err = Check(tc.path)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Check = %v, want %v", err, tc.want)
			}
			after, err := os.ReadFile(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if string(before) != string(after) {
				t.Error("Check changed the file")
			}
		})
	}
}

// TestHistory: the attempts' spans per run, the attempts with their rows'
// parts, quantiles as status computes them, and the funnel.
func TestHistory(t *testing.T) {
	ctx := context.Background()
	rows := phones(4, "A")
	rows[0].Parts, rows[1].Parts = 3, 1 // SMS rows; the others WhatsApp's
	s := newStore(t, rows...)
	now := time.UnixMilli(1_750_000_000_000)
	run, err := s.BeginRun(ctx, Run{StartedAt: now, PID: 1, Version: "t", Rate: 1, Senders: []string{"A"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "A", now, 4); err != nil {
		t.Fatal(err)
	}
	a := func(row int64, left, latency time.Duration, class string) engine.Attempt {
		return engine.Attempt{Row: row, Sender: "A", At: now.Add(left), Latency: latency, Class: class}
	}
	if err := s.Record(ctx, []engine.Result{
		{Row: 1, Outcome: engine.OutcomeSent, MessageID: "w1", At: now.Add(time.Second), Attempt: a(1, 0, 40*time.Millisecond, engine.Accepted)},
		{Row: 2, Outcome: engine.OutcomeSent, MessageID: "w2", At: now.Add(time.Second), Attempt: a(2, 100*time.Millisecond, 10*time.Millisecond, engine.Accepted)},
		{Row: 3, Outcome: engine.OutcomeInDoubt, At: now.Add(5 * time.Second), Attempt: a(3, 200*time.Millisecond, 5*time.Second, "in doubt")},
		{Row: 4, Outcome: engine.OutcomeSent, MessageID: "w4", At: now.Add(time.Second), Attempt: a(4, 300*time.Millisecond, 30*time.Millisecond, engine.Accepted)},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`UPDATE recipients SET status = 'delivered', delivered_at = sent_at + 2000 WHERE row = 1;
		UPDATE recipients SET status = 'read', delivered_at = sent_at + 3000, read_at = sent_at + 9000 WHERE row = 2;
		UPDATE recipients SET status = 'failed', error_code = 131049 WHERE row = 4`); err != nil {
		t.Fatal(err)
	}

	spans, err := s.RunSpans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []RunSpan{{Run: run, Attempts: 4, First: now, Last: now.Add(300 * time.Millisecond), Answered: now.Add(5200 * time.Millisecond)}}; !slices.Equal(spans, want) {
		t.Errorf("spans %+v, want %+v", spans, want)
	}
	var parts []int
	if err := s.ScanAttempts(ctx, true, func(a AttemptRow) error { parts = append(parts, a.Parts); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(parts, []int{3, 1, 1, 1}) {
		t.Errorf("parts %v, want [3 1 1 1] (a row without parts costs one)", parts)
	}
	for _, tc := range []struct {
		m    Measure
		n    int64
		want []time.Duration
	}{
		// 10, 30, 40 ms, 5 s: index ⌊q·4⌋ of them, at most 3.
		{AttemptLatency, 4, []time.Duration{40 * time.Millisecond, 5 * time.Second, 5 * time.Second, 10 * time.Millisecond}},
		{TimeToDelivered, 2, []time.Duration{3 * time.Second, 3 * time.Second, 3 * time.Second, 2 * time.Second}},
		{TimeToRead, 1, []time.Duration{9 * time.Second, 9 * time.Second, 9 * time.Second, 9 * time.Second}},
	} {
		n, got, err := s.Quantiles(ctx, tc.m, 0.5, 0.9, 0.99, 0)
		if err != nil || n != tc.n || !slices.Equal(got, tc.want) {
			t.Errorf("Quantiles(%d) = %d %v %v, want %d %v", tc.m, n, got, err, tc.n, tc.want)
		}
	}
	f, err := s.Funnel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Row 4 failed after it was accepted (it has a message ID); row 3 is
	// in doubt, not accepted.
	if want := (Funnel{Accepted: 3, Delivered: 2, Read: 1, FailedAfterAccept: 1}); f != want {
		t.Errorf("funnel %+v, want %+v", f, want)
	}
}
