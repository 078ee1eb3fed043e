package sandbox

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// usageHeader is the header in which Graph reports a business account's
// call budget (fact sheet §7; OpenAPI header x-business-use-case-usage).
const usageHeader = "X-Business-Use-Case-Usage"

// budget is the business account's call budget as the usage header
// reports it: after sends accepted, it is spent and stays spent for
// regain, then renews (0 regain: spent for good). Sends are still accepted
// while it is spent: the header is Meta's warning, and the sandbox does not
// answer the throttling error (80007) that may follow it.
type budget struct {
	after  int64
	regain time.Duration

	mu    sync.Mutex
	used  int64     // accepted sends counted against the budget
	until time.Time // when a spent budget renews
}

// usageEntry is one object of the header's array. call_count, total_cputime
// and total_time are percentages of the allowance;
// estimated_time_to_regain_access is minutes.
type usageEntry struct {
	Type         string `json:"type"`
	CallCount    int    `json:"call_count"`
	TotalCPUTime int    `json:"total_cputime"`
	TotalTime    int    `json:"total_time"`
	RegainAccess int    `json:"estimated_time_to_regain_access"`
}

// renew starts a new budget once a spent one's rest is over; b.mu is held.
func (b *budget) renew(t time.Time) {
	if b.used >= b.after && b.regain > 0 && !t.Before(b.until) {
		b.used, b.until = 0, time.Time{}
	}
}

// spend counts a send accepted at t.
func (b *budget) spend(t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.renew(t)
	if b.used >= b.after {
		return
	}
	if b.used++; b.used == b.after {
		b.until = t.Add(b.regain)
	}
}

// usage is the header's entry at t: the share of the budget used, or a
// spent budget with the minutes left until it renews (rounded up).
func (b *budget) usage(t time.Time) usageEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.renew(t)
	if b.used >= b.after {
		e := usageEntry{Type: "whatsapp", CallCount: 100, TotalCPUTime: 33, TotalTime: 50}
		if left := b.until.Sub(t); left > 0 {
			e.RegainAccess = int((left + time.Minute - 1) / time.Minute)
		}
		return e
	}
	pct := int(b.used * 100 / b.after)
	return usageEntry{Type: "whatsapp", CallCount: pct, TotalCPUTime: pct / 3, TotalTime: pct / 2}
}

// usageWriter sets the usage header on a send's answer when it is written,
// so that the answer reports the budget after its own send.
type usageWriter struct {
	http.ResponseWriter
	s    *Server
	done bool
}

func (u *usageWriter) set() {
	if u.done {
		return
	}
	u.done = true
	v, _ := json.Marshal(map[string][]usageEntry{u.s.wabaID: {u.s.budget.usage(u.s.now())}})
	u.Header().Set(usageHeader, string(v))
}

func (u *usageWriter) WriteHeader(code int) {
	u.set()
	u.ResponseWriter.WriteHeader(code)
}

func (u *usageWriter) Write(b []byte) (int, error) {
	u.set()
	return u.ResponseWriter.Write(b)
}
