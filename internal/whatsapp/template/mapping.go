package template

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The column names of the mapping, as an operator writes them in a
// spreadsheet's header row (any case):
//
//	first_name, code, …     body parameters: in column order ({{1}}, {{2}}…)
//	                        for a positional template, by name for a named one
//	header.text             the header's text parameter
//	header.image            header media: an https link or an uploaded media ID
//	header.video
//	header.document
//	header.filename         the document's file name (optional)
//	header.latitude         a location header (name and address optional)
//	header.longitude
//	header.name
//	header.address
//	button.N.url            button N's URL suffix (N is the index, 0 to 9)
//	button.N.payload        quick-reply button N's payload (optional)
//	button.N.coupon         copy-code button N's code
//	button.N.flow_token     Flow button N's flow token (optional)
//	button.N.flow_action_data  Flow button N's data for the Flow's first
//	                        screen: a JSON object's text (optional)
//	auth.code               an authentication template's code (Meta needs it
//	                        in the body and in the button)
//
// The same names, given as NAME=VALUE on the command line, set a value for
// every row. Names with a dot can never clash with a named parameter,
// whose names are lowercase letters, digits and underscores.

// Slot parts.
const (
	Header = "header"
	Body   = "body"
	Btn    = "button"
	Auth   = "auth"
)

// Slot is a place in the template that a column or a constant fills.
type Slot struct {
	Part  string `json:"part"`            // header, body, button, auth
	Kind  string `json:"kind,omitempty"`  // header: text, image…; button: url, payload, coupon, flow_token, flow_action_data; auth: code
	Index int    `json:"index,omitempty"` // button index
	Name  string `json:"name,omitempty"`  // named body parameter
}

// Key is the slot's name in the mapping's vocabulary.
func (s Slot) Key() string {
	switch s.Part {
	case Header:
		return "header." + s.Kind
	case Btn:
		return fmt.Sprintf("button.%d.%s", s.Index, s.Kind)
	case Auth:
		return "auth." + s.Kind
	}
	return s.Name
}

var headerKinds = []string{"text", "image", "video", "document", "filename", "latitude", "longitude", "name", "address"}
var buttonKinds = []string{"url", "payload", "coupon", "flow_token", "flow_action_data"}

// flowKind reports whether a button slot's kind is one of a Flow button's
// two values, which fill the one button together.
func flowKind(kind string) bool { return kind == "flow_token" || kind == "flow_action_data" }

// fills reports whether a button slot of kind fills a button that needs
// need (Definition.ButtonNeeds).
func fills(need, kind string) bool { return need == kind || need == "flow" && flowKind(kind) }

var paramNameRE = regexp.MustCompile(`^[a-z0-9_]+$`)

// ParseKey reads a column or a constant's name. Body parameters keep their
// name; in a named template that name is the placeholder's.
func ParseKey(name string) (Slot, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	prefix, rest, dotted := strings.Cut(key, ".")
	if !dotted {
		return Slot{Part: Body, Name: key}, nil
	}
	switch prefix {
	case Header:
		if slices.Contains(headerKinds, rest) {
			return Slot{Part: Header, Kind: rest}, nil
		}
		return Slot{}, fmt.Errorf("%q: a header column is one of header.%s", name, strings.Join(headerKinds, ", header."))
	case Btn:
		n, kind, ok := strings.Cut(rest, ".")
		index := len(n) == 1 && n[0] >= '0' && n[0] <= '9'
		if !ok || !index || !slices.Contains(buttonKinds, kind) {
			hint := ""
			if index {
				hint = suggest(key) // a mistyped kind (flowtoken); never another index
			}
			return Slot{}, fmt.Errorf("%q: a button column is button.N.url, button.N.payload, button.N.coupon, button.N.flow_token or button.N.flow_action_data, N the button's index from 0 to 9%s", name, hint)
		}
		return Slot{Part: Btn, Kind: kind, Index: int(n[0] - '0')}, nil
	case Auth:
		if rest == "code" {
			return Slot{Part: Auth, Kind: "code"}, nil
		}
		return Slot{}, fmt.Errorf("%q: the authentication code's column is auth.code", name)
	case Body:
		return Slot{}, fmt.Errorf("%q: body parameters are plain columns (%q), in the order of the template's {{1}}, {{2}}… or named as its placeholders", name, rest)
	}
	// Names with a dot are the template's: a mistyped one (buttons.0.url)
	// taken as a body parameter would be sent in another's place.
	return Slot{}, fmt.Errorf("%q: a name with a dot is one of header.…, button.N.… or auth.code%s", name, suggest(key))
}

// suggest names the reserved name closest to a mistyped one.
func suggest(key string) string {
	var names []string
	for _, k := range headerKinds {
		names = append(names, "header."+k)
	}
	for i := range 10 {
		for _, k := range buttonKinds {
			names = append(names, fmt.Sprintf("button.%d.%s", i, k))
		}
	}
	names = append(names, "auth.code")
	best, dist := "", 4
	for _, n := range names {
		if d := distance(key, n); d < dist {
			best, dist = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Binding fills one slot from a column or a constant.
type Binding struct {
	Slot
	Column string `json:"column,omitempty"` // as written in the header; "" for a constant
	Cell   int    `json:"cell"`             // index into the row's cells; -1 for a constant
	Value  string `json:"value,omitempty"`  // the constant
}

func (b Binding) source() string {
	if b.Cell < 0 {
		return "{param} " + b.Key()
	}
	return "column " + strconv.Quote(b.Column)
}

// Mapping says which column or constant fills each slot of the template.
// It is stored with the campaign: a resume sends with the same mapping.
type Mapping struct {
	Named      bool      `json:"named,omitempty"`       // body parameters go by name
	HeaderName string    `json:"header_name,omitempty"` // a named template's header parameter
	BodyMax    int       `json:"body_max"`              // longest body parameter Meta takes
	Bindings   []Binding `json:"bindings"`
	Ignored    []string  `json:"ignored,omitempty"`
}

// Const is a NAME=VALUE given on the command line.
type Const struct{ Key, Value string }

// Input is what a mapping is made from.
type Input struct {
	Columns []string // the CSV's parameter columns, in order (not phone, from, id)
	Consts  []Const  // values for every row
	Ignore  []string // columns to leave out
	Named   bool     // body parameters by name; a definition overrides it
}

// Problems is a list of reasons a mapping cannot be used; each names the
// column, the constant or the placeholder at fault. The settings that are
// not columns are named as {param} (a constant), {ignore-column} and
// {waba}: the front end names what sets them.
type Problems []string

func (p Problems) Error() string {
	if len(p) == 1 {
		return p[0]
	}
	return fmt.Sprintf("%d problems:\n  - %s", len(p), strings.Join(p, "\n  - "))
}

// ErrNotApproved is wrapped by New's error for a template that cannot be
// sent now (paused, disabled, rejected, pending).
var ErrNotApproved = errors.New("template not approved")

// New makes the mapping for in. With the template's definition (def not
// nil), it also finds every gap between the two: a placeholder no column
// fills, a column the template has no place for, a header or button of
// another kind. The error is Problems, or wraps ErrNotApproved.
func New(in Input, def *Definition) (*Mapping, error) {
	m := &Mapping{Named: in.Named}
	if def != nil {
		if !def.Approved() {
			return nil, fmt.Errorf("%w: %s/%s is %s", ErrNotApproved, def.Name, def.Language, def.Status)
		}
		m.Named = def.Named()
	}
	var probs Problems
	ignored := map[string]bool{}
	for _, name := range in.Ignore {
		key := strings.ToLower(strings.TrimSpace(name))
		if !slices.ContainsFunc(in.Columns, func(c string) bool { return strings.EqualFold(strings.TrimSpace(c), key) }) {
			probs = append(probs, fmt.Sprintf("{ignore-column} %q: the CSV has no such column", name))
			continue
		}
		ignored[key] = true
		m.Ignored = append(m.Ignored, strings.TrimSpace(name))
	}
	seen := map[string]string{} // slot key -> source
	add := func(b Binding) {
		if b.Part == Body && m.Named && !paramNameRE.MatchString(b.Name) {
			probs = append(probs, fmt.Sprintf("%s: a named template's parameters are lowercase letters, digits and underscores", b.source()))
			return
		}
		key := b.Key()
		if b.Part == Body && !m.Named {
			key = "body." + strconv.Itoa(len(m.Bindings)) + "." + b.Name // positional: any names
		}
		if prev, dup := seen[key]; dup {
			probs = append(probs, fmt.Sprintf("%s and %s both fill %s", prev, b.source(), b.Key()))
			return
		}
		seen[key] = b.source()
		m.Bindings = append(m.Bindings, b)
	}
	for i, c := range in.Columns {
		if ignored[strings.ToLower(strings.TrimSpace(c))] {
			continue
		}
		s, err := ParseKey(c)
		if err != nil {
			probs = append(probs, "column "+err.Error())
			continue
		}
		add(Binding{Slot: s, Column: strings.TrimSpace(c), Cell: i})
	}
	for _, k := range in.Consts {
		s, err := ParseKey(k.Key)
		if err != nil {
			probs = append(probs, "{param} "+err.Error())
			continue
		}
		if s.Part == Body && !m.Named {
			probs = append(probs, fmt.Sprintf("{param} %s: a positional template's body parameters take their place from their column's order; add a column", k.Key))
			continue
		}
		add(Binding{Slot: s, Cell: -1, Value: k.Value})
	}
	probs = append(probs, m.consistent()...)
	if def != nil {
		probs = append(probs, m.against(*def)...)
	}
	if _, ok := m.find(Header, "text", 0); ok && m.Named && m.HeaderName == "" && def == nil {
		probs = append(probs, "header.text: a named template's header parameter goes by its name, which bulksend reads from the template's definition: pass {waba}")
	}
	m.BodyMax = m.bodyMax()
	for _, b := range m.Bindings {
		if b.Cell < 0 {
			if why := m.check(b, b.Value); why != "" {
				probs = append(probs, fmt.Sprintf("{param} %s: %s", b.Key(), why))
			}
		}
	}
	if len(probs) > 0 {
		return nil, probs
	}
	return m, nil
}

// Check finds the gaps between a stored mapping and the template's
// definition as it is now (a resume reads it again). The error is Problems,
// or wraps ErrNotApproved.
func (m *Mapping) Check(def Definition) error {
	if !def.Approved() {
		return fmt.Errorf("%w: %s/%s is %s", ErrNotApproved, def.Name, def.Language, def.Status)
	}
	var probs Problems
	if def.Named() != m.Named {
		probs = append(probs, fmt.Sprintf("the template's parameters are now %s, this campaign was mapped %s", format(def.Named()), format(m.Named)))
	}
	probs = append(probs, m.against(def)...)
	if len(probs) > 0 {
		return probs
	}
	return nil
}

func format(named bool) string {
	if named {
		return "named"
	}
	return "positional"
}

func (m *Mapping) find(part, kind string, index int) (Binding, bool) {
	for _, b := range m.Bindings {
		if b.Part == part && b.Kind == kind && b.Index == index {
			return b, true
		}
	}
	return Binding{}, false
}

func (m *Mapping) has(part string) bool {
	return slices.ContainsFunc(m.Bindings, func(b Binding) bool { return b.Part == part })
}

// consistent finds what no template could take.
func (m *Mapping) consistent() Problems {
	var probs Problems
	var media []string
	for _, k := range []string{"text", "image", "video", "document", "latitude"} {
		if b, ok := m.find(Header, k, 0); ok {
			media = append(media, b.source())
		}
	}
	if len(media) > 1 {
		probs = append(probs, fmt.Sprintf("%s: a template has one header", strings.Join(media, " and ")))
	}
	if b, ok := m.find(Header, "filename", 0); ok {
		if _, doc := m.find(Header, "document", 0); !doc {
			probs = append(probs, b.source()+": a file name goes with header.document")
		}
	}
	_, lat := m.find(Header, "latitude", 0)
	_, lon := m.find(Header, "longitude", 0)
	if lat != lon {
		probs = append(probs, "a location header needs both header.latitude and header.longitude")
	}
	for _, k := range []string{"name", "address"} {
		if b, ok := m.find(Header, k, 0); ok && !lat {
			probs = append(probs, b.source()+": a location's name and address go with header.latitude and header.longitude")
		}
	}
	buttons := map[int]Binding{}
	for _, b := range m.Bindings {
		if b.Part != Btn {
			continue
		}
		// A Flow button takes a token and data together; any other two
		// values for one button are two buttons' worth.
		if prev, ok := buttons[b.Index]; ok && !(flowKind(prev.Kind) && flowKind(b.Kind)) {
			probs = append(probs, fmt.Sprintf("%s and %s: button %d is one button", prev.source(), b.source(), b.Index))
		}
		buttons[b.Index] = b
	}
	if a, ok := m.find(Auth, "code", 0); ok {
		for _, b := range m.Bindings {
			if b.Part == Body || b.Part == Header || (b.Part == Btn && b.Index == 0) {
				probs = append(probs, fmt.Sprintf("%s: an authentication template takes only its code (%s)", b.source(), a.source()))
			}
		}
	}
	return probs
}

// against finds the gaps between the mapping and def.
func (m *Mapping) against(def Definition) Problems {
	var probs Problems
	// Header.
	format := def.HeaderFormat()
	hdr := ""
	for _, k := range []string{"text", "image", "video", "document", "latitude"} {
		if _, ok := m.find(Header, k, 0); ok {
			hdr = k
		}
	}
	wantHdr := map[string]string{"IMAGE": "image", "VIDEO": "video", "DOCUMENT": "document", "LOCATION": "latitude"}[format]
	if format == "TEXT" && len(def.HeaderParams()) > 0 {
		wantHdr = "text"
		if def.Named() {
			m.HeaderName = def.HeaderParams()[0]
		}
	}
	switch {
	case hdr == wantHdr:
	case wantHdr == "":
		b, _ := m.find(Header, hdr, 0)
		what := "no header"
		if format != "" {
			what = "a " + strings.ToLower(format) + " header without parameters"
		}
		probs = append(probs, fmt.Sprintf("%s: the template has %s", b.source(), what))
	case hdr == "":
		probs = append(probs, fmt.Sprintf("the template's header is %s: it needs a %s column, or {param} %s=…", format, "header."+wantHdr, "header."+wantHdr))
	default:
		b, _ := m.find(Header, hdr, 0)
		probs = append(probs, fmt.Sprintf("%s: the template's header is %s, not %s: use %s", b.source(), format, strings.ToUpper(hdr), "header."+wantHdr))
	}
	// Body.
	if def.Authentication() {
		for _, b := range m.Bindings {
			if b.Part == Body {
				probs = append(probs, fmt.Sprintf("%s: an authentication template takes only its code, in an auth.code column", b.source()))
			}
		}
		if _, ok := m.find(Auth, "code", 0); !ok {
			probs = append(probs, "the template is an authentication template: its code goes in an auth.code column")
		}
	} else {
		if b, ok := m.find(Auth, "code", 0); ok {
			probs = append(probs, fmt.Sprintf("%s: the template is %s, not an authentication template", b.source(), strings.ToLower(def.Category)))
		}
		probs = append(probs, m.body(def)...)
	}
	// Buttons.
	buttons := def.Buttons()
	for _, b := range m.Bindings {
		if b.Part != Btn {
			continue
		}
		if b.Index >= len(buttons) {
			probs = append(probs, fmt.Sprintf("%s: the template has %s", b.source(), countButtons(len(buttons))))
			continue
		}
		need := def.ButtonNeeds(b.Index)
		if !fills(need, b.Kind) {
			probs = append(probs, fmt.Sprintf("%s: button %d is %s", b.source(), b.Index, describeButton(buttons[b.Index], need, b.Index)))
		}
	}
	for i := range buttons {
		switch need := def.ButtonNeeds(i); need {
		case "url", "coupon":
			if _, ok := m.find(Btn, need, i); !ok {
				probs = append(probs, fmt.Sprintf("button %d is %s: it needs a button.%d.%s column, or {param} button.%d.%s=…", i, buttonKind(buttons[i], need), i, need, i, need))
			}
		case "", "payload", "code", "flow":
			// Nothing to fill, or optional: a Flow button without a
			// value is sent with no component (see Components).
		default:
			probs = append(probs, fmt.Sprintf("button %d is a %s button, which bulksend cannot fill", i, strings.TrimPrefix(need, "unsupported:")))
		}
	}
	return probs
}

func (m *Mapping) body(def Definition) Problems {
	var probs Problems
	want := def.BodyParams()
	var got []Binding
	for _, b := range m.Bindings {
		if b.Part == Body {
			got = append(got, b)
		}
	}
	if !def.Named() {
		if len(got) > len(want) {
			var cols []string
			for _, b := range got {
				cols = append(cols, strconv.Quote(b.Column))
			}
			probs = append(probs, fmt.Sprintf("the CSV has %d body columns (%s), the template's body %s: leave out the columns it does not use with {ignore-column}", len(got), strings.Join(cols, ", "), countParams(len(want))))
		}
		for i := len(got); i < len(want); i++ {
			probs = append(probs, fmt.Sprintf("the template's body {{%s}} has no column: body parameters are the columns other than phone, from, id and the header., button. and auth. ones, in order", want[i]))
		}
		return probs
	}
	for _, b := range got {
		if !slices.Contains(want, b.Name) {
			probs = append(probs, fmt.Sprintf("%s: the template's body has no {{%s}} (it has %s); leave the column out with {ignore-column} %q", b.source(), b.Name, braces(want), b.Column))
		}
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(b Binding) bool { return b.Name == w }) {
			probs = append(probs, fmt.Sprintf("the template's body {{%s}} has no column: add a %s column, or {param} %s=…", w, w, w))
		}
	}
	return probs
}

// buttonKind names a button by what it takes.
func buttonKind(b Button, need string) string {
	switch need {
	case "url":
		return fmt.Sprintf("a URL button (%s)", b.URL)
	case "coupon":
		return "a copy-code button"
	case "flow":
		return "a Flow button"
	}
	return "a " + strings.ToLower(b.Type) + " button"
}

func describeButton(b Button, need string, i int) string {
	switch need {
	case "url":
		return fmt.Sprintf("a URL button (%s): use button.%d.url", b.URL, i)
	case "payload":
		return fmt.Sprintf("a quick-reply button: use button.%d.payload", i)
	case "coupon":
		return fmt.Sprintf("a copy-code button: use button.%d.coupon", i)
	case "code":
		return "the authentication code's button: use auth.code"
	case "flow":
		return fmt.Sprintf("a Flow button: use button.%d.flow_token and button.%d.flow_action_data (both optional)", i, i)
	case "":
		return fmt.Sprintf("a %s button that takes no value", strings.ToLower(b.Type))
	}
	return fmt.Sprintf("a %s button, which bulksend cannot fill", strings.TrimPrefix(need, "unsupported:"))
}

func countButtons(n int) string {
	switch n {
	case 0:
		return "no buttons"
	case 1:
		return "one button (index 0)"
	}
	return fmt.Sprintf("%d buttons (index 0 to %d)", n, n-1)
}

func countParams(n int) string {
	switch n {
	case 0:
		return "no parameters"
	case 1:
		return "one parameter"
	}
	return fmt.Sprintf("%d parameters", n)
}

func braces(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return "{{" + strings.Join(names, "}}, {{") + "}}"
}

// bodyMax is Meta's limit on a body parameter: 1024 characters when the
// request has other components, 32768 when the body is all of it.
func (m *Mapping) bodyMax() int {
	if m.has(Header) || m.has(Btn) || m.has(Auth) {
		return 1024
	}
	return 32768
}
