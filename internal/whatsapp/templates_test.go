package whatsapp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/bulksend/bulksend/internal/sandbox"
	"github.com/bulksend/bulksend/internal/template"
	"github.com/bulksend/bulksend/internal/whatsapp"
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
