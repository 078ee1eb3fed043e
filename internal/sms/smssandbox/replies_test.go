package smssandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/sms/smsevent"
)

// inbounds are the replies among a log's or a queue's records, parsed as
// bulksend parses them.
func inbounds(t *testing.T, recs []string) []smsevent.Inbound {
	t.Helper()
	var out []smsevent.Inbound
	for _, r := range recs {
		if in, ok := smsevent.ParseInbound([]byte(r)); ok {
			out = append(out, in)
		}
	}
	return out
}

func lines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func queueBodies(s *Server) []string {
	s.queue.mu.Lock()
	defer s.queue.mu.Unlock()
	var out []string
	for _, m := range s.queue.msgs {
		out = append(out, m.body)
	}
	return out
}

func TestReplyShape(t *testing.T) {
	cases := []struct {
		name       string
		stop, help float64
		bodies     []string
	}{
		{"stop", 1, 0, stopReplies},
		{"help", 0, 1, []string{"HELP"}},
		{"free text", 0, 0, freeReplies},
	}
	// AWS names the keyword a whole text matches, case aside.
	keyword := map[string]string{"STOP": "STOP", "stop": "STOP", "UNSUBSCRIBE": "UNSUBSCRIBE", "ARRET": "ARRET", "HELP": "HELP"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			var tm timers
			log := &lockedBuffer{}
			s := newServer(Config{Now: c.Now, MPS: -1, Events: log, Queue: true, EventDelay: 2 * time.Second,
				ReplyRate: 1, StopRate: tc.stop, HelpRate: tc.help, ReplyDelay: time.Second}, tm.after)
			defer s.Close()
			dest := "+12065551000"
			a := send(s, msg{DestinationPhoneNumber: dest, OriginationIdentity: from, MessageBody: "Hello", Context: row(1)})
			if a.status != 200 {
				t.Fatal(a)
			}
			sent := c.Now()
			// The event within 1–3 s, the reply 0.5–1.5 s after it.
			for i, want := range [][2]time.Duration{{time.Second, 3 * time.Second}, {1500 * time.Millisecond, 4500 * time.Millisecond}} {
				if len(tm.ts) != 2 || tm.ts[i].d < want[0] || tm.ts[i].d >= want[1] {
					t.Fatalf("timer %d of %d: %v, want in [%v, %v)", i, len(tm.ts), tm.ts[i].d, want[0], want[1])
				}
			}
			replyAt := sent.Add(tm.ts[1].d)
			if n := s.Pending(); n != 2 {
				t.Errorf("Pending() = %d before the timers fire, want 2", n)
			}
			c.Add(time.Minute)
			tm.fire()
			if n := s.Pending(); n != 0 {
				t.Errorf("Pending() = %d after, want 0", n)
			}

			q, l := queueBodies(s), lines(log.Bytes())
			if len(q) != 2 || len(l) != 2 {
				t.Fatalf("queue holds %d, log %d lines; want the event and the reply in each", len(q), len(l))
			}
			fromQueue, fromLog := inbounds(t, q), inbounds(t, l)
			if len(fromQueue) != 1 || len(fromLog) != 1 || fromQueue[0] != fromLog[0] {
				t.Fatalf("replies: queue %+v, log %+v", fromQueue, fromLog)
			}
			in := fromQueue[0]
			if in.From != dest || in.To != from || in.PreviousID != a.messageID || in.ID == "" || in.ID == a.messageID ||
				!slices.Contains(tc.bodies, in.Body) || !in.At.Equal(replyAt.Truncate(time.Millisecond)) {
				t.Errorf("reply %+v; sent %s at %v, reply due %v", in, a.messageID, sent, replyAt)
			}
			if in.Keyword != keyword[in.Body] {
				t.Errorf("messageKeyword %q for %q, want %q", in.Keyword, in.Body, keyword[in.Body])
			}
			// The notification is SNS's, of the sandbox's topic.
			var n struct{ Type, TopicArn, Message, Signature string }
			if err := json.Unmarshal([]byte(q[1]), &n); err != nil || n.Type != "Notification" || n.TopicArn != SNSTopicArn || n.Signature == "" {
				t.Errorf("reply notification %s (%v)", q[1], err)
			}
			// A reconcile of the log reads the event and the reply.
			r := smsevent.NewReader(bytes.NewReader(log.Bytes()))
			var heard []smsevent.Inbound
			r.SetInbound(func(in smsevent.Inbound) { heard = append(heard, in) })
			var evs []smsevent.Event
			for {
				ev, err := r.Next()
				if err != nil {
					break
				}
				evs = append(evs, ev)
			}
			if len(evs) != 1 || evs[0].MessageID != a.messageID || len(heard) != 1 || heard[0] != in {
				t.Errorf("reader: events %+v, replies %+v", evs, heard)
			}
			if st := s.Stats(); st.Events != 1 || st.Replies != 1 {
				t.Errorf("stats: events %d, replies %d", st.Events, st.Replies)
			}
		})
	}
}

// replies sends n messages from origin to distinct recipients and returns
// what each replied and when, read from the log, and the log's lines.
func replies(t *testing.T, cfg Config, origin string, n int) (map[string]string, map[string]time.Time, *Server, []string) {
	t.Helper()
	c := newClock()
	var tm timers
	log := &lockedBuffer{}
	cfg.Now, cfg.MPS, cfg.Events = c.Now, -1, log
	s := newServer(cfg, tm.after)
	for i := range n {
		if a := send(s, msg{DestinationPhoneNumber: fmt.Sprintf("+1206556%04d", i), OriginationIdentity: origin, MessageBody: "Hi", Context: row(i)}); a.status != 200 {
			t.Fatal(a)
		}
	}
	c.Add(time.Hour)
	tm.fire()
	s.Close()
	bodies, at := map[string]string{}, map[string]time.Time{}
	l := lines(log.Bytes())
	for _, in := range inbounds(t, l) {
		bodies[in.From], at[in.From] = in.Body, in.At
	}
	return bodies, at, s, l
}

func TestReplySeeding(t *testing.T) {
	cfg := Config{Seed: 7, ReplyRate: 0.3, StopRate: 0.4, HelpRate: 0.1, FailRate: 0.1}
	b1, at1, _, _ := replies(t, cfg, from, 300)
	b2, at2, _, _ := replies(t, cfg, from, 300)
	if len(b1) == 0 || fmt.Sprint(b1) != fmt.Sprint(b2) || fmt.Sprint(at1) != fmt.Sprint(at2) {
		t.Fatalf("same seed, different replies:\n%v\n%v", b1, b2)
	}
	cfg.Seed = 8
	b3, _, _, _ := replies(t, cfg, from, 300)
	if fmt.Sprint(b1) == fmt.Sprint(b3) {
		t.Errorf("seeds 7 and 8 gave the same replies: %v", b1)
	}
	// A reply rate draws after every other fate: the same sends fail.
	_, _, with, _ := replies(t, cfg, from, 300)
	cfg.ReplyRate = 0
	_, _, without, _ := replies(t, cfg, from, 300)
	if w, wo := with.Stats(), without.Stats(); w.Failed != wo.Failed || w.Delivered != wo.Delivered {
		t.Errorf("replies changed outcomes: %d/%d failed/delivered with, %d/%d without", w.Failed, w.Delivered, wo.Failed, wo.Delivered)
	}
}

func TestReplyCounts(t *testing.T) {
	const n = 2000
	cases := []struct {
		name                  string
		cfg                   Config
		origin                string
		replies, stops, helps float64 // expected shares of the sends
	}{
		{name: "none", cfg: Config{Seed: 1}, origin: from},
		{name: "some", cfg: Config{Seed: 1, ReplyRate: 0.2, StopRate: 0.5, HelpRate: 0.2}, origin: from, replies: 0.2, stops: 0.1, helps: 0.04},
		{name: "failed messages get none", cfg: Config{Seed: 2, ReplyRate: 1, StopRate: 1, FailRate: 0.5}, origin: from, replies: 0.5, stops: 0.5},
		{name: "all free text", cfg: Config{Seed: 3, ReplyRate: 0.5}, origin: from, replies: 0.5},
		{name: "a sender ID cannot be replied to", cfg: Config{Seed: 4, ReplyRate: 1}, origin: "ACMESHOP"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bodies, _, s, l := replies(t, tc.cfg, tc.origin, n)
			st := s.Stats()
			var stops, helps int64
			for _, b := range bodies {
				switch {
				case b == "HELP":
					helps++
				case slices.Contains(stopReplies, b):
					stops++
				}
			}
			if st.Replies != int64(len(bodies)) || st.Stops != stops || st.Helps != helps {
				t.Errorf("stats %d replies, %d stops, %d helps; the log %d, %d, %d", st.Replies, st.Stops, st.Helps, len(bodies), stops, helps)
			}
			if got := int64(len(l)) - st.Events; got != st.Replies {
				t.Errorf("log: %d lines besides the %d events, want %d replies", got, st.Events, st.Replies)
			}
			for _, r := range []struct {
				what      string
				got, want float64
			}{{"replies", float64(st.Replies), tc.replies}, {"stops", float64(stops), tc.stops}, {"helps", float64(helps), tc.helps}} {
				// Binomial: within 4 standard deviations, and a little.
				if sd := math.Sqrt(n * r.want * (1 - r.want)); math.Abs(r.got-n*r.want) > 4*sd+1 {
					t.Errorf("%s: %v of %d, want about %v", r.what, r.got, n, n*r.want)
				}
			}
		})
	}
}

func TestReplyValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"rates", Config{ReplyRate: 0.5, StopRate: 0.6, HelpRate: 0.4}, true},
		{"reply over 1", Config{ReplyRate: 1.5}, false},
		{"negative stop", Config{StopRate: -0.1}, false},
		{"stop and help over 1", Config{StopRate: 0.7, HelpRate: 0.4}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
}
