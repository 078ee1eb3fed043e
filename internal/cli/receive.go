package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bulksend/bulksend/internal/inbound"
	"github.com/bulksend/bulksend/internal/listen"
	"github.com/bulksend/bulksend/internal/sms"
	"github.com/bulksend/bulksend/internal/sms/smsqueue"
	"github.com/bulksend/bulksend/internal/sms/snsreceive"
	"github.com/bulksend/bulksend/internal/sms/snsverify"
	"github.com/bulksend/bulksend/internal/whatsapp/receive"
)

// For tests (script_test.go), which alone set them: snsTrust makes the
// verifier trust the test's own SNS certificate (snsverify.Trust refuses
// outside a test binary anyway), snsClient carries the subscription
// confirmations' GETs to a server of the test's instead of AWS.
var (
	snsTrust  func(*snsverify.Verifier) error
	snsClient *http.Client
)

// secretFileMax bounds a secret file: a verify token or an app secret is
// a line, not a file.
const secretFileMax = 4 << 10

type receiveOptions struct {
	listen          string
	verifyTokenFile string
	appSecretFile   string
	dir             string
	rotateSize      int64
	tlsCert, tlsKey string
	snsTopics       []string
	sqsQueueURL     string
	apply           []string
	noApply         bool
	hearing
}

func newReceiveCmd(ios *IO, logger func() (*slog.Logger, error)) *cobra.Command {
	o := &receiveOptions{}
	cmd := &cobra.Command{
		Use:   "receive --listen ADDR --log DIR [--verify-token-file F --app-secret-file F] [--sns-topic-arn ARN…]",
		Short: "Receive Meta's webhooks and SNS's SMS events: verify each signature and keep every body durably for reconcile",
		Long: `Receive answers Meta's webhook handshake (GET hub.mode=subscribe with your
verify token) and takes its POSTs: each body's X-Hub-Signature-256 is
checked in constant time over the raw bytes with the app secret (missing:
401, wrong: 403, counted, not kept); a verified body is appended to the
log in DIR and synced to disk before the 200 (concurrent POSTs share one
sync); a body that could not be kept gets a 503, so Meta sends it again.
The log rotates daily (and with --rotate-size by size), the closed files
gzipped; reconcile reads the folder as it is:

  bulksend reconcile CAMPAIGN.csv DIR

With --sns-topic-arn (repeatable) it is also an Amazon SNS HTTPS
endpoint for those topics (the configuration set's SMS events, a two-way
number's inbound messages): a POST with an x-amz-sns-message-type header
is SNS's. Each message's signature is verified (SignatureVersion 1 or 2,
the certificate fetched only from https://sns.<region>.amazonaws.com/);
a subscription is confirmed (its SubscribeURL, on SNS's domain, fetched)
only for a topic named; unsigned or wrongly signed messages, and those
of other topics, are refused and counted; each notification is kept in
the same log before its 200. Without the Meta flags it receives SNS
alone.

With --sqs-queue-url it also long-polls an SQS queue subscribed to
those topics (no public endpoint needed; AWS keeps its messages for
days while the receiver is away), with credentials from the standard AWS
chain as for sending. Each message is kept in the same log before it is
deleted from the queue: after a crash between the two it comes again and
is kept again, which reconcile applies once. Without the Meta flags and
--sns-topic-arn it listens on nothing and polls alone.

Live apply: what it keeps is applied while campaigns run, through the
same code as reconcile. Statuses go to the campaign their row tag names,
whose checkpoint the operator ledger knows (every run notes it) or
--apply names; status then shows delivered and read during the run, which
goes on sending (the receiver takes no lock). Replies and taps are
recorded on the rows they answer, and stop keywords (STOP, UNSUBSCRIBE,
the FCC's and AWS's words, --stop-word), WhatsApp's "Stop promotions" and
user_preferences stops go on the ledger's opt-outs, which every later run
honours; START and resumes lift them. What live apply misses is in the
log: reconcile applies it with the same result. --no-apply only keeps.

Secrets are read from files, never flags. It listens on --listen until
interrupted (it prints its counts as JSON on stdout then); put it behind
a TLS proxy (Caddy) or a tunnel, or give --tls-cert and --tls-key.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			return runReceive(cmd.Context(), ios, o, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:8443", "address to listen on (port 0: any free port)")
	f.StringVar(&o.verifyTokenFile, "verify-token-file", "", "file holding the verify token you gave Meta for the webhook (required)")
	f.StringVar(&o.appSecretFile, "app-secret-file", "", "file holding the Meta app's secret, which signs every POST (required)")
	f.StringVar(&o.dir, "log", "", "folder of the webhook log (required; made 0700)")
	f.Int64Var(&o.rotateSize, "rotate-size", 0, "also start a new log file past this many bytes (default: daily only)")
	f.StringVar(&o.tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM), with --tls-key")
	f.StringVar(&o.tlsKey, "tls-key", "", "the certificate's private key (PEM)")
	f.StringArrayVar(&o.snsTopics, "sns-topic-arn", nil, "also take SNS's HTTPS POSTs of this topic (repeatable): arn:aws:sns:REGION:ACCOUNT:NAME")
	f.StringVar(&o.sqsQueueURL, "sqs-queue-url", "", "also long-poll this SQS queue (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME) and keep its messages")
	f.StringArrayVar(&o.apply, "apply", nil, "apply statuses live to this campaign (its CSV or checkpoint; repeatable), besides those the operator ledger knows")
	f.BoolVar(&o.noApply, "no-apply", false, "only keep: apply nothing live (reconcile the log later)")
	o.hearing.flags(f)
	return cmd
}

// readSecretFile reads a one-line secret from the file that --flag names.
func readSecretFile(flag, path string) (string, error) {
	s, err := readLineFile(flag, path, secretFileMax, "a secret")
	if err == nil && strings.ContainsAny(s, "\r\n") {
		return "", usagef("the file holds the secret alone, on one line", "--%s %s holds more than one line", flag, path)
	}
	return s, err
}

func runReceive(ctx context.Context, ios *IO, o *receiveOptions, log *slog.Logger) error {
	meta := o.verifyTokenFile != "" || o.appSecretFile != "" || len(o.snsTopics) == 0 && o.sqsQueueURL == ""
	listens := meta || len(o.snsTopics) > 0
	var token, secret string
	if meta {
		var err error
		if token, err = readSecretFile("verify-token-file", o.verifyTokenFile); err != nil {
			return err
		}
		if secret, err = readSecretFile("app-secret-file", o.appSecretFile); err != nil {
			return err
		}
	}
	if o.dir == "" {
		return usagef("", "--log DIR is required: the folder the webhook bodies are kept in")
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return usagef("", "--tls-cert and --tls-key go together")
	}
	for _, arn := range o.snsTopics {
		if _, err := snsreceive.Region(arn); err != nil {
			return usagef("the ARN is on the topic's page in the SNS console", "--sns-topic-arn: %w", err)
		}
	}
	live, closeLive, err := o.startLive(ctx, log)
	if err != nil {
		return err
	}
	defer closeLive()
	cfg := receive.Config{VerifyToken: token, AppSecret: []byte(secret), Dir: o.dir,
		Rotate: receive.RotatePolicy{Size: o.rotateSize}, Log: log, NoWebhooks: !meta}
	if live != nil {
		cfg.OnKept = live.Kept
	}
	r, err := receive.New(cfg)
	if err != nil {
		return usagef("", "receive: %w", err)
	}
	var handler http.Handler = r
	var sns *snsreceive.Handler
	if len(o.snsTopics) > 0 {
		v := snsverify.New(snsverify.Options{})
		if snsTrust != nil {
			if err := snsTrust(v); err != nil {
				r.Close()
				return err
			}
		}
		sns, err = snsreceive.New(snsreceive.Config{Topics: o.snsTopics, Verifier: v, Keeper: r, Client: snsClient, Log: log.With("front", "sns")})
		if err != nil {
			r.Close()
			return usagef("", "receive: %w", err)
		}
		handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.Header.Get(snsreceive.TypeHeader) != "" {
				sns.ServeHTTP(w, req)
				return
			}
			r.ServeHTTP(w, req)
		})
	}
	var poller *smsqueue.Poller
	fronts := inbound.Fronts{Keeper: r}
	if o.sqsQueueURL != "" {
		q, err := sms.NewQueue(ctx, o.sqsQueueURL, sms.Options{})
		if err != nil {
			r.Close()
			return usagef("", "--sqs-queue-url: %w", err)
		}
		poller = smsqueue.New(smsqueue.Config{Queue: q, Keeper: r, Log: log.With("front", "sqs")})
		fronts.Poll = func(ctx context.Context) { poller.Run(ctx) }
	}
	if listens {
		l, err := net.Listen("tcp", o.listen)
		if err != nil {
			r.Close()
			return usagef("", "--listen %s: %w", o.listen, err)
		}
		scheme := "http"
		if o.tlsCert != "" {
			cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
			if err != nil {
				l.Close()
				r.Close()
				return usagef("", "--tls-cert/--tls-key: %w", err)
			}
			l, scheme = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), "https"
		}
		fronts.Server = listen.New(l, handler, receive.Limits, log.With("listener", "receive"))
		fmt.Fprintf(ios.Err, "bulksend: receiving webhooks at %s://%s/ ; keeping them in %s\n", scheme, l.Addr(), esc(o.dir))
	} else {
		fmt.Fprintf(ios.Err, "bulksend: polling %s ; keeping its messages in %s\n", esc(o.sqsQueueURL), esc(o.dir))
	}
	ctx, stop := signalContext(ctx, ios, log, receiveInterrupt)
	defer stop()
	if err := inbound.Receive(ctx, fronts); err != nil {
		return err
	}
	return printReceiveStats(ios, r.Stats(), sns, poller, live)
}

// startLive starts live apply, unless --no-apply; done closes what it
// opened.
func (o *receiveOptions) startLive(ctx context.Context, log *slog.Logger) (_ *inbound.Applier, done func(), err error) {
	if o.noApply {
		if len(o.apply) > 0 {
			return nil, nil, usagef("", "--apply and --no-apply exclude each other")
		}
		return nil, func() {}, nil
	}
	led, err := o.hearing.open(ctx, log)
	if err != nil {
		return nil, nil, err
	}
	closeLedger := func() {
		if led != nil {
			led.Close()
		}
	}
	names := map[string]string{} // checkpoint → as --apply named it
	var dbs []string
	for _, name := range o.apply {
		db, err := dbPath(name)
		if err != nil {
			closeLedger()
			return nil, nil, err
		}
		names[db] = name
		dbs = append(dbs, db)
	}
	a, err := inbound.NewApplier(ctx, inbound.LiveConfig{Log: log.With("live", "apply"), Ledger: led, Keywords: o.hearing.keywords(),
		Channels: inboundChannels(), Checkpoints: dbs})
	var open *inbound.OpenError
	switch {
	case errors.As(err, &open):
		closeLedger()
		return nil, nil, usagef("name a campaign's CSV or checkpoint that a run made", "--apply %s: %w", esc(names[open.Checkpoint]), open.Err)
	case err != nil:
		closeLedger()
		return nil, nil, err
	}
	return a, func() { a.Close(); closeLedger() }, nil
}

// receiveStats are what receive prints when it stops: the WhatsApp
// receiver's counts as they were, and the other front ends' beside them.
type receiveStats struct {
	receive.Stats
	SNS *snsreceive.Stats `json:"sns,omitempty"`
	SQS *smsqueue.Stats   `json:"sqs,omitempty"`
	// Live is what live apply did (nil with --no-apply).
	Live *inbound.LiveStats `json:"live,omitempty"`
}

func printReceiveStats(ios *IO, st receive.Stats, sns *snsreceive.Handler, q *smsqueue.Poller, live *inbound.Applier) error {
	out := receiveStats{Stats: st}
	if live != nil {
		s := live.Stats()
		out.Live = &s
	}
	if sns != nil {
		s := sns.Stats()
		out.SNS = &s
	}
	if q != nil {
		s := q.Stats()
		out.SQS = &s
	}
	enc := json.NewEncoder(ios.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
