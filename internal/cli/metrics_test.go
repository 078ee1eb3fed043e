package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

// inProcess is a bulksend command run in this process, with env as its
// whole environment.
type inProcess struct {
	stdout, stderr *syncBuffer
	code           chan int
}

func startCLI(t *testing.T, env map[string]string, args ...string) *inProcess {
	t.Helper()
	p := &inProcess{stdout: &syncBuffer{}, stderr: &syncBuffer{}, code: make(chan int, 1)}
	ios := &IO{In: strings.NewReader(""), Out: p.stdout, Err: p.stderr, Getenv: func(k string) string { return env[k] },
		Abort: func(code int) { t.Errorf("aborted with exit %d", code) }}
	go func() { p.code <- runMain(args, ios) }()
	return p
}

func (p *inProcess) wait(t *testing.T) int {
	t.Helper()
	select {
	case c := <-p.code:
		return c
	case <-time.After(2 * time.Minute):
		t.Fatalf("bulksend did not exit; stderr:\n%s", p.stderr)
		return 0
	}
}

// writeCampaign writes a campaign CSV of n recipients (the phones of
// csvin.SampleNumber) and returns its path and phones.
func writeCampaign(t *testing.T, dir string, n int) (string, []string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("phone,name,code\n")
	var phones []string
	for i := range n {
		p := csvin.SampleNumber(i)
		phones = append(phones, p)
		fmt.Fprintf(&b, "%s,Name %d,C%d\n", p, i, i)
	}
	path := filepath.Join(dir, "campaign.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, phones
}

// serveSandbox serves sb for the test; its Templates get welcome with
// two body parameters.
func serveSandbox(t *testing.T, cfg sandbox.Config) string {
	t.Helper()
	cfg.Templates = append(cfg.Templates, sandbox.Template{Name: "welcome", BodyParams: 2})
	sb := sandbox.New(cfg)
	srv := httptest.NewServer(sb)
	t.Cleanup(func() { srv.Close(); sb.Close() })
	return srv.URL
}

// TestRunServesMetrics: run --metrics-addr serves /metrics while the run
// sends (what was accepted so far, under the campaign's ID), and stops
// serving when it ends.
func TestRunServesMetrics(t *testing.T) {
	const rows = 120
	dir := t.TempDir()
	csv, _ := writeCampaign(t, dir, rows)
	url := serveSandbox(t, sandbox.Config{Seed: 1, Rate: 80, Token: "tok", PairInterval: -1, Latency: 10 * time.Millisecond})
	p := startCLI(t, map[string]string{"WHATSAPP_TOKEN": "tok", "BULKSEND_API_URL": url},
		"run", csv, "--from", "1000001", "--template", "welcome", "--rate", "40", "--metrics-addr", "127.0.0.1:0")

	served := regexp.MustCompile(`msg="serving metrics" url=(http://127\.0\.0\.1:[0-9]+/metrics)`)
	var endpoint string
	for deadline := time.Now().Add(30 * time.Second); endpoint == ""; time.Sleep(5 * time.Millisecond) {
		if m := served.FindStringSubmatch(p.stderr.String()); m != nil {
			endpoint = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no metrics address logged:\n%s", p.stderr)
		}
	}

	var mid map[string]*dto.MetricFamily
	var midAccepted float64
	notYet := 0
	for mid == nil {
		select {
		case code := <-p.code:
			t.Fatalf("the run ended (exit %d) before /metrics showed it sending; 503s: %d\n%s", code, notYet, p.stderr)
		default:
		}
		resp, err := http.Get(endpoint)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			notYet++ // importing, not sending yet
			continue
		}
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("GET %s: %s %s\n%s", endpoint, resp.Status, resp.Header.Get("Content-Type"), body)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
		if err != nil {
			t.Fatalf("GET %s: %v\n%s", endpoint, err, body)
		}
		if accepted := sendsOf(mfs, "accepted"); accepted > 0 {
			mid, midAccepted = mfs, accepted
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := p.wait(t); code != ExitOK {
		t.Fatalf("exit %d:\n%s", code, p.stderr)
	}
	if midAccepted >= rows {
		t.Errorf("/metrics showed %v accepted: not during the run", midAccepted)
	}
	for _, name := range []string{"bulksend_rows", "bulksend_rows_in_doubt", "bulksend_api_latency_seconds", "bulksend_limiter_wait_seconds",
		"bulksend_configured_rate_per_second", "bulksend_current_rate_per_second", "bulksend_retries_scheduled_total", "bulksend_run_start_timestamp_seconds"} {
		if mid[name] == nil {
			t.Errorf("/metrics during the run has no %s", name)
		}
	}
	if mid["bulksend_run_end_timestamp_seconds"] != nil {
		t.Error("/metrics during the run has an end")
	}
	settings, err := store.ReadSettings(filepath.Join(dir, "campaign.bulksend.db"))
	if err != nil {
		t.Fatal(err)
	}
	if got := label(mid["bulksend_rows"].GetMetric()[0], "campaign"); got != settings.CampaignID {
		t.Errorf("campaign label %q, want %q", got, settings.CampaignID)
	}
	if resp, err := http.Get(endpoint); err == nil {
		resp.Body.Close()
		t.Errorf("GET %s after the run: %s, want no server", endpoint, resp.Status)
	}
}

func sendsOf(mfs map[string]*dto.MetricFamily, outcome string) float64 {
	var n float64
	for _, m := range mfs["bulksend_sends_total"].GetMetric() {
		if label(m, "outcome") == outcome {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
