// Package oas validates JSON documents against the schemas in Meta's own
// OpenAPI description of the WhatsApp Business Messaging API
// (meta-business-messaging-openapi_v23.0.yaml). The repository carries an
// unmodified copy in testdata/openapi, so its tests need nothing beside the
// clone; only tests read it, and it is not part of the binary.
//
// It exists so that tests anywhere in the repository can check that what
// bulksend sends, and what its sandbox answers, has the shape Meta documents,
// instead of each test re-typing its own idea of the wire format.
//
// The OpenAPI 3.1 document is a superset of JSON Schema draft 2020-12: its
// component schemas are 2020-12 schemas plus a few OpenAPI keywords
// (discriminator, example, xml, externalDocs). The whole document is added to
// a santhosh-tekuri/jsonschema compiler as one resource, and a component is
// compiled on demand by JSON pointer, so its $refs resolve within the
// document. Unknown keywords are ignored by draft 2020-12, which is exactly
// what OpenAPI's base dialect does with them when validating, so they need
// no pre-processing (see TestAllComponentsCompile).
//
// The schemas are Meta's, quirks included, except where they contradict
// Meta's own documentation of a request bulksend sends. LoadFile corrects
// those in the parsed copy (the file stays Meta's, byte for byte); each
// correction sets the value at a JSON pointer under /components/schemas/
// and names the Meta page that documents the real shape (corrections.go):
//   - TemplateComponent/properties/index/pattern and
//     ButtonComponent/allOf/1/properties/index/pattern become ^[0-9]$:
//     Meta's ^[2-6, 11-14]$ is a character class that rejects the button
//     indexes "0", "7", "8" and "9" (Messages API reference: 0 to 9);
//   - TemplateComponent/properties/sub_type/enum and
//     ButtonComponent/allOf/1/properties/sub_type/enum gain copy_code, and
//     ButtonParameterObject/properties/type/enum gains coupon_code, which
//     ButtonParameterObject/discriminator/mapping/coupon_code maps to a new
//     ButtonCouponCodeParameter (Coupon code templates);
//   - the same sub_type enums gain flow, and ButtonParameterObject's type
//     enum gains action, which
//     ButtonParameterObject/discriminator/mapping/action maps to a new
//     ButtonActionParameter: {type: action, action: {flow_token,
//     flow_action_data}}, both optional, the data a non-empty object
//     (Flows templates; the file's own example "Send Flow Template
//     Message", which its schemas reject);
//   - ParameterObject/properties/type/enum gains location, which
//     ParameterObject/discriminator/mapping/location maps to a new
//     LocationParameter, whose location object is LocationMessage's with
//     latitude and longitude required (Location templates).
//
// Other quirks are kept:
//   - discriminator is an annotation only, so Validate checks "Message"
//     through its oneOf and template components only against
//     TemplateComponent, whose parameters may be anything;
//     ValidateTemplateMessage follows the discriminators;
//   - LanguageObject requires "policy" (always send "deterministic");
//   - TextMessage puts additionalProperties:false inside an allOf, so no real
//     text message validates against "Message" (bulksend sends templates only).
package oas

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// FileName is the name of Meta's OpenAPI document that Load looks for.
const FileName = "meta-business-messaging-openapi_v23.0.yaml"

// EnvVar names the environment variable that, when set, gives the path of
// the OpenAPI document and disables the search.
const EnvVar = "BULKSEND_OPENAPI"

// ErrNotFound is returned by Load when the OpenAPI document cannot be found.
var ErrNotFound = errors.New("openapi document not found")

// ErrUnknownSchema is returned when a schema name is not among the
// document's components.schemas.
var ErrUnknownSchema = errors.New("unknown schema")

// Spec is a parsed OpenAPI document ready to validate JSON against its
// component schemas. It is safe for concurrent use; compiled schemas are
// cached.
type Spec struct {
	path string
	url  string
	doc  map[string]any // JSON-compatible form of the YAML document

	mu       sync.Mutex
	compiler *jsonschema.Compiler // not safe for concurrent use: guarded by mu
	schemas  map[string]*jsonschema.Schema
}

var loaded struct {
	mu    sync.Mutex
	specs map[string]*loadOnce
}

type loadOnce struct {
	once sync.Once
	spec *Spec
	err  error
}

// Load finds and parses Meta's OpenAPI document. The path is $BULKSEND_OPENAPI
// if set; otherwise Load walks up from the working directory to the root of
// the bulksend module (the directory whose go.mod declares
// github.com/bulksend/bulksend) and uses testdata/openapi/FileName there.
// Tests run in their package's directory, so this finds the repository's own
// copy from any package.
//
// Parsing the 1 MB document takes a moment, so the result is cached per path:
// calling Load from every test is cheap. A missing document is an error
// wrapping ErrNotFound; tests should fail on it rather than skip, or a broken
// checkout would silently stop checking conformance.
func Load() (*Spec, error) {
	path, err := find()
	if err != nil {
		return nil, err
	}
	loaded.mu.Lock()
	if loaded.specs == nil {
		loaded.specs = map[string]*loadOnce{}
	}
	l := loaded.specs[path]
	if l == nil {
		l = &loadOnce{}
		loaded.specs[path] = l
	}
	loaded.mu.Unlock()
	l.once.Do(func() { l.spec, l.err = LoadFile(path) })
	return l.spec, l.err
}

// modulePath identifies the repository's go.mod, so that a go.mod of some
// other module (a nested one, or one above a vendored copy) is walked past.
const modulePath = "github.com/bulksend/bulksend"

func find() (string, error) {
	if p := os.Getenv(EnvVar); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$%s=%q: %w: %w", EnvVar, p, ErrNotFound, err)
		}
		return filepath.Abs(p)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find %s: %w", FileName, err)
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "testdata", "openapi", FileName)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w: %w (set $%s to its path)", ErrNotFound, err, EnvVar)
	}
	return p, nil
}

// moduleRoot returns the nearest directory at or above dir whose go.mod
// declares modulePath.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; {
		mod, err := modulePathOf(filepath.Join(d, "go.mod"))
		if err != nil {
			return "", err
		}
		if mod == modulePath {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("%w: no go.mod of module %s above %s (set $%s to its path)", ErrNotFound, modulePath, dir, EnvVar)
		}
		d = parent
	}
}

// modulePathOf returns the path on the first module line of the go.mod file
// at path, or "" if there is no such file or line.
func modulePathOf(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("find %s: %w", FileName, err)
	}
	for line := range strings.Lines(string(b)) {
		line, _, _ = strings.Cut(line, "//")
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module")
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t' && rest[0] != '"') {
			continue // not the module directive (e.g. a "modulefoo" line)
		}
		rest = strings.TrimSpace(rest)
		// go.mod allows the path to be quoted.
		if unq, err := strconv.Unquote(rest); err == nil {
			rest = unq
		}
		return rest, nil
	}
	return "", nil
}

// LoadFile parses the OpenAPI document at path, without caching, and
// applies the corrections listed in the package comment to the parsed copy.
func LoadFile(path string) (*Spec, error) { return loadFile(path, corrections) }

// loadFile is LoadFile with the corrections to apply; tests pass fewer to
// show that each one is needed.
func loadFile(path string, cs []correction) (*Spec, error) {
	abs, doc, err := parseFile(path)
	if err != nil {
		return nil, err
	}
	return newSpec(abs, doc, cs)
}

// parseFile reads the document at path into the types encoding/json
// produces.
func parseFile(path string) (abs string, doc map[string]any, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, fmt.Errorf("read openapi: %w", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return "", nil, fmt.Errorf("parse openapi %s: %w", path, err)
	}
	v, err := jsonValue(&root)
	if err != nil {
		return "", nil, fmt.Errorf("convert openapi %s: %w", path, err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return "", nil, fmt.Errorf("openapi %s: top level is %T, want a mapping", path, v)
	}
	abs, err = filepath.Abs(path)
	if err != nil {
		return "", nil, fmt.Errorf("openapi path: %w", err)
	}
	return abs, doc, nil
}

// newSpec applies cs to doc, which it then owns, and readies it for
// compiling.
func newSpec(abs string, doc map[string]any, cs []correction) (*Spec, error) {
	for _, c := range cs {
		if err := c.apply(doc); err != nil {
			return nil, fmt.Errorf("openapi %s: %w", abs, err)
		}
	}
	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	c := jsonschema.NewCompiler()
	// OpenAPI 3.1's default dialect is draft 2020-12 plus annotation-only
	// keywords, so plain 2020-12 validates the same instances.
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(u, doc); err != nil {
		return nil, fmt.Errorf("add openapi %s to schema compiler: %w", abs, err)
	}
	return &Spec{path: abs, url: u, doc: doc, compiler: c, schemas: map[string]*jsonschema.Schema{}}, nil
}

// Path is the absolute path of the document the Spec was loaded from.
func (s *Spec) Path() string { return s.path }

// SchemaNames lists the names under components.schemas, in no particular
// order.
func (s *Spec) SchemaNames() []string {
	var names []string
	for name := range s.components() {
		names = append(names, name)
	}
	return names
}

func (s *Spec) components() map[string]any {
	comp, _ := s.doc["components"].(map[string]any)
	schemas, _ := comp["schemas"].(map[string]any)
	return schemas
}

// Schema compiles (once) and returns the component schema called name.
func (s *Spec) Schema(name string) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.schemas[name]; ok {
		return sch, nil
	}
	if _, ok := s.components()[name]; !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownSchema, name)
	}
	sch, err := s.compiler.Compile(s.url + "#/components/schemas/" + escapePointer(name))
	if err != nil {
		return nil, fmt.Errorf("compile schema %q: %w", name, err)
	}
	s.schemas[name] = sch
	return sch, nil
}

// Validate checks that body is JSON valid against #/components/schemas/<schema>.
// A document that does not conform gives an error wrapping
// *jsonschema.ValidationError, whose message lists every violation.
func (s *Spec) Validate(schema string, body []byte) error {
	if _, err := s.Schema(schema); err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("validate against %s: body is not JSON: %w", schema, err)
	}
	return s.validate(schema, v)
}

// validate checks v, as jsonschema.UnmarshalJSON returns it, against the
// component schema called schema.
func (s *Spec) validate(schema string, v any) error {
	sch, err := s.Schema(schema)
	if err != nil {
		return err
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("validate against %s: %w", schema, err)
	}
	return nil
}

// ResponseSchema names the component schema of an operation's response, e.g.
// ResponseSchema("sendMessage", "200") is "MessageResponsePayload". It lets
// tests follow the document rather than hard-code names that a newer file
// might change.
func (s *Spec) ResponseSchema(operationID, status string) (string, error) {
	paths, _ := s.doc["paths"].(map[string]any)
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for _, op := range ops {
			o, _ := op.(map[string]any)
			if o["operationId"] != operationID {
				continue
			}
			resp, _ := o["responses"].(map[string]any)
			r, ok := resp[status].(map[string]any)
			if !ok {
				return "", fmt.Errorf("operation %s has no %s response", operationID, status)
			}
			content, _ := r["content"].(map[string]any)
			media, _ := content["application/json"].(map[string]any)
			sch, _ := media["schema"].(map[string]any)
			ref, _ := sch["$ref"].(string)
			name, ok := strings.CutPrefix(ref, "#/components/schemas/")
			if !ok {
				return "", fmt.Errorf("operation %s response %s: schema is not a component reference", operationID, status)
			}
			return name, nil
		}
	}
	return "", fmt.Errorf("operation %q not found", operationID)
}

func escapePointer(s string) string {
	s = strings.ReplaceAll(s, "~", "~0")
	s = strings.ReplaceAll(s, "/", "~1")
	return url.PathEscape(s)
}

// jsonValue converts a YAML node into the types encoding/json produces
// (map[string]any, []any, string, bool, nil and numbers), which is what the
// schema compiler expects. Walking nodes rather than decoding into any keeps
// control of the corner cases: timestamps stay strings, non-string keys are
// stringified, aliases are followed.
func jsonValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return jsonValue(n.Content[0])
	case yaml.AliasNode:
		return jsonValue(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				return nil, fmt.Errorf("line %d: YAML merge keys are not supported", k.Line)
			}
			val, err := jsonValue(v)
			if err != nil {
				return nil, err
			}
			m[k.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			val, err := jsonValue(c)
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		return s, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float", "!!bool", "!!null":
			var v any
			if err := n.Decode(&v); err != nil {
				return nil, fmt.Errorf("line %d: %w", n.Line, err)
			}
			return v, nil
		default: // !!str, !!timestamp, !!binary: keep the text as written
			return n.Value, nil
		}
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node kind %v", n.Line, n.Kind)
}
