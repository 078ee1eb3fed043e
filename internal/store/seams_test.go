package store

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/engine/enginetest"
)

// TestCheckpointConformance holds the store to the engine's contract, the
// same tests the in-memory checkpoint of the engine's unit tests passes.
func TestCheckpointConformance(t *testing.T) {
	enginetest.CheckpointSuite(t, func(t *testing.T, rows []enginetest.Row) (engine.Checkpoint, enginetest.Probe) {
		s, err := Open(filepath.Join(t.TempDir(), "c.bulksend.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		i := 0
		_, err = s.Import(context.Background(), func() (Row, error) {
			if i == len(rows) {
				return Row{}, io.EOF
			}
			r := rows[i]
			i++
			row := Row{Row: r.Row, Line: int(r.Row) + 1, Phone: r.Phone, Sender: r.Sender, Params: r.Params, Parts: r.Parts}
			if r.Parts > 0 {
				row.Encoding = "GSM-7"
			}
			return row, nil
		}, func() Settings { return Settings{CampaignID: "c1"} })
		if err != nil {
			t.Fatal(err)
		}
		return s, probe{t, s}
	})
}

// probe reads the store back for the conformance suite.
type probe struct {
	t *testing.T
	s *Store
}

func (p probe) Counts() campaign.Counts {
	c, err := p.s.Counts(context.Background())
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

func (p probe) State(row int64) (st enginetest.State, ok bool) {
	err := p.s.Export(context.Background(), func(r ExportRow) error {
		if r.Row == row {
			st = enginetest.State{Row: enginetest.Row{Row: r.Row, Phone: r.Phone, Sender: r.Sender}, Status: r.Status,
				Attempts: r.Attempts, MessageID: r.MessageID, Code: r.ErrorCode, Title: r.ErrorTitle, Throttles: r.Throttles}
			ok = true
		}
		return nil
	})
	if err != nil {
		p.t.Fatal(err)
	}
	return st, ok
}

// TestSkipKinds: reports group skipped rows by the kind stored with them,
// whatever their reason says.
func TestSkipKinds(t *testing.T) {
	ctx := context.Background()
	s := newStore(t,
		Row{Row: 1, Line: 2, Phone: "+447700900001", Sender: "A"},
		Row{Row: 2, Line: 3, Phone: "+447700900001", Sender: "A"},
		Row{Row: 3, Line: 4, Phone: "07x", Sender: "A", Skip: "a reworded reason", SkipKind: campaign.SkipInvalid},
		Row{Row: 4, Line: 5, Phone: "+447700900004", Skip: "nobody to send it", SkipKind: campaign.SkipNoSender},
		Row{Row: 5, Line: 6, Phone: "+447700900005", Sender: "A"},
	)
	list := []string{"+447700900005"}
	if _, err := s.Exclude(ctx, func() (string, error) {
		if len(list) == 0 {
			return "", io.EOF
		}
		p := list[0]
		list = list[1:]
		return p, nil
	}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Breakdown(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[campaign.SkipKind]int64{campaign.SkipDuplicate: 1, campaign.SkipInvalid: 1, campaign.SkipNoSender: 1, campaign.SkipExcluded: 1}
	if len(r.Skipped) != len(want) {
		t.Fatalf("skipped by kind = %v, want %v", r.Skipped, want)
	}
	for k, n := range want {
		if r.Skipped[k] != n {
			t.Fatalf("skipped by kind = %v, want %v", r.Skipped, want)
		}
	}
	if r.Counts.Skipped != 4 || r.Counts.Pending != 1 {
		t.Fatalf("counts = %+v", r.Counts)
	}

	// A bulksend older than skip_kind, run on this checkpoint, skips rows
	// without a kind: they are grouped by their reason, as it did.
	if _, err := s.db.Exec(`UPDATE recipients SET status = 'skipped', reason = 'excluded', skip_kind = NULL WHERE row = 1`); err != nil {
		t.Fatal(err)
	}
	if r, err = s.Breakdown(ctx); err != nil || r.Skipped[campaign.SkipExcluded] != 2 || len(r.Skipped) != 4 {
		t.Fatalf("skipped by kind = %v (%v), want 2 excluded", r.Skipped, err)
	}
}

func TestImportRefusesASkipWithoutKind(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Import(context.Background(), rowsOf(Row{Row: 1, Line: 2, Phone: "x", Sender: "A", Skip: "invalid"}), func() Settings { return Settings{} })
	if err == nil {
		t.Fatal("a skipped row without a kind was imported")
	}
}
