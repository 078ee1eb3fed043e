package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	token   = "test-token"
	phoneID = "106540352242922"
	path    = "/v23.0/" + phoneID + "/messages"
)

// clock is a settable Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 9, 11, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// msg is a template send request, conformant to Meta's Message schema.
func msg(to, cbd, name, lang string, params int) string {
	var ps []string
	for i := range params {
		ps = append(ps, fmt.Sprintf(`{"type":"text","text":"p%d"}`, i))
	}
	cb := ""
	if cbd != "" {
		cb = fmt.Sprintf(`"biz_opaque_callback_data":%q,`, cbd)
	}
	return fmt.Sprintf(`{"messaging_product":"whatsapp","recipient_type":"individual","to":%q,"type":"template",%s
		"template":{"name":%q,"language":{"policy":"deterministic","code":%q},
		"components":[{"type":"body","parameters":[%s]}]}}`, to, cb, name, lang, strings.Join(ps, ","))
}

// answer is a decoded sandbox response.
type answer struct {
	status int
	body   []byte
	code   int    // error.code, 0 on success
	wamid  string // messages[0].id on success
}

func (a answer) String() string { return fmt.Sprintf("HTTP %d %s", a.status, a.body) }

func decode(status int, body []byte) answer {
	a := answer{status: status, body: body}
	var v struct {
		Error    struct{ Code int }
		Messages []struct{ ID string }
	}
	json.Unmarshal(body, &v)
	a.code = v.Error.Code
	if len(v.Messages) > 0 {
		a.wamid = v.Messages[0].ID
	}
	return a
}

// do calls the handler directly, without a network.
func do(h http.Handler, method, path, tok, body string) answer {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return decode(w.Code, w.Body.Bytes())
}

func send(h http.Handler, to, cbd string) answer {
	return do(h, http.MethodPost, path, token, msg(to, cbd, "welcome", "en_US", 0))
}

// lines splits NDJSON output.
func lines(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// status is one status of a webhook line, with its line's metadata.
type status struct {
	whStatus
	PhoneNumberID string
	line          []byte
}

func parseWebhook(t *testing.T, line []byte) status {
	t.Helper()
	var b webhookBody
	if err := json.Unmarshal(line, &b); err != nil {
		t.Fatalf("webhook line %s: %v", line, err)
	}
	if b.Object != "whatsapp_business_account" || len(b.Entry) != 1 || len(b.Entry[0].Changes) != 1 ||
		len(b.Entry[0].Changes[0].Value.Statuses) != 1 || b.Entry[0].Changes[0].Field != "messages" {
		t.Fatalf("webhook line has an unexpected shape: %s", line)
	}
	v := b.Entry[0].Changes[0].Value
	return status{whStatus: v.Statuses[0], PhoneNumberID: v.Metadata.PhoneNumberID, line: line}
}
