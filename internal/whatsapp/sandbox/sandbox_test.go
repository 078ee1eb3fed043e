package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAuth(t *testing.T) {
	s := New(Config{Token: token, ExpiredToken: "old-token"})
	defer s.Close()
	body := msg("16505551234", "", "welcome", "en_US", 0)
	tests := []struct {
		name       string
		header     string
		wantStatus int
		wantCode   int
	}{
		{"valid", "Bearer " + token, 200, 0},
		{"scheme is case-insensitive", "bearer " + token, 200, 0},
		{"expired", "Bearer old-token", 401, 190},
		{"wrong", "Bearer nope", 401, 190},
		{"missing", "", 403, 200},
		{"empty bearer", "Bearer ", 403, 200},
		{"not bearer", "Basic dXNlcjpwYXNz", 403, 200},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// a new recipient each time, so the pair limit stays out of the way
			r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(strings.Replace(body, "16505551234", fmt.Sprint(16505551234+i), 1)))
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			a := decode(w.Code, w.Body.Bytes())
			if a.status != tt.wantStatus || a.code != tt.wantCode {
				t.Errorf("got %v, want HTTP %d code %d", a, tt.wantStatus, tt.wantCode)
			}
		})
	}
	t.Run("any token when none configured", func(t *testing.T) {
		s := New(Config{})
		defer s.Close()
		if a := do(s, http.MethodPost, path, "whatever", body); a.status != 200 {
			t.Errorf("got %v", a)
		}
	})
}

func TestValidation(t *testing.T) {
	s := New(Config{
		Token:          token,
		PhoneNumberIDs: []string{phoneID, "222"},
		Templates: []Template{
			{Name: "welcome", Languages: []string{"en_US", "pt_BR"}, BodyParams: 2},
			{Name: "any_language", BodyParams: 0},
		},
	})
	defer s.Close()
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		wantStatus int
		wantCode   int
	}{
		{"ok", "POST", path, msg("16505550001", "c1", "welcome", "en_US", 2), 200, 0},
		{"ok with plus", "POST", path, msg("+16505550002", "c2", "welcome", "pt_BR", 2), 200, 0},
		{"ok without version", "POST", "/" + phoneID + "/messages", msg("16505550003", "c3", "welcome", "en_US", 2), 200, 0},
		{"ok any language", "POST", "/v23.0/222/messages", msg("16505550004", "c4", "any_language", "de", 0), 200, 0},
		{"unknown template", "POST", path, msg("16505550005", "", "nope", "en_US", 2), 404, 132001},
		{"unapproved language", "POST", path, msg("16505550006", "", "welcome", "fr", 2), 404, 132001},
		{"too few params", "POST", path, msg("16505550007", "", "welcome", "en_US", 1), 400, 132000},
		{"too many params", "POST", path, msg("16505550008", "", "welcome", "en_US", 3), 400, 132000},
		{"not JSON", "POST", path, `{"messaging_product":`, 400, 100},
		{"no messaging_product", "POST", path, `{"to":"16505550009","type":"template"}`, 400, 100},
		{"wrong messaging_product", "POST", path, `{"messaging_product":"sms","to":"16505550009","type":"template"}`, 400, 100},
		{"group recipient", "POST", path, `{"messaging_product":"whatsapp","recipient_type":"group","to":"16505550009","type":"template"}`, 400, 100},
		{"no to", "POST", path, `{"messaging_product":"whatsapp","type":"template","template":{"name":"welcome","language":{"code":"en_US"}}}`, 400, 131008},
		{"bad to", "POST", path, msg("call-me", "", "welcome", "en_US", 2), 400, 131009},
		{"no type", "POST", path, `{"messaging_product":"whatsapp","to":"16505550009"}`, 400, 131008},
		{"text message", "POST", path, `{"messaging_product":"whatsapp","to":"16505550009","type":"text","text":{"body":"hi"}}`, 400, 131051},
		{"no template", "POST", path, `{"messaging_product":"whatsapp","to":"16505550009","type":"template"}`, 400, 131008},
		{"no template name", "POST", path, `{"messaging_product":"whatsapp","to":"16505550009","type":"template","template":{"language":{"code":"en_US"}}}`, 400, 131008},
		{"no language", "POST", path, `{"messaging_product":"whatsapp","to":"16505550009","type":"template","template":{"name":"welcome"}}`, 400, 131008},
		{"callback data too long", "POST", path, msg("16505550010", strings.Repeat("x", 513), "welcome", "en_US", 2), 400, 100},
		{"unknown phone number id", "POST", "/v23.0/333/messages", msg("16505550011", "", "welcome", "en_US", 2), 400, 100},
		{"GET", "GET", path, "", 400, 100},
		{"unknown path", "POST", "/v23.0/" + phoneID + "/media", "{}", 400, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := do(s, tt.method, tt.path, token, tt.body)
			if a.status != tt.wantStatus || a.code != tt.wantCode {
				t.Errorf("got %v, want HTTP %d code %d", a, tt.wantStatus, tt.wantCode)
			}
			if tt.wantCode == 0 && !strings.HasPrefix(a.wamid, "wamid.") {
				t.Errorf("no wamid in %v", a)
			}
		})
	}
	st := s.Stats()
	if st.Accepted != 4 || st.Errors[132001] != 2 || st.Errors[132000] != 2 || st.Requests != int64(len(tests)) {
		t.Errorf("stats = %+v", st)
	}
}

func TestSuccessShape(t *testing.T) {
	s := New(Config{Rate: -1})
	defer s.Close()
	a := do(s, "POST", path, token, msg("+16505551234", "c", "welcome", "en_US", 1))
	want := `{"messaging_product":"whatsapp","contacts":[{"input":"+16505551234","wa_id":"16505551234"}],"messages":[{"id":"` + a.wamid + `","message_status":"accepted"}]}`
	if string(a.body) != want {
		t.Errorf("body = %s\nwant   %s", a.body, want)
	}
	ids := map[string]bool{}
	for i := range 2000 {
		a := send(s, fmt.Sprint(4915100000000+i), "")
		if a.status != 200 {
			t.Fatalf("%d: %v", i, a)
		}
		if ids[a.wamid] || len(a.wamid) > 128 || !strings.HasPrefix(a.wamid, "wamid.") {
			t.Fatalf("wamid %q: duplicate or malformed", a.wamid)
		}
		ids[a.wamid] = true
	}
}

func TestThrottleSlidingWindow(t *testing.T) {
	clk := newClock()
	s := New(Config{Now: clk.Now, Rate: 3, Rates: map[string]float64{"555": 1.9}, PairInterval: -1})
	defer s.Close()
	ms := time.Millisecond
	steps := []struct {
		at   time.Duration // since start
		num  string
		want int // error code
	}{
		{0, phoneID, 0},
		{500 * ms, phoneID, 0},
		{500 * ms, phoneID, 0},
		{500 * ms, phoneID, 130429},  // 3 in (−0.5s, 0.5s]
		{999 * ms, phoneID, 130429},  // still 3 in (−1ms, 999ms]
		{999 * ms, "555", 0},         // other numbers have their own window
		{999 * ms, "555", 130429},    // Rate 1.9 is one per second
		{1000 * ms, phoneID, 0},      // the message at 0 left the window
		{1200 * ms, phoneID, 130429}, // 0.5, 0.5, 1.0: a fixed window would allow this
		{1500 * ms, phoneID, 0},      // both at 0.5 left
		{1500 * ms, phoneID, 0},
		{1500 * ms, phoneID, 130429},
		{1999 * ms, "555", 0},
	}
	start := clk.Now()
	for i, st := range steps {
		clk.mu.Lock()
		clk.t = start.Add(st.at)
		clk.mu.Unlock()
		a := do(s, "POST", "/v23.0/"+st.num+"/messages", token, msg(fmt.Sprint(16505550000+i), "", "t", "en", 0))
		if a.code != st.want {
			t.Errorf("step %d at %v on %s: got %v, want code %d", i, st.at, st.num, a, st.want)
		}
		if st.want == 130429 && a.status != 400 {
			t.Errorf("step %d: 130429 with HTTP %d, want 400", i, a.status)
		}
	}
	stats := s.Stats()
	if stats.Throttled != 5 || stats.Errors[130429] != 5 {
		t.Errorf("throttled = %d (errors %v), want 5", stats.Throttled, stats.Errors)
	}
	if got := stats.MaxPerSecond; got[phoneID] != 3 || got["555"] != 1 {
		t.Errorf("max per second = %v, want %s:3 555:1", got, phoneID)
	}
}

func TestThrottleConcurrent(t *testing.T) {
	clk := newClock() // frozen: everything lands in one window
	s := New(Config{Now: clk.Now, Rate: 50})
	defer s.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				send(s, fmt.Sprint(16500000000+g*100+i), "")
			}
		}()
	}
	wg.Wait()
	st := s.Stats()
	if st.Accepted != 50 || st.Throttled != 150 || st.MaxPerSecond[phoneID] != 50 {
		t.Errorf("accepted %d throttled %d max %v; want 50, 150, 50", st.Accepted, st.Throttled, st.MaxPerSecond)
	}
}

func TestDefaultRate(t *testing.T) {
	clk := newClock()
	s := New(Config{Now: clk.Now})
	defer s.Close()
	for i := range 100 {
		send(s, fmt.Sprint(16500000000+i), "")
	}
	if st := s.Stats(); st.Accepted != 80 || st.Throttled != 20 {
		t.Errorf("accepted %d throttled %d; want Meta's default 80/s", st.Accepted, st.Throttled)
	}
	unlimited := New(Config{Now: clk.Now, Rate: -1})
	defer unlimited.Close()
	for i := range 200 {
		send(unlimited, fmt.Sprint(16500000000+i), "")
	}
	if st := unlimited.Stats(); st.Accepted != 200 {
		t.Errorf("Rate -1: accepted %d, want all 200", st.Accepted)
	}
}

func TestPairLimit(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		steps    []struct {
			at   time.Duration
			to   string
			want int
		}
	}{
		{"default 6s", 0, []struct {
			at   time.Duration
			to   string
			want int
		}{
			{0, "16505551111", 0},
			{5 * time.Second, "16505551111", 131056},
			{5 * time.Second, "+16505551111", 131056}, // same recipient with a +
			{5 * time.Second, "16505552222", 0},
			{6 * time.Second, "16505551111", 0},
			{6 * time.Second, "16505551111", 131056},
		}},
		{"disabled", -1, []struct {
			at   time.Duration
			to   string
			want int
		}{
			{0, "16505551111", 0},
			{0, "16505551111", 0},
		}},
		{"1m", time.Minute, []struct {
			at   time.Duration
			to   string
			want int
		}{
			{0, "16505551111", 0},
			{59 * time.Second, "16505551111", 131056},
			{60 * time.Second, "16505551111", 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			start := clk.Now()
			s := New(Config{Now: clk.Now, PairInterval: tt.interval})
			defer s.Close()
			wantLimited := 0
			for i, st := range tt.steps {
				clk.mu.Lock()
				clk.t = start.Add(st.at)
				clk.mu.Unlock()
				a := send(s, st.to, fmt.Sprint("cbd-", i))
				if a.code != st.want {
					t.Errorf("step %d: got %v, want code %d", i, a, st.want)
				}
				if st.want != 0 {
					wantLimited++
				}
			}
			if got := s.Stats().PairLimited; got != int64(wantLimited) {
				t.Errorf("pair_limited = %d, want %d", got, wantLimited)
			}
		})
	}
}

// outcome of one request, for comparing runs.
func (a answer) outcome() string {
	if a.code != 0 {
		return fmt.Sprintf("%d/%d", a.status, a.code)
	}
	return "ok"
}

func TestRatesAndDeterminism(t *testing.T) {
	cfg := Config{
		Seed:          42,
		Rate:          -1,
		TransientRate: 0.10,
		PermanentRate: 0.05,
		LateRate:      0.05,
		LateDelay:     time.Nanosecond, // counted as late, but not actually waited for here
		FailRate:      0.20,
		ReadRate:      0.5,
	}
	const n = 4000
	run := func(cfg Config, workers int) (map[string]string, Stats) {
		var acc bytes.Buffer
		cfg.Accepted = &acc
		s := New(cfg)
		out := make([]string, n)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += workers {
					out[i] = send(s, fmt.Sprint(4917600000000+i), fmt.Sprint("run1:row", i)).outcome()
				}
			}()
		}
		wg.Wait()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		res := map[string]string{}
		for i, o := range out {
			res[fmt.Sprint("run1:row", i)] = o
		}
		for _, l := range lines(t, acc.Bytes()) {
			var r acceptedRecord
			json.Unmarshal(l, &r)
			res[r.BizOpaqueCallbackData] += "/" + r.Final
			if r.Late {
				res[r.BizOpaqueCallbackData] += "/late"
			}
		}
		return res, s.Stats()
	}

	seq, st := run(cfg, 1)
	frac := func(v int64) float64 { return float64(v) / n }
	transient := st.Errors[131000] + st.Errors[131016] + st.Errors[2]
	checks := []struct {
		name      string
		got, want float64
	}{
		{"transient", frac(transient), 0.10},
		{"permanent", frac(st.Errors[131026]), 0.05},
		{"late", frac(st.Late), 0.05},
		{"131000 share of transient", float64(st.Errors[131000]) / float64(transient), 1.0 / 3},
		{"code 2 share of transient", float64(st.Errors[2]) / float64(transient), 1.0 / 3},
		{"failed of accepted", float64(st.Failed) / float64(st.Accepted), 0.20},
		{"read of delivered", float64(st.Read) / float64(st.Delivered), 0.5},
	}
	for _, c := range checks {
		if c.got < c.want*0.75 || c.got > c.want*1.25 {
			t.Errorf("%s = %.3f, want about %.3f", c.name, c.got, c.want)
		}
	}
	if st.Accepted+transient+st.Errors[131026] != n {
		t.Errorf("accepted %d + errors %v != %d", st.Accepted, st.Errors, n)
	}

	par, _ := run(cfg, 8)
	if diff := compare(seq, par); diff != "" {
		t.Errorf("same seed, concurrent run differs: %s", diff)
	}
	cfg.Seed = 43
	other, _ := run(cfg, 8)
	if compare(seq, other) == "" {
		t.Error("different seeds gave identical outcomes")
	}
}

func compare(a, b map[string]string) string {
	diffs := 0
	first := ""
	for k, v := range a {
		if b[k] != v {
			if diffs == 0 {
				first = fmt.Sprintf("%s: %s vs %s", k, v, b[k])
			}
			diffs++
		}
	}
	if diffs == 0 {
		return ""
	}
	return fmt.Sprintf("%d differences, e.g. %s", diffs, first)
}

// A retry is a new attempt with its own draw: a message that failed
// transiently is not doomed to fail forever.
func TestRetryDrawsAgain(t *testing.T) {
	s := New(Config{Seed: 7, TransientRate: 0.5, PairInterval: -1, Rate: -1})
	defer s.Close()
	recovered := 0
	for i := range 200 {
		to, cbd := fmt.Sprint(16500000000+i), fmt.Sprint("r", i)
		if send(s, to, cbd).code == 0 {
			continue
		}
		for range 20 {
			if send(s, to, cbd).code == 0 {
				recovered++
				break
			}
		}
	}
	if recovered < 50 {
		t.Errorf("only %d transiently failed messages succeeded on retry", recovered)
	}
	if d := s.Stats().Duplicates; d != 0 {
		t.Errorf("duplicates = %d, want 0 (only failed attempts were retried)", d)
	}
}

func TestDuplicatesCounted(t *testing.T) {
	s := New(Config{PairInterval: -1})
	defer s.Close()
	send(s, "16505551234", "row1")
	send(s, "16505551234", "row1") // resent after an ambiguous answer, say
	send(s, "16505559999", "row1")
	send(s, "16505551234", "row2")
	send(s, "16505551234", "")
	send(s, "16505551234", "")
	if d := s.Stats().Duplicates; d != 2 {
		t.Errorf("duplicates = %d, want 2", d)
	}
}

func TestLate(t *testing.T) {
	var hooks bytes.Buffer
	s := New(Config{LateRate: 1, LateDelay: time.Hour, Webhooks: &hooks})
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Close() // before ts.Close, which waits for handlers

	post := func(ctx context.Context, to string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+path, strings.NewReader(msg(to, "late-"+to, "t", "en", 0)))
		req.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultClient.Do(req)
	}

	// waitLate polls (briefly) until n answers are being held back.
	waitLate := func(t *testing.T, n int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for s.Stats().Late < n {
			if time.Now().After(deadline) {
				t.Fatalf("late = %d, want %d", s.Stats().Late, n)
			}
			time.Sleep(time.Millisecond)
		}
	}

	t.Run("client gives up", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errc := make(chan error, 1)
		go func() {
			_, err := post(ctx, "16505551111")
			errc <- err
		}()
		waitLate(t, 1)
		cancel() // as a client timeout would
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if st := s.Stats(); st.Accepted != 1 || st.Late != 1 {
			t.Errorf("accepted %d late %d, want 1 1: the message went out although the client never heard", st.Accepted, st.Late)
		}
	})

	t.Run("cancelled request returns", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := httptest.NewRequestWithContext(ctx, "POST", path, strings.NewReader(msg("16505552222", "", "t", "en", 0)))
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r) // must not wait an hour
		if w.Body.Len() != 0 {
			t.Errorf("wrote %s to a gone client", w.Body)
		}
	})

	t.Run("Close releases", func(t *testing.T) {
		type result struct {
			resp *http.Response
			err  error
		}
		ch := make(chan result, 1)
		go func() {
			resp, err := post(context.Background(), "16505553333")
			ch <- result{resp, err}
		}()
		waitLate(t, 3)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatal(r.err)
			}
			b, _ := io.ReadAll(r.resp.Body)
			r.resp.Body.Close()
			if a := decode(r.resp.StatusCode, b); a.status != 200 || a.wamid == "" {
				t.Errorf("released answer %v, want the 200 it was holding", a)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not release the late answer")
		}
		// all three accepted messages have their webhooks
		seen := map[string]bool{}
		for _, l := range lines(t, hooks.Bytes()) {
			seen[parseWebhook(t, l).BizOpaqueCallbackData] = true
		}
		for _, to := range []string{"16505551111", "16505553333"} {
			if !seen["late-"+to] {
				t.Errorf("no webhook for late message to %s", to)
			}
		}
		if a := send(s, "16505554444", ""); a.status != 503 || a.code != 2 {
			t.Errorf("after Close: %v, want HTTP 503 code 2", a)
		}
	})
}

func TestLatency(t *testing.T) {
	s := New(Config{Latency: 30 * time.Millisecond, Jitter: 10 * time.Millisecond})
	defer s.Close()
	start := time.Now()
	if a := send(s, "16505551234", ""); a.status != 200 {
		t.Fatal(a)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("answered after %v, want at least Latency-Jitter = 20ms", d)
	}
}

// TestArrivalJitter: a request counts against its number's limit up to
// 2×ArrivalJitter after it came, a different delay each time; with none,
// at once. The jitter is large beside a loaded machine's own delays.
func TestArrivalJitter(t *testing.T) {
	const jitter = 40 * time.Millisecond
	median := map[time.Duration]time.Duration{}
	for _, j := range []time.Duration{0, jitter} {
		var acc bytes.Buffer
		s := New(Config{Rate: -1, PairInterval: -1, ArrivalJitter: j, Accepted: &acc})
		var delays []time.Duration
		for i := range 30 {
			start := time.Now()
			if a := send(s, fmt.Sprint(16505550000+i), ""); a.status != 200 {
				t.Fatal(a)
			}
			line := lines(t, acc.Bytes())[i]
			var r struct {
				Time time.Time `json:"time"`
			}
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
			delays = append(delays, r.Time.Sub(start))
		}
		s.Close()
		slices.Sort(delays)
		if delays[0] < 0 {
			t.Errorf("jitter %v: counted %v before it came", j, delays[0])
		}
		median[j] = delays[len(delays)/2]
		if j > 0 && delays[len(delays)-1]-delays[0] < j {
			t.Errorf("jitter %v: delays from %v to %v, want them spread over 0–%v", j, delays[0], delays[len(delays)-1], 2*j)
		}
	}
	if median[0] >= median[jitter]/2 {
		t.Errorf("median delay %v without jitter, %v with ±%v: want the jitter to show", median[0], median[jitter], jitter)
	}
}

func TestWebhooks(t *testing.T) {
	clk := newClock()
	var hooks, acc bytes.Buffer
	s := New(Config{
		Seed: 1, Now: clk.Now, Rate: -1, WABAID: "419561257915477",
		Templates:     []Template{{Name: "promo", BodyParams: 1, Category: "utility"}},
		FailRate:      0.2,
		ReadRate:      0.5,
		DuplicateRate: 0.2,
		ReorderRate:   0.2,
		Webhooks:      &hooks,
		Accepted:      &acc,
	})
	sent := map[string]string{} // wamid -> callback data
	for i := range 300 {
		p := path
		if i%2 == 1 {
			p = "/v24.0/" + phoneID + "/messages"
		}
		cbd := fmt.Sprint("camp:", i)
		a := do(s, "POST", p, token, msg(fmt.Sprint(5511900000000+i), cbd, "promo", "pt_BR", 1))
		if a.status != 200 {
			t.Fatal(a)
		}
		sent[a.wamid] = cbd
		clk.Add(10 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	hookLines := lines(t, hooks.Bytes())
	if int64(len(hookLines)) != st.Webhooks {
		t.Errorf("%d webhook lines, stats say %d", len(hookLines), st.Webhooks)
	}
	if st.Delivered+st.Failed != st.Accepted || st.Failed == 0 || st.Read == 0 {
		t.Errorf("outcomes: %+v", st)
	}

	start := newClock().Now().Unix()
	byMsg := map[string][]status{}
	seenLine := map[string]int{}
	for _, l := range hookLines {
		w := parseWebhook(t, l)
		seenLine[string(l)]++
		if w.BizOpaqueCallbackData != sent[w.ID] || w.BizOpaqueCallbackData == "" {
			t.Errorf("status for %s echoes callback data %q, want %q", w.ID, w.BizOpaqueCallbackData, sent[w.ID])
		}
		if w.PhoneNumberID != phoneID || !strings.HasPrefix(w.RecipientID, "55119") {
			t.Errorf("metadata/recipient wrong: %s", l)
		}
		ts, err := strconv.ParseInt(w.Timestamp, 10, 64)
		if err != nil || ts < start || ts > start+3+300 {
			t.Errorf("timestamp %q not from the injected clock (start %d)", w.Timestamp, start)
		}
		switch w.Status {
		case "sent", "delivered":
			if w.Pricing == nil || w.Pricing.Category != "utility" || w.Pricing.PricingModel != "PMP" {
				t.Errorf("%s without pricing: %s", w.Status, l)
			}
		case "read":
			if w.Pricing != nil {
				t.Errorf("read repeats pricing: %s", l)
			}
		case "failed":
			if len(w.Errors) != 1 || (w.Errors[0].Code != 131049 && w.Errors[0].Code != 131026) {
				t.Errorf("failed without a known error: %s", l)
			}
		}
		byMsg[w.ID] = append(byMsg[w.ID], w)
	}
	if len(byMsg) != len(sent) {
		t.Errorf("webhooks for %d messages, %d accepted", len(byMsg), len(sent))
	}
	dups, reordered := 0, 0
	for _, n := range seenLine {
		dups += n - 1
	}
	for id, ss := range byMsg {
		set := map[string]bool{}
		for i, w := range ss {
			set[w.Status] = true
			if i > 0 && rank(w.Status) < rank(ss[i-1].Status) {
				reordered++
			}
		}
		switch {
		case set["failed"]:
			if set["delivered"] || set["read"] {
				t.Errorf("%s: failed and delivered", id)
			}
		case !set["sent"] || !set["delivered"]:
			t.Errorf("%s: statuses %v, want sent and delivered", id, set)
		}
		wantConv := indexOf(sent, id)%2 == 0 // v23.0 requests; v24.0+ omit conversation
		for _, w := range ss {
			if w.Status == "sent" && (w.Conversation != nil) != wantConv {
				t.Errorf("%s: conversation %v on a sent status, want %v", id, w.Conversation, wantConv)
			}
		}
	}
	if int64(dups) != st.WebhookDuplicates || dups == 0 {
		t.Errorf("%d duplicate lines, stats say %d", dups, st.WebhookDuplicates)
	}
	if reordered == 0 || st.WebhookReordered == 0 {
		t.Errorf("nothing out of order (stats %d)", st.WebhookReordered)
	}

	recs := lines(t, acc.Bytes())
	if int64(len(recs)) != st.Accepted {
		t.Errorf("%d accepted records, %d accepted", len(recs), st.Accepted)
	}
	for _, l := range recs {
		var r acceptedRecord
		if err := json.Unmarshal(l, &r); err != nil || sent[r.WAMID] != r.BizOpaqueCallbackData || r.PhoneNumberID != phoneID ||
			r.Attempt != 1 || r.Template != "promo" || r.Language != "pt_BR" {
			t.Errorf("accepted record %s", l)
		}
	}
}

func rank(s string) int {
	return map[string]int{"sent": 0, "delivered": 1, "read": 2, "failed": 1}[s]
}

// indexOf recovers the request number from the callback data "camp:<i>".
func indexOf(sent map[string]string, wamid string) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(sent[wamid], "camp:"))
	return i
}

func TestWebhookPostSigned(t *testing.T) {
	const secret = "app-secret"
	recv := newSignedReceiver(t, secret)
	if !strings.HasPrefix(recv.URL, "http://127.0.0.1:") {
		t.Fatalf("receiver on %s, want 127.0.0.1", recv.URL)
	}

	var hooks bytes.Buffer
	s := New(Config{WebhookURL: recv.URL, AppSecret: secret, Webhooks: &hooks, ReadRate: 1, Rate: -1})
	for i := range 20 {
		send(s, fmt.Sprint(16505550000+i), fmt.Sprint("cb", i))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	bodies, bad := recv.got()
	if bad != 0 || len(bodies) != 60 || s.Stats().Webhooks != 60 || s.Stats().WebhookPostErrors != 0 {
		t.Errorf("%d good, %d bad signatures, stats %+v; want 60 good (sent, delivered, read × 20)", len(bodies), bad, s.Stats())
	}
	// the posted bytes are exactly the logged lines, the thing that was signed
	logged := map[string]bool{}
	for _, l := range lines(t, hooks.Bytes()) {
		logged[string(l)] = true
	}
	for _, b := range bodies {
		if !logged[string(b)] {
			t.Errorf("posted body not in the log: %s", b)
		}
	}

	// a known vector: HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog")
	if got := Sign("key", []byte("The quick brown fox jumps over the lazy dog")); got != "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8" {
		t.Errorf("Sign = %s", got)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestCloseReportsWriteError(t *testing.T) {
	s := New(Config{Webhooks: failingWriter{}})
	send(s, "16505551234", "")
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Close = %v, want the write error", err)
	}
	if err := s.Close(); err == nil {
		t.Error("second Close lost the error")
	}
}

func TestStatsEndpoint(t *testing.T) {
	clk := newClock()
	s := New(Config{Now: clk.Now, Rate: 2})
	defer s.Close()
	for i := range 3 {
		send(s, fmt.Sprint(16505550000+i), "")
	}
	do(s, "POST", path, "", "{}")
	r := httptest.NewRequest("GET", "/_sandbox/stats", nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("HTTP %d %s", w.Code, w.Header())
	}
	var raw map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"requests", "accepted", "throttled", "pair_limited", "errors", "max_per_second", "duplicates", "late"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("stats JSON lacks %q: %s", k, w.Body)
		}
	}
	var got Stats
	json.Unmarshal(w.Body.Bytes(), &got)
	want := Stats{Requests: 4, Accepted: 2, Throttled: 1, Errors: map[int]int64{130429: 1, 200: 1}, MaxPerSecond: map[string]int{phoneID: 2}, Delivered: 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stats = %+v\nwant    %+v", got, want)
	}
	if a := do(s, "POST", "/_sandbox/stats", token, ""); a.status != 400 {
		t.Errorf("POST stats: %v", a)
	}
}
