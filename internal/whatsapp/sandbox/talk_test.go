package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Valid sends of default templates with quick-reply buttons.
const (
	// spring_sale: a URL button and the marketing opt-out, given a payload
	// of the send's own (a tap of the opt-out still arrives with its label).
	springSend = `[
		{"type":"header","parameters":[{"type":"image","image":{"link":"https://cdn.example.com/spring.jpg"}}]},
		{"type":"body","parameters":[{"type":"text","text":"Maria"},{"type":"text","text":"20%"}]},
		{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"SPRING20"}]},
		{"type":"button","sub_type":"quick_reply","index":"1","parameters":[{"type":"payload","payload":"STOP_PROMOS"}]}]`
	// fall_coupon: a custom quick reply ("Unsubscribe") with a payload.
	couponSend = `[
		{"type":"header","parameters":[{"type":"text","text":"Fall Sale"}]},
		{"type":"body","parameters":[{"type":"text","text":"25OFF"},{"type":"text","text":"25%"}]},
		{"type":"button","sub_type":"quick_reply","index":"0","parameters":[{"type":"payload","payload":"unsub-42"}]},
		{"type":"button","sub_type":"copy_code","index":"1","parameters":[{"type":"coupon_code","coupon_code":"25OFF"}]}]`
	// fall_coupon without a payload: a tap arrives with the label.
	couponNoPayload = `[
		{"type":"header","parameters":[{"type":"text","text":"Fall Sale"}]},
		{"type":"body","parameters":[{"type":"text","text":"25OFF"},{"type":"text","text":"25%"}]},
		{"type":"button","sub_type":"copy_code","index":"1","parameters":[{"type":"coupon_code","coupon_code":"25OFF"}]}]`
	orderSend = `[
		{"type":"body","parameters":[{"type":"text","parameter_name":"first_name","text":"Maria"},{"type":"text","parameter_name":"order_id","text":"SB-1001"},{"type":"text","parameter_name":"ship_date","text":"May 14"}]},
		{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"SB-1001"}]}]`
)

// hook is a webhook body decoded loosely enough to check every shape the
// sandbox emits; timestamps stay raw, to tell a string from a number.
type hook struct {
	Object string `json:"object"`
	Entry  []struct {
		ID      string `json:"id"`
		Changes []struct {
			Field string `json:"field"`
			Value struct {
				MessagingProduct string     `json:"messaging_product"`
				Metadata         whMetadata `json:"metadata"`
				Contacts         []whContact
				Messages         []struct {
					From      string          `json:"from"`
					ID        string          `json:"id"`
					Timestamp json.RawMessage `json:"timestamp"`
					Type      string          `json:"type"`
					Text      *whText         `json:"text"`
					Button    *whButton       `json:"button"`
					Context   *whContext      `json:"context"`
				} `json:"messages"`
				UserPreferences []struct {
					WaID      string          `json:"wa_id"`
					Detail    string          `json:"detail"`
					Category  string          `json:"category"`
					Value     string          `json:"value"`
					Timestamp json.RawMessage `json:"timestamp"`
				} `json:"user_preferences"`
				Statuses []whStatus `json:"statuses"`
			} `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}

// back is one talk-back body, flattened.
type back struct {
	kind, field     string // text, button or preference; messages or user_preferences
	waID, id, name  string
	text, payload   string
	contextID       string
	contextFrom     string
	ts              int64
	line            []byte
	display, number string
}

// parseHook decodes a webhook line: its status, or what was sent back.
func parseHook(t *testing.T, line []byte) (*whStatus, *back) {
	t.Helper()
	var h hook
	if err := json.Unmarshal(line, &h); err != nil {
		t.Fatalf("webhook line %s: %v", line, err)
	}
	if h.Object != "whatsapp_business_account" || len(h.Entry) != 1 || h.Entry[0].ID != DefaultWABAID || len(h.Entry[0].Changes) != 1 {
		t.Fatalf("webhook line has an unexpected envelope: %s", line)
	}
	c := h.Entry[0].Changes[0]
	v := c.Value
	if v.MessagingProduct != "whatsapp" {
		t.Fatalf("messaging_product %q: %s", v.MessagingProduct, line)
	}
	if len(v.Statuses) == 1 && c.Field == "messages" && len(v.Messages)+len(v.UserPreferences)+len(v.Contacts) == 0 {
		return &v.Statuses[0], nil
	}
	b := &back{field: c.Field, line: line, display: v.Metadata.DisplayPhoneNumber, number: v.Metadata.PhoneNumberID}
	if len(v.Statuses) != 0 || len(v.Contacts) != 1 || v.Contacts[0].Profile.Name == "" {
		t.Fatalf("talk-back body without one contact with a profile name, or with statuses: %s", line)
	}
	b.name, b.waID = v.Contacts[0].Profile.Name, v.Contacts[0].WaID
	switch {
	case c.Field == "messages" && len(v.Messages) == 1 && len(v.UserPreferences) == 0:
		m := v.Messages[0]
		s, err := strconv.Unquote(string(m.Timestamp))
		ts, err2 := strconv.ParseInt(s, 10, 64)
		if err != nil || err2 != nil {
			t.Fatalf("message timestamp %s is not a string of digits: %s", m.Timestamp, line)
		}
		if m.From != b.waID || !strings.HasPrefix(m.ID, "wamid.") {
			t.Fatalf("message from %q (contact %q), id %q: %s", m.From, b.waID, m.ID, line)
		}
		b.id, b.ts, b.kind = m.ID, ts, m.Type
		switch {
		case m.Type == "text" && m.Text != nil && m.Button == nil && m.Context == nil:
			b.text = m.Text.Body
		case m.Type == "button" && m.Button != nil && m.Context != nil && m.Text == nil:
			b.text, b.payload, b.contextID, b.contextFrom = m.Button.Text, m.Button.Payload, m.Context.ID, m.Context.From
		default:
			t.Fatalf("message of an unexpected shape: %s", line)
		}
	case c.Field == "user_preferences" && len(v.UserPreferences) == 1 && len(v.Messages) == 0:
		p := v.UserPreferences[0]
		ts, err := strconv.ParseInt(string(p.Timestamp), 10, 64) // a JSON number
		if err != nil || p.WaID != b.waID || p.Category != "marketing_messages" || p.Value != "stop" ||
			p.Detail != "User requested to stop marketing messages" {
			t.Fatalf("user_preferences of an unexpected shape: %s", line)
		}
		b.kind, b.ts = "preference", ts
	default:
		t.Fatalf("talk-back body of an unexpected shape: %s", line)
	}
	return nil, b
}

// talkRun sends bodies[i] to recipient 16505550000+i, 10 ms apart, on a
// clock the test moves, lets an hour pass and closes the server. It
// returns the webhook lines in the order emitted, the wamid each
// recipient's message was answered and the stats.
func talkRun(t *testing.T, cfg Config, bodies []string) ([][]byte, map[string]string, Stats) {
	t.Helper()
	clk := newClock()
	tm := &timers{clk: clk}
	hooks := &stampedBuffer{now: clk.Now}
	cfg.Now, cfg.Rate, cfg.PairInterval, cfg.Webhooks = clk.Now, -1, -1, hooks
	s := newServer(cfg, tm.after)
	tm.settle = s.out.settle
	wamids := map[string]string{}
	for i, body := range bodies {
		to := fmt.Sprint(16505550000 + i)
		a := do(s, http.MethodPost, path, token, body)
		if a.status != 200 {
			t.Fatalf("send %d: %v", i, a)
		}
		wamids[to] = a.wamid
		tm.advance(10 * time.Millisecond)
	}
	tm.advance(time.Hour)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	return lines(t, hooks.b.Bytes()), wamids, s.Stats()
}

// sendsOf makes n sends: template name's components cs, in turn.
func sendsOf(n int, name string, cs ...string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = sendBody(fmt.Sprint(16505550000+i), name, "en_US", cs[i%len(cs)])
	}
	return out
}

// Each kind of talk back has Meta's shape, answers the message it follows
// (a button's context is that message) and comes after its last status.
func TestTalkBackBodies(t *testing.T) {
	cfg := Config{
		Seed: 7, Token: token, Definitions: DefaultTemplates(), ReadRate: 0.5,
		ReplyRate: 1, StopRate: 0.5, ButtonRate: 1, StopPromotionsRate: 1, PreferenceStopRate: 1,
	}
	tests := []struct {
		name, template string
		components     []string
		// want, per recipient: the kinds of body sent back, in any order,
		// and the button taps (payload/text)
		kinds []string
		taps  []string
	}{
		{"marketing with the opt-out", "spring_sale", []string{springSend},
			[]string{"text", "button", "preference"}, []string{"Stop promotions/Stop promotions"}},
		{"custom quick reply with a payload", "fall_coupon", []string{couponSend},
			[]string{"text", "button", "preference"}, []string{"unsub-42/Unsubscribe"}},
		{"custom quick reply without a payload", "fall_coupon", []string{couponNoPayload},
			[]string{"text", "button", "preference"}, []string{"Unsubscribe/Unsubscribe"}},
		{"utility without quick replies", "order_update", []string{orderSend},
			[]string{"text", "preference"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const n = 20
			ls, wamids, st := talkRun(t, cfg, sendsOf(n, tt.template, tt.components...))
			last := map[string]int64{} // recipient → timestamp of its last status
			lastLine := map[string]int{}
			got := map[string][]string{}
			var texts, stops int
			for i, l := range ls {
				status, b := parseHook(t, l)
				if status != nil {
					if b := got[status.RecipientID]; len(b) > 0 {
						t.Errorf("status %s of %s after what it sent back", status.Status, status.RecipientID)
					}
					ts, _ := strconv.ParseInt(status.Timestamp, 10, 64)
					last[status.RecipientID], lastLine[status.RecipientID] = ts, i
					continue
				}
				if b.display == "" || b.number != phoneID {
					t.Errorf("metadata %q/%q: %s", b.display, b.number, l)
				}
				if b.ts < last[b.waID] {
					t.Errorf("%s sent back at %d, before its last status at %d", b.waID, b.ts, last[b.waID])
				}
				if b.id == wamids[b.waID] {
					t.Errorf("an incoming message reuses the template message's wamid %s", b.id)
				}
				got[b.waID] = append(got[b.waID], b.kind)
				switch b.kind {
				case "text":
					texts++
					switch {
					case slices.Contains(stopTexts, b.text):
						stops++
					case !slices.Contains(replyTexts, b.text):
						t.Errorf("reply %q is in neither list", b.text)
					}
				case "button":
					if b.contextID != wamids[b.waID] || b.contextFrom != b.display {
						t.Errorf("button context %s from %s; want the template message %s from %s", b.contextID, b.contextFrom, wamids[b.waID], b.display)
					}
					if tap := b.payload + "/" + b.text; !slices.Contains(tt.taps, tap) {
						t.Errorf("tap %s, want one of %v", tap, tt.taps)
					}
				}
			}
			if len(got) != n {
				t.Fatalf("%d recipients sent something back, want all %d", len(got), n)
			}
			for to, kinds := range got {
				slices.Sort(kinds)
				want := slices.Sorted(slices.Values(tt.kinds))
				if !slices.Equal(kinds, want) {
					t.Errorf("%s sent back %v, want %v", to, kinds, want)
				}
			}
			taps := int64(len(tt.taps)) * n
			if st.Replies != n || st.Stops != int64(stops) || texts != n || st.ButtonTaps != taps || st.PreferenceStops != n {
				t.Errorf("stats %+v; want %d replies, %d stops (as in the log), %d taps, %d preference stops", st, n, stops, taps, n)
			}
			if stops == 0 || stops == n {
				t.Errorf("%d of %d replies are stop keywords at StopRate 0.5", stops, n)
			}
			wantOptOuts := int64(0)
			if tt.template == "spring_sale" {
				wantOptOuts = n
			}
			if st.StopPromotions != wantOptOuts {
				t.Errorf("%d opt-out taps, want %d", st.StopPromotions, wantOptOuts)
			}
		})
	}
}

// talkLog is a run's webhooks reduced to what a seed decides: per line,
// the recipient, the status or what was sent back, and when.
func talkLog(t *testing.T, ls [][]byte) []string {
	var out []string
	for _, l := range ls {
		st, b := parseHook(t, l)
		if st != nil {
			out = append(out, fmt.Sprint(st.RecipientID, " ", st.Status, " ", st.Timestamp))
			continue
		}
		out = append(out, fmt.Sprint(b.waID, " ", b.kind, " ", b.text, " ", b.payload, " ", b.name, " ", b.ts))
	}
	return out
}

// The same seed gives the same talk back, at the same times; another seed
// another; and talking back changes no status that was drawn before.
func TestTalkBackSeeded(t *testing.T) {
	base := Config{Token: token, Definitions: DefaultTemplates(), ReadRate: 0.5, FailRate: 0.1, DuplicateRate: 0.1, ReorderRate: 0.1}
	talking := base
	talking.ReplyRate, talking.StopRate, talking.ButtonRate, talking.StopPromotionsRate, talking.PreferenceStopRate = 0.3, 0.3, 0.2, 0.2, 0.1
	sends := sendsOf(300, "spring_sale", springSend)
	run := func(cfg Config, seed int64) []string {
		cfg.Seed = seed
		ls, _, _ := talkRun(t, cfg, sends)
		return talkLog(t, ls)
	}
	a, b, c := run(talking, 1), run(talking, 1), run(talking, 2)
	if !slices.Equal(a, b) {
		t.Error("two runs with seed 1 differ")
	}
	if slices.Equal(a, c) {
		t.Error("seeds 1 and 2 gave the same webhooks")
	}
	statuses := func(log []string) []string {
		return slices.DeleteFunc(slices.Clone(log), func(l string) bool {
			f := strings.Fields(l)
			return !slices.Contains([]string{"sent", "delivered", "read", "failed"}, f[1])
		})
	}
	quiet := run(base, 1)
	if len(quiet) == len(a) || !slices.Equal(statuses(a), quiet) {
		t.Errorf("talking back changed the statuses: %d status lines with it, %d without", len(statuses(a)), len(quiet))
	}
}

// The counts follow the rates, only delivered messages are answered, and
// Stats counts what the log holds.
func TestTalkBackCounts(t *testing.T) {
	const n = 2000
	cfg := Config{Seed: 5, Token: token, FailRate: 0.2, ReplyRate: 0.3, StopRate: 0.5, PreferenceStopRate: 0.1, ButtonRate: 1, StopPromotionsRate: 1}
	// "welcome" is in no registry: any template is taken, as a marketing
	// one without buttons, so nothing is tapped.
	sends := make([]string, n)
	for i := range sends {
		sends[i] = msg(fmt.Sprint(16505550000+i), fmt.Sprint("cb", i), "welcome", "en_US", 0)
	}
	ls, _, st := talkRun(t, cfg, sends)
	final := map[string]string{}
	count := map[string]int64{}
	for _, l := range ls {
		status, b := parseHook(t, l)
		if status != nil {
			final[status.RecipientID] = status.Status
			continue
		}
		if final[b.waID] == "failed" {
			t.Errorf("%s sent back %s after a failed message", b.waID, b.kind)
		}
		count[b.kind]++
		if b.kind == "text" && slices.Contains(stopTexts, b.text) {
			count["stop"]++
		}
	}
	if st.Replies != count["text"] || st.Stops != count["stop"] || st.PreferenceStops != count["preference"] || st.ButtonTaps != 0 || count["button"] != 0 {
		t.Errorf("stats %+v; the log has %v", st, count)
	}
	// Expected shares of the delivered messages, within five standard
	// deviations (binomial).
	within := func(what string, got int64, trials int64, p float64) {
		mean := float64(trials) * p
		sd := max(1, math.Sqrt(mean*(1-p)))
		if d := float64(got) - mean; d > 5*sd || d < -5*sd {
			t.Errorf("%s: %d, want about %.0f", what, got, mean)
		}
	}
	within("delivered", st.Delivered, n, 0.8)
	within("replies", st.Replies, st.Delivered, 0.3)
	within("stops", st.Stops, st.Replies, 0.5)
	within("preference stops", st.PreferenceStops, st.Delivered, 0.1)
}

// What is sent back is POSTed signed as the statuses are: the same bytes
// as the log's lines, ASCII only (non-ASCII escaped, as Meta signs it).
func TestTalkBackPostedSigned(t *testing.T) {
	const secret = "app-secret"
	recv := newSignedReceiver(t, secret)
	var hooks bytes.Buffer
	s := New(Config{
		Seed: 3, Token: token, Definitions: DefaultTemplates(), Rate: -1, PairInterval: -1,
		WebhookURL: recv.URL, AppSecret: secret, Webhooks: &hooks,
		ReplyRate: 1, StopRate: 0.5, StopPromotionsRate: 1, PreferenceStopRate: 1,
	})
	const n = 30
	for i := range n {
		if a := do(s, http.MethodPost, path, token, sendBody(fmt.Sprint(16505550000+i), "spring_sale", "en_US", springSend)); a.status != 200 {
			t.Fatal(a)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	logged := map[string]bool{}
	backs := 0
	for _, l := range lines(t, hooks.Bytes()) {
		logged[string(l)] = true
		if _, b := parseHook(t, l); b != nil {
			backs++
		}
	}
	bodies, bad := recv.got()
	st := s.Stats()
	if bad != 0 || int64(len(bodies)) != st.Webhooks || st.WebhookPosted != st.Webhooks || backs != 3*n {
		t.Fatalf("%d good, %d bad signatures, %d talk-back lines, stats %+v; want every body posted with a good signature, %d talk-back lines", len(bodies), bad, backs, st, 3*n)
	}
	escaped := false
	for _, b := range bodies {
		if !logged[string(b)] {
			t.Errorf("posted body not in the log: %s", b)
		}
		if i := bytes.IndexFunc(b, func(r rune) bool { return r >= 0x80 }); i >= 0 {
			t.Errorf("posted body has a non-ASCII byte at %d: %s", i, b)
		}
		escaped = escaped || bytes.Contains(b, []byte(`\u00`))
	}
	if !escaped {
		t.Error("no body had an escaped character: the check above proved nothing")
	}
}

// After a recipient stops marketing messages, the marketing messages sent
// to them are accepted and fail 131050; others, and marketing messages sent
// before the stop, are delivered.
func TestPreferenceStopFails131050(t *testing.T) {
	tests := []struct {
		name       string
		wait       time.Duration // after the first message was accepted
		template   string
		components string
		want       string // the second message's last status
		stopped    int64  // Stats.MarketingStopped
	}{
		{"marketing after the stop", time.Hour, "spring_sale", springSend, "failed 131050", 1},
		{"marketing before the stop", 0, "spring_sale", springSend, "delivered", 0},
		{"utility after the stop", time.Hour, "order_update", orderSend, "delivered", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			tm := &timers{clk: clk}
			var hooks bytes.Buffer
			s := newServer(Config{
				Seed: 1, Token: token, Definitions: DefaultTemplates(), Rate: -1, PairInterval: -1,
				Now: clk.Now, Webhooks: &hooks, PreferenceStopRate: 1,
			}, tm.after)
			tm.settle = s.out.settle
			const to = "16505551234"
			first := do(s, http.MethodPost, path, token, sendBody(to, "spring_sale", "en_US", springSend))
			tm.advance(tt.wait)
			second := do(s, http.MethodPost, path, token, sendBody(to, tt.template, "en_US", tt.components))
			if first.status != 200 || second.status != 200 {
				t.Fatalf("answers %v, %v; want both accepted", first, second)
			}
			tm.advance(time.Hour)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			var last string
			prefs := 0
			for _, l := range lines(t, hooks.Bytes()) {
				st, b := parseHook(t, l)
				switch {
				case b != nil && b.kind == "preference":
					prefs++
				case st != nil && st.ID == second.wamid:
					last = st.Status
					if len(st.Errors) > 0 {
						last += fmt.Sprint(" ", st.Errors[0].Code)
					}
				}
			}
			if last != tt.want {
				t.Errorf("second message ended %q, want %q", last, tt.want)
			}
			if got := s.Stats(); got.MarketingStopped != tt.stopped || got.PreferenceStops != int64(prefs) || prefs == 0 {
				t.Errorf("stats %+v with %d user_preferences bodies; want %d marketing stopped", got, prefs, tt.stopped)
			}
		})
	}
}

func TestEscapeUnicode(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"ascii", `{"a":"STOP"}`, `{"a":"STOP"}`},
		{"latin", `{"a":"désabonner"}`, `{"a":"d\u00e9sabonner"}`},
		{"beyond the BMP", `{"a":"Ok 👍"}`, `{"a":"Ok \ud83d\udc4d"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := escapeUnicode([]byte(tt.in))
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			var a, b map[string]string
			if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(tt.in), &b) != nil || a["a"] != b["a"] {
				t.Errorf("decodes to %q, want %q", a["a"], b["a"])
			}
		})
	}
}
