package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	def := Delay{Mean: 2 * time.Second, Jitter: time.Second}
	tests := []struct {
		name string
		d    Delay
		u    float64
		want time.Duration
	}{
		{"zero means the default, low end", Delay{}, 0, time.Second},
		{"zero means the default, middle", Delay{}, 0.5, 2 * time.Second},
		{"negative mean means none", Delay{Mean: -1, Jitter: time.Second}, 0.9, 0},
		{"no jitter", Delay{Mean: 30 * time.Millisecond}, 0.99, 30 * time.Millisecond},
		{"jitter", Delay{Mean: 10 * time.Second, Jitter: 5 * time.Second}, 0.75, 12500 * time.Millisecond},
		{"never below zero", Delay{Mean: time.Second, Jitter: 3 * time.Second}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.d.or(def).at(tc.u); got != tc.want {
				t.Errorf("%+v at %v = %v, want %v", tc.d, tc.u, got, tc.want)
			}
		})
	}
}

// Each status is emitted when its time comes, not a moment before, and
// stamped with that time: sent SentDelay after acceptance, delivered
// DeliveredDelay after sent, read ReadDelay after delivered.
func TestWebhooksWhenTheyHappen(t *testing.T) {
	clk := newClock()
	tm := &timers{clk: clk}
	hooks := &stampedBuffer{now: clk.Now}
	s := newServer(Config{
		Now: clk.Now, Rate: -1, ReadRate: 1, Webhooks: hooks,
		SentDelay: Delay{Mean: time.Second}, DeliveredDelay: Delay{Mean: 2 * time.Second}, ReadDelay: Delay{Mean: 10 * time.Second},
	}, tm.after)
	tm.settle = s.out.settle
	defer s.Close()
	t0 := clk.Now()
	if a := send(s, "16505551234", "row1"); a.status != 200 {
		t.Fatal(a)
	}
	steps := []struct {
		advance time.Duration
		want    string
		pending int64
	}{
		{0, "", 3},
		{999 * time.Millisecond, "", 3},
		{time.Millisecond, "sent", 2},
		{1999 * time.Millisecond, "sent", 2},
		{time.Millisecond, "sent,delivered", 1},
		{9999 * time.Millisecond, "sent,delivered", 1},
		{time.Millisecond, "sent,delivered,read", 0},
		{time.Hour, "sent,delivered,read", 0},
	}
	for _, st := range steps {
		tm.advance(st.advance)
		ws := hooks.lines(t)
		var names []string
		for _, w := range ws {
			names = append(names, w.Status)
		}
		if got := strings.Join(names, ","); got != st.want || s.Stats().WebhooksPending != st.pending {
			t.Fatalf("at +%v: webhooks %q (pending %d), want %q (pending %d)",
				clk.Now().Sub(t0), got, s.Stats().WebhooksPending, st.want, st.pending)
		}
	}
	for i, w := range hooks.lines(t) {
		want := t0.Add([]time.Duration{time.Second, 3 * time.Second, 13 * time.Second}[i])
		if w.Timestamp != fmt.Sprint(want.Unix()) || !w.at.Equal(want) {
			t.Errorf("%s stamped %s, written at %v; want both %v", w.Status, w.Timestamp, w.at, want)
		}
	}
	if n := tm.pending(); n != 0 {
		t.Errorf("%d timers left", n)
	}
}

// scheduleRun sends n messages, 10 ms apart, on a clock the test moves,
// with every timer firing at its time, then lets an hour pass. It returns
// the lines in the order emitted, when each message was accepted (by
// callback data), the Accepted records and the stats.
func scheduleRun(t *testing.T, cfg Config, n int) ([]written, map[string]time.Time, map[string]acceptedRecord, Stats) {
	t.Helper()
	clk := newClock()
	tm := &timers{clk: clk}
	hooks := &stampedBuffer{now: clk.Now}
	acc := &stampedBuffer{now: clk.Now}
	cfg.Now, cfg.Rate, cfg.PairInterval, cfg.Webhooks, cfg.Accepted = clk.Now, -1, -1, hooks, acc
	s := newServer(cfg, tm.after)
	tm.settle = s.out.settle
	sentAt := map[string]time.Time{}
	for i := range n {
		cbd := fmt.Sprint("row", i)
		sentAt[cbd] = clk.Now()
		if a := send(s, fmt.Sprint(16505550000+i), cbd); a.status != 200 {
			t.Fatal(a)
		}
		tm.advance(10 * time.Millisecond)
	}
	tm.advance(time.Hour) // held messages are assessed within ten minutes
	st := s.Stats()
	if st.WebhooksPending != 0 || tm.pending() != 0 {
		t.Fatalf("after an hour: %d deliveries pending, %d timers", st.WebhooksPending, tm.pending())
	}
	ws := hooks.lines(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after := hooks.lines(t); len(after) != len(ws) {
		t.Fatalf("Close emitted %d more lines, with nothing pending", len(after)-len(ws))
	}
	recs := map[string]acceptedRecord{}
	acc.mu.Lock()
	for _, l := range lines(t, acc.b.Bytes()) {
		var r acceptedRecord
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatal(err)
		}
		recs[r.BizOpaqueCallbackData] = r
	}
	acc.mu.Unlock()
	return ws, sentAt, recs, st
}

// The schedule of many messages, with every kind of fate, on a perfect
// clock: nothing stamped after it is written; per message, statuses arrive
// in the order they happen except, at about ReorderRate, one arriving
// after a later one, its timestamp still its own; duplicates are the same
// body again, later; delivered never comes before its delay. The same
// seed gives the same schedule.
func TestWebhookSchedule(t *testing.T) {
	const n = 1200
	tests := []struct {
		name               string
		reorder, duplicate float64
	}{
		{"in order", 0, 0},
		{"reordered", 0.2, 0},
		{"duplicated", 0, 0.2},
		{"both", 0.1, 0.1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{
				Seed: 11, FailRate: 0.1, ReadRate: 0.5, HeldRate: 0.05, HeldFailRate: 0.3,
				ReorderRate: tc.reorder, DuplicateRate: tc.duplicate,
			}
			ws, sentAt, recs, st := scheduleRun(t, cfg, n)
			if int64(len(ws)) != st.Webhooks || len(recs) != n {
				t.Fatalf("%d lines, stats say %d; %d accepted records", len(ws), st.Webhooks, len(recs))
			}
			byMsg := map[string][]written{}
			seen := map[string]bool{}
			dupMsgs := 0
			for _, w := range ws {
				ts, err := strconv.ParseInt(w.Timestamp, 10, 64)
				if err != nil || ts > w.at.Unix() {
					t.Fatalf("%s of %s stamped %s, written at %d: in the future", w.Status, w.BizOpaqueCallbackData, w.Timestamp, w.at.Unix())
				}
				if ts < sentAt[w.BizOpaqueCallbackData].Unix() {
					t.Fatalf("%s of %s stamped %s, before the message was sent", w.Status, w.BizOpaqueCallbackData, w.Timestamp)
				}
				if seen[string(w.line)] {
					dupMsgs++
					continue // a duplicate: the same bytes, a later line
				}
				seen[string(w.line)] = true
				byMsg[w.BizOpaqueCallbackData] = append(byMsg[w.BizOpaqueCallbackData], w)
			}
			if int64(dupMsgs) != st.WebhookDuplicates {
				t.Errorf("%d duplicate lines, stats say %d", dupMsgs, st.WebhookDuplicates)
			}
			if got := float64(dupMsgs) / n; got < tc.duplicate*0.75 || got > tc.duplicate*1.25 {
				t.Errorf("%.3f of messages had a duplicate, want about %.2f", got, tc.duplicate)
			}

			inverted, multi := 0, 0
			for cbd, ss := range byMsg {
				r := recs[cbd]
				if got := statusNames(statusesOf(ss)); !strings.Contains(got, r.Final) {
					t.Errorf("%s: statuses %s, final %s", cbd, got, r.Final)
				}
				if len(ss) > 1 {
					multi++
				}
				late := 0
				for i := 1; i < len(ss); i++ {
					if rank(ss[i].Status) < rank(ss[i-1].Status) {
						late++
						// it arrives up to a second after the one that overtook it
						if d := ss[i].at.Sub(ss[i-1].at); d <= 0 || d > 1001*time.Millisecond {
							t.Errorf("%s: %s arrived %v after %s", cbd, ss[i].Status, d, ss[i-1].Status)
						}
					}
				}
				if late > 1 {
					t.Errorf("%s: %d statuses arrived late (%s), want at most one", cbd, late, statusNames(statusesOf(ss)))
				}
				if late > 0 {
					inverted++
				}
				// Timestamps tell the order things happened, however they arrived.
				stamp := map[string]int64{}
				for _, w := range ss {
					stamp[w.Status], _ = strconv.ParseInt(w.Timestamp, 10, 64)
				}
				if _, ok := stamp["sent"]; ok && (stamp["delivered"] != 0 && stamp["delivered"] < stamp["sent"] || stamp["failed"] != 0 && stamp["failed"] < stamp["sent"]) {
					t.Errorf("%s: stamped %v", cbd, stamp)
				}
				if stamp["read"] != 0 && stamp["read"] < stamp["delivered"] {
					t.Errorf("%s: stamped %v", cbd, stamp)
				}
				// Never before its time: delivered at least 1 s after
				// acceptance (sent 0–1 s, then 1–3 s); when nothing came
				// late, at most 4 s (a held message later), and read 5–30 s
				// after delivered.
				var deliveredAt time.Time
				for _, w := range ss {
					d := w.at.Sub(sentAt[cbd])
					switch w.Status {
					case "delivered":
						deliveredAt = w.at
						if d < time.Second || (late == 0 && !r.Held && d > 4*time.Second) {
							t.Errorf("%s: delivered %v after acceptance (held %v, late %d)", cbd, d, r.Held, late)
						}
					case "read":
						if late > 0 {
							continue
						}
						if d := w.at.Sub(deliveredAt); d < 5*time.Second || d > 30*time.Second {
							t.Errorf("%s: read %v after delivered", cbd, d)
						}
					}
				}
			}
			frac := float64(inverted) / float64(multi)
			if int64(inverted) != st.WebhookReordered {
				t.Errorf("%d messages with a late status, stats say %d", inverted, st.WebhookReordered)
			}
			if frac < tc.reorder*0.75 || frac > tc.reorder*1.25 {
				t.Errorf("%.3f of messages had a status arrive late, want about %.2f", frac, tc.reorder)
			}

			if tc.reorder > 0 && tc.duplicate > 0 {
				// The same seed, the same schedule.
				again, _, _, _ := scheduleRun(t, cfg, n)
				if a, b := summary(ws), summary(again); a != b {
					t.Errorf("same seed, another schedule")
				}
			}
		})
	}
}

func statusesOf(ws []written) []status {
	var out []status
	for _, w := range ws {
		out = append(out, w.status)
	}
	return out
}

// summary is what a schedule is, without the wamids (another sandbox
// instance numbers them apart): callback data, status, timestamp and
// time written, in the order written.
func summary(ws []written) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintln(&b, w.BizOpaqueCallbackData, w.Status, w.Timestamp, w.at.UnixNano())
	}
	return b.String()
}

// received is one POST a receiver got, and when (its wall clock).
type received struct {
	at   time.Time
	body []byte
	w    status
}

// receiver records the webhook POSTs it gets; fail decides, from how many
// it has had (the first is 1), which it answers 500.
type receiver struct {
	fail func(n int) bool
	mu   sync.Mutex
	got  []received
	n    int
	ch   chan struct{} // a token for every 2xx answered
}

func newReceiver(t *testing.T, fail func(int) bool) (*receiver, *httptest.Server) {
	r := &receiver{fail: fail, ch: make(chan struct{}, 100000)}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.n++
	fail := r.fail != nil && r.fail(r.n)
	var wb webhookBody
	var st status
	if json.Unmarshal(b, &wb) == nil && len(wb.Entry) == 1 && len(wb.Entry[0].Changes) == 1 && len(wb.Entry[0].Changes[0].Value.Statuses) == 1 {
		st = status{whStatus: wb.Entry[0].Changes[0].Value.Statuses[0], line: b}
	}
	r.got = append(r.got, received{at, b, st})
	r.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	r.ch <- struct{}{}
}

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// wait waits for n acknowledged POSTs (or fails after a generous while).
func (r *receiver) wait(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for i := range n {
		select {
		case <-r.ch:
		case <-deadline:
			t.Fatalf("%d of %d webhooks within a minute", i, n)
		}
	}
}

// On the wall clock, with concurrent sends: a receiver gets every status
// at or after its time, never stamped after it arrived, each message's in
// order, delivered not before its delay.
func TestWebhooksWallClock(t *testing.T) {
	recv, srv := newReceiver(t, nil)
	hooks := &stampedBuffer{now: time.Now}
	acc := &stampedBuffer{now: time.Now}
	sent := Delay{Mean: 20 * time.Millisecond, Jitter: 10 * time.Millisecond}
	delivered := Delay{Mean: 50 * time.Millisecond, Jitter: 25 * time.Millisecond}
	read := Delay{Mean: 100 * time.Millisecond, Jitter: 50 * time.Millisecond}
	s := New(Config{
		Seed: 3, Rate: -1, PairInterval: -1, ReadRate: 0.5,
		SentDelay: sent, DeliveredDelay: delivered, ReadDelay: read,
		Webhooks: hooks, Accepted: acc, WebhookURL: srv.URL, AppSecret: "s",
	})
	const workers, each = 8, 40
	before := map[string]time.Time{} // callback data -> just before its send
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				cbd := fmt.Sprint("w", w, "-", i)
				mu.Lock()
				before[cbd] = time.Now()
				mu.Unlock()
				if a := send(s, fmt.Sprint(16505550000+w*1000+i), cbd); a.status != 200 {
					t.Error(a)
				}
			}
		}()
	}
	wg.Wait()
	want := 0
	acc.mu.Lock()
	for _, l := range lines(t, acc.b.Bytes()) {
		var r acceptedRecord
		json.Unmarshal(l, &r)
		want += map[string]int{"delivered": 2, "read": 3}[r.Final]
	}
	acc.mu.Unlock()
	recv.wait(t, want) // all of them, before Close: they came on their own
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if got := recv.received(); len(got) != want || st.Webhooks != int64(want) || st.WebhookPosted != int64(want) || st.WebhookPostErrors != 0 {
		t.Fatalf("received %d, want %d; stats %+v", len(got), want, st)
	}

	least := func(d Delay) time.Duration { return d.Mean - d.Jitter }
	byMsg := map[string][]received{}
	for _, r := range recv.received() {
		ts, _ := strconv.ParseInt(r.w.Timestamp, 10, 64)
		if ts > r.at.Unix() {
			t.Errorf("%s stamped %d, arrived at %d (%v): in the future", r.w.Status, ts, r.at.Unix(), r.at)
		}
		byMsg[r.w.BizOpaqueCallbackData] = append(byMsg[r.w.BizOpaqueCallbackData], r)
	}
	for cbd, rs := range byMsg {
		var names []string
		for _, r := range rs {
			names = append(names, r.w.Status)
			since := r.at.Sub(before[cbd])
			var due time.Duration
			switch r.w.Status {
			case "sent":
				due = least(sent)
			case "delivered":
				due = least(sent) + least(delivered)
			case "read":
				due = least(sent) + least(delivered) + least(read)
			}
			if since < due {
				t.Errorf("%s: %s arrived %v after the send, before its time (%v)", cbd, r.w.Status, since, due)
			}
		}
		if got := strings.Join(names, ","); got != "sent,delivered" && got != "sent,delivered,read" {
			t.Errorf("%s arrived as %s", cbd, got)
		}
	}
	for _, w := range hooks.lines(t) {
		if ts, _ := strconv.ParseInt(w.Timestamp, 10, 64); ts > w.at.Unix() {
			t.Errorf("%s stamped %d, written at %v", w.Status, ts, w.at)
		}
	}
}

// Close emits every status still to come, at once, stamped with the
// moment it writes them (never their own time, an hour away), each
// message's in order: its final status is in the log.
func TestCloseEmitsPending(t *testing.T) {
	hooks := &stampedBuffer{now: time.Now}
	acc := &stampedBuffer{now: time.Now}
	hour := Delay{Mean: time.Hour}
	s := New(Config{
		Seed: 5, Rate: -1, PairInterval: -1, FailRate: 0.2, ReadRate: 0.5, HeldRate: 0.1, HeldFailRate: 0.3,
		DuplicateRate: 0.2, SentDelay: hour, DeliveredDelay: hour, ReadDelay: hour,
		Webhooks: hooks, Accepted: acc,
	})
	const n = 300
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 6 {
				if a := send(s, fmt.Sprint(16505550000+i), fmt.Sprint("row", i)); a.status != 200 {
					t.Error(a)
				}
			}
		}()
	}
	wg.Wait()
	if got := hooks.lines(t); len(got) != 0 {
		t.Fatalf("%d webhooks an hour early", len(got))
	}
	pending := s.Stats().WebhooksPending
	start := time.Now().Unix()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ws := hooks.lines(t)
	if st := s.Stats(); int64(len(ws)) != pending || st.Webhooks != pending || st.WebhooksPending != 0 {
		t.Fatalf("Close wrote %d lines of %d pending; stats %+v", len(ws), pending, st)
	}
	byMsg := map[string][]status{} // duplicates left out
	seen := map[string]bool{}
	for _, w := range ws {
		if ts, _ := strconv.ParseInt(w.Timestamp, 10, 64); ts > w.at.Unix() || ts < start {
			t.Errorf("%s stamped %d, written at %d, Close called at %d", w.Status, ts, w.at.Unix(), start)
		}
		if !seen[string(w.line)] {
			seen[string(w.line)] = true
			byMsg[w.BizOpaqueCallbackData] = append(byMsg[w.BizOpaqueCallbackData], w.status)
		}
	}
	acc.mu.Lock()
	defer acc.mu.Unlock()
	for _, l := range lines(t, acc.b.Bytes()) {
		var r acceptedRecord
		json.Unmarshal(l, &r)
		ss := byMsg[r.BizOpaqueCallbackData]
		got := statusNames(ss)
		if !strings.Contains(got, r.Final) {
			t.Errorf("%s: statuses %s, final %s", r.BizOpaqueCallbackData, got, r.Final)
		}
		for i := 1; i < len(ss); i++ {
			if rank(ss[i].Status) < rank(ss[i-1].Status) {
				t.Errorf("%s: out of order: %s", r.BizOpaqueCallbackData, got)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A failed POST is retried at once, then after the backoff: a receiver
// failing the first two gets the status on the third.
func TestWebhookPostRetried(t *testing.T) {
	const backoff = 100 * time.Millisecond
	recv, srv := newReceiver(t, func(n int) bool { return n <= 2 })
	s := New(Config{
		Rate: -1, WebhookURL: srv.URL, WebhookBackoff: backoff,
		SentDelay: Delay{Mean: -1}, DeliveredDelay: Delay{Mean: time.Hour}, // delivered comes with Close
	})
	if a := send(s, "16505551234", "cb"); a.status != 200 {
		t.Fatal(a)
	}
	recv.wait(t, 1)
	got := recv.received()
	if len(got) != 3 || got[0].w.Status != "sent" || string(got[1].body) != string(got[0].body) || string(got[2].body) != string(got[0].body) {
		t.Fatalf("received %d POSTs: %v", len(got), got)
	}
	if gap := got[2].at.Sub(got[1].at); gap < backoff {
		t.Errorf("third try %v after the second, want at least the backoff %v", gap, backoff)
	}
	// (WebhookPosted counts once the answer is read: after Close.)
	if st := s.Stats(); st.WebhookPostErrors != 2 || st.WebhookRetries != 2 || st.WebhookFailed != 0 {
		t.Errorf("stats %+v", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := recv.received(); len(got) != 4 || got[3].w.Status != "delivered" {
		t.Errorf("after Close: %d POSTs", len(got))
	}
	if st := s.Stats(); st.WebhookPosted != 2 || st.WebhookPostErrors != 2 || st.WebhookFailed != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A receiver that always fails gets each body WebhookTries times, the
// backoff doubling between them, and the sandbox counts it failed.
func TestWebhookPostGivenUp(t *testing.T) {
	const backoff, tries, n = 20 * time.Millisecond, 4, 5
	recv, srv := newReceiver(t, func(int) bool { return true })
	s := New(Config{
		Rate: -1, PairInterval: -1, WebhookURL: srv.URL, WebhookBackoff: backoff, WebhookTries: tries,
		SentDelay: Delay{Mean: -1}, DeliveredDelay: Delay{Mean: -1},
	})
	for i := range n {
		send(s, fmt.Sprint(16505550000+i), "")
	}
	if err := s.Close(); err != nil { // waits for the tries
		t.Fatal(err)
	}
	bodies := 2 * n // sent and delivered
	st := s.Stats()
	if st.Webhooks != int64(bodies) || st.WebhookPostErrors != int64(tries*bodies) || st.WebhookRetries != int64((tries-1)*bodies) ||
		st.WebhookFailed != int64(bodies) || st.WebhookPosted != 0 {
		t.Errorf("stats %+v; want %d bodies, each tried %d times and failed", st, bodies, tries)
	}
	tried := map[string][]time.Time{}
	for _, r := range recv.received() {
		tried[string(r.body)] = append(tried[string(r.body)], r.at)
	}
	if len(tried) != bodies {
		t.Fatalf("%d bodies received, want %d", len(tried), bodies)
	}
	for _, at := range tried {
		if len(at) != tries {
			t.Fatalf("a body tried %d times, want %d", len(at), tries)
		}
		// at once, then backoff, 2×backoff…
		for i := 2; i < len(at); i++ {
			if want := backoff << (i - 2); at[i].Sub(at[i-1]) < want {
				t.Errorf("try %d came %v after the one before, want at least %v", i+1, at[i].Sub(at[i-1]), want)
			}
		}
	}
}

// Shutdown's deadline bounds the wait for a receiver that never answers
// 2xx: the retries still waiting are dropped and counted failed.
func TestShutdownDropsRetries(t *testing.T) {
	_, srv := newReceiver(t, func(int) bool { return true })
	s := New(Config{
		Rate: -1, PairInterval: -1, WebhookURL: srv.URL, WebhookBackoff: time.Hour,
		SentDelay: Delay{Mean: -1}, DeliveredDelay: Delay{Mean: -1},
	})
	for i := range 3 {
		send(s, fmt.Sprint(16505550000+i), "")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Shutdown took %v with a 200ms deadline", d)
	}
	if st := s.Stats(); st.WebhookFailed != 6 || st.WebhookPosted != 0 {
		t.Errorf("stats %+v, want 6 failed", st)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after Shutdown: %v", err)
	}
}
