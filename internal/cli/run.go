package cli

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/sms"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp"
	"github.com/bulksend/bulksend/internal/whatsapp/pricing"
	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

type runOptions struct {
	csv            string
	from           []string
	template       string
	lang           string
	rate           float64
	concurrency    int
	db             string
	apiURL         string
	apiVersion     string
	maxAttempts    int
	requestTimeout time.Duration
	inDoubt        string
	inDoubtGrace   time.Duration
	exclude        string
	region         string
	phoneColumn    string
	delimiter      string
	tokenFile      string
	params         []string // --param NAME=VALUE
	ignoreColumns  []string
	waba           string
	paramFormat    string
	api            string
	mmPolicy       string
	noPreflight    bool
	rateCard       string
	callingCodes   string
	dryRun         bool
	sandbox        bool
	json           bool
	progressEvery  time.Duration
	metricsFile    string
	metricsAddr    string
	metricsEvery   time.Duration

	// SMS (--channel sms).
	channel       string
	text          string
	textFile      string
	messageType   string
	configSet     string
	maxPrice      string
	ttl           time.Duration
	awsRegion     string
	endpointURL   string
	syncOptOuts   bool
	throttleTries int

	changed func(flag string) bool
	log     *slog.Logger
	mapping *template.Mapping // the first run's, for checking rows at import
	card    *pricing.Card     // --rate-card, read before anything else
	sms     *smsImport        // the first run's SMS body, for rendering and measuring rows at import
	// metricsOut is --metrics-file and --metrics-addr, checked and
	// listening before anything is sent; nil without them.
	metricsOut *metricsOutput
}

func newRunCmd(ios *IO, logger func() (*slog.Logger, error)) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run CAMPAIGN.csv [flags]",
		Short: "Send a template message (or an SMS) to every recipient of a CSV, resuming where the last run stopped",
		Long: `Run loads the CSV into a checkpoint beside it (CAMPAIGN.bulksend.db) and sends
one template message per recipient, paced per sender number. Run the same
command again to resume: settings given on the first run are kept in the
checkpoint; --rate, --concurrency and --max-attempts may change later runs.

The CSV needs a header row with a "phone" column; optional "from" (sender
phone-number ID) and "id" columns; every other column fills the template:
plain columns are body parameters (in order for {{1}}, {{2}}…; by name for a
named template), header.text, header.image, header.video, header.document
(with header.filename), header.latitude/longitude/name/address fill the
header, button.N.url, button.N.payload and button.N.coupon fill button N, and
auth.code fills an authentication template's code. --param NAME=VALUE gives a
value for every row instead of a column. A row whose value breaks Meta's rules
is skipped with the reason; the rest is sent.

With --waba (or $WHATSAPP_WABA_ID) the template's approved definition is read
first, and a CSV that does not fit it is refused before anything is sent.

The access token is read from WHATSAPP_TOKEN or --token-file, never from a
flag value, and is never written anywhere.

--channel sms sends a text message per recipient through AWS End User
Messaging SMS instead: --from takes origination identities (phone numbers,
their IDs or ARNs, sender IDs, pools), the body is --text or --text-file with
{{column}} placeholders, and --rate counts message parts per second per
identity (default 1). Credentials come from the standard AWS chain
(environment, profile, SSO), never from a flag.

` + exitCodesHelp,
		Example: `  bulksend run campaign.csv --from 106540352242922 --template spring_sale --lang en_US
  bulksend run campaign.csv                      # resume
  bulksend run demo.csv --sandbox --template welcome --from 1000001   # no Meta account needed
  bulksend run sms.csv --channel sms --from +12065550100 --text 'Hi {{first_name}}, your code is {{code}}' --dry-run`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("name one CSV file, e.g. 'bulksend run campaign.csv'", "run takes one CAMPAIGN.csv argument, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.csv = args[0]
			o.changed = func(name string) bool { return cmd.Flags().Changed(name) }
			log, err := logger()
			if err != nil {
				return err
			}
			o.log = log
			return runRun(cmd.Context(), ios, o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.from, "from", nil, "sender phone-number IDs, comma-separated; each recipient sticks to one (unless the CSV has a from column)")
	f.StringVar(&o.template, "template", "", "template name (required on the first run)")
	f.StringVar(&o.lang, "lang", "en_US", "template language code")
	f.Float64Var(&o.rate, "rate", 80, "messages per second per sender number (Meta: 80 by default, up to 1000); SMS: message parts per second per origination identity, default 1 (10DLC, international long codes; US toll-free usually 3, short codes 100)")
	f.IntVar(&o.concurrency, "concurrency", 0, "requests in flight (default: rate × observed latency)")
	f.StringVar(&o.db, "db", "", "checkpoint file (default: beside the CSV, CAMPAIGN.bulksend.db)")
	f.StringVar(&o.apiURL, "api-url", "", "API base URL (default https://graph.facebook.com, or $BULKSEND_API_URL)")
	f.StringVar(&o.apiVersion, "api-version", whatsapp.DefaultVersion, "Graph API version in the path")
	f.IntVar(&o.maxAttempts, "max-attempts", 5, "attempts per recipient before it is failed")
	f.DurationVar(&o.requestTimeout, "request-timeout", 30*time.Second, "timeout of one request; a request that times out leaves its row in doubt")
	f.StringVar(&o.inDoubt, "in-doubt", "hold", "rows whose outcome is unknown: hold (until reconcile), resend (may duplicate) or fail (may miss)")
	f.DurationVar(&o.inDoubtGrace, "in-doubt-grace", 0, "apply --in-doubt only to rows whose last attempt is older than this")
	f.StringVar(&o.exclude, "exclude", "", "suppression list (one phone per line, or a CSV with a phone column): those rows are skipped")
	f.StringVar(&o.region, "default-region", "", "region (ISO 3166 code, e.g. GB) for numbers written without a country code")
	f.StringVar(&o.phoneColumn, "phone-column", "phone", "the CSV column that holds the phone numbers (any case)")
	f.StringVar(&o.delimiter, "delimiter", "", `the CSV's field separator: ",", ";", "tab" or "|" (default: detected from the header)`)
	f.StringArrayVar(&o.params, "param", nil, "NAME=VALUE: fill a template slot with the same value for every row, e.g. header.image=https://… (repeatable)")
	f.StringArrayVar(&o.ignoreColumns, "ignore-column", nil, "a CSV column the template does not use (otherwise such a column is refused; repeatable)")
	f.StringVar(&o.waba, "waba", "", "WhatsApp Business Account ID: check the CSV against the approved template before sending (default $WHATSAPP_WABA_ID)")
	f.StringVar(&o.paramFormat, "param-format", "", "positional or named body parameters, when the template cannot be read (default: the template's, else positional)")
	f.StringVar(&o.api, "api", "messages", "messages (Cloud API) or marketing (the Marketing Messages API, marketing templates only)")
	f.StringVar(&o.mmPolicy, "mm-policy", "fallback", "with --api marketing: fallback (send through Cloud API where the Marketing Messages API cannot) or strict (refuse instead)")
	f.BoolVar(&o.noPreflight, "no-preflight", false, "do not read the sender numbers' health, quality, throughput and messaging limit before the first send")
	f.StringVar(&o.rateCard, "rate-card", "", "Meta's rate-card CSV: --dry-run prints the campaign's cost ceiling")
	f.StringVar(&o.callingCodes, "calling-codes", "", "Meta's country-calling-code to market list, for a --rate-card without codes")
	f.StringVar(&o.tokenFile, "token-file", "", "read the access token from this file instead of WHATSAPP_TOKEN")
	f.BoolVar(&o.dryRun, "dry-run", false, "import and validate, print the plan and an estimate; send nothing, keep no checkpoint")
	f.BoolVar(&o.sandbox, "sandbox", false, "send to an in-process sandbox API instead of Meta (no account needed); webhooks go to CAMPAIGN.webhooks.jsonl")
	f.BoolVar(&o.json, "json", false, "print the final counts as one JSON object on stdout")
	f.DurationVar(&o.progressEvery, "progress-interval", 5*time.Second, "how often to print a progress line when stderr is not a terminal")
	f.StringVar(&o.metricsFile, "metrics-file", "", "write Prometheus metrics to this file (text format, atomically) during the run and at exit, for node_exporter's textfile collector (name it *.prom)")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://HOST:PORT/metrics while the run runs, e.g. 127.0.0.1:9465")
	f.DurationVar(&o.metricsEvery, "metrics-interval", 5*time.Second, "how often to write --metrics-file")
	f.StringVar(&o.channel, "channel", "whatsapp", "whatsapp (Cloud API template messages) or sms (AWS End User Messaging SMS); fixed on the first run")
	f.StringVar(&o.text, "text", "", "SMS: the message body, with {{column}} placeholders filled from the CSV's columns")
	f.StringVar(&o.textFile, "text-file", "", "SMS: read the message body from this file (UTF-8)")
	f.StringVar(&o.messageType, "message-type", "", "SMS: transactional or promotional (default: the origination identity's)")
	f.StringVar(&o.configSet, "configuration-set", "", "SMS: the configuration set whose event destinations log delivery events (for reconcile)")
	f.StringVar(&o.maxPrice, "max-price", "", "SMS: the most to pay for one message (all its parts) in US dollars, e.g. 0.05 (AWS refuses dearer messages)")
	f.DurationVar(&o.ttl, "ttl", 0, "SMS: how long AWS may try to deliver a message, 5s to 72h (default 72h; e.g. 4h so late sends don't arrive at night)")
	f.StringVar(&o.awsRegion, "region", "", "SMS: AWS region (default $AWS_REGION or the profile's)")
	f.StringVar(&o.endpointURL, "endpoint-url", "", "SMS: AWS endpoint URL (default $AWS_ENDPOINT_URL, else AWS's)")
	f.BoolVar(&o.syncOptOuts, "sync-opt-outs", false, "SMS: read each origination identity's opt-out list before sending and skip those rows (reason opted_out)")
	f.IntVar(&o.throttleTries, "throttle-tries", 5, "SMS: tries of a throttled row before it fails as throttle_exhausted (waits 2, 8, 32, 128 s… between)")
	return cmd
}

// storedSettings returns the settings of the campaign in the checkpoint
// at db, nil when there is none (no file, or a file a failed first run
// left without a campaign).
func storedSettings(db string) (*store.Settings, error) {
	if _, err := os.Stat(db); err != nil {
		return nil, nil
	}
	s, err := store.ReadSettings(db)
	if errors.Is(err, store.ErrNoSettings) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// errCSVChanged refuses a CSV that differs from the one imported.
var errCSVChanged = errors.New("the CSV changed since this checkpoint was made")

func runRun(ctx context.Context, ios *IO, o *runOptions) error {
	if o.waba == "" {
		o.waba = strings.TrimSpace(ios.Getenv("WHATSAPP_WABA_ID"))
	}
	if err := o.validate(); err != nil {
		return err
	}
	if err := o.checkMetricsFlags(); err != nil {
		return err
	}
	if _, err := os.Stat(o.csv); err != nil {
		return usagef("", "campaign file: %w", err)
	}
	db, err := o.db, error(nil)
	if db == "" {
		if db, err = dbPath(o.csv); err != nil {
			return err
		}
	}
	// The campaign's channel decides which flags apply and whether a token
	// is read: a resume takes the one stored. All is checked before a file
	// is made.
	stored, err := storedSettings(db)
	if err != nil {
		return err
	}
	if stored != nil {
		was := cmp.Or(stored.Channel, string(campaign.WhatsApp))
		if o.changed("channel") && o.channel != was {
			return usagef("drop --channel to resume with the stored value, or start a new campaign with another --db",
				"--channel %q differs from this campaign's %q: it cannot change once sending started", o.channel, was)
		}
		o.channel = was
	}
	if err := o.checkChannel(); err != nil {
		return err
	}
	if stored == nil && o.isSMS() {
		if _, err := o.smsBody(); err != nil {
			return err
		}
	}
	if o.rateCard != "" {
		// Read first: a bad card is told before the import and the reads.
		card, err := loadRateCard(o.rateCard, o.callingCodes)
		if err != nil {
			return err
		}
		o.card = card
	}
	// A dry run changes nothing in a campaign that exists: it plans from a
	// read of it (opening may still bring the file's schema up to date).
	// Without one (or with a checkpoint a failed first run left empty), it
	// imports into a temporary one.
	readOnly := false
	if o.dryRun {
		if stored != nil {
			readOnly = true
		} else {
			dir, err := os.MkdirTemp("", "bulksend-dry-run-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			db = filepath.Join(dir, "plan.db")
		}
	}
	token, err := o.token(ios)
	if err != nil {
		return err
	}
	if err := o.checkAWS(ctx); err != nil {
		return err
	}

	// Interrupts count from here: an import stopped by Ctrl-C rolls back
	// and exits 3 like any interrupted run.
	runCtx, stop := signalContext(ctx, ios, o.log, runInterrupt)
	defer stop()

	lock, err := store.Acquire(db, "run")
	if err != nil {
		return err
	}
	defer lock.Release()
	if err := o.openMetrics(); err != nil {
		return err
	}
	defer o.metricsOut.close()
	st, err := store.Open(db)
	if err != nil {
		return err
	}
	defer st.Close()
	defer o.metricsOut.leave(context.WithoutCancel(runCtx), st)

	settings, err := o.settings(runCtx, ios, st, readOnly, token)
	if err != nil {
		return err
	}
	if o.isSMS() {
		return o.runSMS(ctx, runCtx, ios, st, settings, readOnly)
	}
	if readOnly {
		if err := o.runPreflight(runCtx, ios, st, &settings, token, false); err != nil {
			return err
		}
		return o.printPlan(runCtx, ios, st, settings)
	}
	if err := o.prepare(runCtx, st, settings); err != nil {
		return err
	}
	if o.dryRun || needsPreflight(runCtx, st, settings) {
		if err := o.runPreflight(runCtx, ios, st, &settings, token, true); err != nil {
			return err
		}
	}
	if o.dryRun {
		return o.printPlan(runCtx, ios, st, settings)
	}
	return o.send(ctx, runCtx, ios, st, settings, token)
}

// prepare readies the checkpoint for sending: rows a crashed run left
// sending are in doubt, the in-doubt policy applies, then the suppression
// list.
func (o *runOptions) prepare(ctx context.Context, st *store.Store, settings store.Settings) error {
	now := time.Now()
	if n, err := st.RecoverSending(ctx, now); err != nil {
		return err
	} else if n > 0 {
		o.log.Warn("the last run ended while sending: those rows are in doubt", "rows", n)
	}
	policy, _ := campaign.ParsePolicy(o.inDoubt)
	if r, err := st.ApplyPolicy(ctx, policy, now.Add(-o.inDoubtGrace), now, settings.MaxAttempts); err != nil {
		return err
	} else if r.Total() > 0 {
		o.log.Warn("applied the in-doubt policy", "policy", policy, "rows", r.Total(), "resent", r.Resent, "failed", r.Failed, "failed_last_attempt", r.LastAttempt)
	}
	// After the policy, so that rows it made pending again are excluded too.
	if o.exclude != "" {
		n, err := excludeFile(ctx, st, o.exclude, settings.DefaultRegion, o.log)
		if err != nil {
			return err
		}
		if n > 0 {
			o.log.Info("suppression list applied", "rows_skipped", n)
		}
	}
	return nil
}

// send runs the engine over the checkpoint's due rows and reports. runCtx
// is cancelled by an interrupt; ctx is not, for what must be read after.
func (o *runOptions) send(ctx, runCtx context.Context, ios *IO, st *store.Store, settings store.Settings, token string) (err error) {
	counts, err := st.Counts(runCtx)
	if err != nil {
		return err
	}
	apiURL := o.apiBase(ios)
	timeout := o.requestTimeout
	if o.sandbox {
		sb, serr := startSandbox(o, settings, webhookLogPath(st.Path()))
		if serr != nil {
			return serr
		}
		defer func() { err = joinSandboxStop(err, sb.stop()) }()
		apiURL, token = sb.url, sb.token
		if !o.changed("request-timeout") {
			timeout = sandboxRequestTimeout
		}
	}

	senders, err := st.Senders(ctx)
	if err != nil {
		return err
	}
	mapping, err := mappingOf(settings)
	if err != nil {
		return err
	}
	if mapping == nil {
		mapping = template.Positional(settings.Params) // once, not per send
	}
	conc := settings.Concurrency
	client := &whatsapp.Client{
		BaseURL: apiURL, Version: o.apiVersion, Token: token, Timeout: timeout,
		HTTP:    whatsapp.NewHTTPClient(max(conc, int(settings.Rate*float64(len(senders))))),
		Mapping: mapping, TemplateName: settings.Template, TemplateLang: settings.Lang,
	}
	if settings.API == "marketing" {
		client.API, client.ProductPolicy = "marketing", "CLOUD_API_FALLBACK"
		if settings.MMPolicy == "strict" {
			client.ProductPolicy = "STRICT"
		}
	}
	return o.drive(ctx, runCtx, ios, st, counts, engine.Config{
		Checkpoint: st, Sender: client, Senders: senders, CampaignID: settings.CampaignID,
		Rate:        settings.Rate,
		Concurrency: conc, MaxAttempts: settings.MaxAttempts, Log: o.log,
	}, apiURL)
}

// seedLearned starts each sender number at the limit the last run that
// learned one found, when it is below the rate: a resume is not throttled
// again to find it, and probes up from there.
func (o *runOptions) seedLearned(ctx context.Context, st *store.Store, cfg *engine.Config) error {
	runs, err := st.Runs(ctx)
	if err != nil {
		return err
	}
	for _, r := range slices.Backward(runs) {
		if r.Learned == nil {
			continue
		}
		for _, s := range cfg.Senders {
			if l, ok := r.Learned[s]; ok && cfg.Rate > 0 && l < cfg.Rate {
				if cfg.Learned == nil {
					cfg.Learned = map[string]float64{}
				}
				cfg.Learned[s] = l
				o.log.Info(fmt.Sprintf("number %s starts at %.0f/s, what run %d found it accepts; it is probed up to --rate %g", s, l, r.ID, cfg.Rate),
					"sender", s, "learned_per_second", math.Round(l), "run", r.ID)
			}
		}
		break
	}
	return nil
}

// drive runs the engine over the checkpoint's due rows and reports: the
// progress, the summary and why the campaign is unfinished. api names
// where the requests go, for the log.
func (o *runOptions) drive(ctx, runCtx context.Context, ios *IO, st *store.Store, counts campaign.Counts, cfg engine.Config, api string) error {
	o.metricsOut.attach(ctx, st, &cfg, campaign.Channel(o.channel))
	defer o.metricsOut.finish()
	if err := o.seedLearned(ctx, st, &cfg); err != nil {
		return err
	}
	eng := engine.New(cfg)
	// Sends record message ids faster without their index; it is built
	// again when the engine stops, or by reconcile if this process is
	// killed first.
	if err := st.DropWAMIDIndex(runCtx); err != nil {
		return err
	}
	// The campaign's history: this run, and every request it makes.
	started := time.Now()
	run, err := st.BeginRun(runCtx, store.Run{StartedAt: started, PID: os.Getpid(), Version: currentVersion().Version,
		Rate: cfg.Rate, Senders: cfg.Senders})
	if err != nil {
		return err
	}
	o.metricsOut.start(eng, started)
	o.log.Info("sending", "rows", counts.Pending, "senders", len(cfg.Senders), "rate_per_sender", cfg.Rate, "api", maskURL(api))
	prog := startProgress(ios, eng, counts, o.progressEvery)
	runErr := eng.Run(runCtx)
	prog.stop()
	if stats := eng.Stats(); stats.Requests == 0 {
		// Nothing left: a run of a finished campaign (from cron, say) is
		// not part of its history.
		if err := st.ForgetRun(ctx, run); err != nil {
			return errors.Join(runErr, err)
		}
	} else if err := st.EndRun(ctx, run, time.Now(), stats.Learned); err != nil {
		return errors.Join(runErr, err)
	}
	if err := st.IndexWAMIDs(ctx); err != nil {
		return errors.Join(runErr, err)
	}

	if until := eng.RestUntil(); until.After(time.Now()) {
		// Rows the run never claimed are due now: keep the rest for them.
		if _, err := st.Defer(ctx, until); err != nil {
			return err
		}
	}
	final, err := st.Counts(ctx)
	if err != nil {
		return err
	}
	printSummary(ios, final, eng.Stats())
	if o.json {
		if err := json.NewEncoder(ios.Out).Encode(final); err != nil {
			return err
		}
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	return unfinished(ctx, st, final, runErr != nil, o.csv, eng.Rested(), eng.RestUntil())
}

func (o *runOptions) validate() error {
	if o.rate < 0 || o.rate > 1000 {
		return usagef("Meta allows 80 messages/s per number by default and at most 1000; AWS SMS short codes allow 100 parts/s", "invalid --rate %v: want 0 to 1000 (0: no limit)", o.rate)
	}
	if o.concurrency < 0 {
		return usagef("", "invalid --concurrency %d", o.concurrency)
	}
	if o.maxAttempts < 1 {
		return usagef("", "invalid --max-attempts %d: want 1 or more", o.maxAttempts)
	}
	if o.requestTimeout <= 0 {
		return usagef("", "invalid --request-timeout %v", o.requestTimeout)
	}
	if _, err := campaign.ParseChannel(o.channel); err != nil {
		return usagef("", "invalid --channel: %w", err)
	}
	if _, err := campaign.ParsePolicy(o.inDoubt); err != nil {
		return usagef("", "invalid --in-doubt: %w", err)
	}
	if _, ok := parseDelimiter(o.delimiter); !ok {
		return usagef(`e.g. --delimiter ";" for a European-locale Excel export, --delimiter tab for "Unicode Text"`, "invalid --delimiter %q: want \",\", \";\", \"tab\" or \"|\"", o.delimiter)
	}
	switch o.api {
	case "messages", "marketing":
	default:
		return usagef("", "invalid --api %q: want messages or marketing", o.api)
	}
	switch o.mmPolicy {
	case "fallback", "strict":
	default:
		return usagef("", "invalid --mm-policy %q: want fallback or strict", o.mmPolicy)
	}
	if o.rateCard != "" && !o.dryRun {
		return usagef("for what was billed so far: bulksend status CAMPAIGN.csv --rate-card FILE", "--rate-card prices the plan of a --dry-run")
	}
	if o.callingCodes != "" && o.rateCard == "" {
		return usagef("", "--calling-codes goes with --rate-card")
	}
	if o.changed("mm-policy") && o.api != "marketing" {
		return usagef("", "--mm-policy goes with --api marketing")
	}
	switch o.paramFormat {
	case "", "positional", "named":
	default:
		return usagef("", "invalid --param-format %q: want positional or named", o.paramFormat)
	}
	if o.waba != "" && strings.Trim(o.waba, "0123456789") != "" {
		what := "--waba"
		if !o.changed("waba") {
			what = "$WHATSAPP_WABA_ID"
		}
		return usagef("it is the WhatsApp Business Account ID shown in WhatsApp Manager (digits)", "invalid %s %q", what, o.waba)
	}
	if strings.TrimSpace(o.phoneColumn) == "" {
		return usagef("", "--phone-column is empty")
	}
	return nil
}

// token reads the access token. It is never taken from a flag value, so
// it never shows in ps or shell history.
func (o *runOptions) token(ios *IO) (string, error) {
	if o.sandbox || o.isSMS() {
		return "", nil
	}
	t, err := o.readToken(ios)
	if err != nil && o.dryRun {
		// A dry run sends nothing: without a token it only skips the reads
		// of the template and the numbers, and says so then.
		if o.tokenFile != "" {
			o.log.Warn("the dry run has no access token", "err", err)
		}
		return "", nil
	}
	return t, err
}

func (o *runOptions) readToken(ios *IO) (string, error) {
	if o.tokenFile != "" {
		return readTokenFile(o.tokenFile)
	}
	if t := strings.TrimSpace(ios.Getenv("WHATSAPP_TOKEN")); t != "" {
		if err := checkToken(t); err != nil {
			return "", usagef("set WHATSAPP_TOKEN to the access token alone", "the token in WHATSAPP_TOKEN %w", err)
		}
		return t, nil
	}
	return "", usagef("export WHATSAPP_TOKEN=… or pass --token-file FILE (or try --sandbox)", "no access token")
}

// settings returns the campaign's settings: imported now on the first run,
// checked against the flags on later ones.
func (o *runOptions) settings(ctx context.Context, ios *IO, st *store.Store, readOnly bool, token string) (store.Settings, error) {
	s, err := st.Settings(ctx)
	if errors.Is(err, store.ErrNoSettings) {
		return o.importCSV(ctx, ios, st, token)
	}
	if err != nil {
		return s, err
	}
	sum, size, err := hashFile(o.csv)
	if err != nil {
		return s, err
	}
	if sum != s.CSVHash || size != s.CSVSize {
		return s, &usageError{err: fmt.Errorf("%w (%s)", errCSVChanged, st.Path()),
			hint: "a checkpoint belongs to one list: restore the original CSV, or start a new campaign with another --db"}
	}
	fileText := ""
	if o.changed("text-file") {
		if fileText, err = o.smsBody(); err != nil {
			return s, err
		}
	}
	fixed := []struct {
		flag, was, now string
	}{
		{"text", s.Text, o.text},
		{"text-file", s.Text, fileText},
		{"message-type", s.MessageType, strings.ToUpper(o.messageType)},
		{"configuration-set", s.ConfigurationSet, o.configSet},
		{"max-price", s.MaxPrice, o.maxPrice},
		{"ttl", strconv.Itoa(s.TTL), strconv.Itoa(int(o.ttl.Seconds()))},
		{"template", s.Template, o.template},
		{"lang", s.Lang, o.lang},
		{"from", strings.Join(s.Senders, ","), strings.Join(o.from, ",")},
		{"default-region", s.DefaultRegion, o.region},
		{"phone-column", cmp.Or(s.PhoneColumn, "phone"), o.phoneColumn},
		{"delimiter", cmp.Or(s.Delimiter, ","), delimiterName(o.delimiterRune())},
		{"param", strings.Join(s.ParamFlags, " --param "), strings.Join(paramFlags(o.params), " --param ")},
		{"ignore-column", strings.Join(s.IgnoreColumns, " --ignore-column "), strings.Join(o.ignoreColumns, " --ignore-column ")},
		{"waba", s.WABA, o.waba},
		{"api", cmp.Or(s.API, "messages"), o.api},
		{"mm-policy", cmp.Or(s.MMPolicy, "fallback"), o.mmPolicy},
		{"param-format", s.ParamFormat, o.paramFormat},
	}
	for _, f := range fixed {
		if o.changed(f.flag) && f.now != f.was {
			return s, usagef("drop --"+f.flag+" to resume with the stored value, or start a new campaign with another --db",
				"--%s %q differs from this campaign's %q: it cannot change once sending started", f.flag, f.now, f.was)
		}
	}
	if err := o.recheck(ctx, ios, s, token); err != nil {
		return s, err
	}
	changed := false
	if o.changed("rate") && o.rate != s.Rate {
		s.Rate, changed = o.rate, true
	}
	if o.changed("concurrency") && o.concurrency != s.Concurrency {
		s.Concurrency, changed = o.concurrency, true
	}
	if o.changed("max-attempts") && o.maxAttempts != s.MaxAttempts {
		s.MaxAttempts, changed = o.maxAttempts, true
	}
	if o.changed("throttle-tries") && o.throttleTries != s.ThrottleTries {
		s.ThrottleTries, changed = o.throttleTries, true
	}
	if changed && !readOnly {
		n, err := st.SaveSettings(ctx, s)
		if err != nil {
			return s, err
		}
		if n > 0 {
			o.log.Warn("rows waiting for a retry had no attempts left under the new --max-attempts: failed", "rows", n)
		}
	}
	return s, nil
}

// recheck reads the template's definition again on a resume (it may have
// been paused or edited since) and checks the stored mapping against it.
func (o *runOptions) recheck(ctx context.Context, ios *IO, s store.Settings, token string) error {
	m, err := mappingOf(s)
	if err != nil || m == nil {
		return err // nil: a checkpoint from before mappings, body parameters only
	}
	src, err := o.definition(ctx, ios, s.Template, s.Lang, s.WABA, token)
	if err != nil || src.def == nil {
		return err
	}
	if err := m.Check(*src.def); err != nil {
		return mappingError(err, s.Template, s.Lang, src)
	}
	return nil
}

func (o *runOptions) importCSV(ctx context.Context, ios *IO, st *store.Store, token string) (store.Settings, error) {
	if o.template == "" && !o.isSMS() {
		return store.Settings{}, usagef("name the approved template, e.g. --template spring_sale", "--template is required on the first run")
	}
	var text string
	if o.isSMS() {
		var err error
		if text, err = o.smsBody(); err != nil {
			return store.Settings{}, err
		}
	}
	f, err := os.Open(o.csv)
	if err != nil {
		return store.Settings{}, usagef("", "campaign file: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	counter := &countingWriter{w: h}
	rd, err := csvin.NewReader(bufio.NewReaderSize(io.TeeReader(f, counter), 1<<16), csvin.Options{
		DefaultRegion: o.region, PhoneColumn: o.phoneColumn, Delimiter: o.delimiterRune(),
	})
	var noPhone *csvin.NoPhoneColumnError
	if errors.As(err, &noPhone) && noPhone.Likely != "" {
		return store.Settings{}, usagef(fmt.Sprintf("pass --phone-column %q", noPhone.Likely), "%s: %w", o.csv, err)
	}
	if err != nil {
		return store.Settings{}, fmt.Errorf("%s: %w", o.csv, err)
	}
	if !rd.HasFrom() && len(o.from) == 0 {
		if o.isSMS() {
			return store.Settings{}, usagef("pass --from with your origination identities (phone numbers, their IDs or ARNs, sender IDs or pools), or add a from column to the CSV", "no sender: --from is required when the CSV has no from column")
		}
		return store.Settings{}, usagef("pass --from with your sender phone-number ID(s), or add a from column to the CSV", "no sender: --from is required when the CSV has no from column")
	}
	var s store.Settings
	if o.isSMS() {
		s, err = o.smsSettings(text, rd.Params())
	} else {
		s, err = o.templateSettings(ctx, ios, rd.Params(), token)
	}
	if err != nil {
		return store.Settings{}, err
	}
	id, err := newCampaignID()
	if err != nil {
		return store.Settings{}, err
	}
	s.CampaignID, s.Senders, s.Rate = id, o.from, o.rate
	s.Concurrency, s.MaxAttempts, s.DefaultRegion = o.concurrency, o.maxAttempts, o.region
	s.Params, s.PhoneColumn, s.Delimiter = rd.Params(), o.phoneColumn, delimiterName(rd.Delimiter())
	s.Encoding, s.CreatedAt = rd.Encoding(), time.Now().UTC()
	var row int64
	next := func() (store.Row, error) {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return store.Row{}, err
		}
		if err != nil {
			return store.Row{}, fmt.Errorf("%s: %w", o.csv, err)
		}
		row++
		return o.checkpointRow(row, rec), nil
	}
	start := time.Now()
	n, err := st.Import(ctx, next, func() store.Settings {
		s.CSVHash, s.CSVSize = hex.EncodeToString(h.Sum(nil)), counter.n
		s.ApostrophesRemoved = rd.Notes().ApostrophesRemoved
		return s
	})
	if err != nil {
		return s, err
	}
	o.log.Info("imported", "rows", n, "took", time.Since(start).Round(time.Millisecond), "checkpoint", st.Path(),
		"delimiter", s.Delimiter, "encoding", s.Encoding)
	if s.ApostrophesRemoved > 0 {
		o.log.Info("removed a leading apostrophe (a spreadsheet's text marker) from phones", "rows", s.ApostrophesRemoved)
	}
	return s, nil
}

// templateSettings maps the CSV's columns onto the template (checked
// against its approved definition when it can be read) and returns the
// settings that say so.
func (o *runOptions) templateSettings(ctx context.Context, ios *IO, columns []string, token string) (store.Settings, error) {
	consts, err := o.consts()
	if err != nil {
		return store.Settings{}, err
	}
	for _, c := range o.ignoreColumns {
		if k := strings.ToLower(strings.TrimSpace(c)); k == strings.ToLower(strings.TrimSpace(o.phoneColumn)) || k == "from" || k == "id" {
			return store.Settings{}, usagef("", "--ignore-column %q: the phone, from and id columns are never template parameters", c)
		}
	}
	src, err := o.definition(ctx, ios, o.template, o.lang, o.waba, token)
	if err != nil {
		return store.Settings{}, err
	}
	m, err := template.New(template.Input{Columns: columns, Consts: consts, Ignore: o.ignoreColumns, Named: o.paramFormat == "named"}, src.def)
	if err != nil {
		return store.Settings{}, mappingError(err, o.template, o.lang, src)
	}
	o.mapping = m
	mapping, err := json.Marshal(m)
	if err != nil {
		return store.Settings{}, err
	}
	category := ""
	if src.def != nil {
		category = strings.ToLower(src.def.Category)
		if o.api == "marketing" && category != "marketing" {
			return store.Settings{}, usagef("drop --api marketing to send it through Cloud API; nothing was sent",
				"--api marketing: template %s/%s is a %s template, and the Marketing Messages API takes marketing templates only", o.template, o.lang, category)
		}
		o.log.Info("the CSV fits the approved template", "template", o.template, "lang", o.lang, "category", category, "from", src.from)
	} else if o.sandbox {
		o.log.Info("the sandbox has no definition of this template: it takes the CSV's body parameters as they are", "template", o.template, "sandbox_templates", strings.Join(sandboxKnows(), ","))
	} else {
		o.log.Warn("the template could not be checked against its approved definition (no --waba): only the columns' own consistency was", "template", o.template)
	}
	return store.Settings{
		Template: o.template, Lang: o.lang,
		Mapping: mapping, ParamFlags: paramFlags(o.params), IgnoreColumns: o.ignoreColumns, WABA: o.waba,
		ParamFormat: o.paramFormat, Category: category, TemplateChecked: src.from,
		API: o.api, MMPolicy: o.mmPolicy,
	}, nil
}

// delimiterRune is --delimiter as csvin takes it: 0 to detect. validate
// has refused a value parseDelimiter does not know.
func (o *runOptions) delimiterRune() rune {
	r, _ := parseDelimiter(o.delimiter)
	return r
}

// parseDelimiter reads a --delimiter value: "" (0, detect), ",", ";", "|",
// "tab" or `\t`.
func parseDelimiter(s string) (rune, bool) {
	switch s {
	case "":
		return 0, true
	case ",", ";", "|":
		return rune(s[0]), true
	case "tab", `\t`:
		return '\t', true
	}
	return 0, false
}

// delimiterName is how the plan and the settings name a delimiter.
func delimiterName(r rune) string {
	switch r {
	case 0:
		return ""
	case '\t':
		return "tab"
	}
	return string(r)
}

// checkpointRow is CSV record rec as the row-th recipient.
func (o *runOptions) checkpointRow(row int64, rec csvin.Record) store.Row {
	r := store.Row{Row: row, Line: rec.Line, ExtID: rec.ID, Phone: rec.Phone, Params: rec.Params, Sender: rec.From}
	if rec.Invalid != "" {
		r.Phone, r.Skip, r.SkipKind = rec.RawPhone, rec.Invalid, campaign.SkipInvalid
	}
	if r.Sender != "" && r.Skip == "" {
		if err := o.checkSender(r.Sender); err != nil {
			r.Skip, r.SkipKind = "no sender: the from column holds "+err.Error(), campaign.SkipNoSender
		}
	}
	if r.Sender == "" {
		r.Sender = assign(r.Phone, o.from)
	}
	if r.Sender == "" && r.Skip == "" {
		r.Skip, r.SkipKind = "no sender: the from column is empty and no --from was given", campaign.SkipNoSender
	}
	if r.Skip == "" && o.mapping != nil {
		if why := o.mapping.Validate(rec.Params); why != "" {
			r.Skip, r.SkipKind = why, campaign.SkipParameter
		}
	}
	if o.sms != nil {
		o.sms.measure(&r, rec.Params)
	}
	return r
}

// checkSender checks a sender of the campaign's channel: a phone-number
// ID for WhatsApp, an origination identity for SMS.
func (o *runOptions) checkSender(id string) error {
	if o.isSMS() {
		return sms.CheckIdentity(id)
	}
	return whatsapp.CheckSender(id)
}

// assign picks a sender for phone: a stable hash, so a recipient keeps
// its sender across runs and machines.
func assign(phone string, senders []string) string {
	if len(senders) == 0 {
		return ""
	}
	h := fnv.New32a()
	h.Write([]byte(phone))
	return senders[h.Sum32()%uint32(len(senders))]
}

type countingWriter struct {
	w hash.Hash
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.w.Write(p)
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, usagef("", "campaign file: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func newCampaignID() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func excludeFile(ctx context.Context, st *store.Store, path, region string, log *slog.Logger) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, usagef("", "--exclude: %w", err)
	}
	defer f.Close()
	lr := csvin.NewListReader(bufio.NewReader(f), region)
	bad := 0
	n, err := st.Exclude(ctx, func() (string, error) {
		for {
			phone, line, err := lr.Next()
			if err == nil || errors.Is(err, io.EOF) {
				return phone, err
			}
			var lerr *csvin.LineError
			if !errors.As(err, &lerr) {
				return "", fmt.Errorf("--exclude %s: %w", path, err)
			}
			if bad++; bad <= 5 {
				log.Warn("suppression list: unusable phone ignored", "file", path, "line", line, "err", err)
			}
		}
	})
	return n, err
}

func webhookLogPath(db string) string {
	return strings.TrimSuffix(db, ".bulksend.db") + ".webhooks.jsonl"
}

// unfinished returns nil when the campaign is finished, else the reason
// to run again (exit 3).
func unfinished(ctx context.Context, st *store.Store, c campaign.Counts, interrupted bool, csvPath string, rests []engine.Rest, restUntil time.Time) error {
	if !c.Unfinished() && !interrupted {
		return nil
	}
	var why []string
	hint := "run the same command again to resume"
	if interrupted {
		why = append(why, "interrupted")
	}
	if c.Pending > 0 {
		p := fmt.Sprintf("%d rows pending", c.Pending)
		if t, ok, err := st.NextDue(ctx, ""); err == nil && ok && t.After(time.Now()) {
			p += " (next retry due " + t.Format(time.RFC3339) + ")"
			hint = "run the same command again after " + t.Format(time.RFC3339)
		}
		why = append(why, p)
	}
	if c.InDoubt > 0 {
		why = append(why, fmt.Sprintf("%d rows in doubt", c.InDoubt))
		hint = fmt.Sprintf("settle rows in doubt from your webhook logs: bulksend reconcile %s LOGFILE…; or run again with --in-doubt resend (may duplicate) or --in-doubt fail", csvPath)
	}
	if c.Sending > 0 {
		why = append(why, fmt.Sprintf("%d rows sending", c.Sending))
	}
	if len(rests) > 0 {
		var names []string
		for _, r := range rests {
			why = append(why, fmt.Sprintf("number %s is restricted, (#%d) %s: its rows wait", r.Sender, r.Code, r.Title))
			names = append(names, r.Sender)
		}
		hint = fmt.Sprintf("check number %s in WhatsApp Manager (Account Quality): a spam-rate restriction lifts by itself; the next run tries the number again", strings.Join(names, ", "))
	}
	if restUntil.After(time.Now()) {
		why = append(why, "the API asked to send nothing more until "+restUntil.Format(time.RFC3339))
		hint = "run the same command again after " + restUntil.Format(time.RFC3339)
	}
	return &unfinishedError{reason: "unfinished: " + strings.Join(why, ", "), hint: hint}
}
