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
