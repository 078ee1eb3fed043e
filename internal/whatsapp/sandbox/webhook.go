package sandbox

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"slices"
	"strconv"
	"time"
)

// emit counts the outcome of an accepted message, writes its Accepted
// record and schedules its status webhooks. The outcome is decided (and
// counted in Stats) now; the webhooks come at their own times (see plan).
func (s *Server) emit(num *number, version, wamid string, req sendRequest, waID string, tmpl Template, rt route, a api, at time.Time, attempt int, ft fate) {
	final := "delivered"
	switch {
	case ft.failCode != 0:
		final = "failed"
		s.stats.failed.Add(1)
		switch {
		case ft.heldFail:
			s.stats.heldFailed.Add(1)
		case ft.capped:
			s.stats.capped.Add(1)
		}
	case ft.read:
		final = "read"
		s.stats.delivered.Add(1)
		s.stats.read.Add(1)
	default:
		s.stats.delivered.Add(1)
	}
	if ft.failCode == codeStoppedMarketing {
		s.stats.stoppedMarketing.Add(1)
	}
	// Decided and counted now, like the statuses, and a stop of marketing
	// holds for later sends whether or not anything is emitted.
	backs := s.answers(req, tmpl, waID, at, ft)
	if s.out == nil {
		return
	}
	var rec []byte
	if s.cfg.Accepted != nil {
		rec = (&acceptedRecord{
			WAMID:                 wamid,
			PhoneNumberID:         num.id,
			To:                    req.To,
			BizOpaqueCallbackData: req.BizOpaqueCallbackData,
			Template:              tmpl.Name,
			Language:              req.Template.Language.Code,
			Time:                  at.UTC().Format(time.RFC3339Nano),
			Attempt:               attempt,
			Late:                  ft.outcome == late,
			Final:                 final,
			Held:                  ft.held,
			API:                   a.record(),
			Pricing:               rt.category,
		}).marshal()
	}
	var p *plan
	if s.out.hooks {
		p = s.plan(num, version, wamid, req.BizOpaqueCallbackData, waID, rt.category, at, ft, backs)
	}
	s.out.add(rec, p)
}

// plan is the status webhooks of one accepted message: its statuses with
// the times they happen, and the deliveries of their bodies in the order
// they arrive. It is owned by the outbox once added.
type plan struct {
	seq uint64 // the outbox's, in order added

	num                  *number
	version, wamid, waID string
	cbd, category        string
	accepted             time.Time
	statuses             []event
	arrivals             []arrival // sorted by time
	next                 int       // arrivals[next] is the next to emit
	stop                 func() bool
}

// event is one status of a message and the time it happens, or (back set)
// what its recipient sends back after it.
type event struct {
	status   string
	at       time.Time
	billed   bool      // carries pricing (and a conversation before v24.0)
	failCode int       // failed: the error
	back     *talkback // a reply, a button tap or a stop of marketing; status is ""
	body     []byte    // serialised when first delivered, for a duplicate
}

// arrival is one delivery of a status's body.
type arrival struct {
	at     time.Time
	status int  // index in plan.statuses
	dup    bool // the second delivery of the same body
}

// plan times the statuses of an accepted message: sent SentDelay after
// acceptance, delivered (or failed) DeliveredDelay after sent, read
// ReadDelay after delivered, all later by a held message's assessment.
// Each status arrives at its own time, except that with ReorderRate one
// arrives late, after the status that follows it, and with DuplicateRate
// one arrives a second time; both up to a second later.
// What the recipient sends back (backs, see answers) comes after the
// statuses, each at its own time.
func (s *Server) plan(num *number, version, wamid, cbd, waID, category string, at time.Time, ft fate, backs []event) *plan {
	sent, done, read := s.times(at, ft)
	p := &plan{num: num, version: version, wamid: wamid, waID: waID, cbd: cbd, category: category, accepted: at}
	// Pricing comes with sent and with the first of delivered/read; so does
	// the conversation, on API versions before v24.0 (fact sheet §5).
	switch {
	case ft.failCode != 0:
		if ft.sentFirst {
			p.statuses = append(p.statuses, event{status: "sent", at: sent, billed: true})
		}
		p.statuses = append(p.statuses, event{status: "failed", at: done, failCode: ft.failCode})
	default:
		p.statuses = append(p.statuses, event{status: "sent", at: sent, billed: true}, event{status: "delivered", at: done, billed: true})
		if ft.read {
			p.statuses = append(p.statuses, event{status: "read", at: read})
		}
	}
	n := len(p.statuses)
	p.arrivals = make([]arrival, n, n+1)
	for i, e := range p.statuses {
		p.arrivals[i] = arrival{at: e.at, status: i}
	}
	if ft.reorder && n > 1 {
		i := min(int(ft.lateWhich*float64(n-1)), n-2)
		p.arrivals[i].at = p.arrivals[i+1].at.Add(lateBy(ft.lateDraw))
		s.stats.whReordered.Add(1)
	}
	if ft.duplicate >= 0 {
		k := min(ft.duplicate, n-1)
		p.arrivals = append(p.arrivals, arrival{at: p.arrivals[k].at.Add(lateBy(ft.dupDraw)), status: k, dup: true})
		s.stats.whDuplicates.Add(1)
	}
	// After the reorder and the duplicate, which are of statuses only.
	for _, b := range backs {
		p.arrivals = append(p.arrivals, arrival{at: b.at, status: len(p.statuses)})
		p.statuses = append(p.statuses, b)
	}
	// Stable: statuses that happen at the same time arrive in their order.
	slices.SortStableFunc(p.arrivals, func(a, b arrival) int { return a.at.Compare(b.at) })
	return p
}

// times are when an accepted message is sent, delivered (or failed) and
// read (if it is), of its fate: sent SentDelay after acceptance, delivered
// DeliveredDelay after sent, read ReadDelay after delivered, all later by
// a held message's assessment.
func (s *Server) times(at time.Time, ft fate) (sent, done, read time.Time) {
	hold := time.Duration(ft.holdDraw * float64(holdMax))
	sent = at.Add(hold + s.sentDelay.at(ft.sentDraw))
	done = sent.Add(s.deliveredDelay.at(ft.deliveredDraw))
	return sent, done, done.Add(s.readDelay.at(ft.readDraw))
}

// lateBy is how much later than planned a late or duplicate delivery
// arrives, for a uniform draw u: from a millisecond to a second.
func lateBy(u float64) time.Duration {
	return time.Millisecond + time.Duration(u*float64(time.Second))
}

// body serialises status i of p as Meta's webhook POST body, stamped
// stamp, and keeps it for a duplicate. A failed status carries its error;
// the conversation's expiry counts from acceptance.
func (p *plan) body(i int, stamp time.Time, wabaID string) []byte {
	e := &p.statuses[i]
	if e.back != nil {
		e.body = p.backBody(e.back, stamp, wabaID)
		return e.body
	}
	st := whStatus{
		ID:                    p.wamid,
		Status:                e.status,
		Timestamp:             strconv.FormatInt(stamp.Unix(), 10),
		RecipientID:           p.waID,
		BizOpaqueCallbackData: p.cbd,
	}
	if e.billed {
		// The category is the template's, or marketing_lite for a message
		// the Marketing Messages API sent.
		st.Pricing = &whPricing{Billable: true, PricingModel: "PMP", Type: "regular", Category: p.category}
		if versionBefore24(p.version) {
			h := fnv.New128a()
			h.Write([]byte(p.wamid))
			st.Conversation = &whConversation{
				ID:                  hex.EncodeToString(h.Sum(nil)),
				ExpirationTimestamp: strconv.FormatInt(p.accepted.Add(24*time.Hour).Unix(), 10),
				Origin:              whOrigin{Type: p.category},
			}
		}
	}
	if e.failCode != 0 {
		st.Errors = []whError{asyncErrors[e.failCode]}
	}
	e.body, _ = json.Marshal(webhookBody{
		Object: "whatsapp_business_account",
		Entry: []whEntry{{ID: wabaID, Changes: []whChange{{
			Field: "messages",
			Value: whValue{
				MessagingProduct: "whatsapp",
				Metadata:         whMetadata{DisplayPhoneNumber: p.num.display, PhoneNumberID: p.num.id},
				Statuses:         []whStatus{st},
			},
		}}}},
	})
	return e.body
}

// Sign returns the lowercase hex HMAC-SHA256 of body keyed with secret: the
// value after "sha256=" in X-Hub-Signature-256.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}
