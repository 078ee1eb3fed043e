// Package smsqueue is `bulksend receive --sqs-queue-url`: it long-polls an
// SQS queue that the SMS events' SNS topic (or a two-way number's) is
// delivered to, and keeps every message in the receiver's log before it
// deletes it from the queue.
//
// At least once. A message is deleted only after the Keeper has it on
// disk. A crash between the two (or a delete that fails) leaves it in the
// queue, which delivers it again after its visibility timeout; it is then
// kept a second time, harmlessly: reconcile applies statuses
// monotonically, so the same event twice changes a row once. A message
// that is not JSON is neither kept nor deleted (it comes again until the
// queue's redrive policy moves it to a dead-letter queue), and counted.
//
// A body is kept as SQS holds it: an SNS notification (smsevent unwraps
// its Message), or with raw delivery the event or inbound message itself.
// Messages in the queue are not signature-checked: only principals the
// queue's policy allows can send to it.
package smsqueue

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/bulksend/bulksend/internal/sms"
	"github.com/bulksend/bulksend/internal/sms/smsevent"
)

// Queue is what the poller needs of an SQS queue; *sms.Queue is one.
type Queue interface {
	Receive(ctx context.Context, wait int) ([]sms.QueueMessage, error)
	Delete(ctx context.Context, receipts []string) (int, error)
}

var _ Queue = (*sms.Queue)(nil)

// Keeper keeps a body durably: Keep returns nil only once body is on
// disk. The receiver's log is one.
type Keeper interface {
	Keep(body []byte) error
}

// Config configures a Poller.
type Config struct {
	Queue  Queue
	Keeper Keeper
	Log    *slog.Logger // nil logs nothing
	// Wait is each long poll's wait in seconds (0 to 20); 0 means 20.
	Wait int
	// Backoff is the wait after a failed receive or keep, doubled up to a
	// minute while failures go on; 0 means a second.
	Backoff time.Duration

	afterKeep func() // for tests: called after a batch is kept, before its delete
}

// Stats are a Poller's counts since it started. Every message received
// is counted in Received and in exactly one of Kept, NotJSON and Unkept;
// of Kept, Inbound are inbound SMS messages, and Deleted are deleted.
type Stats struct {
	Polls        int64 `json:"polls"`         // ReceiveMessage calls answered
	PollErrors   int64 `json:"poll_errors"`   // ReceiveMessage calls that failed
	Received     int64 `json:"received"`      // messages received, redeliveries included
	Kept         int64 `json:"kept"`          // messages kept in the log
	Inbound      int64 `json:"inbound"`       // of Kept, inbound SMS messages (replies to a two-way number)
	Deleted      int64 `json:"deleted"`       // kept messages deleted from the queue
	DeleteErrors int64 `json:"delete_errors"` // kept messages not deleted (they come again)
	NotJSON      int64 `json:"not_json"`      // messages whose body is not JSON: neither kept nor deleted
	Unkept       int64 `json:"unkept"`        // messages that could not be kept: not deleted, they come again
}

// Poller polls a queue until its context ends. Its methods are safe for
// concurrent use; create one with New.
type Poller struct {
	cfg Config
	log *slog.Logger

	polls, pollErrors, received, kept, inbound, deleted, deleteErrors, notJSON, unkept atomic.Int64
}

// New returns a Poller.
func New(cfg Config) *Poller {
	if cfg.Wait <= 0 || cfg.Wait > 20 {
		cfg.Wait = 20
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	p := &Poller{cfg: cfg, log: cfg.Log}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	return p
}

// Stats returns the counts so far.
func (p *Poller) Stats() Stats {
	return Stats{
		Polls: p.polls.Load(), PollErrors: p.pollErrors.Load(), Received: p.received.Load(), Kept: p.kept.Load(),
		Inbound: p.inbound.Load(), Deleted: p.deleted.Load(), DeleteErrors: p.deleteErrors.Load(),
		NotJSON: p.notJSON.Load(), Unkept: p.unkept.Load(),
	}
}

// Run polls until ctx ends, and returns nil then. A poll in flight is cut
// short; a batch received is kept and deleted before Run returns (the
// delete with a context of its own, bounded), so that an interrupt does not
// leave kept messages to come again.
func (p *Poller) Run(ctx context.Context) error {
	backoff := p.cfg.Backoff
	for ctx.Err() == nil {
		msgs, err := p.cfg.Queue.Receive(ctx, p.cfg.Wait)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			p.pollErrors.Add(1)
			p.log.Warn("SQS poll failed: trying again", "err", err, "in", backoff)
			if !sleep(ctx, backoff) {
				break
			}
			backoff = min(2*backoff, time.Minute)
			continue
		}
		p.polls.Add(1)
		if p.batch(msgs) {
			backoff = p.cfg.Backoff
		} else if !sleep(ctx, backoff) {
			break
		} else {
			backoff = min(2*backoff, time.Minute)
		}
	}
	return nil
}

// batch keeps msgs and deletes those kept; ok is false if one could not
// be kept (a full disk): the caller waits before it polls again.
func (p *Poller) batch(msgs []sms.QueueMessage) (ok bool) {
	ok = true
	var kept []string
	for _, m := range msgs {
		p.received.Add(1)
		body := []byte(m.Body)
		if !json.Valid(body) {
			p.notJSON.Add(1)
			p.log.Warn("SQS message not JSON: not kept, not deleted (a dead-letter queue takes it after its retries)", "message_id", m.ID, "bytes", len(body))
			continue
		}
		if err := p.cfg.Keeper.Keep(body); err != nil {
			p.unkept.Add(1)
			p.log.Warn("SQS message not kept: not deleted, it comes again", "message_id", m.ID, "err", err)
			ok = false
			continue
		}
		p.kept.Add(1)
		if _, in := smsevent.ParseInbound(body); in {
			p.inbound.Add(1)
		}
		kept = append(kept, m.Receipt)
	}
	if len(kept) == 0 {
		return ok
	}
	if p.cfg.afterKeep != nil {
		p.cfg.afterKeep()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := p.cfg.Queue.Delete(ctx, kept)
	p.deleted.Add(int64(n))
	if err != nil {
		p.deleteErrors.Add(int64(len(kept) - n))
		p.log.Warn("SQS delete failed: the kept messages come again (kept again, harmlessly)", "err", err)
	}
	return ok
}

// sleep waits d, or until ctx ends: false then.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
