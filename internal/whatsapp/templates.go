package whatsapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// ErrNoTemplate means the business account has no template of that name in
// that language.
var ErrNoTemplate = errors.New("no such template")

// templateFields are the fields a preflight reads.
const templateFields = "id,name,language,status,category,parameter_format,components,quality_score"

// maxTemplatePages bounds the pages read: Graph's name filter matches
// parts of names, so a short name can match many templates.
const maxTemplatePages = 20

// Template reads the definition of template name in language lang from the
// WhatsApp Business Account waba (GET /{waba}/message_templates). An API
// error is an *APIError (errors.Is tells ErrToken and its kin); a template
// that is not there is ErrNoTemplate.
func (c *Client) Template(ctx context.Context, waba, name, lang string) (template.Definition, error) {
	q := url.Values{"name": {name}, "language": {lang}, "fields": {templateFields}, "limit": {"100"}}
	for range maxTemplatePages {
		var page template.Templates
		if err := c.get(ctx, url.PathEscape(waba)+"/message_templates", q, &page); err != nil {
			return template.Definition{}, fmt.Errorf("read template %s/%s: %w", name, lang, err)
		}
		if d, ok := page.Find(name, lang); ok {
			return d, nil
		}
		// Follow the cursor, not paging.next: the token goes only to BaseURL.
		if page.Paging == nil || page.Paging.Next == "" || page.Paging.Cursors == nil || page.Paging.Cursors.After == "" {
			break
		}
		q.Set("after", page.Paging.Cursors.After)
	}
	return template.Definition{}, fmt.Errorf("%w: %s in %s", ErrNoTemplate, name, lang)
}

// get reads a Graph object into v.
func (c *Client) get(ctx context.Context, path string, q url.Values, v any) error {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	u := strings.TrimRight(c.BaseURL, "/") + "/" + url.PathEscape(c.Version) + "/" + path + "?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.do(req)
	if err != nil {
		return scrub(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return scrub(err)
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("HTTP 200 with an answer that is not Graph's: %w", err)
		}
		return nil
	}
	var r response
	if json.Unmarshal(raw, &r) == nil && r.Error != nil {
		return r.apiError(resp.StatusCode)
	}
	return &APIError{HTTPStatus: resp.StatusCode, Message: http.StatusText(resp.StatusCode)}
}
