package channel

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/bulksend/bulksend/internal/logfile"
	"github.com/bulksend/bulksend/internal/optout"
	"github.com/bulksend/bulksend/internal/reconcile"
	"github.com/bulksend/bulksend/internal/whatsapp/webhook"
)

// This file is what comes back from Meta as package inbound reads it:
// the bodies bulksend receive keeps, the logs reconcile reads.

// OwnsBody reports whether a body bulksend receive kept is a WhatsApp
// webhook's: a WhatsApp body names its object; an AWS event or SNS
// notification does not.
func OwnsBody(body []byte) bool { return bytes.Contains(body, []byte(`"whatsapp_business_account"`)) }

// Statuses reads the webhook bodies in r: their statuses, and what
// recipients said back to hear (see Hearing).
func Statuses(r io.Reader, keywords optout.Keywords, hear func(optout.Heard)) reconcile.Source {
	wr := webhook.NewReader(r)
	wr.SetOther(Hearing(keywords, hear))
	return webhook.Statuses(wr)
}

// ReadLog applies the webhook log at path ("-": stdin, gzip detected) to
// rc, what recipients said back to hear: a *NoBodyError when it holds no
// webhook body at all. Bodies without statuses (messages, template or
// account updates: a quiet hour of a receiver's log) are logged, and no
// error.
func ReadLog(ctx context.Context, rc *reconcile.Reconciler, path string, stdin io.Reader, log *slog.Logger, keywords optout.Keywords, hear func(optout.Heard)) error {
	log.Debug("reading webhook log", "path", path)
	f, err := logfile.OpenContext(ctx, path, stdin)
	if err != nil {
		return err
	}
	defer f.Close() // read only: its close error says nothing
	r := webhook.NewReader(f)
	r.SetOther(Hearing(keywords, hear))
	if err := rc.Read(ctx, path, webhook.Statuses(r)); err != nil {
		if ctx.Err() == nil {
			err = fmt.Errorf("webhook log %s: %w", path, err)
		}
		return err
	}
	switch c := r.Counts(); {
	case c.Bytes > 0 && c.Statuses == 0 && c.NotStatus == 0:
		return &NoBodyError{Path: path, Counts: c}
	case c.Statuses == 0 && c.NotStatus > 0:
		log.Info(fmt.Sprintf("webhook log %s: %s: nothing to apply", path, describeLog(c)))
	}
	return nil
}

// NoBodyError is a log with bytes and no webhook body at all: not the log
// meant. Saying "nothing changed" would tell cron all is well.
type NoBodyError struct {
	Path   string
	Counts webhook.Counts
}

func (e *NoBodyError) Error() string {
	return fmt.Sprintf("webhook log %s: no webhook body in it: %s", e.Path, describeLog(e.Counts))
}

// describeLog says what a log held instead of statuses, e.g. "39 lines,
// none a webhook body".
func describeLog(c webhook.Counts) string {
	n := func(v int64, one, many string) string {
		if v == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", v, many)
	}
	lines := n(c.TextLines, "line", "lines")
	switch {
	case c.NotStatus > 0 && c.Invalid > 0:
		return fmt.Sprintf("%s: %s without statuses (messages, not statuses?) and %s (first at line %d)", lines,
			n(c.NotStatus, "webhook body", "webhook bodies"), n(c.Invalid, "record that is not a webhook body", "records that are not webhook bodies"), c.FirstInvalid[0])
	case c.NotStatus > 0:
		return fmt.Sprintf("%s: %s, none with statuses (messages, not statuses?)", lines, n(c.NotStatus, "webhook body", "webhook bodies"))
	default:
		return lines + ", none a webhook body"
	}
}
