package inbound

import (
	"context"
	"slices"
	"testing"

	"github.com/bulksend/bulksend/internal/optout"
)

// TestHearerInOrder: a lift applies to the stops heard before it, not to
// those after; without a ledger they are counted, and said not kept.
func TestHearerInOrder(t *testing.T) {
	led := openLedger(t)
	h := newHearer(context.Background(), led, nil)
	stop := func(p string) optout.Heard {
		return optout.Heard{Channel: "sms", Phone: p, Action: optout.StopAll, Source: "reply STOP"}
	}
	h.hear(stop(phone(1)))
	h.hear(stop(phone(2)))
	h.hear(optout.Heard{Channel: "sms", Phone: phone(1), Action: optout.LiftAll, Source: "reply START"})
	h.hear(stop(phone(3)))
	sum, err := h.Flush()
	if err != nil {
		t.Fatal(err)
	}
	if want := (HeardSummary{Stops: 3, Added: 3, Lifts: 1, Lifted: 1}); sum != want {
		t.Errorf("summary %+v, want %+v", sum, want)
	}
	got := optedOut(t, led)
	slices.Sort(got)
	if want := []string{phone(2), phone(3)}; !slices.Equal(got, want) {
		t.Errorf("opted out %v, want %v", got, want)
	}

	none := newHearer(context.Background(), nil, nil)
	none.hear(stop(phone(1)))
	sum, err = none.Flush()
	if err != nil || sum != (HeardSummary{Stops: 1}) {
		t.Errorf("without a ledger: %+v, %v", sum, err)
	}
	if lines := sum.Lines(false, ""); len(lines) != 2 || lines[1] != "no operator ledger: those opt-outs were not kept" {
		t.Errorf("lines without a ledger: %q", lines)
	}
	if lines := (HeardSummary{}).Lines(true, ""); lines != nil {
		t.Errorf("nothing heard: %q", lines)
	}
}
