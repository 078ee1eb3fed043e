package smssandbox

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// sqsTarget prefixes the X-Amz-Target of SQS's JSON protocol (the Go
// SDK's service/sqs v1.53.0 speaks awsJson1_0, as AWS does since 2023).
const sqsTarget = "AmazonSQS."

// queue is an SQS queue as a subscriber of the sandbox's topic sees it:
// a message received is invisible for the visibility timeout, then
// delivered again with a new receipt handle unless deleted with its latest
// one (an older handle deletes nothing, and is no error, as in SQS).
type queue struct {
	now        func() time.Time
	visibility time.Duration

	mu      sync.Mutex
	msgs    []*queued // in the order sent
	seq     int
	arrived chan struct{} // closed and replaced when a message is added
}

type queued struct {
	id, body, md5 string
	visibleAt     time.Time
	receipt       string // the latest receipt handle
	receives      int
}

func newQueue(now func() time.Time, visibility time.Duration) *queue {
	if visibility <= 0 {
		visibility = 30 * time.Second
	}
	return &queue{now: now, visibility: visibility, arrived: make(chan struct{})}
}

// Enqueue adds body to the sandbox's queue as a message of its own (an
// inbound reply, a test's notification). It panics without Config.Queue.
func (s *Server) Enqueue(body string) {
	s.queue.add(body)
}

// QueueLen is how many messages the queue holds, visible or not.
func (s *Server) QueueLen() int {
	s.queue.mu.Lock()
	defer s.queue.mu.Unlock()
	return len(s.queue.msgs)
}

// Pending is how many events and replies are still to come: scheduled,
// not yet written (0 without Config.Events or Queue).
func (s *Server) Pending() int {
	if s.events == nil {
		return 0
	}
	return s.events.waiting()
}

func (q *queue) add(body string) {
	sum := md5.Sum([]byte(body))
	q.mu.Lock()
	q.seq++
	q.msgs = append(q.msgs, &queued{id: fmt.Sprintf("9f2d0c1e-0000-4000-8000-%012x", q.seq), body: body, md5: hex.EncodeToString(sum[:])})
	close(q.arrived)
	q.arrived = make(chan struct{})
	q.mu.Unlock()
}

// receive takes up to max visible messages, making them invisible.
func (q *queue) receive(max int, visibility time.Duration) ([]sqsMessage, <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	var out []sqsMessage
	for _, m := range q.msgs {
		if len(out) == max {
			break
		}
		if m.visibleAt.After(now) {
			continue
		}
		q.seq++
		m.receives++
		m.receipt = fmt.Sprintf("%s#%d", m.id, q.seq)
		m.visibleAt = now.Add(visibility)
		out = append(out, sqsMessage{MessageID: m.id, ReceiptHandle: m.receipt, MD5OfBody: m.md5, Body: m.body,
			Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.receives)}})
	}
	return out, q.arrived
}

// remove deletes the message whose latest receipt handle is h; an older
// handle deletes nothing.
func (q *queue) remove(h string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, m := range q.msgs {
		if m.receipt == h {
			q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
			return
		}
	}
}

type sqsMessage struct {
	MessageID     string            `json:"MessageId"`
	ReceiptHandle string            `json:"ReceiptHandle"`
	MD5OfBody     string            `json:"MD5OfBody"`
	Body          string            `json:"Body"`
	Attributes    map[string]string `json:"Attributes,omitempty"`
}

// serve answers one SQS request; done stops a long poll (Close).
func (q *queue) serve(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
	var in struct {
		QueueURL            string `json:"QueueUrl"`
		MaxNumberOfMessages int
		WaitTimeSeconds     int
		VisibilityTimeout   *int
		ReceiptHandle       string
		Entries             []struct{ ID, ReceiptHandle string }
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	if err := json.Unmarshal(b, &in); err != nil || in.QueueURL == "" {
		sqsError(w, "InvalidParameterValue", "a JSON body with a QueueUrl")
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	switch op := r.Header.Get("X-Amz-Target")[len(sqsTarget):]; op {
	case "ReceiveMessage":
		max := in.MaxNumberOfMessages
		if max == 0 {
			max = 1
		}
		if max < 1 || max > 10 || in.WaitTimeSeconds < 0 || in.WaitTimeSeconds > 20 {
			sqsError(w, "InvalidParameterValue", "MaxNumberOfMessages 1 to 10, WaitTimeSeconds 0 to 20")
			return
		}
		vis := q.visibility
		if in.VisibilityTimeout != nil {
			vis = time.Duration(*in.VisibilityTimeout) * time.Second
		}
		deadline := time.NewTimer(time.Duration(in.WaitTimeSeconds) * time.Second)
		defer deadline.Stop()
		for {
			if r.Context().Err() != nil {
				return // its client is gone: it takes nothing out of sight
			}
			msgs, arrived := q.receive(max, vis)
			if len(msgs) > 0 || in.WaitTimeSeconds == 0 {
				json.NewEncoder(w).Encode(map[string]any{"Messages": msgs})
				return
			}
			select {
			case <-arrived:
			case <-deadline.C:
				in.WaitTimeSeconds = 0
			case <-done:
				in.WaitTimeSeconds = 0
			case <-r.Context().Done():
				return
			}
		}
	case "DeleteMessage":
		q.remove(in.ReceiptHandle)
		io.WriteString(w, "{}")
	case "DeleteMessageBatch":
		ok := []map[string]string{}
		for _, e := range in.Entries {
			q.remove(e.ReceiptHandle)
			ok = append(ok, map[string]string{"Id": e.ID})
		}
		json.NewEncoder(w).Encode(map[string]any{"Successful": ok, "Failed": []any{}})
	default:
		sqsError(w, "InvalidAction", "the sandbox's queue answers ReceiveMessage, DeleteMessage and DeleteMessageBatch, not "+op)
	}
}

func sqsError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Query-Error", code+";Sender")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + code, "message": msg})
}
