package whatsapp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
)

func TestCheckSender(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"106540352242922", true},
		{"1", true},
		{"", false},
		{"999/subscribed_apps#", false},
		{"1/../../v1.0/me/feed?", false},
		{"..", false},
		{"106540352242922\x00", false},
		{"106540352242922\r\nX: y", false},
		{"+447700900123", false},
		{"１２３", false}, // full-width digits
		{"123456789012345678901234567890123", false},
	} {
		err := CheckSender(tc.id)
		if (err == nil) != tc.ok {
			t.Errorf("CheckSender(%q) = %v, want ok %v", tc.id, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrSender) {
			t.Errorf("CheckSender(%q) = %v, want it to wrap ErrSender", tc.id, err)
		}
	}
}

// A sender that is not a phone-number ID (a checkpoint of an older
// release may hold one) never reaches the network: the row fails, the
// token goes nowhere.
func TestSendRefusesSenderOutsideThePath(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Write([]byte(`{"messages":[{"id":"wamid.X"}]}`))
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, Version: DefaultVersion, Token: "secret"}
	for _, from := range []string{"999/subscribed_apps#", "1/../../v1.0/me/feed?", "1\x7f", "1?x=1", ".."} {
		_, err := c.Send(context.Background(), campaign.Message{To: "+447700900123", From: from})
		var se *campaign.SendError
		if !errors.As(err, &se) || se.Class != campaign.Permanent || !errors.Is(err, ErrSender) {
			t.Errorf("Send from %q: %v, want a permanent send error wrapping ErrSender", from, err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests reached the server", n)
	}
}

// FuzzCheckSender: what passes is plain digits, and stays one path segment.
func FuzzCheckSender(f *testing.F) {
	for _, s := range []string{"106540352242922", "1/2", "..", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if CheckSender(id) != nil {
			return
		}
		for i := 0; i < len(id); i++ {
			if id[i] < '0' || id[i] > '9' {
				t.Fatalf("CheckSender passed %q", id)
			}
		}
	})
}
