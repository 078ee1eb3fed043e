package cli

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/cli/sandboxcmd"
	"github.com/bulksend/bulksend/internal/listen"
	"github.com/bulksend/bulksend/internal/listen/listentest"
	"github.com/bulksend/bulksend/internal/metrics"
	smschannel "github.com/bulksend/bulksend/internal/sms/channel"
	"github.com/bulksend/bulksend/internal/sms/smssandbox"
	wachannel "github.com/bulksend/bulksend/internal/whatsapp/channel"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

var quiet = slog.New(slog.DiscardHandler)

// TestMetricsListener: --metrics-addr's endpoint, as openMetrics serves
// it (with the suite's short limits instead of listen.Metrics), cuts off
// idle, dripping and slow-reading clients, and a flood above its cap
// waits while it goes on answering.
func TestMetricsListener(t *testing.T) {
	listentest.Run(t, func(t *testing.T, lim listen.Limits) listentest.Target {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		mo := metrics.NewOutput("", 0, quiet)
		mo.Serve(l, lim)
		mo.Attach(metrics.New("c1", "whatsapp"))
		mo.Start(nil, time.Now())
		t.Cleanup(mo.Close)
		return listentest.Target{Server: mo.Server(), Get: "/metrics", Post: "/metrics"}
	})
}

// TestSandboxListener: the sandboxes' server, as run --sandbox and
// 'bulksend sandbox' serve them (both sandboxes behind one listener, with
// the suite's short limits instead of listen.Sandbox), does the same.
func TestSandboxListener(t *testing.T) {
	listentest.Run(t, func(t *testing.T, lim listen.Limits) listentest.Target {
		cfg := wachannel.DemoSandbox()
		cfg.Token = "sandbox-token"
		wa, sms := sandbox.New(cfg), smssandbox.New(smschannel.DemoSandbox(80))
		srv, err := listen.Loopback(smssandbox.Beside(sms, wa), lim, quiet)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close(); wa.Close(); sms.Close() })
		return listentest.Target{
			Server: srv, Get: "/_sandbox/stats", Post: "/v23.0/106540352242922/messages",
			Header: http.Header{"Authorization": {"Bearer sandbox-token"}},
		}
	})
}

// TestSandboxLimitsOutlastHeldAnswers: the sandbox's write timeout is
// made from its configuration, so that the answers it holds on purpose
// (latency, late answers) reach the client, for run --sandbox's sandboxes
// and the standalone one's defaults.
func TestSandboxLimitsOutlastHeldAnswers(t *testing.T) {
	standalone := func() (*sandbox.Server, *smssandbox.Server) {
		cfg := wachannel.DemoSandbox()
		cmd := sandboxcmd.New(&IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, nil)
		// The flags' defaults, as 'bulksend sandbox' starts with none.
		f := cmd.Flags()
		cfg.LateDelay, _ = f.GetDuration("late-delay")
		cfg.Latency, _ = f.GetDuration("latency")
		cfg.Jitter, _ = f.GetDuration("jitter")
		sc := smssandbox.Config{Latency: cfg.Latency, Jitter: cfg.Jitter, LateDelay: cfg.LateDelay}
		return sandbox.New(cfg), smssandbox.New(sc)
	}
	for _, tc := range []struct {
		name string
		sbs  func() []holder
	}{
		{"run --sandbox, WhatsApp", func() []holder { return []holder{sandbox.New(wachannel.DemoSandbox())} }},
		{"run --sandbox, SMS", func() []holder { return []holder{smssandbox.New(smschannel.DemoSandbox(80))} }},
		{"bulksend sandbox", func() []holder { wa, sms := standalone(); return []holder{wa, sms} }},
		{"a late delay of ten minutes", func() []holder {
			return []holder{sandbox.New(sandbox.Config{LateDelay: 10 * time.Minute, Latency: time.Second, ArrivalJitter: time.Second})}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sbs := tc.sbs()
			var longest time.Duration
			for _, sb := range sbs {
				longest = max(longest, sb.LongestHold())
			}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			got := listen.New(l, http.NotFoundHandler(), sandboxLimits(sbs...), quiet).Limits()
			l.Close()
			if got.Write <= got.Read+longest {
				t.Errorf("write timeout %v: an answer held %v after a body read for up to %v is cut off", got.Write, longest, got.Read)
			}
			if got.MaxConns < 1000 && got.MaxConns < fdHalf() {
				t.Errorf("connection cap %d: under what a run at 1,000/s × 10 numbers keeps open", got.MaxConns)
			}
		})
	}
}

// fdHalf is half this process's limit on open files, where listen caps
// every listener.
func fdHalf() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return listen.New(l, http.NotFoundHandler(), listen.Limits{MaxConns: 1 << 30}, quiet).Limits().MaxConns
}

// TestSandboxLateAnswerNotCutOff: with read and idle timeouts far
// shorter than the sandbox's late answer, the answer still comes whole:
// the write timeout is derived from the sandbox's LongestHold.
func TestSandboxLateAnswerNotCutOff(t *testing.T) {
	cfg := sandbox.Config{
		Token: "tok", Seed: 1, Rate: -1, PairInterval: -1, LateRate: 1, LateDelay: 1500 * time.Millisecond,
		Templates: []sandbox.Template{{Name: "welcome"}},
	}
	wa := sandbox.New(cfg)
	defer wa.Close()
	lim := sandboxLimits(wa)
	lim.ReadHeader, lim.Read, lim.Idle = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	srv, err := listen.Loopback(wa, lim, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	body := `{"messaging_product":"whatsapp","to":"+447700900123","type":"template","template":{"name":"welcome","language":{"code":"en_US"}}}`
	req, err := http.NewRequest(http.MethodPost, "http://"+srv.Addr().String()+"/v23.0/106540352242922/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("a late answer (held %v) with a read timeout of %v: %v", cfg.LateDelay, lim.Read, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"messages":[{"id":"wamid.`) {
		t.Fatalf("late answer: %s %q %v", resp.Status, b, err)
	}
	if waited := time.Since(start); waited < cfg.LateDelay {
		t.Fatalf("answered after %v: not a late answer (LateDelay %v)", waited, cfg.LateDelay)
	}
}

// holder is a sandbox: it keeps answers back for up to LongestHold.
type holder interface{ LongestHold() time.Duration }

// sandboxLimits are the listener limits of a server of the sandboxes sbs.
func sandboxLimits(sbs ...holder) listen.Limits {
	var holds []time.Duration
	for _, sb := range sbs {
		holds = append(holds, sb.LongestHold())
	}
	return listen.Sandbox(holds...)
}
