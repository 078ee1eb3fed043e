package reconcile_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/logfile"
	"github.com/bulksend/bulksend/internal/reconcile"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp/webhook"
)

const ecosystem = "This message was not delivered to maintain healthy ecosystem engagement."

// counts is the part of a reconcile.Summary the tables check.
type counts struct {
	Events, Matched, Applied, Foreign, Unknown, Changed, StillInDoubt int64
	Settled, Corrected                                                map[string]int64
}

func countsOf(s reconcile.Summary) counts {
	c := counts{s.Events, s.Matched, s.Applied, s.Foreign, s.Unknown, s.Changed, s.StillInDoubt, s.Settled, s.Corrected}
	if len(c.Settled) == 0 {
		c.Settled = nil
	}
	if len(c.Corrected) == 0 {
		c.Corrected = nil
	}
	return c
}

type settled = map[string]int64

// TestApply feeds logs written by webhook.Body, which gives sent and
// delivered statuses Meta's pricing object: on a row with no pricing stored
// yet, each of them changes the row (it brings the pricing) and counts as
// Applied, though only the earliest one's pricing is kept.
func TestApply(t *testing.T) {
	tests := []struct {
		name string
		rows []seed
		log  []webhook.Status
		opt  reconcile.Options
		want []string
		sum  counts
	}{
		{
			name: "in doubt settled by each status, never resent",
			rows: []seed{inDoubt(at(-7200), 1), inDoubt(at(-7200), 1), inDoubt(at(-7200), 1), inDoubt(at(-7200), 1)},
			log: []webhook.Status{
				status("sent", "w1", 10, 1),
				status("sent", "w2", 10, 2), status("delivered", "w2", 20, 2),
				status("read", "w3", 30, 3),
				withError(status("failed", "w4", 15, 4), 131049, ecosystem),
			},
			opt: reconcile.Options{Unmatched: campaign.Resend},
			want: []string{
				"sent w1 sent@10",
				"delivered w2 sent@10 delivered@20",
				"read w3 delivered@30 read@30",
				`failed w4 #131049 "` + ecosystem + `"`,
			},
			sum: counts{Events: 5, Matched: 5, Applied: 5, Changed: 4,
				Settled: settled{"sent": 1, "delivered": 1, "read": 1, "failed": 1}},
		},
		{
			name: "matched by wamid when callback data is missing or not ours",
			rows: []seed{sentRow("w1", 1.5), sentRow("w2", 1.5), sentRow("w3", 1.5)},
			log: []webhook.Status{
				status("delivered", "w1", 20, 0),
				status("read", "w2", 30, 0),
				withCallback(status("delivered", "w3", 20, 0), "order-17"),
			},
			opt:  reconcile.Options{Senders: []string{ourNumber}},
			want: []string{"delivered w1 sent@1.5 delivered@20", "read w2 sent@1.5 delivered@30 read@30", "delivered w3 sent@1.5 delivered@20"},
			sum:  counts{Events: 3, Matched: 3, Applied: 3, Changed: 3},
		},
		{
			name: "wamid recorded by a status with callback data in the same batch",
			rows: []seed{inDoubt(at(0), 1)},
			log:  []webhook.Status{status("read", "w1", 30, 0), status("sent", "w1", 10, 1)},
			want: []string{"read w1 sent@10 delivered@30 read@30"},
			sum:  counts{Events: 2, Matched: 2, Applied: 2, Changed: 1, Settled: settled{"read": 1}},
		},
		{
			name: "without senders, any number's status is looked up by wamid",
			rows: []seed{sentRow("w1", 1)},
			log:  []webhook.Status{from(status("delivered", "w1", 20, 0), "999")},
			want: []string{"delivered w1 sent@1 delivered@20"},
			sum:  counts{Events: 1, Matched: 1, Applied: 1, Changed: 1},
		},
		{
			name: "duplicates change nothing more",
			rows: []seed{inDoubt(at(0), 1)},
			log: []webhook.Status{
				status("sent", "w1", 10, 1), status("sent", "w1", 10, 1), status("delivered", "w1", 20, 1),
				status("sent", "w1", 10, 1), status("delivered", "w1", 20, 1),
			},
			want: []string{"delivered w1 sent@10 delivered@20"},
			sum:  counts{Events: 5, Matched: 5, Applied: 2, Changed: 1, Settled: settled{"delivered": 1}},
		},
		{
			name: "out of order",
			rows: []seed{inDoubt(at(0), 1), sentRow("w2", 1)},
			log: []webhook.Status{
				status("read", "w1", 30, 1), status("delivered", "w1", 20, 1), status("sent", "w1", 10, 1),
				status("read", "w2", 30, 2), status("sent", "w2", 2, 2),
			},
			want: []string{"read w1 sent@10 delivered@20 read@30", "read w2 sent@1 delivered@30 read@30"},
			sum:  counts{Events: 5, Matched: 5, Applied: 5, Changed: 2, Settled: settled{"read": 1}},
		},
		{
			name: "earliest timestamp of each status",
			rows: []seed{sentRow("w1", 12)},
			log: []webhook.Status{
				status("sent", "w1", 11, 1), status("sent", "w1", 13, 1),
				status("delivered", "w1", 25, 1), status("delivered", "w1", 21, 1),
				status("read", "w1", 40, 1), status("read", "w1", 35, 1),
			},
			want: []string{"read w1 sent@11 delivered@21 read@35"},
			sum:  counts{Events: 6, Matched: 6, Applied: 6, Changed: 1},
		},
		{
			name: "delivered beats failed beats sent",
			rows: []seed{inDoubt(at(0), 1), sentRow("w2", 1), sentRow("w3", 1)},
			log: []webhook.Status{
				withError(status("failed", "w1", 20, 1), 131049, ecosystem), status("delivered", "w1", 15, 1),
				withError(status("failed", "w2", 20, 2), 131026, "Message undeliverable"), status("sent", "w2", 3, 2),
				status("read", "w3", 9, 3), withError(status("failed", "w3", 20, 3), 131026, "Message undeliverable"),
			},
			want: []string{
				"delivered w1 delivered@15",
				`failed w2 #131026 "Message undeliverable" sent@1`,
				"read w3 sent@1 delivered@9 read@9",
			},
			sum: counts{Events: 6, Matched: 6, Applied: 6, Changed: 3, Settled: settled{"delivered": 1}},
		},
		{
			name: "the least of several failures",
			rows: []seed{inDoubt(at(0), 1)},
			log: []webhook.Status{
				status("failed", "w1", 20, 1),
				withError(status("failed", "w1", 21, 1), 131049, ecosystem),
				withError(status("failed", "w1", 22, 1), 131026, "Message undeliverable"),
			},
			want: []string{`failed w1 #131026 "Message undeliverable"`},
			sum:  counts{Events: 3, Matched: 3, Applied: 3, Changed: 1, Settled: settled{"failed": 1}},
		},
		{
			name: "failed without error details",
			rows: []seed{inDoubt(at(0), 1)},
			log:  []webhook.Status{status("failed", "w1", 20, 1)},
			want: []string{`failed w1 "failed (status webhook without error details)"`},
			sum:  counts{Events: 1, Matched: 1, Applied: 1, Changed: 1, Settled: settled{"failed": 1}},
		},
		{
			name: "foreign statuses",
			rows: []seed{sentRow("w1", 1)},
			log: []webhook.Status{
				withCallback(status("delivered", "w1", 20, 0), campaign.Ref{Campaign: "autumn", Row: 1}.String()), // another campaign
				status("delivered", "wX", 20, 0),                           // a wamid we never stored
				withCallback(status("delivered", "wY", 20, 0), "order-17"), // someone else's data, unknown wamid
				from(status("delivered", "w1", 20, 0), "999"),              // another number, no callback data
				status("delivered", "w9", 20, 99),                          // our data, no such row
			},
			opt:  reconcile.Options{Senders: []string{ourNumber}},
			want: []string{"sent w1 sent@1"},
			sum:  counts{Events: 5, Foreign: 5},
		},
		{
			name: "callback data beats the sender filter",
			rows: []seed{inDoubt(at(0), 1)},
			log:  []webhook.Status{from(status("delivered", "w1", 20, 1), "999")},
			opt:  reconcile.Options{Senders: []string{ourNumber}},
			want: []string{"delivered w1 delivered@20"},
			sum:  counts{Events: 1, Matched: 1, Applied: 1, Changed: 1, Settled: settled{"delivered": 1}},
		},
		{
			name: "unknown status values are ignored",
			rows: []seed{inDoubt(at(0), 1)},
			log:  []webhook.Status{status("deleted", "w1", 20, 1), status("warning", "w1", 20, 1), status("played", "w1", 20, 0)},
			want: []string{`in_doubt "context deadline exceeded"`},
			sum:  counts{Events: 3, Unknown: 3, StillInDoubt: 1},
		},
		{
			name: "skipped rows never change",
			rows: []seed{skipped()},
			log:  []webhook.Status{status("read", "w1", 30, 1), withError(status("failed", "w1", 30, 1), 131026, "x")},
			want: []string{"skipped"},
			sum:  counts{Events: 2, Matched: 2},
		},
		{
			name: "a failed row without wamid moved by a delivered webhook",
			rows: []seed{failedRow(131026, "Message undeliverable"), failedRow(0, "in doubt: failed by policy"), failedRow(0, "in doubt after the last attempt")},
			log: []webhook.Status{
				status("delivered", "w1", 20, 1),
				withError(status("failed", "w2", 20, 2), 131049, ecosystem),
				status("sent", "w3", 10, 3),
			},
			want: []string{"delivered w1 delivered@20", `failed w2 #131049 "` + ecosystem + `"`, "sent w3 sent@10"},
			sum:  counts{Events: 3, Matched: 3, Applied: 3, Changed: 3, Corrected: settled{"delivered": 1, "failed": 1, "sent": 1}},
		},
		{
			name: "a status cancels a resend",
			rows: []seed{{attempts: 1, s: pending().s}, pending()},
			log:  []webhook.Status{status("sent", "w1", 10, 1), status("sent", "w2", 10, 2)},
			want: []string{"sent w1 sent@10", "sent w2 sent@10"},
			sum:  counts{Events: 2, Matched: 2, Applied: 2, Changed: 2, Settled: settled{"sent": 2}},
		},
		{
			name: "a row sent twice keeps its smallest wamid",
			rows: []seed{sentRow("wamid.5", 100)},
			log:  []webhook.Status{status("delivered", "wamid.3", 20, 1), status("sent", "wamid.5", 101, 1)},
			want: []string{"delivered wamid.3 sent@100 delivered@20"},
			sum:  counts{Events: 2, Matched: 2, Applied: 2, Changed: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := checkpoint(t, tt.rows)
			opt := tt.opt
			opt.Now = func() time.Time { return at(100) }
			sum := applyLog(t, st, ndjson(tt.log...), opt)
			if got := rowsOf(t, st, len(tt.rows)); !slices.Equal(got, tt.want) {
				t.Errorf("rows:\n got %q\nwant %q", got, tt.want)
			}
			if got := countsOf(sum); !reflect.DeepEqual(got, tt.sum) {
				t.Errorf("summary:\n got %+v\nwant %+v", got, tt.sum)
			}

			// Again: nothing changes, and the summary says so.
			before := full(t, st, len(tt.rows))
			again := applyLog(t, st, ndjson(tt.log...), opt)
			if again.Changed != 0 || again.Applied != 0 || len(again.Settled)+len(again.Corrected) != 0 {
				t.Errorf("second run: %+v, want nothing changed", countsOf(again))
			}
			if again.Matched != sum.Matched || again.Foreign != sum.Foreign {
				t.Errorf("second run matched %d foreign %d, first %d %d", again.Matched, again.Foreign, sum.Matched, sum.Foreign)
			}
			if after := full(t, st, len(tt.rows)); !slices.Equal(before, after) {
				t.Errorf("second run changed rows:\n%q\n%q", before, after)
			}
		})
	}
}

func TestUnmatchedPolicy(t *testing.T) {
	now := at(0)
	rows := []seed{
		inDoubt(at(-3*3600), 1),  // old enough for the policy
		inDoubt(at(-10*60), 1),   // within the grace period
		inDoubt(at(-3*3600), 3),  // old, and used every attempt
		inDoubt(at(-3*3600), 1),  // settled by the log
		sentRow("w5", -3*3600+1), // not in doubt
	}
	log := []webhook.Status{status("delivered", "w4", -3000, 4)}
	const (
		doubt    = `in_doubt "context deadline exceeded"`
		byPolicy = `failed "in doubt: failed by policy"`
		lastTry  = `failed "in doubt after the last attempt"`
		pend     = `pending "context deadline exceeded"`
		settled4 = "delivered w4 delivered@-3000"
		sent5    = "sent w5 sent@-10799"
	)
	tests := []struct {
		name string
		opt  reconcile.Options
		want []string
		sum  counts
	}{
		{
			name: "hold",
			opt:  reconcile.Options{Unmatched: campaign.Hold, Grace: time.Hour},
			want: []string{doubt, doubt, doubt, settled4, sent5},
			sum:  counts{Events: 1, Matched: 1, Applied: 1, Changed: 1, StillInDoubt: 3, Settled: settled{"delivered": 1}},
		},
		{
			name: "zero value holds",
			opt:  reconcile.Options{},
			want: []string{doubt, doubt, doubt, settled4, sent5},
			sum:  counts{Events: 1, Matched: 1, Applied: 1, Changed: 1, StillInDoubt: 3, Settled: settled{"delivered": 1}},
		},
		{
			name: "resend",
			opt:  reconcile.Options{Unmatched: campaign.Resend, Grace: time.Hour},
			want: []string{pend, doubt, lastTry, settled4, sent5},
			sum: counts{Events: 1, Matched: 1, Applied: 1, Changed: 3, StillInDoubt: 1,
				Settled: settled{"delivered": 1, reconcile.SettledResent: 1, reconcile.SettledLastFailed: 1}},
		},
		{
			name: "resend with more attempts allowed",
			opt:  reconcile.Options{Unmatched: campaign.Resend, Grace: time.Hour, MaxAttempts: 4},
			want: []string{pend, doubt, pend, settled4, sent5},
			sum: counts{Events: 1, Matched: 1, Applied: 1, Changed: 3, StillInDoubt: 1,
				Settled: settled{"delivered": 1, reconcile.SettledResent: 2}},
		},
		{
			name: "fail",
			opt:  reconcile.Options{Unmatched: campaign.Fail, Grace: time.Hour},
			want: []string{byPolicy, doubt, byPolicy, settled4, sent5},
			sum: counts{Events: 1, Matched: 1, Applied: 1, Changed: 3, StillInDoubt: 1,
				Settled: settled{"delivered": 1, reconcile.SettledFailed: 2}},
		},
		{
			name: "fail without grace",
			opt:  reconcile.Options{Unmatched: campaign.Fail},
			want: []string{byPolicy, byPolicy, byPolicy, settled4, sent5},
			sum: counts{Events: 1, Matched: 1, Applied: 1, Changed: 4,
				Settled: settled{"delivered": 1, reconcile.SettledFailed: 3}},
		},
		{
			name: "grace longer than every attempt",
			opt:  reconcile.Options{Unmatched: campaign.Fail, Grace: 4 * time.Hour},
			want: []string{doubt, doubt, doubt, settled4, sent5},
			sum:  counts{Events: 1, Matched: 1, Applied: 1, Changed: 1, StillInDoubt: 3, Settled: settled{"delivered": 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := checkpoint(t, rows)
			opt := tt.opt
			opt.Now = func() time.Time { return now }
			sum := applyLog(t, st, ndjson(log...), opt)
			if got := rowsOf(t, st, len(rows)); !slices.Equal(got, tt.want) {
				t.Errorf("rows:\n got %q\nwant %q", got, tt.want)
			}
			if got := countsOf(sum); !reflect.DeepEqual(got, tt.sum) {
				t.Errorf("summary:\n got %+v\nwant %+v", got, tt.sum)
			}
			again := applyLog(t, st, ndjson(log...), opt)
			if again.Changed != 0 || again.StillInDoubt != sum.StillInDoubt {
				t.Errorf("second run: %+v, want nothing changed", countsOf(again))
			}
		})
	}
}

// TestRowsLeftSending: rows a stopped run left sending are settled by
// their statuses like rows in doubt, and the rest get the policy after the
// grace period, so that one reconcile and one run finish the campaign.
func TestRowsLeftSending(t *testing.T) {
	st := checkpoint(t, []seed{sendingRow(at(-7200)), sendingRow(at(-7200)), sendingRow(at(-60)), sentRow("w4", 1)})
	sum := applyLog(t, st, ndjson(status("sent", "w1", 10, 1)), reconcile.Options{
		Unmatched: campaign.Resend, Grace: time.Hour, Now: func() time.Time { return at(0) },
	})
	want := []string{"sent w1 sent@10", `pending "run ended while sending"`, `in_doubt "run ended while sending"`, "sent w4 sent@1"}
	if got := rowsOf(t, st, 4); !slices.Equal(got, want) {
		t.Errorf("rows:\n got %q\nwant %q", got, want)
	}
	wantSum := counts{Events: 1, Matched: 1, Applied: 1, Changed: 2, StillInDoubt: 1, Settled: settled{"sent": 1, reconcile.SettledResent: 1}}
	if got := countsOf(sum); !reflect.DeepEqual(got, wantSum) || sum.Recovered != 2 {
		t.Errorf("summary:\n got %+v, recovered %d\nwant %+v, recovered 2", got, sum.Recovered, wantSum)
	}
}

func TestOptionErrors(t *testing.T) {
	tests := []struct {
		name string
		opt  reconcile.Options
		want string
	}{
		{"no campaign", reconcile.Options{}, "no campaign ID"},
		{"unknown policy", reconcile.Options{CampaignID: testCampaign, Unmatched: "retry"}, `invalid policy "retry"`},
		{"negative grace", reconcile.Options{CampaignID: testCampaign, Grace: -time.Second}, "negative grace"},
	}
	st := checkpoint(t, []seed{pending()})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := reconcile.New(st, tt.opt)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestReversed replays a log forwards and backwards, in batches small
// enough that a row's statuses fall into different transactions, and
// compares every stored field of every row.
func TestReversed(t *testing.T) {
	rows := []seed{
		inDoubt(at(0), 1), inDoubt(at(0), 2), sentRow("w3", 1), sentRow("w4", 1), failedRow(131026, "Message undeliverable"),
		skipped(), pending(), inDoubt(at(0), 1), sentRow("w9", 50),
	}
	log := []webhook.Status{
		status("sent", "w1", 10, 1), status("delivered", "w1", 20, 1), status("read", "w1", 40, 1),
		status("sent", "w1", 10, 1), withError(status("failed", "w1", 12, 1), 131049, ecosystem),
		withError(status("failed", "w2", 12, 2), 131049, ecosystem), status("sent", "w2", 11, 2),
		withError(status("failed", "w2", 13, 2), 131047, "Re-engagement message"),
		status("delivered", "w3", 20, 0), status("read", "w3", 25, 0), status("sent", "w3", 0, 3),
		withError(status("failed", "w4", 12, 4), 131049, ecosystem), status("sent", "w4", 3, 0),
		status("read", "w5", 30, 5), status("sent", "w5", 10, 5),
		status("read", "w6", 30, 6),
		status("sent", "w7", 10, 7), status("deleted", "w7", 11, 7),
		status("sent", "w8b", 10, 8), status("delivered", "w8a", 22, 8), status("sent", "w8a", 9, 8),
		status("delivered", "w9", 20, 9), status("delivered", "w9", 19, 0),
		status("delivered", "wX", 20, 0), withCallback(status("read", "w1", 50, 0), campaign.Ref{Campaign: "autumn", Row: 1}.String()),
	}
	reversed := slices.Clone(log)
	slices.Reverse(reversed)
	var ends [][]string
	for _, l := range [][]webhook.Status{log, reversed} {
		for _, batch := range []int{1, 3, 1000} {
			st := checkpoint(t, rows)
			applyLog(t, st, ndjson(l...), reconcile.Options{Batch: batch, Now: func() time.Time { return at(100) }})
			ends = append(ends, full(t, st, len(rows)))
		}
	}
	for i, e := range ends[1:] {
		if !slices.Equal(e, ends[0]) {
			t.Errorf("end state %d differs:\n%q\n%q", i+1, ends[0], e)
		}
	}
	st := checkpoint(t, rows)
	applyLog(t, st, ndjson(log...), reconcile.Options{Now: func() time.Time { return at(100) }})
	want := []string{
		"read w1 sent@10 delivered@20 read@40",
		`failed w2 #131047 "Re-engagement message" sent@11`,
		"read w3 sent@0 delivered@20 read@25",
		`failed w4 #131049 "` + ecosystem + `" sent@1`,
		"read w5 sent@10 delivered@30 read@30",
		"skipped",
		"sent w7 sent@10",
		"delivered w8a sent@9 delivered@22",
		"delivered w9 sent@50 delivered@19",
	}
	if got := rowsOf(t, st, len(rows)); !slices.Equal(got, want) {
		t.Errorf("rows:\n got %q\nwant %q", got, want)
	}
}

func TestMalformed(t *testing.T) {
	st := checkpoint(t, []seed{inDoubt(at(0), 1), inDoubt(at(0), 1)})
	var log bytes.Buffer
	log.Write(ndjson(status("delivered", "w1", 20, 1)))                                                                // 1
	log.WriteString("not json\n")                                                                                      // 2
	log.WriteString(`{"object":"whatsapp_business_account","entry":[{"changes":[{"value":{"messages":[]}}]}]}` + "\n") // 3: not a status
	log.WriteString(`{"entry":[{"changes":[{"value":{"statuses":[{"status":"read","timestamp":"1"}]}}]}]}` + "\n")     // 4: no id
	log.WriteString("\n")                                                                                              // blank
	log.WriteString(`{"entry":"x"}` + "\n")                                                                            // 6
	log.Write(ndjson(status("read", "w2", 30, 2)))                                                                     // 7
	sum := applyLog(t, st, log.Bytes(), reconcile.Options{})
	got := []int64{sum.Events, sum.Matched, sum.Invalid, sum.NotStatus}
	if want := []int64{2, 2, 3, 1}; !slices.Equal(got, want) {
		t.Errorf("events, matched, invalid, not_status = %v, want %v", got, want)
	}
	if want := []int{2, 4, 6}; !slices.Equal(sum.FirstInvalidLines, want) {
		t.Errorf("first invalid lines = %v, want %v", sum.FirstInvalidLines, want)
	}
	if got, want := rowsOf(t, st, 2), []string{"delivered w1 delivered@20", "read w2 delivered@30 read@30"}; !slices.Equal(got, want) {
		t.Errorf("rows = %q, want %q", got, want)
	}
}

// open is a log as `bulksend reconcile` opens it: gzip is detected.
func open(t *testing.T, b []byte) reconcile.Source {
	t.Helper()
	f, err := logfile.Open("-", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return webhook.Statuses(webhook.NewReader(f))
}

// TestSeveralLogs: logs are read in turn, each summarised under its name,
// and the policy is applied once, after the last.
func TestSeveralLogs(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(ndjson(status("sent", "w1", 10, 1), status("delivered", "w2", 20, 2)))
	zw.Close()

	st := checkpoint(t, []seed{inDoubt(at(0), 1), inDoubt(at(0), 1), inDoubt(at(0), 1), inDoubt(at(0), 1)})
	sum, err := apply(context.Background(), st, reconcile.Options{Unmatched: campaign.Fail, Now: func() time.Time { return at(100) }},
		open(t, gz.Bytes()),
		open(t, append(ndjson(status("read", "w1", 30, 1)), "oops\n"...)),
		open(t, ndjson(status("read", "w3", 40, 3))))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"read w1 sent@10 delivered@30 read@30", "delivered w2 delivered@20", "read w3 delivered@40 read@40", `failed "in doubt: failed by policy"`}
	if got := rowsOf(t, st, 4); !slices.Equal(got, want) {
		t.Errorf("rows:\n got %q\nwant %q", got, want)
	}
	wantLogs := []reconcile.Log{
		{Name: "log1", Events: 2, FirstInvalidLines: []int{}},
		{Name: "log2", Events: 1, Invalid: 1, FirstInvalidLines: []int{2}},
		{Name: "log3", Events: 1, FirstInvalidLines: []int{}},
	}
	if !reflect.DeepEqual(sum.Logs, wantLogs) {
		t.Errorf("logs:\n got %+v\nwant %+v", sum.Logs, wantLogs)
	}
	wantSum := counts{Events: 4, Matched: 4, Applied: 4, Changed: 4, Settled: settled{"read": 2, "delivered": 1, reconcile.SettledFailed: 1}}
	if got := countsOf(sum); !reflect.DeepEqual(got, wantSum) {
		t.Errorf("summary:\n got %+v\nwant %+v", got, wantSum)
	}
	if !slices.Equal(sum.FirstInvalidLines, []int{2}) || sum.Invalid != 1 {
		t.Errorf("invalid %d, first lines %v; want 1, [2]", sum.Invalid, sum.FirstInvalidLines)
	}
}

func TestReadErrors(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(ndjson(status("delivered", "w1", 20, 1)))
	zw.Write(bytes.Repeat([]byte("\n"), 1<<16))
	zw.Write(ndjson(status("delivered", "w2", 20, 2)))
	zw.Close()
	cut := gz.Bytes()[:gz.Len()-30]
	rows := []seed{inDoubt(at(0), 1), inDoubt(at(0), 1), inDoubt(at(0), 1)}
	opt := reconcile.Options{CampaignID: testCampaign, Unmatched: campaign.Fail, Now: func() time.Time { return at(100) }}

	t.Run("truncated gzip", func(t *testing.T) {
		st := checkpoint(t, rows)
		rc, err := reconcile.New(st, opt)
		if err != nil {
			t.Fatal(err)
		}
		err = rc.Read(context.Background(), "cut.gz", open(t, cut))
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("err = %v, want the log's unexpected end", err)
		}
		// What was read is applied; the policy is not (Finish never ran).
		want := []string{"delivered w1 delivered@20", `in_doubt "context deadline exceeded"`, `in_doubt "context deadline exceeded"`}
		if got := rowsOf(t, st, 3); !slices.Equal(got, want) {
			t.Errorf("rows:\n got %q\nwant %q", got, want)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		st := checkpoint(t, rows)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := apply(ctx, st, opt, source(ndjson(status("read", "w1", 30, 1))))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if got := rowsOf(t, st, 1)[0]; !strings.HasPrefix(got, "in_doubt") {
			t.Errorf("row 1 = %q after a cancelled run", got)
		}
	})
	t.Run("cancelled in a flush while the log blocks", func(t *testing.T) {
		st := checkpoint(t, rows)
		pr, pw := io.Pipe()
		defer pw.Close()
		var log []webhook.Status
		for i := range 600 { // more than decode hands over at once
			log = append(log, status("read", fmt.Sprint("w", i%3+1), 30, int64(i%3+1)))
		}
		go pw.Write(ndjson(log...))
		ctx, cancel := context.WithCancel(context.Background())
		o := opt
		o.Batch = 2
		rc, err := reconcile.New(cancelIn{st, cancel}, o)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- rc.Read(ctx, "stdin", webhook.Statuses(webhook.NewReader(pr))) }()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a reconcile cancelled in a flush waited for a log that never ends")
		}
	})
	t.Run("cancelled while the log blocks", func(t *testing.T) {
		// stdin from a pipe that never ends: Ctrl-C must still return.
		st := checkpoint(t, rows)
		pr, pw := io.Pipe()
		defer pw.Close()
		go pw.Write(ndjson(status("read", "w1", 30, 1)))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := apply(ctx, st, opt, webhook.Statuses(webhook.NewReader(pr))); done <- err }()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a cancelled reconcile waited for a log that never ends")
		}
	})
}

// cancelIn is a checkpoint whose lookups cancel the reconcile, as a
// Ctrl-C landing during a flush does.
type cancelIn struct {
	*store.Store
	cancel context.CancelFunc
}

func (c cancelIn) Deliveries(ctx context.Context, rows []int64, wamids []string, out map[int64]reconcile.Delivery) error {
	c.cancel()
	return c.Store.Deliveries(ctx, rows, wamids, out)
}

// TestSummaryJSON pins the JSON names of reconcile.Summary, which scripts read from
// `bulksend reconcile --json`: fields are only ever added.
func TestSummaryJSON(t *testing.T) {
	b, err := json.Marshal(reconcile.Summary{Logs: []reconcile.Log{{}}})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"events", "matched", "applied", "foreign", "invalid", "not_status", "unknown",
		"first_invalid_lines", "kinds", "settled", "corrected", "still_in_doubt", "changed", "recovered_sending", "logs"}
	for _, k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("no %q in %s", k, b)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d fields in %s, want %d", len(got), b, len(want))
	}
	log := got["logs"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "events", "invalid", "not_status", "first_invalid_lines"} {
		if _, ok := log[k]; !ok {
			t.Errorf("no %q in logs[0] of %s", k, b)
		}
	}
}
