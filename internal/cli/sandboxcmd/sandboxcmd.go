// Package sandboxcmd is bulksend sandbox: the fake WhatsApp Cloud API and
// the fake AWS SMS API served together on one address, from flags.
package sandboxcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bulksend/bulksend/internal/cli/cmdutil"
	"github.com/bulksend/bulksend/internal/listen"
	"github.com/bulksend/bulksend/internal/logfile"
	"github.com/bulksend/bulksend/internal/sms/smssandbox"
	"github.com/bulksend/bulksend/internal/termtext"
	wachannel "github.com/bulksend/bulksend/internal/whatsapp/channel"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

type sandboxOptions struct {
	listen      string
	templates   []string
	definitions string
	numberRates []string
	numbers     []string
	numberInfo  []string
	mmSyncing   []string
	webhooks    string
	accepted    string
	cfg         sandbox.Config
	// The SMS sandbox, served beside the WhatsApp one.
	sms          smssandbox.Config
	smsNumbers   []string
	smsOptOuts   []string
	smsEvents    string
	smsThrottled []string
}

// interrupted is what the sandbox says when interrupted.
var interrupted = cmdutil.Interrupt{Stopping: "stopping the sandbox (interrupt again to abort)", Aborted: "aborted"}

// New is the sandbox command.
func New(ios *cmdutil.IO, logger func() (*slog.Logger, error)) *cobra.Command {
	o := &sandboxOptions{cfg: wachannel.DemoSandbox()}
	cmd := &cobra.Command{
		Use:   "sandbox [flags]",
		Short: "Serve a fake WhatsApp Cloud API and AWS End User Messaging SMS on 127.0.0.1 to rehearse a campaign",
		Long: `Sandbox serves a realistic fake of the Cloud API's send endpoint,
POST /{version}/{phone-number-id}/messages, until interrupted. It checks the
bearer token, serves its templates at GET /{WABA-ID}/message_templates and
checks every send against their definitions as Meta does (a realistic set by
default: spring_sale, order_update, login_code, fall_coupon, summer_teaser,
invoice_ready, store_visit, event_signup, and the paused autumn_sale; or --templates-file),
enforces per-number throughput over a
sliding one-second window (130429) and the pair rate limit (131056), adds
latency, injects transient, permanent and late answers, and emits status
webhooks as Meta sends them, each when it happens (sent, then delivered
after --delivered-delay, read after --read-delay; a few duplicated or
arriving late), to --webhooks and/or POSTed to --webhook-url, a failed POST
retried with backoff (--webhook-tries). A few recipients talk back after
delivery, as Meta delivers it to the same webhooks: text replies, some a
stop keyword (--reply-rate, --stop-rate), quick-reply taps (--button-rate,
and --stop-promotions-rate for a marketing template's "Stop promotions"),
and stops of marketing messages (--preference-stop-rate: a
user_preferences webhook, and later marketing sends to them fail 131050).
When it stops, the webhooks still
to come are written at once, stamped with that moment. Point a run at it
with the line it prints:

  BULKSEND_API_URL=http://127.0.0.1:PORT WHATSAPP_TOKEN=anything bulksend run …

GET /_sandbox/stats shows its counters (requests, accepted, throttled, the
largest one-second window per number, duplicates); they are printed as JSON
on stdout when it stops. Outcomes are deterministic for a given --seed.

It answers AWS End User Messaging SMS on the same address (requests with an
X-Amz-Target header: SendTextMessage, DescribeOptedOutNumbers,
DescribePhoneNumbers, DescribePools), SigV4-signed but not verified: a budget
of --sms-mps message parts per second per origination identity over a
sliding second (ThrottlingException), counted by its own part counter; an
opt-out list (--sms-opt-out); account errors (--sms-account-error);
throttles, internal errors, late answers; AWS event records to
--sms-events for reconcile; and replies (--sms-reply-rate, --sms-stop-rate,
--sms-help-rate), written there as AWS publishes them to SNS. Point an
SMS run at it with:

  AWS_ENDPOINT_URL=http://127.0.0.1:PORT AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x bulksend run --channel sms …

GET /_sandbox/sms/stats shows its counters.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			return runSandbox(ios, o, log)
		},
	}
	f := cmd.Flags()
	c := &o.cfg
	f.StringVar(&o.listen, "listen", "127.0.0.1:0", "address to listen on (port 0: any free port)")
	f.Int64Var(&c.Seed, "seed", c.Seed, "seed for outcomes: the same seed gives the same outcomes")
	f.StringVar(&c.Token, "token", "", "the bearer token accepted (empty: any non-empty token)")
	f.StringVar(&c.ExpiredToken, "expired-token", "expired", "a token that answers 190 (expired), to rehearse that")
	f.StringArrayVar(&o.templates, "template", nil, "also accept template NAME:BODY_PARAMS[:LANG,LANG…], checking only its body parameter count (repeatable)")
	f.StringVar(&o.definitions, "templates-file", "", "template definitions as GET message_templates returns them (default: the sandbox's own set)")
	f.StringSliceVar(&o.numbers, "phone-number-id", nil, "sender phone-number IDs that exist (empty: any)")
	f.Float64Var(&c.Rate, "rate", c.Rate, "messages/s allowed per number over a sliding second (negative: no limit)")
	f.StringArrayVar(&o.numberRates, "number-rate", nil, "per-number rate ID=N (repeatable)")
	f.DurationVar(&c.PairInterval, "pair-interval", 6*time.Second, "pair rate limit: one message per recipient per interval (negative: off)")
	f.DurationVar(&c.Latency, "latency", c.Latency, "answer latency")
	f.DurationVar(&c.Jitter, "jitter", c.Jitter, "± uniform jitter on the latency")
	f.DurationVar(&c.ArrivalJitter, "arrival-jitter", 0, "± uniform delay before a request counts against its number's limit: a network that bunches requests")
	f.BoolVar(&c.StrictWindow, "strict-window", false, "WhatsApp and SMS: count the limits the strictest way: every request (every part of an SMS) counts at its arrival in its sender's sliding second, whatever its answer, and one that would take the second past --rate (--sms-mps) is throttled (130429, ThrottlingException)")
	f.Float64Var(&c.TransientRate, "transient-rate", c.TransientRate, "fraction answered 131000, 131016 or 503")
	f.Float64Var(&c.PermanentRate, "permanent-rate", c.PermanentRate, "fraction answered 131026 (undeliverable)")
	f.Float64Var(&c.LateRate, "late-rate", c.LateRate, "fraction accepted but answered after --late-delay (client times out: in doubt)")
	f.DurationVar(&c.LateDelay, "late-delay", 60*time.Second, "how late a late answer comes")
	f.Float64Var(&c.FailRate, "fail-rate", c.FailRate, "fraction of accepted messages whose webhooks end failed")
	f.Float64Var(&c.ReadRate, "read-rate", c.ReadRate, "fraction of delivered messages also read")
	f.Float64Var(&c.DuplicateRate, "duplicate-rate", c.DuplicateRate, "fraction of messages one of whose webhooks is delivered twice (the same body, up to a second later)")
	f.Float64Var(&c.ReorderRate, "reorder-rate", c.ReorderRate, "fraction of messages one of whose webhooks arrives late, after a later status (its timestamp still its own)")
	f.Var(&c.SentDelay, "sent-delay", "when the sent webhook comes after acceptance: MIN-MAX (uniform) or one duration")
	f.Var(&c.DeliveredDelay, "delivered-delay", "when delivered (or failed) comes after sent: MIN-MAX or one duration")
	f.Var(&c.ReadDelay, "read-delay", "when read comes after delivered: MIN-MAX or one duration")
	f.Float64Var(&c.ReplyRate, "reply-rate", c.ReplyRate, "fraction of delivered messages whose recipient replies with a text (a messages webhook)")
	f.Float64Var(&c.StopRate, "stop-rate", c.StopRate, "fraction of the replies that are a stop keyword (STOP, Unsubscribe, PARAR…)")
	f.Float64Var(&c.ButtonRate, "button-rate", c.ButtonRate, "fraction of delivered messages whose recipient taps one of the template's quick-reply buttons (not the opt-out)")
	f.Float64Var(&c.StopPromotionsRate, "stop-promotions-rate", c.StopPromotionsRate, "fraction of delivered marketing messages with a \"Stop promotions\" button whose recipient taps it")
	f.Float64Var(&c.PreferenceStopRate, "preference-stop-rate", c.PreferenceStopRate, "fraction of delivered messages whose recipient stops marketing messages (a user_preferences webhook; later marketing sends to them fail 131050)")
	f.Var(&c.ReplyDelay, "reply-delay", "when a reply, tap or stop of marketing comes after the message's last status: MIN-MAX or one duration")
	f.IntVar(&c.WebhookTries, "webhook-tries", c.WebhookTries, "POSTs of one webhook to --webhook-url before it is given up: at once, then again at once, then after --webhook-backoff, doubling")
	f.DurationVar(&c.WebhookBackoff, "webhook-backoff", c.WebhookBackoff, "wait before the second retry of a failed webhook POST; it doubles after each")
	f.StringArrayVar(&o.numberInfo, "number", nil, "what a number reports or answers, ID:KEY=VALUE with KEY health (AVAILABLE, LIMITED, BLOCKED), quality, throughput (STANDARD, HIGH), limit (TIER_250…TIER_UNLIMITED) or send-error (a Meta code every send from it answers, e.g. 131048) (repeatable)")
	f.BoolVar(&c.MarketingOffOnCloudAPI, "marketing-off", false, "marketing templates are turned off on Cloud API: /messages answers 131063 for them")
	f.Float64Var(&c.HeldRate, "held-rate", c.HeldRate, "fraction of sends answered held_for_quality_assessment (template pacing)")
	f.Float64Var(&c.HeldFailRate, "held-fail-rate", c.HeldFailRate, "fraction of held messages later dropped with a failed 132015 webhook")
	f.Float64Var(&c.MarketingCapRate, "marketing-cap-rate", c.MarketingCapRate, "fraction of marketing messages whose webhooks end failed 131049 (per-user marketing cap)")
	f.BoolVar(&c.MMOnboarded, "mm-onboarded", false, "the account is onboarded to the Marketing Messages API (its sends are priced marketing_lite)")
	f.StringArrayVar(&o.mmSyncing, "mm-syncing", nil, "a template still syncing for the Marketing Messages API: answers 134101 for 10 minutes (repeatable)")
	f.Int64Var(&c.UsageAfter, "usage-after", 0, "the call budget is spent after this many accepted sends (X-Business-Use-Case-Usage); 0: never")
	f.IntVar(&c.RegainAccessMinutes, "regain-access-minutes", 0, "with --usage-after: minutes until the budget is back")
	f.StringVar(&o.webhooks, "webhooks", "", "append status webhooks to FILE, one JSON body per line")
	f.StringVar(&c.WebhookURL, "webhook-url", "", "POST status webhooks to this URL")
	f.StringVar(&c.AppSecret, "app-secret", "", "sign POSTed webhooks with X-Hub-Signature-256 using this secret")
	f.StringVar(&o.accepted, "accepted", "", "append a record of every accepted message to FILE")
	s := &o.sms
	f.Float64Var(&s.MPS, "sms-mps", 1, "SMS: message parts per second each origination identity allows over a sliding second (negative: no limit)")
	f.StringArrayVar(&o.smsNumbers, "sms-number", nil, "SMS: an E.164 number the account owns (repeatable; none: any identity is taken)")
	f.StringArrayVar(&o.smsOptOuts, "sms-opt-out", nil, "SMS: a phone on the Default opt-out list (repeatable)")
	f.StringVar(&s.AccountError, "sms-account-error", "", "SMS: every send answers this account error: "+strings.Join(smssandbox.AccountErrors, ", "))
	f.StringArrayVar(&o.smsThrottled, "sms-throttle-always", nil, "SMS: an origination identity whose every send is throttled (repeatable)")
	f.Float64Var(&s.ThrottleRate, "sms-throttle-rate", 0, "SMS: fraction of sends throttled at random (other traffic on the number)")
	f.Float64Var(&s.InternalRate, "sms-internal-rate", 0, "SMS: fraction answered InternalServerException (half of them were sent: in doubt)")
	f.Float64Var(&s.LateRate, "sms-late-rate", 0, "SMS: fraction sent but answered after --late-delay (client times out: in doubt)")
	f.Float64Var(&s.FailRate, "sms-fail-rate", 0.02, "SMS: fraction of sent messages whose final event is a failure")
	f.Float64Var(&s.ReplyRate, "sms-reply-rate", 0, "SMS: fraction of delivered messages whose recipient replies (an inbound message, to --sms-events as its SNS notification)")
	f.Float64Var(&s.StopRate, "sms-stop-rate", 0, "SMS: fraction of the replies that are a stop keyword (STOP, UNSUBSCRIBE, ARRET…)")
	f.Float64Var(&s.HelpRate, "sms-help-rate", 0, "SMS: fraction of the replies that are HELP")
	f.StringVar(&o.smsEvents, "sms-events", "", "SMS: append AWS event records to FILE, one JSON object per line (for reconcile)")
	return cmd
}

func runSandbox(ios *cmdutil.IO, o *sandboxOptions, log *slog.Logger) (err error) {
	cfg := o.cfg
	cfg.PhoneNumberIDs = o.numbers
	cfg.Definitions = sandbox.DefaultTemplates()
	if o.definitions != "" {
		defs, err := sandbox.LoadDefinitions(o.definitions)
		if err != nil {
			return cmdutil.Usagef("the file holds {\"data\":[…]} as GET message_templates answers, or an array of such definitions", "--templates-file: %w", err)
		}
		cfg.Definitions = defs
	}
	cfg.MMSyncing = o.mmSyncing
	if err := cfg.Apply(sandbox.Specs{Templates: o.templates, Numbers: o.numberInfo, NumberRates: o.numberRates}); err != nil {
		return words(err)
	}
	if err := cfg.Validate(); err != nil {
		return words(err)
	}
	// 0 would be the sandbox's default: given on the command line, it is a mistake.
	if cfg.WebhookTries < 1 {
		return cmdutil.Usagef("1 posts each webhook once, without retries", "invalid --webhook-tries %d: want at least 1", cfg.WebhookTries)
	}
	if cfg.WebhookBackoff <= 0 {
		return cmdutil.Usagef("e.g. --webhook-backoff 1s", "invalid --webhook-backoff %v: want a positive duration", cfg.WebhookBackoff)
	}
	var closers []func() error
	defer func() {
		for _, c := range closers {
			if cerr := c(); err == nil {
				err = cerr
			}
		}
	}()
	// The sandbox buffers the webhook log itself and flushes every
	// emission, so that a reader of the file sees each webhook when it
	// happens; the accepted records and the SMS events get a buffer here,
	// flushed now and then.
	open := func(path string, buffered bool) (io.Writer, error) {
		f, err := logfile.Append(path)
		if errors.Is(err, logfile.ErrForeign) {
			return nil, cmdutil.Usagef("name a file of its own, or move that one away", "%w", err)
		}
		if err != nil {
			return nil, err
		}
		if !buffered {
			closers = append(closers, func() error { return logfile.Close(path, nil, f) })
			return f, nil
		}
		l := logfile.NewFlushed(f)
		closers = append(closers, func() error { return logfile.Close(path, l, f) })
		return l, nil
	}
	if o.webhooks != "" {
		w, err := open(o.webhooks, false)
		if err != nil {
			return fmt.Errorf("--webhooks: %w", err)
		}
		cfg.Webhooks = w
	}
	if o.accepted != "" {
		w, err := open(o.accepted, true)
		if err != nil {
			return fmt.Errorf("--accepted: %w", err)
		}
		cfg.Accepted = w
	}
	l, err := net.Listen("tcp", o.listen)
	if err != nil {
		return cmdutil.Usagef("", "--listen: %w", err)
	}
	if ip := l.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		log.Warn("the sandbox listens beyond this machine", "addr", l.Addr().String())
	}
	sc := o.sms
	sc.Seed, sc.Latency, sc.Jitter, sc.LateDelay = cfg.Seed, cfg.Latency, cfg.Jitter, cfg.LateDelay
	sc.StrictWindow = cfg.StrictWindow
	sc.ThrottleAlways = o.smsThrottled
	for _, n := range o.smsNumbers {
		sc.Numbers = append(sc.Numbers, smssandbox.Number{PhoneNumber: n})
	}
	if len(o.smsOptOuts) > 0 {
		sc.OptOuts = map[string][]string{"Default": o.smsOptOuts}
	}
	if o.smsEvents != "" {
		w, err := open(o.smsEvents, true)
		if err != nil {
			return fmt.Errorf("--sms-events: %w", err)
		}
		sc.Events = w
	}
	if err := sc.Validate(); err != nil {
		return cmdutil.Usagef("", "SMS sandbox: %w", err)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		// A rehearsal's run shares the machine: with a thread a core each,
		// the two schedulers wake idle threads against each other. On 2
		// cores at 10,000 sends a second one thread spared the sandbox a
		// fifth of its CPU (BenchmarkScale), and the run went faster.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(1, runtime.GOMAXPROCS(0)/2)))
	}
	srv := sandbox.New(cfg)
	smsSrv := smssandbox.New(sc)
	hs := listen.New(l, smssandbox.Beside(smsSrv, srv), listen.Sandbox(srv.LongestHold(), smsSrv.LongestHold()), log.With("listener", "sandbox"))
	fmt.Fprintf(ios.Err, "bulksend: sandbox listening; point a run at it with:\n  BULKSEND_API_URL=http://%s\n", l.Addr().String())
	fmt.Fprintf(ios.Err, "bulksend: its business account (for --waba) is %s; templates: %s\n", sandbox.DefaultWABAID, termtext.Join(sandbox.Names(cfg.Definitions), ", "))
	fmt.Fprintf(ios.Err, "bulksend: it answers AWS End User Messaging SMS too; point an SMS run at it with:\n  AWS_ENDPOINT_URL=http://%s AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=sandbox AWS_SECRET_ACCESS_KEY=sandbox\n", l.Addr().String())
	ctx, stop := cmdutil.SignalContext(context.Background(), ios, log, interrupted)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- hs.Serve() }()
	select {
	case <-ctx.Done():
	case err := <-served:
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	hs.Close()
	if n := srv.Stats().WebhooksPending; n > 0 {
		log.Info("writing the webhooks still to come", "webhooks", n)
	}
	if cfg.WebhookURL != "" {
		log.Info("waiting for webhook POSTs and their retries (interrupt again to abort)", "tries", cfg.WebhookTries)
	}
	werr := srv.Close()
	if err := errors.Join(werr, smsSrv.Close()); err != nil {
		return err
	}
	enc := json.NewEncoder(ios.Out)
	enc.SetIndent("", "  ")
	st := struct {
		sandbox.Stats
		SMS *smssandbox.Stats `json:"sms,omitempty"` // when it served SMS
	}{Stats: srv.Stats()}
	if sms := smsSrv.Stats(); sms.Requests > 0 {
		st.SMS = &sms
	}
	return enc.Encode(st)
}

// sandboxExamples are the sandbox's settings written as flags.
var sandboxExamples = map[string]string{
	"template":    "e.g. --template spring_sale:2:en_US,pt_BR",
	"number":      "e.g. --number 106540352242922:health=BLOCKED",
	"number-rate": "e.g. --number-rate 106540352242922=1000",
}

// sandboxWords names the flag of a sandbox setting it cannot take.
func words(err error) error {
	var se *sandbox.SettingError
	if !errors.As(err, &se) {
		return err
	}
	hint := sandboxExamples[se.Setting]
	if errors.Is(err, sandbox.ErrNumberKey) {
		hint = "keys: " + sandbox.NumberKeys
	}
	if se.Err == nil {
		return cmdutil.Usagef(hint, "invalid --%s %s", se.Setting, se.Value)
	}
	return cmdutil.Usagef(hint, "invalid --%s %s: %w", se.Setting, se.Value, se.Err)
}
