package whatsapp_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/whatsapp"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

// BenchmarkSend: one template message through Client.Send to the sandbox
// on 127.0.0.1, keep-alive connections, sends in parallel. The client's
// allocations a send are what the run's garbage collector works for: at
// 5,000 sends a second it ran every 0.3 s, and its mark phases are where
// each number's pace dipped (internal/bench's Scale). The sandbox's
// allocations count in the figure too (it runs in this process); compare
// runs of one machine.
func BenchmarkSend(b *testing.B) {
	sb := sandbox.New(sandbox.Config{Token: "tok", Rate: -1, PairInterval: -1, Templates: []sandbox.Template{{Name: "welcome", Languages: []string{"en_US"}, BodyParams: 2}}})
	srv := httptest.NewServer(sb)
	b.Cleanup(func() { srv.Close(); sb.Close() })
	c := &whatsapp.Client{BaseURL: srv.URL, Version: "v23.0", Token: "tok", TemplateName: "welcome", TemplateLang: "en_US", HTTP: whatsapp.NewHTTPClient(64)}
	b.ReportAllocs()
	b.SetParallelism(8)
	var rows atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			row := rows.Add(1)
			m := campaign.Message{Row: row, From: "1000001", To: fmt.Sprintf("+4474001%05d", row%100000), Params: []string{"Ana", "20%"}, Ref: campaign.Ref{Campaign: "bench", Row: row}}
			if _, err := c.Send(context.Background(), m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
