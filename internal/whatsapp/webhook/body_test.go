package webhook

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/whatsapp/internal/oas"
)

func TestBody(t *testing.T) {
	ts := time.Date(2026, 9, 1, 9, 30, 0, 0, time.UTC)
	tests := []struct {
		name     string
		statuses []Status
	}{
		{"sent", []Status{{WAMID: "wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA", Status: "sent", Timestamp: ts,
			RecipientID: "16505551234", CallbackData: "bulksend:c1:17"}}},
		{"delivered", []Status{{WAMID: "wamid.1", Status: "delivered", Timestamp: ts, RecipientID: "16505551234"}}},
		{"read", []Status{{WAMID: "wamid.1", Status: "read", Timestamp: ts, RecipientID: "16505551234"}}},
		{"failed", []Status{{WAMID: "wamid.2", Status: "failed", Timestamp: ts, RecipientID: "16505551234",
			ErrorCode: 131049, ErrorTitle: "This message was not delivered to maintain healthy ecosystem engagement."}}},
		{"several", []Status{
			{WAMID: "wamid.1", Status: "sent", Timestamp: ts, RecipientID: "1"},
			{WAMID: "wamid.2", Status: "read", Timestamp: ts.Add(time.Hour), RecipientID: "2"},
		}},
		{"strings that need escaping", []Status{{WAMID: "wamid.\"<&>\\", Status: "read", Timestamp: ts, RecipientID: "1",
			CallbackData: "café \u2028 \x01 😀"}}},
		{"no statuses", nil},
		{"Marketing Messages API pricing", []Status{{WAMID: "wamid.3", Status: "delivered", Timestamp: ts, RecipientID: "1",
			Pricing: Pricing{Category: "marketing_lite", Billable: true, HasBillable: true}}}},
		{"free service message, billable not said", []Status{{WAMID: "wamid.4", Status: "sent", Timestamp: ts, RecipientID: "1",
			Pricing: Pricing{Category: "service", Type: "free_customer_service"}}}},
		{"pricing on read", []Status{{WAMID: "wamid.5", Status: "read", Timestamp: ts, RecipientID: "1",
			Pricing: Pricing{Category: "utility", Type: "regular", HasBillable: true}}}},
	}
	spec, err := oas.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Body(pnid, tt.statuses...)
			if bytes.ContainsAny(b, "\r\n") {
				t.Errorf("Body is not one line: %s", b)
			}
			if err := spec.Validate("WebhookPayload", b); err != nil {
				t.Errorf("Body does not match Meta's WebhookPayload schema: %v\n%s", err, b)
			}
			got, c, err := readAll(NewReader(bytes.NewReader(b)))
			if err != nil {
				t.Fatal(err)
			}
			var want []Status
			for _, s := range tt.statuses {
				s.PhoneNumberID, s.Line = pnid, 1
				if s.Pricing == (Pricing{}) && (s.Status == "sent" || s.Status == "delivered") {
					s.Pricing = marketing // what Body adds
				}
				want = append(want, s)
			}
			if !slices.Equal(got, want) {
				t.Errorf("read back\n %v\nwant %v", got, want)
			}
			if len(want) == 0 && c.NotStatus != 1 {
				t.Errorf("counts %+v, want one body without statuses", c)
			}
		})
	}
}

// TestBodyZeroTimestamp checks that an unset Timestamp still makes a valid
// body, at the unix epoch.
func TestBodyZeroTimestamp(t *testing.T) {
	got, _, err := readAll(NewReader(bytes.NewReader(Body(pnid, Status{WAMID: "w", Status: "sent"}))))
	if err != nil || len(got) != 1 || !got[0].Timestamp.Equal(time.Unix(0, 0)) {
		t.Errorf("read %v, %v; want one status at the unix epoch", got, err)
	}
}
