package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestStrictWindow: the same requests, at the same instants, against the
// default window (accepted messages only) and the strict one (every
// request at its arrival): what each throttles.
func TestStrictWindow(t *testing.T) {
	const other = "555"
	ms := time.Millisecond
	type step struct {
		at      time.Duration // since start
		num     string
		body    string // "" is a valid send
		def     int    // the answer's error code by default
		strict  int    // and in strict mode
		comment string
	}
	bad := `{"messaging_product":"whatsapp","to":` // not JSON: code 100 in both modes
	steps := []step{
		{0, phoneID, "", 0, 0, ""},
		{0, phoneID, "", 0, 0, ""},
		{500 * ms, phoneID, "", 130429, 130429, "two in the second before"},
		{1000 * ms, phoneID, "", 0, 0, "the two at 0 left; strict: the throttled one at 0.5 is in"},
		{1000 * ms, phoneID, "", 0, 130429, "strict: 0.5 (throttled) and 1.0 fill it"},
		{1400 * ms, phoneID, "", 130429, 130429, ""},
		{1600 * ms, phoneID, "", 130429, 130429, ""},
		{2000 * ms, phoneID, "", 0, 130429, "strict: the throttled ones at 1.4 and 1.6 keep it full"},
		{2500 * ms, phoneID, "", 0, 130429, "strict: 1.6 and 2.0, both throttled"},
		{3000 * ms, phoneID, "", 0, 0, "strict: only 2.5 is left"},

		{0, other, bad, 100, 100, "refused: strict counts it all the same"},
		{0, other, bad, 100, 100, ""},
		{500 * ms, other, "", 0, 130429, "strict: the two refused requests fill the second"},
		{1000 * ms, other, "", 0, 0, ""},
	}
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			clk := newClock()
			s := New(Config{Now: clk.Now, Rate: 2, PairInterval: -1, StrictWindow: strict})
			defer s.Close()
			start := clk.Now()
			throttled := 0
			for i, st := range steps {
				clk.Set(start.Add(st.at))
				body := st.body
				if body == "" {
					body = msg(fmt.Sprint(16505550000+i), "", "t", "en", 0)
				}
				want := st.def
				if strict {
					want = st.strict
				}
				if want == codeThrottled {
					throttled++
				}
				if a := do(s, "POST", "/v23.0/"+st.num+"/messages", token, body); a.code != want {
					t.Errorf("step %d at %v on %s (%s): got %v, want code %d", i, st.at, st.num, st.comment, a, want)
				}
			}
			stats := s.Stats()
			if stats.Throttled != int64(throttled) {
				t.Errorf("throttled = %d, want %d", stats.Throttled, throttled)
			}
			if stats.StrictWindow != strict {
				t.Errorf("Stats.StrictWindow = %v, want %v", stats.StrictWindow, strict)
			}
			// Accepted: by default 0.5 and 1.0 on the other number, in
			// strict mode 1.0 alone.
			otherMax := 2
			if strict {
				otherMax = 1
			}
			if got := stats.MaxPerSecond; got[phoneID] != 2 || got[other] != otherMax {
				t.Errorf("max per second = %v, want %s:2 %s:%d", got, phoneID, other, otherMax)
			}
			// The largest seconds by arrival: 1.0, 1.0, 1.4 and 1.6 on
			// phoneID; 0, 0 and 0.5 on the other.
			var want map[string]int
			if strict {
				want = map[string]int{phoneID: 4, other: 3}
			}
			if fmt.Sprint(stats.MaxArrivals) != fmt.Sprint(want) {
				t.Errorf("max arrivals = %v, want %v", stats.MaxArrivals, want)
			}
		})
	}
}

// TestStrictWindowCountsAtArrival: a request whose body is still coming
// is counted when it arrived, before one that arrived after it but was
// read first; the default window counts each when it has been read.
func TestStrictWindowCountsAtArrival(t *testing.T) {
	for _, tc := range []struct {
		strict     bool
		slow, fast int // error codes of the request read slowly and of the one after it
	}{
		{false, 130429, 0},
		{true, 0, 130429},
	} {
		t.Run(fmt.Sprintf("strict=%v", tc.strict), func(t *testing.T) {
			clk := newClock()
			s := New(Config{Now: clk.Now, Rate: 1, PairInterval: -1, StrictWindow: tc.strict})
			defer s.Close()
			start := clk.Now()

			// The slow request arrives at 0 and its body at 1.2 s.
			pr, pw := io.Pipe()
			body := &firstRead{r: pr, reading: make(chan struct{})}
			r := httptest.NewRequest(http.MethodPost, path, body)
			r.Header.Set("Authorization", "Bearer "+token)
			slow := make(chan answer, 1)
			go func() {
				w := httptest.NewRecorder()
				s.ServeHTTP(w, r)
				slow <- decode(w.Code, w.Body.Bytes())
			}()
			<-body.reading // arrived: the handler waits for its body

			clk.Set(start.Add(500 * time.Millisecond))
			fast := send(s, "16505550001", "")
			clk.Set(start.Add(1200 * time.Millisecond))
			io.WriteString(pw, msg("16505550002", "", "t", "en", 0))
			pw.Close()
			if a := <-slow; a.code != tc.slow {
				t.Errorf("the request read slowly: %v, want code %d", a, tc.slow)
			}
			if fast.code != tc.fast {
				t.Errorf("the request after it: %v, want code %d", fast, tc.fast)
			}
		})
	}
}

// firstRead is a request body that says when the handler first reads it.
type firstRead struct {
	r       io.Reader
	once    sync.Once
	reading chan struct{}
}

func (f *firstRead) Read(p []byte) (int, error) {
	f.once.Do(func() { close(f.reading) })
	return f.r.Read(p)
}

// TestStrictWindowBeforeLatency: over HTTP, with answers a second late,
// the (Rate+1)th request arriving in the same second is throttled while
// the earlier ones' answers are still on their way: each is counted when
// it arrives, its latency comes after.
func TestStrictWindowBeforeLatency(t *testing.T) {
	const rate = 3
	clk := newClock() // frozen: every request arrives in one second
	accepted := &signalWriter{lines: make(chan struct{}, rate)}
	s := New(Config{Now: clk.Now, Rate: rate, PairInterval: -1, StrictWindow: true,
		Latency: time.Second, Accepted: accepted})
	srv := httptest.NewServer(s)
	defer srv.Close()
	defer s.Close()
	post := func(i int) answer {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(msg(fmt.Sprint(16505550000+i), "", "t", "en", 0)))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Error(err)
			return answer{}
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return decode(resp.StatusCode, b)
	}
	var answered atomic.Int32
	first := make(chan answer, rate)
	for i := range rate {
		go func() {
			a := post(i)
			answered.Add(1)
			first <- a
		}()
	}
	for range rate {
		<-accepted.lines // counted and accepted; answers due in a second
	}
	if n := answered.Load(); n != 0 {
		t.Fatalf("%d answers came before the last request was even sent: latency did not hold them", n)
	}
	if a := post(rate); a.code != codeThrottled {
		t.Errorf("request %d in the second: %v, want 130429", rate+1, a)
	}
	for range rate {
		if a := <-first; a.status != http.StatusOK {
			t.Errorf("one of the first %d: %v, want 200", rate, a)
		}
	}
	if st := s.Stats(); st.MaxArrivals[phoneID] != rate+1 || st.MaxPerSecond[phoneID] != rate {
		t.Errorf("max arrivals %v, max per second %v: want %d and %d", st.MaxArrivals, st.MaxPerSecond, rate+1, rate)
	}
}

// signalWriter signals each Accepted line written.
type signalWriter struct{ lines chan struct{} }

func (w *signalWriter) Write(p []byte) (int, error) {
	for range strings.Count(string(p), "\n") {
		w.lines <- struct{}{}
	}
	return len(p), nil
}

// TestStrictWindowKeepsFates: with no limit to hit, the strict window
// changes no answer: every request's fate is the same in both modes.
func TestStrictWindowKeepsFates(t *testing.T) {
	answers := map[bool][]string{}
	for _, strict := range []bool{false, true} {
		clk := newClock()
		s := New(Config{Seed: 7, Now: clk.Now, Rate: -1, StrictWindow: strict,
			TransientRate: 0.2, PermanentRate: 0.2})
		for i := range 200 {
			// Retries of the same row draw again: attempts, not only rows.
			a := send(s, fmt.Sprint(16505550000+i%50), fmt.Sprint("row-", i%50))
			answers[strict] = append(answers[strict], fmt.Sprint(a.status, " ", a.code))
			clk.Add(10 * time.Second) // past the pair limit
		}
		s.Close()
	}
	if fmt.Sprint(answers[false]) != fmt.Sprint(answers[true]) {
		t.Errorf("fates differ:\ndefault %v\nstrict  %v", answers[false], answers[true])
	}
}

// TestStrictWindowStats: the strict figures are served, and the default
// mode's stats carry none of them.
func TestStrictWindowStats(t *testing.T) {
	for _, strict := range []bool{false, true} {
		clk := newClock()
		s := New(Config{Now: clk.Now, Rate: 1, StrictWindow: strict})
		send(s, "16505550001", "")
		send(s, "16505550002", "")
		a := do(s, http.MethodGet, "/_sandbox/stats", "", "")
		s.Close()
		var st map[string]json.RawMessage
		if err := json.Unmarshal(a.body, &st); err != nil {
			t.Fatal(err)
		}
		_, hasStrict := st["strict_window"]
		arrivals, hasArrivals := st["max_arrivals_per_second"]
		switch {
		case !strict && (hasStrict || hasArrivals):
			t.Errorf("default mode: stats carry strict fields: %s", a.body)
		case strict && (string(st["strict_window"]) != "true" || string(arrivals) != `{"`+phoneID+`":2}`):
			t.Errorf("strict mode: strict_window %s, max_arrivals_per_second %s; want true and {%q:2}", st["strict_window"], arrivals, phoneID)
		}
	}
}
