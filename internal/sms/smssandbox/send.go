package smssandbox

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// send handles SendTextMessage. Its checks run in this order: the body's
// JSON and each member's constraints, the account error, the configuration
// set, the origination identity, the body's size, the destination country,
// the opt-out list, MaxPrice; then DryRun ends it. A send that passed them
// all meets ThrottleAlways, the budget and its fate, in that order, under
// its identity's lock. In strict mode the send is counted in its
// identity's strict window as soon as its identity and parts are known,
// at arrived, whatever follows; the window's verdict takes the budget's
// place.
func (s *Server) send(w http.ResponseWriter, r *http.Request, reqID string, body []byte, arrived time.Time) {
	var req sendRequest
	if err := json.Unmarshal(body, &req); err != nil {
		s.fail(w, reqID, newError(http.StatusBadRequest, typeSerialization, "%s", err))
		return
	}
	if e := validateSend(&req); e != nil {
		s.fail(w, reqID, e)
		return
	}
	if e := s.accountSend(); e != nil {
		s.fail(w, reqID, e)
		return
	}
	if name := deref(req.ConfigurationSetName); name != "" && len(s.sets) > 0 {
		if typ, id, ok := arnResource(name); ok && typ == "configuration-set" {
			name = id
		}
		if !s.sets[name] {
			s.fail(w, reqID, notFound("configuration-set", name))
			return
		}
	}
	id, e := s.identity(deref(req.OriginationIdentity))
	if e != nil {
		s.fail(w, reqID, e)
		return
	}
	dest := e164(*req.DestinationPhoneNumber)
	text := *req.MessageBody
	parts, units, ucs2 := measure(text)
	var (
		arrival int64 // strict: the instant the window counted the send at
		full    bool  // strict: its parts did not fit the window
	)
	if id.w != nil {
		id.mu.Lock()
		arrival, full = id.w.arrive(arrived, parts)
		id.st.MaxArrivalParts, id.st.MaxArrivals = id.w.maxParts, id.w.maxSends
		id.mu.Unlock()
	}
	if tooLong(parts, units, ucs2) {
		s.fail(w, reqID, validation("MAXIMUM_SIZE_EXCEEDED", "MessageBody",
			"The message body takes %d parts (%d %s); the limit is %d parts, %d GSM-7 septets or %d UCS-2 characters.",
			parts, units, unitName(ucs2), maxParts, maxGSM, maxUCS2))
		return
	}
	if p := longestPrefix(dest, s.cfg.BlockedPrefixes); p != "" {
		s.fail(w, reqID, conflict("DESTINATION_COUNTRY_BLOCKED_BY_PROTECT_CONFIGURATION", "protect-configuration", "protect-configuration-sandbox",
			"Sending to +%s… is blocked by the protect configuration.", p))
		return
	}
	if s.optedOut[id.list][dest] {
		s.stats.optedOut.Add(1)
		s.fail(w, reqID, conflict("DESTINATION_PHONE_NUMBER_OPTED_OUT", "opted-out-number", dest,
			"The destination phone number %s is opted out of list %s.", dest, id.list))
		return
	}
	price := s.pricePerPart(dest)
	if req.MaxPrice != nil {
		// AWS: MaxPrice is "per each text message", so a message of several
		// parts costs each of them.
		if limit, _ := strconv.ParseFloat(*req.MaxPrice, 64); limit < price*float64(parts) {
			s.fail(w, reqID, validation("PRICE_OVER_THRESHOLD", "MaxPrice",
				"The price of this %d-part message to %s (%.5f USD) is over MaxPrice (%s USD).", parts, dest, price*float64(parts), *req.MaxPrice))
			return
		}
	}
	if req.DryRun {
		// Validated, not sent, not charged: no budget, no event.
		s.stats.dryRuns.Add(1)
		writeJSON(w, reqID, sendResponse{MessageID: s.newID()})
		return
	}

	var (
		ft     fate
		sent   bool // the message went out: budget charged, event to come
		at     time.Time
		answer *apiError
	)
	id.mu.Lock()
	// Read under the lock, so instants reach the budget in order.
	now := s.now()
	var t int64
	if id.w != nil {
		t = arrival
	} else {
		t = id.b.clamp(now)
	}
	switch {
	case id.always:
		answer = throttling()
	case full, id.w == nil && !id.b.fits(t, parts):
		answer = throttling()
		id.st.BudgetThrottles++
	default:
		ft = draw(s.cfg.Seed, dest, req.Context, s.attempt(dest, req.Context), s.rates)
		switch ft.outcome {
		case throttled:
			answer = throttling()
		case internalSent, internalEaten:
			answer = newError(http.StatusInternalServerError, typeInternal, "An internal error occurred.")
		}
		if sent = ft.outcome.sent(); sent {
			at = time.Unix(0, t).In(now.Location())
			if id.w != nil {
				id.sent.arrive(at, parts)
				id.st.MaxWindowParts = id.sent.maxParts
			} else {
				id.b.commit()
				id.st.MaxWindowParts = id.b.maxWindow
			}
			id.st.Accepted++
			id.st.AcceptedParts += int64(parts)
			if id.st.First.IsZero() {
				id.st.First = at
			}
			id.st.Last = at
		}
	}
	if answer != nil && answer.Type == typeThrottling {
		id.st.Throttled++
	}
	id.mu.Unlock()

	if sent {
		s.stats.accepted.Add(1)
		msgID := s.newID()
		s.emit(id, msgID, dest, ucs2, parts, price, &req, at, ft)
		switch ft.outcome {
		case late:
			s.stats.late.Add(1)
		case internalSent:
			s.stats.internalSent.Add(1)
		}
		if answer == nil {
			d := s.latency()
			if ft.outcome == late {
				d += s.lateDelay
			}
			if s.delay(r.Context(), d) {
				writeJSON(w, reqID, sendResponse{MessageID: msgID})
			}
			return
		}
	}
	if answer.Type == typeThrottling {
		s.stats.throttled.Add(1)
	}
	if s.delay(r.Context(), s.latency()) {
		s.fail(w, reqID, answer)
	} else {
		s.stats.countError(answer)
	}
}

func throttling() *apiError {
	return newError(http.StatusBadRequest, typeThrottling, "Rate exceeded.")
}

// attempt counts a draw for the message to dest with ctx and returns its
// number, from 1.
func (s *Server) attempt(dest string, ctx map[string]string) int {
	k := dest + "\x00" + contextKey(ctx)
	s.tallyMu.Lock()
	defer s.tallyMu.Unlock()
	s.tallies[k]++
	return s.tallies[k]
}

// emit schedules the final event of a sent message and its reply, if it
// gets one, and counts them.
func (s *Server) emit(id *identity, msgID, dest string, ucs2 bool, parts int, price float64, req *sendRequest, at time.Time, ft fate) {
	if ft.event == "TEXT_DELIVERED" {
		s.stats.delivered.Add(1)
	} else {
		s.stats.failed.Add(1)
	}
	reply := ft.reply != "" && canReply(id.phone)
	if reply {
		s.stats.countReply(ft.reply)
	}
	if s.events == nil {
		return
	}
	enc := "GSM"
	if ucs2 {
		enc = "UCS2"
	}
	rec := eventRecord{
		EventType:                ft.event,
		EventVersion:             "1.0",
		IsFinal:                  true,
		OriginationPhoneNumber:   id.phone,
		DestinationPhoneNumber:   dest,
		IsoCountryCode:           isoCountry(dest),
		MessageID:                msgID,
		MessageRequestTimestamp:  at.UnixMilli(),
		MessageEncoding:          enc,
		MessageType:              messageType(req.MessageType),
		MessageStatus:            statuses[ft.event].status,
		MessageStatusDescription: statuses[ft.event].description,
		Context:                  req.Context,
		TotalMessageParts:        parts,
		TotalMessagePrice:        money(float64(parts) * price),
		TotalCarrierFee:          money(float64(parts) * carrierFee(dest)),
	}
	s.events.schedule(rec, at.Add(ft.after), ft.after)
	if reply {
		d := ft.after + ft.replyAfter
		s.events.scheduleReply(inboundRecord{
			OriginationNumber:          dest,
			DestinationNumber:          id.phone,
			MessageKeyword:             keywordOf(ft.reply),
			MessageBody:                ft.reply,
			InboundMessageID:           s.newID(),
			PreviousPublishedMessageID: msgID,
		}, at.Add(d), d)
	}
}

// money rounds away float noise: 3 × 0.00581 is 0.01743, not 0.017429999….
func money(v float64) float64 { return math.Round(v*1e8) / 1e8 }

func messageType(t *string) string {
	if t == nil {
		return "TRANSACTIONAL"
	}
	return *t
}

// identity resolves OriginationIdentity. Without one, AWS picks an identity
// of the account: the sandbox the first number (or pool) listed.
func (s *Server) identity(name string) (*identity, *apiError) {
	if name == "" {
		switch {
		case len(s.numbers) > 0:
			return s.byName[s.numbers[0].ID], nil
		case len(s.pools) > 0:
			return s.byName[s.pools[0].ID], nil
		}
		return nil, conflict("NO_ORIGINATION_IDENTITIES_FOUND", "account", account,
			"No origination identity was given and the account has none to choose from.")
	}
	if s.listed {
		key := name
		if typ, id, ok := arnResource(name); ok && (typ == "phone-number" || typ == "pool") {
			key = id
		}
		if id := s.byName[key]; id != nil {
			return id, nil
		}
		return nil, notFound(resourceTypeOf(name), name)
	}
	// An ARN and the ID in it are one identity; a phone-… ID sends from
	// the number DescribePhoneNumbers reports for it.
	key, phone := name, name
	if typ, id, ok := arnResource(name); ok && (typ == "phone-number" || typ == "pool") {
		key, phone = id, id
	}
	if strings.HasPrefix(key, "phone-") {
		phone = synthPhone(key)
	}
	if v, ok := s.unlisted.Load(key); ok {
		return v.(*identity), nil
	}
	v, _ := s.unlisted.LoadOrStore(key, s.newIdentity(key, phone, defaultList, s.always[name] || s.always[key], s.mps(0)))
	return v.(*identity), nil
}

// synthPhone is the phone number of a phone-… ID the sandbox was not told
// about: +1206555 and four digits derived from the ID.
func synthPhone(id string) string {
	return fmt.Sprintf("+1206555%04d", hash16(id)%10000)
}

// resourceTypeOf guesses what kind of identity name meant to be.
func resourceTypeOf(name string) string {
	if typ, _, ok := arnResource(name); ok {
		return typ
	}
	switch {
	case strings.HasPrefix(name, "pool-"):
		return "pool"
	case strings.HasPrefix(name, "phone-") || isPhone(name):
		return "phone-number"
	}
	return "sender-id"
}

// validateSend checks each member against the API model's constraints.
func validateSend(req *sendRequest) *apiError {
	switch {
	case req.DestinationPhoneNumber == nil:
		return missing("DestinationPhoneNumber")
	case !isPhone(*req.DestinationPhoneNumber):
		return invalidField("DestinationPhoneNumber", *req.DestinationPhoneNumber,
			`Member must satisfy regular expression pattern: \+?[1-9][0-9]{1,18}`)
	case req.OriginationIdentity != nil && !validName(*req.OriginationIdentity, 256, "+"):
		return invalidField("OriginationIdentity", *req.OriginationIdentity,
			`Member must satisfy regular expression pattern: [A-Za-z0-9_:/\+-]+ and have length between 1 and 256`)
	case req.MessageBody == nil:
		return missing("MessageBody")
	case *req.MessageBody == "" || utf8.RuneCountInString(*req.MessageBody) > 1600:
		return invalidField("MessageBody", abbreviate(*req.MessageBody),
			"Member must have length between 1 and 1600")
	case req.MessageType != nil && *req.MessageType != "TRANSACTIONAL" && *req.MessageType != "PROMOTIONAL":
		return invalidField("MessageType", *req.MessageType,
			"Member must satisfy enum value set: [TRANSACTIONAL, PROMOTIONAL]")
	case req.ConfigurationSetName != nil && !validName(*req.ConfigurationSetName, 256, ""):
		return invalidField("ConfigurationSetName", *req.ConfigurationSetName,
			"Member must satisfy regular expression pattern: [A-Za-z0-9_:/-]+ and have length between 1 and 256")
	case req.MaxPrice != nil && !validPrice(*req.MaxPrice):
		return invalidField("MaxPrice", *req.MaxPrice,
			`Member must satisfy regular expression pattern: [0-9]{0,2}\.[0-9]{1,5}`)
	case req.TimeToLive != nil && (*req.TimeToLive < 5 || *req.TimeToLive > 259200):
		return invalidField("TimeToLive", strconv.FormatInt(*req.TimeToLive, 10),
			"Member must have value between 5 and 259200")
	case len(req.Context) > 5:
		return invalidField("Context", fmt.Sprintf("%d entries", len(req.Context)), "Member must have at most 5 entries")
	}
	for k, v := range req.Context {
		if k == "" || len([]rune(k)) > 100 || strings.IndexFunc(k, unicode.IsSpace) >= 0 {
			return invalidField("Context", k, `Map keys must satisfy constraint: [Member must have length between 1 and 100, Member must satisfy regular expression pattern: \S+]`)
		}
		if v == "" || len([]rune(v)) > 800 || strings.TrimSpace(v) != v {
			return invalidField("Context."+k, abbreviate(v), "Member must have length between 1 and 800 and neither begin nor end with white space")
		}
	}
	return nil
}

// validName reports whether s matches [A-Za-z0-9_:/-]+ (plus the
// characters in extra) with at most max characters.
func validName(s string, max int, extra string) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.ContainsRune("_:/-"+extra, c):
		default:
			return false
		}
	}
	return true
}

// validPrice matches [0-9]{0,2}\.[0-9]{1,5}.
func validPrice(s string) bool {
	whole, frac, ok := strings.Cut(s, ".")
	return ok && len(whole) <= 2 && len(frac) >= 1 && len(frac) <= 5 && allDigits(whole) && allDigits(frac)
}

// isPhone matches \+?[1-9][0-9]{1,18}.
func isPhone(s string) bool {
	d := strings.TrimPrefix(s, "+")
	return len(d) >= 2 && len(d) <= 19 && d[0] != '0' && allDigits(d)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// e164 puts the '+' on a phone number that lacks it.
func e164(s string) string {
	if strings.HasPrefix(s, "+") {
		return s
	}
	return "+" + s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// abbreviate keeps error messages short when a value is long.
func abbreviate(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:37]) + "..."
	}
	return s
}

func unitName(ucs2 bool) string {
	if ucs2 {
		return "UCS-2 units"
	}
	return "GSM-7 septets"
}
