package smssandbox

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// eventRecord is an SMS event as AWS writes it to an event destination
// (AWS-EVT's example record): camelCase members, times in unix
// milliseconds. mcc and mnc are left out: the sandbox knows no carriers.
type eventRecord struct {
	EventType                string            `json:"eventType"`
	EventVersion             string            `json:"eventVersion"`
	EventTimestamp           int64             `json:"eventTimestamp"`
	IsFinal                  bool              `json:"isFinal"`
	OriginationPhoneNumber   string            `json:"originationPhoneNumber"`
	DestinationPhoneNumber   string            `json:"destinationPhoneNumber"`
	IsoCountryCode           string            `json:"isoCountryCode"`
	MessageID                string            `json:"messageId"`
	MessageRequestTimestamp  int64             `json:"messageRequestTimestamp"`
	MessageEncoding          string            `json:"messageEncoding"`
	MessageType              string            `json:"messageType"`
	MessageStatus            string            `json:"messageStatus"`
	MessageStatusDescription string            `json:"messageStatusDescription"`
	Context                  map[string]string `json:"context,omitempty"`
	TotalMessageParts        int               `json:"totalMessageParts"`
	TotalMessagePrice        float64           `json:"totalMessagePrice"`
	TotalCarrierFee          float64           `json:"totalCarrierFee"`
}

// statuses are the messageStatus and description of each final event.
var statuses = map[string]struct{ status, description string }{
	"TEXT_DELIVERED":           {"DELIVERED", "Message has been accepted by phone"},
	"TEXT_CARRIER_UNREACHABLE": {"CARRIER_UNREACHABLE", "The carrier could not be reached"},
	"TEXT_BLOCKED":             {"BLOCKED", "The message was blocked by the carrier"},
	"TEXT_SPAM":                {"SPAM", "The carrier flagged the message as spam"},
	"TEXT_INVALID":             {"INVALID", "The destination phone number is not valid"},
	"TEXT_TTL_EXPIRED":         {"TTL_EXPIRED", "The message was not delivered before its time to live ran out"},
}

// afterFunc runs f after d in its own goroutine and returns what stops it,
// as time.AfterFunc does.
type afterFunc func(d time.Duration, f func()) (stop func() bool)

func realAfter(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// events writes event records when they happen, one line each, from
// whichever timer fires; the lock keeps lines whole and in the order
// written.
type events struct {
	now   func() time.Time
	after afterFunc
	stats *counters

	publish func(body string) // Config.Queue: each record's SNS notification, as written

	mu      sync.Mutex
	w       *bufio.Writer
	err     error // the first write error
	closed  bool
	seq     uint64
	pending map[uint64]*pending
}

// pending is an event or a reply waiting for its time.
type pending struct {
	seq   uint64
	rec   eventRecord
	reply *inboundRecord // a reply instead of rec
	due   time.Time
	stop  func() bool
}

func newEvents(w io.Writer, now func() time.Time, after afterFunc, st *counters) *events {
	return &events{w: bufio.NewWriter(w), now: now, after: after, stats: st, pending: map[uint64]*pending{}}
}

// schedule writes rec in d, stamped due. After close it writes it now.
func (e *events) schedule(rec eventRecord, due time.Time, d time.Duration) {
	e.add(&pending{rec: rec, due: due}, d)
}

// scheduleReply writes the reply in d, its notification stamped due, as
// schedule does an event.
func (e *events) scheduleReply(in inboundRecord, due time.Time, d time.Duration) {
	e.add(&pending{reply: &in, due: due}, d)
}

func (e *events) add(p *pending, d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		e.write(p)
		e.flush()
		return
	}
	e.seq++
	p.seq = e.seq
	e.pending[p.seq] = p
	p.stop = e.after(d, func() { e.fire(p.seq) })
}

// fire writes the pending event seq, unless close took it first.
func (e *events) fire(seq uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.pending[seq]
	if !ok {
		return
	}
	delete(e.pending, seq)
	e.write(p)
	e.flush()
}

// waiting is how many events and replies are still to be written.
func (e *events) waiting() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.pending)
}

// close stops the timers and writes what is pending, earliest first.
func (e *events) close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	ps := make([]*pending, 0, len(e.pending))
	for _, p := range e.pending {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *pending) int {
		return cmp.Or(a.due.Compare(b.due), cmp.Compare(a.seq, b.seq))
	})
	for _, p := range ps {
		if p.stop != nil {
			p.stop()
		}
		e.write(p)
	}
	clear(e.pending)
	e.flush()
	return e.err
}

// write stamps p with its due time, or with the time of writing if that
// is still to come: nothing is stamped in the future. An event goes to
// the log as its record and to the queue as a notification of it; a
// reply goes to both as its notification, the only form AWS gives it.
func (e *events) write(p *pending) {
	due := p.due
	if now := e.now(); due.After(now) {
		due = now
	}
	var b []byte
	if p.reply != nil {
		in, _ := json.Marshal(p.reply)
		b = Signer().Notification(SNSTopicArn, string(in), due, "2")
		if e.publish != nil {
			e.publish(string(b))
		}
	} else {
		rec := p.rec
		rec.EventTimestamp = due.UnixMilli()
		b, _ = json.Marshal(rec)
		if e.publish != nil {
			e.publish(string(Signer().Notification(SNSTopicArn, string(b), due, "2")))
		}
	}
	b = append(b, '\n')
	if e.err != nil {
		return
	}
	if _, err := e.w.Write(b); err != nil {
		e.err = fmt.Errorf("write sandbox events: %w", err)
		return
	}
	if p.reply == nil {
		e.stats.events.Add(1)
	}
}

func (e *events) flush() {
	if e.err == nil {
		if err := e.w.Flush(); err != nil {
			e.err = fmt.Errorf("write sandbox events: %w", err)
		}
	}
}
