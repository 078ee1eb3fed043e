package report

import (
	"bytes"
	"database/sql"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file checks a rendered report against the checkpoint it was made
// from, by reading both independently: the page is parsed as HTML (the
// standard library's XML decoder in its HTML mode), and the checkpoint is
// queried with SQL of this file's own, not through Gather.

// node is an element of a parsed page.
type node struct {
	name     string
	attrs    map[string]string
	children []*node
	text     strings.Builder // the text directly inside it
}

// allText is the text of n and everything inside it.
func (n *node) allText() string {
	var b strings.Builder
	var walk func(*node)
	walk = func(n *node) {
		b.WriteString(n.text.String())
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

func (n *node) walk(fn func(*node)) {
	fn(n)
	for _, c := range n.children {
		c.walk(fn)
	}
}

// parseHTML parses an HTML page into a tree of elements. It fails on
// markup that does not nest.
func parseHTML(b []byte) (*node, error) {
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	root := &node{name: "#document", attrs: map[string]string{}}
	stack := []*node{root}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		top := stack[len(stack)-1]
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{name: strings.ToLower(t.Name.Local), attrs: map[string]string{}}
			for _, a := range t.Attr {
				name := strings.ToLower(a.Name.Local)
				if a.Name.Space != "" {
					name = strings.ToLower(a.Name.Space) + ":" + name
				}
				n.attrs[name] = a.Value
			}
			top.children = append(top.children, n)
			stack = append(stack, n)
		case xml.EndElement:
			if len(stack) == 1 || stack[len(stack)-1].name != strings.ToLower(t.Name.Local) {
				return nil, fmt.Errorf("line %d: </%s> closes <%s>", lineOf(d), t.Name.Local, top.name)
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			top.text.Write(t)
		}
	}
	if len(stack) != 1 {
		return nil, fmt.Errorf("<%s> is never closed", stack[len(stack)-1].name)
	}
	return root, nil
}

func lineOf(d *xml.Decoder) int {
	line, _ := d.InputPos()
	return line
}

// figures are the page's data-figure values, by name.
func figures(root *node) map[string]string {
	out := map[string]string{}
	root.walk(func(n *node) {
		if k, ok := n.attrs["data-figure"]; ok {
			out[k] = n.attrs["data-value"]
		}
	})
	return out
}

// checkSelfContained fails t if the page refers to anything outside it:
// a script, a stylesheet or font link, a src or href that is not a
// fragment, an @import or a url() that is not a fragment. (A URL in text,
// an SMS body's say, is text: it loads nothing.)
func selfContained(page []byte, root *node) []string {
	var out []string
	errorf := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	root.walk(func(n *node) {
		switch n.name {
		case "script", "link", "iframe", "img", "object", "embed", "base", "image", "use", "audio", "video", "source":
			errorf("the page has a <%s> element: %v", n.name, n.attrs)
		}
		for k, v := range n.attrs {
			switch {
			case k == "src" || k == "href" || k == "xlink:href" || k == "action" || k == "poster" || k == "srcset":
				if !strings.HasPrefix(v, "#") {
					errorf("<%s %s=%q>: the page refers outside itself", n.name, k, v)
				}
			case strings.HasPrefix(k, "on"):
				errorf("<%s %s=...>: an event handler (script)", n.name, k)
			case strings.Contains(strings.ToLower(v), "url(") && !strings.Contains(v, "url(#"):
				errorf("<%s %s=%q>: a url() that is not a fragment", n.name, k, v)
			}
		}
	})
	low := strings.ToLower(string(page))
	for _, bad := range []string{"@import", "javascript:", "@font-face"} {
		if strings.Contains(low, bad) {
			errorf("the page contains %q", bad)
		}
	}
	for i := 0; ; {
		j := strings.Index(low[i:], "url(")
		if j < 0 {
			break
		}
		i += j + 4
		if !strings.HasPrefix(low[i:], "#") {
			errorf("the page has url(%s…), not a fragment", low[i:min(len(low), i+20)])
		}
	}
	return out
}

// checkSelfContained fails t if the page refers to anything outside it.
func checkSelfContained(t *testing.T, page []byte, root *node) {
	t.Helper()
	for _, p := range selfContained(page, root) {
		t.Error(p)
	}
}

// checkAgainstCheckpoint checks the figures of the report page against the
// checkpoint at db: rows per state, rows by status and error code with
// their titles, the funnel, the runs and their attempts, attempts by class,
// skipped rows by kind and pricing categories.
func checkAgainstCheckpoint(t *testing.T, page []byte, db string) {
	t.Helper()
	problems, err := mismatches(page, db)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// mismatches lists what the page says that its checkpoint at db does not
// (see checkAgainstCheckpoint); an error when either cannot be read.
func mismatches(page []byte, db string) (_ []string, err error) {
	root, err := parseHTML(page)
	if err != nil {
		return nil, fmt.Errorf("parse the page: %w", err)
	}
	out := selfContained(page, root)
	errorf := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	got := figures(root)
	if len(got) == 0 {
		errorf("the page has no data-figure")
	}
	conn, err := sql.Open("sqlite3", "file:"+db+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// A failed query ends the check with its error.
	defer func() {
		if r := recover(); r != nil {
			qe, ok := r.(queryError)
			if !ok {
				panic(r)
			}
			err = qe
		}
	}()
	want := map[string]string{}
	rows := func(query string, scan func(*sql.Rows) error) {
		rs, err := conn.Query(query)
		if err != nil {
			panic(queryError{query, err})
		}
		defer rs.Close()
		for rs.Next() {
			if err := scan(rs); err != nil {
				panic(queryError{query, err})
			}
		}
		if err := rs.Err(); err != nil {
			panic(queryError{query, err})
		}
	}
	one := func(key, query string) {
		var v int64
		if err := conn.QueryRow(query).Scan(&v); err != nil {
			panic(queryError{query, err})
		}
		want[key] = strconv.FormatInt(v, 10)
	}
	for _, st := range []string{"pending", "sending", "in_doubt", "sent", "delivered", "read", "failed", "skipped"} {
		one("state."+st, `SELECT COUNT(*) FROM recipients WHERE status = '`+st+`'`)
	}
	one("state.total", `SELECT COUNT(*) FROM recipients`)
	one("rows", `SELECT COUNT(*) FROM recipients`)
	one("runs", `SELECT COUNT(*) FROM runs`)
	one("funnel.accepted", `SELECT COUNT(*) FROM recipients WHERE status IN ('sent', 'delivered', 'read') OR (status = 'failed' AND wamid IS NOT NULL)`)
	one("funnel.delivered", `SELECT COUNT(*) FROM recipients WHERE status IN ('delivered', 'read')`)
	one("funnel.read", `SELECT COUNT(*) FROM recipients WHERE status = 'read'`)
	one("funnel.failed_after_accept", `SELECT COUNT(*) FROM recipients WHERE status = 'failed' AND wamid IS NOT NULL`)
	one("funnel.unconfirmed", `SELECT COUNT(*) FROM recipients WHERE status = 'sent'`)
	one("delivered.n", `SELECT COUNT(*) FROM recipients WHERE delivered_at >= sent_at`)
	one("attempts.total", `SELECT COUNT(*) FROM attempts`)
	rows(`SELECT class, COUNT(*) FROM attempts GROUP BY class`, func(r *sql.Rows) error {
		var class string
		var n int64
		err := r.Scan(&class, &n)
		want["attempts.class."+class] = strconv.FormatInt(n, 10)
		return err
	})
	rows(`SELECT error, class, COUNT(*) FROM attempts WHERE code IS NULL AND error IS NOT NULL GROUP BY 1, 2`, func(r *sql.Rows) error {
		var name, class string
		var n int64
		err := r.Scan(&name, &class, &n)
		want["attempts.error."+name+"."+class] = strconv.FormatInt(n, 10)
		return err
	})
	rows(`SELECT id, (SELECT COUNT(*) FROM attempts WHERE run = id), (SELECT COUNT(*) FROM attempts WHERE run = id AND class = 'accepted'),
		(SELECT COUNT(*) FROM attempts WHERE run = id AND class = 'throttled') FROM runs`, func(r *sql.Rows) error {
		var id, n, acc, thr int64
		err := r.Scan(&id, &n, &acc, &thr)
		want[fmt.Sprintf("run.%d.attempts", id)] = strconv.FormatInt(n, 10)
		want[fmt.Sprintf("run.%d.accepted", id)] = strconv.FormatInt(acc, 10)
		want[fmt.Sprintf("run.%d.throttled", id)] = strconv.FormatInt(thr, 10)
		return err
	})
	rows(`SELECT sender, COUNT(*), SUM(class = 'accepted'), SUM(class = 'throttled') FROM attempts GROUP BY sender`, func(r *sql.Rows) error {
		var sender string
		var n, acc, thr int64
		err := r.Scan(&sender, &n, &acc, &thr)
		want["sender."+sender+".attempts"] = strconv.FormatInt(n, 10)
		want["sender."+sender+".accepted"] = strconv.FormatInt(acc, 10)
		want["sender."+sender+".throttled"] = strconv.FormatInt(thr, 10)
		return err
	})
	rows(`SELECT skip_kind, COUNT(*) FROM recipients WHERE status = 'skipped' GROUP BY skip_kind`, func(r *sql.Rows) error {
		var kind string
		var n int64
		err := r.Scan(&kind, &n)
		want["skipped."+kind] = strconv.FormatInt(n, 10)
		return err
	})
	rows(`SELECT pricing_category, COUNT(*) FROM recipients WHERE pricing_category IS NOT NULL GROUP BY 1`, func(r *sql.Rows) error {
		var c string
		var n int64
		err := r.Scan(&c, &n)
		want["pricing."+c] = strconv.FormatInt(n, 10)
		return err
	})
	// Rows by status and error code, each with its title in the same
	// table row.
	titles := map[string]string{}
	rows(`SELECT status, COALESCE(error_code, 0), COALESCE(MAX(error_title), ''), COUNT(*) FROM recipients
		WHERE error_code IS NOT NULL GROUP BY status, error_code`, func(r *sql.Rows) error {
		var st, title string
		var code, n int64
		err := r.Scan(&st, &code, &title, &n)
		key := fmt.Sprintf("%s.%d", st, code)
		want["error."+key] = strconv.FormatInt(n, 10)
		titles[key] = title
		return err
	})
	for k, v := range want {
		if got[k] != v {
			errorf("figure %s: the page says %q, the checkpoint %s", k, got[k], v)
		}
	}
	seen := map[string]bool{}
	root.walk(func(n *node) {
		key, ok := n.attrs["data-error"]
		if !ok || n.name != "tr" {
			return
		}
		seen[key] = true
		if title, known := titles[key]; known && !strings.Contains(n.allText(), title) {
			errorf("error row %s: %q does not show its title %q", key, n.allText(), title)
		}
	})
	for key := range titles {
		if !seen[key] {
			errorf("error %s (title %q) has no row in the page", key, titles[key])
		}
	}
	// Every chart has an accessible name.
	charts := 0
	root.walk(func(n *node) {
		if n.name != "svg" || n.attrs["class"] != "chart" {
			return
		}
		charts++
		if len(n.children) == 0 || n.children[0].name != "title" || n.children[0].allText() == "" {
			errorf("chart %s has no title", n.attrs["id"])
		}
	})
	if charts == 0 {
		errorf("the page has no chart")
	}
	return out, nil
}

type queryError struct {
	query string
	err   error
}

func (e queryError) Error() string { return e.query + ": " + e.err.Error() }

// TestReportFileMatchesCheckpoint checks a report written by `bulksend
// report` against its checkpoint: make report-screenshot runs it on the
// 20,000-row campaign it makes, with BULKSEND_REPORT_HTML and
// BULKSEND_REPORT_DB set. Without them it is skipped.
func TestReportFileMatchesCheckpoint(t *testing.T) {
	page, db := os.Getenv("BULKSEND_REPORT_HTML"), os.Getenv("BULKSEND_REPORT_DB")
	if page == "" || db == "" {
		t.Skip("set BULKSEND_REPORT_HTML and BULKSEND_REPORT_DB to check a report file against its checkpoint (make report-screenshot does)")
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstCheckpoint(t, b, db)
	t.Logf("%s matches %s", page, db)
}

// TestCheckerCatchesMismatches shows the checks fail for the right
// reasons: a page whose figure, title or self-containment is tampered with
// is caught, naming what is wrong.
func TestCheckerCatchesMismatches(t *testing.T) {
	st, path := fixture(t)
	r, err := Gather(t.Context(), st, at(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Render(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if p, err := mismatches([]byte(page), path); err != nil || len(p) > 0 {
		t.Fatalf("the page as rendered: %q, %v", p, err)
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"a wrong count", `data-figure="state.read" data-value="1"`, `data-figure="state.read" data-value="2"`, `figure state.read: the page says "2", the checkpoint 1`},
		{"a missing figure", `data-figure="funnel.delivered"`, `data-x="funnel.delivered"`, `figure funnel.delivered: the page says ""`},
		{"a wrong title", `Message undeliverable</td>`, `Message sent</td>`, `does not show its title "Message undeliverable"`},
		{"a script", `</main>`, `<script src="https://cdn.example.com/x.js"></script></main>`, `<script> element`},
		{"a stylesheet", `<style>`, `<style>@import url(https://fonts.example.com/a.css);`, `"@import"`},
		{"an external link", `<footer>`, `<footer><a href="https://example.com/">x</a>`, `refers outside itself`},
		{"a background image", `body {`, `body { background: url(https://example.com/bg.png);`, `url(https://example.com`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(page, tc.old) {
				t.Fatalf("the page has no %q to tamper with", tc.old)
			}
			p, err := mismatches([]byte(strings.Replace(page, tc.old, tc.new, 1)), path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(p, "\n"), tc.want) {
				t.Errorf("problems %q, want one saying %q", p, tc.want)
			}
		})
	}
}
