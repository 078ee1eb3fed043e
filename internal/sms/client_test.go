package sms

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/sms/smstext"
)

var msg = campaign.Message{
	Row: 7, From: "+12065550100", To: "+447700900123",
	Params: []string{"Jessica", "WELCOME25"}, Ref: campaign.Ref{Campaign: "c1f3", Row: 7},
}

func text(t *testing.T) *smstext.Text {
	t.Helper()
	tx, err := smstext.New("Hi {{ Name }}, your code is {{code}}.", []string{"name", "code"})
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func sent(w http.ResponseWriter, _ *http.Request, op string, _ map[string]any) {
	if op != "SendTextMessage" {
		reply(w, 400, `{"__type":"UnknownOperationException"}`)
		return
	}
	reply(w, 200, `{"MessageId":"msg-0001"}`)
}

func TestSendWire(t *testing.T) {
	f := newFake(t, sent)
	c := newTestClient(t, f.srv.URL, 0)
	c.Text, c.MessageType, c.ConfigurationSet, c.MaxPrice, c.TTL = text(t), Transactional, "bulk-events", "0.05", 4*time.Hour+time.Millisecond
	rc, err := c.Send(context.Background(), msg)
	if err != nil || rc.ID != "msg-0001" {
		t.Fatalf("Send = %+v, %v", rc, err)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Target != "PinpointSMSVoiceV2.SendTextMessage" || r.ContentType != "application/x-amz-json-1.0" {
		t.Errorf("target %q content type %q", r.Target, r.ContentType)
	}
	// SigV4 with the service's signing name in the credential scope.
	if !strings.HasPrefix(r.Auth, "AWS4-HMAC-SHA256 Credential="+testKeyID+"/") || !strings.Contains(r.Auth, "/us-east-1/sms-voice/aws4_request") {
		t.Errorf("Authorization = %q", r.Auth)
	}
	want := map[string]any{
		"DestinationPhoneNumber": "+447700900123",
		"OriginationIdentity":    "+12065550100",
		"MessageBody":            "Hi Jessica, your code is WELCOME25.",
		"MessageType":            "TRANSACTIONAL",
		"ConfigurationSetName":   "bulk-events",
		"MaxPrice":               "0.05",
		"TimeToLive":             float64(14401), // rounded up to whole seconds
		"Context":                map[string]any{"bulksend": "c1f3:7"},
	}
	for k, v := range want {
		if got := r.Body[k]; !equalJSON(got, v) {
			t.Errorf("%s = %#v, want %#v", k, got, v)
		}
	}
	for k := range r.Body {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected field %s = %v", k, r.Body[k])
		}
	}
}

func equalJSON(a, b any) bool {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		if len(am) != len(bm) {
			return false
		}
		for k := range am {
			if am[k] != bm[k] {
				return false
			}
		}
		return true
	}
	return a == b
}

// TestSendOmitsUnset: fields left zero are not sent, so AWS applies the
// identity's and the account's defaults.
func TestSendOmitsUnset(t *testing.T) {
	f := newFake(t, sent)
	c := newTestClient(t, f.srv.URL, 0)
	c.Text = text(t)
	m := msg
	m.Ref = campaign.Ref{}
	if _, err := c.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	body := f.requests()[0].Body
	for _, k := range []string{"MessageType", "ConfigurationSetName", "MaxPrice", "TimeToLive", "Context"} {
		if v, ok := body[k]; ok {
			t.Errorf("%s sent as %v, want it left out", k, v)
		}
	}
}

func TestSendRefusesBadSettings(t *testing.T) {
	f := newFake(t, sent)
	for _, tc := range []struct {
		name string
		set  func(*Client)
	}{
		{"no text", func(c *Client) { c.Text = nil }},
		{"unknown message type", func(c *Client) { c.MessageType = "MARKETING" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, f.srv.URL, 0)
			c.Text = text(t)
			tc.set(c)
			_, err := c.Send(context.Background(), msg)
			var se *campaign.SendError
			if !errors.As(err, &se) || se.Class != campaign.Fatal {
				t.Fatalf("err = %v, want a Fatal *campaign.SendError", err)
			}
		})
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d requests sent with bad settings", n)
	}
}

// TestThrottleIsOneRequest: the SDK's retries are off, even when
// AWS_MAX_ATTEMPTS asks for more; the control shows the fake does count
// the retries a standard retryer makes.
func TestThrottleIsOneRequest(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ string, _ map[string]any) {
		reply(w, 400, `{"__type":"ThrottlingException","message":"Rate exceeded"}`)
	})
	c := newTestClient(t, f.srv.URL, 0)
	t.Setenv("AWS_MAX_ATTEMPTS", "5")
	t.Setenv("AWS_RETRY_MODE", "standard")
	c2, err := New(context.Background(), Options{Region: "us-east-1", EndpointURL: f.srv.URL, Credentials: static()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Client{c, c2} {
		c.Text = text(t)
		f.forget()
		_, err := c.Send(context.Background(), msg)
		var se *campaign.SendError
		if !errors.As(err, &se) || se.Class != campaign.Throttled || se.Title != "ThrottlingException" {
			t.Fatalf("err = %v, want Throttled", err)
		}
		if n := len(f.requests()); n != 1 {
			t.Fatalf("a throttled Send made %d requests, want exactly 1", n)
		}
	}

	f.forget()
	in, _ := c.input(msg)
	noWait := retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	c.api.SendTextMessage(context.Background(), in, func(o *pinpointsmsvoicev2.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.Backoff = noWait })
	})
	if n := len(f.requests()); n != 3 {
		t.Fatalf("control: the standard retryer made %d requests, want 3", n)
	}
}

func TestSendTransport(t *testing.T) {
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		u := "http://" + l.Addr().String()
		l.Close()
		return u
	}()
	dnsFails := &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.DNSError{Err: "no such host", Name: "sms-voice.example", IsNotFound: true}
	}}}
	connectHangs := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}}
	for _, tc := range []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request, op string, body map[string]any)
		url     string // "" the fake's
		hc      *http.Client
		ctx     func() context.Context
		want    campaign.Class
		title   string
		// answered: an answer came, and it may come before the transport
		// reports the request written, or reports it failed (the send's
		// context ends as Send returns): the report may be missing.
		answered bool
	}{
		{name: "timeout after the request left", handler: func(w http.ResponseWriter, r *http.Request, _ string, _ map[string]any) {
			<-r.Context().Done()
		}, want: campaign.Unanswered, title: "no answer: timeout"},
		{name: "connection dropped after the request left", handler: func(w http.ResponseWriter, r *http.Request, _ string, _ map[string]any) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}, want: campaign.Unanswered, title: "no answer: connection lost"},
		{name: "answer cut in the middle", handler: func(w http.ResponseWriter, r *http.Request, _ string, _ map[string]any) {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(200)
			io.WriteString(w, `{"MessageId":`)
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}, want: campaign.Unanswered, answered: true},
		{name: "200 without a MessageId", handler: func(w http.ResponseWriter, _ *http.Request, _ string, _ map[string]any) {
			reply(w, 200, `{}`)
		}, want: campaign.Unanswered, title: "answer without a MessageId", answered: true},
		{name: "200 that is not JSON", handler: func(w http.ResponseWriter, _ *http.Request, _ string, _ map[string]any) {
			reply(w, 200, `<html>`)
		}, want: campaign.Unanswered, title: "HTTP 200", answered: true},
		{name: "closed port", url: closed, want: campaign.NeverLeft, title: "request not sent"},
		{name: "timeout before the request left", hc: connectHangs, want: campaign.NeverLeft, title: "request not sent"},
		{name: "DNS failure", hc: dnsFails, want: campaign.NeverLeft, title: "request not sent"},
		{name: "interrupted before sending", ctx: func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, want: campaign.NeverLeft, title: "request not sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.handler
			if h == nil {
				h = sent
			}
			f := newFake(t, h)
			url := tc.url
			if url == "" {
				url = f.srv.URL
			}
			isolate(t)
			c, err := New(context.Background(), Options{Region: "us-east-1", EndpointURL: url, Credentials: static(), Timeout: 200 * time.Millisecond, HTTPClient: tc.hc})
			if err != nil {
				t.Fatal(err)
			}
			c.Text = text(t)
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx()
			}
			told := make(chan time.Time, 4)
			ctx = campaign.WithDeparted(ctx, func(at time.Time) { told <- at })
			_, err = c.Send(ctx, msg)
			var se *campaign.SendError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *campaign.SendError", err)
			}
			// The engine paces by when a request was written: one that
			// never left says nothing, one that left with no answer says
			// so once, one answered at most once (the engine ignores a
			// report after the answer).
			switch {
			case tc.want == campaign.NeverLeft:
				if n := len(told); n != 0 {
					t.Errorf("told written %d times (%v), want none", n, se.Class)
				}
			case tc.answered:
				time.Sleep(10 * time.Millisecond)
				if n := len(told); n > 1 {
					t.Errorf("told written %d times (%v), want at most once", n, se.Class)
				}
			default:
				toldOnce(t, told)
			}
			if se.Class != tc.want || tc.title != "" && se.Title != tc.title {
				t.Fatalf("class %v title %q, want %v %q (%v)", se.Class, se.Title, tc.want, tc.title, err)
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Fatalf("error leaks the secret key: %v", err)
			}
		})
	}
}

// TestSendTellsWhenWritten: an accepted Send tells the engine when its
// request was written (campaign.Departed), once, before the answer.
func TestSendTellsWhenWritten(t *testing.T) {
	const think = 50 * time.Millisecond
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, op string, body map[string]any) {
		time.Sleep(think)
		sent(w, r, op, body)
	})
	c := newTestClient(t, f.srv.URL, 0)
	c.Text = text(t)
	told := make(chan time.Time, 4)
	ctx := campaign.WithDeparted(context.Background(), func(at time.Time) { told <- at })
	start := time.Now()
	if _, err := c.Send(ctx, msg); err != nil {
		t.Fatal(err)
	}
	answered := time.Now()
	if at := toldOnce(t, told); at.Before(start) || at.After(answered.Add(-think)) {
		t.Fatalf("told written %v after the send began; the answer came %v after it, the server took %v", at.Sub(start), answered.Sub(start), think)
	}
}

// toldOnce waits for the report of a request written (campaign.Departed):
// the transport makes it on a goroutine of its own, and it may come after
// the answer. It fails t if none comes within a second, or more than one.
func toldOnce(t *testing.T, told <-chan time.Time) time.Time {
	t.Helper()
	select {
	case at := <-told:
		if n := len(told); n != 0 {
			t.Errorf("told written %d more times", n)
		}
		return at
	case <-time.After(time.Second):
		t.Fatal("never told written")
		return time.Time{}
	}
}

// TestCredentialFailureIsFatal: a chain that fails stops the run before
// any request leaves (not NeverLeft, which would retry every row).
func TestCredentialFailureIsFatal(t *testing.T) {
	f := newFake(t, sent)
	isolate(t)
	broken := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("the SSO token is gone")
	})
	c, err := New(context.Background(), Options{Region: "us-east-1", EndpointURL: f.srv.URL, Credentials: broken})
	if err != nil {
		t.Fatal(err)
	}
	c.Text = text(t)
	_, err = c.Send(context.Background(), msg)
	var se *campaign.SendError
	var ce *CredentialsError
	if !errors.As(err, &se) || se.Class != campaign.Fatal || !errors.As(err, &ce) || ce.Hint() == "" {
		t.Fatalf("err = %v, want Fatal with a *CredentialsError and a hint", err)
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d requests left without credentials", n)
	}
	if err := c.CheckCredentials(context.Background()); !errors.As(err, &ce) {
		t.Fatalf("CheckCredentials = %v, want a *CredentialsError", err)
	}
}

// TestCheckCredentialsEmptyChain: nothing in the environment, no files,
// no EC2 metadata: the standard chain finds nothing, and says what to do.
func TestCheckCredentialsEmptyChain(t *testing.T) {
	isolate(t)
	c, err := New(context.Background(), Options{Region: "us-east-1", EndpointURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckCredentials(context.Background())
	var ce *CredentialsError
	if !errors.As(err, &ce) {
		t.Fatalf("CheckCredentials = %v, want a *CredentialsError", err)
	}
	t.Logf("%v\nhint: %s", err, ce.Hint())
	for _, want := range []string{"aws sso login", "AWS_PROFILE", "AWS_ACCESS_KEY_ID"} {
		if !strings.Contains(ce.Hint(), want) {
			t.Errorf("hint %q does not mention %s", ce.Hint(), want)
		}
	}
}

func TestCheckCredentials(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", 0)
	if err := c.CheckCredentials(context.Background()); err != nil {
		t.Fatalf("CheckCredentials with static keys = %v", err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFROMENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", testSecret)
	c, err := New(context.Background(), Options{Region: "us-east-1", EndpointURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckCredentials(context.Background()); err != nil {
		t.Fatalf("CheckCredentials with keys in the environment = %v", err)
	}
}

// TestNewRegionAndEndpoint: region and endpoint come from Options, else
// from the AWS environment; no region at all is an error naming the fix.
func TestNewRegionAndEndpoint(t *testing.T) {
	f := newFake(t, sent)
	isolate(t)
	if _, err := New(context.Background(), Options{Credentials: static()}); !errors.Is(err, ErrNoRegion) {
		t.Fatalf("New without a region = %v, want ErrNoRegion", err)
	}
	if !strings.Contains(ErrNoRegion.Error(), "region") || strings.Contains(ErrNoRegion.Error(), "--") {
		t.Fatalf("ErrNoRegion = %q: want it to say the region is missing, naming no flag (the CLI does)", ErrNoRegion)
	}

	t.Setenv("AWS_REGION", "eu-west-2")
	t.Setenv("AWS_ENDPOINT_URL_PINPOINT_SMS_VOICE_V2", f.srv.URL)
	c, err := New(context.Background(), Options{Credentials: static()})
	if err != nil {
		t.Fatal(err)
	}
	c.Text = text(t)
	if _, err := c.Send(context.Background(), msg); err != nil {
		t.Fatalf("Send through AWS_ENDPOINT_URL_PINPOINT_SMS_VOICE_V2 = %v", err)
	}
	if r := f.requests(); len(r) != 1 || !strings.Contains(r[0].Auth, "/eu-west-2/sms-voice/") {
		t.Fatalf("requests %+v, want one signed for eu-west-2", r)
	}

	t.Setenv("AWS_ENDPOINT_URL_PINPOINT_SMS_VOICE_V2", "http://127.0.0.1:1")
	c, err = New(context.Background(), Options{Region: "ap-southeast-2", EndpointURL: f.srv.URL, Credentials: static()})
	if err != nil {
		t.Fatal(err)
	}
	c.Text = text(t)
	f.setHandler(sent)
	if _, err := c.Send(context.Background(), msg); err != nil {
		t.Fatalf("Send through Options.EndpointURL = %v", err)
	}
	if r := f.requests(); len(r) != 1 || !strings.Contains(r[0].Auth, "/ap-southeast-2/sms-voice/") {
		t.Fatalf("requests %+v, want one signed for ap-southeast-2", r)
	}
}

// TestCredentialRefreshAnswer: a credential refresh that STS or SSO answers
// with an HTTP error (503, 429, 401) wraps that answer; it is not AWS
// SMS's answer to the send, which never left: the run stops (Fatal, with
// the credentials hint), the row is neither in doubt nor throttled.
func TestCredentialRefreshAnswer(t *testing.T) {
	for _, status := range []int{503, 429, 401} {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request, op string, body map[string]any) {
			reply(w, 200, `{"MessageId":"m1"}`)
		})
		isolate(t)
		refresh := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, &smithy.OperationError{ServiceID: "STS", OperationName: "AssumeRole",
				Err: &awshttp.ResponseError{RequestID: "sts-1", ResponseError: &smithyhttp.ResponseError{
					Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}}, Err: errors.New("refresh failed")}}}
		})
		c, err := New(context.Background(), Options{Region: "us-east-1", EndpointURL: f.srv.URL, Credentials: refresh, Timeout: time.Second, MaxConns: 1})
		if err != nil {
			t.Fatal(err)
		}
		c.Text = text(t)
		_, err = c.Send(context.Background(), msg)
		var se *campaign.SendError
		var ce *CredentialsError
		if !errors.As(err, &se) || se.Class != campaign.Fatal || !errors.As(err, &ce) || ce.Hint() == "" {
			t.Errorf("refresh answered %d: %v (%T), want a fatal credentials error with a hint", status, err, err)
		}
		if n := len(f.requests()); n != 0 {
			t.Errorf("refresh answered %d: %d requests reached AWS SMS, want 0", status, n)
		}
	}
}
