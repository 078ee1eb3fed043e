package cli

import (
	"bufio"
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/bulksend/bulksend/internal/atomicfile"
	"github.com/bulksend/bulksend/internal/report"
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
updated_at, then id, line, reason, sent_at, delivered_at, read_at, …,
replied_at and reply (the recipient's first reply: a text or a tapped
button, recorded by reconcile or receive). Columns are
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

func runExport(ctx context.Context, ios *IO, o *exportOptions) error {
	st, err := openForReading(o.db)
	if err != nil {
		return err
	}
	defer st.Close()
	write := func(w io.Writer) error { return report.WriteExport(ctx, st, w, o.raw) }
	if o.attempts {
		write = func(w io.Writer) error { return report.WriteAttempts(ctx, st, w, o.raw) }
	}
	if o.out == "" {
		bw := bufio.NewWriter(ios.Out)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	// Written beside the target and renamed: a failed export leaves no half file.
	// 0600: it holds phone numbers.
	return atomicfile.Write(o.out, 0o600, func(bw *bufio.Writer) error { return write(bw) })
}
