package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// hintError is a fatal error (exit 1) with advice for the operator.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }
func (e *hintError) Hint() string  { return e.hint }

// mappingOf is the campaign's stored mapping; nil for a checkpoint made
// before mappings, whose columns are all body parameters in order.
func mappingOf(s store.Settings) (*template.Mapping, error) {
	if len(s.Mapping) == 0 {
		return nil, nil
	}
	var m template.Mapping
	if err := json.Unmarshal(s.Mapping, &m); err != nil {
		return nil, fmt.Errorf("the checkpoint's template mapping: %w", err)
	}
	return &m, nil
}

// paramFlags is how --param values are stored and compared: sorted, since
// their order means nothing.
func paramFlags(ps []string) []string {
	ps = slices.Clone(ps)
	slices.Sort(ps)
	return ps
}

// consts parses the --param NAME=VALUE flags.
func (o *runOptions) consts() ([]template.Const, error) {
	var cs []template.Const
	for _, p := range o.params {
		k, v, ok := strings.Cut(p, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usagef("e.g. --param header.image=https://cdn.example.com/spring.jpg", "invalid --param %q: want NAME=VALUE", p)
		}
		cs = append(cs, template.Const{Key: strings.TrimSpace(k), Value: v})
	}
	return cs, nil
}

// templateSource says where the template's definition came from, for
// the log and the plan.
type templateSource struct {
	def  *template.Definition // nil: not checked
	from string               // "WABA 123", "the sandbox"
}

// definition reads the approved template's definition: from the business
// account given by --waba (or stored), or from the sandbox's own set. It
// returns a nil definition when neither is known.
func (o *runOptions) definition(ctx context.Context, ios *IO, name, lang, waba, token string) (templateSource, error) {
	if o.sandbox {
		for _, d := range sandbox.DefaultTemplates() {
			if d.Name == name && d.Language == lang {
				return templateSource{def: &d, from: "the sandbox's templates"}, nil
			}
		}
		return templateSource{}, nil
	}
	if waba == "" {
		return templateSource{}, nil
	}
	if token == "" {
		if o.dryRun {
			o.log.Warn("no access token: the template was not read from its business account, so the dry run did not check the CSV against it", "waba", waba)
			return templateSource{}, nil
		}
		return templateSource{}, usagef("export WHATSAPP_TOKEN=… or pass --token-file FILE", "reading template %s from WABA %s needs the access token", name, waba)
	}
	c := &whatsapp.Client{BaseURL: o.apiBase(ios), Version: o.apiVersion, Token: token, Timeout: o.readTimeout(), HTTP: whatsapp.NewHTTPClient(1)}
	d, err := c.Template(ctx, waba, name, lang)
	if errors.Is(err, whatsapp.ErrNoTemplate) {
		return templateSource{}, &hintError{err: err, hint: fmt.Sprintf("check --template and --lang against WhatsApp Manager's list for WABA %s", waba)}
	}
	if err != nil {
		var api *whatsapp.APIError
		switch {
		case errors.As(err, &api) && api.Code == 100:
			return templateSource{}, &hintError{err: err, hint: "check --waba: it is the WhatsApp Business Account ID shown in WhatsApp Manager, not a phone-number ID"}
		case errors.As(err, &api):
			return templateSource{}, err
		}
		return templateSource{}, &hintError{err: err, hint: "the API could not be reached to read the template: check the network and --api-url, then run again; nothing was sent"}
	}
	return templateSource{def: &d, from: "WABA " + waba}, nil
}

// apiBase is the Graph API's base URL: --api-url, $BULKSEND_API_URL or Meta's.
func (o *runOptions) apiBase(ios *IO) string {
	if o.apiURL != "" {
		return o.apiURL
	}
	if u := ios.Getenv("BULKSEND_API_URL"); u != "" {
		return u
	}
	return "https://graph.facebook.com"
}

// mappingError says why the CSV and the template do not fit: exit 2 when
// the CSV or the flags are at fault, exit 1 when the template cannot be
// sent now.
func mappingError(err error, name, lang string, src templateSource) error {
	var probs template.Problems
	if errors.As(err, &probs) {
		where := "the template"
		if src.def != nil {
			where = fmt.Sprintf("template %s/%s as approved (%s)", name, lang, src.from)
		}
		return &usageError{
			err:  fmt.Errorf("the CSV does not fit %s: %w", where, probs),
			hint: "see README \"Templates\" for the column names; nothing was sent",
		}
	}
	if errors.Is(err, template.ErrNotApproved) {
		hint := "only APPROVED templates can be sent: check its status in WhatsApp Manager"
		switch strings.ToUpper(src.def.Status) {
		case "PAUSED":
			hint = whatsapp.PausedHint + "; run the same command again then"
		case "DISABLED":
			hint = "the template is disabled for good after repeated pauses: create a new template"
		case "PENDING", "IN_APPEAL":
			hint = "the template is still in review: run again once WhatsApp Manager shows it approved"
		case "REJECTED":
			hint = "the template was rejected: edit it and submit it again in WhatsApp Manager"
		}
		return &hintError{err: err, hint: hint}
	}
	return err
}

// sandboxKnows reports whether run --sandbox checks template name/lang
// against a definition, and lists what it knows for the log.
func sandboxKnows() []string {
	var names []string
	for _, d := range sandbox.DefaultTemplates() {
		if d.Approved() && !slices.Contains(names, d.Name) {
			names = append(names, d.Name)
		}
	}
	return names
}

// readTimeout bounds the preflight's reads (template, numbers). They are
// not sends: a short --request-timeout, chosen to settle sends quickly in
// doubt, must not fail them.
func (o *runOptions) readTimeout() time.Duration {
	return max(o.requestTimeout, 30*time.Second)
}
