package channel

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/bulksend/bulksend/internal/logfile"
	"github.com/bulksend/bulksend/internal/optout"
	"github.com/bulksend/bulksend/internal/reconcile"
	"github.com/bulksend/bulksend/internal/sms/smsevent"
)

// This file is what comes back from AWS as package inbound reads it: the
// events and inbound messages bulksend receive keeps, the event logs
// reconcile reads.

// Statuses reads the AWS event records and SNS notifications in r: their
// statuses, and the inbound messages to hear (see Hearing).
func Statuses(r io.Reader, keywords optout.Keywords, hear func(optout.Heard)) reconcile.Source {
	er := smsevent.NewReader(r)
	er.SetInbound(Hearing(keywords, hear))
	return smsevent.Statuses(er)
}

// ReadLog applies the AWS SMS event records at path ("-": stdin, gzip
// detected) to rc, the inbound messages to hear: JSON lines from Firehose
// or a CloudWatch Logs export (see package smsevent). A log of records
// and no SMS event is a *NoEventError.
func ReadLog(ctx context.Context, rc *reconcile.Reconciler, path string, stdin io.Reader, log *slog.Logger, keywords optout.Keywords, hear func(optout.Heard)) error {
	log.Debug("reading SMS event log", "path", path)
	f, err := logfile.OpenContext(ctx, path, stdin)
	if err != nil {
		return err
	}
	defer f.Close()
	r := smsevent.NewReader(f)
	r.SetInbound(Hearing(keywords, hear))
	if err := rc.Read(ctx, path, smsevent.Statuses(r)); err != nil {
		if ctx.Err() == nil {
			err = fmt.Errorf("SMS event log %s: %w", path, err)
		}
		return err
	}
	if c := r.Counts(); c.Events == 0 && c.Invalid+c.NotEvent > 0 {
		return &NoEventError{Path: path, Counts: c}
	}
	return nil
}

// NoEventError is a log with records and no SMS event in it: not the log
// meant.
type NoEventError struct {
	Path   string
	Counts smsevent.Counts
}

func (e *NoEventError) Error() string {
	c, where := e.Counts, ""
	if len(c.FirstInvalid) > 0 {
		where = fmt.Sprintf(" (first invalid at line %d)", c.FirstInvalid[0])
	}
	return fmt.Sprintf("SMS event log %s: no SMS event in it: %d records not SMS events, %d invalid%s", e.Path, c.NotEvent, c.Invalid, where)
}
