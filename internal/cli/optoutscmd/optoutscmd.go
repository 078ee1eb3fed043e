// Package optoutscmd is bulksend optouts: the opt-outs every campaign
// honours, kept in the operator ledger, listed, added, removed, imported
// and exported by hand.
package optoutscmd

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bulksend/bulksend/internal/atomicfile"
	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/cli/cmdutil"
	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/csvout"
	"github.com/bulksend/bulksend/internal/ledger"
)

// optoutsOptions are the flags of bulksend optouts.
type optoutsOptions struct {
	ledger  string
	source  string
	channel string
	region  string
	out     string
	json    bool
	raw     bool
	// isChannel says whether --channel names a channel bulksend has.
	isChannel func(campaign.Channel) bool
}

// New is the optouts command; isChannel is the channel registry's word
// on --channel.
func New(ios *cmdutil.IO, isChannel func(campaign.Channel) bool) *cobra.Command {
	o := &optoutsOptions{isChannel: isChannel}
	cmd := &cobra.Command{
		Use:   "optouts list|add|remove|import|export",
		Short: "Keep the opt-outs every campaign honours, in the operator ledger",
		Long: `Optouts keeps the recipients who asked to get no more messages, in the
operator ledger (--ledger, $BULKSEND_LEDGER, else the user's state folder).
Every run reads them before it sends: a phone on the list is skipped with
reason opted_out and how and when it opted out, in every campaign, whatever
the channel. Each entry keeps its phone (E.164), the channel and source it
came from and when; the first opt-out of a phone is kept.

  bulksend optouts list [--json]
  bulksend optouts add PHONE… [--source TEXT] [--channel whatsapp|sms]
  bulksend optouts remove PHONE…        (the recipient opted back in)
  bulksend optouts import FILE [--source TEXT] [--channel …]
                                        (one phone per line, or a CSV with a phone column)
  bulksend optouts export [-o FILE] [--raw]
                                        (CSV: phone, channel, source, at)`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.ledger, "ledger", "", "the operator ledger (default $BULKSEND_LEDGER, else bulksend/ledger.db in the user's state directory)")
	pf.StringVar(&o.region, "default-region", "", "region (ISO 3166 code, e.g. GB) for numbers written without a country code")
	add := func(use, short string, args cobra.PositionalArgs, run func(ctx context.Context, l *ledger.Ledger, args []string) error) *cobra.Command {
		c := &cobra.Command{Use: use, Short: short, Args: args, RunE: func(c *cobra.Command, args []string) error {
			l, err := o.open(c.Context())
			if err != nil {
				return err
			}
			defer l.Close()
			return run(c.Context(), l, args)
		}}
		cmd.AddCommand(c)
		return c
	}
	list := add("list [--json]", "List the opt-outs", cmdutil.NoArgs, func(ctx context.Context, l *ledger.Ledger, _ []string) error {
		return o.list(ctx, ios, l)
	})
	list.Flags().BoolVar(&o.json, "json", false, "one JSON object per opt-out")
	for _, c := range []*cobra.Command{
		add("add PHONE…", "Add opt-outs by hand", cobra.MinimumNArgs(1), func(ctx context.Context, l *ledger.Ledger, args []string) error {
			return o.addPhones(ctx, ios, l, strings.NewReader(strings.Join(args, "\n")), "the command line")
		}),
		add("import FILE", "Add the opt-outs of a file: one phone per line, or a CSV with a phone column", cobra.ExactArgs(1), func(ctx context.Context, l *ledger.Ledger, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return cmdutil.Usagef("", "opt-outs file: %w", err)
			}
			defer f.Close()
			return o.addPhones(ctx, ios, l, bufio.NewReader(f), args[0])
		}),
	} {
		c.Flags().StringVar(&o.source, "source", "", `how they opted out, kept with each (default "by hand" or "import FILE")`)
		c.Flags().StringVar(&o.channel, "channel", "", "the channel they opted out on: whatsapp or sms (default: any)")
	}
	add("remove PHONE…", "Remove opt-outs: the recipients opted back in", cobra.MinimumNArgs(1), func(ctx context.Context, l *ledger.Ledger, args []string) error {
		return o.remove(ctx, ios, l, args)
	})
	export := add("export [-o FILE]", "Write the opt-outs as CSV: phone, channel, source, at", cmdutil.NoArgs, func(ctx context.Context, l *ledger.Ledger, _ []string) error {
		return o.export(ctx, ios, l)
	})
	export.Flags().StringVarP(&o.out, "output", "o", "", "write to FILE (mode 0600) instead of stdout")
	export.Flags().BoolVar(&o.raw, "raw", false, "write cells exactly as stored (see export --raw)")
	return cmd
}

func (o *optoutsOptions) open(ctx context.Context) (*ledger.Ledger, error) {
	path := o.ledger
	if path == "" {
		var err error
		if path, err = ledger.DefaultPath(); err != nil {
			return nil, cmdutil.Usagef("pass --ledger PATH or set $BULKSEND_LEDGER", "operator ledger: %w", err)
		}
	}
	l, err := ledger.Open(ctx, path)
	if err != nil {
		return nil, cmdutil.Usagef("", "operator ledger: %w", err)
	}
	return l, nil
}

// phones reads phones, one per line or a CSV's phone column, as E.164;
// an unusable line is refused, naming it.
func (o *optoutsOptions) phones(r io.Reader, from string) ([]string, error) {
	lr := csvin.NewListReader(r, o.region)
	var out []string
	for {
		p, _, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, cmdutil.Usagef("write phones in E.164 (+447911123456), or give --default-region", "%s: %w", from, err)
		}
		out = append(out, p)
	}
}

func (o *optoutsOptions) addPhones(ctx context.Context, ios *cmdutil.IO, l *ledger.Ledger, r io.Reader, from string) error {
	if o.channel != "" && !o.isChannel(campaign.Channel(o.channel)) {
		return cmdutil.Usagef("", "--channel %q: whatsapp or sms", o.channel)
	}
	phones, err := o.phones(r, from)
	if err != nil {
		return err
	}
	source := o.source
	if source == "" {
		source = "by hand"
		if from != "the command line" {
			source = "import " + from
		}
	}
	now := time.Now().UTC()
	outs := make([]ledger.OptOut, len(phones))
	for i, p := range phones {
		outs[i] = ledger.OptOut{Phone: p, Channel: o.channel, Source: source, At: now}
	}
	n, err := l.AddOptOuts(ctx, outs)
	if err != nil {
		return err
	}
	fmt.Fprintf(ios.Err, "bulksend: %d opt-outs added, %d already known (%s)\n", n, len(phones)-n, cmdutil.Esc(l.Path()))
	return nil
}

func (o *optoutsOptions) remove(ctx context.Context, ios *cmdutil.IO, l *ledger.Ledger, args []string) error {
	phones, err := o.phones(strings.NewReader(strings.Join(args, "\n")), "the command line")
	if err != nil {
		return err
	}
	for _, p := range phones {
		if err := l.RemoveOptOut(ctx, p); err != nil {
			return err
		}
	}
	fmt.Fprintf(ios.Err, "bulksend: %d opt-outs removed\n", len(phones))
	return nil
}

func (o *optoutsOptions) list(ctx context.Context, ios *cmdutil.IO, l *ledger.Ledger) error {
	w := bufio.NewWriter(ios.Out)
	enc := json.NewEncoder(w)
	err := l.EachOptOut(ctx, func(oo ledger.OptOut) error {
		if o.json {
			return enc.Encode(struct {
				Phone   string    `json:"phone"`
				Channel string    `json:"channel,omitempty"`
				Source  string    `json:"source"`
				At      time.Time `json:"at"`
				Covers  string    `json:"covers"`
				Sender  string    `json:"sender,omitempty"`
			}{oo.Phone, oo.Channel, oo.Source, oo.At.UTC(), covers(oo), oo.Sender})
		}
		_, err := fmt.Fprintf(w, "%-16s %-8s %-9s %s  %s\n", cmdutil.Esc(oo.Phone), cmdutil.Esc(cmp.Or(oo.Channel, "any")), covers(oo), oo.At.UTC().Format(time.RFC3339), cmdutil.Esc(oo.Source))
		return err
	})
	if err != nil {
		return err
	}
	return w.Flush()
}

// covers says what an opt-out stops: "marketing" messages only, or "all".
func covers(oo ledger.OptOut) string {
	if oo.MarketingOnly {
		return "marketing"
	}
	return "all"
}

func (o *optoutsOptions) export(ctx context.Context, ios *cmdutil.IO, l *ledger.Ledger) error {
	write := func(bw *bufio.Writer) error {
		cw := csvout.NewWriter(bw, []csvout.Column{{Name: "phone", Kind: csvout.Phone}, {Name: "channel"}, {Name: "source"}, {Name: "at"}, {Name: "covers"}, {Name: "sender"}}, o.raw)
		if err := cw.WriteHeader(); err != nil {
			return err
		}
		if err := l.EachOptOut(ctx, func(oo ledger.OptOut) error {
			return cw.Write(oo.Phone, oo.Channel, oo.Source, oo.At.UTC().Format(time.RFC3339), covers(oo), oo.Sender)
		}); err != nil {
			return err
		}
		return cw.Flush()
	}
	if o.out == "" {
		bw := bufio.NewWriter(ios.Out)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	return atomicfile.Write(o.out, 0o600, write)
}
