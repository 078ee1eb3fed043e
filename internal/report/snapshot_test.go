package report

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/reconcile"
)

// TestGatherOneSnapshot: a run that records while the report is read
// changes none of its figures. The write lands between the breakdown (the
// counts) and the other queries: a status webhook delivers the sent row
// (funnel, time to delivered) and a late answer adds an attempt (attempts,
// latency). The report is the one of the moment its first read began,
// every figure agreeing with the others; the next report has the write.
func TestGatherOneSnapshot(t *testing.T) {
	ctx := context.Background()
	st, _ := fixture(t)
	now := at(time.Minute)
	before, err := Gather(ctx, st, now)
	if err != nil {
		t.Fatal(err)
	}
	wrote := false
	afterBreakdown = func() {
		wrote = true
		sent := at(24310 * ms).UnixMilli()
		if err := st.SaveDeliveries(ctx, nil, []reconcile.Delivery{
			{Row: 6, Status: campaign.Delivered, SentAt: sent, DeliveredAt: sent + 3000},
		}, at(40*s)); err != nil {
			t.Errorf("deliver row 6 while the report reads: %v", err)
		}
		if err := st.Record(ctx, []engine.Result{{Row: 5, Outcome: engine.OutcomeInDoubt, At: at(41 * s),
			Attempt: attempt(5, "B", 40*s, time.Second, "in doubt", 0)}}); err != nil {
			t.Errorf("record an attempt while the report reads: %v", err)
		}
	}
	defer func() { afterBreakdown = nil }()
	during, err := Gather(ctx, st, now)
	if err != nil {
		t.Fatal(err)
	}
	afterBreakdown = nil
	if !wrote {
		t.Fatal("the write between the queries never ran")
	}
	if during.Funnel.Unconfirmed != during.Counts.Sent || during.Funnel.Delivered != during.Counts.Delivered+during.Counts.Read {
		t.Errorf("funnel %+v disagrees with counts %+v", during.Funnel, during.Counts)
	}
	if during.Attempts.Total != during.Latency.Attempts {
		t.Errorf("attempts %d, latency over %d", during.Attempts.Total, during.Latency.Attempts)
	}
	if !reflect.DeepEqual(during, before) {
		t.Errorf("a write during the report changed it:\n got %+v\nwant %+v", during, before)
	}
	after, err := Gather(ctx, st, now)
	if err != nil {
		t.Fatal(err)
	}
	if after.Counts.Delivered != before.Counts.Delivered+1 || after.Attempts.Total != before.Attempts.Total+1 {
		t.Errorf("the next report lacks the write: counts %+v, %d attempts", after.Counts, after.Attempts.Total)
	}
}
