// Package whatsapp is the Cloud API client: it turns a campaign.Message into
// the wire request Meta documents, and Meta's answers into a wamid or a
// *campaign.SendError classified by Meta's error-code table (errors.go).
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
	"sync/atomic"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/template"
)

// DefaultVersion is the Graph API version put in the path.
const DefaultVersion = "v23.0"

// Client sends template messages. It is safe for concurrent use; its
// fields must not change after the first Send.
type Client struct {
	BaseURL string // e.g. https://graph.facebook.com
	Version string // e.g. v23.0
	Token   string // never logged, never part of an error
	HTTP    *http.Client
	Timeout time.Duration // per request; 0 means none beyond ctx
	// Mapping fills the template from a message's Params; nil sends the
	// Params as the body's positional parameters.
	Mapping *template.Mapping
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
// TemplateMessage schema describes it.
type Request struct {
	MessagingProduct string   `json:"messaging_product"`
	RecipientType    string   `json:"recipient_type"`
	To               string   `json:"to"`
	Type             string   `json:"type"`
	CallbackData     string   `json:"biz_opaque_callback_data,omitempty"`
	Template         Template `json:"template"`
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

// NewRequest builds the wire request for m, its template filled by mp
// (nil: m.Params are the body's positional parameters).
func NewRequest(m campaign.Message, mp *template.Mapping) Request {
	r := Request{
		MessagingProduct: "whatsapp",
		RecipientType:    "individual",
		To:               m.To,
		Type:             "template",
		CallbackData:     m.CallbackData,
		Template: Template{
			Name:     m.Template,
			Language: Language{Policy: "deterministic", Code: m.Lang},
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

// Send posts m and returns its wamid. Every error is a
// *campaign.SendError: an API answer is classified by its code (its Err is
// an *APIError); otherwise whether the request was written decides between
// NeverLeft (a safe retry) and Unanswered (in doubt).
func (c *Client) Send(ctx context.Context, m campaign.Message) (campaign.Receipt, error) {
	id, err := c.send(ctx, m)
	return campaign.Receipt{ID: id}, err
}

func (c *Client) send(ctx context.Context, m campaign.Message) (string, error) {
	body, err := json.Marshal(NewRequest(m, c.Mapping))
	if err != nil {
		return "", neverLeft(fmt.Errorf("encode request: %w", err))
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				wrote.Store(true)
			}
		},
	})
	url := strings.TrimRight(c.BaseURL, "/") + "/" + c.Version + "/" + m.From + "/messages"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", neverLeft(fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", c.transportError(err, wrote.Load())
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		// The API answered but the answer was lost: it may have accepted.
		return "", unanswered(fmt.Errorf("read response: %w", scrub(err)))
	}
	var r response
	jerr := json.Unmarshal(raw, &r)
	if resp.StatusCode == http.StatusOK && jerr == nil && len(r.Messages) > 0 && r.Messages[0].ID != "" {
		return r.Messages[0].ID, nil
	}
	if jerr == nil && r.Error != nil {
		return "", (&APIError{
			HTTPStatus: resp.StatusCode,
			Code:       r.Error.Code,
			Type:       r.Error.Type,
			Message:    r.Error.Message,
			Details:    r.Error.ErrorData.Details,
			TraceID:    r.Error.TraceID,
		}).sendError()
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		// 200 without a wamid: accepted or not, we cannot tell.
		return "", unanswered(errors.New("HTTP 200 without a message id"))
	case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode < 500:
		// Refused by a front end before processing.
		return "", (&APIError{HTTPStatus: resp.StatusCode, Message: http.StatusText(resp.StatusCode)}).sendError()
	default:
		// 500/502/504 without Meta's body: a gateway answered, the API may have accepted.
		return "", unanswered(fmt.Errorf("HTTP %d without an API error body", resp.StatusCode))
	}
}

func (c *Client) transportError(err error, wrote bool) error {
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
