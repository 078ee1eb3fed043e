package channel

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/listen"
	"github.com/bulksend/bulksend/internal/logfile"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// SandboxRequestTimeout is run --sandbox's request timeout: long enough
// for its latency, short enough that a demo's late answers (in doubt) do
// not hold the end of the run for long.
const SandboxRequestTimeout = 5 * time.Second

// DemoSandbox is the realistic sandbox of run --sandbox, and the defaults
// of bulksend sandbox: Meta's default throughput, a little of every kind
// of trouble.
func DemoSandbox() sandbox.Config {
	return sandbox.Config{
		Seed: 1, Rate: 80,
		Latency: 120 * time.Millisecond, Jitter: 80 * time.Millisecond,
		TransientRate: 0.01, PermanentRate: 0.01, LateRate: 0.003, LateDelay: 2 * SandboxRequestTimeout,
		FailRate: 0.02, ReadRate: 0.6, DuplicateRate: 0.05, ReorderRate: 0.05,
		HeldRate: 0.03, HeldFailRate: 0.3,
		// Only +1 can be US: the prefix spares the others a parse (a
		// sandbox serving 10,000 sends a second spent an eighth of its CPU
		// here).
		USNumber: func(p string) bool { return strings.HasPrefix(p, "+1") && csvin.Region(p) == "US" },
		// Status webhooks come when they happen: sent 0–1 s after
		// acceptance, delivered 1–3 s after sent, read 5–30 s after
		// delivered (the sandbox's defaults, spelled out for the flags).
		SentDelay:      sandbox.Delay{Mean: 500 * time.Millisecond, Jitter: 500 * time.Millisecond},
		DeliveredDelay: sandbox.Delay{Mean: 2 * time.Second, Jitter: time.Second},
		ReadDelay:      sandbox.Delay{Mean: 17500 * time.Millisecond, Jitter: 12500 * time.Millisecond},
		WebhookTries:   6, WebhookBackoff: time.Second,
		// A few recipients talk back, 2–10 s after their last status: 3%
		// reply (a fifth of them a stop keyword), 2% tap a quick reply,
		// half a percent tap a marketing template's "Stop promotions", 1%
		// stop marketing messages (later marketing sends to them: 131050).
		ReplyRate: 0.03, StopRate: 0.2, ButtonRate: 0.02, StopPromotionsRate: 0.005, PreferenceStopRate: 0.01,
		ReplyDelay: sandbox.Delay{Mean: 6 * time.Second, Jitter: 4 * time.Second},
	}
}

// Demo is the sandbox run --sandbox serves. The cli's test binary
// replaces it with a calm one for scripts about something else than
// faults, whose run must end with nothing in doubt (the demo's fates
// follow the campaign's random ID, so a few rows meet a late answer now
// and then).
var Demo = DemoSandbox

type runningSandbox struct {
	url, token string
	// stop stops the sandbox; its error says the webhook log is short.
	stop func() error
}

// startSandbox serves the sandbox in this process on 127.0.0.1, its
// webhooks appended to webhookLog as they happen (the sandbox buffers and
// flushes each emission itself). Those still to come when the run ends
// are written when it stops.
func startSandbox(log *slog.Logger, s store.Settings, webhookLog string) (*runningSandbox, error) {
	f, err := logfile.Append(webhookLog)
	if err != nil {
		return nil, fmt.Errorf("sandbox webhook log: %w", err)
	}
	cfg := Demo()
	cfg.Token = "sandbox-token"
	m, err := MappingOf(s)
	if err != nil {
		f.Close()
		return nil, err
	}
	same := func(d template.Definition) bool { return d.Name == s.Template && d.Language == s.Lang }
	cfg.Definitions = sandbox.DefaultTemplates()
	if m == nil {
		// A checkpoint from before mappings sends body parameters only.
		cfg.Definitions = slices.DeleteFunc(cfg.Definitions, same)
	}
	if !slices.ContainsFunc(cfg.Definitions, same) {
		// A template of the operator's own: the sandbox takes it as having
		// the body parameters the CSV fills.
		cfg.Templates = []sandbox.Template{{Name: s.Template, Languages: []string{s.Lang}, BodyParams: bodyParams(s, m)}}
	}
	cfg.Webhooks = f
	srv := sandbox.New(cfg)
	hs, err := listen.Loopback(srv, listen.Sandbox(srv.LongestHold()), log.With("listener", "sandbox"))
	if err != nil {
		srv.Close()
		f.Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	log.Info("sending to the in-process sandbox (nothing leaves this machine)", "webhook_log", webhookLog)
	return &runningSandbox{
		url:   "http://" + hs.Addr().String(),
		token: cfg.Token,
		stop: func() error {
			pending := srv.Stats().WebhooksPending
			hs.Close()
			werr := srv.Close()
			st := srv.Stats()
			log.Info("sandbox", "requests", st.Requests, "accepted", st.Accepted, "throttled", st.Throttled,
				"duplicates", st.Duplicates, "max_per_second", st.MaxPerSecond, "webhooks", st.Webhooks,
				"webhooks_written_at_stop", pending, "replies", st.Replies, "stops", st.Stops,
				"button_taps", st.ButtonTaps, "preference_stops", st.PreferenceStops)
			if err := errors.Join(werr, f.Close()); err != nil {
				return fmt.Errorf("sandbox log %s: %w", webhookLog, err)
			}
			return nil
		},
	}, nil
}

// bodyParams is how many body parameters the campaign's requests carry.
func bodyParams(s store.Settings, m *template.Mapping) int {
	if m == nil {
		return len(s.Params)
	}
	n := 0
	for _, b := range m.Bindings {
		if b.Part == template.Body || b.Part == template.Auth {
			n++
		}
	}
	return n
}
