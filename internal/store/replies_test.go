package store

import (
	"context"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/reconcile"
)

// A row keeps its first reply, found by the message it answers or else by
// phone; a reply before anything was sent, from a phone the campaign does
// not have, or to another campaign's message, is recorded nowhere; the same replies again, in another
// order, change nothing.
func TestRecordReplies(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, phones(4, "A")...)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	// Row 4 is never sent.
	jobs, err := s.Claim(ctx, "A", t0, 3)
	if err != nil || len(jobs) != 3 {
		t.Fatal(jobs, err)
	}
	var res []engine.Result
	for _, j := range jobs {
		res = append(res, engine.Result{Row: j.Row, Outcome: engine.OutcomeSent, MessageID: "m" + string(rune('0'+j.Row)), At: t0})
	}
	if err := s.Record(ctx, res); err != nil {
		t.Fatal(err)
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	replies := []campaign.Reply{
		{Phone: "+447700900001", At: at(60), Text: "second"},
		{Phone: "+447700900001", At: at(30), Text: "first"},
		{Phone: "+449999999999", MessageID: "m2", At: at(40), Text: "by its message"}, // the ID wins over the phone
		{Phone: "+447700900003", At: at(-120), Text: "before the campaign"},
		{Phone: "+447700900004", At: at(50), Text: "never sent to"},
		{Phone: "+447700900005", At: at(50), Text: "not in the campaign"},
		{Phone: "+447700900004", MessageID: "m-of-another-campaign", At: at(50), Text: "to another campaign's message"},
		{Phone: "+447700900003", At: at(0), Text: "in the second it left: a very long reply that goes on and on and on, longer than a row keeps of it, so that it is cut on a character boundary é"},
	}
	n, err := s.RecordReplies(ctx, replies)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("recorded %d rows, want 3", n)
	}
	want := map[int64]string{1: "first", 2: "by its message", 3: "in the second it left: a very long reply that goes on and on and on, longer than a row keeps of it, …"}
	check := func() {
		t.Helper()
		got := map[int64]string{}
		if err := s.Export(ctx, func(r ExportRow) error {
			if r.Reply != "" {
				got[r.Row] = r.Reply
				if r.RepliedAt.IsZero() {
					t.Errorf("row %d: a reply without its time", r.Row)
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("replies %v, want %v", got, want)
		}
		for row, text := range want {
			if got[row] != text {
				t.Errorf("row %d: reply %q, want %q", row, got[row], text)
			}
		}
	}
	check()
	for i, j := 0, len(replies)-1; i < j; i, j = i+1, j-1 {
		replies[i], replies[j] = replies[j], replies[i]
	}
	if n, err := s.RecordReplies(ctx, replies); err != nil || n != 0 {
		t.Errorf("again: recorded %d (%v), want 0", n, err)
	}
	check()
	if c, err := s.Replied(ctx); err != nil || c != 3 {
		t.Errorf("Replied = %d (%v), want 3", c, err)
	}
}

// A live store (a receiver beside a run) reads no row a run may be
// writing and saves no delivery to one: a claim or an answer recorded
// between its read and its write wins.
func TestLiveLeavesTheRunsRows(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, phones(3, "A")...)
	now := time.Now()
	jobs, err := s.Claim(ctx, "A", now, 2) // rows 1 and 2 sending, 3 pending
	if err != nil || len(jobs) != 2 {
		t.Fatal(jobs, err)
	}
	if err := s.Record(ctx, []engine.Result{{Row: 1, Outcome: engine.OutcomeSent, MessageID: "m1", At: now}}); err != nil {
		t.Fatal(err)
	}
	live, err := OpenLive(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	got := map[int64]reconcile.Delivery{}
	if err := live.Deliveries(ctx, []int64{1, 2, 3}, nil, got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got[1]; !ok || len(got) != 1 {
		t.Fatalf("live deliveries of rows %v, want row 1 only (2 is sending, 3 pending)", got)
	}
	// Deliveries computed before a claim: row 3 was claimed meanwhile.
	d := []reconcile.Delivery{
		{Row: 1, Status: campaign.Delivered, MessageID: "m1", DeliveredAt: now.UnixMilli()},
		{Row: 2, Status: campaign.Delivered, MessageID: "m2", DeliveredAt: now.UnixMilli()},
		{Row: 3, Status: campaign.Delivered, MessageID: "m3", DeliveredAt: now.UnixMilli()},
	}
	if err := live.SaveDeliveries(ctx, d, nil, now); err != nil {
		t.Fatal(err)
	}
	if err := live.SaveDeliveries(ctx, nil, d, now); err != nil {
		t.Fatal(err)
	}
	c, err := s.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Delivered != 1 || c.Sending != 1 || c.Pending != 1 {
		t.Fatalf("counts %+v, want 1 delivered, 1 sending, 1 pending", c)
	}
}
