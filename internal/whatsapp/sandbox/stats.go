package sandbox

import (
	"sync/atomic"
)

// Stats is a snapshot of what the sandbox has seen. It is also served as
// JSON at GET /_sandbox/stats; fields are only ever added.
type Stats struct {
	Requests    int64 `json:"requests"`     // requests to the messages and marketing_messages APIs (not /_sandbox/, message_templates or number reads)
	Accepted    int64 `json:"accepted"`     // answered (or, when late, meant to answer) 200
	Throttled   int64 `json:"throttled"`    // 130429 answers
	PairLimited int64 `json:"pair_limited"` // 131056 answers
	// Errors counts error answers by code, throttling included.
	Errors map[int]int64 `json:"errors"`
	// MaxPerSecond is, per phone-number-id, the most messages accepted in
	// any sliding one-second window (by the instant each was counted: in
	// strict mode its arrival): compare it with the configured Rate.
	MaxPerSecond map[string]int `json:"max_per_second"`
	// StrictWindow is Config.StrictWindow. In strict mode MaxArrivals is,
	// per phone-number-id, the most requests that arrived in any sliding
	// one-second window, whatever their answers: the largest second the
	// strict window saw. A number whose figure is at most its Rate was
	// never throttled by it (130429); each request over it was.
	StrictWindow bool           `json:"strict_window,omitempty"`
	MaxArrivals  map[string]int `json:"max_arrivals_per_second,omitempty"`
	// Duplicates counts accepted messages whose biz_opaque_callback_data had
	// already been accepted: messages a recipient would get twice.
	Duplicates int64 `json:"duplicates"`
	Late       int64 `json:"late"` // accepted messages whose answer was held back

	// Final outcomes reported by the status webhooks of accepted messages,
	// counted when a message is accepted (its fate is decided then), not
	// when its webhooks are emitted.
	Delivered int64 `json:"delivered"` // delivered, read ones included
	Read      int64 `json:"read"`
	Failed    int64 `json:"failed"`

	Webhooks          int64 `json:"webhooks"`           // webhook bodies emitted (duplicates included)
	WebhookDuplicates int64 `json:"webhook_duplicates"` // messages with a body delivered a second time on purpose
	WebhookReordered  int64 `json:"webhook_reordered"`  // messages one of whose statuses arrives after a later one
	// WebhooksPending counts the deliveries planned but not yet emitted:
	// statuses whose time has not come (Close emits them all).
	WebhooksPending int64 `json:"webhooks_pending"`
	// POSTs to WebhookURL: attempts that failed or were not 2xx, retries
	// among all attempts, bodies acknowledged, and bodies given up after
	// WebhookTries failed attempts (or dropped by Shutdown's deadline).
	WebhookPostErrors int64 `json:"webhook_post_errors"`
	WebhookRetries    int64 `json:"webhook_retries"`
	WebhookPosted     int64 `json:"webhook_posted"`
	WebhookFailed     int64 `json:"webhook_failed"`

	// TemplateReads counts requests to /{WABA-ID}/message_templates,
	// refused ones included (their error codes are in Errors).
	TemplateReads int64 `json:"template_reads"`
	// NumberReads counts requests to /{phone-number-id} (the number's
	// fields), refused ones included.
	NumberReads int64 `json:"number_reads"`

	// Held counts accepted messages answered held_for_quality_assessment;
	// HeldFailed those of them later dropped (failed, 132015). Both are
	// also in Accepted, HeldFailed also in Failed.
	Held       int64 `json:"held"`
	HeldFailed int64 `json:"held_failed"`
	// MarketingCapped counts messages failed 131049 by MarketingCapRate
	// (also in Failed; FailRate's 131049s are not counted here).
	MarketingCapped int64 `json:"marketing_capped"`

	// MarketingRequests counts requests to /marketing_messages (also in
	// Requests). Of those accepted, MarketingLite went out through the
	// Marketing Messages API and MarketingFallback through Cloud API
	// (CLOUD_API_FALLBACK while not onboarded); both are also in Accepted.
	MarketingRequests int64 `json:"marketing_requests"`
	MarketingLite     int64 `json:"marketing_lite"`
	MarketingFallback int64 `json:"marketing_fallback"`

	// What recipients send back, counted when their message is accepted
	// (like the final statuses): Replies are text replies, Stops those of
	// them that are a stop keyword; ButtonTaps are quick-reply taps,
	// StopPromotions those of them on the marketing opt-out button;
	// PreferenceStops are user_preferences stops of marketing messages.
	// MarketingStopped counts the marketing messages failed 131050
	// because their recipient had stopped marketing (also in Failed).
	Replies          int64 `json:"replies"`
	Stops            int64 `json:"stops"`
	ButtonTaps       int64 `json:"button_taps"`
	StopPromotions   int64 `json:"stop_promotions"`
	PreferenceStops  int64 `json:"preference_stops"`
	MarketingStopped int64 `json:"marketing_stopped"`
}

// counters are the live values behind Stats; all atomic, so the hot path
// takes no lock to count.
type counters struct {
	requests, accepted, throttled, pairLimited atomic.Int64
	duplicates, late                           atomic.Int64
	delivered, read, failed                    atomic.Int64
	webhooks, whDuplicates, whReordered        atomic.Int64
	whPostErrors, whRetries, whPosted          atomic.Int64
	whFailed, templateReads, numberReads       atomic.Int64
	held, heldFailed, capped                   atomic.Int64
	mmRequests, mmLite, mmFallback             atomic.Int64
	replies, stops, taps, optOuts, prefStops   atomic.Int64
	stoppedMarketing                           atomic.Int64
	errors                                     map[int]*atomic.Int64 // fixed keys: knownCodes and extra
}

// init makes the error counters: one per known code and per extra code
// (the configured SendErrors).
func (c *counters) init(extra []int) {
	c.errors = make(map[int]*atomic.Int64, len(knownCodes)+len(extra))
	for _, code := range append(knownCodes[:len(knownCodes):len(knownCodes)], extra...) {
		if c.errors[code] == nil {
			c.errors[code] = new(atomic.Int64)
		}
	}
}

// Stats returns a snapshot of the counters. Counters are read one by one, so
// a snapshot taken under load may be slightly inconsistent across fields.
func (s *Server) Stats() Stats {
	c := &s.stats
	st := Stats{
		Requests:          c.requests.Load(),
		Accepted:          c.accepted.Load(),
		Throttled:         c.throttled.Load(),
		PairLimited:       c.pairLimited.Load(),
		Errors:            map[int]int64{},
		MaxPerSecond:      map[string]int{},
		Duplicates:        c.duplicates.Load(),
		Late:              c.late.Load(),
		Delivered:         c.delivered.Load(),
		Read:              c.read.Load(),
		Failed:            c.failed.Load(),
		Webhooks:          c.webhooks.Load(),
		WebhookDuplicates: c.whDuplicates.Load(),
		WebhookReordered:  c.whReordered.Load(),
		WebhookPostErrors: c.whPostErrors.Load(),
		WebhookRetries:    c.whRetries.Load(),
		WebhookPosted:     c.whPosted.Load(),
		WebhookFailed:     c.whFailed.Load(),
		TemplateReads:     c.templateReads.Load(),
		NumberReads:       c.numberReads.Load(),
		Held:              c.held.Load(),
		HeldFailed:        c.heldFailed.Load(),
		MarketingCapped:   c.capped.Load(),
		MarketingRequests: c.mmRequests.Load(),
		MarketingLite:     c.mmLite.Load(),
		MarketingFallback: c.mmFallback.Load(),
		Replies:           c.replies.Load(),
		Stops:             c.stops.Load(),
		ButtonTaps:        c.taps.Load(),
		StopPromotions:    c.optOuts.Load(),
		PreferenceStops:   c.prefStops.Load(),
		MarketingStopped:  c.stoppedMarketing.Load(),
	}
	if s.out != nil {
		st.WebhooksPending = s.out.pending.Load()
	}
	for code, n := range c.errors {
		if v := n.Load(); v > 0 {
			st.Errors[code] = v
		}
	}
	if s.cfg.StrictWindow {
		st.StrictWindow, st.MaxArrivals = true, map[string]int{}
	}
	s.numbers.Range(func(k, v any) bool {
		accepted, arrivals := v.(*number).max()
		st.MaxPerSecond[k.(string)] = accepted
		if st.StrictWindow {
			st.MaxArrivals[k.(string)] = arrivals
		}
		return true
	})
	return st
}
