package snsreceive_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/sms/smsevent"
	"github.com/bulksend/bulksend/internal/sms/smssandbox"
	"github.com/bulksend/bulksend/internal/sms/snsreceive"
	"github.com/bulksend/bulksend/internal/sms/snsverify"
)

const (
	topic = smssandbox.SNSTopicArn
	other = "arn:aws:sns:us-east-1:111122223333:someone-elses-topic"
	event = `{"eventType":"TEXT_DELIVERED","eventVersion":"1.0","eventTimestamp":1796032802950,"isFinal":true,"messageId":"m1","originationPhoneNumber":"+12065550152","context":{"bulksend":"spring-2026:1"}}`
)

// fileKeeper appends each body to a file and fsyncs it, as the
// receiver's log does; fail makes it fail.
type fileKeeper struct {
	mu   sync.Mutex
	f    *os.File
	fail atomic.Bool
}

func (k *fileKeeper) Keep(b []byte) error {
	if k.fail.Load() {
		return errors.New("disk full")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, err := k.f.Write(append(bytes.Clone(b), '\n')); err != nil {
		return err
	}
	return k.f.Sync()
}

// snsServer stands in for sns.<region>.amazonaws.com on 127.0.0.1: it
// counts the ConfirmSubscription GETs it is sent.
type snsServer struct {
	srv    *httptest.Server
	gets   atomic.Int64
	status atomic.Int64
}

func newSNSServer(t *testing.T) *snsServer {
	s := &snsServer{}
	s.status.Store(http.StatusOK)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("Action") != "ConfirmSubscription" {
			t.Errorf("GET %s", r.URL)
		}
		s.gets.Add(1)
		w.WriteHeader(int(s.status.Load()))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// client sends every request to the test's SNS server, whatever its URL.
func (s *snsServer) client() *http.Client {
	target, _ := url.Parse(s.srv.URL)
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = target.Scheme, target.Host
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type fixture struct {
	url    string
	h      *snsreceive.Handler
	keeper *fileKeeper
	sns    *snsServer
	log    string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	v := snsverify.New(snsverify.Options{Client: &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		t.Errorf("certificate fetched: %s", r.URL)
		return nil, errors.New("no network in tests")
	})}})
	if err := snsverify.Trust(v, smssandbox.SNSCertURL, smssandbox.Signer().Certificate()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kept.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fx := &fixture{keeper: &fileKeeper{f: f}, sns: newSNSServer(t), log: path}
	fx.h, err = snsreceive.New(snsreceive.Config{Topics: []string{topic}, Verifier: v, Keeper: fx.keeper, Client: fx.sns.client()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fx.h)
	t.Cleanup(srv.Close)
	fx.url = srv.URL
	return fx
}

func (fx *fixture) post(t *testing.T, body []byte, typ string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, fx.url+"/sns", bytes.NewReader(body))
	req.Header.Set("Content-Type", "text/plain; charset=UTF-8")
	if typ != "" {
		req.Header.Set(snsreceive.TypeHeader, typ)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

var at = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

const subscribeURL = "https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=" + topic + "&Token=t1"

// TestConfirm: a subscription of a topic named is confirmed by a GET of
// its SubscribeURL; one of a topic not named, or whose SubscribeURL is off
// SNS's domain or in another region, is not, and nothing is fetched.
func TestConfirm(t *testing.T) {
	sns := smssandbox.Signer()
	for _, tc := range []struct {
		name   string
		body   []byte
		code   int
		gets   int64
		status int // the SNS server's answer
		check  func(snsreceive.Stats) bool
	}{
		{"named topic", sns.Confirmation(snsverify.TypeSubscriptionConfirmation, topic, subscribeURL, "t1", at, "1"), 200, 1, 200,
			func(s snsreceive.Stats) bool { return s.Confirmed == 1 }},
		{"named topic v2", sns.Confirmation(snsverify.TypeSubscriptionConfirmation, topic, subscribeURL, "t1", at, "2"), 200, 1, 200,
			func(s snsreceive.Stats) bool { return s.Confirmed == 1 }},
		{"unnamed topic", sns.Confirmation(snsverify.TypeSubscriptionConfirmation, other, strings.Replace(subscribeURL, topic, other, 1), "t1", at, "2"), 403, 0, 200,
			func(s snsreceive.Stats) bool { return s.UnknownTopic == 1 && s.Confirmed == 0 }},
		{"SubscribeURL off SNS's domain", sns.Confirmation(snsverify.TypeSubscriptionConfirmation, topic, "https://evil.example/?Action=ConfirmSubscription", "t1", at, "2"), 403, 0, 200,
			func(s snsreceive.Stats) bool { return s.ConfirmFailed == 1 }},
		{"SubscribeURL over http", sns.Confirmation(snsverify.TypeSubscriptionConfirmation, topic, strings.Replace(subscribeURL, "https", "http", 1), "t1", at, "2"), 403, 0, 200,
			func(s snsreceive.Stats) bool { return s.ConfirmFailed == 1 }},
		{"SubscribeURL in another region", sns.Confirmation(snsverify.TypeSubscriptionConfirmation, topic, strings.Replace(subscribeURL, "us-east-1.amazonaws", "eu-west-1.amazonaws", 1), "t1", at, "2"), 403, 0, 200,
			func(s snsreceive.Stats) bool { return s.ConfirmFailed == 1 }},
		{"ConfirmSubscription refused", sns.Confirmation(snsverify.TypeSubscriptionConfirmation, topic, subscribeURL, "t1", at, "2"), 502, 1, 404,
			func(s snsreceive.Stats) bool { return s.ConfirmFailed == 1 }},
		{"confirmation tampered", bytes.Replace(sns.Confirmation(snsverify.TypeSubscriptionConfirmation, topic, subscribeURL, "t1", at, "2"), []byte("Token=t1"), []byte("Token=t2"), 1), 403, 0, 200,
			func(s snsreceive.Stats) bool { return s.BadSignature == 1 }},
		{"unsubscribed", sns.Confirmation(snsverify.TypeUnsubscribeConfirmation, topic, subscribeURL, "t1", at, "2"), 200, 0, 200,
			func(s snsreceive.Stats) bool { return s.Unsubscribed == 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.sns.status.Store(int64(tc.status))
			if code := fx.post(t, tc.body, ""); code != tc.code {
				t.Errorf("answered %d, want %d", code, tc.code)
			}
			if n := fx.sns.gets.Load(); n != tc.gets {
				t.Errorf("%d GETs of the SubscribeURL, want %d", n, tc.gets)
			}
			if s := fx.h.Stats(); !tc.check(s) || s.Kept != 0 {
				t.Errorf("stats %+v", s)
			}
			if b, _ := os.ReadFile(fx.log); len(b) != 0 {
				t.Errorf("kept %q", b)
			}
		})
	}
}

// TestNotifications: notifications signed with versions 1 and 2 are
// kept and read back as events by the reader reconcile uses; unsigned,
// wrongly signed, of another topic, not SNS, or arriving while the keeper
// fails, they are refused, counted and not kept.
func TestNotifications(t *testing.T) {
	fx := newFixture(t)
	sns := smssandbox.Signer()
	unsigned := []byte(`{"Type":"Notification","MessageId":"x","TopicArn":"` + topic + `","Message":` + quote(event) + `,"Timestamp":"2026-11-30T10:00:00.000Z"}`)
	for _, tc := range []struct {
		name string
		body []byte
		typ  string
		code int
	}{
		{"v1", sns.Notification(topic, event, at, "1"), "Notification", 200},
		{"v2", sns.Notification(topic, event, at, "2"), "Notification", 200},
		{"v2, no type header", sns.Notification(topic, event, at, "2"), "", 200},
		{"unsigned", unsigned, "Notification", 401},
		{"tampered", bytes.Replace(sns.Notification(topic, event, at, "2"), []byte("TEXT_DELIVERED"), []byte("TEXT_BLOCKED"), 1), "Notification", 403},
		{"another topic", sns.Notification(other, event, at, "2"), "Notification", 403},
		{"type header disagrees", sns.Notification(topic, event, at, "2"), "SubscriptionConfirmation", 400},
		{"not SNS", []byte(event), "Notification", 400},
		{"not JSON", []byte("STOP"), "Notification", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code := fx.post(t, tc.body, tc.typ); code != tc.code {
				t.Errorf("answered %d, want %d", code, tc.code)
			}
		})
	}
	fx.keeper.fail.Store(true)
	if code := fx.post(t, sns.Notification(topic, event, at, "2"), "Notification"); code != http.StatusServiceUnavailable {
		t.Errorf("keeper failing: answered %d, want 503", code)
	}
	resp, err := http.Get(fx.url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", resp.StatusCode)
	}

	want := snsreceive.Stats{Received: 10, Kept: 3, Unsigned: 1, BadSignature: 1, UnknownTopic: 1, NotSNS: 3, Unkept: 1, MethodRefused: 1}
	if s := fx.h.Stats(); s != want {
		t.Errorf("stats\n got %+v\nwant %+v", s, want)
	}
	f, err := os.Open(fx.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := smsevent.NewReader(f)
	n := 0
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.MessageID != "m1" || ev.Type != "TEXT_DELIVERED" {
			t.Errorf("kept %+v", ev)
		}
		n++
	}
	if n != 3 {
		t.Errorf("%d events kept, want 3", n)
	}
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// TestNewRefuses: no topic, or a topic that is not an ARN.
func TestNewRefuses(t *testing.T) {
	v := snsverify.New(snsverify.Options{})
	k := &fileKeeper{}
	for _, topics := range [][]string{nil, {"sms-events"}, {"arn:aws:sqs:us-east-1:1:q"}, {"arn:aws:sns::1:t"}} {
		if _, err := snsreceive.New(snsreceive.Config{Topics: topics, Verifier: v, Keeper: k}); err == nil {
			t.Errorf("New with topics %q: no error", topics)
		}
	}
}
