package report

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/store"
)

// asFlag names a setting the way the command line does.
func asFlag(name string) string { return "--" + name }

// TestWriteText: the status view of the fixture shows each of its figures
// once, in the view's order, with the channel's sections where they go and
// the settings named by StatusText.Setting.
func TestWriteText(t *testing.T) {
	ctx := context.Background()
	st, _ := fixture(t)
	settings, err := st.Settings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewStatus(ctx, st, settings, false, at(40*s))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	s.WriteText(ctx, &b, st, settings, StatusText{Channel: "\nCHANNEL SECTIONS\n", Setting: asFlag})
	want := []string{
		"campaign spring · template spring_sale/en_US (marketing)\n",
		"\nstate            rows\npending             0\nsending             0\nin_doubt            1\nsent                1\ndelivered           1\nread                1\nfailed              2\nskipped             2\ntotal               8\n",
		"\nskipped by reason:\n  duplicate         1  e.g. line 9: duplicate of row 1 (+447400000008)\n  invalid           1  e.g. line 8: invalid phone number: too short (+447400000007)\n",
		"\nfailed by reason:\n  " + campaign.FailMarketingCap,
		"WhatsApp's per-user marketing cap",
		"\npricing (as status webhooks reported it), rows by category; 2 billable",
		"\nCHANNEL SECTIONS\n",
		"\nerrors (last error of each row):\n",
		"\nper sender:\n  A                    5 rows = 0 sent + 1 delivered + 1 read + 1 failed + 2 skipped + 0 pending + 0 sending + 0 in doubt\n",
		"\nrows in doubt: 1 (settle them with 'bulksend reconcile')\n",
	}
	got, from := b.String(), 0
	for _, w := range want {
		i := strings.Index(got[from:], w)
		if i < 0 {
			t.Fatalf("the view lacks, after byte %d, %q:\n%s", from, w, got)
		}
		from += i + len(w)
	}
	if strings.Contains(got, "running:") || strings.Contains(got, "schedule:") {
		t.Errorf("a campaign not running and without a schedule shows neither:\n%s", got)
	}
}

func TestReasonNote(t *testing.T) {
	for _, tc := range []struct{ reason, want string }{
		{campaign.FailThrottleExhausted, "  throttled on every try: lower --rate, or ask AWS for more parts per second"},
		{campaign.FailOptedOut, "  the recipient replied STOP: never a success, never resent; the operator ledger keeps it for every later campaign"},
		{"carrier_blocked", ""},
	} {
		if got := reasonNote(tc.reason, asFlag); got != tc.want {
			t.Errorf("reasonNote(%q) = %q, want %q", tc.reason, got, tc.want)
		}
	}
}

func TestHeading(t *testing.T) {
	for _, tc := range []struct {
		ch   campaign.Channel
		s    store.Settings
		want string
	}{
		{campaign.WhatsApp, store.Settings{Template: "spring", Lang: "en_US", Category: "marketing"}, "template spring/en_US (marketing)"},
		{campaign.WhatsApp, store.Settings{Template: "spring", Lang: "en_US"}, "template spring/en_US"},
		{campaign.WhatsApp, store.Settings{Template: "x\x1b[2J", Lang: "en"}, `template x\x1b[2J/en`},
		{campaign.SMS, store.Settings{Senders: []string{"+12065550100", "pool-1"}}, "SMS from +12065550100, pool-1"},
	} {
		if got := heading(tc.ch, tc.s); got != tc.want {
			t.Errorf("heading(%s, %+v) = %q, want %q", tc.ch, tc.s, got, tc.want)
		}
	}
}

func TestWriteSchedule(t *testing.T) {
	next := "2026-06-01T09:00:00Z"
	for _, tc := range []struct {
		name string
		s    Status
		want string
	}{
		{"none", Status{}, ""},
		{"window in each zone", Status{Window: []string{"mon-fri 09:00-20:00"}, DailyLimit: "2000", Days: 2},
			"\nschedule: window mon-fri 09:00-20:00 (each recipient's local time); daily limit 2000 unique recipients per moving 24 h; runs span 2 day(s);\n"},
		{"waiting rows", Status{WindowTZ: "Europe/Berlin", Window: []string{"09:00-20:00", "sat 10:00-12:00"}, StartAt: "2026-06-01T08:00:00Z",
			NextSendAt: &next, WaitingWindow: 3, WaitingSendAt: 2, WaitingBudget: 1},
			"\nschedule: window 09:00-20:00; sat 10:00-12:00 (Europe/Berlin); start 2026-06-01T08:00:00Z;\n" +
				"waiting (pending): 3 for their window, 2 for their send_at, 1 for the daily limit, 0 for the start; next send at 2026-06-01T09:00:00Z\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			tc.s.writeSchedule(&b)
			if b.String() != tc.want {
				t.Errorf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}
