package sandbox

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

const (
	waba    = "100000000000001"
	tplPath = "/v23.0/" + waba + "/message_templates"
)

var update = flag.Bool("update", false, "rewrite testdata/message_templates.json from DefaultTemplates")

// page is a decoded message_templates answer.
type page struct {
	Data   []template.Definition
	Paging *pagingResp
}

func (p page) names() []string {
	out := []string{}
	for _, d := range p.Data {
		out = append(out, d.Name)
	}
	return out
}

func readPage(t *testing.T, a answer) page {
	t.Helper()
	var p page
	if err := json.Unmarshal(a.body, &p); err != nil {
		t.Fatalf("%v: %v", a, err)
	}
	return p
}

func defaultNames(keep func(template.Definition) bool) []string {
	out := []string{}
	for _, d := range DefaultTemplates() {
		if keep == nil || keep(d) {
			out = append(out, d.Name)
		}
	}
	return out
}

func TestDefaultTemplates(t *testing.T) {
	defs := DefaultTemplates()
	tests := []struct {
		name, status, category, header string
		body                           []string
		buttons                        []string // ButtonNeeds of each button
	}{
		{"spring_sale", "APPROVED", "MARKETING", "IMAGE", []string{"1", "2"}, []string{"url", "payload"}},
		{"order_update", "APPROVED", "UTILITY", "TEXT", []string{"first_name", "order_id", "ship_date"}, []string{"url"}},
		{"login_code", "APPROVED", "AUTHENTICATION", "", []string{"1"}, []string{"code"}},
		{"fall_coupon", "APPROVED", "MARKETING", "TEXT", []string{"1", "2"}, []string{"payload", "coupon"}},
		{"summer_teaser", "APPROVED", "MARKETING", "VIDEO", []string{"1"}, nil},
		{"invoice_ready", "APPROVED", "UTILITY", "DOCUMENT", []string{"1", "2"}, nil},
		{"store_visit", "APPROVED", "UTILITY", "LOCATION", []string{"1"}, nil},
		{"event_signup", "APPROVED", "MARKETING", "", []string{"1"}, []string{"flow", "payload"}},
		{"autumn_sale", "PAUSED", "MARKETING", "", []string{"1"}, nil},
		{"old_promo", "REJECTED", "MARKETING", "", []string{"1"}, nil},
		{"retired_offer", "DISABLED", "MARKETING", "", []string{"1"}, nil},
	}
	if len(defs) != len(tests) {
		t.Errorf("%d default templates, want %d", len(defs), len(tests))
	}
	ids := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := slices.IndexFunc(defs, func(d template.Definition) bool { return d.Name == tt.name })
			if i < 0 {
				t.Fatal("missing")
			}
			d := defs[i]
			if d.Status != tt.status || d.Category != tt.category || d.HeaderFormat() != tt.header || d.Language != "en_US" {
				t.Errorf("status %s category %s header %q language %s", d.Status, d.Category, d.HeaderFormat(), d.Language)
			}
			if !slices.Equal(d.BodyParams(), tt.body) {
				t.Errorf("body params %v, want %v", d.BodyParams(), tt.body)
			}
			var needs []string
			for i := range d.Buttons() {
				needs = append(needs, d.ButtonNeeds(i))
			}
			if !slices.Equal(needs, tt.buttons) {
				t.Errorf("buttons need %v, want %v", needs, tt.buttons)
			}
			if d.ID == "" || ids[d.ID] || d.QualityScore == nil {
				t.Errorf("id %q (unique?) quality %v", d.ID, d.QualityScore)
			}
			ids[d.ID] = true
			for _, c := range d.Components {
				if c.Example != nil && !json.Valid(c.Example) {
					t.Errorf("%s example is not JSON: %s", c.Type, c.Example)
				}
			}
		})
	}
	defs[0].Name = "changed"
	if DefaultTemplates()[0].Name == "changed" {
		t.Error("DefaultTemplates returns a shared slice")
	}
}

// testdata/message_templates.json is what the sandbox answers for
// DefaultTemplates: a realistic message_templates answer for other tests.
func TestLoadDefinitions(t *testing.T) {
	const golden = "testdata/message_templates.json"
	want, err := marshalGraph(templatesPage{Data: DefaultTemplates()}, "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *update {
		if err := os.WriteFile(golden, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	defs, err := LoadDefinitions(golden)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := marshalGraph(templatesPage{Data: defs}, "  ")
	if !bytes.Equal(append(got, '\n'), want) {
		t.Errorf("%s differs from DefaultTemplates; go test -run TestLoadDefinitions -update rewrites it", golden)
	}
	s := New(Config{Definitions: DefaultTemplates()})
	defer s.Close()
	a := do(s, http.MethodGet, tplPath+"?limit=100", token, "")
	var served, file struct{ Data json.RawMessage }
	json.Unmarshal(a.body, &served)
	json.Unmarshal(want, &file)
	var compact bytes.Buffer
	json.Compact(&compact, file.Data)
	if !bytes.Equal(served.Data, compact.Bytes()) || bytes.Contains(a.body, []byte(`\u0026`)) {
		t.Errorf("the sandbox's answer differs from %s", golden)
	}

	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("bare array", func(t *testing.T) {
		defs, err := LoadDefinitions(write("array.json", `[{"name":"hello_world","language":"en_US","status":"APPROVED","category":"UTILITY","components":[{"type":"BODY","text":"Hello {{1}}"}]}]`))
		if err != nil || len(defs) != 1 || defs[0].Name != "hello_world" || !slices.Equal(defs[0].BodyParams(), []string{"1"}) {
			t.Errorf("got %+v, %v", defs, err)
		}
	})
	for _, tt := range []struct{ name, content, want string }{
		{"not JSON", `{"data":[`, "template definitions"},
		{"no name", `{"data":[{"language":"en_US"}]}`, "no name or language"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := write(strings.ReplaceAll(tt.name, " ", "_")+".json", tt.content)
			if _, err := LoadDefinitions(p); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("err = %v, want one naming the file and %q", err, tt.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		if _, err := LoadDefinitions(filepath.Join(dir, "nope.json")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("err = %v, want fs.ErrNotExist", err)
		}
	})
}

func TestListTemplates(t *testing.T) {
	s := New(Config{Token: token, ExpiredToken: "old", Definitions: DefaultTemplates()})
	defer s.Close()
	all := defaultNames(nil)
	tests := []struct {
		name, path, tok      string
		wantStatus, wantCode int
		want                 []string
	}{
		{"all", tplPath, token, 200, 0, all},
		{"no version", "/" + waba + "/message_templates", token, 200, 0, all},
		{"part of a name", tplPath + "?name=sale", token, 200, 0, []string{"spring_sale", "autumn_sale"}},
		{"name in any case", tplPath + "?name=Spring_SALE", token, 200, 0, []string{"spring_sale"}},
		{"name and language, as the client asks", tplPath + "?name=login_code&language=en_US&fields=name,language,status,category,components&limit=100", token, 200, 0, []string{"login_code"}},
		{"other language", tplPath + "?name=spring_sale&language=pt_BR", token, 200, 0, []string{}},
		{"language matched exactly", tplPath + "?language=en", token, 200, 0, []string{}},
		{"status", tplPath + "?status=approved", token, 200, 0, defaultNames(template.Definition.Approved)},
		{"category", tplPath + "?category=UTILITY", token, 200, 0, []string{"order_update", "invoice_ready", "store_visit"}},
		{"no match", tplPath + "?name=nope", token, 200, 0, []string{}},
		{"no token", tplPath, "", 403, 200, nil},
		{"expired token", tplPath, "old", 401, 190, nil},
		{"wrong token", tplPath, "nope", 401, 190, nil},
		{"other WABA", "/v23.0/100000000000002/message_templates", token, 400, 100, nil},
		{"limit 0", tplPath + "?limit=0", token, 400, 100, nil},
		{"limit not a number", tplPath + "?limit=ten", token, 400, 100, nil},
		{"after cursor not ours", tplPath + "?after=%25%25", token, 400, 100, nil},
		{"before cursor not ours", tplPath + "?before=MQ", token, 400, 100, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := do(s, http.MethodGet, tt.path, tt.tok, "")
			if a.status != tt.wantStatus || a.code != tt.wantCode {
				t.Fatalf("got %v, want HTTP %d code %d", a, tt.wantStatus, tt.wantCode)
			}
			if tt.want == nil {
				return
			}
			p := readPage(t, a)
			if !slices.Equal(p.names(), tt.want) {
				t.Errorf("names %v, want %v", p.names(), tt.want)
			}
			if len(p.Data) == 0 && p.Paging != nil {
				t.Errorf("paging on an empty answer: %s", a.body)
			}
		})
	}
	t.Run("full definitions whatever fields asks", func(t *testing.T) {
		a := do(s, http.MethodGet, tplPath+"?fields=name&name=login", token, "")
		var got struct{ Data []json.RawMessage }
		json.Unmarshal(a.body, &got)
		want, _ := marshalGraph(DefaultTemplates()[2], "")
		if len(got.Data) != 1 || !bytes.Equal(got.Data[0], want) {
			t.Errorf("got %s\nwant %s", a.body, want)
		}
	})
	if a := do(s, http.MethodPost, tplPath, token, `{"name":"x"}`); a.status != 400 || a.code != 100 {
		t.Errorf("POST: %v", a)
	}
	if st := s.Stats(); st.TemplateReads != int64(len(tests)+2) || st.Requests != 0 || st.Errors[190] != 2 {
		t.Errorf("template reads %d requests %d errors %v", st.TemplateReads, st.Requests, st.Errors)
	}
	closed := New(Config{Definitions: DefaultTemplates()})
	closed.Close()
	if a := do(closed, http.MethodGet, tplPath, token, ""); a.status != 503 || a.code != 2 {
		t.Errorf("after Close: %v", a)
	}
}

func TestListTemplatesPaging(t *testing.T) {
	var many []template.Definition
	for i := range 30 {
		d := DefaultTemplates()[i%3]
		d.Name = fmt.Sprintf("%s_%02d", d.Name, i)
		many = append(many, d)
	}
	s := New(Config{Definitions: many})
	defer s.Close()

	// walk follows paging.next (or previous) from path and returns the
	// names of each page.
	walk := func(t *testing.T, path string, back bool) [][]string {
		var pages [][]string
		for path != "" && len(pages) < 50 {
			p := readPage(t, do(s, http.MethodGet, path, token, ""))
			pages = append(pages, p.names())
			path = ""
			if p.Paging == nil {
				break
			}
			if p.Paging.Cursors.Before == "" || p.Paging.Cursors.After == "" {
				t.Errorf("page without cursors: %+v", p.Paging)
			}
			next := p.Paging.Next
			if back {
				next = p.Paging.Previous
			}
			if next == "" {
				break
			}
			u, err := url.Parse(next)
			if err != nil || !u.IsAbs() || u.Host != "example.com" || u.Path != tplPath {
				t.Fatalf("paging link %q is not this endpoint's absolute URL", next)
			}
			if q := u.Query(); q.Get("name") != "_" || q.Has("after") && q.Has("before") {
				t.Errorf("paging link %q lost the filter or carries both cursors", next)
			}
			path = u.RequestURI()
		}
		return pages
	}
	sizes := func(pages [][]string) []int {
		var n []int
		for _, p := range pages {
			n = append(n, len(p))
		}
		return n
	}
	var names []string
	for _, d := range many {
		names = append(names, d.Name)
	}

	forward := walk(t, tplPath+"?name=_&limit=7", false)
	if got := slices.Concat(forward...); !slices.Equal(got, names) || !slices.Equal(sizes(forward), []int{7, 7, 7, 7, 2}) {
		t.Errorf("pages of 7: %v", forward)
	}
	if pages := walk(t, tplPath+"?name=_", false); !slices.Equal(sizes(pages), []int{25, 5}) {
		t.Errorf("default limit: pages of %v, want 25 and 5", sizes(pages))
	}
	// From the last page back to the first, by previous.
	last := readPage(t, do(s, http.MethodGet, tplPath+"?name=_&limit=7&after="+encodeCursor(27), token, ""))
	if !slices.Equal(last.names(), names[28:]) || last.Paging.Next != "" {
		t.Fatalf("after position 27: %v %+v", last.names(), last.Paging)
	}
	u, _ := url.Parse(last.Paging.Previous)
	backward := walk(t, u.RequestURI(), true)
	if !slices.Equal(sizes(backward), []int{7, 7, 7, 7}) || !slices.Equal(backward[3], names[:7]) || !slices.Equal(backward[0], names[21:28]) {
		t.Errorf("backward pages: %v", backward)
	}
	if p := readPage(t, do(s, http.MethodGet, tplPath+"?after="+encodeCursor(29), token, "")); len(p.Data) != 0 {
		t.Errorf("after the last one: %v", p.names())
	}
	if p := readPage(t, do(s, http.MethodGet, tplPath+"?after="+encodeCursor(1<<62), token, "")); len(p.Data) != 0 {
		t.Errorf("after a huge cursor: %v", p.names())
	}

	t.Run("https", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodGet, "https://graph.example.com"+tplPath+"?limit=1", nil)
		r.TLS = &tls.ConnectionState{}
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		p := readPage(t, decode(w.Code, w.Body.Bytes()))
		if want := "https://graph.example.com" + tplPath + "?after=MAZDZD&limit=1"; p.Paging == nil || p.Paging.Next != want {
			t.Errorf("next = %+v, want %s", p.Paging, want)
		}
	})
}

// Cursors look like Graph's: its examples "MAZDZD" and "MjQZD" are the
// positions 0 and 24.
func TestCursor(t *testing.T) {
	for _, tt := range []struct {
		cursor string
		pos    int
	}{{"MAZDZD", 0}, {"MjQZD", 24}, {"MTAw", 100}} {
		if got := encodeCursor(tt.pos); got != tt.cursor {
			t.Errorf("encodeCursor(%d) = %s, want %s", tt.pos, got, tt.cursor)
		}
	}
	for pos := range 2000 {
		if got, ok := decodeCursor(encodeCursor(pos)); !ok || got != pos {
			t.Fatalf("cursor of %d decodes to %d, %v", pos, got, ok)
		}
	}
	for _, bad := range []string{"", "M", "MA", "MAZD", "MAZDZ", "LTE", "LTEZD", "MDEZD", "YQZDZD", "%%%%"} {
		if n, ok := decodeCursor(bad); ok {
			t.Errorf("decodeCursor(%q) = %d, want refused", bad, n)
		}
	}
}

// LoadDefinitions of /dev/zero (bulksend sandbox --templates-file) is
// refused after 16 MB, not read to the end.
func TestLoadDefinitionsDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	if _, err := LoadDefinitions("/dev/zero"); err == nil || !strings.Contains(err.Error(), "over 16 MB") {
		t.Fatalf("LoadDefinitions(/dev/zero) = %v, want over 16 MB", err)
	}
}
