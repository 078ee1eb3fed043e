package smsevent

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/reconcile"
)

func ptr(f float64) *float64 { return &f }

// TestStatus is the package comment's mapping, event type by event type.
func TestStatus(t *testing.T) {
	base := Event{
		MessageID: "0e5b2c7a-3f41-4d2e-9a0b-5c1d2e3f4a01", Timestamp: ms(2950), Origination: "+12065550152",
		Bulksend: "spring-2026:7", StatusDescription: "Carrier unreachable",
	}
	for _, tc := range []struct {
		typ    string
		final  bool
		status campaign.Status
		reason string // for failed
	}{
		{"TEXT_DELIVERED", true, campaign.Delivered, ""},
		{"TEXT_SUCCESSFUL", true, campaign.Delivered, ""},
		{"TEXT_DELIVERED", false, campaign.Delivered, ""},
		{"TEXT_QUEUED", false, campaign.Sent, ""},
		{"TEXT_PENDING", false, campaign.Sent, ""},
		{"TEXT_SENT", false, campaign.Sent, ""},
		{"TEXT_BLOCKED", true, campaign.Failed, "blocked"},
		{"TEXT_CARRIER_BLOCKED", true, campaign.Failed, "carrier_blocked"},
		{"TEXT_SPAM", true, campaign.Failed, "spam"},
		{"TEXT_PROTECT_BLOCKED", true, campaign.Failed, "protect_blocked"},
		{"TEXT_TTL_EXPIRED", true, campaign.Failed, "ttl_expired"},
		{"TEXT_CARRIER_UNREACHABLE", true, campaign.Failed, "carrier_unreachable"},
		{"TEXT_CARRIER_UNREACHABLE", false, campaign.Failed, "carrier_unreachable"},
		{"TEXT_UNREACHABLE", true, campaign.Failed, "unreachable"},
		{"TEXT_INVALID", true, campaign.Failed, "invalid"},
		{"TEXT_INVALID_MESSAGE", true, campaign.Failed, "invalid_message"},
		{"TEXT_UNKNOWN", true, campaign.Failed, "unknown"},
		{"TEXT_UNKNOWN", false, campaign.Sent, ""},
		{"TEXT_SOMETHING_NEW", true, campaign.Sent, ""},
	} {
		name := tc.typ
		if tc.final {
			name += "/final"
		}
		t.Run(name, func(t *testing.T) {
			ev := base
			ev.Type, ev.IsFinal = tc.typ, tc.final
			want := reconcile.Status{
				MessageID: ev.MessageID, Status: string(tc.status), Timestamp: ev.Timestamp,
				Ref: campaign.Ref{Campaign: "spring-2026", Row: 7}, Sender: "+12065550152",
			}
			if tc.status == campaign.Failed {
				want.ErrorTitle, want.ErrorReason = tc.typ+": Carrier unreachable", tc.reason
			}
			if got := ev.status(); !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestStatusDetails: what a status carries besides its status.
func TestStatusDetails(t *testing.T) {
	base := Event{Type: "TEXT_DELIVERED", MessageID: "m1", Timestamp: ms(1)}
	for _, tc := range []struct {
		name string
		mod  func(*Event)
		want func(*reconcile.Status)
	}{
		{"bare", nil, nil},
		{"no description: the type alone", func(e *Event) { e.Type = "TEXT_SPAM" },
			func(s *reconcile.Status) { s.Status, s.ErrorTitle, s.ErrorReason = "failed", "TEXT_SPAM", "spam" }},
		{"no context: no callback data", func(e *Event) { e.Origination = "+12065550152" },
			func(s *reconcile.Status) { s.Sender = "+12065550152" }},
		{"price and fee add up", func(e *Event) { e.Parts, e.Price, e.CarrierFee, e.HasPrice = 1, 0.00581, 0.00266, true },
			func(s *reconcile.Status) { s.Price = campaign.Pricing{Parts: 1, Charge: ptr(0.00847)} }},
		{"a fee alone", func(e *Event) { e.CarrierFee, e.HasPrice = 0.00266, true },
			func(s *reconcile.Status) { s.Price = campaign.Pricing{Charge: ptr(0.00266)} }},
		{"charged nothing", func(e *Event) { e.Parts, e.HasPrice = 2, true },
			func(s *reconcile.Status) { s.Price = campaign.Pricing{Parts: 2, Charge: ptr(0)} }},
		{"parts without a price", func(e *Event) { e.Parts = 3 },
			func(s *reconcile.Status) { s.Price = campaign.Pricing{Parts: 3} }},
		{"the largest prices", func(e *Event) { e.Price, e.CarrierFee, e.HasPrice = 999999.999999999, 999999.999999999, true },
			func(s *reconcile.Status) { s.Price = campaign.Pricing{Charge: ptr(1999999.999999998)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := base
			if tc.mod != nil {
				tc.mod(&ev)
			}
			want := reconcile.Status{MessageID: "m1", Status: "delivered", Timestamp: ms(1)}
			if tc.want != nil {
				tc.want(&want)
			}
			if got := ev.status(); !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestRef: the context bulksend sends, {"bulksend": "<campaign>:<row>"},
// comes back as the same campaign and row, which is how reconcile matches
// a row.
func TestRef(t *testing.T) {
	for _, tc := range []struct {
		id  string
		row int64
	}{
		{"spring-2026", 1}, {"01J9ZK3X8W2Q", 2_000_000}, {"café \"☕\"", 42},
	} {
		want := campaign.Ref{Campaign: tc.id, Row: tc.row}
		sent := want.Key() // the Context value
		rec := minimal(`"context":{"bulksend":` + quote(sent) + `}`)
		st, err := Statuses(NewReader(strings.NewReader(rec))).Next()
		if err != nil {
			t.Fatal(err)
		}
		if st.Ref != want {
			t.Errorf("%q, %d: context %q reads as %+v", tc.id, tc.row, sent, st.Ref)
		}
	}
	// Without bulksend's context a status is matched by its message ID.
	for _, ctx := range []string{"", `,"context":{}`, `,"context":{"bulksend":""}`, `,"context":{"account":"bar"}`} {
		rec := strings.TrimSuffix(minimal(), "}") + ctx + "}"
		st, err := Statuses(NewReader(strings.NewReader(rec))).Next()
		if err != nil || !st.Ref.IsZero() {
			t.Errorf("%s: ref %+v, %v", rec, st.Ref, err)
		}
	}
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String() + `"`
}

// TestStatuses reads a fixture as reconcile does: every status has a
// message ID and a status reconcile knows, failures a reason, and the
// source's counts are the reader's.
func TestStatuses(t *testing.T) {
	r := NewReader(strings.NewReader(mustRead(t, "testdata/firehose.jsonl")))
	src := Statuses(r)
	var got []string
	for {
		st, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if st.MessageID == "" || !known(st.Status) {
			t.Errorf("status %+v", st)
		}
		got = append(got, st.Status+" "+st.ErrorReason+" "+st.Ref.String())
	}
	want := []string{
		"sent  bulksend:spring-2026:1", "delivered  bulksend:spring-2026:1",
		"sent  bulksend:spring-2026:2", "failed carrier_unreachable bulksend:spring-2026:2",
		"delivered  bulksend:spring-2026:3", "failed unknown bulksend:spring-2026:4",
		"delivered  ", "failed ttl_expired bulksend:spring-2026:5",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("statuses\n got %q\nwant %q", got, want)
	}
	if c, w := src.Counts(), (reconcile.SourceCounts{Statuses: 8, Invalid: 1, NotStatus: 1, FirstInvalid: []int{5}}); !reflect.DeepEqual(c, w) {
		t.Errorf("counts %+v, want %+v", c, w)
	}
}

// known reports whether reconcile applies status values s (others it
// counts Unknown).
func known(s string) bool {
	switch campaign.Status(s) {
	case campaign.Sent, campaign.Delivered, campaign.Failed:
		return true
	}
	return false
}
