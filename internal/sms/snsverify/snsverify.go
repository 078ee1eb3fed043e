// Package snsverify checks that an Amazon SNS message (a notification, a
// subscription or unsubscription confirmation, as SNS POSTs them to an
// HTTPS subscriber) was signed by SNS.
//
// The model. SNS signs a canonical string of the message's fields with the
// private key of a certificate it publishes at the message's
// SigningCertURL: SignatureVersion 1 is SHA1withRSA, 2 is SHA256withRSA.
// A Verifier fetches that certificate only from an
// https://sns.<region>.amazonaws.com/….pem URL (CheckCertURL), over TLS
// with the system's roots, so that whoever signed the message holds the
// key of a certificate AWS serves; it keeps each certificate it fetched
// (Verify pays the fetch once a URL), and checks the signature over the
// canonical string AWS documents for the message's Type.
//
// Tests. A test binary may trust a certificate of its own for one URL
// (Trust): the SMS sandbox signs its notifications with a key it made.
// Trust refuses outside a test binary (testing.Testing), so no flag,
// environment variable or message can make a bulksend binary trust a
// certificate AWS did not serve.
package snsverify

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Message types SNS sends.
const (
	TypeNotification             = "Notification"
	TypeSubscriptionConfirmation = "SubscriptionConfirmation"
	TypeUnsubscribeConfirmation  = "UnsubscribeConfirmation"
)

// Message is an SNS message as SNS POSTs it (and as an SQS queue
// subscribed without raw delivery holds it). Fields are "" when absent.
type Message struct {
	Type             string
	MessageID        string // MessageId
	TopicArn         string
	Subject          string
	Message          string
	Timestamp        string
	Token            string // confirmations: the token ConfirmSubscription takes
	SubscribeURL     string // confirmations: GET it to confirm
	UnsubscribeURL   string // notifications
	SignatureVersion string
	Signature        string // base64
	SigningCertURL   string
}

// Errors Parse and Verify return (wrapped, with what was wrong).
var (
	ErrNotSNS       = errors.New("not an SNS message")
	ErrUnsigned     = errors.New("SNS message not signed")
	ErrVersion      = errors.New("unknown SNS SignatureVersion")
	ErrCertURL      = errors.New("signing certificate not on an SNS URL")
	ErrCertificate  = errors.New("signing certificate unusable")
	ErrBadSignature = errors.New("SNS signature does not match the message")
	ErrNotTest      = errors.New("snsverify: Trust is for test binaries only")
)

// fields maps each JSON key of a message to where it goes. Keys match
// exactly, as the log's reader (smsevent) matches them, so that the values
// verified are the values read later; a key repeated, the last one wins in
// both.
func (m *Message) fields() map[string]*string {
	return map[string]*string{
		"Type": &m.Type, "MessageId": &m.MessageID, "TopicArn": &m.TopicArn, "Subject": &m.Subject,
		"Message": &m.Message, "Timestamp": &m.Timestamp, "Token": &m.Token, "SubscribeURL": &m.SubscribeURL,
		"UnsubscribeURL": &m.UnsubscribeURL, "SignatureVersion": &m.SignatureVersion, "Signature": &m.Signature,
		"SigningCertURL": &m.SigningCertURL,
	}
}

// Parse reads body, one JSON object, as an SNS message. It is ErrNotSNS
// when body is not a JSON object, when one of the fields above is not a
// string (null is absent), or when Type is none of the three SNS sends.
func Parse(body []byte) (Message, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return Message{}, fmt.Errorf("%w: not a JSON object", ErrNotSNS)
	}
	var m Message
	for k, dst := range m.fields() {
		v, ok := raw[k]
		if !ok || string(v) == "null" {
			continue
		}
		if json.Unmarshal(v, dst) != nil {
			return Message{}, fmt.Errorf("%w: %s is not a string", ErrNotSNS, k)
		}
	}
	switch m.Type {
	case TypeNotification, TypeSubscriptionConfirmation, TypeUnsubscribeConfirmation:
		return m, nil
	}
	return Message{}, fmt.Errorf("%w: Type %q", ErrNotSNS, m.Type)
}

// StringToSign is the canonical string SNS signs for m: for each field of
// its Type's list, in that order, its name, a newline, its value and a
// newline; Subject only when the message has one.
func StringToSign(m Message) (string, error) {
	var keys []string
	switch m.Type {
	case TypeNotification:
		keys = []string{"Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"}
	case TypeSubscriptionConfirmation, TypeUnsubscribeConfirmation:
		keys = []string{"Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"}
	default:
		return "", fmt.Errorf("%w: Type %q", ErrNotSNS, m.Type)
	}
	f := m.fields()
	var b strings.Builder
	for _, k := range keys {
		v := *f[k]
		if k == "Subject" && v == "" {
			continue
		}
		b.WriteString(k)
		b.WriteByte('\n')
		b.WriteString(v)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// certHost is the host of an SNS signing certificate's URL, as AWS's
// own SDKs check it: sns.<region>.amazonaws.com, .com.cn in China.
var certHost = regexp.MustCompile(`^sns\.[a-z0-9-]{3,32}\.amazonaws\.com(\.cn)?$`)

// CheckCertURL reports whether raw is a URL an SNS signing certificate may
// be fetched from: https, host sns.<region>.amazonaws.com (or .com.cn), no
// user information, no port, a path ending in .pem, no query or fragment.
func CheckCertURL(raw string) (*url.URL, error) {
	u, err := CheckSNSURL(raw)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(u.Path, ".pem") || u.RawQuery != "" || u.ForceQuery {
		return nil, fmt.Errorf("%w: %q is not a .pem file", ErrCertURL, raw)
	}
	return u, nil
}

// CheckSNSURL reports whether raw is a URL on SNS's own domain: https,
// host sns.<region>.amazonaws.com (or .com.cn), no user information, no
// port, no fragment. A SubscribeURL must be one before it is fetched.
func CheckSNSURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %q: %v", ErrCertURL, raw, err)
	case u.Scheme != "https":
		return nil, fmt.Errorf("%w: %q is not https", ErrCertURL, raw)
	case u.User != nil:
		return nil, fmt.Errorf("%w: %q has user information", ErrCertURL, raw)
	case u.Port() != "" || strings.HasSuffix(u.Host, ":"):
		return nil, fmt.Errorf("%w: %q names a port", ErrCertURL, raw)
	case !certHost.MatchString(u.Host):
		return nil, fmt.Errorf("%w: %q is not on sns.<region>.amazonaws.com", ErrCertURL, raw)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, fmt.Errorf("%w: %q has a fragment", ErrCertURL, raw)
	}
	return u, nil
}

// maxCert bounds a certificate file: SNS's are about 2 KB.
const maxCert = 64 << 10

// maxCached bounds the certificates kept: SNS uses one a region at a time
// and rotates them rarely.
const maxCached = 64

// Options configure a Verifier.
type Options struct {
	// Client fetches certificates; nil is a client with a 10 s timeout
	// that follows no redirect (a redirect could leave SNS's domain).
	Client *http.Client
	// Now is the clock a certificate's validity is checked against; nil
	// means time.Now.
	Now func() time.Time
}

// Verifier verifies SNS messages. It is safe for concurrent use; the zero
// value is not usable: create one with New.
type Verifier struct {
	client *http.Client
	now    func() time.Time

	mu     sync.Mutex
	certs  map[string]*certEntry // by URL
	pinned map[string]*x509.Certificate
}

// certEntry is a certificate fetched, or being fetched, once.
type certEntry struct {
	once sync.Once
	cert *x509.Certificate
	err  error
}

// New returns a Verifier.
func New(o Options) *Verifier {
	v := &Verifier{client: o.Client, now: o.Now, certs: map[string]*certEntry{}, pinned: map[string]*x509.Certificate{}}
	if v.client == nil {
		v.client = &http.Client{
			Timeout:       10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if v.now == nil {
		v.now = time.Now
	}
	return v
}

// Trust makes v take cert as the certificate at certURL without fetching
// it: for a test's own signer (the SMS sandbox). certURL must still pass
// CheckCertURL. Outside a test binary it returns ErrNotTest and changes
// nothing.
func Trust(v *Verifier, certURL string, cert *x509.Certificate) error {
	if !testing.Testing() {
		return ErrNotTest
	}
	if _, err := CheckCertURL(certURL); err != nil {
		return err
	}
	v.mu.Lock()
	v.pinned[certURL] = cert
	v.mu.Unlock()
	return nil
}

// Verify checks m's signature: ErrUnsigned without a Signature,
// SignatureVersion or SigningCertURL, ErrVersion for a version other than
// 1 or 2, ErrCertURL for a certificate URL off SNS's domain (nothing is
// fetched then), ErrCertificate when the certificate cannot be fetched or
// used, ErrBadSignature when the signature is not the certificate key's
// over the canonical string. ctx bounds the certificate's fetch.
func (v *Verifier) Verify(ctx context.Context, m Message) error {
	if m.Signature == "" || m.SignatureVersion == "" || m.SigningCertURL == "" {
		return ErrUnsigned
	}
	var h crypto.Hash
	switch m.SignatureVersion {
	case "1":
		h = crypto.SHA1
	case "2":
		h = crypto.SHA256
	default:
		return fmt.Errorf("%w %q", ErrVersion, m.SignatureVersion)
	}
	sig, err := base64.StdEncoding.DecodeString(m.Signature)
	if err != nil {
		return fmt.Errorf("%w: signature is not base64", ErrBadSignature)
	}
	s, err := StringToSign(m)
	if err != nil {
		return err
	}
	cert, err := v.cert(ctx, m.SigningCertURL)
	if err != nil {
		return err
	}
	key, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return fmt.Errorf("%w: %s: not an RSA key", ErrCertificate, m.SigningCertURL)
	}
	if err := rsa.VerifyPKCS1v15(key, h, digest(h, s), sig); err != nil {
		return ErrBadSignature
	}
	return nil
}

func digest(h crypto.Hash, s string) []byte {
	if h == crypto.SHA1 {
		d := sha1.Sum([]byte(s))
		return d[:]
	}
	d := sha256.Sum256([]byte(s))
	return d[:]
}

// cert is the certificate at raw: pinned, cached, or fetched now. A
// failed fetch is not kept, so the next message tries again.
func (v *Verifier) cert(ctx context.Context, raw string) (*x509.Certificate, error) {
	u, err := CheckCertURL(raw)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	if c := v.pinned[raw]; c != nil {
		v.mu.Unlock()
		return c, nil
	}
	e := v.certs[raw]
	if e == nil {
		if len(v.certs) >= maxCached {
			clear(v.certs) // a flood of URLs; SNS's own are fetched again
		}
		e = &certEntry{}
		v.certs[raw] = e
	}
	v.mu.Unlock()
	e.once.Do(func() { e.cert, e.err = v.fetch(ctx, u) })
	if e.err != nil {
		v.mu.Lock()
		if v.certs[raw] == e {
			delete(v.certs, raw)
		}
		v.mu.Unlock()
		return nil, e.err
	}
	if now := v.now(); now.Before(e.cert.NotBefore) || now.After(e.cert.NotAfter) {
		return nil, fmt.Errorf("%w: %s: valid %s to %s", ErrCertificate, raw, e.cert.NotBefore.Format(time.RFC3339), e.cert.NotAfter.Format(time.RFC3339))
	}
	return e.cert, nil
}

// fetch GETs the certificate at u.
func (v *Verifier) fetch(ctx context.Context, u *url.URL) (*x509.Certificate, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCertificate, err)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCertificate, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: GET %s: %s", ErrCertificate, u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxCert+1))
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %v", ErrCertificate, u, err)
	}
	if len(b) > maxCert {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrCertificate, u, maxCert)
	}
	return ParseCertificate(b)
}

// ParseCertificate reads the first CERTIFICATE block of a PEM file.
func ParseCertificate(b []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return nil, fmt.Errorf("%w: no PEM certificate", ErrCertificate)
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCertificate, err)
		}
		return c, nil
	}
}
