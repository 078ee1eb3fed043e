package smssandbox

import (
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
	"fmt"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SNSCertURL is the SigningCertURL of the sandbox's SNS messages. It is
// on SNS's domain, so that a verifier's URL check passes; nothing is
// served there, so only a test that trusts the sandbox's certificate for
// it (snsverify.Trust) verifies them.
const SNSCertURL = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-bulksend-sandbox.pem"

// SNSTopicArn is the topic the sandbox publishes its delivery events to.
const SNSTopicArn = "arn:aws:sns:us-east-1:" + account + ":bulksend-sandbox-sms-events"

// SNS signs messages as Amazon SNS does, with a key of its own and a
// self-signed certificate for it. It is safe for concurrent use.
type SNS struct {
	key  *rsa.PrivateKey
	cert *x509.Certificate
	pem  []byte
	seq  atomic.Uint64
}

var (
	snsOnce sync.Once
	theSNS  *SNS
)

// Signer returns the process's SNS signer, made on first use (an RSA key
// takes a moment to make: every sandbox of a process shares one).
func Signer() *SNS {
	snsOnce.Do(func() {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic("smssandbox: SNS key: " + err.Error())
		}
		now := time.Now()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sns.amazonaws.com (bulksend sandbox)"},
			NotBefore: now.Add(-24 * time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			panic("smssandbox: SNS certificate: " + err.Error())
		}
		cert, _ := x509.ParseCertificate(der)
		theSNS = &SNS{key: key, cert: cert, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	})
	return theSNS
}

// Certificate is the certificate the signatures verify with.
func (s *SNS) Certificate() *x509.Certificate { return s.cert }

// CertificatePEM is Certificate as SNS serves it at SNSCertURL.
func (s *SNS) CertificatePEM() []byte { return s.pem }

// Notification is an SNS notification of message on topic, signed with
// SignatureVersion version ("1" or "2"), as SNS POSTs it to an HTTPS
// subscriber and as an SQS queue subscribed without raw delivery holds it.
func (s *SNS) Notification(topic, message string, at time.Time, version string) []byte {
	m := map[string]string{
		"Type": "Notification", "MessageId": s.id(), "TopicArn": topic, "Message": message,
		"Timestamp":      at.UTC().Format("2006-01-02T15:04:05.000Z"),
		"UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=" + topic + ":bulksend-sandbox",
	}
	return s.sign(m, []string{"Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"}, version)
}

// Confirmation is a SubscriptionConfirmation (or, with typ
// "UnsubscribeConfirmation", that) of topic, whose SubscribeURL is
// subscribeURL, signed with version.
func (s *SNS) Confirmation(typ, topic, subscribeURL, token string, at time.Time, version string) []byte {
	m := map[string]string{
		"Type": typ, "MessageId": s.id(), "Token": token, "TopicArn": topic,
		"Message":      "You have chosen to subscribe to the topic " + topic + ".\nTo confirm the subscription, visit the SubscribeURL included in this message.",
		"SubscribeURL": subscribeURL, "Timestamp": at.UTC().Format("2006-01-02T15:04:05.000Z"),
	}
	return s.sign(m, []string{"Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"}, version)
}

func (s *SNS) id() string {
	n := s.seq.Add(1)
	return fmt.Sprintf("5b5e1a8c-0000-4000-8000-%012x", n)
}

// sign adds m's signature over the canonical string of keys (each key
// and its value on a line of their own; keys m lacks left out).
func (s *SNS) sign(m map[string]string, keys []string, version string) []byte {
	var b strings.Builder
	for _, k := range keys {
		if v, ok := m[k]; ok {
			b.WriteString(k + "\n" + v + "\n")
		}
	}
	h, sum := crypto.SHA256, sha256.Sum256([]byte(b.String()))
	digest := sum[:]
	if version == "1" {
		s1 := sha1.Sum([]byte(b.String()))
		h, digest = crypto.SHA1, s1[:]
	}
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.key, h, digest)
	if err != nil {
		panic("smssandbox: SNS signature: " + err.Error())
	}
	m["SignatureVersion"], m["Signature"], m["SigningCertURL"] = version, base64.StdEncoding.EncodeToString(sig), SNSCertURL
	out, _ := json.Marshal(m)
	return out
}
