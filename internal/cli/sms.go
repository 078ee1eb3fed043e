package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/inbound"
	"github.com/bulksend/bulksend/internal/report"
	"github.com/bulksend/bulksend/internal/run"
	"github.com/bulksend/bulksend/internal/sms"
	smschannel "github.com/bulksend/bulksend/internal/sms/channel"
	"github.com/bulksend/bulksend/internal/sms/smstext"
	"github.com/bulksend/bulksend/internal/termtext"
	"github.com/bulksend/bulksend/internal/whatsapp/pricing"
)

// This file is run's SMS channel (--channel sms) as the command line knows
// it: its flags, how they make the channel, its words and its plan.

var smsEntry = &channelEntry{
	name:         campaign.SMS,
	check:        checkSMS,
	build:        buildSMS,
	noSender:     "pass --from with your origination identities (phone numbers, their IDs or ARNs, sender IDs or pools), or add a from column to the CSV",
	channelWords: smsWords,
	plan:         printSMSPlan,
	inbound: inbound.Channel{ // no Owns: its bodies name nothing, they are those WhatsApp does not own
		Statuses: smschannel.Statuses,
		ReadLog:  smschannel.ReadLog,
	},
	defaultRate: 1, // 10DLC's and international long codes' ceiling: the safe default
	parts:       true,
	endpoint:    func(o *runOptions, ios *IO) string { return cmp.Or(o.endpointURL, ios.Getenv("AWS_ENDPOINT_URL")) },
}

// checkSMS checks the flags of an SMS run.
func checkSMS(o *runOptions) error {
	for _, f := range whatsappOnly {
		if o.changed(f) {
			return usagef("an SMS campaign's body is --text or --text-file, with {{column}} placeholders", "--%s goes with --channel whatsapp", f)
		}
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
	if _, err := maxPrice(o.maxPrice); err != nil {
		return err
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

// maxPrice is --max-price as stored: 0.050 is 0.05, on a resume too.
func maxPrice(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) {
		return "", usagef("", "invalid --max-price %q: want US dollars per message, e.g. 0.05", s)
	}
	return strconv.FormatFloat(v, 'f', -1, 64), nil
}

// textFileMax bounds what is read of --text-file: AWS takes a body of at
// most 10 parts (1,530 GSM-7 characters, a few KB of UTF-8 with the
// placeholders), and the flag may name anything (/dev/zero).
const textFileMax = 64 << 10

// readTextFile reads the message body in the file at path, at most
// textFileMax bytes of it, without the line break an editor ends it with.
func readTextFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", usagef("", "read --text-file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, textFileMax+1))
	if err != nil {
		return "", usagef("", "read --text-file: %w", err)
	}
	if len(b) > textFileMax {
		return "", usagef("--text-file takes a file that holds the message body alone",
			"--text-file %s is over %d KB: it is not a message body", path, textFileMax>>10)
	}
	// Editors end a file with a line break; a message seldom means one.
	return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
}

// buildSMS makes the SMS channel of a run: the first run's body is
// --text or --text-file, and a resume compares --text-file's when given.
func buildSMS(in channelInput) (run.Channel, error) {
	o := in.o
	fileText := ""
	if o.textFile != "" {
		var err error
		if fileText, err = readTextFile(o.textFile); err != nil {
			return nil, err
		}
	}
	if in.first && o.text == "" && o.textFile == "" {
		return nil, usagef("give the message body: --text 'Hi {{first_name}}, …' or --text-file FILE",
			"--text or --text-file is required on the first run of an SMS campaign")
	}
	price, err := maxPrice(o.maxPrice)
	if err != nil {
		return nil, err
	}
	return smschannel.New(smschannel.Options{
		Text: o.text, FileText: fileText, MessageType: strings.ToUpper(o.messageType),
		ConfigurationSet: o.configSet, MaxPrice: price, TTL: o.ttl, ThrottleTries: o.throttleTries,
		Region: o.awsRegion, EndpointURL: o.endpointURL,
		RequestTimeout: o.requestTimeout, TimeoutGiven: o.changed("request-timeout"),
		SyncOptOuts: o.syncOptOuts, Sandbox: o.sandbox, DryRun: o.dryRun, Log: o.log,
	}), nil
}

// smsWords names the flags that fix the SMS channel's errors.
func smsWords(err error) error {
	var (
		missing *smstext.MissingError
		syntax  *smstext.SyntaxError
		optOut  *smschannel.OptOutError
		noEvent *smschannel.NoEventError
	)
	switch {
	case errors.Is(err, sms.ErrNoRegion):
		return usagef("e.g. --region us-east-1, or export AWS_REGION", "%w: pass --region or set AWS_REGION (or region in the AWS profile)", err)
	case errors.As(err, &missing):
		return usagef("a placeholder names a CSV column (any case): fix the text or the CSV's header; nothing was sent", "%w", err)
	case errors.As(err, &syntax), errors.Is(err, smstext.ErrEmpty):
		return usagef("placeholders are written {{column}}", "%w", err)
	case errors.As(err, &noEvent):
		return usagef("reconcile reads the SMS event records of your configuration set's event destination (Firehose or CloudWatch Logs exports, JSON lines)", "%w", err)
	case errors.As(err, &optOut):
		return fmt.Errorf("--sync-opt-outs: %w", err)
	}
	return err
}

// printSMSPlan is an SMS campaign's --dry-run output: rows, parts, the
// rows that need UCS-2 and why, and how long each identity takes.
func printSMSPlan(ctx context.Context, ios *IO, p *run.Plan, _ *pricing.Card) error {
	s := p.Settings
	parts, err := p.Store.Parts(ctx)
	if err != nil {
		return err
	}
	c := p.Breakdown.Counts
	w := ios.Out
	fmt.Fprintf(w, "plan: SMS from %s\n", termtext.Join(s.Senders, ", "))
	fmt.Fprintf(w, "text: %q\n", s.Text)
	if s.Encoding != "" {
		fmt.Fprintf(w, "file: %s, delimiter %q, phones in column %q\n", s.Encoding, s.Delimiter, s.PhoneColumn)
	}
	fmt.Fprintf(w, "rows: %d total, %d to send, %d skipped, %d in doubt, %d already settled\n",
		c.Total, c.Pending, c.Skipped, c.InDoubt, c.Sent+c.Delivered+c.Read+c.Failed)
	report.WriteSkipped(w, "  skipped ", p.Breakdown.Skipped, p.Breakdown.SkipExamples)
	fmt.Fprintf(w, "parts: %d in all (rows not skipped), %d rows need UCS-2 (70 characters a part, 67 when split)\n", parts.Planned, parts.UCS2Rows)
	if b, ok := p.Binding.(*smschannel.Binding); ok {
		first, all := b.UCS2()
		for _, u := range first {
			fmt.Fprintf(w, "  UCS-2: line %d, because of %q (U+%04X) at character %d\n", u.Line, u.Char, u.Char, u.At+1)
		}
		if extra := all - int64(len(first)); extra > 0 {
			fmt.Fprintf(w, "  … and %d more rows\n", extra)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(p.Pending)) {
		fmt.Fprintf(w, "identity %s: %d parts to send at %g parts/s, about %s\n", esc(id), p.Pending[id], s.Rate, roundETA(p.Duration(p.Pending[id])))
	}
	if s.Rate > 0 {
		fmt.Fprintf(w, "estimate: about %s at %g parts/s per identity (throttles add to it)\n", roundETA(p.Longest()), s.Rate)
	}
	printPlanSchedule(w, p, strings.EqualFold(s.MessageType, "PROMOTIONAL"))
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
