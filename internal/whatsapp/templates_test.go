package whatsapp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/whatsapp"
	"github.com/bulksend/bulksend/internal/whatsapp/internal/oas"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

const waba = "100000000000001"

func templateClient(t *testing.T, cfg sandbox.Config) (*whatsapp.Client, *sandbox.Server) {
	t.Helper()
	sb := sandbox.New(cfg)
	srv := httptest.NewServer(sb)
	t.Cleanup(func() { srv.Close(); sb.Close() })
	return &whatsapp.Client{BaseURL: srv.URL, Version: "v23.0", Token: "tok", HTTP: srv.Client()}, sb
}

func TestTemplate(t *testing.T) {
	c, _ := templateClient(t, sandbox.Config{Token: "tok", ExpiredToken: "old", Definitions: sandbox.DefaultTemplates()})
	ctx := context.Background()
	d, err := c.Template(ctx, waba, "spring_sale", "en_US")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "spring_sale" || !d.Approved() || d.HeaderFormat() != "IMAGE" || len(d.Buttons()) != 2 {
		t.Errorf("spring_sale = %+v", d)
	}
	// Graph's name filter matches parts of names; only the exact one counts.
	if _, err := c.Template(ctx, waba, "spring", "en_US"); !errors.Is(err, whatsapp.ErrNoTemplate) {
		t.Errorf("part of a name: err = %v, want ErrNoTemplate", err)
	}
	if _, err := c.Template(ctx, waba, "spring_sale", "pt_BR"); !errors.Is(err, whatsapp.ErrNoTemplate) {
		t.Errorf("another language: err = %v, want ErrNoTemplate", err)
	}
	var api *whatsapp.APIError
	if _, err := c.Template(ctx, "999", "spring_sale", "en_US"); !errors.As(err, &api) || api.Code != 100 {
		t.Errorf("unknown WABA: err = %v, want Graph's code 100", err)
	}
	old := *c
	old.Token = "old"
	if _, err := old.Template(ctx, waba, "spring_sale", "en_US"); !errors.Is(err, whatsapp.ErrToken) {
		t.Errorf("expired token: err = %v, want ErrToken", err)
	}
	// A paused template is read like any other: refusing it is the caller's.
	if d, err := c.Template(ctx, waba, "autumn_sale", "en_US"); err != nil || d.Approved() {
		t.Errorf("autumn_sale = %+v, %v; want it read, not approved", d, err)
	}
}

// TestTemplatePaging reads past the first page: Graph pages by cursor and
// a short name matches many templates.
func TestTemplatePaging(t *testing.T) {
	var defs []template.Definition
	for i := range 250 {
		defs = append(defs, template.Definition{Name: fmt.Sprintf("promo_%03d", i), Language: "en_US", Status: "APPROVED", Category: "MARKETING",
			Components: []template.Component{{Type: "BODY", Text: "Hi {{1}}"}}})
	}
	defs = append(defs, template.Definition{Name: "promo", Language: "en_US", Status: "APPROVED", Category: "UTILITY"})
	c, sb := templateClient(t, sandbox.Config{Token: "tok", Definitions: defs})
	d, err := c.Template(context.Background(), waba, "promo", "en_US")
	if err != nil || d.Category != "UTILITY" {
		t.Fatalf("Template = %+v, %v", d, err)
	}
	if reads := sb.Stats().TemplateReads; reads < 3 {
		t.Errorf("%d template reads, want the 3 pages of 100 it takes to reach the last entry", reads)
	}
}

// TestSendEachKindThroughSandbox sends every kind of template component to
// the sandbox, which checks each request against the template's approved
// definition as Meta does, and checks the same request bytes against Meta's
// OpenAPI description with its discriminators followed.
func TestSendEachKindThroughSandbox(t *testing.T) {
	spec, err := oas.Load()
	if err != nil {
		t.Fatal(err)
	}
	sb := sandbox.New(sandbox.Config{Token: "tok", Rate: -1, PairInterval: -1, Definitions: sandbox.DefaultTemplates()})
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		sb.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); sb.Close() })
	c := &whatsapp.Client{BaseURL: srv.URL, Version: "v23.0", Token: "tok", HTTP: srv.Client()}
	defs := map[string]template.Definition{}
	for _, d := range sandbox.DefaultTemplates() {
		defs[d.Name] = d
	}
	for _, tc := range []struct {
		kinds    string
		template string
		columns  string
		consts   []template.Const
		cells    []string
	}{
		{"image header by link, positional body, URL and quick-reply buttons", "spring_sale", "first_name,discount,button.0.url,button.1.payload",
			[]template.Const{{Key: "header.image", Value: "https://cdn.example.com/spring.jpg"}}, []string{"Ana", "20%", "ANA-1", "STOP"}},
		{"image header by media ID", "spring_sale", "first_name,discount,header.image,button.0.url", nil, []string{"Ana", "20%", "1339522734477770", "ANA-1"}},
		{"named body, URL button", "order_update", "ship_date,first_name,order_id,button.0.url", nil, []string{"May 2", "Ana", "A-1", "A-1"}},
		{"authentication code", "login_code", "auth.code", nil, []string{"482913"}},
		{"text header, copy-code coupon", "fall_coupon", "header.text,code,discount,button.1.coupon", nil, []string{"Fall Sale", "25OFF", "25%", "25OFF"}},
		{"video header", "summer_teaser", "name,header.video", nil, []string{"Ana", "https://cdn.example.com/v.mp4"}},
		{"document header with file name", "invoice_ready", "name,invoice,header.document,header.filename", nil, []string{"Ana", "INV-1", "https://cdn.example.com/i.pdf", "INV-1.pdf"}},
		{"location header", "store_visit", "order,header.latitude,header.longitude,header.name,header.address", nil, []string{"A-1", "52.52", "13.405", "Shop", "Main St 1"}},
		{"Flow button with a token and the first screen's data", "event_signup", "name,button.0.flow_token,button.0.flow_action_data", nil, []string{"Ana", "SIGNUP-A1", `{"first_name":"Ana"}`}},
		{"Flow button with data given once, a quick reply beside", "event_signup", "name,button.1.payload",
			[]template.Const{{Key: "button.0.flow_action_data", Value: `{"source":"spring"}`}}, []string{"Ana", "STOP"}},
		{"Flow button given nothing", "event_signup", "name,button.0.flow_token,button.0.flow_action_data", nil, []string{"Ana", "", ""}},
	} {
		t.Run(tc.kinds, func(t *testing.T) {
			def := defs[tc.template]
			m, err := template.New(template.Input{Columns: strings.Split(tc.columns, ","), Consts: tc.consts}, &def)
			if err != nil {
				t.Fatal(err)
			}
			if why := m.Validate(tc.cells); why != "" {
				t.Fatal(why)
			}
			sender := *c
			sender.Mapping, sender.TemplateName, sender.TemplateLang = m, def.Name, def.Language
			mu.Lock()
			bodies = nil
			mu.Unlock()
			msg := campaign.Message{Row: 1, From: "106540352242922", To: "+447400123456", Params: tc.cells, Ref: campaign.Ref{Campaign: "t", Row: 1}}
			if _, err := sender.Send(context.Background(), msg); err != nil {
				t.Fatalf("the sandbox refused the request: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(bodies) != 1 {
				t.Fatalf("%d requests", len(bodies))
			}
			if err := spec.ValidateTemplateMessage(bodies[0]); err != nil {
				t.Errorf("request does not conform to Meta's OpenAPI description: %v\n%s", err, bodies[0])
			}
		})
	}
	// Not vacuous: the sandbox refuses a request its definition does not
	// take (spring_sale without its image header).
	def := defs["spring_sale"]
	m, err := template.New(template.Input{Columns: []string{"first_name", "discount", "button.0.url"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sender := *c
	sender.Mapping, sender.TemplateName, sender.TemplateLang = m, def.Name, def.Language
	_, err = sender.Send(context.Background(), campaign.Message{From: "1", To: "+447400123456", Params: []string{"Ana", "20%", "A1"}})
	var se *campaign.SendError
	if !errors.As(err, &se) || se.Code != 132000 {
		t.Fatalf("send without the image header: %v, want 132000", err)
	}
}
