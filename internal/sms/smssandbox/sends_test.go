package smssandbox

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// outcomes sends every message of rows (in the order given, from workers
// goroutines) and returns, by row, what happened: the answer's error type
// (or "ok") and the final event, if any.
func outcomes(t *testing.T, cfg Config, rows []int, tries, workers int) map[int]string {
	t.Helper()
	ev := &stampedBuffer{now: time.Now}
	cfg.Events, cfg.EventDelay, cfg.MPS = ev, time.Hour, -1
	s := New(cfg)
	answers := make([][]string, len(rows))
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(rows) {
					return
				}
				for range tries {
					a := send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: from, MessageBody: "x", Context: row(rows[i])})
					answers[i] = append(answers[i], cmpOr(a.typ, "ok"))
				}
			}
		}()
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for i, r := range rows {
		out[r] = fmt.Sprint(answers[i])
	}
	recs, _ := ev.lines(t)
	for _, e := range recs {
		var r int
		fmt.Sscanf(e.Context["bulksend"], "spring:%d", &r)
		out[r] += " " + e.EventType
	}
	return out
}

func TestDeterminism(t *testing.T) {
	cfg := Config{Seed: 42, ThrottleRate: 0.1, InternalRate: 0.2, LateRate: 0.1, LateDelay: time.Nanosecond, FailRate: 0.3}
	var rows, reversed []int
	for i := range 300 {
		rows = append(rows, i)
	}
	reversed = slices.Clone(rows)
	slices.Reverse(reversed)

	// Three tries each: the retries of a row draw their own fates.
	a := outcomes(t, cfg, rows, 3, 1)
	b := outcomes(t, cfg, reversed, 3, 8)
	for _, r := range rows {
		if a[r] != b[r] {
			t.Errorf("row %d: %s in order, %s concurrently in reverse", r, a[r], b[r])
		}
	}
	kinds := map[string]bool{}
	for _, v := range a {
		kinds[v] = true
	}
	if len(kinds) < 10 {
		t.Errorf("only %d distinct outcomes: the rates do not show", len(kinds))
	}
	cfg.Seed = 43
	c := outcomes(t, cfg, rows, 3, 1)
	same := 0
	for _, r := range rows {
		if a[r] == c[r] {
			same++
		}
	}
	if same > len(rows)*3/4 {
		t.Errorf("seed 43 repeats seed 42 on %d of %d rows", same, len(rows))
	}
}

// tickClock advances 5 ms each time it is read: requests from
// many goroutines get distinct, increasing, whole-millisecond times, so the
// events' messageRequestTimestamp is exactly the instant the budget used.
type tickClock struct{ n atomic.Int64 }

func (c *tickClock) Now() time.Time { return t0.Add(time.Duration(c.n.Add(5)) * time.Millisecond) }

// TestConcurrentBudget sends from several goroutines per identity and checks
// the budget from the outside: from the events alone (request time, parts)
// it rebuilds each identity's charges and finds no window of one second
// with more than MPS parts.
func TestConcurrentBudget(t *testing.T) {
	var c tickClock
	ev := &stampedBuffer{now: c.Now}
	numbers := []Number{
		{PhoneNumber: "+12065550100", MPS: 1},
		{PhoneNumber: "+12065550101", MPS: 4},
		{PhoneNumber: "+18885550100", MPS: 10, Type: "TOLL_FREE"},
		{PhoneNumber: "+12065550103", MPS: 20},
	}
	s := New(Config{Now: c.Now, Events: ev, EventDelay: time.Hour, Numbers: numbers})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() { // Stats under load
		for {
			select {
			case <-stop:
				return
			default:
				s.Stats()
			}
		}
	}()
	for _, n := range numbers {
		for g := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 120 {
					a := send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: n.PhoneNumber,
						MessageBody: text(1 + (g+i)%4), Context: row(g*1000 + i)})
					if a.status != 200 && a.typ != "ThrottlingException" {
						t.Errorf("%s: %v", n.PhoneNumber, a)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(stop)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	recs, _ := ev.lines(t)
	st := s.Stats()
	if int64(len(recs)) != st.Accepted {
		t.Fatalf("%d events, %d accepted", len(recs), st.Accepted)
	}
	for _, n := range numbers {
		is := st.Identities[n.PhoneNumber]
		step := int64(1000 / n.MPS) // ms between a message's parts
		var charges []int64
		parts := int64(0)
		for _, e := range recs {
			if e.OriginationPhoneNumber != n.PhoneNumber {
				continue
			}
			parts += int64(e.TotalMessageParts)
			for j := range e.TotalMessageParts {
				charges = append(charges, e.MessageRequestTimestamp+int64(j)*step)
			}
		}
		slices.Sort(charges)
		limit := int(math.Floor(n.MPS))
		for i := limit; i < len(charges); i++ {
			if charges[i]-charges[i-limit] < 1000 {
				t.Errorf("%s: %d parts within %d ms", n.PhoneNumber, limit+1, charges[i]-charges[i-limit])
				break
			}
		}
		if is.AcceptedParts != parts || is.MaxWindowParts > limit || is.MaxWindowParts == 0 || is.BudgetThrottles == 0 {
			t.Errorf("%s: %+v; %d parts in events", n.PhoneNumber, is, parts)
		}
		if is.First.IsZero() || !is.Last.After(is.First) {
			t.Errorf("%s: First %v, Last %v", n.PhoneNumber, is.First, is.Last)
		}
	}
}

func TestStatsEndpoint(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: from, MessageBody: "x"})
	send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: from, MessageBody: "x"})
	a := raw(s, http.MethodGet, "/_sandbox/stats", nil, "")
	var st Stats
	if err := json.Unmarshal(a.body, &st); err != nil || a.status != 200 {
		t.Fatalf("%v: %v", a, err)
	}
	if st.Requests != 2 || st.Accepted != 1 || st.Throttled != 1 || st.Errors["ThrottlingException"] != 1 ||
		st.Identities[from].Accepted != 1 || st.Identities[from].BudgetThrottles != 1 {
		t.Errorf("%s", a.body)
	}
}

func TestIdentities(t *testing.T) {
	t.Run("unlisted: an ARN and its ID share a budget", func(t *testing.T) {
		s := New(Config{})
		defer s.Close()
		id := "phone-dddddddddddddddddddddddddddddddd"
		if a := send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: id, MessageBody: "x"}); a.status != 200 {
			t.Fatal(a)
		}
		a := send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: "arn:aws:sms-voice:us-east-1:111122223333:phone-number/" + id, MessageBody: "x"})
		if a.typ != "ThrottlingException" {
			t.Errorf("same number by ARN within the second: %v", a)
		}
		if is := s.Stats().Identities[id]; is.Accepted != 1 || is.BudgetThrottles != 1 {
			t.Errorf("%+v", s.Stats().Identities)
		}
	})
	t.Run("unlisted: a phone ID sends from the number Describe reports", func(t *testing.T) {
		ev := &stampedBuffer{now: time.Now}
		s := New(Config{Events: ev, EventDelay: time.Hour})
		id := "phone-dddddddddddddddddddddddddddddddd"
		send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: id, MessageBody: "x"})
		var out phoneNumbers
		json.Unmarshal(call(s, "DescribePhoneNumbers", map[string]any{"PhoneNumberIds": []string{id}}).body, &out)
		s.Close()
		recs, _ := ev.lines(t)
		if len(recs) != 1 || len(out.PhoneNumbers) != 1 || recs[0].OriginationPhoneNumber != out.PhoneNumbers[0]["PhoneNumber"] {
			t.Errorf("event %+v, number %v", recs, out.PhoneNumbers)
		}
	})
	listed := Config{
		Numbers: []Number{
			{PhoneNumber: "+12065550100", OptOutList: "A"},
			{PhoneNumber: "+12065550101", MPS: 2},
			{PhoneNumber: "+12065550102", MPS: 3},
		},
		Pools:          []Pool{{ID: "pool-11111111111111111111111111111111", Numbers: []string{"+12065550101", "+12065550102"}}},
		OptOuts:        map[string][]string{"A": {"+12065551999"}},
		ThrottleAlways: []string{"arn:aws:sms-voice:us-east-1:111122223333:phone-number/" + "phone-" + hexID("+12065550102")},
	}
	t.Run("no identity: the first number, its list", func(t *testing.T) {
		s := New(listed)
		defer s.Close()
		if a := send(s, msg{DestinationPhoneNumber: "+12065551999", MessageBody: "x"}); a.reason != "DESTINATION_PHONE_NUMBER_OPTED_OUT" {
			t.Errorf("%v", a)
		}
		if a := send(s, msg{DestinationPhoneNumber: "+12065551000", MessageBody: "x"}); a.status != 200 || s.Stats().Identities["+12065550100"].Accepted != 1 {
			t.Errorf("%v %+v", a, s.Stats().Identities)
		}
	})
	t.Run("a pool's budget is its numbers' sum", func(t *testing.T) {
		ev := &stampedBuffer{now: time.Now}
		c := newClock()
		cfg := listed
		cfg.Events, cfg.EventDelay, cfg.Now = ev, time.Hour, c.Now
		s := New(cfg)
		for i := range 6 {
			a := send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: "pool-11111111111111111111111111111111", MessageBody: "x", Context: row(i)})
			if ok := a.status == 200; ok != (i < 5) {
				t.Errorf("pool send %d: %v", i, a)
			}
		}
		s.Close()
		recs, _ := ev.lines(t)
		if len(recs) != 5 || recs[0].OriginationPhoneNumber != "+12065550101" {
			t.Errorf("events %+v", recs)
		}
		if is := s.Stats().Identities["pool-11111111111111111111111111111111"]; is.Accepted != 5 || is.MaxWindowParts != 5 {
			t.Errorf("%+v", s.Stats().Identities)
		}
	})
	t.Run("ThrottleAlways names a number by ARN", func(t *testing.T) {
		s := New(listed)
		defer s.Close()
		if a := send(s, msg{DestinationPhoneNumber: "+12065551000", OriginationIdentity: "+12065550102", MessageBody: "x"}); a.typ != "ThrottlingException" {
			t.Errorf("%v", a)
		}
	})
}
