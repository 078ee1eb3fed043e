// Package snsreceive is `bulksend receive`'s Amazon SNS HTTPS endpoint:
// an http.Handler that confirms the subscriptions of the topics it is
// told of, verifies the signature of every message (snsverify), and keeps
// each verified notification in the receiver's log, where reconcile reads
// it (smsevent unwraps the notification's Message).
//
// The model. A notification is answered 200 only once the Keeper has it
// on disk; one that cannot be kept is answered 503, so that SNS sends it
// again (by default 3 times, 20 s apart: an SQS queue subscribed to the
// topic keeps events for days, and needs no public endpoint). A message
// of a topic not named, or whose signature is missing or wrong, is
// refused and counted, never kept; a subscription confirmation is
// answered by a GET of its SubscribeURL, itself checked to be on SNS's
// own domain and in the topic's region, and only for a topic named.
package snsreceive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulksend/bulksend/internal/sms/snsverify"
)

// TypeHeader is the header SNS names each POST's message type in.
const TypeHeader = "X-Amz-Sns-Message-Type"

// MaxBody bounds a POST's body: an SNS message is at most 256 KB, and its
// JSON envelope escapes it.
const MaxBody = 1 << 20

// maxReading bounds the bodies read at once (each up to MaxBody), so that
// a flood of slow POSTs holds at most that much memory.
const maxReading = 64

// Keeper keeps a body durably: Keep returns nil only once body (one JSON
// value) is on disk. The receiver's log (internal/whatsapp/receive's
// Receiver) is one.
type Keeper interface {
	Keep(body []byte) error
}

// Config configures a Handler.
type Config struct {
	// Topics are the ARNs of the topics whose subscriptions are confirmed
	// and whose notifications are kept (--sns-topic-arn); at least one.
	Topics []string
	// Verifier checks every message's signature.
	Verifier *snsverify.Verifier
	// Keeper keeps the notifications.
	Keeper Keeper
	// Client GETs SubscribeURLs; nil is one with a 10 s timeout that
	// follows no redirect (a redirect could leave SNS's domain).
	Client *http.Client
	// Log; nil logs nothing.
	Log *slog.Logger
}

// Stats are a Handler's counts since New. Every POST is counted in
// Received and in exactly one of the others.
type Stats struct {
	Received      int64 `json:"received"`       // POSTs
	Kept          int64 `json:"kept"`           // notifications verified and kept: 200
	Confirmed     int64 `json:"confirmed"`      // subscriptions confirmed (SubscribeURL fetched): 200
	Unsubscribed  int64 `json:"unsubscribed"`   // unsubscribe confirmations verified: 200, logged, not kept
	Unsigned      int64 `json:"unsigned"`       // messages without a signature: 401
	BadSignature  int64 `json:"bad_signature"`  // signatures wrong, of an unknown version, or whose certificate is off SNS's domain: 403
	CertUnusable  int64 `json:"cert_unusable"`  // signing certificates that could not be fetched or used: 503, SNS sends it again
	UnknownTopic  int64 `json:"unknown_topic"`  // verified messages of a topic not named: 403
	NotSNS        int64 `json:"not_sns"`        // bodies that are not an SNS message (or disagree with their header), too large, or not read in full: 400/413
	ConfirmFailed int64 `json:"confirm_failed"` // SubscribeURLs refused or not answered 200: 502, SNS sends the confirmation again
	Unkept        int64 `json:"unkept"`         // verified notifications that could not be kept: 503
	MethodRefused int64 `json:"method_refused"` // requests other than POST: 405
}

// Handler answers SNS's POSTs; see the package documentation. It is safe
// for concurrent use; create one with New.
type Handler struct {
	cfg     Config
	log     *slog.Logger
	client  *http.Client
	reading chan struct{}

	received, kept, confirmed, unsubscribed, unsigned, badSig, certUnusable atomic.Int64
	unknownTopic, notSNS, confirmFailed, unkept, method                     atomic.Int64

	warnOnce sync.Map
}

// New returns a Handler.
func New(cfg Config) (*Handler, error) {
	switch {
	case len(cfg.Topics) == 0:
		return nil, errors.New("snsreceive: no topic: a subscription is confirmed only for a topic named")
	case cfg.Verifier == nil:
		return nil, errors.New("snsreceive: no verifier")
	case cfg.Keeper == nil:
		return nil, errors.New("snsreceive: no keeper")
	}
	for _, t := range cfg.Topics {
		if _, err := Region(t); err != nil {
			return nil, err
		}
	}
	h := &Handler{cfg: cfg, log: cfg.Log, client: cfg.Client, reading: make(chan struct{}, maxReading)}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.client == nil {
		h.client = &http.Client{
			Timeout:       10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return h, nil
}

// Region is the region of the topic ARN arn:aws:sns:<region>:<account>:<name>
// (other partitions too: arn:aws-cn:…), or an error if arn is not one.
func Region(arn string) (string, error) {
	p := strings.Split(arn, ":")
	if len(p) != 6 || p[0] != "arn" || !strings.HasPrefix(p[1], "aws") || p[2] != "sns" || p[3] == "" || p[4] == "" || p[5] == "" {
		return "", fmt.Errorf("%q is not an SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:NAME)", arn)
	}
	return p[3], nil
}

// Stats returns the counts so far.
func (h *Handler) Stats() Stats {
	return Stats{
		Received: h.received.Load(), Kept: h.kept.Load(), Confirmed: h.confirmed.Load(), Unsubscribed: h.unsubscribed.Load(),
		Unsigned: h.unsigned.Load(), BadSignature: h.badSig.Load(), CertUnusable: h.certUnusable.Load(),
		UnknownTopic: h.unknownTopic.Load(), NotSNS: h.notSNS.Load(), ConfirmFailed: h.confirmFailed.Load(),
		Unkept: h.unkept.Load(), MethodRefused: h.method.Load(),
	}
}

// ServeHTTP takes an SNS POST.
func (h *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		h.method.Add(1)
		w.Header().Set("Allow", "POST")
		http.Error(w, "SNS POSTs its messages", http.StatusMethodNotAllowed)
		return
	}
	h.received.Add(1)
	body, code, err := h.read(w, req)
	if err != nil {
		h.notSNS.Add(1)
		h.refused("not read", err.Error(), "remote", req.RemoteAddr)
		http.Error(w, err.Error(), code)
		return
	}
	m, err := snsverify.Parse(body)
	if err == nil && req.Header.Get(TypeHeader) != "" && req.Header.Get(TypeHeader) != m.Type {
		err = fmt.Errorf("%s %q, but the message's Type %q", TypeHeader, req.Header.Get(TypeHeader), m.Type)
	}
	if err != nil {
		h.notSNS.Add(1)
		h.refused("not SNS", err.Error(), "remote", req.RemoteAddr)
		http.Error(w, "not an SNS message", http.StatusBadRequest)
		return
	}
	if err := h.cfg.Verifier.Verify(req.Context(), m); err != nil {
		h.signatureRefused(w, req, m, err)
		return
	}
	if !slices.Contains(h.cfg.Topics, m.TopicArn) {
		h.unknownTopic.Add(1)
		h.refused("unknown topic", "a message of a topic not named with {sns-topic-arn}: not kept, not confirmed", "topic", m.TopicArn, "type", m.Type)
		http.Error(w, "topic not subscribed here", http.StatusForbidden)
		return
	}
	switch m.Type {
	case snsverify.TypeSubscriptionConfirmation:
		h.confirm(req.Context(), w, m)
	case snsverify.TypeUnsubscribeConfirmation:
		h.unsubscribed.Add(1)
		h.log.Warn("SNS unsubscribed this endpoint from a topic", "topic", m.TopicArn)
		w.WriteHeader(http.StatusOK)
	default:
		if err := h.cfg.Keeper.Keep(body); err != nil {
			h.unkept.Add(1)
			h.log.Debug("SNS notification not kept: answered 503, SNS sends it again", "err", err)
			w.Header().Set("Retry-After", "10")
			http.Error(w, "not kept, send it again", http.StatusServiceUnavailable)
			return
		}
		h.kept.Add(1)
		w.WriteHeader(http.StatusOK)
	}
}

// read reads the body, at most MaxBody bytes, at most maxReading at once.
func (h *Handler) read(w http.ResponseWriter, req *http.Request) ([]byte, int, error) {
	if req.ContentLength > MaxBody {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body of %d bytes: over %d", req.ContentLength, MaxBody)
	}
	select {
	case h.reading <- struct{}{}:
		defer func() { <-h.reading }()
	case <-req.Context().Done():
		return nil, http.StatusBadRequest, errors.New("the client went away")
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d bytes", MaxBody)
	}
	if err != nil {
		return nil, http.StatusBadRequest, errors.New("body not read in full")
	}
	return b, 0, nil
}

// signatureRefused answers a message whose signature did not verify.
func (h *Handler) signatureRefused(w http.ResponseWriter, req *http.Request, m snsverify.Message, err error) {
	switch {
	case errors.Is(err, snsverify.ErrUnsigned):
		h.unsigned.Add(1)
		h.refused("unsigned", "an SNS message without a signature: not kept", "remote", req.RemoteAddr, "topic", m.TopicArn)
		http.Error(w, "not signed", http.StatusUnauthorized)
	case errors.Is(err, snsverify.ErrCertificate):
		// Perhaps AWS's server did not answer: SNS sends it again.
		h.certUnusable.Add(1)
		h.refused("certificate", err.Error(), "remote", req.RemoteAddr, "topic", m.TopicArn)
		http.Error(w, "signing certificate unusable", http.StatusServiceUnavailable)
	default:
		h.badSig.Add(1)
		h.refused("bad signature", err.Error(), "remote", req.RemoteAddr, "topic", m.TopicArn)
		http.Error(w, "bad signature", http.StatusForbidden)
	}
}

// confirm GETs a subscription confirmation's SubscribeURL, once it is on
// SNS's domain in the topic's region.
func (h *Handler) confirm(ctx context.Context, w http.ResponseWriter, m snsverify.Message) {
	fail := func(code int, why string) {
		h.confirmFailed.Add(1)
		h.log.Warn("SNS subscription not confirmed: "+why, "topic", m.TopicArn)
		http.Error(w, "subscription not confirmed", code)
	}
	u, err := snsverify.CheckSNSURL(m.SubscribeURL)
	if err != nil {
		fail(http.StatusForbidden, err.Error())
		return
	}
	region, _ := Region(m.TopicArn) // a topic named: checked in New
	if !strings.HasPrefix(u.Host, "sns."+region+".") {
		fail(http.StatusForbidden, fmt.Sprintf("SubscribeURL %q is not in the topic's region %s", m.SubscribeURL, region))
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		fail(http.StatusBadGateway, err.Error())
		return
	}
	resp, err := h.client.Do(req)
	if err != nil {
		fail(http.StatusBadGateway, err.Error())
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fail(http.StatusBadGateway, "ConfirmSubscription answered "+resp.Status)
		return
	}
	h.confirmed.Add(1)
	h.log.Info("SNS subscription confirmed", "topic", m.TopicArn)
	w.WriteHeader(http.StatusOK)
}

// refused logs a refusal: the first of each kind as a warning, the rest
// at debug level, so that a flood does not flood the log.
func (h *Handler) refused(kind, why string, args ...any) {
	level := slog.LevelDebug
	if _, seen := h.warnOnce.LoadOrStore(kind, struct{}{}); !seen {
		level = slog.LevelWarn
		why += " (the first; the next are logged at debug level and counted)"
	}
	h.log.Log(context.Background(), level, "SNS message refused: "+why, append([]any{"kind", kind}, args...)...)
}
