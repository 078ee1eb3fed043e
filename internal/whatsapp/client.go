// Package whatsapp is the Cloud API client: it turns a campaign.Message into
// the wire request Meta documents, and Meta's answers into a
// campaign.Receipt or a *campaign.SendError classified by Meta's error-code
// table (errors.go). It sends through Cloud API's /messages or the
// Marketing Messages API's /marketing_messages (Client.API), reads a
// sender number's health and limits for a preflight (phone.go) and a
// template's definition (templates.go).
package whatsapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// DefaultVersion is the Graph API version put in the path.
const DefaultVersion = "v23.0"

// The APIs a Client sends through (Client.API).
const (
	// APIMessages is Cloud API's POST /{phone-number-id}/messages.
	APIMessages = "messages"
	// APIMarketing is the Marketing Messages API for WhatsApp's POST
	// /{phone-number-id}/marketing_messages: marketing templates only, same
	// payload plus product_policy.
	APIMarketing = "marketing"
)

// The product policies of the Marketing Messages API (Client.ProductPolicy).
const (
	// PolicyFallback sends through Cloud API when the business is not
	// onboarded to the Marketing Messages API (Meta's default).
	PolicyFallback = "CLOUD_API_FALLBACK"
	// PolicyStrict refuses the message instead.
	PolicyStrict = "STRICT"
)

// Client sends template messages. It is safe for concurrent use; its
// fields must not change after the first Send.
type Client struct {
	BaseURL string // e.g. https://graph.facebook.com
	Version string // e.g. v23.0
	Token   string // never logged, never part of an error
	HTTP    *http.Client
	Timeout time.Duration // per request; 0 means none beyond ctx
	// TemplateName and TemplateLang name the approved template every Send
	// fills.
	TemplateName, TemplateLang string
	// Mapping fills the template from a message's Params; nil sends the
	// Params as the body's positional parameters.
	Mapping *template.Mapping
	// API is APIMessages or APIMarketing; "" means APIMessages. Any other
	// value fails every Send as Fatal.
	API string
	// ProductPolicy is the Marketing Messages API's product_policy:
	// PolicyFallback, PolicyStrict, or "" to leave it out (Meta then falls
	// back to Cloud API). Sent only with APIMarketing; any other value
	// fails every marketing Send as Fatal. bulksend never sends
	// message_activity_sharing: sharing read activity with Meta is the
	// account's setting, not the tool's choice.
	ProductPolicy string
}

// NewHTTPClient returns an http.Client whose transport keeps enough idle
// connections for conc requests in flight.
func NewHTTPClient(conc int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = conc + 16
	t.MaxIdleConnsPerHost = conc + 16
	t.MaxConnsPerHost = 0
	return &http.Client{Transport: t}
}

// Request is the JSON body of a template message, as Meta's OpenAPI
// TemplateMessage schema describes it; the Marketing Messages API takes the
// same body plus ProductPolicy.
type Request struct {
	MessagingProduct string   `json:"messaging_product"`
	RecipientType    string   `json:"recipient_type"`
	To               string   `json:"to"`
	Type             string   `json:"type"`
	CallbackData     string   `json:"biz_opaque_callback_data,omitempty"`
	Template         Template `json:"template"`
	// ProductPolicy is the Marketing Messages API's product_policy
	// (PolicyFallback or PolicyStrict); "" leaves it out.
	ProductPolicy string `json:"product_policy,omitempty"`
}

type Template struct {
	Name       string                   `json:"name"`
	Language   Language                 `json:"language"`
	Components []template.SendComponent `json:"components,omitempty"`
}

type Language struct {
	Policy string `json:"policy"`
	Code   string `json:"code"`
}

// NewRequest builds the wire request for m, template name in language
// lang, filled by mp (nil: m.Params are the body's positional parameters).
func NewRequest(m campaign.Message, name, lang string, mp *template.Mapping) Request {
	r := Request{
		MessagingProduct: "whatsapp",
		RecipientType:    "individual",
		To:               m.To,
		Type:             "template",
		CallbackData:     m.Ref.String(),
		Template: Template{
			Name:     name,
			Language: Language{Policy: "deterministic", Code: lang},
		},
	}
	if mp == nil {
		mp = template.Positional(make([]string, len(m.Params)))
	}
	r.Template.Components = mp.Components(m.Params)
	return r
}

type response struct {
	Messages []struct {
		ID string `json:"id"`
		// MessageStatus is accepted, held_for_quality_assessment or
		// paused (OpenAPI MessageStatus); only for templates.
		MessageStatus string `json:"message_status"`
	} `json:"messages"`
	Error *struct {
		Message   string `json:"message"`
		Type      string `json:"type"`
		Code      int    `json:"code"`
		ErrorData struct {
			Details string `json:"details"`
		} `json:"error_data"`
		TraceID string `json:"fbtrace_id"`
	} `json:"error"`
}

// apiError is the answer's Graph error, nil when it carries none.
func (r *response) apiError(status int) *APIError {
	if r.Error == nil {
		return nil
	}
	return &APIError{
		HTTPStatus: status, Code: r.Error.Code, Type: r.Error.Type, Message: r.Error.Message,
		Details: r.Error.ErrorData.Details, TraceID: r.Error.TraceID,
	}
}

// answers are buffers to read answers into, reused: an answer is read on
// every send.
var answers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// do sends req with the token, on c.HTTP or the default client.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+c.Token)
	return c.httpClient().Do(req)
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP == nil {
		return http.DefaultClient
	}
	return c.HTTP
}

// jsonType is a send's Content-Type, shared by every request's header:
// net/http only reads it (Header.Add would append to a copy).
var jsonType = []string{"application/json"}

// roundTrip sends a send's POST without following a redirect: http.Client
// re-POSTed a send answered 307 or 308, and a message the first address
// took would go twice. A redirect is an answer here, and post stops the
// run with it. A client that adds nothing to its transport (no timeout,
// cookie jar or redirect policy of its own; NewHTTPClient's) is passed
// over: Do copies every request's header for those, about 5% of what a
// run sending 5,000 a second allocated. Another goes through Do with its
// redirects refused, unless it has a policy of its own.
func (c *Client) roundTrip(req *http.Request) (*http.Response, error) {
	hc := c.httpClient()
	if hc.Timeout != 0 || hc.Jar != nil || hc.CheckRedirect != nil {
		if hc.CheckRedirect == nil {
			refusing := *hc
			refusing.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			hc = &refusing
		}
		return hc.Do(req)
	}
	t := hc.Transport
	if t == nil {
		t = http.DefaultTransport
	}
	return t.RoundTrip(req)
}

// held reports whether a send response's message_status says the message
// was accepted but held back: template pacing holds a new or recently
// paused template's messages for quality assessment (they may later fail
// with 132015), and "paused", which Meta does not explain further, is taken
// to mean the same.
func held(messageStatus string) bool {
	return messageStatus == "held_for_quality_assessment" || messageStatus == "paused"
}

// Send posts m and returns its receipt: the wamid, whether Meta holds the
// message back (Receipt.Held) and how long the X-Business-Use-Case-Usage
// header asks to rest (Receipt.RestFor). Every error is a
// *campaign.SendError: an API answer is classified by its code (its Err is
// an *APIError), with the header's rest in RestFor when it asks for longer
// than the code; otherwise whether the request was written decides between
// NeverLeft (a safe retry) and Unanswered (in doubt).
func (c *Client) Send(ctx context.Context, m campaign.Message) (campaign.Receipt, error) {
	path, policy, err := c.endpoint()
	if err != nil {
		return campaign.Receipt{}, &campaign.SendError{Class: campaign.Fatal, Title: err.Error(), Err: err}
	}
	req := NewRequest(m, c.TemplateName, c.TemplateLang, c.Mapping)
	req.ProductPolicy = policy
	body, err := json.Marshal(req)
	if err != nil {
		return campaign.Receipt{}, neverLeft(fmt.Errorf("encode request: %w", err))
	}
	// Checked at import too; a checkpoint of an older release may hold
	// anything, and the ID becomes part of the path: escaped as well, as
	// every path segment built from data is (README, Safety).
	if err := CheckSender(m.From); err != nil {
		return campaign.Receipt{}, &campaign.SendError{Class: campaign.Permanent, Title: err.Error(), Err: err}
	}
	rc, rest, se := c.post(ctx, url.PathEscape(m.From)+"/"+path, body)
	if se != nil {
		se.RestFor = max(se.RestFor, rest)
		return campaign.Receipt{}, se
	}
	rc.RestFor = rest
	return rc, nil
}

// endpoint is the path Send posts to, after the phone-number ID, and the
// product_policy its body carries.
func (c *Client) endpoint() (path, policy string, err error) {
	switch c.API {
	case "", APIMessages:
		return "messages", "", nil
	case APIMarketing:
		switch c.ProductPolicy {
		case "", PolicyFallback, PolicyStrict:
			return "marketing_messages", c.ProductPolicy, nil
		}
		return "", "", fmt.Errorf("unknown product policy %q: want %s or %s", c.ProductPolicy, PolicyFallback, PolicyStrict)
	}
	return "", "", fmt.Errorf("unknown API %q: want %s or %s", c.API, APIMessages, APIMarketing)
}

// post sends body to path and reads the answer: a receipt, or a send
// error. rest is what the answer's X-Business-Use-Case-Usage header asks
// for, 0 without an answer.
func (c *Client) post(ctx context.Context, path string, body []byte) (rc campaign.Receipt, rest time.Duration, se *campaign.SendError) {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	var wrote atomic.Bool
	outer := ctx // WithDeparted's, without the trace
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				wrote.Store(true)
				campaign.Departed(outer, time.Now())
			}
		},
	})
	u := strings.TrimRight(c.BaseURL, "/") + "/" + url.PathEscape(c.Version) + "/" + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return rc, 0, neverLeft(fmt.Errorf("build request: %w", err))
	}
	req.Header = http.Header{"Content-Type": jsonType, "Authorization": {"Bearer " + c.Token}}
	resp, err := c.roundTrip(req)
	if err != nil {
		return rc, 0, c.transportError(err, wrote.Load())
	}
	defer resp.Body.Close()
	rest, _ = ParseUsage(resp.Header.Get(UsageHeader))
	buf := answers.Get().(*bytes.Buffer)
	defer answers.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, 1<<20)); err != nil {
		// The API answered but the answer was lost: it may have accepted.
		return rc, rest, unanswered(fmt.Errorf("read response: %w", scrub(err)))
	}
	var r response
	jerr := json.Unmarshal(buf.Bytes(), &r) // strings decoded are copies: buf may be reused
	if resp.StatusCode == http.StatusOK && jerr == nil && len(r.Messages) > 0 && r.Messages[0].ID != "" {
		return campaign.Receipt{ID: r.Messages[0].ID, Held: held(r.Messages[0].MessageStatus)}, rest, nil
	}
	if api := r.apiError(resp.StatusCode); jerr == nil && api != nil {
		return rc, rest, api.sendError()
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		// 200 without a wamid: accepted or not, we cannot tell.
		return rc, rest, unanswered(errors.New("HTTP 200 without a message id"))
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		// Not followed (roundTrip): every send would get the same answer.
		msg := fmt.Sprintf("%s: the API URL redirects to %q, and a send is never posted twice: set the API URL to where it points", http.StatusText(resp.StatusCode), resp.Header.Get("Location"))
		return rc, rest, (&APIError{HTTPStatus: resp.StatusCode, Message: msg}).sendError()
	case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode < 500:
		// Refused by a front end before processing.
		return rc, rest, (&APIError{HTTPStatus: resp.StatusCode, Message: http.StatusText(resp.StatusCode)}).sendError()
	default:
		// 500/502/504 without Meta's body: a gateway answered, the API may have accepted.
		return rc, rest, unanswered(fmt.Errorf("HTTP %d without an API error body", resp.StatusCode))
	}
}

func (c *Client) transportError(err error, wrote bool) *campaign.SendError {
	err = scrub(err)
	if wrote {
		return unanswered(err)
	}
	return neverLeft(fmt.Errorf("request not sent: %w", err))
}

// unanswered is a request that was written and got no answer: in doubt.
func unanswered(err error) *campaign.SendError {
	err = fmt.Errorf("%w: request sent, no answer: outcome unknown", err)
	return &campaign.SendError{Class: campaign.Unanswered, Title: err.Error(), Err: err}
}

func neverLeft(err error) *campaign.SendError {
	return &campaign.SendError{Class: campaign.NeverLeft, Title: err.Error(), Err: err}
}

// scrub drops the method and URL that net/http puts around its errors: the
// report names the row, and the error stays the same whatever the base URL.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
