package snsverify_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/sms/snsverify"
)

const certURL = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-9c6465fa7f48f5cacd23014631ec1136.pem"

// signer is a test's SNS: a key and its self-signed certificate.
type signer struct {
	key  *rsa.PrivateKey
	cert *x509.Certificate
	pem  []byte
}

func newSigner(t testing.TB, notBefore, notAfter time.Time) *signer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sns.amazonaws.com"},
		NotBefore: notBefore, NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &signer{key: key, cert: cert, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// sign signs m with version 1 or 2, over the canonical string written
// out here from AWS's documentation (not snsverify's).
func (s *signer) sign(t testing.TB, m snsverify.Message, version string) snsverify.Message {
	t.Helper()
	var keys []string
	if m.Type == snsverify.TypeNotification {
		keys = []string{"Message", m.Message, "MessageId", m.MessageID}
		if m.Subject != "" {
			keys = append(keys, "Subject", m.Subject)
		}
		keys = append(keys, "Timestamp", m.Timestamp, "TopicArn", m.TopicArn, "Type", m.Type)
	} else {
		keys = []string{"Message", m.Message, "MessageId", m.MessageID, "SubscribeURL", m.SubscribeURL,
			"Timestamp", m.Timestamp, "Token", m.Token, "TopicArn", m.TopicArn, "Type", m.Type}
	}
	str := strings.Join(keys, "\n") + "\n"
	var sig []byte
	var err error
	if version == "1" {
		d := sha1.Sum([]byte(str))
		sig, err = rsa.SignPKCS1v15(rand.Reader, s.key, crypto.SHA1, d[:])
	} else {
		d := sha256.Sum256([]byte(str))
		sig, err = rsa.SignPKCS1v15(rand.Reader, s.key, crypto.SHA256, d[:])
	}
	if err != nil {
		t.Fatal(err)
	}
	m.SignatureVersion, m.Signature, m.SigningCertURL = version, base64.StdEncoding.EncodeToString(sig), certURL
	return m
}

func notification() snsverify.Message {
	return snsverify.Message{
		Type: snsverify.TypeNotification, MessageID: "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf300",
		TopicArn:  "arn:aws:sns:us-east-1:123456789012:sms-events",
		Message:   `{"eventType":"TEXT_DELIVERED","messageId":"m1","eventTimestamp":1796032800310}`,
		Timestamp: "2026-11-30T10:00:02.950Z", UnsubscribeURL: "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
	}
}

func confirmation(typ string) snsverify.Message {
	return snsverify.Message{
		Type: typ, MessageID: "165545c9-2a5c-472c-8df2-7ff2be2b3b1b", Token: "2336412f37fb687f5d51e6e2425e1b4d",
		TopicArn: "arn:aws:sns:us-east-1:123456789012:sms-events", Message: "You have chosen to subscribe to the topic.",
		SubscribeURL: "https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&Token=2336412f37fb687f5d51e6e2425e1b4d",
		Timestamp:    "2026-11-30T09:58:12.107Z",
	}
}

// noFetch is a client that fails the test if the verifier fetches.
func noFetch(t *testing.T) *http.Client {
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		t.Errorf("fetched %s", r.URL)
		return nil, errors.New("no network in tests")
	})}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var clock = func() time.Time { return time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC) }

// TestVerify: messages of each Type signed with versions 1 and 2 verify;
// signed by another key, tampered with, unsigned, of another version, or
// naming a certificate off SNS's domain, they do not.
func TestVerify(t *testing.T) {
	now := clock()
	s := newSigner(t, now.Add(-time.Hour), now.Add(time.Hour))
	other := newSigner(t, now.Add(-time.Hour), now.Add(time.Hour))
	v := snsverify.New(snsverify.Options{Client: noFetch(t), Now: clock})
	if err := snsverify.Trust(v, certURL, s.cert); err != nil {
		t.Fatal(err)
	}
	withSubject := notification()
	withSubject.Subject = "SMS event"
	for _, tc := range []struct {
		name string
		m    snsverify.Message
		want error
	}{
		{"notification v1", s.sign(t, notification(), "1"), nil},
		{"notification v2", s.sign(t, notification(), "2"), nil},
		{"notification with a subject v2", s.sign(t, withSubject, "2"), nil},
		{"subscription confirmation v1", s.sign(t, confirmation(snsverify.TypeSubscriptionConfirmation), "1"), nil},
		{"unsubscribe confirmation v2", s.sign(t, confirmation(snsverify.TypeUnsubscribeConfirmation), "2"), nil},

		{"another key v1", other.sign(t, notification(), "1"), snsverify.ErrBadSignature},
		{"another key v2", other.sign(t, notification(), "2"), snsverify.ErrBadSignature},
		{"message tampered", tamper(s.sign(t, notification(), "2"), func(m *snsverify.Message) { m.Message = strings.Replace(m.Message, "DELIVERED", "FAILED", 1) }), snsverify.ErrBadSignature},
		{"subject added", tamper(s.sign(t, notification(), "2"), func(m *snsverify.Message) { m.Subject = "x" }), snsverify.ErrBadSignature},
		{"topic tampered", tamper(s.sign(t, notification(), "1"), func(m *snsverify.Message) { m.TopicArn += "2" }), snsverify.ErrBadSignature},
		{"subscribe URL tampered", tamper(s.sign(t, confirmation(snsverify.TypeSubscriptionConfirmation), "2"), func(m *snsverify.Message) {
			m.SubscribeURL = "https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&Token=other"
		}), snsverify.ErrBadSignature},
		{"type changed", tamper(s.sign(t, confirmation(snsverify.TypeSubscriptionConfirmation), "2"), func(m *snsverify.Message) { m.Type = snsverify.TypeUnsubscribeConfirmation }), snsverify.ErrBadSignature},
		{"v1 signature called v2", tamper(s.sign(t, notification(), "1"), func(m *snsverify.Message) { m.SignatureVersion = "2" }), snsverify.ErrBadSignature},
		{"signature not base64", tamper(s.sign(t, notification(), "2"), func(m *snsverify.Message) { m.Signature = "!!" }), snsverify.ErrBadSignature},
		{"unsigned", notification(), snsverify.ErrUnsigned},
		{"no certificate URL", tamper(s.sign(t, notification(), "2"), func(m *snsverify.Message) { m.SigningCertURL = "" }), snsverify.ErrUnsigned},
		{"version 3", tamper(s.sign(t, notification(), "2"), func(m *snsverify.Message) { m.SignatureVersion = "3" }), snsverify.ErrVersion},
		{"certificate off AWS's domain", tamper(s.sign(t, notification(), "2"), func(m *snsverify.Message) {
			m.SigningCertURL = "https://sns.us-east-1.amazonaws.com.evil.example/SimpleNotificationService-1.pem"
		}), snsverify.ErrCertURL},
		{"certificate over http", tamper(s.sign(t, notification(), "2"), func(m *snsverify.Message) { m.SigningCertURL = strings.Replace(certURL, "https", "http", 1) }), snsverify.ErrCertURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := v.Verify(context.Background(), tc.m)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Verify: %v, want %v", err, tc.want)
			}
		})
	}
}

func tamper(m snsverify.Message, f func(*snsverify.Message)) snsverify.Message { f(&m); return m }

// TestCheckCertURL: only https://sns.<region>.amazonaws.com/….pem.
func TestCheckCertURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{certURL, true},
		{"https://sns.eu-west-3.amazonaws.com/SimpleNotificationService-1.pem", true},
		{"https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-1.pem", true},
		{"https://sns.us-gov-west-1.amazonaws.com/SimpleNotificationService-1.pem", true},
		{"http://sns.us-east-1.amazonaws.com/SimpleNotificationService-1.pem", false},
		{"https://sns.us-east-1.amazonaws.com:443/SimpleNotificationService-1.pem", false},
		{"https://sns.us-east-1.amazonaws.com:8443/SimpleNotificationService-1.pem", false},
		{"https://sns.us-east-1.amazonaws.com:/SimpleNotificationService-1.pem", false},
		{"https://user@sns.us-east-1.amazonaws.com/SimpleNotificationService-1.pem", false},
		{"https://user:pw@sns.us-east-1.amazonaws.com/SimpleNotificationService-1.pem", false},
		{"https://sns.us-east-1.amazonaws.com.evil.example/SimpleNotificationService-1.pem", false},
		{"https://evil.example/sns.us-east-1.amazonaws.com/SimpleNotificationService-1.pem", false},
		{"https://sns.amazonaws.com/SimpleNotificationService-1.pem", false},
		{"https://s3.us-east-1.amazonaws.com/SimpleNotificationService-1.pem", false},
		{"https://sns.us-east-1.amazonaws.com/SimpleNotificationService-1.pem?x=1", false},
		{"https://sns.us-east-1.amazonaws.com/SimpleNotificationService-1.pem#x", false},
		{"https://sns.us-east-1.amazonaws.com/SimpleNotificationService-1.crt", false},
		{"https://SNS.US-EAST-1.AMAZONAWS.COM/SimpleNotificationService-1.pem", false},
		{"https://sns.us_east_1.amazonaws.com/SimpleNotificationService-1.pem", false},
		{"https://127.0.0.1/SimpleNotificationService-1.pem", false},
		{"//sns.us-east-1.amazonaws.com/SimpleNotificationService-1.pem", false},
		{"", false},
	} {
		_, err := snsverify.CheckCertURL(tc.url)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, snsverify.ErrCertURL) {
			t.Errorf("CheckCertURL(%q): %v, want ok %v", tc.url, err, tc.ok)
		}
	}
}

// TestFetch: a certificate is fetched from its URL once and kept; a
// failed fetch is not kept; an expired certificate and a redirect are
// refused.
func TestFetch(t *testing.T) {
	now := clock()
	s := newSigner(t, now.Add(-time.Hour), now.Add(time.Hour))
	expired := newSigner(t, now.Add(-2*time.Hour), now.Add(-time.Hour))
	var fetches atomic.Int64
	serve := s.pem
	status := http.StatusOK
	client := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		fetches.Add(1)
		if r.URL.String() != certURL || r.Method != http.MethodGet {
			t.Errorf("fetched %s %s", r.Method, r.URL)
		}
		h := http.Header{}
		if status == http.StatusFound {
			h.Set("Location", "https://evil.example/x.pem")
		}
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: h,
			Body: io.NopCloser(strings.NewReader(string(serve))), Request: r}, nil
	})}
	// The default client's redirect policy, with the test's transport.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	ctx := context.Background()

	v := snsverify.New(snsverify.Options{Client: client, Now: clock})
	for i := range 3 {
		if err := v.Verify(ctx, s.sign(t, notification(), "2")); err != nil {
			t.Fatalf("verify %d: %v", i, err)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d fetches for 3 messages, want 1", n)
	}

	for _, tc := range []struct {
		name   string
		status int
		body   []byte
	}{
		{"not found", http.StatusNotFound, nil},
		{"redirect", http.StatusFound, nil},
		{"not PEM", http.StatusOK, []byte("<html>")},
		{"expired", http.StatusOK, expired.pem},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := snsverify.New(snsverify.Options{Client: client, Now: clock})
			status, serve = tc.status, tc.body
			before := fetches.Load()
			m := s.sign(t, notification(), "2")
			if tc.name == "expired" {
				m = expired.sign(t, notification(), "2")
			}
			for range 2 {
				if err := v.Verify(ctx, m); !errors.Is(err, snsverify.ErrCertificate) {
					t.Errorf("Verify: %v, want %v", err, snsverify.ErrCertificate)
				}
			}
			if n := fetches.Load() - before; tc.name != "expired" && n != 2 {
				t.Errorf("%d fetches, want 2 (a failure is not kept)", n)
			}
		})
	}
}

// TestParse reads a message as SNS POSTs it, with exact keys.
func TestParse(t *testing.T) {
	m := notification()
	b, _ := json.Marshal(map[string]string{"Type": m.Type, "MessageId": m.MessageID, "TopicArn": m.TopicArn,
		"Message": m.Message, "Timestamp": m.Timestamp, "UnsubscribeURL": m.UnsubscribeURL})
	got, err := snsverify.Parse(b)
	if err != nil || got != m {
		t.Errorf("Parse: %+v %v, want %+v", got, err, m)
	}
	for _, bad := range []string{`[]`, `null`, `{"Type":"Notification","Message":1}`, `{"Type":"Other"}`, `{"type":"Notification"}`, `{`} {
		if _, err := snsverify.Parse([]byte(bad)); !errors.Is(err, snsverify.ErrNotSNS) {
			t.Errorf("Parse(%s): %v, want %v", bad, err, snsverify.ErrNotSNS)
		}
	}
}

// FuzzParse: Parse never panics, and what it accepts has one of SNS's
// types and gives a canonical string.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"Type":"Notification","MessageId":"1","Message":"{}","Timestamp":"t","TopicArn":"a"}`))
	f.Add([]byte(`{"Type":"SubscriptionConfirmation","SubscribeURL":"https://sns.us-east-1.amazonaws.com/","Token":"t"}`))
	f.Add([]byte(`{"Type":"Notification","Message":null,"message":"x","Type":"UnsubscribeConfirmation"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := snsverify.Parse(b)
		if err != nil {
			return
		}
		if _, err := snsverify.StringToSign(m); err != nil {
			t.Fatalf("accepted %+v, but: %v", m, err)
		}
	})
}

// FuzzCheckCertURL: whatever it accepts is https on an SNS host with no
// port or user information.
func FuzzCheckCertURL(f *testing.F) {
	f.Add(certURL)
	f.Add("https://sns.us-east-1.amazonaws.com:443/x.pem")
	f.Add("https://a@sns.us-east-1.amazonaws.com/x.pem")
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := snsverify.CheckCertURL(raw)
		if err != nil {
			return
		}
		if u.Scheme != "https" || u.User != nil || u.Port() != "" || !strings.HasPrefix(u.Host, "sns.") ||
			!(strings.HasSuffix(u.Host, ".amazonaws.com") || strings.HasSuffix(u.Host, ".amazonaws.com.cn")) {
			t.Fatalf("accepted %q: %+v", raw, u)
		}
	})
}

// TestTrustRefusedOutsideTests builds a program that is not a test and
// calls Trust: it is refused with ErrNotTest.
func TestTrustRefusedOutsideTests(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "nottest")
	build := exec.Command("go", "build", "-o", bin, "./testdata/nottest")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("go build: %v", err)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || !strings.Contains(string(out), snsverify.ErrNotTest.Error()) {
		t.Errorf("Trust outside a test: %v, %s", err, out)
	}
}
