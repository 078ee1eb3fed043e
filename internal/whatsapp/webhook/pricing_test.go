package webhook

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/reconcile"
)

// TestPricing reads statuses[].pricing in the shapes Meta sends and in
// shapes it does not: a pricing that is not Meta's is dropped, never the
// status with it.
func TestPricing(t *testing.T) {
	tests := []struct {
		name    string
		members []string // of the status, besides id, status, timestamp and recipient_id
		want    Pricing
	}{
		{"Cloud API marketing", []string{`"pricing":{"billable":true,"pricing_model":"PMP","type":"regular","category":"marketing"}`}, marketing},
		{"Marketing Messages API", []string{`"conversation":{"id":"c","origin":{"type":"marketing_lite"}}`, `"pricing":{"billable":true,"pricing_model":"PMP","category":"marketing_lite"}`},
			Pricing{Category: "marketing_lite", Billable: true, HasBillable: true}},
		{"free customer service", []string{`"pricing":{"billable":false,"pricing_model":"PMP","type":"free_customer_service","category":"utility"}`},
			Pricing{Category: "utility", Type: "free_customer_service", HasBillable: true}},
		{"billable no longer sent", []string{`"pricing":{"pricing_model":"PMP","type":"regular","category":"authentication-international"}`},
			Pricing{Category: "authentication-international", Type: "regular"}},
		{"billable null", []string{`"pricing":{"billable":null,"type":"regular","category":"marketing"}`}, Pricing{Category: "marketing", Type: "regular"}},
		{"escaped strings", []string{`"pricing":{"category":"marketing\u005flite","type":"regul\u0061r","billable":true}`},
			Pricing{Category: "marketing_lite", Type: "regular", Billable: true, HasBillable: true}},
		{"unknown members of any shape", []string{`"pricing":{"x":[{"category":5}],"category":"service","pricing_model":null,"type":"free_entry_point","billable":false}`},
			Pricing{Category: "service", Type: "free_entry_point", HasBillable: true}},
		{"no pricing", nil, Pricing{}},
		{"pricing null", []string{`"pricing":null`}, Pricing{}},
		{"empty pricing", []string{`"pricing":{}`}, Pricing{}},
		{"pricing not an object", []string{`"pricing":"marketing"`}, Pricing{}},
		{"pricing an array", []string{`"pricing":[{"category":"marketing"}]`}, Pricing{}},
		{"category not a string", []string{`"pricing":{"billable":true,"type":"regular","category":7}`}, Pricing{}},
		{"type not a string", []string{`"pricing":{"billable":true,"type":{},"category":"marketing"}`}, Pricing{}},
		{"billable a string", []string{`"pricing":{"billable":"true","type":"regular","category":"marketing"}`}, Pricing{}},
		{"billable a number", []string{`"pricing":{"billable":1,"type":"regular","category":"marketing"}`}, Pricing{}},
		{"the last of repeated keys", []string{`"pricing":{"category":"utility","billable":"x","category":"marketing","type":"regular","billable":true}`}, marketing},
		{"a repeated key made bad", []string{`"pricing":{"category":"marketing","type":"regular","billable":true,"billable":"x"}`}, Pricing{}},
		{"the last pricing", []string{`"pricing":{"category":"utility"}`, `"pricing":{"billable":true,"type":"regular","category":"marketing"}`}, marketing},
		{"a last pricing of null", []string{`"pricing":{"billable":true,"type":"regular","category":"marketing"}`, `"pricing":null`}, Pricing{}},
		{"with errors", []string{`"errors":[{"code":131049,"title":"t"}]`, `"pricing":{"billable":false,"category":"marketing"}`},
			Pricing{Category: "marketing", HasBillable: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := hook(st("w1", "delivered", tt.members...))
			got, c, err := readAll(NewReader(bytes.NewReader([]byte(rec + "\n"))))
			if err != nil || c.Invalid != 0 || len(got) != 1 {
				t.Fatalf("read %v, %+v, %v; want one status", got, c, err)
			}
			if got[0].Pricing != tt.want {
				t.Errorf("pricing %+v, want %+v", got[0].Pricing, tt.want)
			}
			if k, ref := refParse([]byte(rec), 1); k != kindStatus || ref[0].Pricing != tt.want {
				t.Errorf("the reference reads %+v", ref)
			}
		})
	}
	// A pricing that is not JSON is a syntax error: the record is invalid.
	_, c, err := readAll(NewReader(bytes.NewReader([]byte(hook(st("w1", "sent", `"pricing":{"category":"marketing",}`)) + "\n"))))
	if err != nil || c.Invalid != 1 || c.Statuses != 0 {
		t.Errorf("counts %+v, %v; want one invalid record", c, err)
	}
}

// TestStatusesForReconcile: what reconcile reads of a status. A failed
// status of code 131049 has the marketing-cap reason; billable is nil when
// the pricing does not say.
func TestStatusesForReconcile(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name   string
		status Status
		price  campaign.Pricing
		reason string
	}{
		{"billable marketing", Status{Status: "sent", Pricing: marketing}, campaign.Pricing{Category: "marketing", Type: "regular", Billable: &yes}, ""},
		{"not billable", Status{Status: "delivered", Pricing: Pricing{Category: "utility", Type: "free_customer_service", HasBillable: true}},
			campaign.Pricing{Category: "utility", Type: "free_customer_service", Billable: &no}, ""},
		{"billable not said", Status{Status: "read", Pricing: Pricing{Category: "marketing_lite"}}, campaign.Pricing{Category: "marketing_lite"}, ""},
		{"no pricing", Status{Status: "read"}, campaign.Pricing{}, ""},
		{"marketing cap", Status{Status: "failed", ErrorCode: 131049, ErrorTitle: "This message was not delivered to maintain healthy ecosystem engagement."},
			campaign.Pricing{}, campaign.FailMarketingCap},
		{"another failure", Status{Status: "failed", ErrorCode: 131026}, campaign.Pricing{}, ""},
		{"131049 on a status that is not failed", Status{Status: "warning", ErrorCode: 131049}, campaign.Pricing{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.status
			in.WAMID, in.Timestamp, in.RecipientID, in.CallbackData = "wamid.1", t0, "16505551234", "bulksend:c:1"
			log := Body(pnid, in)
			src := Statuses(NewReader(bytes.NewReader(log)))
			got, err := src.Next()
			if err != nil {
				t.Fatal(err)
			}
			want := reconcile.Status{MessageID: "wamid.1", Status: in.Status, Timestamp: t0, Ref: campaign.Ref{Campaign: "c", Row: 1}, Sender: pnid,
				ErrorCode: in.ErrorCode, ErrorTitle: in.ErrorTitle, ErrorReason: tt.reason, Price: tt.price}
			if in.Pricing == (Pricing{}) && (in.Status == "sent" || in.Status == "delivered") {
				t.Fatal("the test needs a pricing for a sent or delivered status: Body adds one")
			}
			if !equalStatus(got, want) {
				t.Errorf("got  %+v %s\nwant %+v %s", got, billable(got.Price), want, billable(want.Price))
			}
			if _, err := src.Next(); err != io.EOF {
				t.Errorf("after the status: %v", err)
			}
		})
	}
}

// TestFixturesForReconcile reads Meta's examples as reconcile does.
func TestFixturesForReconcile(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "..", "testdata", "webhook", "meta-examples.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src := Statuses(NewReader(f))
	var got []string
	for {
		s, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, s.Status+" "+s.ErrorReason+" "+s.Price.Category+" "+s.Price.Type+" "+billable(s.Price))
	}
	want := []string{
		"sent  marketing regular true",
		"delivered  marketing regular true",
		"read    nil",
		"failed marketing_cap   nil",
		"delivered  marketing regular true",
		"read    nil",
		"sent  group_marketing regular true",
		"played    nil",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n %q\nwant\n %q", got, want)
	}
}

func billable(p campaign.Pricing) string {
	if p.Billable == nil {
		return "nil"
	}
	if *p.Billable {
		return "true"
	}
	return "false"
}

// equalStatus compares statuses with their billable flags by value.
func equalStatus(a, b reconcile.Status) bool {
	if billable(a.Price) != billable(b.Price) {
		return false
	}
	a.Price.Billable, b.Price.Billable = nil, nil
	return a == b
}
