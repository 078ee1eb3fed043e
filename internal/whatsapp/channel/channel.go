// Package channel is WhatsApp's side of a campaign run (run.Channel):
// the CSV bound to an approved template (its mapping, checked against the
// definition when it can be read), a resume checked against the template
// as it is now, the preflight of the sender numbers, and the Cloud API
// client, or the sandbox in this process, that sends.
package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/redact"
	"github.com/bulksend/bulksend/internal/run"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// Options are the WhatsApp settings of a run, parsed by the front end.
type Options struct {
	// The template and how the CSV fills it; fixed by the first run.
	Template, Lang string
	Consts         []template.Const // values for every row (--param)
	ParamFlags     []string         // the same as given, sorted, as stored
	IgnoreColumns  []string
	ParamFormat    string // "", "positional" or "named"
	WABA           string // the business account whose templates are read; "" for none
	API            string // whatsapp.APIMessages or whatsapp.APIMarketing
	MMPolicy       string // "fallback" or "strict"

	Token      string // the access token; "" in a dry run without one
	APIURL     string // the Graph API's base URL
	APIVersion string
	// RequestTimeout bounds a send; Sandbox's own is used unless
	// TimeoutGiven.
	RequestTimeout time.Duration
	TimeoutGiven   bool

	NoPreflight bool
	Sandbox     bool // send to a sandbox in this process instead
	DryRun      bool
	Log         *slog.Logger
}

// Channel is WhatsApp's run.Channel, and a run.Preflighter.
type Channel struct{ o Options }

var (
	_ run.Channel     = (*Channel)(nil)
	_ run.Preflighter = (*Channel)(nil)
)

// New returns the channel of o.
func New(o Options) *Channel {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Channel{o: o}
}

func (*Channel) Name() campaign.Channel { return campaign.WhatsApp }

func (*Channel) CheckSender(id string) error { return whatsapp.CheckSender(id) }

// NeedTokenError is a template that can be read only with the access
// token, in a run that has none.
type NeedTokenError struct{ Template, WABA string }

func (e *NeedTokenError) Error() string {
	return fmt.Sprintf("reading template %s from WABA %s needs the access token", e.Template, e.WABA)
}

// NotMarketingError is a template the Marketing Messages API does not
// take: it takes marketing templates only.
type NotMarketingError struct{ Template, Lang, Category string }

func (e *NotMarketingError) Error() string {
	return fmt.Sprintf("template %s/%s is a %s template, and the Marketing Messages API takes marketing templates only", e.Template, e.Lang, e.Category)
}

// binding is the CSV bound to the template: the mapping checks each row.
type binding struct {
	m        *template.Mapping
	settings store.Settings
}

func (b *binding) Pin(s *store.Settings) {
	s.Template, s.Lang, s.Mapping = b.settings.Template, b.settings.Lang, b.settings.Mapping
	s.ParamFlags, s.IgnoreColumns, s.WABA = b.settings.ParamFlags, b.settings.IgnoreColumns, b.settings.WABA
	s.ParamFormat, s.Category, s.TemplateChecked = b.settings.ParamFormat, b.settings.Category, b.settings.TemplateChecked
	s.API, s.MMPolicy = b.settings.API, b.settings.MMPolicy
}

func (b *binding) Row(r *store.Row, cells []string) {
	if why := b.m.Validate(cells); why != "" {
		r.Skip, r.SkipKind = why, campaign.SkipParameter
	}
}

// Bind maps the CSV's parameter columns onto the template, checked
// against its approved definition when it can be read.
func (c *Channel) Bind(ctx context.Context, columns []string) (run.Binding, error) {
	o := &c.o
	src, err := c.definition(ctx, o.Template, o.Lang, o.WABA)
	if err != nil {
		return nil, err
	}
	m, err := template.New(template.Input{Columns: columns, Consts: o.Consts, Ignore: o.IgnoreColumns, Named: o.ParamFormat == "named"}, src.def)
	if err != nil {
		return nil, mappingError(err, o.Template, o.Lang, src)
	}
	mapping, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	category := ""
	if src.def != nil {
		category = strings.ToLower(src.def.Category)
		if o.API == whatsapp.APIMarketing && category != "marketing" {
			return nil, &NotMarketingError{Template: o.Template, Lang: o.Lang, Category: category}
		}
		o.Log.Info("the CSV fits the approved template", "template", o.Template, "lang", o.Lang, "category", category, "from", src.from)
	} else if o.Sandbox {
		o.Log.Info("the sandbox has no definition of this template: it takes the CSV's body parameters as they are", "template", o.Template, "sandbox_templates", strings.Join(sandboxKnows(), ","))
	} else {
		o.Log.Warn("the template could not be checked against its approved definition (no {waba}): only the columns' own consistency was", "template", o.Template)
	}
	return &binding{m: m, settings: store.Settings{
		Template: o.Template, Lang: o.Lang,
		Mapping: mapping, ParamFlags: o.ParamFlags, IgnoreColumns: o.IgnoreColumns, WABA: o.WABA,
		ParamFormat: o.ParamFormat, Category: category, TemplateChecked: src.from,
		API: o.API, MMPolicy: o.MMPolicy,
	}}, nil
}

// Pinned are the template's settings: a resume may not change them.
func (c *Channel) Pinned(s store.Settings) []run.Pinned {
	o := &c.o
	return []run.Pinned{
		{Setting: "template", Was: s.Template, Now: o.Template},
		{Setting: "lang", Was: s.Lang, Now: o.Lang},
		{Setting: "param", Was: run.List(s.ParamFlags), Now: run.List(o.ParamFlags)},
		{Setting: "ignore-column", Was: run.List(s.IgnoreColumns), Now: run.List(o.IgnoreColumns)},
		{Setting: "waba", Was: s.WABA, Now: o.WABA},
		{Setting: "api", Was: or(s.API, whatsapp.APIMessages), Now: o.API},
		{Setting: "mm-policy", Was: or(s.MMPolicy, "fallback"), Now: o.MMPolicy},
		{Setting: "param-format", Was: s.ParamFormat, Now: o.ParamFormat},
	}
}

// Resume reads the template's definition again (it may have been paused
// or edited since) and checks the stored mapping against it.
func (c *Channel) Resume(ctx context.Context, s store.Settings) error {
	m, err := MappingOf(s)
	if err != nil || m == nil {
		return err // nil: a checkpoint from before mappings, body parameters only
	}
	src, err := c.definition(ctx, s.Template, s.Lang, s.WABA)
	if err != nil || src.def == nil {
		return err
	}
	if err := m.Check(*src.def); err != nil {
		return mappingError(err, s.Template, s.Lang, src)
	}
	return nil
}

// MappingOf is the campaign's stored mapping; nil for a checkpoint made
// before mappings, whose columns are all body parameters in order.
func MappingOf(s store.Settings) (*template.Mapping, error) {
	if len(s.Mapping) == 0 {
		return nil, nil
	}
	var m template.Mapping
	if err := json.Unmarshal(s.Mapping, &m); err != nil {
		return nil, fmt.Errorf("the checkpoint's template mapping: %w", err)
	}
	return &m, nil
}

// Sender is the Cloud API client that sends c's messages, to Meta or to a
// sandbox in this process (Options.Sandbox).
func (ch *Channel) Sender(ctx context.Context, c *run.Campaign) (*run.Sender, error) {
	o, s := &ch.o, c.Settings
	senders, err := c.Store.Senders(ctx)
	if err != nil {
		return nil, err
	}
	mapping, err := MappingOf(s)
	if err != nil {
		return nil, err
	}
	if mapping == nil {
		mapping = template.Positional(s.Params) // once, not per send
	}
	apiURL, token, timeout := o.APIURL, o.Token, o.RequestTimeout
	var stop func() error
	if o.Sandbox {
		sb, err := startSandbox(o.Log, s, webhookLogPath(c.Store.Path()))
		if err != nil {
			return nil, err
		}
		apiURL, token, stop = sb.url, sb.token, sb.stop
		if !o.TimeoutGiven {
			timeout = SandboxRequestTimeout
		}
	}
	client := &whatsapp.Client{
		BaseURL: apiURL, Version: o.APIVersion, Token: token, Timeout: timeout,
		HTTP:    whatsapp.NewHTTPClient(max(s.Concurrency, int(s.Rate*float64(len(senders))))),
		Mapping: mapping, TemplateName: s.Template, TemplateLang: s.Lang,
	}
	if s.API == whatsapp.APIMarketing {
		client.API, client.ProductPolicy = whatsapp.APIMarketing, whatsapp.PolicyFallback
		if s.MMPolicy == "strict" {
			client.ProductPolicy = whatsapp.PolicyStrict
		}
	}
	return &run.Sender{Sender: client, Name: redact.URL(apiURL), Stop: stop, Standard: whatsapp.StandardThroughput, Proven: provenNumbers(s)}, nil
}

// provenNumbers are the senders whose throughput level, as the last
// preflight read it, allows more than the standard rate.
func provenNumbers(s store.Settings) []string {
	rec, ok := Preflight(s)
	if !ok {
		return nil
	}
	var ids []string
	for _, n := range rec.Numbers {
		if r, ok := whatsapp.ThroughputRate(n.Throughput); ok && r > whatsapp.StandardThroughput {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// WebhookLogPath is where run --sandbox writes a campaign's webhooks:
// beside its checkpoint.
func webhookLogPath(db string) string {
	return strings.TrimSuffix(db, ".bulksend.db") + ".webhooks.jsonl"
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// TemplateReadError is a template's definition that could not be read
// from its business account: Err is the API's answer (errors.Is finds
// whatsapp.ErrNoTemplate, errors.As an *whatsapp.APIError), or why the
// API could not be reached.
type TemplateReadError struct {
	WABA string
	Err  error
}

func (e *TemplateReadError) Error() string { return e.Err.Error() }
func (e *TemplateReadError) Unwrap() error { return e.Err }

// source says where the template's definition came from, for the log and
// the plan.
type source struct {
	def  *template.Definition // nil: not checked
	from string               // "WABA 123", "the sandbox's templates"
}

// definition reads the approved template's definition: from the business
// account waba, or from the sandbox's own set. It returns a nil
// definition when neither is known.
func (c *Channel) definition(ctx context.Context, name, lang, waba string) (source, error) {
	o := &c.o
	if o.Sandbox {
		for _, d := range sandbox.DefaultTemplates() {
			if d.Name == name && d.Language == lang {
				return source{def: &d, from: "the sandbox's templates"}, nil
			}
		}
		return source{}, nil
	}
	if waba == "" {
		return source{}, nil
	}
	if o.Token == "" {
		if o.DryRun {
			o.Log.Warn("no access token: the template was not read from its business account, so the dry run did not check the CSV against it", "waba", waba)
			return source{}, nil
		}
		return source{}, &NeedTokenError{Template: name, WABA: waba}
	}
	d, err := c.reader().Template(ctx, waba, name, lang)
	if err != nil {
		return source{}, &TemplateReadError{WABA: waba, Err: err}
	}
	return source{def: &d, from: "WABA " + waba}, nil
}

// reader is the client of the reads before sending (the template, the
// numbers), one at a time. They are not sends: a short request timeout,
// chosen to settle sends quickly in doubt, must not fail them.
func (c *Channel) reader() *whatsapp.Client {
	return &whatsapp.Client{BaseURL: c.o.APIURL, Version: c.o.APIVersion, Token: c.o.Token,
		Timeout: max(c.o.RequestTimeout, 30*time.Second), HTTP: whatsapp.NewHTTPClient(1)}
}

// MismatchError is a CSV that does not fit its template: the problems
// name the columns.
type MismatchError struct {
	Where    string // "the template", or the approved one and whence
	Problems template.Problems
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("the CSV does not fit %s: %v", e.Where, e.Problems)
}
func (e *MismatchError) Unwrap() error { return e.Problems }

// NotApprovedError is a template that cannot be sent now: its status
// says why and until when.
type NotApprovedError struct {
	Err    error  // wraps template.ErrNotApproved
	Status string // as Meta gives it: PAUSED, DISABLED, REJECTED…
}

func (e *NotApprovedError) Error() string { return e.Err.Error() }
func (e *NotApprovedError) Unwrap() error { return e.Err }

// Hint says what the status means for the campaign.
func (e *NotApprovedError) Hint() string {
	switch strings.ToUpper(e.Status) {
	case "PAUSED":
		return whatsapp.PausedHint + "; run the same command again then"
	case "DISABLED":
		return "the template is disabled for good after repeated pauses: create a new template"
	case "PENDING", "IN_APPEAL":
		return "the template is still in review: run again once WhatsApp Manager shows it approved"
	case "REJECTED":
		return "the template was rejected: edit it and submit it again in WhatsApp Manager"
	}
	return "only APPROVED templates can be sent: check its status in WhatsApp Manager"
}

// mappingError says why the CSV and the template do not fit.
func mappingError(err error, name, lang string, src source) error {
	var probs template.Problems
	if errors.As(err, &probs) {
		where := "the template"
		if src.def != nil {
			where = fmt.Sprintf("template %s/%s as approved (%s)", name, lang, src.from)
		}
		return &MismatchError{Where: where, Problems: probs}
	}
	if errors.Is(err, template.ErrNotApproved) {
		return &NotApprovedError{Err: err, Status: src.def.Status}
	}
	return err
}

// sandboxKnows lists the approved templates run --sandbox checks sends
// against, for the log.
func sandboxKnows() []string {
	var names []string
	for _, d := range sandbox.DefaultTemplates() {
		if d.Approved() && !slices.Contains(names, d.Name) {
			names = append(names, d.Name)
		}
	}
	return names
}
