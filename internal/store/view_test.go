package store

import (
	"context"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
)

// viewCounts counts the rows on a view, as metrics do beside a run.
func viewCounts(ctx context.Context, s *Store) (c campaign.Counts, err error) {
	err = s.View(ctx, func(v *Store) error {
		c, err = v.Counts(ctx)
		return err
	})
	return c, err
}

// TestViewBesideTheWriter: counting rows on a view (what metrics do every
// few seconds, a second's scan on millions of rows) neither waits for the
// send loop's connection nor holds it: a count completes while a record is
// under way, and claims and records complete while a view's read is in
// progress, which keeps seeing its snapshot.
func TestViewBesideTheWriter(t *testing.T) {
	s := newStore(t, phones(6, "A")...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := time.Now()

	// A write under way holds the store's only connection.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE recipients SET status = 'sending' WHERE row = 1`); err != nil {
		t.Fatal(err)
	}
	c, err := viewCounts(ctx, s)
	if err != nil {
		t.Fatalf("counting beside a write under way: %v (it waited for the run's connection)", err)
	}
	if c.Pending != 6 {
		t.Errorf("counted beside an uncommitted write: %+v, want 6 pending", c)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}

	// A read in progress on a view: claims and records go on beside it.
	err = s.View(ctx, func(v *Store) error {
		before, err := v.Counts(ctx)
		if err != nil {
			return err
		}
		jobs, err := s.Claim(ctx, "A", now, 2)
		if err != nil {
			t.Fatalf("claim beside a view: %v", err)
		}
		if len(jobs) != 2 {
			t.Fatalf("claimed %d rows, want 2", len(jobs))
		}
		if err := s.Record(ctx, []engine.Result{
			{Row: jobs[0].Row, Outcome: engine.OutcomeSent, MessageID: "wamid.1", At: now},
			{Row: jobs[1].Row, Outcome: engine.OutcomeFailed, Code: 131026, Title: "Message undeliverable", At: now},
		}); err != nil {
			t.Fatalf("record beside a view: %v", err)
		}
		after, err := v.Counts(ctx)
		if err != nil {
			return err
		}
		if after != before {
			t.Errorf("a view's counts changed under it: %+v, then %+v", before, after)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err = viewCounts(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if want := (campaign.Counts{Total: 6, Pending: 4, Sent: 1, Failed: 1}); c != want {
		t.Errorf("counts after the view = %+v, want %+v", c, want)
	}
}

// TestViewAfterClose: a view of a closed store fails, it opens nothing.
func TestViewAfterClose(t *testing.T) {
	s := newStore(t)
	if _, err := viewCounts(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := viewCounts(context.Background(), s); err == nil {
		t.Fatal("a view of a closed store succeeded")
	}
}
