// Package channel is SMS's side of a campaign run (run.Channel): the CSV
// bound to a body with {{column}} placeholders, each row's parts and
// encoding measured at import, the origination identities' opt-out
// lists, and the AWS End User Messaging SMS client, or the sandbox in this
// process, that sends.
package channel

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/listen"
	"github.com/bulksend/bulksend/internal/logfile"
	"github.com/bulksend/bulksend/internal/optout"
	"github.com/bulksend/bulksend/internal/run"
	"github.com/bulksend/bulksend/internal/sms"
	"github.com/bulksend/bulksend/internal/sms/segment"
	"github.com/bulksend/bulksend/internal/sms/smsevent"
	"github.com/bulksend/bulksend/internal/sms/smssandbox"
	"github.com/bulksend/bulksend/internal/sms/smstext"
	"github.com/bulksend/bulksend/internal/store"
)

// Options are the SMS settings of a run, parsed by the front end.
type Options struct {
	// Text is the body given as text, FileText the body read from a file;
	// the first run takes whichever is given, a resume compares them.
	Text, FileText   string
	MessageType      string // "", TRANSACTIONAL or PROMOTIONAL
	ConfigurationSet string
	MaxPrice         string // US dollars per message, as stored ("0.05")
	TTL              time.Duration
	ThrottleTries    int

	Region, EndpointURL string
	// RequestTimeout bounds a send; Sandbox's own is used unless
	// TimeoutGiven.
	RequestTimeout time.Duration
	TimeoutGiven   bool

	SyncOptOuts bool
	Sandbox     bool // send to a sandbox in this process instead
	DryRun      bool
	Log         *slog.Logger
}

// Channel is SMS's run.Channel, and a run.Checker and run.OptOutSyncer.
type Channel struct{ o Options }

var (
	_ run.Channel      = (*Channel)(nil)
	_ run.Checker      = (*Channel)(nil)
	_ run.OptOutSyncer = (*Channel)(nil)
)

// New returns the channel of o.
func New(o Options) *Channel {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Channel{o: o}
}

func (*Channel) Name() campaign.Channel { return campaign.SMS }

func (*Channel) CheckSender(id string) error { return sms.CheckIdentity(id) }

// SandboxRequestTimeout is run --sandbox's request timeout: long enough
// for its latency, short enough that a demo's late answers (in doubt) do
// not hold the end of the run for long.
const SandboxRequestTimeout = 5 * time.Second

// Check checks, before anything is imported, that a run that will call
// AWS has a region and credentials (sms.ErrNoRegion, or the chain's
// error): a missing chain leaves no campaign behind.
func (c *Channel) Check(ctx context.Context) error {
	o := &c.o
	if o.Sandbox || (o.DryRun && !o.SyncOptOuts) {
		return nil
	}
	cl, err := sms.New(ctx, sms.Options{Region: o.Region, EndpointURL: o.EndpointURL, Timeout: o.RequestTimeout, MaxConns: 1})
	if err != nil {
		return err
	}
	return cl.CheckCredentials(ctx)
}

// body is the first run's message body.
func (c *Channel) body() string { return cmpOr(c.o.FileText, c.o.Text) }

// Bind binds the body's placeholders to the CSV's columns. Its errors
// are an *smstext.MissingError (a placeholder without a column), or the
// body's syntax (*smstext.SyntaxError, smstext.ErrEmpty).
func (c *Channel) Bind(ctx context.Context, columns []string) (run.Binding, error) {
	o := &c.o
	body := c.body()
	t, err := smstext.New(body, columns)
	var missing *smstext.MissingError
	if errors.As(err, &missing) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("the message body: %w", err)
	}
	if unused := t.Unused(); len(unused) > 0 {
		o.Log.Info("CSV columns the message body does not use", "columns", strings.Join(unused, ","))
	}
	return &Binding{text: t, settings: store.Settings{
		Channel: string(campaign.SMS), Text: body, MessageType: o.MessageType,
		ConfigurationSet: o.ConfigurationSet, MaxPrice: o.MaxPrice, TTL: int(o.TTL.Seconds()), ThrottleTries: o.ThrottleTries,
	}}, nil
}

// Binding renders and measures each row's body at import, and keeps what
// the plan shows of them.
type Binding struct {
	text     *smstext.Text
	settings store.Settings
	rows     int64 // measured rows, not skipped
	parts    int64
	ucs2     int64
	first    []UCS2Row // the first few rows that need UCS-2
}

// UCS2Row is a row whose body needs UCS-2, and the character that made it.
type UCS2Row struct {
	Line int
	Char rune
	At   int // in characters, from 0
}

// UCS2 returns the first rows whose body needs UCS-2 (a few), and how
// many such rows there are in all.
func (b *Binding) UCS2() ([]UCS2Row, int64) { return b.first, b.ucs2 }

func (b *Binding) Pin(s *store.Settings) {
	s.Channel, s.Text, s.MessageType = b.settings.Channel, b.settings.Text, b.settings.MessageType
	s.ConfigurationSet, s.MaxPrice, s.TTL, s.ThrottleTries = b.settings.ConfigurationSet, b.settings.MaxPrice, b.settings.TTL, b.settings.ThrottleTries
}

// Row stores r's parts and encoding, or skips it when a cell it uses holds
// a control character, or its body is empty or longer than AWS takes.
func (b *Binding) Row(r *store.Row, cells []string) {
	if why := b.text.Control(cells); why != "" {
		r.Skip, r.SkipKind = why, campaign.SkipParameter
		return
	}
	body := b.text.Render(cells)
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
	b.rows++
	b.parts += int64(c.Parts)
	if c.Encoding == segment.UCS2 {
		if b.ucs2++; len(b.first) < 5 {
			b.first = append(b.first, UCS2Row{Line: r.Line, Char: c.NonGSM, At: c.At})
		}
	}
}

// Pinned are the message's settings: a resume may not change them.
func (c *Channel) Pinned(s store.Settings) []run.Pinned {
	o := &c.o
	return []run.Pinned{
		{Setting: "text", Was: s.Text, Now: o.Text},
		{Setting: "text-file", Was: s.Text, Now: o.FileText},
		{Setting: "message-type", Was: s.MessageType, Now: o.MessageType},
		{Setting: "configuration-set", Was: s.ConfigurationSet, Now: o.ConfigurationSet},
		{Setting: "max-price", Was: s.MaxPrice, Now: o.MaxPrice},
		{Setting: "ttl", Was: fmt.Sprint(s.TTL), Now: run.Seconds(o.TTL)},
	}
}

// Resume has nothing to read again: the body is the campaign's.
func (*Channel) Resume(context.Context, store.Settings) error { return nil }

// Sender is the AWS End User Messaging SMS client that sends c's
// messages: to AWS with the standard credential chain, or to a sandbox
// in this process (Options.Sandbox).
func (ch *Channel) Sender(ctx context.Context, c *run.Campaign) (*run.Sender, error) {
	cl, stop, err := ch.client(ctx, c, true)
	if err != nil {
		return nil, err
	}
	return &run.Sender{Sender: cl, Name: "AWS End User Messaging SMS", Stop: stop}, nil
}

// client returns a client of c, and the stop of its sandbox (a sandbox
// that writes its event records beside the checkpoint when events).
func (ch *Channel) client(ctx context.Context, c *run.Campaign, events bool) (*sms.Client, func() error, error) {
	o, s := &ch.o, c.Settings
	text, err := smstext.New(s.Text, s.Params)
	if err != nil {
		return nil, nil, err
	}
	opts := sms.Options{Region: o.Region, EndpointURL: o.EndpointURL, Timeout: o.RequestTimeout,
		MaxConns: max(s.Concurrency, 8*len(s.Senders)+16)}
	stop := func() error { return nil }
	if o.Sandbox {
		url, stopSandbox, err := startSandbox(ctx, o.Log, s, c.Store, events)
		if err != nil {
			return nil, nil, err
		}
		stop = stopSandbox
		opts.EndpointURL, opts.Region = url, "us-east-1"
		opts.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "SANDBOX", SecretAccessKey: "sandbox", Source: "bulksend sandbox"}, nil
		})
		if !o.TimeoutGiven {
			opts.Timeout = SandboxRequestTimeout
		}
	}
	cl, err := sms.New(ctx, opts)
	if err == nil && !o.Sandbox {
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

// OptOutError is an opt-out list that could not be read.
type OptOutError struct {
	Identity, List string // List is "" when the identity's list was not found
	Err            error
}

func (e *OptOutError) Error() string {
	if e.List == "" {
		return fmt.Sprintf("the opt-out list of %s: %v", e.Identity, e.Err)
	}
	return fmt.Sprintf("opt-out list %s: %v", e.List, e.Err)
}
func (e *OptOutError) Unwrap() error { return e.Err }

// SyncOptOuts skips the rows to send whose phone is on the opt-out list
// of their origination identity, AWS would refuse them anyway, when the
// options ask for it. A dry run of a campaign that exists leaves it to the
// next run.
func (ch *Channel) SyncOptOuts(ctx context.Context, c *run.Campaign) error {
	o := &ch.o
	if !o.SyncOptOuts {
		return nil
	}
	if c.ReadOnly {
		o.Log.Warn("opt-out lists are not read in a dry run of a campaign that exists: the next run applies them; the plan counts no opt-outs")
		return nil
	}
	cl, stop, err := ch.client(ctx, c, false)
	if err != nil {
		return err
	}
	defer stop()
	st := c.Store
	senders, err := st.Senders(ctx)
	if err != nil {
		return err
	}
	lists := map[string][]string{} // list → its phones, read once
	for _, id := range senders {
		list, err := cl.OptOutList(ctx, id)
		if err != nil {
			return &OptOutError{Identity: id, Err: err}
		}
		phones, ok := lists[list]
		if !ok {
			if err := cl.OptedOut(ctx, list, func(p string) error { phones = append(phones, p); return nil }); err != nil {
				return &OptOutError{Identity: id, List: list, Err: err}
			}
			lists[list] = phones
			c.KeepOptOuts(ctx, campaign.SMS, id, "AWS opt-out list "+list, phones)
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
		o.Log.Info("opt-out list applied", "identity", id, "list", list, "phones_on_list", len(phones), "rows_skipped", n)
	}
	return nil
}

// DemoSandbox is the SMS sandbox of run --sandbox: every identity allows
// the campaign's rate, counted the strictest way (every part of a message
// at its arrival, as the pacer keeps to: issue 28), and a little of every
// kind of trouble.
func DemoSandbox(rate float64) smssandbox.Config {
	return smssandbox.Config{
		Seed: 1, MPS: rate, StrictWindow: true,
		Latency: 80 * time.Millisecond, Jitter: 40 * time.Millisecond,
		ThrottleRate: 0.005, InternalRate: 0.002, LateRate: 0.002, LateDelay: 2 * SandboxRequestTimeout,
		FailRate: 0.03, EventDelay: time.Second,
	}
}

// EventLogPath is where run --sandbox writes an SMS campaign's event
// records: beside its checkpoint.
func EventLogPath(db string) string {
	return strings.TrimSuffix(db, ".bulksend.db") + ".sms-events.jsonl"
}

// startSandbox serves the SMS sandbox in this process, its event records
// appended to the campaign's events log when events. A few of the
// campaign's phones (one in 40, by a hash) are on its opt-out list.
func startSandbox(ctx context.Context, log *slog.Logger, s store.Settings, st *store.Store, events bool) (string, func() error, error) {
	mps := s.Rate
	if mps <= 0 {
		mps = -1 // a rate of 0: no limit, here too
	}
	cfg := DemoSandbox(mps)
	var optedOut []string
	if err := st.EachToSend(ctx, func(phone string) error {
		h := fnv.New32a()
		h.Write([]byte("opt-out:" + phone)) // not the hash that assigns senders
		if h.Sum32()%40 == 0 {
			optedOut = append(optedOut, phone)
		}
		return nil
	}); err != nil {
		return "", nil, err
	}
	cfg.OptOuts = map[string][]string{"Default": optedOut}
	// The account owns the numbers given as senders, so that their opt-out
	// lists can be looked up; other identities (IDs, sender IDs, pools) are
	// taken as they come.
	for _, id := range s.Senders {
		if !strings.HasPrefix(id, "+") {
			cfg.Numbers = nil
			break
		}
		cfg.Numbers = append(cfg.Numbers, smssandbox.Number{PhoneNumber: id})
	}
	closeLog := func() error { return nil }
	path := EventLogPath(st.Path())
	if events {
		f, err := logfile.Append(path)
		if err != nil {
			return "", nil, fmt.Errorf("sandbox event log: %w", err)
		}
		bw := bufio.NewWriterSize(f, 1<<16)
		cfg.Events = bw
		closeLog = func() error { return logfile.Close(path, bw, f) }
	}
	srv := smssandbox.New(cfg)
	hs, err := listen.Loopback(srv, listen.Sandbox(srv.LongestHold()), log.With("listener", "sandbox"))
	if err != nil {
		srv.Close()
		closeLog()
		return "", nil, fmt.Errorf("sandbox: %w", err)
	}
	if events {
		log.Info("sending to the in-process SMS sandbox (nothing leaves this machine)", "event_log", path)
	}
	return "http://" + hs.Addr().String(), func() error {
		hs.Close()
		serr := srv.Close()
		if !events {
			return serr
		}
		stt := srv.Stats()
		log.Info("sandbox", "requests", stt.Requests, "accepted", stt.Accepted, "throttled", stt.Throttled, "opted_out", stt.OptedOut)
		return errors.Join(serr, closeLog())
	}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Hearing turns inbound SMS messages (replies to a two-way number) into
// what recipients said back for hear: a reply recorded on the row of the
// message it answers; a stop keyword opts the phone out of every message
// of the business (every identity), START lifts it. keywords are the stop
// and start words.
func Hearing(keywords optout.Keywords, hear func(optout.Heard)) func(smsevent.Inbound) {
	return func(in smsevent.Inbound) {
		h := optout.Heard{Channel: "sms", Phone: in.From, Sender: in.To, At: in.At, MessageID: in.PreviousID, Text: in.Body, Reply: true}
		h.Action, h.Source = keywords.OfText(in.Body)
		hear(h)
	}
}

var _ run.Marketer = (*Channel)(nil)

// Marketing: promotional messages, or those of the identity's own type
// (unknown here: an opt-out of marketing is honoured when in doubt).
func (*Channel) Marketing(s store.Settings) bool {
	return !strings.EqualFold(s.MessageType, "TRANSACTIONAL")
}
