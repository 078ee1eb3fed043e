package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/bulksend/bulksend/internal/csvout"
	"github.com/bulksend/bulksend/internal/store"
)

type exportOptions struct {
	db       string
	out      string
	attempts bool
	raw      bool
}

func newExportCmd(ios *IO) *cobra.Command {
	o := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export CAMPAIGN.csv | --db PATH [-o FILE] [--attempts] [--raw]",
		Short: "Write one CSV row per recipient with its final state, or per request with --attempts",
		Long: `Export writes one CSV row per recipient, in the campaign's row order, with the
columns row, phone, from, status, attempts, wamid, error_code, error_title,
updated_at, then id, line, reason, sent_at, delivered_at, read_at. Columns are
only ever added at the end. Without -o it writes to stdout; with -o the file
appears only when complete.

With --attempts it writes the attempts record instead: one CSV row per request
to the provider, of every run, in the order they left, with the columns run,
row, sender, at (RFC 3339 UTC, to the millisecond), latency_ms, class
(accepted, throttled, transient, permanent, in doubt…), code (the
provider's error code, empty for none) and error (the name of an answer's
error without a code, as AWS names them: ThrottlingException). It holds no
phone number: join it to the export on row.

Both are made to be opened in a spreadsheet: a cell that Excel, LibreOffice
or Google Sheets would run as a formula (it starts with =, +, -, @, a tab or a
carriage return: a CSV cell, a webhook's error title such as
=HYPERLINK(...) or =cmd|' /C calc'!A0) is written with a leading
apostrophe, which shows it as text. Phones and sender numbers in E.164
(+447911123456, in phone, from and sender) and the numeric columns (row,
attempts, error_code, line, parts, throttles, billed_parts, charged_usd;
run, latency_ms, code) are written as they are. --raw writes every cell
exactly as stored, for a program that reads the file rather than a person
who opens it.`,
		Args: checkpointArgs(&o.db),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExport(cmd.Context(), ios, o)
		},
	}
	cmd.Flags().StringVar(&o.db, "db", "", "checkpoint file (default: beside the CSV)")
	cmd.Flags().StringVarP(&o.out, "output", "o", "", "write to FILE instead of stdout")
	cmd.Flags().BoolVar(&o.attempts, "attempts", false, "write the attempts record: one row per request to the provider")
	cmd.Flags().BoolVar(&o.raw, "raw", false, "write cells exactly as stored, without the apostrophe that keeps a spreadsheet from running a cell such as =HYPERLINK(...) as a formula: for programs, not for opening in a spreadsheet")
	return cmd
}

// exportColumns are the export's columns. A column is Text (neutralised
// for spreadsheets) unless it says otherwise; only numbers bulksend
// formats and the phone columns are not.
var exportColumns = []csvout.Column{
	{Name: "row", Kind: csvout.Number}, {Name: "phone", Kind: csvout.Phone}, {Name: "from", Kind: csvout.Phone},
	{Name: "status"}, {Name: "attempts", Kind: csvout.Number}, {Name: "wamid"}, {Name: "error_code", Kind: csvout.Number},
	{Name: "error_title"}, {Name: "updated_at"}, {Name: "id"}, {Name: "line", Kind: csvout.Number}, {Name: "reason"},
	{Name: "sent_at"}, {Name: "delivered_at"}, {Name: "read_at"},
	// Added by issue 11, at the end: columns are only ever appended.
	{Name: "held"}, {Name: "fail_reason"}, {Name: "pricing_category"}, {Name: "pricing_type"}, {Name: "billable"},
	// Added by issue 12 (SMS; empty for WhatsApp but throttles).
	{Name: "parts", Kind: csvout.Number}, {Name: "encoding"}, {Name: "throttles", Kind: csvout.Number},
	{Name: "billed_parts", Kind: csvout.Number}, {Name: "charged_usd", Kind: csvout.Number},
}

func runExport(ctx context.Context, ios *IO, o *exportOptions) error {
	st, err := openForReading(o.db)
	if err != nil {
		return err
	}
	defer st.Close()
	write := func(ctx context.Context, st *store.Store, w io.Writer) error { return writeExport(ctx, st, w, o.raw) }
	if o.attempts {
		write = func(ctx context.Context, st *store.Store, w io.Writer) error { return writeAttempts(ctx, st, w, o.raw) }
	}
	if o.out == "" {
		bw := bufio.NewWriter(ios.Out)
		if err := write(ctx, st, bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	// Write beside the target and rename, so a failed export leaves no half file.
	tmp, err := os.CreateTemp(filepath.Dir(o.out), ".bulksend-export-*")
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriter(tmp)
	if err := write(ctx, st, bw); err != nil {
		tmp.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("export: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("export: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return os.Rename(tmp.Name(), o.out)
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

// writeExport writes the export as CSV, streaming; raw: cells as stored.
func writeExport(ctx context.Context, st *store.Store, w io.Writer, raw bool) error {
	cw := csvout.NewWriter(w, exportColumns, raw)
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
			r.WAMID, code, r.ErrorTitle, ts(r.UpdatedAt), r.ExtID, strconv.FormatInt(r.Line, 10), r.Reason,
			ts(r.SentAt), ts(r.DeliveredAt), ts(r.ReadAt),
			flag(r.Held), r.FailReason, r.Price.Category, r.Price.Type, optBool(r.Price.Billable),
			optInt(r.Parts), r.Encoding, strconv.Itoa(r.Throttles), optInt(r.Price.Parts), optFloat(r.Price.Charge))
	})
	if err != nil {
		return err
	}
	return cw.Flush()
}

// attemptsColumns are the attempts record's columns (see exportColumns).
var attemptsColumns = []csvout.Column{
	{Name: "run", Kind: csvout.Number}, {Name: "row", Kind: csvout.Number}, {Name: "sender", Kind: csvout.Phone}, {Name: "at"},
	{Name: "latency_ms", Kind: csvout.Number}, {Name: "class"}, {Name: "code", Kind: csvout.Number},
	// Added by schema version 7, at the end: columns are only ever appended.
	{Name: "error"},
}

// writeAttempts writes the attempts record as CSV, streaming; raw: cells
// as stored.
func writeAttempts(ctx context.Context, st *store.Store, w io.Writer, raw bool) error {
	cw := csvout.NewWriter(w, attemptsColumns, raw)
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
