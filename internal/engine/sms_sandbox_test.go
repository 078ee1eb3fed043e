package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/sms"
	"github.com/bulksend/bulksend/internal/sms/segment"
	"github.com/bulksend/bulksend/internal/sms/smssandbox"
	"github.com/bulksend/bulksend/internal/sms/smstext"
	"github.com/bulksend/bulksend/internal/store"
)

// The SMS channel end to end in one process: the real engine and the real
// sms.Client (the AWS SDK, SigV4 and all) send from a real SQLite
// checkpoint to the SMS sandbox over HTTP on 127.0.0.1. These tests run in
// real time: backoffs are shrunk to milliseconds, and what they assert are
// counts (requests, acceptances, parts, rows per bucket), which a loaded
// machine slows but does not change.

// smsText is the campaign's body; its {{offer}} cell makes each row's
// length and alphabet, hence its parts.
const smsText = "{{name}}: {{offer}}"

var smsColumns = []string{"name", "offer"}

// gsmFiller and ucsFiller are what offers are cut from: GSM-7 text (the %
// and the € of the extension table included) and text that needs UCS-2.
const (
	gsmFiller = "Spring sale: 20% off everything in store and online until Sunday, €5 voucher inside. "
	ucsFiller = "Весенняя распродажа: скидка 20% на всё до воскресенья! "
)

// smsKind is a body of a given encoding and length, in characters.
type smsKind struct {
	ucs2   bool
	length int
	parts  int // what segment must find: checks that the mix is the one meant
}

// smsMix is the bodies of rows 0, 1, … 9 (then again): half of them one
// part, three in ten two, two in ten three; GSM-7 and UCS-2 in each.
var smsMix = []smsKind{
	{false, 60, 1}, {false, 150, 1}, {false, 40, 1}, {true, 50, 1}, {true, 66, 1},
	{false, 250, 2}, {false, 290, 2}, {true, 110, 2},
	{false, 400, 3}, {true, 170, 3},
}

// smsRow is one recipient of a test campaign.
type smsRow struct {
	phone, sender string
	cells         []string
	parts         int
	enc           segment.Encoding
}

// smsRows makes n rows, sender(i) choosing row i's origination identity
// (i from 0; the checkpoint numbers rows from 1). Parts and encoding are
// measured with internal/segment, as the CLI's import does.
func smsRows(t *testing.T, n int, sender func(i int) string) []smsRow {
	t.Helper()
	text, err := smstext.New(smsText, smsColumns)
	if err != nil {
		t.Fatal(err)
	}
	var rows []smsRow
	for i := range n {
		k := smsMix[i%len(smsMix)]
		name := fmt.Sprintf("Ana %d", i)
		filler := gsmFiller
		if k.ucs2 {
			filler = ucsFiller
		}
		// The body is name + ": " + offer, k.length characters in all.
		offer := []rune(strings.Repeat(filler, 8))[:k.length-len(name)-2]
		cells := []string{name, string(offer)}
		c := segment.Measure(text.Render(cells))
		if c.Parts != k.parts || (c.Encoding == segment.UCS2) != k.ucs2 {
			t.Fatalf("row %d: body is %s, want %d parts (UCS-2 %v)", i+1, c, k.parts, k.ucs2)
		}
		rows = append(rows, smsRow{phone: fmt.Sprintf("+4477009%05d", i), sender: sender(i), cells: cells, parts: c.Parts, enc: c.Encoding})
	}
	return rows
}

// isolateAWS keeps the machine's AWS configuration (profiles, credentials,
// EC2 metadata) out of the client: a test reaches 127.0.0.1 only.
func isolateAWS(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "no-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "no-credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_MAX_ATTEMPTS", "")
}

// lockedBuffer takes the sandbox's event records.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// sendCounter counts the SendTextMessage requests that reach the sandbox,
// per destination, whatever the sandbox answers.
type sendCounter struct {
	h  http.Handler
	mu sync.Mutex
	n  map[string]int
}

func (c *sendCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") == "PinpointSMSVoiceV2.SendTextMessage" {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return // the client went away
		}
		var req struct{ DestinationPhoneNumber string }
		if err := json.Unmarshal(b, &req); err == nil {
			c.mu.Lock()
			c.n[req.DestinationPhoneNumber]++
			c.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	c.h.ServeHTTP(w, r)
}

func (c *sendCounter) count(phone string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[phone]
}

// smsEvent is what these tests read of an event record: the sandbox writes
// one for every message it sent.
type smsEvent struct {
	EventType   string            `json:"eventType"`
	MessageID   string            `json:"messageId"`
	Destination string            `json:"destinationPhoneNumber"`
	Origination string            `json:"originationPhoneNumber"`
	Parts       int               `json:"totalMessageParts"`
	Context     map[string]string `json:"context"`
}

// departures records the attempts the engine made: when each left.
type departures struct {
	mu sync.Mutex
	a  []engine.Attempt
}

func (d *departures) Attempted(a engine.Attempt) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.a = append(d.a, a)
}

func (*departures) Waited(string, time.Duration) {}

// mostParts is the most parts that the requests of sender put in one second
// by when they left, whatever their answer, charged as the sandbox's
// strict window charges them: a k-part message leaving at t charges all k
// at t. It is what a client's pacing alone is answerable for:
// arrivals add the loopback's and the scheduler's delays, which bunch
// requests that left evenly spaced, and a stall of this machine can make
// the sandbox throttle a client that kept its pace.
func (r *smsRun) mostParts(sender string) int {
	var charges []time.Time
	for _, a := range r.attempts.a {
		if a.Sender != sender {
			continue
		}
		for range r.rows[a.Row-1].parts {
			charges = append(charges, a.At)
		}
	}
	return mostInASecond(charges)
}

// smsRun is one campaign sent to one sandbox, and what came of it.
type smsRun struct {
	rows     []smsRow
	st       *store.Store
	sends    *sendCounter
	attempts *departures
	stats    smssandbox.Stats
	counts   campaign.Counts
	report   store.Report
	buckets  campaign.Buckets
	exported map[int64]store.ExportRow // by row
	events   map[int64][]smsEvent      // by row, from their Context
	took     time.Duration
}

// sendSMS imports rows into a SQLite checkpoint, runs the engine with cfg
// (its Checkpoint, Sender, Senders and CampaignID filled in here) and the
// real client against a sandbox of sbCfg, and gathers what the checkpoint
// and the sandbox say afterwards. timeout bounds each request.
func sendSMS(t *testing.T, rows []smsRow, sbCfg smssandbox.Config, cfg engine.Config, timeout time.Duration) *smsRun {
	t.Helper()
	isolateAWS(t)
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "c.bulksend.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	i := 0
	_, err = st.Import(ctx, func() (store.Row, error) {
		if i == len(rows) {
			return store.Row{}, io.EOF
		}
		r := rows[i]
		i++
		return store.Row{Row: int64(i), Line: i + 1, Phone: r.phone, Sender: r.sender, Params: r.cells, Parts: r.parts, Encoding: string(r.enc)}, nil
	}, func() store.Settings {
		return store.Settings{CampaignID: "c1", Channel: string(campaign.SMS), Text: smsText, Params: smsColumns,
			Rate: cfg.Rate, MaxAttempts: 5, ThrottleTries: cfg.ThrottleTries, CreatedAt: time.Now()}
	})
	if err != nil {
		t.Fatal(err)
	}
	senders, err := st.Senders(ctx)
	if err != nil {
		t.Fatal(err)
	}

	events := &lockedBuffer{}
	sbCfg.Events = events
	if sbCfg.EventDelay == 0 {
		sbCfg.EventDelay = 10 * time.Millisecond
	}
	sb := smssandbox.New(sbCfg)
	sends := &sendCounter{h: sb, n: map[string]int{}}
	srv := httptest.NewServer(sends)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			srv.Close() // waits for the handlers: every answer is written or abandoned
			if err := sb.Close(); err != nil {
				t.Error(err)
			}
		}
	}
	defer stop()

	client, err := sms.New(ctx, sms.Options{
		Region: "us-east-1", EndpointURL: srv.URL, Timeout: timeout, MaxConns: 64,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDENGINETEST", "engine-test-secret", ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	if client.Text, err = smstext.New(smsText, smsColumns); err != nil {
		t.Fatal(err)
	}
	attempts := &departures{}
	cfg.Checkpoint, cfg.Sender, cfg.Senders, cfg.CampaignID, cfg.Observer = st, client, senders, "c1", attempts
	start := time.Now()
	if err := engine.New(cfg).Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	took := time.Since(start)
	stop()

	r := &smsRun{rows: rows, st: st, sends: sends, attempts: attempts, stats: sb.Stats(), exported: map[int64]store.ExportRow{}, events: map[int64][]smsEvent{}, took: took}
	if r.counts, err = st.Counts(ctx); err != nil {
		t.Fatal(err)
	}
	if r.report, err = st.Breakdown(ctx); err != nil {
		t.Fatal(err)
	}
	r.buckets = campaign.BucketsOf(r.counts, r.report.FailedByReason[campaign.FailThrottleExhausted])
	if err := st.Export(ctx, func(e store.ExportRow) error { r.exported[e.Row] = e; return nil }); err != nil {
		t.Fatal(err)
	}
	read := int64(0)
	sc := bufio.NewScanner(bytes.NewReader(events.bytes()))
	for sc.Scan() {
		read++
		var ev smsEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event %q: %v", sc.Text(), err)
		}
		ref, ok := campaign.ParseRefKey(ev.Context["bulksend"])
		id, row := ref.Campaign, ref.Row
		if !ok || id != "c1" {
			t.Fatalf("event without this campaign's context: %s", sc.Text())
		}
		r.events[row] = append(r.events[row], ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if read != r.stats.Events || r.stats.Events != r.stats.Accepted {
		t.Fatalf("%d event records read, the sandbox wrote %d for %d messages sent", read, r.stats.Events, r.stats.Accepted)
	}
	return r
}

// checkBuckets checks that the three buckets and the unfinished rows add
// up to the rows, and that every row the checkpoint holds with a MessageId
// is the one message the sandbox sent for it.
func (r *smsRun) checkBuckets(t *testing.T) {
	t.Helper()
	b := r.buckets
	if sum := b.Success + b.HardThrottle + b.Other + b.Unfinished; sum != r.counts.Total || r.counts.Total != int64(len(r.rows)) {
		t.Errorf("buckets %+v add up to %d, counts %+v, %d rows", b, sum, r.counts, len(r.rows))
	}
	withID := int64(0)
	for row, e := range r.exported {
		evs := r.events[row]
		if len(evs) > 1 {
			t.Errorf("row %d: the sandbox sent it %d times", row, len(evs))
		}
		if e.MessageID == "" {
			continue
		}
		withID++
		if len(evs) != 1 || evs[0].MessageID != e.MessageID || evs[0].Destination != e.Phone {
			t.Errorf("row %d: recorded MessageId %s to %s, the sandbox sent %+v", row, e.MessageID, e.Phone, evs)
		}
	}
	if withID != b.Success {
		t.Errorf("%d rows with a MessageId, %d in the success bucket", withID, b.Success)
	}
}

// identities are the origination identities of the campaigns: the sandbox
// takes any (no Numbers listed), each with a budget of its own.
var identities = []string{"+12065550101", "+12065550102", "+12065550103", "+12065550104"}

// TestSMSPartsPerIdentityStayWithinMPS: four identities of 10 parts a
// second counted strictly (every part of a send at its arrival, whatever
// its answer), a client at 10, rows of one, two and three parts in GSM-7
// and UCS-2: every row is sent, and by when its requests left no second
// of any identity holds more than 10 parts. The sandbox's count of parts
// accepted per identity, made by its own code, equals the sum of the parts
// the client measured and stored for that identity's rows.
//
// What the sandbox throttled is logged, not asserted: a stall of this
// machine (another test binary, the race detector's pauses) can hold one
// request on its way and let it arrive with the next, and the sandbox
// rightly throttles the second of them. TestSMSFasterThanMPSIsThrottled
// shows both checks catch a client too fast.
func TestSMSPartsPerIdentityStayWithinMPS(t *testing.T) {
	const rows, mps = 200, 10
	all := smsRows(t, rows, func(i int) string { return identities[i%len(identities)] })
	r := sendSMS(t, all, smssandbox.Config{Seed: 1, MPS: mps, StrictWindow: true, Latency: 10 * time.Millisecond, Jitter: 5 * time.Millisecond},
		engine.Config{Rate: mps, ThrottleTries: 5, ThrottleBase: 10 * time.Millisecond, ThrottleMax: 100 * time.Millisecond}, 10*time.Second)

	if r.counts.Sent != rows {
		t.Fatalf("counts %+v: want all %d rows sent", r.counts, rows)
	}
	parts := map[string]int64{} // per identity, as the client stored them
	total, budget := int64(0), int64(0)
	for _, e := range r.exported {
		parts[e.Sender] += int64(e.Parts)
		total += int64(e.Parts)
		if evs := r.events[e.Row]; len(evs) == 1 && evs[0].Parts != e.Parts {
			t.Errorf("row %d: the client measured %d parts, the sandbox charged %d", e.Row, e.Parts, evs[0].Parts)
		}
	}
	for _, id := range identities {
		s := r.stats.Identities[id]
		left := r.mostParts(id)
		budget += s.BudgetThrottles
		t.Logf("%s: %d messages, %d parts, at most %d parts in a second as they left, %d as they arrived, %d budget throttles",
			id, s.Accepted, s.AcceptedParts, left, s.MaxWindowParts, s.BudgetThrottles)
		if left > mps {
			t.Errorf("%s: %d parts in one second by when they left: over its %d parts a second", id, left, mps)
		}
		if s.MaxWindowParts > mps {
			t.Errorf("%s: the sandbox accepted %d parts in one second, over its budget of %d", id, s.MaxWindowParts, mps)
		}
		// Against a client too slow to prove anything: it should fill the
		// window, bar a part lost to a late request.
		if left < mps-2 {
			t.Errorf("%s: at most %d parts in a second: the client never ran near %d", id, left, mps)
		}
		if s.AcceptedParts != parts[id] {
			t.Errorf("%s: the sandbox counted %d parts accepted, the client stored %d", id, s.AcceptedParts, parts[id])
		}
	}
	if budget != r.stats.Throttled {
		t.Errorf("%d budget throttles of %d throttles: nothing else should throttle", budget, r.stats.Throttled)
	}
	r.checkBuckets(t)
	t.Logf("%d rows, %d parts in %v, %d throttled", rows, total, r.took.Round(time.Millisecond), budget)
}

// TestSMSFasterThanMPSIsThrottled is the converse: the same campaign at
// 12 parts a second against identities of 10 meets the sandbox's budget
// (so TestSMSPartsPerIdentityStayWithinMPS can fail), and still ends with
// every row sent once or failed as throttle_exhausted, none sent twice.
func TestSMSFasterThanMPSIsThrottled(t *testing.T) {
	const rows, mps = 120, 10
	all := smsRows(t, rows, func(i int) string { return identities[i%len(identities)] })
	r := sendSMS(t, all, smssandbox.Config{Seed: 1, MPS: mps, StrictWindow: true, Latency: 10 * time.Millisecond, Jitter: 5 * time.Millisecond},
		engine.Config{Rate: 12, ThrottleTries: 5, ThrottleBase: 10 * time.Millisecond, ThrottleMax: 100 * time.Millisecond}, 10*time.Second)

	budget, over := int64(0), false
	for _, id := range identities {
		s := r.stats.Identities[id]
		budget += s.BudgetThrottles
		left := r.mostParts(id)
		over = over || left > mps
		t.Logf("%s: %d messages, %d parts, at most %d parts in a second as they left, %d accepted as they arrived, %d budget throttles",
			id, s.Accepted, s.AcceptedParts, left, s.MaxWindowParts, s.BudgetThrottles)
		if s.MaxWindowParts > mps {
			t.Errorf("%s: %d parts in one second accepted, over %d", id, s.MaxWindowParts, mps)
		}
	}
	if budget == 0 {
		t.Fatalf("no budget throttle at 12 parts a second against %d: the sandbox would not catch a client too fast", mps)
	}
	if !over {
		t.Errorf("no identity sent more than %d parts in a second at 12 parts a second: the departures would not catch a client too fast", mps)
	}
	if budget != r.stats.Throttled {
		t.Errorf("%d budget throttles of %d throttles: nothing else should throttle", budget, r.stats.Throttled)
	}
	hard := r.report.FailedByReason[campaign.FailThrottleExhausted]
	if r.counts.Sent+hard != rows || r.counts.Failed != hard {
		t.Errorf("counts %+v, %d throttle_exhausted: want every row sent or throttle_exhausted", r.counts, hard)
	}
	// Every throttled answer is a throttled try on its row, the last one
	// that fails the row included.
	p, err := r.st.Parts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p.Throttled != r.stats.Throttled {
		t.Errorf("rows count %d throttled tries (%d rows throttle_exhausted), the sandbox throttled %d", p.Throttled, hard, r.stats.Throttled)
	}
	for row, e := range r.exported {
		if want := int(e.Throttles) + 1; e.Status == campaign.Sent && r.sends.count(e.Phone) != want {
			t.Errorf("row %d: %d requests for %d throttled tries and the one accepted", row, r.sends.count(e.Phone), e.Throttles)
		}
	}
	r.checkBuckets(t)
	t.Logf("%d budget throttles, %d rows retried after one, %d throttle_exhausted, in %v", budget, countRows(r, func(e store.ExportRow) bool { return e.Throttles > 0 }), hard, r.took.Round(time.Millisecond))
}

func countRows(r *smsRun, f func(store.ExportRow) bool) int {
	n := 0
	for _, e := range r.exported {
		if f(e) {
			n++
		}
	}
	return n
}

// TestSMSThrottleTriesThenExhausted: an identity whose every send is
// throttled gets each of its rows to the sandbox exactly ThrottleTries
// (5) times, then fails it as throttle_exhausted, the hard-throttle
// bucket; another identity's rows go out once each, untouched.
func TestSMSThrottleTriesThenExhausted(t *testing.T) {
	const throttled, fine = "+12065550109", "+12065550101"
	// Rows 0, 5, 10, … from the throttled identity: 5 of 25.
	all := smsRows(t, 25, func(i int) string {
		if i%5 == 0 {
			return throttled
		}
		return fine
	})
	// The budget is twice the client's rate: this test is about the tries,
	// and a stall of the machine that bunched two of the other identity's
	// requests must not throttle one.
	r := sendSMS(t, all, smssandbox.Config{Seed: 2, MPS: 40, Latency: 5 * time.Millisecond, ThrottleAlways: []string{throttled}},
		engine.Config{Rate: 20, ThrottleTries: 5, ThrottleBase: 2 * time.Millisecond, ThrottleMax: 20 * time.Millisecond}, 10*time.Second)

	for i, row := range all {
		e := r.exported[int64(i+1)]
		n := r.sends.count(row.phone)
		switch row.sender {
		case throttled:
			if n != 5 || e.Status != campaign.Failed || e.FailReason != campaign.FailThrottleExhausted || e.Throttles != 5 || !strings.Contains(e.ErrorTitle, "throttled 5 times") {
				t.Errorf("row %d: %d requests, %s %q reason %q after %d recorded throttles; want 5 requests, failed throttle_exhausted after 5",
					e.Row, n, e.Status, e.ErrorTitle, e.FailReason, e.Throttles)
			}
		default:
			if n != 1 || e.Status != campaign.Sent || e.Throttles != 0 {
				t.Errorf("row %d of %s: %d requests, %s, %d throttles; want sent at the first request", e.Row, fine, n, e.Status, e.Throttles)
			}
		}
	}
	if s := r.stats.Identities[throttled]; s.Throttled != 25 || s.Accepted != 0 || s.BudgetThrottles != 0 {
		t.Errorf("%s: %+v, want 25 throttles (5 rows × 5), none of the budget, nothing sent", throttled, s)
	}
	if s := r.stats.Identities[fine]; s.Throttled != 0 || s.Accepted != 20 {
		t.Errorf("%s: %+v, want its 20 rows sent, no throttle", fine, s)
	}
	want := campaign.Buckets{Success: 20, HardThrottle: 5}
	if r.buckets != want || r.report.FailedByReason[campaign.FailThrottleExhausted] != 5 {
		t.Errorf("buckets %+v, failed by reason %v; want %+v", r.buckets, r.report.FailedByReason, want)
	}
	r.checkBuckets(t)
	t.Logf("requests per throttled row: %d; run took %v", r.sends.count(all[0].phone), r.took.Round(time.Millisecond))
}

// TestSMSOptedOutIsNeverSuccess: destinations on the opt-out list are
// refused by the sandbox, sent once and never again, failed as opted_out
// and counted in the "other" bucket, never in "success".
func TestSMSOptedOutIsNeverSuccess(t *testing.T) {
	all := smsRows(t, 30, func(i int) string { return identities[i%2] })
	optedOut := map[string]bool{}
	var list []string
	for i, row := range all {
		if i%5 == 2 {
			optedOut[row.phone] = true
			list = append(list, row.phone)
		}
	}
	r := sendSMS(t, all, smssandbox.Config{Seed: 3, MPS: 50, Latency: 5 * time.Millisecond, OptOuts: map[string][]string{"Default": list}},
		engine.Config{Rate: 50, ThrottleTries: 5, ThrottleBase: 2 * time.Millisecond, ThrottleMax: 20 * time.Millisecond}, 10*time.Second)

	for i, row := range all {
		e := r.exported[int64(i+1)]
		n := r.sends.count(row.phone)
		switch {
		case optedOut[row.phone]:
			if n != 1 || e.Status != campaign.Failed || e.FailReason != campaign.FailOptedOut || e.MessageID != "" || len(r.events[e.Row]) != 0 {
				t.Errorf("row %d (opted out): %d requests, %s reason %q MessageId %q, %d messages sent; want one request, failed opted_out, nothing sent",
					e.Row, n, e.Status, e.FailReason, e.MessageID, len(r.events[e.Row]))
			}
		default:
			if n != 1 || e.Status != campaign.Sent {
				t.Errorf("row %d: %d requests, %s; want sent at the first", e.Row, n, e.Status)
			}
		}
	}
	n := int64(len(list))
	if r.stats.OptedOut != n || r.stats.Errors["ConflictException/DESTINATION_PHONE_NUMBER_OPTED_OUT"] != n {
		t.Errorf("sandbox: %d opted out, errors %v; want %d", r.stats.OptedOut, r.stats.Errors, n)
	}
	want := campaign.Buckets{Success: int64(len(all)) - n, Other: n}
	if r.buckets != want || r.report.FailedByReason[campaign.FailOptedOut] != n {
		t.Errorf("buckets %+v, failed by reason %v; want %+v and %d opted_out", r.buckets, r.report.FailedByReason, want, n)
	}
	r.checkBuckets(t)
}

// TestSMSBucketsAddUpUnderTrouble: under a mixture of trouble (internal
// errors after which the message went out or not, answers held back past
// the client's timeout, final events that fail, opt-outs, an identity
// throttled on every try) every row lands in exactly one bucket, and the
// success bucket is exactly the rows the sandbox sent and answered: the
// rows with a MessageId.
func TestSMSBucketsAddUpUnderTrouble(t *testing.T) {
	cases := []struct {
		name                     string
		seed                     int64
		internal, late, fail     float64
		optOutEvery, throttleOne int // row i is opted out when i%optOutEvery == 1; from the throttled identity when i%throttleOne == throttleOne-1
	}{
		{"some of each", 11, 0.08, 0.08, 0.2, 9, 16},
		{"many internal errors", 12, 0.25, 0.05, 0.5, 7, 20},
		{"many late answers", 14, 0.1, 0.25, 0.1, 11, 16},
	}
	const rows = 80
	throttled := identities[3]
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			all := smsRows(t, rows, func(i int) string {
				if i%tc.throttleOne == tc.throttleOne-1 {
					return throttled
				}
				return identities[i%3]
			})
			var list []string
			optedOut := map[string]bool{}
			for i, row := range all {
				if i%tc.optOutEvery == 1 {
					list = append(list, row.phone)
					optedOut[row.phone] = true
				}
			}
			r := sendSMS(t, all, smssandbox.Config{
				Seed: tc.seed, MPS: 80, Latency: 5 * time.Millisecond, Jitter: 3 * time.Millisecond,
				InternalRate: tc.internal, LateRate: tc.late, LateDelay: time.Minute, FailRate: tc.fail,
				OptOuts: map[string][]string{"Default": list}, ThrottleAlways: []string{throttled},
			}, engine.Config{Rate: 40, ThrottleTries: 5, ThrottleBase: 2 * time.Millisecond, ThrottleMax: 20 * time.Millisecond}, 2*time.Second)

			r.checkBuckets(t)
			c, b, s := r.counts, r.buckets, r.stats
			if c.Pending+c.Sending != 0 {
				t.Errorf("counts %+v: rows left pending or sending", c)
			}
			// What the sandbox did, row by row, against what the buckets say.
			wantHard, wantOther := int64(0), int64(0)
			for i, row := range all {
				n := r.sends.count(row.phone)
				switch {
				case optedOut[row.phone]:
					wantOther++
					if n != 1 {
						t.Errorf("row %d (opted out): %d requests, want 1", i+1, n)
					}
				case row.sender == throttled:
					wantHard++
					if n != 5 {
						t.Errorf("row %d (throttled identity): %d requests, want 5", i+1, n)
					}
				default:
					if n != 1 {
						t.Errorf("row %d: %d requests, want 1", i+1, n)
					}
				}
			}
			internal := s.Errors["InternalServerException"]
			answered := s.Accepted - s.Late - s.InternalSent
			if b.HardThrottle != wantHard || b.Other != wantOther || b.Other != s.OptedOut ||
				b.Unfinished != c.InDoubt || c.InDoubt != s.Late+internal || b.Success != answered {
				t.Errorf("buckets %+v (in doubt %d); sandbox: %d accepted, %d of them late, %d answered 500 though sent, %d answered 500 in all, %d opted out; want hard throttle %d, other %d",
					b, c.InDoubt, s.Accepted, s.Late, s.InternalSent, internal, s.OptedOut, wantHard, wantOther)
			}
			// The trouble happened, or the test proves little.
			if s.Late == 0 || s.InternalSent == 0 || internal == s.InternalSent || s.Failed == 0 || s.OptedOut == 0 || wantHard == 0 {
				t.Errorf("not every kind of trouble came: %+v", s)
			}
			// A message whose final event fails was still a success at send.
			failedLater := countRows(r, func(e store.ExportRow) bool {
				evs := r.events[e.Row]
				return e.Status == campaign.Sent && len(evs) == 1 && evs[0].EventType != "TEXT_DELIVERED"
			})
			if failedLater == 0 {
				t.Errorf("no row sent whose final event fails (sandbox: %d failed events)", s.Failed)
			}
			t.Logf("buckets %+v; sandbox: %d accepted (%d late, %d 500 though sent), %d 500 in all, %d opted out, %d throttled; %d sent whose event fails; in %v",
				b, s.Accepted, s.Late, s.InternalSent, internal, s.OptedOut, s.Throttled, failedLater, r.took.Round(time.Millisecond))
		})
	}
}
