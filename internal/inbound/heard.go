package inbound

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/ledger"
	"github.com/bulksend/bulksend/internal/optout"
	"github.com/bulksend/bulksend/internal/store"
)

// heardBatch is how many things heard wait before they are applied: a
// log of replies is applied as it is read, in constant memory.
const heardBatch = 1000

// hearer applies what recipients said back, in log order: replies to the
// rows they answer (of the campaigns given), stops and lifts to the
// operator ledger's opt-outs. It is called from the goroutine that reads
// a log; its methods are safe for one caller at a time and Flush.
type hearer struct {
	ctx context.Context
	led *ledger.Ledger // nil: opt-outs are counted, not kept
	// replies records replies on a campaign's rows; nil: none are.
	replies func(ctx context.Context, r []campaign.Reply) (int64, error)

	mu   sync.Mutex
	pend []optout.Heard
	err  error
	sum  HeardSummary
}

// HeardSummary is what was applied of what recipients said back.
type HeardSummary struct {
	Replies  int64 `json:"replies"`          // replies and taps read
	Recorded int64 `json:"replies_recorded"` // rows that took their first reply
	Stops    int64 `json:"opt_outs"`         // stops read (keywords, opt-out taps, preference stops)
	Added    int64 `json:"opt_outs_added"`   // phones newly opted out in the ledger
	Lifts    int64 `json:"lifts"`            // STARTs and resumes read
	Lifted   int64 `json:"opt_outs_lifted"`  // opt-outs they lifted
}

// newHearer hears into led (nil: none) and, when st is not nil, records
// replies on st's rows.
func newHearer(ctx context.Context, led *ledger.Ledger, st *store.Store) *hearer {
	h := &hearer{ctx: ctx, led: led}
	if st != nil {
		h.replies = st.RecordReplies
	}
	return h
}

// hear takes one thing heard.
func (h *hearer) hear(x optout.Heard) {
	if x.At.IsZero() {
		x.At = time.Now() // a reply without a time of its own (an SMS outside SNS) is as new as its reading
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return
	}
	h.pend = append(h.pend, x)
	if len(h.pend) >= heardBatch {
		h.err = h.apply()
	}
}

// Flush applies what waits and returns the first error met.
func (h *hearer) Flush() (HeardSummary, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = h.apply()
	}
	return h.sum, h.err
}

func (h *hearer) apply() error {
	pend := h.pend
	h.pend = h.pend[:0]
	var replies []campaign.Reply
	// Stops go to the ledger together, one durable transaction for those
	// between two lifts: a lift applies to the stops before it.
	var stops []ledger.OptOut
	addStops := func() error {
		if h.led == nil || len(stops) == 0 {
			return nil
		}
		n, err := h.led.AddOptOuts(h.ctx, stops)
		h.sum.Added += int64(n)
		stops = stops[:0]
		return err
	}
	for _, x := range pend {
		if x.Reply {
			h.sum.Replies++
			replies = append(replies, replyOf(x))
		}
		switch x.Action {
		case optout.StopAll, optout.StopMarketing:
			h.sum.Stops++
			stops = append(stops, ledger.OptOut{Phone: x.Phone, Channel: x.Channel, Source: x.Source,
				Sender: x.Sender, At: x.At, MarketingOnly: x.Action == optout.StopMarketing})
		case optout.LiftAll, optout.LiftMarketing:
			h.sum.Lifts++
			if err := addStops(); err != nil {
				return err
			}
			if h.led == nil {
				continue
			}
			ok, err := h.led.Lift(h.ctx, x.Phone, x.Action == optout.LiftMarketing, x.At, x.Source)
			if ok {
				h.sum.Lifted++
			}
			if err != nil {
				return err
			}
		}
	}
	if err := addStops(); err != nil {
		return err
	}
	if h.replies != nil && len(replies) > 0 {
		n, err := h.replies(h.ctx, replies)
		h.sum.Recorded += n
		if err != nil {
			return err
		}
	}
	return nil
}

// replyOf is the reply a row records of x.
func replyOf(x optout.Heard) campaign.Reply {
	return campaign.Reply{Phone: x.Phone, MessageID: x.MessageID, At: x.At, Text: x.Text}
}

func (s *HeardSummary) add(o HeardSummary) {
	s.Replies += o.Replies
	s.Recorded += o.Recorded
	s.Stops += o.Stops
	s.Added += o.Added
	s.Lifts += o.Lifts
	s.Lifted += o.Lifted
}

// Lines say what recipients said back, none when they said nothing;
// kept: an operator ledger kept the opt-outs; scope: a rehearsal's, whose
// opt-outs are not kept.
func (s HeardSummary) Lines(kept bool, scope string) []string {
	if s == (HeardSummary{}) {
		return nil
	}
	lines := []string{fmt.Sprintf("%d replies (%d rows took their first), %d opt-outs (%d new), %d opt-ins (%d lifted)",
		s.Replies, s.Recorded, s.Stops, s.Added, s.Lifts, s.Lifted)}
	switch {
	case kept || s.Stops+s.Lifts == 0:
	case scope != "":
		lines = append(lines, "a rehearsal ("+scope+"): its opt-outs are not kept in the operator ledger")
	default:
		lines = append(lines, "no operator ledger: those opt-outs were not kept")
	}
	return lines
}
