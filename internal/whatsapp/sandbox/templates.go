package sandbox

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// defaultTemplateLimit is Graph's page size when the request sets no limit.
const defaultTemplateLimit = 25

// templatesPage is a message_templates answer.
type templatesPage struct {
	Data   []template.Definition `json:"data"`
	Paging *pagingResp           `json:"paging,omitempty"`
}

type pagingResp struct {
	Cursors  cursorsResp `json:"cursors"`
	Next     string      `json:"next,omitempty"`
	Previous string      `json:"previous,omitempty"`
}

type cursorsResp struct {
	Before string `json:"before"`
	After  string `json:"after"`
}

// listTemplates handles GET /{version}/{WABA-ID}/message_templates: the
// definitions filtered by the name (a part of it, any case), language,
// status and category query parameters, in pages of limit (default 25) with
// Graph's cursor paging (after, before). fields is ignored: the full
// definitions are always returned.
func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request, wabaID string) {
	if f := s.auth(r); f.code != 0 {
		s.fail(w, f)
		return
	}
	if wabaID != s.wabaID {
		s.fail(w, unknownObject("get", wabaID))
		return
	}
	q := r.URL.Query()
	limit := defaultTemplateLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			s.fail(w, graphParam("(#100) Param limit must be a positive integer"))
			return
		}
		limit = n
	}
	name := strings.ToLower(q.Get("name"))
	var match []template.Definition
	for _, d := range s.defs {
		if strings.Contains(strings.ToLower(d.Name), name) &&
			(q.Get("language") == "" || d.Language == q.Get("language")) &&
			(q.Get("status") == "" || strings.EqualFold(d.Status, q.Get("status"))) &&
			(q.Get("category") == "" || strings.EqualFold(d.Category, q.Get("category"))) {
			if d.Components == nil {
				d.Components = []template.Component{} // Graph always has the array
			}
			match = append(match, d)
		}
	}

	// Cursors are positions in the filtered list, encoded as Graph encodes
	// its own ("MjQZD" is base64 "24" with '=' written "ZD").
	start, end := 0, len(match)
	if a := q.Get("after"); a != "" {
		pos, ok := decodeCursor(a)
		if !ok {
			s.fail(w, graphParam("(#100) Invalid after cursor"))
			return
		}
		start = min(pos, len(match)) + 1 // no overflow from a huge cursor
	} else if b := q.Get("before"); b != "" {
		pos, ok := decodeCursor(b)
		if !ok {
			s.fail(w, graphParam("(#100) Invalid before cursor"))
			return
		}
		end = min(pos, len(match))
		start = max(0, end-limit)
	}
	start = min(start, len(match))
	end = min(end, start+limit)
	page := templatesPage{Data: append([]template.Definition{}, match[start:end]...)} // [] not null
	if len(page.Data) > 0 {
		p := &pagingResp{Cursors: cursorsResp{Before: encodeCursor(start), After: encodeCursor(end - 1)}}
		if end < len(match) {
			p.Next = pageURL(r, "after", p.Cursors.After)
		}
		if start > 0 {
			p.Previous = pageURL(r, "before", p.Cursors.Before)
		}
		page.Paging = p
	}
	s.answer(w, r, page)
}

// answer writes v as a Graph read's answer, after the configured latency.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, v any) {
	body, err := marshalGraph(v, "")
	if err != nil {
		// A definition's raw example that is not JSON.
		s.fail(w, errUnknown)
		return
	}
	if !s.delay(r.Context(), s.latency()) {
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Write(body)
}

// pageURL is the absolute URL of the request with the cursor parameter set
// and the other cursor removed, as Graph's paging.next and previous.
func pageURL(r *http.Request, key, cursor string) string {
	q := r.URL.Query()
	q.Del("after")
	q.Del("before")
	q.Set(key, cursor)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	u := url.URL{Scheme: scheme, Host: r.Host, Path: r.URL.Path, RawQuery: q.Encode()}
	return u.String()
}

func encodeCursor(pos int) string {
	return strings.ReplaceAll(base64.StdEncoding.EncodeToString([]byte(strconv.Itoa(pos))), "=", "ZD")
}

// decodeCursor reverses encodeCursor. Each '=' became two characters, so
// the length modulo 4 is the number of padding characters.
func decodeCursor(c string) (int, bool) {
	pad := len(c) % 4
	if pad == 3 || !strings.HasSuffix(c, strings.Repeat("ZD", pad)) {
		return 0, false
	}
	b, err := base64.StdEncoding.DecodeString(c[:len(c)-2*pad] + strings.Repeat("=", pad))
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 || strconv.Itoa(n) != string(b) {
		return 0, false
	}
	return n, true
}

// marshalGraph encodes v as Graph does: '&', '<' and '>' left as they are
// (URLs in examples stay readable), indented by indent if not "".
func marshalGraph(v any, indent string) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.SetIndent("", indent)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func graphParam(message string) failure {
	return failure{status: http.StatusBadRequest, code: codeInvalidParam, graph: true, message: message}
}
