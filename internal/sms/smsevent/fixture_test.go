package smsevent

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/logfile"
)

// t0 is the fixtures' campaign start, 2026-11-30T10:00:00Z.
var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func ms(n int64) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// fixtureEvents are the SMS events every fixture in testdata holds: five
// messages of campaign spring-2026 (delivered; carrier unreachable;
// delivered, in two Unicode parts with its numbers as strings; unknown
// after 72 hours; TTL expired), and one message from another sender.
// Each fixture also holds a voice event, after the fifth.
func fixtureEvents() []Event {
	base := Event{
		Version: "1.0", Origination: "+12065550152", CountryCode: "US", MCC: "310", MNC: "410",
		Encoding: "GSM", MessageType: "PROMOTIONAL", Parts: 1, Price: 0.00581, CarrierFee: 0.00266, HasPrice: true,
	}
	ev := func(typ string, at int64, final bool, dest, id string, req int64, status, desc, bulksend string) Event {
		e := base
		e.Type, e.Timestamp, e.IsFinal, e.Destination, e.MessageID = typ, ms(at), final, dest, id
		e.RequestTimestamp, e.Status, e.StatusDescription, e.Bulksend = ms(req), status, desc, bulksend
		return e
	}
	const id = "0e5b2c7a-3f41-4d2e-9a0b-5c1d2e3f4a0"
	evs := []Event{
		ev("TEXT_QUEUED", 310, false, "+14255550101", id+"1", 0, "QUEUED", "Message is queued for delivery", "spring-2026:1"),
		ev("TEXT_DELIVERED", 2950, true, "+14255550101", id+"1", 0, "DELIVERED", "Message has been accepted by phone", "spring-2026:1"),
		ev("TEXT_PENDING", 1420, false, "+14255550102", id+"2", 1000, "PENDING", "Message is being delivered", "spring-2026:2"),
		ev("TEXT_CARRIER_UNREACHABLE", 9870, true, "+14255550102", id+"2", 1000, "CARRIER_UNREACHABLE", "Carrier unreachable", "spring-2026:2"),
		ev("TEXT_SUCCESSFUL", 4120, true, "+14255550103", id+"3", 2000, "SUCCESSFUL", "Message has been accepted by phone carrier", "spring-2026:3"),
		ev("TEXT_UNKNOWN", 259203000, true, "+14255550104", id+"4", 3000, "UNKNOWN", "Unknown error", "spring-2026:4"),
		ev("TEXT_DELIVERED", 6010, true, "+14255550150", id+"5", 4000, "DELIVERED", "Message has been accepted by phone", ""),
		ev("TEXT_TTL_EXPIRED", 14405000, true, "+14255550105", id+"6", 5000, "TTL_EXPIRED", "Message TTL expired", "spring-2026:5"),
	}
	evs[4].Encoding, evs[4].Parts, evs[4].Price, evs[4].CarrierFee = "Unicode", 2, 0.01162, 0.00532
	evs[7].Price, evs[7].CarrierFee = 0, 0
	return evs
}

// TestFixtures reads each example log in testdata, through logfile.Open as
// `bulksend reconcile` opens it: the same events, at the lines they start
// on, with the voice event, an SNS subscription confirmation and a line
// cut short counted where they are.
func TestFixtures(t *testing.T) {
	for _, tc := range []struct {
		file   string
		lines  []int // of the eight events
		counts Counts
	}{
		{
			// Line 5 is a copy of line 4 cut short, as a Firehose
			// delivery that failed half-way and was retried.
			file:   "firehose.jsonl",
			lines:  []int{1, 2, 3, 4, 6, 8, 9, 10},
			counts: Counts{Records: 10, Events: 8, NotEvent: 1, Invalid: 1, FirstInvalid: []int{5}},
		},
		{
			file:   "firehose.jsonl.gz",
			lines:  []int{1, 2, 3, 4, 6, 8, 9, 10},
			counts: Counts{Records: 10, Events: 8, NotEvent: 1, Invalid: 1, FirstInvalid: []int{5}},
		},
		{
			file:   "firehose-concatenated.json", // one line, no separators
			lines:  []int{1, 1, 1, 1, 1, 1, 1, 1},
			counts: Counts{Records: 9, Events: 8, NotEvent: 1},
		},
		{
			file:   "cloudwatch-export.log",
			lines:  []int{1, 2, 3, 4, 5, 7, 8, 9},
			counts: Counts{Records: 9, Events: 8, NotEvent: 1},
		},
		{
			file:   "cloudwatch-tail.log", // aws logs tail: with the log stream
			lines:  []int{1, 2, 3, 4, 5, 7, 8, 9},
			counts: Counts{Records: 9, Events: 8, NotEvent: 1},
		},
		{
			file:   "sns.jsonl", // a subscription confirmation first
			lines:  []int{2, 3, 4, 5, 6, 8, 9, 10},
			counts: Counts{Records: 10, Events: 8, NotEvent: 2},
		},
		{
			// EventBridge's "Text Message Delivery Status Updated", the
			// event in detail, as a rule's SQS or Firehose target keeps
			// it; a registration's change fourth, the voice event's own
			// detail-type.
			file:   "eventbridge.jsonl",
			lines:  []int{1, 2, 3, 5, 6, 8, 9, 10},
			counts: Counts{Records: 10, Events: 8, NotEvent: 2},
		},
		{
			file:   "eventbridge-sns.jsonl", // EventBridge to an SNS topic, as an SQS queue or HTTPS subscriber gets it
			lines:  []int{1, 2, 3, 4, 5, 7, 8, 9},
			counts: Counts{Records: 9, Events: 8, NotEvent: 1},
		},
		{
			file:   "array.json", // pretty-printed
			lines:  []int{2, 26, 50, 74, 98, 140, 164, 188},
			counts: Counts{Records: 9, Events: 8, NotEvent: 1},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			want := fixtureEvents()
			for i := range want {
				want[i].Line = tc.lines[i]
			}
			got, c := readFile(t, tc.file)
			if !slices.Equal(got, want) {
				t.Errorf("events:\n got %+v\nwant %+v", got, want)
			}
			if !equalCounts(c, tc.counts) {
				t.Errorf("counts %+v, want %+v", c, tc.counts)
			}
		})
	}
}

// TestFixtureInbound reads a two-way number's inbound messages, one
// through SNS and one raw (an SQS queue subscribed with raw delivery):
// no delivery events, counted as inbound.
func TestFixtureInbound(t *testing.T) {
	got, c := readFile(t, "inbound-sns.jsonl")
	if len(got) != 0 {
		t.Errorf("events %+v, want none", got)
	}
	if w := (Counts{Records: 2, NotEvent: 2, Inbound: 2}); !equalCounts(c, w) || c.Inbound != w.Inbound {
		t.Errorf("counts %+v, want %+v", c, w)
	}
}

// TestFixtureOversized reads a log with a record of 1.1 MB between two
// events: it is counted invalid at its line, and the next event is read.
func TestFixtureOversized(t *testing.T) {
	evs := fixtureEvents()
	want := []Event{evs[0], evs[2]}
	want[0].Line, want[1].Line = 1, 3
	got, c := readFile(t, "oversized.jsonl.gz")
	if !slices.Equal(got, want) {
		t.Errorf("events:\n got %+v\nwant %+v", got, want)
	}
	if w := (Counts{Records: 3, Events: 2, Invalid: 1, FirstInvalid: []int{2}}); !equalCounts(c, w) {
		t.Errorf("counts %+v, want %+v", c, w)
	}
}

func readFile(t *testing.T, name string) ([]Event, Counts) {
	t.Helper()
	rc, err := logfile.Open(filepath.Join("testdata", name), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, c, err := readAll(NewReader(rc))
	if err != nil {
		t.Fatal(err)
	}
	return got, c
}

// readAll reads r to its end; err is the error that ended it, nil for
// io.EOF.
func readAll(r *Reader) ([]Event, Counts, error) {
	var out []Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, r.Counts(), nil
		}
		if err != nil {
			return out, r.Counts(), err
		}
		out = append(out, ev)
	}
}

func equalCounts(a, b Counts) bool {
	return a.Records == b.Records && a.Events == b.Events && a.NotEvent == b.NotEvent &&
		a.Invalid == b.Invalid && slices.Equal(a.FirstInvalid, b.FirstInvalid)
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
