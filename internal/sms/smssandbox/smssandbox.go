// Package smssandbox is a fake AWS End User Messaging SMS API
// (pinpoint-sms-voice-v2): an http.Handler that answers SendTextMessage,
// DescribeOptedOutNumbers, DescribePhoneNumbers and DescribePools over the
// AWS JSON 1.0 protocol the way AWS does, including what a bulk sender must
// survive: a per-identity throughput limit counted in message parts
// (ThrottlingException), opted-out recipients, prices over MaxPrice,
// blocked countries, account-wide errors, internal errors after which the
// message may or may not have gone out, answers that never arrive although
// it did, and delivery events written as AWS writes them to an event
// destination.
//
// It serves `bulksend run --sandbox --channel sms`, `bulksend sandbox` and
// the engine's tests, as internal/sandbox does for WhatsApp, and mirrors
// its habits: everything random derives from Config.Seed and the message
// (see Config.Seed), so a run can be replayed and concurrency cannot change
// which message fails; the limit is exact under concurrency; Stats says
// what the sandbox saw.
//
// It counts message parts with its own code (Parts), not the client's, so
// the two counts check each other. It imports no AWS SDK: plain net/http
// and encoding/json, shaped after the Go SDK's serializers and
// deserializers (service/pinpointsmsvoicev2 v1.29.1). Signatures are not
// verified; an Authorization header must look like SigV4.
package smssandbox

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulksend/bulksend/internal/fake"
)

// account is the AWS account id in ARNs.
const account = "111122223333"

// Server is the fake API. It is an http.Handler serving
//
//	POST /   X-Amz-Target: PinpointSMSVoiceV2.<Operation>, the four operations
//	GET  /_sandbox/stats   Stats as JSON
//
// It is safe for concurrent use. Close it to write pending events and
// release late answers.
type Server struct {
	cfg       Config
	now       func() time.Time
	rates     rates
	lateDelay time.Duration
	start     time.Time // Config.Now at New: CreatedTimestamp, OptedOutTimestamp
	nonce     uint64    // distinguishes message ids of different sandboxes

	listed   bool                 // Numbers or Pools restrict the identities
	numbers  []Number             // Config.Numbers, defaults filled in
	pools    []Pool               // Config.Pools, defaults filled in
	byName   map[string]*identity // a listed identity by phone number or ID
	unlisted sync.Map             // identity as sent -> *identity, when not listed
	lists    map[string][]string  // opt-out lists, deduplicated, in Config order
	optedOut map[string]map[string]bool
	sets     map[string]bool // Config.ConfigurationSets
	always   map[string]bool // Config.ThrottleAlways

	tallyMu sync.Mutex
	tallies map[string]int // destination + context -> attempts drawn

	seq   atomic.Uint64 // message and request ids
	stats counters

	events    *events // nil without Config.Events or Queue
	queue     *queue  // nil without Config.Queue
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// identity is an origination identity's state: its budget and figures.
// Each has its own lock, so sends from different identities never contend.
type identity struct {
	key    string // Stats.Identities key
	phone  string // originationPhoneNumber in events
	list   string // the opt-out list that applies
	always bool   // ThrottleAlways names it

	mu   sync.Mutex
	b    *budget
	w    *strictWindow // Config.StrictWindow: every send, counted at arrival; nil otherwise
	sent *strictWindow // strict: the sent messages alone, for MaxWindowParts
	st   IdentityStats
}

// newIdentity returns an identity allowed mps parts a second (newBudget's
// rule), with the strict window if the sandbox counts one.
func (s *Server) newIdentity(key, phone, list string, always bool, mps float64) *identity {
	id := &identity{key: key, phone: phone, list: list, always: always, b: newBudget(mps)}
	if s.cfg.StrictWindow {
		id.w, id.sent = newStrictWindow(mps), newStrictWindow(mps)
	}
	return id
}

// New returns a Server for cfg. It panics if cfg.Validate fails: check
// configurations built from user input with Validate first.
func New(cfg Config) *Server {
	return newServer(cfg, realAfter)
}

// newServer is New with the timer behind events injectable, so tests fire
// events by hand instead of sleeping.
func newServer(cfg Config, after afterFunc) *Server {
	if err := cfg.Validate(); err != nil {
		panic("smssandbox: " + err.Error())
	}
	s := &Server{
		cfg:       cfg,
		now:       cfg.Now,
		lateDelay: cfg.LateDelay,
		nonce:     rand.Uint64(),
		numbers:   cfg.numbers(),
		pools:     cfg.pools(),
		byName:    map[string]*identity{},
		lists:     map[string][]string{defaultList: nil},
		optedOut:  map[string]map[string]bool{},
		sets:      map[string]bool{},
		always:    map[string]bool{},
		tallies:   map[string]int{},
		done:      make(chan struct{}),
		rates: rates{
			throttle: cfg.ThrottleRate, internal: cfg.InternalRate,
			late: cfg.LateRate, fail: cfg.FailRate, eventDelay: cfg.EventDelay,
			reply: cfg.ReplyRate, stop: cfg.StopRate, help: cfg.HelpRate, replyDelay: cfg.ReplyDelay,
		},
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.start = s.now()
	if s.lateDelay <= 0 {
		s.lateDelay = 60 * time.Second
	}
	if s.rates.eventDelay <= 0 {
		s.rates.eventDelay = 2 * time.Second
	}
	if s.rates.replyDelay <= 0 {
		s.rates.replyDelay = time.Second
	}
	for _, name := range cfg.ThrottleAlways {
		s.always[name] = true
		if _, id, ok := arnResource(name); ok {
			s.always[id] = true
		}
	}
	for _, name := range cfg.ConfigurationSets {
		s.sets[name] = true
	}
	for name, phones := range cfg.OptOuts {
		seen := map[string]bool{}
		for _, p := range phones {
			p = e164(p)
			if !seen[p] {
				seen[p] = true
				s.lists[name] = append(s.lists[name], p)
			}
		}
		s.optedOut[name] = seen
	}
	s.listed = len(s.numbers)+len(s.pools) > 0
	for _, n := range s.numbers {
		if _, ok := s.lists[n.OptOutList]; !ok {
			s.lists[n.OptOutList] = nil
		}
		id := s.newIdentity(n.PhoneNumber, n.PhoneNumber, n.OptOutList, s.always[n.PhoneNumber] || s.always[n.ID], s.mps(n.MPS))
		s.byName[n.PhoneNumber], s.byName[n.ID] = id, id
	}
	for _, p := range s.pools {
		if _, ok := s.lists[p.OptOutList]; !ok {
			s.lists[p.OptOutList] = nil
		}
		mps, phone := p.MPS, p.ID
		if len(p.Numbers) > 0 {
			phone = s.byName[p.Numbers[0]].phone
		}
		if mps == 0 {
			mps = poolMPS(p, s)
		}
		id := s.newIdentity(p.ID, phone, p.OptOutList, s.always[p.ID], mps)
		s.byName[p.ID] = id
	}
	if cfg.Queue {
		s.queue = newQueue(s.now, cfg.QueueVisibility)
	}
	if cfg.Events != nil || cfg.Queue {
		w := cfg.Events
		if w == nil {
			w = io.Discard
		}
		s.events = newEvents(w, s.now, after, &s.stats)
		if q := s.queue; q != nil {
			s.events.publish = q.add
		}
		if cfg.ReplyRate > 0 {
			Signer() // its key takes a moment to make: not under the events' lock at the first reply
		}
	}
	return s
}

// mps is an identity's parts per second: v, or Config.MPS for 0, or 1 for
// both 0. Negative is unlimited (newBudget's rule).
func (s *Server) mps(v float64) float64 {
	if v == 0 {
		v = s.cfg.MPS
	}
	if v == 0 {
		v = 1
	}
	return v
}

// poolMPS is the sum of the pool's numbers' parts per second: unlimited if
// one of them is, Config.MPS for a pool without numbers.
func poolMPS(p Pool, s *Server) float64 {
	if len(p.Numbers) == 0 {
		return s.mps(0)
	}
	sum := 0.0
	for _, m := range p.Numbers {
		v := s.mps(s.number(m).MPS)
		if v < 0 {
			return -1
		}
		sum += v
	}
	return sum
}

// number finds a listed number by phone number or ID.
func (s *Server) number(name string) Number {
	for _, n := range s.numbers {
		if n.ID == name || n.PhoneNumber == name {
			return n
		}
	}
	return Number{}
}

// Close stops the event timers and writes every pending event at once,
// stamped with its time or, if that is still to come, the time of writing;
// it releases answers held back by LateDelay or Latency. It returns the
// first error writing Events. Requests after Close answer
// ServiceUnavailableException (HTTP 503). Close is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		if s.events != nil {
			s.closeErr = s.events.close()
		}
	})
	return s.closeErr
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/_sandbox/stats" && r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(s.Stats())
		return
	}
	if s.queue != nil && strings.HasPrefix(r.Header.Get("X-Amz-Target"), sqsTarget) {
		s.queue.serve(w, r, s.done)
		return
	}
	reqID := s.newID()
	op, region, e := s.front(r)
	if e != nil {
		s.fail(w, reqID, e)
		return
	}
	var arrived time.Time // strict: when the send arrived, before its body
	if s.cfg.StrictWindow && op == "SendTextMessage" {
		arrived = s.now()
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20+1))
	if err != nil {
		return // the client went away
	}
	if len(body) > 1<<20 {
		s.fail(w, reqID, newError(http.StatusRequestEntityTooLarge, typeSerialization, "Request body is larger than 1 MB."))
		return
	}
	if op == "SendTextMessage" {
		s.stats.requests.Add(1)
	} else {
		s.stats.reads.Add(1)
	}
	if e := s.accountWide(op); e != nil {
		s.fail(w, reqID, e)
		return
	}
	var v any
	switch op {
	case "SendTextMessage":
		s.send(w, r, reqID, body, arrived)
		return
	case "DescribeOptedOutNumbers":
		v, e = s.describeOptedOut(body, region)
	case "DescribePhoneNumbers":
		v, e = s.describePhoneNumbers(body, region)
	case "DescribePools":
		v, e = s.describePools(body, region)
	}
	if e != nil {
		s.fail(w, reqID, e)
		return
	}
	writeJSON(w, reqID, v)
}

// operations the sandbox serves.
var operations = map[string]bool{
	"SendTextMessage": true, "DescribeOptedOutNumbers": true, "DescribePhoneNumbers": true, "DescribePools": true,
}

// front does what AWS's front end does before an operation runs: the
// signature's presence, the protocol, the operation. It returns the
// operation and the region of the credential scope.
func (s *Server) front(r *http.Request) (op, region string, e *apiError) {
	select {
	case <-s.done:
		return "", "", newError(http.StatusServiceUnavailable, typeUnavailable, "The sandbox is closed.")
	default:
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return "", "", newError(http.StatusForbidden, typeMissingAuth, "Missing Authentication Token")
	}
	cred, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 Credential=")
	if !ok {
		return "", "", newError(http.StatusBadRequest, typeIncompleteSig,
			"Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' parameter. Authorization=%s", firstWord(auth))
	}
	// AKID/date/region/service/aws4_request: the region goes into ARNs.
	region = "us-east-1"
	if scope := strings.Split(strings.SplitN(cred, ",", 2)[0], "/"); len(scope) == 5 && scope[2] != "" {
		region = scope[2]
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	target := r.Header.Get("X-Amz-Target")
	op, ok = strings.CutPrefix(target, targetPrefix)
	if r.Method != http.MethodPost || r.URL.Path != "/" || mt != contentType || !ok || !operations[op] {
		return "", "", newError(http.StatusBadRequest, typeUnknownOperation,
			"The sandbox serves POST / with Content-Type %s and X-Amz-Target %s{SendTextMessage,DescribeOptedOutNumbers,DescribePhoneNumbers,DescribePools}; got %s %s, %q, %q.",
			contentType, targetPrefix, r.Method, r.URL.Path, mt, target)
	}
	return op, region, nil
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}

// accountWide answers the account errors that come before any operation
// runs: an expired token, a policy that denies the action.
func (s *Server) accountWide(op string) *apiError {
	switch s.cfg.AccountError {
	case Expired:
		return newError(http.StatusBadRequest, typeExpiredToken, "The security token included in the request is expired")
	case AccessDenied:
		return newError(http.StatusBadRequest, typeAccessDenied,
			"User: arn:aws:iam::%s:user/bulksend is not authorized to perform: sms-voice:%s because no identity-based policy allows the sms-voice:%s action", account, op, op)
	}
	return nil
}

// accountSend answers the account errors of a valid send.
func (s *Server) accountSend() *apiError {
	switch s.cfg.AccountError {
	case NoIdentity:
		return conflict("NO_ORIGINATION_IDENTITIES_FOUND", "account", account,
			"No origination identities were found that can send to the destination.")
	case SpendLimit:
		e := newError(http.StatusBadRequest, typeQuota, "The account has reached its monthly spend limit for text messages.")
		e.Reason = "MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT"
		return e
	}
	return nil
}

// fail counts an error answer and writes it.
func (s *Server) fail(w http.ResponseWriter, reqID string, e *apiError) {
	s.stats.countError(e)
	writeError(w, reqID, e)
}

// latency draws an answer's delay (fake.Latency).
func (s *Server) latency() time.Duration { return fake.Latency(s.cfg.Latency, s.cfg.Jitter) }

// LongestHold is the longest the server keeps an answer back on purpose:
// the most latency can draw and a late answer's LateDelay. An http.Server
// serving it must allow more than this to write an answer (its
// WriteTimeout), or late answers are cut off instead of timing out at the
// client.
func (s *Server) LongestHold() time.Duration {
	return fake.LongestLatency(s.cfg.Latency, s.cfg.Jitter) + s.lateDelay
}

// delay waits d; it reports false if the client went away first. Close
// ends the wait early (and the answer is then written).
func (s *Server) delay(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.done:
		return true
	case <-ctx.Done():
		return false
	}
}

// newID returns a fresh id shaped like a UUID (version 4), as AWS's
// MessageId and x-amzn-RequestId are.
func (s *Server) newID() string {
	x := s.seq.Add(1)
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], fake.Mix(s.nonce^x))
	binary.BigEndian.PutUint64(b[8:], fake.Mix(^s.nonce+x))
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// hexID is 32 hex digits derived from s: the tail of a made-up resource id.
func hexID(s string) string {
	h := fnv.New128a()
	h.Write([]byte(s))
	return hex.EncodeToString(h.Sum(nil))
}

func arn(region, resource string) string {
	return fmt.Sprintf("arn:aws:sms-voice:%s:%s:%s", region, account, resource)
}

// arnResource returns the resource type and id of an sms-voice ARN
// ("phone-number", "phone-…"), whatever its region and account.
func arnResource(s string) (typ, id string, ok bool) {
	if !strings.HasPrefix(s, "arn:") {
		return "", "", false
	}
	i := strings.LastIndexByte(s, ':')
	typ, id, ok = strings.Cut(s[i+1:], "/")
	return typ, id, ok && id != ""
}

// Beside serves sms to the requests of the AWS protocol (an X-Amz-Target
// header; its counters at /_sandbox/sms/stats) and other to the rest: the
// two sandboxes on one address.
func Beside(sms, other http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("X-Amz-Target") != "":
			sms.ServeHTTP(w, r)
		case r.URL.Path == "/_sandbox/sms/stats":
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/_sandbox/stats"
			sms.ServeHTTP(w, r2)
		default:
			other.ServeHTTP(w, r)
		}
	})
}
