package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/engine"
)

// An SMS run's progress counts parts a second, the unit of its rate; a
// WhatsApp run's, messages.
func TestProgressLineUnits(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	s := engine.Stats{Started: start, Sent: 10, SentCost: 30}
	now := start.Add(2 * time.Second)
	if got := progressLine(s, 20, now, true); !strings.Contains(got, "· 15 parts/s ·") {
		t.Errorf("SMS: %q, want 15 parts/s (30 parts in 2 s)", got)
	}
	if got := progressLine(s, 20, now, false); !strings.Contains(got, "· 5 msg/s ·") {
		t.Errorf("WhatsApp: %q, want 5 msg/s (10 messages in 2 s)", got)
	}
}
