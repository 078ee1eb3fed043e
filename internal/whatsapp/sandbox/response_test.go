package sandbox

import (
	"encoding/json"
	"fmt"
	"testing"
)

// appendSendResponse writes what json.Marshal writes for the sendResponse.
func TestAppendSendResponse(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	for _, tc := range []struct {
		to      string
		status  string
		success bool
	}{
		{"16505551234", statusAccepted, false},
		{"+5511987654321", statusHeld, false},
		{"+447400123456", statusAccepted, true},
	} {
		waID := tc.to
		if waID[0] == '+' {
			waID = waID[1:]
		}
		wamid := s.wamid(waID)
		want, err := json.Marshal(sendResponse{
			MessagingProduct: "whatsapp",
			Contacts:         []contactResp{{Input: tc.to, WaID: waID}},
			Messages:         []messageResp{{ID: wamid, MessageStatus: tc.status}},
			Success:          tc.success,
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendSendResponse(nil, tc.to, waID, wamid, tc.status, tc.success); string(got) != string(want) {
			t.Errorf("appendSendResponse = %s\njson.Marshal      = %s", got, want)
		}
	}
}

// appendHex writes what fmt's %06X%012X wrote for a wamid's nonce and
// counter.
func TestAppendHex(t *testing.T) {
	for _, v := range []struct{ nonce, seq uint64 }{{0, 0}, {0xabcdef, 1}, {0x1, 0xffffffffffff}, {0x123456, 0x9876543210ab}} {
		got := string(appendHex(appendHex(nil, v.nonce, 6), v.seq, 12))
		if want := fmt.Sprintf("%06X%012X", v.nonce, v.seq); got != want {
			t.Errorf("appendHex = %s, want %s", got, want)
		}
	}
}

// FuzzAcceptedRecord: an Accepted record is written as json.Marshal writes
// it, whatever its strings.
func FuzzAcceptedRecord(f *testing.F) {
	f.Add("camp:1", "spring_sale", "en_US", "marketing", 1, false, false, false)
	f.Add("", "t", "pt_BR", "", 3, true, true, true)
	f.Add(`a"b\c<d>&e`, "naïve", "\x00\x7f\u2028", "utility", 2, false, true, false)
	f.Add("\xff", "x", "en", "marketing_lite", 0, true, false, true)
	f.Fuzz(func(t *testing.T, cbd, name, lang, pricing string, attempt int, late, held, mm bool) {
		r := acceptedRecord{
			WAMID: "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBIwMDAwMDAwMDAwMDAwMDAwMDEA", PhoneNumberID: "106540352242922",
			To: "+16505551234", BizOpaqueCallbackData: cbd, Template: name, Language: lang,
			Time: "2026-04-01T10:00:00.123456789Z", Attempt: attempt, Late: late, Final: "delivered",
			Held: held, Pricing: pricing,
		}
		if mm {
			r.API = marketingAPI.record()
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.marshal(); string(got) != string(want) {
			t.Errorf("marshal      = %s\njson.Marshal = %s", got, want)
		}
	})
}
