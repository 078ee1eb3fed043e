package smssandbox

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Stats is a snapshot of what the sandbox has seen. It is also served as
// JSON at GET /_sandbox/stats; fields are only ever added.
type Stats struct {
	// StrictWindow is Config.StrictWindow: the identities' figures are
	// those of the strict window.
	StrictWindow bool `json:"strict_window,omitempty"`

	Requests  int64 `json:"requests"`  // SendTextMessage requests past the signature and protocol checks, refused ones included
	Accepted  int64 `json:"accepted"`  // messages sent: answered 200, held back (Late) or answered 500 although sent (InternalSent)
	Throttled int64 `json:"throttled"` // ThrottlingException answers, whatever the cause
	OptedOut  int64 `json:"opted_out"` // DESTINATION_PHONE_NUMBER_OPTED_OUT answers
	DryRuns   int64 `json:"dry_runs"`  // DryRun sends that passed validation (not in Accepted)
	Late      int64 `json:"late"`      // accepted messages whose answer was held back LateDelay
	Reads     int64 `json:"reads"`     // Describe… requests
	Events    int64 `json:"events"`    // event records written
	Delivered int64 `json:"delivered"` // accepted messages whose final event is TEXT_DELIVERED (written or to come)
	Failed    int64 `json:"failed"`    // accepted messages whose final event is a failure
	// Replies counts delivered messages whose recipient replies (written
	// or to come; ReplyRate), Stops and Helps those of them that are a
	// stop keyword or HELP.
	Replies int64 `json:"replies"`
	Stops   int64 `json:"stops"`
	Helps   int64 `json:"helps"`
	// InternalSent counts InternalServerException answers for messages
	// that went out all the same (also in Accepted).
	InternalSent int64 `json:"internal_sent"`
	// Errors counts error answers by type, with the reason when there is
	// one: "ConflictException/DESTINATION_PHONE_NUMBER_OPTED_OUT".
	Errors map[string]int64 `json:"errors"`
	// Identities are the origination identities sends named: a listed
	// number by its phone number, a pool by its ID, any other identity as
	// sent (an ARN by the ID in it).
	Identities map[string]IdentityStats `json:"identities"`
}

// IdentityStats is what one origination identity sent.
type IdentityStats struct {
	Accepted        int64 `json:"accepted"`         // messages sent (as Stats.Accepted)
	AcceptedParts   int64 `json:"accepted_parts"`   // their parts, as the sandbox counts them
	Throttled       int64 `json:"throttled"`        // ThrottlingException answers
	BudgetThrottles int64 `json:"budget_throttles"` // of those, due to the budget or the strict window (not ThrottleAlways or ThrottleRate)
	// MaxWindowParts is the most parts charged in any window of the
	// budget (one second when MPS is a whole number; see budget.go):
	// never more than max(1, floor(MPS)). In strict mode it is the most
	// parts of sent messages the strict window held at once.
	MaxWindowParts int `json:"max_window_parts"`
	// MaxArrivalParts and MaxArrivals are, in strict mode, the most parts
	// and the most sends the strict window held at once, counting every
	// send naming the identity at its arrival, whatever its answer: for
	// messages of at most floor(MPS) parts, the most that arrived in any
	// sliding second. Parts above max(floor(MPS), the longest message's)
	// mean the window throttled.
	MaxArrivalParts int `json:"max_arrival_parts,omitempty"`
	MaxArrivals     int `json:"max_arrivals,omitempty"`
	// First and Last are the instants of the first and last message sent,
	// for achieved-rate figures: the last one's parts take (parts−1)/MPS
	// more to pass.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
}

// counters are the live values behind Stats; atomic, so the hot path takes
// no lock to count, except for the error map.
type counters struct {
	requests, accepted, throttled, optedOut atomic.Int64
	dryRuns, late, internalSent, reads      atomic.Int64
	events, delivered, failed               atomic.Int64
	replies, stops, helps                   atomic.Int64

	mu     sync.Mutex
	errors map[string]int64
}

// countReply counts a reply of text.
func (c *counters) countReply(text string) {
	c.replies.Add(1)
	switch {
	case text == helpReply:
		c.helps.Add(1)
	case slices.Contains(stopReplies, text):
		c.stops.Add(1)
	}
}

func (c *counters) countError(e *apiError) {
	k := e.Type
	if e.Reason != "" {
		k += "/" + e.Reason
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.errors == nil {
		c.errors = map[string]int64{}
	}
	c.errors[k]++
}

// Stats returns a snapshot of the counters. They are read one by one, so a
// snapshot taken under load may be slightly inconsistent across fields.
func (s *Server) Stats() Stats {
	c := &s.stats
	st := Stats{
		Requests:     c.requests.Load(),
		Accepted:     c.accepted.Load(),
		Throttled:    c.throttled.Load(),
		OptedOut:     c.optedOut.Load(),
		DryRuns:      c.dryRuns.Load(),
		Late:         c.late.Load(),
		InternalSent: c.internalSent.Load(),
		Reads:        c.reads.Load(),
		Events:       c.events.Load(),
		Delivered:    c.delivered.Load(),
		Failed:       c.failed.Load(),
		Replies:      c.replies.Load(),
		Stops:        c.stops.Load(),
		Helps:        c.helps.Load(),
		Errors:       map[string]int64{},
		Identities:   map[string]IdentityStats{},
		StrictWindow: s.cfg.StrictWindow,
	}
	c.mu.Lock()
	for k, v := range c.errors {
		st.Errors[k] = v
	}
	c.mu.Unlock()
	add := func(id *identity) {
		id.mu.Lock()
		defer id.mu.Unlock()
		if id.st != (IdentityStats{}) {
			st.Identities[id.key] = id.st
		}
	}
	seen := map[*identity]bool{}
	for _, id := range s.byName {
		if !seen[id] {
			seen[id] = true
			add(id)
		}
	}
	s.unlisted.Range(func(_, v any) bool {
		add(v.(*identity))
		return true
	})
	return st
}
