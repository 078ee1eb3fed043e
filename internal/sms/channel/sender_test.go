package channel

import (
	"context"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/engine/enginetest"
	"github.com/bulksend/bulksend/internal/sms"
	"github.com/bulksend/bulksend/internal/sms/smssandbox"
	"github.com/bulksend/bulksend/internal/sms/smstext"
)

// The SMS client keeps the Sender contract against its sandbox.
func TestSenderConformance(t *testing.T) {
	const from = "+12065550100"
	enginetest.SenderSuite(t, func(t *testing.T, s enginetest.Situation) (engine.Sender, campaign.Message) {
		cfg := smssandbox.Config{Seed: 1, MPS: -1}
		timeout := 5 * time.Second
		switch s {
		case enginetest.SendInDoubt:
			cfg.LateRate, cfg.LateDelay, timeout = 1, 3*time.Second, 200*time.Millisecond
		case enginetest.SendThrottled:
			cfg.ThrottleAlways = []string{from}
		case enginetest.SendFatal:
			cfg.AccountError = smssandbox.Expired
		}
		sb := smssandbox.New(cfg)
		srv := httptest.NewServer(sb)
		t.Cleanup(func() { srv.Close(); sb.Close() })
		url := srv.URL
		if s == enginetest.SendNeverLeft {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			url = "http://" + l.Addr().String()
			l.Close()
		}
		cl, err := sms.New(context.Background(), sms.Options{Region: "us-east-1", EndpointURL: url, Timeout: timeout, MaxConns: 1,
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "TEST", SecretAccessKey: "test", Source: "test"}, nil
			})})
		if err != nil {
			t.Fatal(err)
		}
		if cl.Text, err = smstext.New("Hi {{name}}", []string{"name"}); err != nil {
			t.Fatal(err)
		}
		return cl, campaign.Message{Row: 1, From: from, To: "+12065550201", Params: []string{"Ana"}, Ref: campaign.Ref{Campaign: "c1", Row: 1}}
	})
}
