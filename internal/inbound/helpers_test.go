package inbound

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/ledger"
	"github.com/bulksend/bulksend/internal/store"
	wachannel "github.com/bulksend/bulksend/internal/whatsapp/channel"
	"github.com/bulksend/bulksend/internal/whatsapp/webhook"
)

const sender = "1000001" // the campaigns' phone-number ID

// whatsapp is WhatsApp's side of the seam, as the command line's
// registry gives it.
var whatsapp = Channel{Owns: wachannel.OwnsBody, Statuses: wachannel.Statuses, ReadLog: wachannel.ReadLog, EachSender: true}

// phone is row's recipient.
func phone(row int64) string { return fmt.Sprintf("+4479110000%02d", row) }

// wamid is the message ID row was sent as.
func wamid(row int64) string { return fmt.Sprintf("wamid.%d", row) }

// sentCheckpoint makes the checkpoint of campaign id, its rows all sent,
// and returns its path.
func sentCheckpoint(t *testing.T, id string, rows int64) string {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), id+".bulksend.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var n int64
	if _, err := st.Import(ctx, func() (store.Row, error) {
		if n == rows {
			return store.Row{}, io.EOF
		}
		n++
		return store.Row{Row: n, Line: int(n) + 1, Phone: phone(n), Sender: sender}, nil
	}, func() store.Settings {
		return store.Settings{CampaignID: id, Senders: []string{sender}, MaxAttempts: 3}
	}); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute)
	jobs, err := st.Claim(ctx, sender, at, int(rows))
	if err != nil || int64(len(jobs)) != rows {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	for _, j := range jobs {
		if err := st.Record(ctx, []engine.Result{{Row: j.Row, Outcome: engine.OutcomeSent, MessageID: wamid(j.Row), At: at}}); err != nil {
			t.Fatal(err)
		}
	}
	return st.Path()
}

// delivered is the webhook body of row's delivered status, tagged as
// campaign id's.
func delivered(id string, row int64) []byte {
	return webhook.Body(sender, webhook.Status{WAMID: wamid(row), Status: "delivered", Timestamp: time.Now(),
		RecipientID: phone(row)[1:], CallbackData: campaign.Ref{Campaign: id, Row: row}.String()})
}

// reply is the webhook body of row's recipient answering text.
func reply(row int64, text string) []byte {
	return fmt.Appendf(nil, `{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"metadata":{"phone_number_id":%q},`+
		`"messages":[{"from":%q,"id":"in.%d","timestamp":"%d","type":"text","text":{"body":%q},"context":{"id":%q}}]}}]}]}`,
		sender, phone(row)[1:], row, time.Now().Unix(), text, wamid(row))
}

// rows are the checkpoint's rows, by row number.
func rows(t *testing.T, db string) map[int64]store.ExportRow {
	t.Helper()
	st, err := store.OpenRead(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[int64]store.ExportRow{}
	if err := st.Export(context.Background(), func(r store.ExportRow) error { out[r.Row] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// openLedger is an operator ledger of the test's own.
func openLedger(t *testing.T) *ledger.Ledger {
	t.Helper()
	led, err := ledger.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	return led
}

// optedOut are the phones the ledger has opted out.
func optedOut(t *testing.T, led *ledger.Ledger) []string {
	t.Helper()
	var phones []string
	if err := led.EachOptOut(context.Background(), func(o ledger.OptOut) error { phones = append(phones, o.Phone); return nil }); err != nil {
		t.Fatal(err)
	}
	return phones
}
