package smssandbox

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Number is an origination phone number the account owns.
type Number struct {
	ID          string  // PhoneNumberId, "phone-…"; "" makes one from PhoneNumber
	PhoneNumber string  // E.164; "" makes one (+1206555 and four digits)
	Type        string  // NumberType: TEN_DLC (""), TOLL_FREE, SHORT_CODE, LONG_CODE, SIMULATOR
	OptOutList  string  // its opt-out list; "" is "Default"
	MPS         float64 // parts per second; 0 is Config.MPS, negative unlimited
}

// Pool is a pool of origination numbers: a send naming it goes out from one
// of its numbers, and the pool's opt-out list applies. The sandbox gives a
// pool one budget of its own (as if AWS spread its traffic evenly over the
// numbers), separate from its numbers' budgets when they send directly.
type Pool struct {
	ID         string   // PoolId, "pool-…"; "" makes one from the pool's place in Config.Pools
	OptOutList string   // "" is "Default"
	Numbers    []string // phone numbers or IDs of Config.Numbers; events name the first as the origination number
	MPS        float64  // the pool's parts per second; 0 is the sum of its numbers' (Config.MPS without numbers)
}

// Account errors: every send answers the one Config.AccountError names.
// AccessDenied and Expired also answer the Describe operations, as IAM and
// the signature check come before any operation.
const (
	NoIdentity   = "no-identity"   // ConflictException NO_ORIGINATION_IDENTITIES_FOUND
	SpendLimit   = "spend-limit"   // ServiceQuotaExceededException MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT
	AccessDenied = "access-denied" // AccessDeniedException
	Expired      = "expired"       // ExpiredTokenException
)

// AccountErrors lists the values Config.AccountError takes besides "".
var AccountErrors = []string{NoIdentity, SpendLimit, AccessDenied, Expired}

// NumberTypes lists the values Number.Type takes besides "".
var NumberTypes = []string{"TEN_DLC", "TOLL_FREE", "SHORT_CODE", "LONG_CODE", "SIMULATOR"}

// Config describes the sandbox's behaviour. The zero value is a
// well-behaved account: any origination identity, 1 part per second each
// (the 10DLC default), no opt-outs, no injected failures, no events.
//
// Rates are fractions in [0, 1]. ThrottleRate, InternalRate and LateRate
// partition one draw, so their sum should not exceed 1.
type Config struct {
	// Seed makes outcomes reproducible. The fate of a send is a hash of
	// (Seed, destination, Context, attempt), where attempt counts the sends
	// with the same destination and Context that got past validation,
	// ThrottleAlways and the budget; sends refused earlier use no draw.
	// Concurrency therefore changes which sends the budget throttles, not
	// what happens to a given attempt.
	Seed int64

	// MPS is the message parts per second each origination identity may
	// send (see budget.go for the exact rule). 0 means 1, the 10DLC
	// default; negative means unlimited. Number.MPS overrides it.
	MPS float64

	// StrictWindow counts MPS the strictest way, the one rehearsals and
	// benchmarks should meet (see strict.go): every part of a send counts
	// in its identity's sliding second at the send's arrival, a k-part
	// message adding k at that instant, whatever its answer (sent,
	// throttled, opted out, refused for its size, country or price, a dry
	// run); a send is throttled when its parts would take the second past
	// floor(MPS) (at least 1). A message of more parts than that passes
	// only an empty window and stays k/MPS seconds in it. Arrival is when
	// the handler has the request, before its body is read; its latency
	// follows. Only sends naming an identity the account has are counted:
	// one refused before (its JSON, its members, an account error) names
	// none. The answers that come before the budget still come first.
	//
	// Without it the budget is kinder (budget.go): it charges sent
	// messages only, their parts 1/MPS apart, at the instant each is
	// checked. Fates (see Seed) do not depend on the mode.
	StrictWindow bool

	// Numbers are the account's phone numbers. A send names one by its
	// phone number, ID or ARN; another identity answers
	// ResourceNotFoundException. With neither Numbers nor Pools, any
	// identity is taken (phone number, phone-/pool- ID, ARN, sender ID),
	// each with its own budget of MPS and the Default opt-out list.
	Numbers []Number
	Pools   []Pool

	// OptOuts are opt-out lists by name: E.164 phone numbers. A send to a
	// number on its identity's list answers ConflictException
	// DESTINATION_PHONE_NUMBER_OPTED_OUT: nothing sent, no budget used.
	// DescribeOptedOutNumbers reads them. "Default" always exists.
	OptOuts map[string][]string

	// ConfigurationSets are the known configuration sets; a send naming
	// another answers ResourceNotFoundException. Empty: any.
	ConfigurationSets []string

	// PricePerPart is the price of a message part in US dollars by the
	// destination's calling-code prefix, the longest prefix winning
	// ("1": 0.00581, "44": 0.0463); others cost 0.0075. A MaxPrice below a
	// send's price (its parts at this price each; AWS's MaxPrice is per
	// message) answers ValidationException PRICE_OVER_THRESHOLD.
	PricePerPart map[string]float64

	// BlockedPrefixes are destination calling-code prefixes a protect
	// configuration blocks: ConflictException
	// DESTINATION_COUNTRY_BLOCKED_BY_PROTECT_CONFIGURATION.
	BlockedPrefixes []string

	// AccountError, one of AccountErrors, makes every send answer that
	// error.
	AccountError string

	// ThrottleAlways lists identities (as sent, or a listed number's or
	// pool's phone number, ID or ARN) whose every send is throttled.
	ThrottleAlways []string
	// ThrottleRate is the fraction of sends throttled besides the budget:
	// other traffic on the number.
	ThrottleRate float64
	// InternalRate is the fraction answered InternalServerException (HTTP
	// 500); half of them, by the seed, were sent all the same (budget
	// charged, event written).
	InternalRate float64
	// LateRate is the fraction accepted (counted, event written) whose
	// answer is held back LateDelay, so the client times out not knowing
	// whether the message went out. The wait ends early when the request's
	// context ends (no answer) or the sandbox is closed (the answer).
	LateRate  float64
	LateDelay time.Duration // 0 means 60s
	// FailRate is the fraction of sent messages whose final event is a
	// failure (TEXT_CARRIER_UNREACHABLE, TEXT_BLOCKED, TEXT_SPAM,
	// TEXT_INVALID or TEXT_TTL_EXPIRED, by the seed) instead of
	// TEXT_DELIVERED.
	FailRate float64

	// Latency ± a uniform Jitter delays every SendTextMessage answer.
	Latency, Jitter time.Duration

	// Events, if set, receives one AWS SMS event record per sent message,
	// a JSON object per line, written when the event happens: EventDelay
	// after acceptance (from half to one and a half of it, by the seed;
	// 0 means 2s). The sandbox writes events for every send, as if the
	// account's default configuration set had this destination. Close
	// writes those still pending. Replies (ReplyRate) are written to it
	// too, as SNS notifications.
	Events     io.Writer
	EventDelay time.Duration

	// Queue, if set, also publishes each event record to the sandbox's SNS
	// topic (SNSTopicArn), signed (Signer), into an SQS-shaped queue the
	// sandbox serves (queue.go): ReceiveMessage, DeleteMessage and
	// DeleteMessageBatch, any QueueUrl, with QueueVisibility (0: 30 s, by
	// Now) before a message received and not deleted is delivered again.
	Queue           bool
	QueueVisibility time.Duration

	// ReplyRate is the fraction of delivered messages whose recipient
	// replies, ReplyDelay after the delivery event (from half to one and
	// a half of it, by the seed; 0 means 1s). Of the replies, StopRate
	// are a stop keyword (STOP, stop, UNSUBSCRIBE, Stop please, ARRET, by
	// the seed), HelpRate are HELP, and the rest free text; their sum
	// should not exceed 1. Like the outcome, a reply is drawn from the
	// send's seed, destination, Context and attempt.
	//
	// A reply is an inbound message as AWS publishes it to a two-way
	// number's SNS topic (inbound.go), from the recipient to the number
	// the message left from, its previousPublishedMessageId the MessageId
	// the send answered. It goes to Queue as a signed SNS notification of
	// SNSTopicArn (a queue subscribed to both the event destination's and
	// the two-way topic), and to Events as that same notification: AWS
	// publishes replies to SNS only, and the notification's Timestamp is
	// the only time a reply has. A sender ID cannot be replied to: a send
	// from an identity that is not a phone number gets no reply.
	ReplyRate, StopRate, HelpRate float64
	ReplyDelay                    time.Duration

	// Now is the clock for the budget and the timestamps; nil means
	// time.Now. Delays (Latency, LateDelay, EventDelay, ReplyDelay) are
	// real time.
	Now func() time.Time
}

// Validate reports the first setting New cannot use: an unknown
// AccountError or number type, a rate outside [0, 1], rates that partition
// one draw adding up to more than 1, an opt-out entry
// that is no phone number, numbers or pools sharing an ID or phone number,
// a pool naming an unknown number.
func (c Config) Validate() error {
	if c.AccountError != "" && !slices.Contains(AccountErrors, c.AccountError) {
		return fmt.Errorf("unknown account error %q: want one of %v", c.AccountError, AccountErrors)
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"throttle", c.ThrottleRate}, {"internal", c.InternalRate}, {"late", c.LateRate}, {"fail", c.FailRate},
		{"reply", c.ReplyRate}, {"stop", c.StopRate}, {"help", c.HelpRate}} {
		if !(r.v >= 0 && r.v <= 1) {
			return fmt.Errorf("%s rate %v is not in [0, 1]", r.name, r.v)
		}
	}
	if c.ThrottleRate+c.InternalRate+c.LateRate > 1 {
		return errors.New("throttle, internal and late rates add up to more than 1")
	}
	if c.StopRate+c.HelpRate > 1 {
		return errors.New("stop and help rates add up to more than 1")
	}
	for name, phones := range c.OptOuts {
		for _, p := range phones {
			if !isPhone(p) {
				return fmt.Errorf("opt-out list %s: %q is not a phone number", name, p)
			}
		}
	}
	seen := map[string]bool{}
	for i, n := range c.numbers() {
		if n.Type != "" && !slices.Contains(NumberTypes, n.Type) {
			return fmt.Errorf("number %s: unknown type %q: want one of %v", n.PhoneNumber, n.Type, NumberTypes)
		}
		if !strings.HasPrefix(n.PhoneNumber, "+") || !isPhone(n.PhoneNumber) {
			return fmt.Errorf("number %d: %q is not an E.164 phone number", i+1, n.PhoneNumber)
		}
		for _, k := range []string{n.ID, n.PhoneNumber} {
			if seen[k] {
				return fmt.Errorf("number %s: %s is listed twice", n.PhoneNumber, k)
			}
			seen[k] = true
		}
	}
	for _, p := range c.pools() {
		if seen[p.ID] {
			return fmt.Errorf("pool %s is listed twice", p.ID)
		}
		seen[p.ID] = true
		for _, m := range p.Numbers {
			if !slices.ContainsFunc(c.numbers(), func(n Number) bool { return n.ID == m || n.PhoneNumber == m }) {
				return fmt.Errorf("pool %s: number %s is not in Numbers", p.ID, m)
			}
		}
	}
	return nil
}

// numbers is Numbers with the defaults filled in.
func (c Config) numbers() []Number {
	out := slices.Clone(c.Numbers)
	for i := range out {
		n := &out[i]
		if n.PhoneNumber == "" {
			n.PhoneNumber = fmt.Sprintf("+1206555%04d", 100+i)
		}
		if n.ID == "" {
			n.ID = "phone-" + hexID(n.PhoneNumber)
		}
		if n.Type == "" {
			n.Type = "TEN_DLC"
		}
		if n.OptOutList == "" {
			n.OptOutList = defaultList
		}
	}
	return out
}

// pools is Pools with the defaults filled in.
func (c Config) pools() []Pool {
	out := slices.Clone(c.Pools)
	for i := range out {
		p := &out[i]
		if p.ID == "" {
			p.ID = "pool-" + hexID(fmt.Sprint("pool ", i))
		}
		if p.OptOutList == "" {
			p.OptOutList = defaultList
		}
	}
	return out
}

const defaultList = "Default"
