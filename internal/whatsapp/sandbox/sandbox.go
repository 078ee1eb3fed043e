// Package sandbox is a fake WhatsApp Cloud API: an http.Handler that answers
// send-message requests the way Meta does, including the parts a bulk sender
// must survive — expired tokens, unknown templates, parameters that do not
// fit the template's definition, per-number throughput limits (130429), pair
// rate limits (131056), transient 5xx, permanent failures, answers that
// never arrive although the message was sent, and status webhooks that come
// when they happen (sent, then delivered seconds later, read later still),
// a few duplicated or late, posted with Meta's retries. Recipients talk
// back too, a few seconds after delivery: text replies (some a stop
// keyword), taps of the template's quick-reply buttons (the marketing
// opt-out among them) and stops of marketing messages (user_preferences),
// after which marketing sends to them fail 131050. It also lists its
// template definitions as GET message_templates does.
//
// It rehearses the account rules of 2025–2026 as well (the team's fact
// sheet on Meta's limits): a number's quality, throughput level, messaging
// limit and health status read with GET /{phone-number-id}; numbers whose
// every send answers an account error (131048, 131037, 33…); marketing
// templates refused on Cloud API (131063); messages held for quality
// assessment, some later dropped with 132015; the per-user marketing cap
// (131049) in webhooks; the Marketing Messages API with its own errors and
// the marketing_lite pricing category; and the X-Business-Use-Case-Usage
// header of a business account whose call budget runs out.
//
// It serves three callers: the engine's tests, `bulksend run --sandbox`
// (in process) and `bulksend sandbox` (a separate process on 127.0.0.1 for
// rehearsals). Shapes follow Meta's documentation (the team's fact sheet,
// kept outside this repository) and are checked against Meta's OpenAPI
// document (testdata/openapi) in the tests.
//
// Everything random is derived from Config.Seed and the message itself (see
// Config.Seed), so a run can be replayed and concurrency cannot change which
// message fails.
package sandbox

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/bulksend/bulksend/internal/fake"
	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// DefaultWABAID is the sandbox's business account unless Config.WABAID
// says otherwise: the --waba of a rehearsal.
const DefaultWABAID = "100000000000001"

// Template is an approved message template known to the sandbox by its name
// and body parameter count only; Config.Definitions knows templates whole.
type Template struct {
	Name      string
	Languages []string // language codes it is approved in; empty = any
	// BodyParams is the number of parameters the body component takes; a
	// request with another count answers 132000.
	BodyParams int
	// Category is reported in webhook pricing (marketing, utility,
	// authentication…); "" means "marketing".
	Category string
}

// Config describes the sandbox's behaviour. The zero value is a well-behaved
// Cloud API: any token and template accepted, 80 messages/s per number, a
// 6-second pair limit, no injected failures, no webhooks.
//
// Rates are fractions in [0, 1]. TransientRate, PermanentRate and LateRate
// partition the requests that pass validation and the limits, so their sum
// should not exceed 1.
type Config struct {
	// Seed makes outcomes reproducible. The fate of a request is a hash of
	// (Seed, to, biz_opaque_callback_data, attempt), where attempt counts
	// the requests for the same callback data (or, without one, the same
	// recipient) that got past validation and the rate limits; requests
	// rejected earlier do not use up a draw. Concurrency therefore changes
	// which requests are throttled but not what happens to a given attempt.
	Seed int64

	Token        string // the accepted bearer token; "" accepts any non-empty token
	ExpiredToken string // this token answers 190 (HTTP 401)

	// Templates is the simple registry. An unknown name or language answers
	// 132001 (HTTP 404), a wrong number of body parameters 132000. When
	// both Templates and Definitions are empty, any template is accepted.
	Templates []Template

	// Definitions are templates as Meta defines them (see DefaultTemplates
	// and LoadDefinitions). A send naming one's name and language is checked
	// against it as the Cloud API would, with Meta's error codes: the
	// template's status, then its header, body and button parameters. A
	// name found in neither registry answers 132001. Definitions are also
	// what GET /{WABA-ID}/message_templates lists.
	Definitions []template.Definition

	// PhoneNumberIDs are the sender numbers that exist; a request for
	// another answers code 100 (HTTP 400) as Graph does for unknown objects.
	// Empty accepts any all-digit id.
	PhoneNumberIDs []string

	// Rate is the messages per second a phone number may send, enforced
	// over a sliding one-second window: a message is throttled (130429, HTTP
	// 400) when the number already had floor(Rate) (at least 1) accepted
	// messages in the preceding second. Only accepted messages count
	// (StrictWindow counts every request). 0 means 80 (Meta's
	// default); negative disables the limit. Rates overrides it per
	// phone-number-id, with the same conventions.
	Rate  float64
	Rates map[string]float64

	// StrictWindow counts Rate the strictest way, the one rehearsals and
	// benchmarks should meet: every request to a number's send endpoints
	// (messages, marketing_messages) counts in the number's sliding second
	// at its arrival, whatever its answer (accepted, throttled,
	// pair-limited, transient or permanent failure, refused for its token
	// or its body), and a request that finds floor(Rate) requests arrived
	// in the second before it is throttled (130429). Arrival is when the
	// handler has the request, after ArrivalJitter and before its token,
	// body and limits are looked at; its latency follows. The answers that
	// come before the limits still come first (a bad token is answered
	// 190, counted or not).
	//
	// Without it the window is kinder: it holds accepted messages only,
	// at the instant each was accepted (its body read, parsed and checked),
	// so a refused request leaves no trace and a client that retries a
	// throttled one at once pays nothing for it. Fates (see Seed) do not
	// depend on the mode: a request the limit throttles draws no fate in
	// either.
	StrictWindow bool

	// PairInterval is the pair rate limit: a second accepted message from
	// the same number to the same recipient within this interval answers
	// 131056. 0 means 6s; negative disables. (Meta also allows a burst of
	// 45 that borrows from later quota; the sandbox does not.)
	PairInterval time.Duration

	// Latency ± a uniform Jitter delays every answer. It comes after the
	// limits count the request, so it bunches nothing.
	Latency, Jitter time.Duration

	// ArrivalJitter delays each request by a uniform 0–2×ArrivalJitter
	// before the limits count it (±ArrivalJitter about its mean): a
	// network that bunches requests sent evenly spaced, as the per-number
	// limit sees them.
	ArrivalJitter time.Duration

	// TransientRate is the fraction answered with a transient error, split
	// evenly between 131000 (HTTP 500), 131016 (HTTP 500 or 503) and a bare
	// Graph code 2 (HTTP 503). Nothing is sent for them.
	TransientRate float64
	// PermanentRate is the fraction answered 131026 (HTTP 400).
	PermanentRate float64
	// LateRate is the fraction accepted (counted, webhooks emitted) whose
	// answer is held back for LateDelay, so the client times out not knowing
	// whether the message went out. The wait ends early when the request's
	// context is cancelled or the sandbox is closed.
	LateRate  float64
	LateDelay time.Duration // 0 means 60s

	// FailRate is the fraction of accepted messages whose webhooks end in
	// failed (131049, or 131026 after a sent) instead of delivered. It
	// applies to the messages neither dropped after being held
	// (HeldFailRate) nor capped (MarketingCapRate).
	FailRate float64
	// ReadRate is the fraction of delivered messages that are also read.
	ReadRate float64
	// DuplicateRate is the fraction of accepted messages one of whose status
	// webhooks is delivered twice: the same body (the same bytes, the same
	// timestamp) again up to a second later, as Meta redelivers a webhook
	// whose acknowledgement it did not get. ReorderRate is the fraction of
	// messages (with two statuses or more) one of whose statuses arrives
	// late, up to a second after the status that follows it (a sent after
	// its delivered, say), as when Meta's first delivery of it failed or
	// its concurrent deliveries overtook each other. A late status keeps
	// the timestamp of its event: timestamps tell the order things
	// happened, arrival does not.
	DuplicateRate, ReorderRate float64

	// SentDelay, DeliveredDelay and ReadDelay time the status webhooks of
	// an accepted message: sent comes SentDelay after acceptance, delivered
	// (or failed) DeliveredDelay after sent, read ReadDelay after
	// delivered, and a held message's all later by its quality assessment
	// (up to ten minutes). Each status is emitted when its time comes and
	// stamped with that time, never a time still to come. A zero Delay
	// means the default: sent 0–1 s after acceptance, delivered 1–3 s
	// after sent, read 5–30 s after delivered. The times are drawn from the
	// message's fate (see Seed).
	SentDelay, DeliveredDelay, ReadDelay Delay

	// ReplyRate is the fraction of delivered messages whose recipient
	// replies with a text (a messages webhook with the recipient's
	// contact); StopRate is the fraction of those replies that are a stop
	// keyword ("STOP", "stop please", "Unsubscribe", "PARAR",
	// "désabonner"), the others free text ("Thanks!", "what time do you
	// open?"…).
	ReplyRate, StopRate float64
	// ButtonRate is the fraction of delivered messages of a template with
	// quick-reply buttons (other than the marketing opt-out) whose
	// recipient taps one: a button message in the context of the message
	// it answers, its payload the one the send gave the button, or else
	// its label. StopPromotionsRate is the fraction of delivered messages
	// of a marketing template with the opt-out button (a QUICK_REPLY
	// labelled "Stop promotions", as spring_sale has) whose recipient taps
	// it: payload and text "Stop promotions". Neither taps anything on a
	// template without such a button, nor on one of Templates (only
	// Definitions know buttons).
	ButtonRate, StopPromotionsRate float64
	// PreferenceStopRate is the fraction of delivered messages whose
	// recipient then stops marketing messages in WhatsApp: a
	// user_preferences webhook (category marketing_messages, value stop),
	// and from its time on every marketing message to them is accepted and
	// then fails 131050, for the life of the Server.
	//
	// Each of these is drawn on its own (a recipient may reply and also
	// stop marketing) from the message's fate (see Seed), and comes
	// ReplyDelay after the message's last status, delivered or read; the
	// zero Delay means 2–10 s. Their webhooks are written and POSTed as
	// the status webhooks are.
	PreferenceStopRate float64
	ReplyDelay         Delay

	// Webhooks, if set, receives one status-webhook POST body per line
	// (newline-delimited JSON) when it is emitted, as Meta would deliver
	// them: lines are in the order emitted, each flushed as it is written
	// (with Accepted's from whichever goroutine emits it, under one lock).
	// Statuses still to come when Close is called are written by Close; a
	// plain bytes.Buffer can be read only after Close.
	Webhooks io.Writer
	// WebhookURL, if set, receives each webhook body as a POST when it is
	// emitted, signed with X-Hub-Signature-256 when AppSecret is set. The
	// bodies of one message are posted one at a time, in order; a POST
	// that fails (no connection, a timeout or an answer other than 2xx) is
	// retried as Meta retries: once at once, then after WebhookBackoff,
	// doubling each time, WebhookTries POSTs in all. A body whose tries
	// all failed is dropped and counted (Stats.WebhookFailed). Meta goes
	// on for seven days; the sandbox compresses that to seconds.
	WebhookURL string
	AppSecret  string
	// WebhookTries bounds the POSTs of one body, the first included; 0
	// means 6 (with the default backoff the last is 15 s after the
	// first). 1 means no retry.
	WebhookTries int
	// WebhookBackoff is the wait before the second retry; each later wait
	// doubles it. 0 means 1s.
	WebhookBackoff time.Duration

	// Accepted, if set, receives one JSON line per accepted message (wamid,
	// phone_number_id, to, callback data, time, attempt, late, final
	// status, held, api, pricing category): the ground truth to reconcile
	// against. Written like Webhooks.
	//
	// The sandbox keeps a small record per callback data (attempts,
	// acceptances) for the life of the Server, to draw fates and count
	// duplicates: memory grows with the number of distinct messages.
	Accepted io.Writer

	// WABAID is the entry id in webhooks and the only WhatsApp Business
	// Account whose message_templates can be read; "" means
	// "100000000000001".
	WABAID string

	// Now is the clock for rate limits, webhook times and timestamps,
	// template sync (MMSyncFor) and the call budget (RegainAccessMinutes);
	// nil means time.Now. Delays (Latency, LateDelay) always use real
	// time, and so do the timers that emit webhooks: one set for a
	// status's time waits that time minus Now, in real time.
	Now func() time.Time

	// Numbers describes sender numbers by phone-number-id: what GET
	// /{phone-number-id} reports (quality, throughput level, messaging
	// limit, health status) and an account error every send from the
	// number answers (NumberInfo.SendError). A number not listed is a
	// healthy one (NumberInfo's zero value). PhoneNumberIDs, not Numbers,
	// decides which numbers exist.
	Numbers map[string]NumberInfo

	// MarketingOffOnCloudAPI is the WABA setting
	// disable_marketing_messages_on_cloud_api: a /messages send of a
	// marketing template answers 131063 (HTTP 400).
	MarketingOffOnCloudAPI bool

	// HeldRate is the fraction of accepted messages (of marketing and
	// utility templates: authentication templates are not paced) answered
	// message_status "held_for_quality_assessment" instead of "accepted".
	// HeldFailRate is the fraction of held messages later dropped: their
	// only webhook is failed with 132015 (the template was paused). The
	// others get their webhooks as any accepted message, later by up to
	// ten minutes.
	HeldRate, HeldFailRate float64

	// MarketingCapRate is the fraction of accepted marketing messages whose
	// webhooks are sent then failed 131049 (the per-user marketing cap). It
	// is drawn before FailRate, which applies to the rest.
	MarketingCapRate float64

	// USNumber, if set, tells US numbers (the area code decides within
	// +1): a marketing message to one is accepted, then fails 131049, as
	// WhatsApp has delivered no marketing templates to US numbers since
	// April 2025. The sandbox knows no numbering plan of its own.
	USNumber func(e164 string) bool

	// MMOnboarded says the WABA is onboarded to the Marketing Messages API
	// (POST /{phone-number-id}/marketing_messages). When it is, its sends
	// go out through that API: webhooks priced marketing_lite. When it is
	// not, a send with product_policy STRICT answers 134102 (HTTP 500) and
	// one with CLOUD_API_FALLBACK (the default) goes out through Cloud API:
	// webhooks priced marketing, or 131063 if MarketingOffOnCloudAPI.
	// Either way a non-marketing template answers 131055.
	MMOnboarded bool
	// MMSyncing names marketing templates still syncing with the ad
	// account: while onboarded, their Marketing Messages API sends answer
	// 134101 until MMSyncFor has passed since New (0 means 10 minutes, as
	// Meta says; negative means for the Server's life).
	MMSyncing []string
	MMSyncFor time.Duration

	// UsageAfter, if positive, makes every answer of the send endpoints
	// carry X-Business-Use-Case-Usage for the WABA, as Graph reports a
	// business account's call budget: call_count rising with the accepted
	// sends, and once UsageAfter sends are accepted a spent budget
	// (call_count 100) with estimated_time_to_regain_access counting down
	// RegainAccessMinutes; then a new budget starts. With 0
	// RegainAccessMinutes the budget stays spent, with 0 minutes to wait.
	// Sends are still accepted while it is spent (Meta's header is a
	// warning; the sandbox never answers 80007). 0 sends no header.
	UsageAfter          int64
	RegainAccessMinutes int
}

// Server is the fake Cloud API. It is an http.Handler serving
//
//	POST /{version}/{phone-number-id}/messages            (version optional, e.g. v23.0)
//	POST /{version}/{phone-number-id}/marketing_messages  the Marketing Messages API
//	GET  /{version}/{phone-number-id}                     the number's fields (Config.Numbers)
//	GET  /{version}/{WABA-ID}/message_templates           Config.Definitions, filtered and paged
//	GET  /_sandbox/stats                                   Stats as JSON
//
// It is safe for concurrent use. Close it to emit the webhooks still to
// come and release late answers.
type Server struct {
	cfg       Config
	now       func() time.Time
	pair      time.Duration
	lateDelay time.Duration
	rates     rates
	templates map[string][]Template
	defs      []template.Definition          // in Config order, for listing
	defIndex  map[string]template.Definition // name + "\x00" + language, for sends
	wabaID    string
	nonce     uint32 // distinguishes wamids of different sandbox instances

	start     time.Time       // Config.Now at New: MMSyncFor counts from it
	syncNames map[string]bool // Config.MMSyncing
	syncFor   time.Duration
	budget    *budget // nil without Config.UsageAfter

	numbers sync.Map // phone-number-id -> *number
	known   bool     // PhoneNumberIDs restricts the numbers

	tallies  [64]tallyShard
	hashSeed maphash.Seed

	seq atomic.Uint64 // wamid and fbtrace_id counter

	stats counters

	// the timing of status webhooks and of answers, defaults applied
	sentDelay, deliveredDelay, readDelay, replyDelay Delay

	// who stopped marketing messages (PreferenceStopRate), and when
	stopMu  sync.Mutex
	stopped map[string]time.Time // wa_id -> the stop's time

	done      chan struct{} // closed by Close: releases waiting answers
	out       *outbox       // nil when there is nothing to emit
	closeOnce sync.Once
	closeErr  error
}

// tallyShard counts, per message key, the attempts that reached a verdict and
// how many were accepted.
type tallyShard struct {
	mu sync.Mutex
	m  map[string]*tally
}

type tally struct{ seen, accepted int }

// New returns a Server for cfg. Its status webhooks (Webhooks, WebhookURL)
// are emitted by timers, its Accepted records as messages are accepted.
func New(cfg Config) *Server {
	return newServer(cfg, realAfter)
}

// newServer is New with the timers that emit webhooks and retry POSTs
// made by after.
func newServer(cfg Config, after afterFunc) *Server {
	s := &Server{
		cfg:       cfg,
		now:       cfg.Now,
		pair:      cfg.PairInterval,
		lateDelay: cfg.LateDelay,
		wabaID:    cfg.WABAID,
		templates: map[string][]Template{},
		hashSeed:  maphash.MakeSeed(),
		nonce:     rand.Uint32() & 0xffffff,
		done:      make(chan struct{}),
		rates: rates{
			transient: cfg.TransientRate, permanent: cfg.PermanentRate, late: cfg.LateRate,
			fail: cfg.FailRate, read: cfg.ReadRate, duplicate: cfg.DuplicateRate, reorder: cfg.ReorderRate,
			held: cfg.HeldRate, heldFail: cfg.HeldFailRate, capped: cfg.MarketingCapRate,
			reply: cfg.ReplyRate, stop: cfg.StopRate, button: cfg.ButtonRate,
			stopPromotions: cfg.StopPromotionsRate, prefStop: cfg.PreferenceStopRate,
		},
		stopped:   map[string]time.Time{},
		syncNames: map[string]bool{},
		syncFor:   cfg.MMSyncFor,
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.start = s.now()
	if s.syncFor == 0 {
		s.syncFor = defaultSyncFor
	}
	for _, name := range cfg.MMSyncing {
		s.syncNames[name] = true
	}
	if cfg.UsageAfter > 0 {
		s.budget = &budget{after: cfg.UsageAfter, regain: time.Duration(cfg.RegainAccessMinutes) * time.Minute}
	}
	if s.pair == 0 {
		s.pair = 6 * time.Second
	}
	s.sentDelay = cfg.SentDelay.or(defaultSentDelay)
	s.deliveredDelay = cfg.DeliveredDelay.or(defaultDeliveredDelay)
	s.readDelay = cfg.ReadDelay.or(defaultReadDelay)
	s.replyDelay = cfg.ReplyDelay.or(defaultReplyDelay)
	if s.lateDelay <= 0 {
		s.lateDelay = 60 * time.Second
	}
	if s.wabaID == "" {
		s.wabaID = DefaultWABAID
	}
	for _, t := range cfg.Templates {
		s.templates[t.Name] = append(s.templates[t.Name], t)
	}
	s.defs = slices.Clone(cfg.Definitions)
	s.defIndex = make(map[string]template.Definition, len(s.defs))
	for _, d := range s.defs {
		if k := d.Name + "\x00" + d.Language; s.defIndex[k].Name == "" { // the first wins
			s.defIndex[k] = d
		}
	}
	for _, id := range cfg.PhoneNumberIDs {
		s.known = true
		s.numbers.Store(id, s.newNumber(id))
	}
	for i := range s.tallies {
		s.tallies[i].m = map[string]*tally{}
	}
	var extra []int
	for _, n := range cfg.Numbers {
		if n.SendError != 0 {
			extra = append(extra, n.SendError)
		}
	}
	s.stats.init(extra)
	if cfg.Webhooks != nil || cfg.WebhookURL != "" || cfg.Accepted != nil {
		s.out = newOutbox(cfg, s.now, after, &s.stats)
	}
	return s
}

func (s *Server) newNumber(id string) *number {
	return &number{id: id, limit: s.limitOf(id), display: displayOf(id), strict: s.cfg.StrictWindow}
}

// limitOf is the messages a second number id may send (Config.Rate and
// Rates); 0: no limit.
func (s *Server) limitOf(id string) int {
	rate := s.cfg.Rate
	if r, ok := s.cfg.Rates[id]; ok {
		rate = r
	}
	switch {
	case rate == 0:
		return 80
	case rate > 0:
		return max(1, int(rate))
	}
	return 0
}

// level is the throughput level a number reports by default: the one of
// the limit the sandbox enforces for it.
func (s *Server) level(id string) string {
	if l := s.limitOf(id); l == 0 || l > 80 {
		return "HIGH"
	}
	return "STANDARD"
}

func (s *Server) number(id string) (*number, bool) {
	if n, ok := s.numbers.Load(id); ok {
		return n.(*number), true
	}
	if s.known {
		return nil, false
	}
	n, _ := s.numbers.LoadOrStore(id, s.newNumber(id))
	return n.(*number), true
}

// Close is Shutdown without a deadline: it waits for every webhook POST to
// be acknowledged or to use up its tries.
func (s *Server) Close() error {
	return s.Shutdown(context.Background())
}

// Shutdown releases answers held back by LateDelay or Latency and emits
// every status webhook still to come at once, each stamped with the time
// it is emitted (never its own time, which is still to come), those of
// one message in the order they would have arrived: every final status is
// in Webhooks when Shutdown returns, so a reconcile of the log leaves no
// row in doubt that the sandbox accepted. It then waits until every POST
// to WebhookURL is acknowledged or has used up its tries, retries keeping
// their backoff; when ctx is done first, the POSTs in flight are cancelled
// and those still to retry dropped, all counted in Stats.WebhookFailed.
// It returns the first error writing Webhooks or Accepted. Requests
// arriving after it answer code 2 (HTTP 503). It is idempotent (a second
// call returns the first's error at once); Close and Shutdown share it.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closeOnce.Do(func() {
		close(s.done)
		if s.out != nil {
			s.closeErr = s.out.close(ctx)
		}
	})
	return s.closeErr
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.Trim(r.URL.Path, "/")
	if path == "_sandbox/stats" {
		if r.Method != http.MethodGet {
			s.writeError(w, unsupportedRequest(strings.ToLower(r.Method)))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(s.Stats())
		return
	}
	parts := strings.Split(path, "/")
	version := ""
	if isVersion(parts[0]) && (len(parts) == 3 || (len(parts) == 2 && isDigits(parts[1]))) {
		version, parts = parts[0], parts[1:]
	}
	if len(parts) == 2 && parts[1] == "message_templates" {
		// Counted apart: Requests is what a campaign sends.
		s.stats.templateReads.Add(1)
		if s.refuse(w, r, http.MethodGet) {
			return
		}
		s.listTemplates(w, r, parts[0])
		return
	}
	if len(parts) == 1 && isDigits(parts[0]) {
		// Counted apart, like template reads.
		s.stats.numberReads.Add(1)
		if s.refuse(w, r, http.MethodGet) {
			return
		}
		s.readNumber(w, r, parts[0])
		return
	}
	s.stats.requests.Add(1)
	a := messagesAPI
	if len(parts) == 2 && parts[1] == "marketing_messages" {
		a = marketingAPI
		s.stats.mmRequests.Add(1)
	}
	if len(parts) != 2 || (parts[1] != "messages" && a != marketingAPI) || !isDigits(parts[0]) {
		s.fail(w, unknownObject(strings.ToLower(r.Method), strings.Join(parts, "/")))
		return
	}
	if s.budget != nil {
		w = &usageWriter{ResponseWriter: w, s: s}
	}
	if s.refuse(w, r, http.MethodPost) {
		return
	}
	s.send(w, r, version, parts[0], a)
}

// refuse answers a request with another method than method, or one
// arriving after Close, and reports whether it did.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method != method {
		s.fail(w, unsupportedRequest(strings.ToLower(r.Method)))
		return true
	}
	select {
	case <-s.done:
		s.fail(w, errService)
		return true
	default:
		return false
	}
}

// send handles POST /{version}/{phone-number-id}/messages and
// /marketing_messages.
func (s *Server) send(w http.ResponseWriter, r *http.Request, version, phoneID string, a api) {
	var (
		at   time.Time // when the limits count the request
		full bool      // strict: the number's window was full when it arrived
	)
	strict := s.cfg.StrictWindow
	if strict {
		// Counted as it arrives, whatever follows: the network's bunching
		// comes before, the answer's latency after.
		if !s.arrivalJitter(r.Context()) {
			return
		}
		at = s.now()
		if num, ok := s.number(phoneID); ok {
			full = num.arrive(at)
		}
	}
	if f := s.auth(r); f.code != 0 {
		s.fail(w, f)
		return
	}
	num, ok := s.number(phoneID)
	if !ok {
		s.fail(w, unknownObject("post", phoneID))
		return
	}
	body, err := readBody(r, 1<<20+1)
	if err != nil {
		return // the client went away
	}
	req, tmpl, f := s.parse(body, a)
	if f.code != 0 {
		s.fail(w, f)
		return
	}
	if !strict {
		if !s.arrivalJitter(r.Context()) {
			return
		}
		at = s.now()
	}
	rt, f := s.route(num.id, a, req, tmpl, at)
	if f.code != 0 {
		s.fail(w, f)
		return
	}
	waID := strings.TrimPrefix(req.To, "+")

	key := req.BizOpaqueCallbackData
	if key == "" {
		key = "\x00" + waID
	}
	shard := &s.tallies[maphash.String(s.hashSeed, key)%uint64(len(s.tallies))]

	var (
		ft      fate
		attempt int
	)
	f = num.admit(at, waID, s.pair, full, func() bool {
		shard.mu.Lock()
		defer shard.mu.Unlock()
		t := shard.m[key]
		if t == nil {
			t = &tally{}
			shard.m[key] = t
		}
		t.seen++
		attempt = t.seen
		ft = draw(s.cfg.Seed, waID, req.BizOpaqueCallbackData, attempt, s.rates, strings.ToLower(tmpl.Category))
		if s.cfg.USNumber != nil && strings.EqualFold(tmpl.Category, "marketing") && s.cfg.USNumber("+"+waID) {
			// WhatsApp delivers no marketing templates to US numbers: 131049.
			ft.usMarketing()
		}
		if s.rates.prefStop > 0 && strings.EqualFold(tmpl.Category, "marketing") && s.stoppedBy(waID, at) {
			// The recipient stopped marketing messages (a user_preferences
			// stop): 131050.
			ft.stoppedMarketing()
		}
		if ft.outcome != accepted && ft.outcome != late {
			return false
		}
		t.accepted++
		if t.accepted > 1 && req.BizOpaqueCallbackData != "" {
			s.stats.duplicates.Add(1)
		}
		return true
	})
	switch {
	case f.code == codeThrottled:
		s.stats.throttled.Add(1)
	case f.code == codePairLimited:
		s.stats.pairLimited.Add(1)
	case f.code != 0:
	case ft.outcome == transient:
		f = ft.transient
	case ft.outcome == permanent:
		f = errUndeliverable
	}
	if f.code != 0 {
		if s.delay(r.Context(), s.latency()) {
			s.fail(w, f)
		}
		return
	}

	s.stats.accepted.Add(1)
	if s.budget != nil {
		s.budget.spend(at)
	}
	switch {
	case rt.lite:
		s.stats.mmLite.Add(1)
	case rt.fallback:
		s.stats.mmFallback.Add(1)
	}
	status := statusAccepted
	if ft.held {
		status = statusHeld
		s.stats.held.Add(1)
	}
	wamid := s.wamid(waID)
	s.emit(num, version, wamid, req, waID, tmpl, rt, a, at, attempt, ft)

	d := s.latency()
	if ft.outcome == late {
		s.stats.late.Add(1)
		d += s.lateDelay
	}
	if !s.delay(r.Context(), d) {
		return
	}
	w.Header()["Content-Type"] = jsonContentType
	w.Write(appendSendResponse(make([]byte, 0, 256), req.To, waID, wamid, status, a == marketingAPI))
}

// jsonContentType is the Content-Type of every answer, shared rather than
// built per answer.
var jsonContentType = []string{"application/json; charset=UTF-8"}

// appendSendResponse appends the answer to an accepted send, the bytes
// json.Marshal writes for its sendResponse. Its strings need no escaping:
// a phone number (isPhone), its digits, a wamid (base64) and a status.
func appendSendResponse(b []byte, to, waID, wamid, status string, success bool) []byte {
	b = append(b, `{"messaging_product":"whatsapp","contacts":[{"input":"`...)
	b = append(b, to...)
	b = append(b, `","wa_id":"`...)
	b = append(b, waID...)
	b = append(b, `"}],"messages":[{"id":"`...)
	b = append(b, wamid...)
	b = append(b, `","message_status":"`...)
	b = append(b, status...)
	b = append(b, `"}]`...)
	if success {
		b = append(b, `,"success":true`...)
	}
	return append(b, '}')
}

// readBody reads at most limit bytes of r's body: into one buffer of the
// size the request gives, when it gives one.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength < 0 || r.ContentLength > limit {
		return io.ReadAll(io.LimitReader(r.Body, limit))
	}
	// net/http ends the body at Content-Length: a shorter one is an error.
	b := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, b); err != nil {
		return nil, err
	}
	return b, nil
}

func (s *Server) auth(r *http.Request) failure {
	h := r.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return errNoToken
	}
	if s.cfg.ExpiredToken != "" && token == s.cfg.ExpiredToken {
		return errExpiredToken
	}
	if s.cfg.Token != "" && token != s.cfg.Token {
		return errBadToken
	}
	return failure{}
}

// parse validates a send request the way the Cloud API does, in its order:
// JSON, messaging_product, recipient, type, template. The Marketing
// Messages API also checks product_policy and that the template is a
// marketing one (131055), before its parameters.
func (s *Server) parse(body []byte, a api) (sendRequest, Template, failure) {
	var req sendRequest
	if len(body) > 1<<20 {
		return req, Template{}, invalidParam("Request body is larger than 1 MB.")
	}
	if !decodeSend(body, &req) {
		req = sendRequest{}
		if err := json.Unmarshal(body, &req); err != nil {
			return req, Template{}, invalidParam("Request body is not valid JSON: " + err.Error())
		}
	}
	switch {
	case req.MessagingProduct == "":
		return req, Template{}, invalidParam("The parameter messaging_product is required.")
	case req.MessagingProduct != "whatsapp":
		return req, Template{}, invalidParam("Param messaging_product must be 'whatsapp'.")
	case req.RecipientType != "" && req.RecipientType != "individual":
		return req, Template{}, invalidParam("The sandbox supports recipient_type 'individual' only.")
	case req.To == "":
		return req, Template{}, missingParam("to")
	case !isPhone(req.To):
		return req, Template{}, waError(codeBadValue, "Parameter value is not valid", fmt.Sprintf("Invalid phone number %q.", req.To))
	case req.Type == "":
		return req, Template{}, missingParam("type")
	case req.Type != "template" && a == marketingAPI:
		return req, Template{}, invalidParam(fmt.Sprintf("The Marketing Messages API sends template messages only, not %q.", req.Type))
	case req.Type != "template":
		return req, Template{}, waError(codeUnsupported, "Unsupported message type", fmt.Sprintf("The sandbox supports template messages only, not %q.", req.Type))
	case utf8.RuneCountInString(req.BizOpaqueCallbackData) > 512:
		return req, Template{}, invalidParam("Param biz_opaque_callback_data must be at most 512 characters long.")
	case req.Template == nil:
		return req, Template{}, missingParam("template")
	case req.Template.Name == "":
		return req, Template{}, missingParam("template.name")
	case req.Template.Language == nil || req.Template.Language.Code == "":
		return req, Template{}, missingParam("template.language.code")
	}
	if a == marketingAPI {
		if f := marketingFields(&req); f.code != 0 {
			return req, Template{}, f
		}
	}
	name, lang := req.Template.Name, req.Template.Language.Code
	if d, ok := s.definition(name, lang); ok {
		category := cmp.Or(strings.ToLower(d.Category), "marketing")
		if a == marketingAPI && category != "marketing" {
			return req, Template{}, notMarketing(d.Name, category)
		}
		if f := check(d, req.Template); f.code != 0 {
			return req, Template{}, f
		}
		return req, Template{Name: d.Name, Category: category}, failure{}
	}
	params := 0
	for _, c := range req.Template.Components {
		if strings.EqualFold(c.Type, "body") {
			params += len(c.Parameters)
		}
	}
	if len(s.templates) == 0 && len(s.defs) == 0 {
		return req, Template{Name: name, Category: "marketing"}, failure{}
	}
	for _, t := range s.templates[name] {
		if len(t.Languages) > 0 && !slices.Contains(t.Languages, lang) {
			continue
		}
		if a == marketingAPI && t.Category != "" && !strings.EqualFold(t.Category, "marketing") {
			return req, Template{}, notMarketing(t.Name, t.Category)
		}
		if params != t.BodyParams {
			return req, t, waError(codeParamCount, "Number of parameters does not match the expected number of params",
				fmt.Sprintf("body: number of localizable_params (%d) does not match the expected number of params (%d)", params, t.BodyParams))
		}
		if t.Category == "" {
			t.Category = "marketing"
		}
		return req, t, failure{}
	}
	return req, Template{}, noTemplate(name, lang)
}

func noTemplate(name, lang string) failure {
	return waError(codeNoTemplate, "Template name does not exist in the translation",
		fmt.Sprintf("template name (%s) does not exist in %s", name, lang))
}

// definition finds the definition of name in lang.
func (s *Server) definition(name, lang string) (template.Definition, bool) {
	d, ok := s.defIndex[name+"\x00"+lang]
	return d, ok
}

// fail counts a Graph error answer and writes it.
func (s *Server) fail(w http.ResponseWriter, f failure) {
	if c := s.stats.errors[f.code]; c != nil {
		c.Add(1)
	}
	s.writeError(w, f)
}

func (s *Server) writeError(w http.ResponseWriter, f failure) {
	e := apiError{
		Message:      f.message,
		Type:         "OAuthException",
		Code:         f.code,
		ErrorSubcode: f.subcode,
		IsTransient:  f.transient,
		FBTraceID:    s.traceID(),
	}
	if !f.graph {
		e.ErrorData = &errorData{MessagingProduct: "whatsapp", Details: f.details}
	}
	b, _ := json.Marshal(errorBody{Error: e})
	if f.code == codeToken || f.code == codePermission {
		w.Header().Set("WWW-Authenticate", `OAuth "Facebook Platform" "invalid_token" "`+f.message+`"`)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(f.status)
	w.Write(b)
}

// latency draws an answer's delay (fake.Latency).
func (s *Server) latency() time.Duration { return fake.Latency(s.cfg.Latency, s.cfg.Jitter) }

// arrivalJitter waits a uniform 0–2×ArrivalJitter, the network's delay
// before the limits see a request; it reports false if the client went
// away first.
func (s *Server) arrivalJitter(ctx context.Context) bool {
	if s.cfg.ArrivalJitter <= 0 {
		return true
	}
	return s.delay(ctx, time.Duration(rand.Float64()*float64(2*s.cfg.ArrivalJitter)))
}

// LongestHold is the longest the server keeps an answer back on purpose:
// a request's arrival jitter, the most latency can draw and a late
// answer's LateDelay. An http.Server serving it must allow more than this
// to write an answer (its WriteTimeout), or late answers are cut off
// instead of timing out at the client.
func (s *Server) LongestHold() time.Duration {
	return 2*max(s.cfg.ArrivalJitter, 0) + fake.LongestLatency(s.cfg.Latency, s.cfg.Jitter) + s.lateDelay
}

// delay waits d; it reports false if the client went away first. Close
// ends the wait early (and the answer is then written).
func (s *Server) delay(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
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

// wamid makes a message id shaped like Meta's: base64 of a small protobuf
// holding the recipient and an 18-character hex id (here: this sandbox's
// nonce and a counter), well under the documented 128-character maximum.
func (s *Server) wamid(waID string) string {
	b := make([]byte, 0, 64)
	b = append(b, 0x1c, 0x18, byte(len(waID)))
	b = append(b, waID...)
	b = append(b, 0x15, 0x02, 0x00, 0x11, 0x18, 0x12)
	b = appendHex(b, uint64(s.nonce), 6)
	b = appendHex(b, s.seq.Add(1), 12)
	b = append(b, 0x00)
	id := make([]byte, 0, len("wamid.")+base64.StdEncoding.EncodedLen(len(b)))
	return string(base64.StdEncoding.AppendEncode(append(id, "wamid."...), b))
}

// appendHex appends the n lowest hex digits of v, in upper case, as
// fmt's %0nX does for a v of n digits at most.
func appendHex(b []byte, v uint64, n int) []byte {
	for i := n - 1; i >= 0; i-- {
		b = append(b, "0123456789ABCDEF"[v>>(4*i)&0xf])
	}
	return b
}

func (s *Server) traceID() string {
	var b [16]byte
	x := s.seq.Add(1) ^ uint64(s.nonce)<<40
	binary.LittleEndian.PutUint64(b[:8], fake.Mix(x))
	binary.LittleEndian.PutUint64(b[8:], fake.Mix(^x))
	return "A" + base64.RawURLEncoding.EncodeToString(b[:])[:22]
}

func isVersion(s string) bool {
	v, ok := strings.CutPrefix(s, "v")
	maj, min, ok2 := strings.Cut(v, ".")
	return ok && ok2 && isDigits(maj) && isDigits(min)
}

// versionBefore24 reports whether the path version is older than v24.0,
// which still carries conversation objects in status webhooks. No version
// means the newest.
func versionBefore24(v string) bool {
	maj, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	n, err := strconv.Atoi(maj)
	return err == nil && n < 24
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isPhone accepts what E.164 allows: an optional '+' then 7 to 15 digits.
func isPhone(s string) bool {
	d := strings.TrimPrefix(s, "+")
	return len(d) >= 7 && len(d) <= 15 && isDigits(d)
}
