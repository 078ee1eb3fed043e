package inbound

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/ledger"
	"github.com/bulksend/bulksend/internal/optout"
)

// TestApplierLive: kept bodies reach the checkpoint of the campaign the
// ledger knows (a status, a reply) and the ledger (a STOP); a status of a
// campaign found nowhere is counted for reconcile.
func TestApplierLive(t *testing.T) {
	ctx := context.Background()
	db := sentCheckpoint(t, "spring", 2)
	led := openLedger(t)
	if err := led.NoteCampaign(ctx, ledger.Campaign{Checkpoint: db, Channel: "whatsapp", ID: "spring", LastRun: time.Now()}); err != nil {
		t.Fatal(err)
	}
	a, err := NewApplier(ctx, LiveConfig{Log: slog.New(slog.DiscardHandler), Ledger: led, Keywords: optout.New(nil, nil), Channels: []Channel{whatsapp}})
	if err != nil {
		t.Fatal(err)
	}
	a.Kept([][]byte{delivered("spring", 1), reply(2, "STOP"), delivered("autumn", 1)})
	got := a.Stats()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	want := LiveStats{Statuses: 2, Applied: 1, Unplaced: 1, Campaigns: 1,
		Heard: HeardSummary{Replies: 1, Recorded: 1, Stops: 1, Added: 1}}
	if got != want {
		t.Errorf("stats:\n got %+v\nwant %+v", got, want)
	}
	rs := rows(t, db)
	if rs[1].Status != campaign.Delivered || rs[2].Status != campaign.Sent {
		t.Errorf("rows are %s and %s, want delivered and sent", rs[1].Status, rs[2].Status)
	}
	if rs[2].Reply != "STOP" {
		t.Errorf("row 2's reply %q, want STOP", rs[2].Reply)
	}
	if got := optedOut(t, led); !slices.Equal(got, []string{phone(2)}) {
		t.Errorf("opted out %v, want %s", got, phone(2))
	}
}

// TestApplierNamed: a checkpoint named is applied to without a ledger; one
// that cannot be opened is an *OpenError naming it.
func TestApplierNamed(t *testing.T) {
	ctx := context.Background()
	db := sentCheckpoint(t, "spring", 1)
	a, err := NewApplier(ctx, LiveConfig{Log: slog.New(slog.DiscardHandler), Channels: []Channel{whatsapp}, Checkpoints: []string{db}})
	if err != nil {
		t.Fatal(err)
	}
	a.Kept([][]byte{delivered("spring", 1)})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if st := rows(t, db)[1].Status; st != campaign.Delivered {
		t.Errorf("row 1 is %s, want delivered", st)
	}

	dir := t.TempDir()
	_, err = NewApplier(ctx, LiveConfig{Log: slog.New(slog.DiscardHandler), Channels: []Channel{whatsapp}, Checkpoints: []string{db, dir}})
	var open *OpenError
	if !errors.As(err, &open) || open.Checkpoint != dir {
		t.Errorf("a folder as a checkpoint: %v, want an *OpenError of %s", err, dir)
	}
}

// TestOwner: a body goes to the first channel that owns it, the channel
// without Owns taking the rest.
func TestOwner(t *testing.T) {
	chs := []Channel{whatsapp, {}}
	if i := owner(chs, delivered("spring", 1)); i != 0 {
		t.Errorf("a WhatsApp body went to channel %d", i)
	}
	if i := owner(chs, []byte(`{"eventType":"TEXT_DELIVERED"}`)); i != 1 {
		t.Errorf("an AWS event went to channel %d", i)
	}
	if i := owner(chs[:1], []byte(`{}`)); i != -1 {
		t.Errorf("a body no channel owns went to channel %d", i)
	}
}
