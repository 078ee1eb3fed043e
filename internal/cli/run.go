package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/metrics"
	"github.com/bulksend/bulksend/internal/run"
	"github.com/bulksend/bulksend/internal/version"
	"github.com/bulksend/bulksend/internal/whatsapp"
	"github.com/bulksend/bulksend/internal/whatsapp/pricing"
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
	sched         scheduleOptions
	budget        budgetOptions

	changed func(flag string) bool
	log     *slog.Logger
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
	o.sched.flags(f)
	o.budget.flags(f)
	f.IntVar(&o.throttleTries, "throttle-tries", 5, "SMS: tries of a throttled row before it fails as throttle_exhausted (waits 2, 8, 32, 128 s… between)")
	return cmd
}

func runRun(ctx context.Context, ios *IO, o *runOptions) error {
	waba := o.waba
	if waba == "" {
		waba = strings.TrimSpace(ios.Getenv("WHATSAPP_WABA_ID"))
	}
	if err := o.validate(waba); err != nil {
		return err
	}
	if err := o.checkMetricsFlags(); err != nil {
		return err
	}
	sched, err := o.sched.schedule()
	if err != nil {
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
	stored, err := run.Stored(db)
	if err != nil {
		return err
	}
	name, _ := campaign.ParseChannel(o.channel)
	if stored != nil {
		was, _ := campaign.ParseChannel(stored.Channel)
		if o.changed("channel") && name != was {
			return usagef("drop --channel to resume with the stored value, or start a new campaign with another --db",
				"--channel %q differs from this campaign's %q: it cannot change once sending started", o.channel, was)
		}
		name = was
	}
	ch := channels[name]
	if err := ch.check(o); err != nil {
		return err
	}
	var card *pricing.Card
	if o.rateCard != "" {
		// Read first: a bad card is told before the import and the reads.
		if card, err = loadRateCard(o.rateCard, o.callingCodes); err != nil {
			return err
		}
	}
	in := channelInput{o: o, ios: ios, waba: waba, first: stored == nil}
	if ch.token {
		if in.token, err = o.token(ios); err != nil {
			return err
		}
	}
	c, err := ch.build(in)
	if err != nil {
		return err
	}

	// Interrupts count from here: an import stopped by Ctrl-C rolls back
	// and exits 3 like any interrupted run.
	runCtx, stop := signalContext(ctx, ios, o.log, runInterrupt)
	defer stop()
	var metricsOut *metrics.Output
	defer func() { metricsOut.Close() }()
	ro := o.runOptions(db, ch)
	ro.Schedule, ro.Now, ro.LedgerScope = sched, now, o.ledgerScope(ios, ch)
	if ro.Ledger, err = o.sched.openLedger(runCtx, o, sched); err != nil {
		return err
	}
	if ro.Ledger != nil {
		defer ro.Ledger.Close()
	}
	bk, err := o.budget.open(runCtx, ios, o, ro.LedgerScope, o.log)
	if err != nil {
		return err
	}
	if bk != nil {
		defer bk.Close()
		ro.Book = bk
	}
	ro.Locked = func() (err error) {
		metricsOut, err = o.openMetrics()
		return err
	}
	camp, err := run.Open(runCtx, ro, c)
	if err != nil {
		return ch.words(o, err)
	}
	defer camp.Close()
	defer metricsOut.Leave(context.WithoutCancel(runCtx), camp.Store)

	var prog *progress
	res, runErr := camp.Run(ctx, runCtx, run.Hooks{
		Configure: func(cfg *engine.Config) { metricsOut.ObserveRun(ctx, camp.Store, cfg, name) },
		Started: func(eng *engine.Engine, at time.Time, counts campaign.Counts) func() {
			metricsOut.Start(eng, at)
			prog = startProgress(ios, eng, counts, o.progressEvery, ch.parts)
			return prog.stop
		},
	})
	if res.Plan != nil {
		if err := ch.plan(runCtx, ios, res.Plan, card); err != nil {
			return err
		}
	}
	out := res.Outcome
	if out == nil {
		return ch.words(o, runErr)
	}
	metricsOut.Finish()
	printSummary(ios, out.Counts, out.Stats, ch.parts)
	if o.json {
		if err := json.NewEncoder(ios.Out).Encode(out.Counts); err != nil {
			return err
		}
	}
	if runErr != nil {
		return ch.words(o, runErr)
	}
	command := o.csv
	if o.sandbox {
		command += " --sandbox" // a rehearsal resumes against the sandbox, not the provider
	}
	return unfinished(out, o.csv, command)
}

// runOptions are the run's inputs as the run package takes them.
func (o *runOptions) runOptions(db string, ch *channelEntry) run.Options {
	policy, _ := campaign.ParsePolicy(o.inDoubt)
	rate := o.rate
	if ch.defaultRate > 0 && !o.changed("rate") {
		rate = ch.defaultRate
	}
	return run.Options{
		CSV: o.csv, DB: db, From: o.from,
		Rate: rate, Concurrency: o.concurrency, MaxAttempts: o.maxAttempts, ThrottleTries: o.throttleTries,
		Given:   o.changed,
		InDoubt: policy, InDoubtGrace: o.inDoubtGrace, Exclude: o.exclude,
		Region: o.region, PhoneColumn: o.phoneColumn, Delimiter: o.delimiterRune(),
		DryRun: o.dryRun, Version: version.Current().Version, Log: o.log,
	}
}

// words are run's and its channels' errors as the operator reads them:
// the flags that fix them named, and exit 2 for what the CSV or the flags
// got wrong.
func (ch *channelEntry) words(o *runOptions, err error) error {
	var (
		changed *run.ChangedError
		csvErr  *run.CSVError
		noPhone *csvin.NoPhoneColumnError
		exclude *run.ExcludeError
	)
	if w := scheduleWords(err); w != nil {
		return w
	}
	switch {
	case err == nil:
		return nil
	case errors.As(err, &changed):
		each := " --" + changed.Setting + " " // a list, as it was given
		return usagef("drop --"+changed.Setting+" to resume with the stored value, or start a new campaign with another --db",
			"--%s %q differs from this campaign's %q: it cannot change once sending started", changed.Setting,
			strings.ReplaceAll(changed.Now, run.ListSep, each), strings.ReplaceAll(changed.Was, run.ListSep, each))
	case errors.Is(err, run.ErrCSVChanged):
		return &usageError{Err: err, Hint: "a checkpoint belongs to one list: restore the original CSV, or start a new campaign with another --db"}
	case errors.Is(err, run.ErrNoSender):
		return usagef(ch.noSender, "no sender: --from is required when the CSV has no from column")
	case errors.As(err, &noPhone) && noPhone.Likely != "":
		return usagef(fmt.Sprintf("pass --phone-column %q", noPhone.Likely), "%w", err)
	case errors.As(err, &csvErr) && errors.Is(csvErr.Err, fs.ErrNotExist), errors.As(err, &csvErr) && errors.Is(csvErr.Err, fs.ErrPermission):
		return usagef("", "campaign file: %w", csvErr.Err)
	case errors.As(err, &exclude):
		var pe *fs.PathError
		if errors.As(exclude.Err, &pe) && pe.Path == exclude.Path {
			return usagef("", "--exclude: %w", exclude.Err)
		}
		return fmt.Errorf("--exclude %w", exclude)
	}
	return ch.channelWords(err)
}

// validate checks the flags that do not depend on the channel; waba is
// --waba or $WHATSAPP_WABA_ID.
func (o *runOptions) validate(waba string) error {
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
	if _, ok := run.ParseDelimiter(o.delimiter); !ok {
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
	if waba != "" && strings.Trim(waba, "0123456789") != "" {
		what := "--waba"
		if !o.changed("waba") {
			what = "$WHATSAPP_WABA_ID"
		}
		return usagef("it is the WhatsApp Business Account ID shown in WhatsApp Manager (digits)", "invalid %s %q", what, waba)
	}
	if strings.TrimSpace(o.phoneColumn) == "" {
		return usagef("", "--phone-column is empty")
	}
	return nil
}

// token reads the access token. It is never taken from a flag value, so
// it never shows in ps or shell history.
func (o *runOptions) token(ios *IO) (string, error) {
	if o.sandbox {
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
		if err := whatsapp.CheckToken(t); err != nil {
			return "", usagef("set WHATSAPP_TOKEN to the access token alone", "the token in WHATSAPP_TOKEN %w", err)
		}
		return t, nil
	}
	return "", usagef("export WHATSAPP_TOKEN=… or pass --token-file FILE (or try --sandbox)", "no access token")
}

// delimiterRune is --delimiter as csvin takes it: 0 to detect. validate
// has refused a value run.ParseDelimiter does not know.
func (o *runOptions) delimiterRune() rune {
	r, _ := run.ParseDelimiter(o.delimiter)
	return r
}

// unfinished returns nil when the campaign is finished, else the reason
// to run again (exit 3); command is what a crontab line runs again.
func unfinished(out *run.Outcome, csvPath, command string) error {
	if !out.Unfinished() {
		return nil
	}
	c := out.Counts
	var why []string
	hint := "run the same command again to resume"
	if out.Interrupted {
		why = append(why, "interrupted")
	}
	if c.Pending > 0 {
		p := fmt.Sprintf("%d rows pending", c.Pending)
		switch {
		case out.Ended:
			p = fmt.Sprintf("%d rows pending at the campaign's end, %s", c.Pending, out.EndAt.Format(time.RFC3339))
			hint = "move --end-at later to send them, or give --expire to end them skipped"
		case !out.NextDue.IsZero() && out.Waiting.Total() > out.Waiting.Retry:
			p += " (waiting: " + waitingWords(out) + "); next send at " + out.NextDue.Format(time.RFC3339)
			hint = "run the same command again after " + out.NextDue.Format(time.RFC3339) + "; from cron, every 10 minutes: */10 * * * * bulksend run " + command
		case !out.NextDue.IsZero():
			p += " (next retry due " + out.NextDue.Format(time.RFC3339) + ")"
			hint = "run the same command again after " + out.NextDue.Format(time.RFC3339)
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
	if len(out.Rests) > 0 {
		var names []string
		for _, r := range out.Rests {
			why = append(why, fmt.Sprintf("number %s is restricted, (#%d) %s: its rows wait", r.Sender, r.Code, r.Title))
			names = append(names, r.Sender)
		}
		hint = fmt.Sprintf("check number %s in WhatsApp Manager (Account Quality): a spam-rate restriction lifts by itself; the next run tries the number again", strings.Join(names, ", "))
	}
	if out.RestUntil.After(time.Now()) {
		why = append(why, "the API asked to send nothing more until "+out.RestUntil.Format(time.RFC3339))
		hint = "run the same command again after " + out.RestUntil.Format(time.RFC3339)
	}
	return &unfinishedError{reason: "unfinished: " + strings.Join(why, ", "), hint: hint}
}
