package report

import (
	"context"
	"io"
	"strconv"
	"time"

	"github.com/bulksend/bulksend/internal/csvout"
	"github.com/bulksend/bulksend/internal/store"
)

// ExportColumns are the export's columns. A column is Text (neutralised
// for spreadsheets) unless it says otherwise; only numbers bulksend
// formats and the phone columns are not.
var ExportColumns = []csvout.Column{
	{Name: "row", Kind: csvout.Number}, {Name: "phone", Kind: csvout.Phone}, {Name: "from", Kind: csvout.Phone},
	{Name: "status"}, {Name: "attempts", Kind: csvout.Number}, {Name: "wamid"}, {Name: "error_code", Kind: csvout.Number},
	{Name: "error_title"}, {Name: "updated_at"}, {Name: "id"}, {Name: "line", Kind: csvout.Number}, {Name: "reason"},
	{Name: "sent_at"}, {Name: "delivered_at"}, {Name: "read_at"},
	// Added by issue 11, at the end: columns are only ever appended.
	{Name: "held"}, {Name: "fail_reason"}, {Name: "pricing_category"}, {Name: "pricing_type"}, {Name: "billable"},
	// Added by issue 12 (SMS; empty for WhatsApp but throttles).
	{Name: "parts", Kind: csvout.Number}, {Name: "encoding"}, {Name: "throttles", Kind: csvout.Number},
	{Name: "billed_parts", Kind: csvout.Number}, {Name: "charged_usd", Kind: csvout.Number},
	// Added by issue 26: the recipient's first reply (a text, a tapped button).
	{Name: "replied_at"}, {Name: "reply"},
}

// flag is a yes/no column: "true" or empty.
func flag(b bool) string {
	if b {
		return "true"
	}
	return ""
}

// optBool is a column that may be unknown: "true", "false" or empty.
func optBool(b *bool) string {
	if b == nil {
		return ""
	}
	return strconv.FormatBool(*b)
}

// optInt is n, "" for 0 (not said).
func optInt(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func optFloat(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// WriteExport writes the export as CSV, streaming; raw: cells as stored.
func WriteExport(ctx context.Context, st *store.Store, w io.Writer, raw bool) error {
	cw := csvout.NewWriter(w, ExportColumns, raw)
	if err := cw.WriteHeader(); err != nil {
		return err
	}
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	err := st.Export(ctx, func(r store.ExportRow) error {
		code := ""
		if r.ErrorCode != 0 {
			code = strconv.Itoa(r.ErrorCode)
		}
		return cw.Write(strconv.FormatInt(r.Row, 10), r.Phone, r.Sender, string(r.Status), strconv.Itoa(r.Attempts),
			r.MessageID, code, r.ErrorTitle, ts(r.UpdatedAt), r.ExtID, strconv.FormatInt(r.Line, 10), r.Reason,
			ts(r.SentAt), ts(r.DeliveredAt), ts(r.ReadAt),
			flag(r.Held), r.FailReason, r.Price.Category, r.Price.Type, optBool(r.Price.Billable),
			optInt(r.Parts), r.Encoding, strconv.Itoa(r.Throttles), optInt(r.Price.Parts), optFloat(r.Price.Charge),
			ts(r.RepliedAt), r.Reply)
	})
	if err != nil {
		return err
	}
	return cw.Flush()
}

// AttemptsColumns are the attempts record's columns (see ExportColumns).
var AttemptsColumns = []csvout.Column{
	{Name: "run", Kind: csvout.Number}, {Name: "row", Kind: csvout.Number}, {Name: "sender", Kind: csvout.Phone}, {Name: "at"},
	{Name: "latency_ms", Kind: csvout.Number}, {Name: "class"}, {Name: "code", Kind: csvout.Number},
	// Added by schema version 7, at the end: columns are only ever appended.
	{Name: "error"},
}

// WriteAttempts writes the attempts record as CSV, streaming; raw: cells
// as stored.
func WriteAttempts(ctx context.Context, st *store.Store, w io.Writer, raw bool) error {
	cw := csvout.NewWriter(w, AttemptsColumns, raw)
	if err := cw.WriteHeader(); err != nil {
		return err
	}
	err := st.EachAttempt(ctx, func(a store.AttemptRow) error {
		return cw.Write(strconv.FormatInt(a.Run, 10), strconv.FormatInt(a.Row, 10), a.Sender,
			a.At.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
			strconv.FormatFloat(float64(a.Latency.Microseconds())/1000, 'f', -1, 64),
			a.Class, optInt(a.Code), a.Error)
	})
	if err != nil {
		return err
	}
	return cw.Flush()
}
