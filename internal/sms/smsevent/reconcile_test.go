package smsevent_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/logfile"
	"github.com/bulksend/bulksend/internal/reconcile"
	"github.com/bulksend/bulksend/internal/sms/smsevent"
	"github.com/bulksend/bulksend/internal/store"
)

const (
	sender = "+12065550152"
	msgID  = "0e5b2c7a-3f41-4d2e-9a0b-5c1d2e3f4a0" // + "1"…"6": the fixtures' messages
)

// TestReconcile applies each form of the fixtures' events to a real
// checkpoint of campaign spring-2026, as `bulksend reconcile` would: rows
// 1-4 were sent (their message IDs recorded), row 5's send is in doubt,
// row 6 was never sent. The events deliver rows 1 and 3, fail rows 2 and
// 4, and settle row 5 as failed by its context alone; the event of another
// sender's message is foreign, the voice event (and EventBridge's
// registration change) not a status, Firehose's cut line invalid. Applying
// the log again changes nothing.
func TestReconcile(t *testing.T) {
	for _, tc := range []struct {
		file      string
		invalid   int64
		notStatus int64
		first     []int
	}{
		{file: "firehose.jsonl", invalid: 1, notStatus: 1, first: []int{5}},
		{file: "eventbridge.jsonl", notStatus: 2, first: []int{}},
		{file: "eventbridge-sns.jsonl", notStatus: 1, first: []int{}},
		{file: "sns.jsonl", notStatus: 2, first: []int{}},
	} {
		t.Run(tc.file, func(t *testing.T) { testReconcile(t, tc.file, tc.invalid, tc.notStatus, tc.first) })
	}
}

func testReconcile(t *testing.T, file string, invalid, notStatus int64, first []int) {
	ctx := context.Background()
	st := checkpoint(t, 6)
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for row := int64(1); row <= 5; row++ {
		jobs, err := st.Claim(ctx, sender, at, 1)
		if err != nil || len(jobs) != 1 || jobs[0].Row != row {
			t.Fatalf("claim row %d: %+v %v", row, jobs, err)
		}
		res := engine.Result{Row: row, Outcome: engine.OutcomeSent, MessageID: fmt.Sprint(msgID, row), At: at}
		if row == 5 {
			res = engine.Result{Row: row, Outcome: engine.OutcomeInDoubt, Title: "context deadline exceeded", At: at}
		}
		if err := st.Record(ctx, []engine.Result{res}); err != nil {
			t.Fatal(err)
		}
	}

	sum := apply(t, st, file)
	want := reconcile.Summary{
		// Applied 5: the queued and pending events carry prices, which only a
		// final event gives (see status), and prove nothing the final ones do not.
		Events: 8, Matched: 7, Applied: 5, Foreign: 1, Invalid: invalid, NotStatus: notStatus, FirstInvalidLines: first,
		Kinds: map[string]int64{}, Settled: map[string]int64{"failed": 1}, Corrected: map[string]int64{}, Changed: 5,
		Logs: []reconcile.Log{{Name: file, Events: 8, Invalid: invalid, NotStatus: notStatus, FirstInvalidLines: first}},
	}
	if !reflect.DeepEqual(sum, want) {
		t.Errorf("summary\n got %+v\nwant %+v", sum, want)
	}

	charge := func(c float64) *float64 { return &c }
	wantRows := []string{
		fmt.Sprintf("delivered %s1 %q %q %v", msgID, "", "", pricing(campaign.Pricing{Parts: 1, Charge: charge(0.00847)})),
		fmt.Sprintf("failed %s2 %q %q %v", msgID, "TEXT_CARRIER_UNREACHABLE: Carrier unreachable", "carrier_unreachable", pricing(campaign.Pricing{Parts: 1, Charge: charge(0.00847)})),
		fmt.Sprintf("delivered %s3 %q %q %v", msgID, "", "", pricing(campaign.Pricing{Parts: 2, Charge: charge(0.01694)})),
		fmt.Sprintf("failed %s4 %q %q %v", msgID, "TEXT_UNKNOWN: Unknown error", "unknown", pricing(campaign.Pricing{Parts: 1, Charge: charge(0.00847)})),
		fmt.Sprintf("failed %s6 %q %q %v", msgID, "TEXT_TTL_EXPIRED: Message TTL expired", "ttl_expired", pricing(campaign.Pricing{Parts: 1, Charge: charge(0)})),
		fmt.Sprintf("pending  %q %q %v", "", "", pricing(campaign.Pricing{})),
	}
	if got := rows(t, st); !reflect.DeepEqual(got, wantRows) {
		t.Errorf("rows\n got %q\nwant %q", got, wantRows)
	}

	again := apply(t, st, file)
	if again.Changed != 0 || again.Applied != 0 || again.Matched != 7 {
		t.Errorf("applied again: %+v", again)
	}
	if got := rows(t, st); !reflect.DeepEqual(got, wantRows) {
		t.Errorf("rows after applying again\n got %q\nwant %q", got, wantRows)
	}
}

// checkpoint is a checkpoint of campaign spring-2026 with n SMS rows to
// send from sender.
func checkpoint(t *testing.T, n int64) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	row := int64(0)
	_, err = st.Import(context.Background(), func() (store.Row, error) {
		if row == n {
			return store.Row{}, io.EOF
		}
		row++
		return store.Row{Row: row, Line: int(row) + 1, Phone: fmt.Sprintf("+142555501%02d", row), Sender: sender, Parts: 1, Encoding: "GSM"}, nil
	}, func() store.Settings { return store.Settings{CampaignID: "spring-2026", MaxAttempts: 3} })
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// apply reconciles st with testdata/file, opened as the CLI opens a log.
func apply(t *testing.T, st *store.Store, file string) reconcile.Summary {
	t.Helper()
	ctx := context.Background()
	f, err := logfile.Open(filepath.Join("testdata", file), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rc, err := reconcile.New(st, reconcile.Options{CampaignID: "spring-2026", Senders: []string{sender}, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Read(ctx, file, smsevent.Statuses(smsevent.NewReader(f))); err != nil {
		t.Fatal(err)
	}
	sum, err := rc.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// rows is each row's status, message ID, title, failure reason and price.
func rows(t *testing.T, st *store.Store) []string {
	t.Helper()
	var out []string
	err := st.Export(context.Background(), func(r store.ExportRow) error {
		out = append(out, fmt.Sprintf("%s %s %q %q %v", r.Status, r.MessageID, r.ErrorTitle, r.FailReason, pricing(r.Price)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func pricing(p campaign.Pricing) string {
	c := "-"
	if p.Charge != nil {
		c = fmt.Sprint(*p.Charge)
	}
	return fmt.Sprintf("parts %d charge %s", p.Parts, c)
}
