package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/logfile"
	"github.com/bulksend/bulksend/internal/pace"
	"github.com/bulksend/bulksend/internal/sms"
	"github.com/bulksend/bulksend/internal/sms/segment"
	"github.com/bulksend/bulksend/internal/sms/smssandbox"
	"github.com/bulksend/bulksend/internal/sms/smstext"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/termtext"
)

// This file is run's SMS channel (--channel sms): its flags, the body's
// text and parts at import, the opt-out lists, and the send through AWS
// End User Messaging SMS or the sandbox.

func (o *runOptions) isSMS() bool { return o.channel == string(campaign.SMS) }

// Flags of one channel only: given with the other, they are refused rather
// than ignored.
var (
	whatsappOnly = []string{"template", "lang", "waba", "param", "ignore-column", "param-format", "api", "mm-policy",
		"no-preflight", "rate-card", "calling-codes", "token-file", "api-url", "api-version"}
	smsOnly = []string{"text", "text-file", "message-type", "configuration-set", "max-price", "ttl", "region",
		"endpoint-url", "sync-opt-outs", "throttle-tries"}
)

// checkChannel checks the flags that depend on the campaign's channel.
func (o *runOptions) checkChannel() error {
	if !o.isSMS() {
		for _, f := range smsOnly {
			if o.changed(f) {
				return usagef("add --channel sms for an SMS campaign", "--%s goes with --channel sms", f)
			}
		}
		for _, f := range o.from {
			if f == "" || strings.Trim(f, "0123456789") != "" {
				return usagef("--from takes the phone-number IDs shown in WhatsApp Manager (digits), not phone numbers", "invalid --from %q", f)
			}
		}
		return nil
	}
	for _, f := range whatsappOnly {
		if o.changed(f) {
			return usagef("an SMS campaign's body is --text or --text-file, with {{column}} placeholders", "--%s goes with --channel whatsapp", f)
		}
	}
	if !o.changed("rate") {
		o.rate = 1 // 10DLC's and international long codes' ceiling: the safe default
	}
	for _, f := range o.from {
		if err := sms.CheckIdentity(f); err != nil {
			return usagef("--from takes origination identities: phone numbers (+1…), their IDs or ARNs, sender IDs or pools", "invalid --from: %w", err)
		}
	}
	switch strings.ToUpper(o.messageType) {
	case "", "TRANSACTIONAL", "PROMOTIONAL":
	default:
		return usagef("", "invalid --message-type %q: want transactional or promotional", o.messageType)
	}
	if o.maxPrice != "" {
		v, err := strconv.ParseFloat(o.maxPrice, 64)
		if err != nil || v <= 0 || math.IsInf(v, 0) {
			return usagef("", "invalid --max-price %q: want US dollars per message, e.g. 0.05", o.maxPrice)
		}
		o.maxPrice = strconv.FormatFloat(v, 'f', -1, 64) // 0.050 is 0.05, on a resume too
	}
	if o.ttl != 0 && (o.ttl < 5*time.Second || o.ttl > 72*time.Hour) {
		return usagef("", "invalid --ttl %v: AWS takes 5s to 72h", o.ttl)
	}
	if o.throttleTries < 1 {
		return usagef("", "invalid --throttle-tries %d: want 1 or more", o.throttleTries)
	}
	if o.text != "" && o.textFile != "" {
		return usagef("", "--text and --text-file: give one")
	}
	return nil
}

// checkAWS checks, before anything is imported, that a run that will
// call AWS has a region and credentials: a missing chain stops the run
// with a hint and leaves no campaign behind.
func (o *runOptions) checkAWS(ctx context.Context) error {
	if !o.isSMS() || o.sandbox || (o.dryRun && !o.syncOptOuts) {
		return nil
	}
	cl, err := sms.New(ctx, sms.Options{Region: o.awsRegion, EndpointURL: o.endpointURL, Timeout: o.requestTimeout, MaxConns: 1})
	if errors.Is(err, sms.ErrNoRegion) {
		return usagef("e.g. --region us-east-1, or export AWS_REGION", "%w", err)
	}
	if err != nil {
		return err
	}
	return cl.CheckCredentials(ctx)
}

// smsBody is the first run's message body, from --text or --text-file.
func (o *runOptions) smsBody() (string, error) {
	if o.textFile != "" {
		b, err := os.ReadFile(o.textFile)
		if err != nil {
			return "", usagef("", "read --text-file: %w", err)
		}
		// Editors end a file with a line break; a message seldom means one.
		return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
	}
	if o.text == "" {
		return "", usagef("give the message body: --text 'Hi {{first_name}}, …' or --text-file FILE",
			"--text or --text-file is required on the first run of an SMS campaign")
	}
	return o.text, nil
}

// smsSettings binds the body's placeholders to the CSV's columns and
// returns the settings of an SMS campaign.
func (o *runOptions) smsSettings(body string, columns []string) (store.Settings, error) {
	t, err := smstext.New(body, columns)
	var missing *smstext.MissingError
	if errors.As(err, &missing) {
		return store.Settings{}, usagef("a placeholder names a CSV column (any case): fix the text or the CSV's header; nothing was sent", "%w", err)
	}
	if err != nil {
		return store.Settings{}, usagef("placeholders are written {{column}}", "the message body: %w", err)
	}
	if unused := t.Unused(); len(unused) > 0 {
		o.log.Info("CSV columns the message body does not use", "columns", strings.Join(unused, ","))
	}
	o.sms = &smsImport{text: t}
	return store.Settings{
		Channel: string(campaign.SMS), Text: body, MessageType: strings.ToUpper(o.messageType),
		ConfigurationSet: o.configSet, MaxPrice: o.maxPrice, TTL: int(o.ttl.Seconds()), ThrottleTries: o.throttleTries,
	}, nil
}

// smsImport renders and measures each row's body at import, and keeps
// what the plan shows of them.
type smsImport struct {
	text  *smstext.Text
	rows  int64 // measured rows, not skipped
	parts int64
	ucs2  int64
	first []ucs2Row // the first few rows that need UCS-2
}

// ucs2Row is a row whose body needs UCS-2, and the character that made it.
type ucs2Row struct {
	line int
	char rune
	at   int // in characters, from 0
}

// measure stores r's parts and encoding, or skips it when its body is
// empty or longer than AWS takes.
func (m *smsImport) measure(r *store.Row, cells []string) {
	if r.Skip != "" {
		return
	}
	if why := m.text.Control(cells); why != "" {
		r.Skip, r.SkipKind = why, campaign.SkipParameter
		return
	}
	body := m.text.Render(cells)
	if strings.TrimSpace(body) == "" {
		r.Skip, r.SkipKind = "the message body is empty", campaign.SkipParameter
		return
	}
	c := segment.Measure(body)
	if c.TooLong() {
		r.Skip, r.SkipKind = fmt.Sprintf("the message body is %s; AWS takes at most %d parts (%d GSM-7 or %d UCS-2 characters)",
			c, segment.MaxParts, segment.MaxGSM7, segment.MaxUCS2), campaign.SkipTooLong
		return
	}
	r.Parts, r.Encoding = c.Parts, string(c.Encoding)
	m.rows++
	m.parts += int64(c.Parts)
	if c.Encoding == segment.UCS2 {
		if m.ucs2++; len(m.first) < 5 {
			m.first = append(m.first, ucs2Row{line: r.Line, char: c.NonGSM, at: c.At})
		}
	}
}

// runSMS is run for an SMS campaign once its settings are known: the
// dry run's plan, or the send.
func (o *runOptions) runSMS(ctx, runCtx context.Context, ios *IO, st *store.Store, s store.Settings, readOnly bool) error {
	if !readOnly {
		if err := o.prepare(runCtx, st, s); err != nil {
			return err
		}
	}
	if o.dryRun && (!o.syncOptOuts || readOnly) {
		if o.syncOptOuts {
			o.log.Warn("--sync-opt-outs in a dry run of a campaign that exists: the next run applies it; the plan counts no opt-outs")
		}
		return o.printSMSPlan(runCtx, ios, st, s)
	}
	cl, stop, err := o.smsClient(runCtx, s, st)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	if o.syncOptOuts {
		if err := o.syncOptOutLists(runCtx, st, cl); err != nil {
			return err
		}
	}
	if o.dryRun {
		return o.printSMSPlan(runCtx, ios, st, s)
	}
	counts, err := st.Counts(runCtx)
	if err != nil {
		return err
	}
	senders, err := st.Senders(runCtx)
	if err != nil {
		return err
	}
	runErr := o.drive(ctx, runCtx, ios, st, counts, engine.Config{
		Checkpoint: st, Sender: cl, Senders: senders, CampaignID: s.CampaignID, Rate: s.Rate,
		Concurrency: s.Concurrency, MaxAttempts: s.MaxAttempts, ThrottleTries: s.ThrottleTries, Log: o.log,
	}, "AWS End User Messaging SMS")
	stopped = true
	return joinSandboxStop(runErr, stop())
}

// smsClient returns the client that sends the campaign: to AWS with the
// standard credential chain, or to an in-process sandbox (--sandbox),
// whose stop the caller must call after the last send.
func (o *runOptions) smsClient(ctx context.Context, s store.Settings, st *store.Store) (*sms.Client, func() error, error) {
	text, err := smstext.New(s.Text, s.Params)
	if err != nil {
		return nil, nil, err
	}
	opts := sms.Options{Region: o.awsRegion, EndpointURL: o.endpointURL, Timeout: o.requestTimeout,
		MaxConns: max(s.Concurrency, 8*len(s.Senders)+16)}
	stop := func() error { return nil }
	if o.sandbox {
		url, stopSandbox, err := startSMSSandbox(ctx, o, s, st)
		if err != nil {
			return nil, nil, err
		}
		stop = stopSandbox
		opts.EndpointURL, opts.Region = url, "us-east-1"
		opts.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "SANDBOX", SecretAccessKey: "sandbox", Source: "bulksend sandbox"}, nil
		})
		if !o.changed("request-timeout") {
			opts.Timeout = sandboxRequestTimeout
		}
	}
	cl, err := sms.New(ctx, opts)
	if err == nil && !o.sandbox {
		err = cl.CheckCredentials(ctx)
	}
	if err != nil {
		stop()
		return nil, nil, err
	}
	cl.Text, cl.MessageType, cl.ConfigurationSet, cl.MaxPrice = text, s.MessageType, s.ConfigurationSet, s.MaxPrice
	cl.TTL = time.Duration(s.TTL) * time.Second
	return cl, stop, nil
}

// syncOptOutLists skips the rows to send whose phone is on the opt-out
// list of their origination identity: AWS would refuse them anyway.
func (o *runOptions) syncOptOutLists(ctx context.Context, st *store.Store, cl *sms.Client) error {
	senders, err := st.Senders(ctx)
	if err != nil {
		return err
	}
	lists := map[string][]string{} // list → its phones, read once
	for _, id := range senders {
		list, err := cl.OptOutList(ctx, id)
		if err != nil {
			return fmt.Errorf("--sync-opt-outs: the opt-out list of %s: %w", id, err)
		}
		phones, ok := lists[list]
		if !ok {
			if err := cl.OptedOut(ctx, list, func(p string) error { phones = append(phones, p); return nil }); err != nil {
				return fmt.Errorf("--sync-opt-outs: opt-out list %s: %w", list, err)
			}
			lists[list] = phones
		}
		i := 0
		n, err := st.OptOut(ctx, id, func() (string, error) {
			if i == len(phones) {
				return "", io.EOF
			}
			i++
			return phones[i-1], nil
		})
		if err != nil {
			return err
		}
		o.log.Info("opt-out list applied", "identity", id, "list", list, "phones_on_list", len(phones), "rows_skipped", n)
	}
	return nil
}

// printSMSPlan is an SMS campaign's --dry-run output: rows, parts, the
// rows that need UCS-2 and why, and how long each identity takes.
func (o *runOptions) printSMSPlan(ctx context.Context, ios *IO, st *store.Store, s store.Settings) error {
	r, err := st.Breakdown(ctx)
	if err != nil {
		return err
	}
	p, err := st.Parts(ctx)
	if err != nil {
		return err
	}
	pending, err := st.PendingParts(ctx)
	if err != nil {
		return err
	}
	c := r.Counts
	w := ios.Out
	fmt.Fprintf(w, "plan: SMS from %s\n", termtext.Join(s.Senders, ", "))
	fmt.Fprintf(w, "text: %q\n", s.Text)
	if s.Encoding != "" {
		fmt.Fprintf(w, "file: %s, delimiter %q, phones in column %q\n", s.Encoding, s.Delimiter, s.PhoneColumn)
	}
	fmt.Fprintf(w, "rows: %d total, %d to send, %d skipped, %d in doubt, %d already settled\n",
		c.Total, c.Pending, c.Skipped, c.InDoubt, c.Sent+c.Delivered+c.Read+c.Failed)
	printSkipped(w, "  skipped ", r)
	fmt.Fprintf(w, "parts: %d in all (rows not skipped), %d rows need UCS-2 (70 characters a part, 67 when split)\n", p.Planned, p.UCS2Rows)
	if o.sms != nil {
		for _, u := range o.sms.first {
			fmt.Fprintf(w, "  UCS-2: line %d, because of %q (U+%04X) at character %d\n", u.line, u.char, u.char, u.at+1)
		}
		if extra := o.sms.ucs2 - int64(len(o.sms.first)); extra > 0 {
			fmt.Fprintf(w, "  … and %d more rows\n", extra)
		}
	}
	var slowest time.Duration
	for _, id := range slices.Sorted(maps.Keys(pending)) {
		d := time.Duration(0)
		if s.Rate > 0 {
			d = time.Duration(float64(pending[id]) / pace.Paced(s.Rate) * float64(time.Second))
		}
		slowest = max(slowest, d)
		fmt.Fprintf(w, "identity %s: %d parts to send at %g parts/s, about %s\n", esc(id), pending[id], s.Rate, roundETA(d))
	}
	if s.Rate > 0 {
		fmt.Fprintf(w, "estimate: about %s at %g parts/s per identity (throttles add to it)\n", roundETA(slowest), s.Rate)
	}
	fmt.Fprintln(w, "dry run: nothing was sent")
	return nil
}

// roundETA rounds an estimate to seconds, to tenths below ten seconds.
func roundETA(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// demoSMSSandbox is the SMS sandbox of run --sandbox: every identity
// allows the campaign's rate, and a little of every kind of trouble.
func demoSMSSandbox(rate float64) smssandbox.Config {
	return smssandbox.Config{
		Seed: 1, MPS: rate,
		Latency: 80 * time.Millisecond, Jitter: 40 * time.Millisecond,
		ThrottleRate: 0.005, InternalRate: 0.002, LateRate: 0.002, LateDelay: 2 * sandboxRequestTimeout,
		FailRate: 0.03, EventDelay: time.Second,
	}
}

// startSMSSandbox serves the SMS sandbox in this process, its event
// records appended to the campaign's events log. A few of the campaign's
// phones (one in 40, by a hash) are on its opt-out list.
func startSMSSandbox(ctx context.Context, o *runOptions, s store.Settings, st *store.Store) (string, func() error, error) {
	path := smsEventLogPath(st.Path())
	f, err := logfile.Append(path)
	if err != nil {
		return "", nil, fmt.Errorf("sandbox event log: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	mps := s.Rate
	if mps <= 0 {
		mps = -1 // --rate 0: no limit, here too
	}
	cfg := demoSMSSandbox(mps)
	var optedOut []string
	if err := st.EachToSend(ctx, func(phone string) error {
		h := fnv.New32a()
		h.Write([]byte("opt-out:" + phone)) // not the hash that assigns senders
		if h.Sum32()%40 == 0 {
			optedOut = append(optedOut, phone)
		}
		return nil
	}); err != nil {
		f.Close()
		return "", nil, err
	}
	cfg.OptOuts = map[string][]string{"Default": optedOut}
	// The account owns the numbers given as --from, so that their opt-out
	// lists can be looked up; other identities (IDs, sender IDs, pools) are
	// taken as they come.
	for _, id := range s.Senders {
		if !strings.HasPrefix(id, "+") {
			cfg.Numbers = nil
			break
		}
		cfg.Numbers = append(cfg.Numbers, smssandbox.Number{PhoneNumber: id})
	}
	cfg.Events = bw
	srv := smssandbox.New(cfg)
	url, stop, err := serveHandler(srv, o.log)
	if err != nil {
		f.Close()
		return "", nil, err
	}
	o.log.Info("sending to the in-process SMS sandbox (nothing leaves this machine)", "event_log", path)
	return url, func() error {
		stop()
		serr := srv.Close()
		stt := srv.Stats()
		o.log.Info("sandbox", "requests", stt.Requests, "accepted", stt.Accepted, "throttled", stt.Throttled, "opted_out", stt.OptedOut)
		return errors.Join(serr, logfile.Close(path, bw, f))
	}, nil
}

// smsEventLogPath is where run --sandbox writes an SMS campaign's event
// records: beside the checkpoint.
func smsEventLogPath(db string) string {
	return strings.TrimSuffix(db, ".bulksend.db") + ".sms-events.jsonl"
}
