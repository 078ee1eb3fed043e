package inbound

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/ledger"
	"github.com/bulksend/bulksend/internal/optout"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp/receive"
)

// TestReconcile: a log's statuses and replies reach the checkpoint, the
// rows left sent stay in doubt-free; read again, it changes nothing.
func TestReconcile(t *testing.T) {
	db := sentCheckpoint(t, "spring", 2)
	log := filepath.Join(t.TempDir(), "webhooks.jsonl")
	body := bytes.Join([][]byte{delivered("spring", 1), reply(2, "thanks")}, []byte("\n"))
	if err := os.WriteFile(log, body, 0o600); err != nil {
		t.Fatal(err)
	}
	reconcileOnce := func() *Outcome {
		t.Helper()
		out, err := Reconcile(context.Background(), ReconcileOptions{
			DB: db, Logs: []string{log}, Unmatched: campaign.Hold, Keywords: optout.New(nil, nil), Log: slog.New(slog.DiscardHandler),
			Open:      store.OpenRead,
			Ledger:    func(context.Context) (*ledger.Ledger, error) { return nil, nil },
			LogFiles:  receive.Files,
			ChannelOf: func(string) Channel { return whatsapp },
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := reconcileOnce()
	if out.Summary.Applied != 1 || out.Counts.Delivered != 1 || out.Counts.Sent != 1 || out.Kept {
		t.Errorf("first read: applied %d, counts %+v, kept %v", out.Summary.Applied, out.Counts, out.Kept)
	}
	if want := (HeardSummary{Replies: 1, Recorded: 1}); out.Heard != want {
		t.Errorf("heard %+v, want %+v", out.Heard, want)
	}
	if again := reconcileOnce(); again.Summary.Applied != 0 || again.Heard.Recorded != 0 || again.Counts != out.Counts {
		t.Errorf("read again: applied %d, heard %+v, counts %+v", again.Summary.Applied, again.Heard, again.Counts)
	}
}

// TestExpandLogs: files pass as they are, a folder of bulksend receive's
// log becomes its files, and a folder without one is a *LogFolderError.
func TestExpandLogs(t *testing.T) {
	empty := t.TempDir()
	files := func(dir string) ([]string, error) {
		if dir == empty {
			return nil, nil
		}
		return []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}, nil
	}
	full := t.TempDir()
	got, err := expandLogs([]string{"-", full, "missing.jsonl"}, files)
	if want := []string{"-", filepath.Join(full, "a"), filepath.Join(full, "b"), "missing.jsonl"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("expandLogs = %q, %v; want %q", got, err, want)
	}
	var folder *LogFolderError
	if _, err := expandLogs([]string{empty}, files); !errors.As(err, &folder) || folder.Dir != empty || folder.Err != nil {
		t.Errorf("an empty folder: %v", err)
	}
}
