package sms

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Test credentials: the secret must never appear in an error.
const (
	testKeyID  = "AKIDBULKSENDTEST"
	testSecret = "s3cr3t-never-printed"
)

// isolate empties the AWS environment, so that nothing of the machine's
// (a profile, a region, an endpoint, EC2 metadata) reaches a test and no
// test leaves 127.0.0.1.
func isolate(t *testing.T) {
	t.Helper()
	for _, k := range []string{
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
		"AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE",
	} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	// The SDK reads these with LookupEnv: set, even empty, they count.
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_PINPOINT_SMS_VOICE_V2"} {
		t.Setenv(k, "")
		if err := os.Unsetenv(k); err != nil {
			t.Fatal(err)
		}
	}
}

// seen is one request the fake received.
type seen struct {
	Target, ContentType, Auth string
	Body                      map[string]any
}

// fake is an AWS End User Messaging SMS endpoint on 127.0.0.1 speaking
// awsJson1_0: handle answers each request by its X-Amz-Target operation
// (e.g. "SendTextMessage") and decoded body.
type fake struct {
	srv *httptest.Server

	mu     sync.Mutex
	seen   []seen
	handle func(w http.ResponseWriter, r *http.Request, op string, body map[string]any)
}

func newFake(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, op string, body map[string]any)) *fake {
	f := &fake{handle: handle}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(raw, &body)
		s := seen{Target: r.Header.Get("X-Amz-Target"), ContentType: r.Header.Get("Content-Type"), Auth: r.Header.Get("Authorization"), Body: body}
		f.mu.Lock()
		f.seen = append(f.seen, s)
		h := f.handle
		f.mu.Unlock()
		op, ok := strings.CutPrefix(s.Target, "PinpointSMSVoiceV2.")
		if r.Method != http.MethodPost || r.URL.Path != "/" || !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		h(w, r, op, body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.seen...)
}

func (f *fake) setHandler(h func(w http.ResponseWriter, r *http.Request, op string, body map[string]any)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handle, f.seen = h, nil
}

// forget drops the requests seen so far.
func (f *fake) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = nil
}

// reply writes an awsJson1_0 answer.
func reply(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-RequestId", "req-1234")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func static() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(testKeyID, testSecret, "")
}

// newTestClient is a client of f with static credentials in us-east-1,
// whose reads retry without waiting.
func newTestClient(t *testing.T, url string, timeout time.Duration) *Client {
	t.Helper()
	isolate(t)
	c, err := New(context.Background(), Options{Region: "us-east-1", EndpointURL: url, Credentials: static(), Timeout: timeout, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	c.reads = retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = readAttempts
		so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
	return c
}
