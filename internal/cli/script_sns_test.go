package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/bulksend/bulksend/internal/sms/smssandbox"
	"github.com/bulksend/bulksend/internal/sms/snsreceive"
	"github.com/bulksend/bulksend/internal/sms/snsverify"
)

// testSNS, in the test binary acting as bulksend, trusts the certificate
// in the PEM file BULKSEND_TEST_SNS_CERT for the sandbox's SigningCertURL,
// and sends subscription confirmations to BULKSEND_TEST_SNS_URL instead
// of AWS. Only this test binary reads them (and snsverify.Trust refuses
// in any other).
func testSNS() {
	if path := os.Getenv("BULKSEND_TEST_SNS_CERT"); path != "" {
		snsTrust = func(v *snsverify.Verifier) error {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			cert, err := snsverify.ParseCertificate(b)
			if err != nil {
				return err
			}
			return snsverify.Trust(v, smssandbox.SNSCertURL, cert)
		}
	}
	if raw := os.Getenv("BULKSEND_TEST_SNS_URL"); raw != "" {
		target, err := url.Parse(raw)
		if err != nil {
			panic("BULKSEND_TEST_SNS_URL: " + err.Error())
		}
		snsClient = &http.Client{Transport: rewrite{target}}
	}
}

// rewrite sends every request to target's scheme and host.
type rewrite struct{ target *url.URL }

func (t rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = t.target.Scheme, t.target.Host
	return http.DefaultTransport.RoundTrip(r)
}

// sns plays Amazon SNS towards `bulksend receive`, signing as the SMS
// sandbox signs:
//
//	sns cert FILE            writes the signer's certificate (PEM) to FILE
//	sns server VAR           starts SNS's ConfirmSubscription endpoint on 127.0.0.1, $VAR its URL
//	sns confirms N           checks it was sent N confirmations
//	sns confirm URL TOPIC CODE      POSTs a subscription confirmation of TOPIC, expects CODE
//	sns publish URL TOPIC FILE CODE POSTs each line of FILE as a signed notification (versions 1 and 2 in turn), expects CODE for each
//	sns forge URL TOPIC FILE CODE   the same, each notification's Message changed after signing
//	sns unsigned URL TOPIC FILE CODE the same, without a signature
func cmdSNS(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: sns cert|server|confirms|confirm|publish|forge|unsigned …")
	}
	signer := smssandbox.Signer()
	at := time.Now()
	switch args[0] {
	case "cert":
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), signer.CertificatePEM(), 0o644))
	case "server":
		var n atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("Action") == "ConfirmSubscription" {
				n.Add(1)
			}
		}))
		ts.Defer(srv.Close)
		ts.Setenv(args[1], srv.URL)
		snsConfirms = &n
	case "confirms":
		want, _ := strconv.ParseInt(args[1], 10, 64)
		if got := snsConfirms.Load(); got != want {
			ts.Fatalf("%d subscription confirmations, want %d", got, want)
		}
	case "confirm":
		if len(args) != 4 {
			ts.Fatalf("usage: sns confirm URL TOPIC CODE")
		}
		region, err := snsreceive.Region(args[2])
		ts.Check(err)
		sub := "https://sns." + region + ".amazonaws.com/?Action=ConfirmSubscription&TopicArn=" + args[2] + "&Token=t"
		snsPost(ts, args[1], signer.Confirmation(snsverify.TypeSubscriptionConfirmation, args[2], sub, "t", at, "2"), args[3])
	case "publish", "forge", "unsigned":
		if len(args) != 5 {
			ts.Fatalf("usage: sns %s URL TOPIC FILE CODE", args[0])
		}
		f, err := os.Open(ts.MkAbs(args[3]))
		ts.Check(err)
		defer f.Close()
		sc := bufio.NewScanner(f)
		for i := 0; sc.Scan(); i++ {
			body := signer.Notification(args[2], sc.Text(), at, strconv.Itoa(1+i%2))
			switch args[0] {
			case "forge":
				body = bytes.Replace(body, []byte("TEXT_"), []byte("TEXT_X"), 1)
			case "unsigned":
				body = bytes.Replace(body, []byte(`"Signature":`), []byte(`"NoSignature":`), 1)
			}
			snsPost(ts, args[1], body, args[4])
		}
		ts.Check(sc.Err())
	default:
		ts.Fatalf("sns: unknown %q", args[0])
	}
}

// snsConfirms counts the confirmations the script's SNS server was sent.
var snsConfirms = new(atomic.Int64)

func snsPost(ts *testscript.TestScript, u string, body []byte, code string) {
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	ts.Check(err)
	var m struct{ Type string }
	ts.Check(json.Unmarshal(body, &m))
	req.Header.Set(snsreceive.TypeHeader, m.Type)
	req.Header.Set("Content-Type", "text/plain; charset=UTF-8")
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := fmt.Sprint(resp.StatusCode); got != code {
		ts.Fatalf("POST %s: %s, want %s", m.Type, got, code)
	}
}
