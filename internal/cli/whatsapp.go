package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/inbound"
	"github.com/bulksend/bulksend/internal/run"
	"github.com/bulksend/bulksend/internal/whatsapp"
	wachannel "github.com/bulksend/bulksend/internal/whatsapp/channel"
	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// This file is run's WhatsApp channel as the command line knows it: its
// flags, how they make the channel, and its errors in the operator's words.

var whatsappEntry = &channelEntry{
	name:         campaign.WhatsApp,
	token:        true,
	check:        checkWhatsApp,
	build:        buildWhatsApp,
	noSender:     "pass --from with your sender phone-number ID(s), or add a from column to the CSV",
	channelWords: whatsappWords,
	plan:         printPlan,
	inbound: inbound.Channel{
		Owns:       wachannel.OwnsBody,
		Statuses:   wachannel.Statuses,
		ReadLog:    wachannel.ReadLog,
		EachSender: true,
	},
	endpoint: func(o *runOptions, ios *IO) string {
		if u := o.apiBase(ios); u != "https://graph.facebook.com" {
			return u
		}
		return ""
	},
}

// Flags of one channel only: given with the other, they are refused rather
// than ignored.
var (
	whatsappOnly = []string{"template", "lang", "waba", "param", "ignore-column", "param-format", "api", "mm-policy",
		"no-preflight", "rate-card", "calling-codes", "token-file", "api-url", "api-version"}
	smsOnly = []string{"text", "text-file", "message-type", "configuration-set", "max-price", "ttl", "region",
		"endpoint-url", "sync-opt-outs", "throttle-tries"}
)

// checkWhatsApp checks the flags of a WhatsApp run.
func checkWhatsApp(o *runOptions) error {
	for _, f := range smsOnly {
		if o.changed(f) {
			return usagef("add --channel sms for an SMS campaign", "--%s goes with --channel sms", f)
		}
	}
	for _, f := range o.from {
		if f == "" || strings.Trim(f, "0123456789") != "" {
			return usagef("--from takes the phone-number IDs shown in WhatsApp Manager (digits), not phone numbers", "invalid --from %q", f)
		}
	}
	for _, c := range o.ignoreColumns {
		if k := strings.ToLower(strings.TrimSpace(c)); k == strings.ToLower(strings.TrimSpace(o.phoneColumn)) || k == "from" || k == "id" {
			return usagef("", "--ignore-column %q: the phone, from and id columns are never template parameters", c)
		}
	}
	return nil
}

// buildWhatsApp makes the WhatsApp channel of a run.
func buildWhatsApp(in channelInput) (run.Channel, error) {
	o := in.o
	if in.first && o.template == "" {
		return nil, usagef("name the approved template, e.g. --template spring_sale", "--template is required on the first run")
	}
	consts, err := o.consts()
	if err != nil {
		return nil, err
	}
	return wachannel.New(wachannel.Options{
		Template: o.template, Lang: o.lang, Consts: consts, ParamFlags: paramFlags(o.params),
		IgnoreColumns: o.ignoreColumns, ParamFormat: o.paramFormat, WABA: in.waba, API: o.api, MMPolicy: o.mmPolicy,
		Token: in.token, APIURL: o.apiBase(in.ios), APIVersion: o.apiVersion,
		RequestTimeout: o.requestTimeout, TimeoutGiven: o.changed("request-timeout"),
		NoPreflight: o.noPreflight, Sandbox: o.sandbox, DryRun: o.dryRun, Log: o.log,
	}), nil
}

// whatsappWords names the flags that fix the WhatsApp channel's errors.
func whatsappWords(err error) error {
	var (
		needToken    *wachannel.NeedTokenError
		notMarketing *wachannel.NotMarketingError
		noBody       *wachannel.NoBodyError
		mismatch     *wachannel.MismatchError
		tplRead      *wachannel.TemplateReadError
		numberRead   *wachannel.NumberReadError
		api          *whatsapp.APIError
	)
	switch {
	case errors.As(err, &needToken):
		return usagef("export WHATSAPP_TOKEN=… or pass --token-file FILE", "%w", err)
	case errors.As(err, &notMarketing):
		return usagef("drop --api marketing to send it through Cloud API; nothing was sent", "--api marketing: %w", err)
	case errors.As(err, &mismatch):
		named := &wachannel.MismatchError{Where: mismatch.Where, Problems: make(template.Problems, len(mismatch.Problems))}
		for i, p := range mismatch.Problems {
			named.Problems[i] = flagNames(p)
		}
		return &usageError{Err: named, Hint: "see README \"Templates\" for the column names; nothing was sent"}
	case errors.As(err, &tplRead):
		switch {
		case errors.Is(err, whatsapp.ErrNoTemplate):
			return &hintError{err: err, hint: fmt.Sprintf("check --template and --lang against WhatsApp Manager's list for WABA %s", tplRead.WABA)}
		case errors.As(err, &api) && api.Code == 100:
			return &hintError{err: err, hint: "check --waba: it is the WhatsApp Business Account ID shown in WhatsApp Manager, not a phone-number ID"}
		case errors.As(err, &api):
			return err
		}
		return &hintError{err: err, hint: "the API could not be reached to read the template: check the network and --api-url, then run again; nothing was sent"}
	case errors.As(err, &noBody):
		return usagef("reconcile reads the webhooks your receiver logged (a JSON body per line, pretty-printed, or an array of them)", "%w", err)
	case errors.As(err, &numberRead):
		switch {
		case errors.As(err, &api) && api.Code == 100:
			return &hintError{err: err, hint: "check --from (or the from column): it takes phone-number IDs as WhatsApp Manager shows them; or skip this check with --no-preflight"}
		case errors.As(err, &api):
			return err
		}
		return &hintError{err: err, hint: "the API could not be reached to read the sender number: check the network and --api-url; or skip this check with --no-preflight"}
	}
	return err
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
