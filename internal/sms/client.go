// Package sms is the AWS End User Messaging SMS client (API
// pinpoint-sms-voice-v2, through aws-sdk-go-v2): it sends a
// campaign.Message as one SendTextMessage whose body an smstext.Text
// renders from the row's cells, and turns AWS's answers into a
// campaign.Receipt or a *campaign.SendError classified by one table
// (errors.go). It also reads what a preflight needs: the opt-out list
// linked to an origination identity and the numbers on it (optout.go).
//
// The SDK's own retries are off for sends: SendTextMessage has no
// idempotency token, so a retried timeout can send twice, and a retried
// throttle hides it from the pacer and the row's count of throttled
// tries. The engine retries from the checkpoint instead.
package sms

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2/types"
	smithy "github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/sms/smstext"
)

var _ engine.Sender = (*Client)(nil)

// Options are what New needs to reach AWS. Zero values take the AWS
// defaults noted.
type Options struct {
	// Region is the AWS region, e.g. us-east-1; "" takes it from the AWS
	// chain (AWS_REGION, the profile's region).
	Region string
	// EndpointURL replaces the service's endpoint (a sandbox, a VPC
	// endpoint); "" resolves it as the SDK does, AWS_ENDPOINT_URL and
	// AWS_ENDPOINT_URL_PINPOINT_SMS_VOICE_V2 included.
	EndpointURL string
	// Credentials; nil takes the standard chain (environment, shared
	// profile, SSO, EC2/ECS roles).
	Credentials aws.CredentialsProvider
	// HTTPClient carries the requests; nil is one whose transport keeps
	// enough idle connections for MaxConns requests in flight.
	HTTPClient *http.Client
	MaxConns   int
	// Timeout bounds each request (0: none beyond the caller's context).
	// A send that times out after its request left is in doubt.
	Timeout time.Duration
}

// ErrNoRegion is New's error when neither Options nor the AWS chain
// (AWS_REGION, the profile's region) names a region.
var ErrNoRegion = errors.New("no AWS region")

// The message types AWS takes (Client.MessageType).
const (
	Transactional = string(types.MessageTypeTransactional)
	Promotional   = string(types.MessageTypePromotional)
)

// Client sends text messages. It is safe for concurrent use; its
// exported fields must not change after the first Send.
type Client struct {
	// Text renders each Message's Params (the row's cells in column
	// order) into the body. A nil Text fails every Send as Fatal.
	Text *smstext.Text
	// MessageType is Transactional, Promotional, or "" to leave it to the
	// origination identity's default. Any other value fails every Send
	// as Fatal.
	MessageType string
	// ConfigurationSet names the configuration set whose event
	// destinations receive delivery events; "" sends none.
	ConfigurationSet string
	// MaxPrice is the most to pay for one message (all its parts), in US
	// dollars as AWS takes it ("0.05"); "" sends none.
	MaxPrice string
	// TTL is how long AWS may try to deliver, sent in whole seconds
	// rounded up; 0 sends none (AWS's default is 72 hours).
	TTL time.Duration

	api     *pinpointsmsvoicev2.Client
	creds   *aws.CredentialsCache
	region  string
	timeout time.Duration
	// reads retries the idempotent Describe calls (throttles, 5xx), which
	// a large opt-out list can provoke; sends never retry.
	reads aws.Retryer
}

// New builds a client from o and the AWS configuration chain. It reaches
// no network: CheckCredentials does.
func New(ctx context.Context, o Options) (*Client, error) {
	cfg, err := loadConfig(ctx, o)
	if err != nil {
		return nil, err
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = newHTTPClient(o.MaxConns)
	}
	c := &Client{
		creds:   aws.NewCredentialsCache(chain{cfg.Credentials}),
		region:  cfg.Region,
		timeout: o.Timeout,
		reads:   retry.NewStandard(func(so *retry.StandardOptions) { so.MaxAttempts = readAttempts }),
	}
	c.api = pinpointsmsvoicev2.NewFromConfig(cfg, func(po *pinpointsmsvoicev2.Options) {
		po.Retryer = aws.NopRetryer{}
		po.RetryMaxAttempts = 0 // else AWS_MAX_ATTEMPTS would wrap the retryer
		po.HTTPClient = tracing{hc}
		po.Credentials = c.creds
		po.ClientLogMode = 0 // never log requests: they carry signatures
		if o.EndpointURL != "" {
			po.BaseEndpoint = aws.String(o.EndpointURL)
		}
	})
	return c, nil
}

// loadConfig loads the AWS configuration from the standard chain, with
// o's region and credentials when it names them; a region is required.
func loadConfig(ctx context.Context, o Options) (aws.Config, error) {
	var load []func(*config.LoadOptions) error
	if o.Region != "" {
		load = append(load, config.WithRegion(o.Region))
	}
	if o.Credentials != nil {
		load = append(load, config.WithCredentialsProvider(o.Credentials))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, ErrNoRegion
	}
	return cfg, nil
}

// readAttempts is how many times a Describe call is tried.
const readAttempts = 5

// newHTTPClient returns a client whose transport keeps enough idle
// connections for conc requests in flight.
func newHTTPClient(conc int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = conc + 16
	t.MaxIdleConnsPerHost = conc + 16
	return &http.Client{Transport: t}
}

// chain marks every failure of the chain as a *CredentialsError, so
// that a send can tell it from a request that never left.
type chain struct{ p aws.CredentialsProvider }

func (c chain) Retrieve(ctx context.Context) (aws.Credentials, error) {
	if c.p == nil {
		return aws.Credentials{}, &CredentialsError{Err: errors.New("no credential provider configured")}
	}
	cr, err := c.p.Retrieve(ctx)
	if err != nil {
		return aws.Credentials{}, &CredentialsError{Err: err}
	}
	return cr, nil
}

// CheckCredentials retrieves the credentials once, so that a missing or
// expired chain stops a run before its first send with a
// *CredentialsError (and its Hint) instead of failing rows.
func (c *Client) CheckCredentials(ctx context.Context) error {
	cr, err := c.creds.Retrieve(ctx)
	if err != nil {
		var ce *CredentialsError
		if errors.As(err, &ce) {
			return ce
		}
		return &CredentialsError{Err: err}
	}
	if !cr.HasKeys() {
		return &CredentialsError{Err: errors.New("the credentials found have no access key")}
	}
	return nil
}

// wroteKey marks a send's context with the flag tracing sets once its
// request is written.
type wroteKey struct{}

// tracing records, for a request whose context carries a wroteKey flag,
// whether the request was written: it is what tells a request that never
// left (safe to send again) from one in doubt. It tells the engine when
// too (campaign.Departed). It sits on the service client only, so the
// credential providers' own requests never set it.
type tracing struct{ c *http.Client }

func (t tracing) Do(r *http.Request) (*http.Response, error) {
	if wrote, ok := r.Context().Value(wroteKey{}).(*atomic.Bool); ok {
		ctx := r.Context()
		r = r.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteRequest: func(i httptrace.WroteRequestInfo) {
				if i.Err == nil {
					wrote.Store(true)
					campaign.Departed(ctx, time.Now())
				}
			},
		}))
	}
	return t.c.Do(r)
}

// Send sends m as one SendTextMessage and returns its MessageId. Every
// error is a *campaign.SendError: an answer of AWS is classified by the
// table (its Err an *APIError); a credentials failure is Fatal (a
// *CredentialsError); otherwise whether the request was written decides
// between Unanswered (in doubt) and NeverLeft (safe to send again).
func (c *Client) Send(ctx context.Context, m campaign.Message) (campaign.Receipt, error) {
	in, err := c.input(m)
	if err != nil {
		return campaign.Receipt{}, &campaign.SendError{Class: campaign.Fatal, Title: err.Error(), Err: err}
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	var wrote atomic.Bool
	out, err := c.api.SendTextMessage(context.WithValue(ctx, wroteKey{}, &wrote), in)
	if err != nil {
		return campaign.Receipt{}, c.sendError(ctx, err, wrote.Load())
	}
	if out.MessageId == nil || *out.MessageId == "" {
		err := errors.New("answer without a MessageId: outcome unknown")
		return campaign.Receipt{}, &campaign.SendError{Class: campaign.Unanswered, Title: "answer without a MessageId", Err: err}
	}
	return campaign.Receipt{ID: *out.MessageId}, nil
}

// input is m's SendTextMessage request.
func (c *Client) input(m campaign.Message) (*pinpointsmsvoicev2.SendTextMessageInput, error) {
	if c.Text == nil {
		return nil, errors.New("no message text")
	}
	switch c.MessageType {
	case "", Transactional, Promotional:
	default:
		return nil, fmt.Errorf("unknown message type %q: want %s or %s", c.MessageType, Transactional, Promotional)
	}
	in := &pinpointsmsvoicev2.SendTextMessageInput{
		DestinationPhoneNumber: aws.String(m.To),
		OriginationIdentity:    aws.String(m.From),
		MessageBody:            aws.String(c.Text.Render(m.Params)),
		MessageType:            types.MessageType(c.MessageType),
	}
	if !m.Ref.IsZero() {
		// Event records echo Context: reconcile matches them to rows by it.
		in.Context = map[string]string{"bulksend": m.Ref.Key()}
	}
	if c.ConfigurationSet != "" {
		in.ConfigurationSetName = aws.String(c.ConfigurationSet)
	}
	if c.MaxPrice != "" {
		in.MaxPrice = aws.String(c.MaxPrice)
	}
	if c.TTL > 0 {
		s := min((c.TTL+time.Second-1)/time.Second, math.MaxInt32)
		in.TimeToLive = aws.Int32(int32(s))
	}
	return in, nil
}

// sendError classifies a failed SendTextMessage. ctx is the send's own
// (with its timeout).
func (c *Client) sendError(ctx context.Context, err error, wrote bool) *campaign.SendError {
	// First: a credential refresh that failed with an HTTP answer (STS,
	// SSO) wraps that answer, which is not AWS SMS's answer to the send.
	var ce *CredentialsError
	if !wrote && ctx.Err() == nil && errors.As(err, &ce) {
		return &campaign.SendError{Class: campaign.Fatal, Title: "AWS credentials", Err: ce}
	}
	if api := answer(err); api != nil {
		return api.sendError()
	}
	var sendErr *smithyhttp.RequestSendError
	switch {
	case wrote:
		title := "no answer: connection lost"
		if timedOut(err) {
			title = "no answer: timeout"
		}
		err = fmt.Errorf("%w: request sent, no answer: outcome unknown", transport(err))
		return &campaign.SendError{Class: campaign.Unanswered, Title: title, Err: err}
	case ctx.Err() != nil, errors.As(err, &sendErr):
		// Includes a credential refresh cut short by the timeout.
		return &campaign.SendError{Class: campaign.NeverLeft, Title: "request not sent", Err: fmt.Errorf("request not sent: %w", transport(err))}
	}
	// The SDK could not build or sign the request (a malformed region or
	// endpoint, say): every row would fail alike.
	return &campaign.SendError{Class: campaign.Fatal, Title: "request not built", Err: fmt.Errorf("build request: %w", err)}
}

// answer is the service's answer in err as an *APIError, nil if no answer
// came (the SDK puts an empty response, status 0, on transport errors).
func answer(err error) *APIError {
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.Response == nil || re.Response.StatusCode == 0 {
		return nil
	}
	return newAPIError(err, re.HTTPStatusCode(), re.ServiceRequestID())
}

// transport is the network error inside the SDK's wrappings, without the
// method and URL: the report names the row, and the error reads the same
// whatever the endpoint.
func transport(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	var ce *smithy.CanceledError
	if errors.As(err, &ce) {
		return ce.Err
	}
	return err
}

func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// readError is the error of a Describe call: an *APIError for an answer,
// the *CredentialsError, or the transport's error.
func readError(op string, err error) error {
	var ce *CredentialsError
	if errors.As(err, &ce) { // before the answer it may wrap: STS's or SSO's, not the read's
		return fmt.Errorf("%s: %w", op, ce)
	}
	if api := answer(err); api != nil {
		return fmt.Errorf("%s: %w", op, api)
	}
	return fmt.Errorf("%s: %w", op, transport(err))
}
