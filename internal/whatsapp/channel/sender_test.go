package channel

import (
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/engine/enginetest"
	"github.com/bulksend/bulksend/internal/whatsapp"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

// The WhatsApp client keeps the Sender contract against its sandbox.
func TestSenderConformance(t *testing.T) {
	enginetest.SenderSuite(t, func(t *testing.T, s enginetest.Situation) (engine.Sender, campaign.Message) {
		cfg := sandbox.Config{Seed: 1, Rate: -1, PairInterval: -1, ExpiredToken: "expired",
			Templates: []sandbox.Template{{Name: "welcome", BodyParams: 2}}}
		token, timeout := "token", 5*time.Second
		switch s {
		case enginetest.SendInDoubt:
			cfg.LateRate, cfg.LateDelay, timeout = 1, 3*time.Second, 200*time.Millisecond
		case enginetest.SendThrottled:
			cfg.Numbers = map[string]sandbox.NumberInfo{"1000001": {SendError: 130429}}
		case enginetest.SendFatal:
			token = "expired"
		}
		sb := sandbox.New(cfg)
		srv := httptest.NewServer(sb)
		t.Cleanup(func() { srv.Close(); sb.Close() })
		url := srv.URL
		if s == enginetest.SendNeverLeft {
			url = closedPort(t)
		}
		c := &whatsapp.Client{BaseURL: url, Version: whatsapp.DefaultVersion, Token: token, Timeout: timeout,
			HTTP: whatsapp.NewHTTPClient(1), TemplateName: "welcome", TemplateLang: "en_US"}
		return c, campaign.Message{Row: 1, From: "1000001", To: "+447400123456", Params: []string{"Ana", "A1"}, Ref: campaign.Ref{Campaign: "c1", Row: 1}}
	})
}

// closedPort is the URL of a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}
