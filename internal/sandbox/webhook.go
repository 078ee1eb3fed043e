package sandbox

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// emission is the output of one accepted message: its webhook bodies in
// emission order and its Accepted record.
type emission struct {
	bodies   [][]byte
	accepted []byte
}

// emit decides and serialises the status webhooks of an accepted message
// and queues them for the emitter. Serialising here, in the request's
// goroutine, keeps the single emitter goroutine cheap.
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
	if s.queue == nil {
		return
	}

	base := whStatus{ID: wamid, RecipientID: waID, BizOpaqueCallbackData: req.BizOpaqueCallbackData}
	stamp := func(status string, d time.Duration) whStatus {
		st := base
		st.Status = status
		st.Timestamp = strconv.FormatInt(at.Add(d).Unix(), 10)
		return st
	}
	// Pricing comes with sent and with the first of delivered/read; so does
	// the conversation, on API versions before v24.0 (fact sheet §5). Its
	// category is the template's, or marketing_lite for a message the
	// Marketing Messages API sent.
	billed := func(st whStatus) whStatus {
		st.Pricing = &whPricing{Billable: true, PricingModel: "PMP", Type: "regular", Category: rt.category}
		if versionBefore24(version) {
			h := fnv.New128a()
			h.Write([]byte(wamid))
			st.Conversation = &whConversation{
				ID:                  hex.EncodeToString(h.Sum(nil)),
				ExpirationTimestamp: strconv.FormatInt(at.Add(24*time.Hour).Unix(), 10),
				Origin:              whOrigin{Type: rt.category},
			}
		}
		return st
	}
	var statuses []whStatus
	switch {
	case ft.failCode != 0:
		if ft.sentFirst {
			statuses = append(statuses, billed(stamp("sent", ft.sentAfter)))
		}
		failed := stamp("failed", ft.deliveredAfter)
		failed.Errors = []whError{asyncErrors[ft.failCode]}
		statuses = append(statuses, failed)
	default:
		statuses = append(statuses, billed(stamp("sent", ft.sentAfter)), billed(stamp("delivered", ft.deliveredAfter)))
		if ft.read {
			statuses = append(statuses, stamp("read", ft.readAfter))
		}
	}

	bodies := make([][]byte, 0, len(statuses)+1)
	for _, st := range statuses {
		b, _ := json.Marshal(webhookBody{
			Object: "whatsapp_business_account",
			Entry: []whEntry{{ID: s.wabaID, Changes: []whChange{{
				Field: "messages",
				Value: whValue{
					MessagingProduct: "whatsapp",
					Metadata:         whMetadata{DisplayPhoneNumber: num.display, PhoneNumberID: num.id},
					Statuses:         []whStatus{st},
				},
			}}}},
		})
		bodies = append(bodies, b)
	}
	if ft.reorder && len(bodies) > 1 {
		for i, j := 0, len(bodies)-1; i < j; i, j = i+1, j-1 {
			bodies[i], bodies[j] = bodies[j], bodies[i]
		}
		s.stats.whReordered.Add(1)
	}
	if ft.duplicate >= 0 {
		bodies = append(bodies, bodies[min(ft.duplicate, len(bodies)-1)])
		s.stats.whDuplicates.Add(1)
	}

	var rec []byte
	if s.cfg.Accepted != nil {
		rec, _ = json.Marshal(acceptedRecord{
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
		})
	}

	s.qmu.RLock()
	defer s.qmu.RUnlock()
	if !s.closed {
		s.queue <- emission{bodies: bodies, accepted: rec}
	}
}

// emitter writes webhook bodies and Accepted records from one goroutine, so
// lines never interleave, and posts bodies to WebhookURL from a few more, as
// Meta delivers webhooks concurrently.
type emitter struct {
	webhooks, accepted *bufio.Writer
	url, secret        string
	client             *http.Client
	posts              chan []byte
	stats              *counters
	err                error // first write error; read after the goroutines end
}

const posters = 4

func newEmitter(cfg Config, st *counters) *emitter {
	e := &emitter{url: cfg.WebhookURL, secret: cfg.AppSecret, stats: st}
	if cfg.Webhooks != nil {
		e.webhooks = bufio.NewWriter(cfg.Webhooks)
	}
	if cfg.Accepted != nil {
		e.accepted = bufio.NewWriter(cfg.Accepted)
	}
	if e.url != "" {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = posters
		e.client = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	return e
}

func (e *emitter) start(q <-chan emission, wg *sync.WaitGroup) {
	if e.client != nil {
		e.posts = make(chan []byte, 1024)
		for range posters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b := range e.posts {
					if err := e.post(b); err != nil {
						e.stats.whPostErrors.Add(1)
					}
				}
			}()
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.run(q)
	}()
}

func (e *emitter) run(q <-chan emission) {
	for it := range q {
		if it.accepted != nil {
			e.write(e.accepted, it.accepted)
		}
		for _, b := range it.bodies {
			e.stats.webhooks.Add(1)
			e.write(e.webhooks, b)
			if e.posts != nil {
				e.posts <- b
			}
		}
		if len(q) == 0 {
			e.flush()
		}
	}
	e.flush()
	if e.posts != nil {
		close(e.posts)
	}
	if e.client != nil {
		defer e.client.CloseIdleConnections()
	}
}

func (e *emitter) write(w *bufio.Writer, line []byte) {
	if w == nil || e.err != nil {
		return
	}
	w.Write(line)
	if err := w.WriteByte('\n'); err != nil {
		e.err = fmt.Errorf("write sandbox output: %w", err)
	}
}

func (e *emitter) flush() {
	for _, w := range []*bufio.Writer{e.webhooks, e.accepted} {
		if w != nil && e.err == nil {
			if err := w.Flush(); err != nil {
				e.err = fmt.Errorf("write sandbox output: %w", err)
			}
		}
	}
}

// post delivers one body to WebhookURL, signed as Meta signs it: the hex
// HMAC-SHA256 of the raw body keyed with the app secret.
func (e *emitter) post(body []byte) error {
	req, err := http.NewRequest(http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.secret != "" {
		req.Header.Set("X-Hub-Signature-256", "sha256="+Sign(e.secret, body))
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("post webhook: %w", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post webhook: %s", resp.Status)
	}
	return nil
}

// Sign returns the lowercase hex HMAC-SHA256 of body keyed with secret: the
// value after "sha256=" in X-Hub-Signature-256.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}
