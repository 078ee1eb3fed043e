package metrics

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
)

func gather(t *testing.T, m *Metrics) []*dto.MetricFamily {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// family returns the gathered family called name.
func family(t *testing.T, m *Metrics, name string) *dto.MetricFamily {
	t.Helper()
	for _, mf := range gather(t, m) {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

func label(mt *dto.Metric, name string) string {
	for _, l := range mt.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// histogram returns the histogram name of sender.
func histogram(t *testing.T, m *Metrics, name, sender string) *dto.Histogram {
	t.Helper()
	for _, mt := range family(t, m, name).GetMetric() {
		if label(mt, "sender") == sender {
			return mt.GetHistogram()
		}
	}
	t.Fatalf("no %s{sender=%q}", name, sender)
	return nil
}

// gauges returns the values of the gauges named, by their sender label,
// or by name when they have none.
func gauges(t *testing.T, m *Metrics, names ...string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, name := range names {
		for _, mt := range family(t, m, name).GetMetric() {
			key := label(mt, "sender")
			if key == "" {
				key = name
			}
			out[key] = mt.GetGauge().GetValue()
		}
	}
	return out
}

// exposition is the text exposition of the metrics named.
func exposition(t *testing.T, m *Metrics, names ...string) io.Reader {
	t.Helper()
	b, err := testutil.GatherAndFormat(m.reg, expfmt.TypeTextPlain, names...)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(b)
}

func TestFromCheckpoint(t *testing.T) {
	start := time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)
	counts := campaign.Counts{Total: 10, Pending: 1, InDoubt: 2, Sent: 3, Delivered: 1, Read: 1, Failed: 1, Skipped: 1}
	rows := `# HELP bulksend_rows Rows of the campaign by state (pending, sending, in_doubt, sent, delivered, read, failed, skipped), as the checkpoint holds them.
# TYPE bulksend_rows gauge
bulksend_rows{campaign="c1",channel="sms",state="delivered"} 1
bulksend_rows{campaign="c1",channel="sms",state="failed"} 1
bulksend_rows{campaign="c1",channel="sms",state="in_doubt"} 2
bulksend_rows{campaign="c1",channel="sms",state="pending"} 1
bulksend_rows{campaign="c1",channel="sms",state="read"} 1
bulksend_rows{campaign="c1",channel="sms",state="sending"} 0
bulksend_rows{campaign="c1",channel="sms",state="sent"} 3
bulksend_rows{campaign="c1",channel="sms",state="skipped"} 1
# HELP bulksend_rows_in_doubt Rows whose request may have reached the provider with no answer: settle them with bulksend reconcile.
# TYPE bulksend_rows_in_doubt gauge
bulksend_rows_in_doubt{campaign="c1",channel="sms"} 2
`
	for _, tc := range []struct {
		name  string
		state State
		want  string
	}{
		{"never run", State{Counts: counts}, rows},
		{"a run that ended", State{Counts: counts, LastSuccess: start.Add(90 * time.Second), RunStart: start, RunEnd: start.Add(2 * time.Minute),
			Senders: []string{"+12065550100", "+12065550101"}, Rate: 1}, rows + `
# HELP bulksend_configured_rate_per_second The rate a run was given per sender, per second (SMS: message parts); +Inf: unlimited.
# TYPE bulksend_configured_rate_per_second gauge
bulksend_configured_rate_per_second{campaign="c1",channel="sms",sender="+12065550100"} 1
bulksend_configured_rate_per_second{campaign="c1",channel="sms",sender="+12065550101"} 1
# HELP bulksend_last_success_timestamp_seconds When the provider last accepted a message of the campaign, in seconds since the Unix epoch.
# TYPE bulksend_last_success_timestamp_seconds gauge
bulksend_last_success_timestamp_seconds{campaign="c1",channel="sms"} 1.79607609e+09
# HELP bulksend_run_end_timestamp_seconds When the last run ended, in seconds since the Unix epoch; absent while it runs, or when it was killed.
# TYPE bulksend_run_end_timestamp_seconds gauge
bulksend_run_end_timestamp_seconds{campaign="c1",channel="sms"} 1.79607612e+09
# HELP bulksend_run_start_timestamp_seconds When the last run began, in seconds since the Unix epoch.
# TYPE bulksend_run_start_timestamp_seconds gauge
bulksend_run_start_timestamp_seconds{campaign="c1",channel="sms"} 1.796076e+09
`},
		{"a killed run has no end; unlimited is +Inf", State{Counts: counts, RunStart: start, Senders: []string{"+12065550100"}}, rows + `
# HELP bulksend_configured_rate_per_second The rate a run was given per sender, per second (SMS: message parts); +Inf: unlimited.
# TYPE bulksend_configured_rate_per_second gauge
bulksend_configured_rate_per_second{campaign="c1",channel="sms",sender="+12065550100"} +Inf
# HELP bulksend_run_start_timestamp_seconds When the last run began, in seconds since the Unix epoch.
# TYPE bulksend_run_start_timestamp_seconds gauge
bulksend_run_start_timestamp_seconds{campaign="c1",channel="sms"} 1.796076e+09
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := FromCheckpoint("c1", "sms", tc.state)
			if err := testutil.GatherAndCompare(m.reg, strings.NewReader(tc.want)); err != nil {
				t.Error(err)
			}
			var buf bytes.Buffer
			if err := m.Write(&buf); err != nil {
				t.Fatal(err)
			}
			if err := testutil.GatherAndCompare(m.reg, &buf); err != nil {
				t.Errorf("Write: %v", err)
			}
		})
	}
}

// TestRowsReadAtMostEverySecond: scrapes and file writes close together
// share one read of the checkpoint; the end of a run reads again.
func TestRowsReadAtMostEverySecond(t *testing.T) {
	m := New("c1", "whatsapp")
	now := time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)
	m.state.now = func() time.Time { return now }
	var reads atomic.Int64
	m.CountRows(func(context.Context) (campaign.Counts, error) {
		n := reads.Add(1)
		return campaign.Counts{Total: 100, Sent: n, Pending: 100 - n}, nil
	})
	sent := func() float64 {
		for _, mt := range family(t, m, Rows).GetMetric() {
			if label(mt, "state") == "sent" {
				return mt.GetGauge().GetValue()
			}
		}
		t.Fatal("no sent rows")
		return 0
	}
	for _, step := range []struct {
		name    string
		advance time.Duration
		end     bool
		reads   int64
	}{
		{"first collection reads", 0, false, 1},
		{"within the second: the last read", 300 * time.Millisecond, false, 1},
		{"still within it", 699 * time.Millisecond, false, 1},
		{"a second after the read", time.Millisecond, false, 2},
		{"the end of the run reads again at once", 10 * time.Millisecond, true, 3},
	} {
		now = now.Add(step.advance)
		if step.end {
			m.Ended(now)
		}
		if got := sent(); got != float64(step.reads) || reads.Load() != step.reads {
			t.Errorf("%s: %d reads, sent %v; want %d", step.name, reads.Load(), got, step.reads)
		}
	}
}

// TestRowsUnreadable: a checkpoint that cannot be read fails the file
// (the last one stays) and leaves the rows out of a scrape, which serves
// the rest.
func TestRowsUnreadable(t *testing.T) {
	m := New("c1", "whatsapp")
	m.Configure([]string{"1000001"}, 80)
	m.CountRows(func(context.Context) (campaign.Counts, error) {
		return campaign.Counts{}, errors.New("database is locked")
	})
	path := filepath.Join(t.TempDir(), "bulksend.prom")
	if err := os.WriteFile(path, []byte("# the previous file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteFile(path); err == nil || !strings.Contains(err.Error(), "database is locked") {
		t.Errorf("WriteFile: %v, want the read's error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "# the previous file\n" {
		t.Errorf("the previous file was replaced by %q", b)
	}
	leftovers(t, filepath.Dir(path), "bulksend.prom")

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), ConfiguredRate) || strings.Contains(rec.Body.String(), Rows+"{") {
		t.Errorf("scrape: %d\n%s", rec.Code, rec.Body)
	}
}

// leftovers fails if dir holds anything but the files named.
func leftovers(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s holds %q, want %q", dir, got, want)
	}
}

// TestWriteFileAtomic: a reader (node_exporter's textfile collector)
// reading the file while it is rewritten, again and again, never sees a
// part of one: every read is one of the files written, whole, and parses.
func TestWriteFileAtomic(t *testing.T) {
	m := New("c1", "whatsapp")
	m.Configure([]string{"1000001", "1000002"}, 80)
	path := filepath.Join(t.TempDir(), "bulksend.prom")
	const writes = 200

	var written sync.Map // sha256 of every file written → true
	done := make(chan struct{})
	var reads, partial, parsed atomic.Int64
	var firstBad atomic.Value
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				b, err := os.ReadFile(path)
				if errors.Is(err, os.ErrNotExist) {
					time.Sleep(time.Millisecond) // not written yet
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				reads.Add(1)
				if _, ok := written.Load(sha256.Sum256(b)); !ok {
					partial.Add(1)
					firstBad.CompareAndSwap(nil, string(b))
					continue
				}
				p := expfmt.NewTextParser(model.UTF8Validation)
				if mfs, err := p.TextToMetricFamilies(bytes.NewReader(b)); err != nil || len(mfs) != 6 {
					partial.Add(1)
					firstBad.CompareAndSwap(nil, fmt.Sprintf("%d families, %v:\n%s", len(mfs), err, b))
					continue
				}
				parsed.Add(1)
				// A reader that spins takes the writer's core on a 2-core
				// machine: it reads every tenth of a millisecond.
				time.Sleep(100 * time.Microsecond)
			}
		}()
	}
	for i := range writes {
		// Each file differs from the last, and is known before it lands.
		m.Attempted(engine.Attempt{Row: int64(i), Sender: "1000001", At: time.Now(), Latency: time.Duration(i) * time.Millisecond, Class: engine.Accepted})
		m.Waited("1000002", time.Duration(i)*time.Microsecond)
		var buf bytes.Buffer
		if err := m.Write(&buf); err != nil {
			t.Fatal(err)
		}
		written.Store(sha256.Sum256(buf.Bytes()), true)
		if err := m.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // the readers see every file a few times
	}
	close(done)
	wg.Wait()
	if partial.Load() != 0 {
		t.Errorf("%d of %d reads saw a partial file, the first:\n%s", partial.Load(), reads.Load(), firstBad.Load())
	}
	if parsed.Load() < writes/4 {
		t.Errorf("only %d reads during %d writes: the test proves little", parsed.Load(), writes)
	}
	t.Logf("%d writes, %d reads, all whole", writes, reads.Load())

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 (node_exporter may run as another user)", fi.Mode().Perm())
	}
	leftovers(t, filepath.Dir(path), "bulksend.prom")
}

func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, err string // err: part of the error, "" for none
	}{
		{"a writable directory", filepath.Join(dir, "bulksend.prom"), ""},
		{"a file there is replaced", file, ""},
		{"no such directory", filepath.Join(dir, "missing", "bulksend.prom"), "directory " + filepath.Join(dir, "missing") + " cannot be written"},
		{"a file as directory", filepath.Join(file, "bulksend.prom"), "directory " + file + " cannot be written"},
		{"a directory as file", dir, "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDir(tc.path)
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("CheckDir(%s): %v, want %q", tc.path, err, tc.err)
			}
			if err == nil {
				if werr := New("c1", "whatsapp").WriteFile(tc.path); werr != nil {
					t.Errorf("CheckDir passed, WriteFile: %v", werr)
				}
			}
		})
	}
	leftovers(t, dir, "bulksend.prom", "file")
}

// TestAnswerCodesBounded: an API answering with ever new codes cannot
// grow the series without bound.
func TestAnswerCodesBounded(t *testing.T) {
	m := New("c1", "whatsapp")
	for code := 1; code <= 3*maxCodes; code++ {
		m.Attempted(engine.Attempt{Sender: "1000001", Class: "permanent", Code: code})
	}
	if n := testutil.CollectAndCount(m.reg, Answers); n != maxCodes+1 {
		t.Errorf("%d series, want %d codes and other", n, maxCodes+1)
	}
	var total float64
	for _, mt := range family(t, m, Answers).GetMetric() {
		total += mt.GetCounter().GetValue()
	}
	if total != 3*maxCodes {
		t.Errorf("%v answers counted, want %d", total, 3*maxCodes)
	}
	if got := testutil.ToFloat64(m.answers.WithLabelValues("other")); got != 3*maxCodes-(maxCodes-1) {
		t.Errorf("other: %v", got)
	}
}

// TestAttemptedByClass: what each class of attempt counts in.
func TestAttemptedByClass(t *testing.T) {
	at := time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		class, outcome string
		code           int
		answer         string // the code label counted; "" none
		latency        bool
		success        bool
	}{
		{engine.Accepted, "accepted", 0, "0", true, true},
		{campaign.Throttled.String(), "throttled", 130429, "130429", true, false},
		{campaign.Permanent.String(), "permanent", 131026, "131026", true, false},
		{campaign.PairLimited.String(), "pair-limited", 131056, "131056", true, false},
		{campaign.Unanswered.String(), "in_doubt", 0, "", true, false},
		{campaign.NeverLeft.String(), "never_left", 0, "", false, false},
		{campaign.SenderRested.String(), "sender_rested", 131048, "131048", true, false},
		// Errors without a numeric code (AWS names its errors; a proxy's
		// 502 has none) are told apart from accepted answers.
		{campaign.Transient.String(), "transient", 0, "none", true, false},
		{campaign.Throttled.String(), "throttled", 0, "none", true, false},
		{campaign.Permanent.String(), "permanent", 0, "none", true, false},
	} {
		t.Run(tc.class+"/"+tc.answer, func(t *testing.T) {
			m := New("c1", "whatsapp")
			m.Configure([]string{"s"}, 10)
			m.Attempted(engine.Attempt{Row: 1, Sender: "s", At: at, Latency: 250 * time.Millisecond, Class: tc.class, Code: tc.code})
			if got := testutil.ToFloat64(m.sends.WithLabelValues("s", tc.outcome)); got != 1 {
				t.Errorf("sends{outcome=%q}: %v", tc.outcome, got)
			}
			var answers float64
			for _, mt := range family(t, m, Answers).GetMetric() {
				answers += mt.GetCounter().GetValue()
				if v := mt.GetCounter().GetValue(); v != 0 && label(mt, "code") != tc.answer {
					t.Errorf("answer counted as code %s", label(mt, "code"))
				}
			}
			if want := map[bool]float64{true: 1, false: 0}[tc.answer != ""]; answers != want {
				t.Errorf("%v answers, want %v", answers, want)
			}
			if n := histogram(t, m, Latency, "s").GetSampleCount(); n != map[bool]uint64{true: 1, false: 0}[tc.latency] {
				t.Errorf("%d latency samples", n)
			}
			n := testutil.CollectAndCount(m.reg, LastSuccess)
			if tc.success != (n == 1) {
				t.Errorf("last success: %d series", n)
			}
			if tc.success {
				if got := gauges(t, m, LastSuccess)[LastSuccess]; math.Abs(got-float64(at.Add(250*time.Millisecond).UnixNano())/1e9) > 1e-6 {
					t.Errorf("last success %v, want the answer's time", got)
				}
			}
		})
	}
}

// BenchmarkObserver is the metrics' cost per request: one Waited and one
// Attempted, as the engine calls them, from every core at once.
func BenchmarkObserver(b *testing.B) {
	m := New("c1", "whatsapp")
	senders := []string{"1000001", "1000002", "1000003", "1000004"}
	m.Configure(senders, 80)
	at := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			s := senders[i%len(senders)]
			m.Waited(s, 12*time.Millisecond)
			a := engine.Attempt{Row: int64(i), Sender: s, At: at, Latency: 120 * time.Millisecond, Class: engine.Accepted}
			if i%20 == 0 {
				a.Class, a.Code = campaign.Transient.String(), 131000
			}
			m.Attempted(a)
			i++
		}
	})
}
