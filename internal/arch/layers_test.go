package arch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// module is go.mod's module path; the tables below are relative to it so
// that they read like the tree.
const module = "github.com/bulksend/bulksend"

// class is what a package is to the layers.
type class string

const (
	domain  class = "domain"   // the campaign model, the send and reconcile logic: declares the interfaces it needs
	usecase class = "use case" // the run, below every front end: domain and adapters, through the Channel seam
	channel class = "channel"  // a provider's channel: its client, formats, message, and the run's side of it
	fake    class = "fake"     // a sandbox: a fake of a provider, for rehearsals and tests
	adapter class = "adapter"  // the checkpoint, CSV files, metrics, reports, the command line
	support class = "support"  // plumbing with no knowledge of campaigns: listeners, files, escaping
	program class = "program"  // cmd/: main packages
)

// classes classify every package by folder prefix; the longest prefix
// that matches a package's path (the prefix itself, or a folder below it)
// is its class. A package no prefix matches fails TestEveryPackageClassified.
var classes = map[string]class{
	"internal/campaign":  domain,
	"internal/engine":    domain,
	"internal/pace":      domain,
	"internal/reconcile": domain,
	"internal/schedule":  domain, // when a recipient may be messaged
	"internal/optout":    domain, // what a reply asks for

	"internal/run":     usecase,
	"internal/inbound": usecase, // what comes back: statuses, replies, opt-outs

	"internal/whatsapp":         channel,
	"internal/whatsapp/sandbox": fake,
	"internal/sms":              channel,
	"internal/sms/smssandbox":   fake,
	"internal/fake":             fake, // what the sandboxes share

	"internal/store":   adapter,
	"internal/ledger":  adapter, // the operator ledger, shared by every campaign
	"internal/budget":  adapter, // the numbers' budget shared through Redis by every process
	"internal/csvin":   adapter,
	"internal/metrics": adapter,
	"internal/report":  adapter,
	"internal/cli":     adapter,

	"internal/listen":     support,
	"internal/logfile":    support,
	"internal/atomicfile": support, // files that appear only when complete
	"internal/termtext":   support,
	"internal/csvout":     support,
	"internal/redact":     support,
	"internal/version":    support,
	"internal/arch":       support, // these tests
	"internal/bench":      support, // benchmarks only

	"cmd": program,
}

// channels are the channels' folders: a channel imports nothing of the
// other's.
var channels = []string{"internal/whatsapp", "internal/sms"}

// fakes are the fakes, each with the folder of what it fakes and the
// packages of that folder it may still use: data both sides share, not
// behaviour (the WhatsApp sandbox checks sends against template
// definitions; the SMS sandbox counts parts with a counter of its own).
var fakes = map[string]struct {
	fakes string
	may   []string
}{
	"internal/whatsapp/sandbox": {fakes: "internal/whatsapp", may: []string{"internal/whatsapp/template"}},
	"internal/sms/smssandbox":   {fakes: "internal/sms"},
}

// thirdParty is where each third-party module may be imported directly
// (folder prefixes, as in classes); a third-party import not listed here
// is a violation too. The standard library is anyone's.
var thirdParty = map[string][]string{
	"github.com/mattn/go-sqlite3":            {"internal/store", "internal/ledger"},
	"github.com/aws/":                        {"internal/sms"},
	"github.com/spf13/cobra":                 {"internal/cli"},
	"github.com/spf13/pflag":                 {"internal/cli"}, // cobra's flags
	"github.com/schollz/progressbar/":        {"internal/cli"},
	"golang.org/x/term":                      {"internal/cli"},
	"github.com/prometheus/":                 {"internal/metrics"},
	"github.com/nyaruka/phonenumbers":        {"internal/csvin", "internal/schedule"},
	"golang.org/x/time/rate":                 {"internal/pace"},
	"github.com/gomodule/redigo/":            {"internal/budget"},
	"github.com/santhosh-tekuri/jsonschema/": {"internal/whatsapp/internal/oas"},
	"gopkg.in/yaml.v3":                       {"internal/whatsapp/internal/oas"},
}

// sqlDrivers are the standard library's SQL packages: SQL is the store's.
var sqlDrivers = []string{"database/sql", "database/sql/driver"}

func mod(rel string) string { return module + "/" + rel }

func inModule(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

// short is the path as the tree shows it, for messages.
func short(path string) string { return strings.TrimPrefix(path, module+"/") }

// under reports whether the module path p is folder prefix or below it.
func under(p, prefix string) bool {
	rel := short(p)
	return inModule(p) && (rel == prefix || strings.HasPrefix(rel, prefix+"/"))
}

// classOf is p's class, "" when no prefix matches it.
func classOf(p string) class {
	best, c := -1, class("")
	for prefix, cl := range classes {
		if under(p, prefix) && len(prefix) > best {
			best, c = len(prefix), cl
		}
	}
	return c
}

// thirdPartyModule reports whether p is outside the standard library and
// this module: its first element has a dot.
func thirdPartyModule(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return strings.Contains(first, ".") && !inModule(p)
}

// rule forbids, of every package from selects, a dependency deny
// selects. direct: only its own imports count (third-party rules), else
// every package it depends on.
type rule struct {
	name   string // said in each violation, so whoever breaks it knows why
	from   func(p string) bool
	deny   func(from, dep string) bool
	direct bool
}

func rules() []rule {
	isClass := func(cs ...class) func(string) bool {
		return func(p string) bool { return inModule(p) && slices.Contains(cs, classOf(p)) }
	}
	return []rule{
		{
			name: "the domain imports no use case, channel, fake or adapter",
			from: isClass(domain),
			deny: func(_, dep string) bool { return isClass(usecase, channel, fake, adapter)(dep) },
		},
		{
			name: "campaign imports no package of this module",
			from: func(p string) bool { return under(p, "internal/campaign") },
			deny: func(_, dep string) bool { return inModule(dep) },
		},
		{
			name: "the run knows channels only through its Channel seam",
			from: isClass(usecase),
			deny: func(_, dep string) bool { return isClass(channel, fake)(dep) || under(dep, "internal/cli") },
		},
		{
			name: "channels never import each other",
			from: isClass(channel, fake),
			deny: func(from, dep string) bool {
				for _, c := range channels {
					if under(dep, c) && !under(from, c) {
						return true
					}
				}
				return false
			},
		},
		{
			name: "a fake imports nothing of what it fakes",
			from: isClass(fake),
			deny: func(from, dep string) bool {
				for f, what := range fakes {
					if under(from, f) && under(dep, what.fakes) && !under(dep, f) {
						return !slices.ContainsFunc(what.may, func(m string) bool { return under(dep, m) })
					}
				}
				return false
			},
		},
		{
			name:   "only fakes import the fakes' plumbing",
			from:   func(p string) bool { return inModule(p) && classOf(p) != fake },
			deny:   func(_, dep string) bool { return under(dep, "internal/fake") },
			direct: true,
		},
		{
			name: "adapters and support know no channel, fake or run (but the command line, which wires them)",
			from: func(p string) bool { return isClass(adapter, support)(p) && !under(p, "internal/cli") },
			deny: func(_, dep string) bool { return isClass(usecase, channel, fake)(dep) || under(dep, "internal/cli") },
		},
		{
			name: "support packages know no campaign",
			from: isClass(support),
			deny: func(_, dep string) bool { return isClass(domain, adapter)(dep) },
		},
		{
			name:   "SQL is the store's and the ledger's",
			from:   func(p string) bool { return inModule(p) && !under(p, "internal/store") && !under(p, "internal/ledger") },
			deny:   func(_, dep string) bool { return slices.Contains(sqlDrivers, dep) },
			direct: true,
		},
		{
			name:   "a third-party module is imported where it belongs (see thirdParty)",
			from:   inModule,
			deny:   func(from, dep string) bool { return thirdPartyModule(dep) && !thirdPartyAllowed(from, dep) },
			direct: true,
		},
	}
}

// thirdPartyAllowed reports whether from may import the third-party
// package dep.
func thirdPartyAllowed(from, dep string) bool {
	for mod, where := range thirdParty {
		if dep == strings.TrimSuffix(mod, "/") || strings.HasPrefix(dep, mod) || strings.HasPrefix(dep, mod+"/") {
			return slices.ContainsFunc(where, func(w string) bool { return under(from, w) })
		}
	}
	return false
}

// violations checks each rule against the graph: imports are each
// package's direct imports, deps its transitive dependencies (go list's
// Deps: the go tool's verdict, not ours). Each hit is explained with a
// shortest chain of direct imports.
func violations(imports, deps map[string][]string, rs []rule) []string {
	var out []string
	for _, r := range rs {
		for _, from := range slices.Sorted(maps.Keys(imports)) {
			if !r.from(from) {
				continue
			}
			seen := deps[from]
			if r.direct {
				seen = imports[from]
			}
			for _, dep := range slices.Sorted(slices.Values(seen)) {
				if !r.deny(from, dep) {
					continue
				}
				via := "no import chain in go list's Imports"
				if chain := importChain(imports, from, dep); chain != nil {
					for i := range chain {
						chain[i] = short(chain[i])
					}
					via = "via " + strings.Join(chain, " -> ")
				}
				out = append(out, fmt.Sprintf("%s imports %s (%s): %s", short(from), short(dep), via, r.name))
			}
		}
	}
	return out
}

// unclassified are the module's packages no prefix of classes matches.
func unclassified(imports map[string][]string) []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(imports)) {
		if inModule(p) && classOf(p) == "" {
			out = append(out, short(p))
		}
	}
	return out
}

// importChain is a shortest path of direct imports from src to dst, both
// included, or nil if there is none. Breadth-first, so the chain shown is
// the most direct one, the first to cut.
func importChain(imports map[string][]string, src, dst string) []string {
	parent := map[string]string{src: ""} // "" ends the chain: no package has that path
	for queue := []string{src}; len(queue) > 0; queue = queue[1:] {
		p := queue[0]
		if p == dst {
			var chain []string
			for ; p != ""; p = parent[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, q := range imports[p] {
			if _, seen := parent[q]; !seen {
				parent[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}

// listed is the part of `go list -json` the rules need.
type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// graph is the import graph of the module at dir, from `go list -e -json
// ./...` (-e: a package with an import the go tool itself refuses, of
// another tree's internal/ package, is still listed with that import).
// Without -test: test files may import anything.
func graph(dir string) (imports, deps map[string][]string, err error) {
	goBin, err := exec.LookPath("go") // go test puts its toolchain first on PATH
	if err != nil {
		return nil, nil, fmt.Errorf("finding the go command: %w", err)
	}
	cmd := exec.Command(goBin, "list", "-e", "-json", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list: %w\n%s", err, stderr.Bytes())
	}
	imports, deps = map[string][]string{}, map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out)) // one object after another, not an array
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return imports, deps, nil
		} else if err != nil {
			return nil, nil, fmt.Errorf("decoding go list -json output: %w", err)
		}
		imports[p.ImportPath], deps[p.ImportPath] = p.Imports, p.Deps
	}
}

// root is the module's folder.
func root() (string, error) {
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", err
	}
	return dir, nil
}

var tree = sync.OnceValues(func() (*[2]map[string][]string, error) {
	dir, err := root()
	if err != nil {
		return nil, err
	}
	imports, deps, err := graph(dir)
	return &[2]map[string][]string{imports, deps}, err
})

// check is every failure of the rules on the graph of the module at dir.
func check(imports, deps map[string][]string) []string {
	v := violations(imports, deps, rules())
	for _, p := range unclassified(imports) {
		v = append(v, p+": unclassified: add its folder to classes in internal/arch")
	}
	return v
}

func TestLayers(t *testing.T) {
	g, err := tree()
	if err != nil {
		t.Fatal(err)
	}
	if v := check(g[0], g[1]); len(v) > 0 {
		t.Errorf("%d layering violations:\n\t%s", len(v), strings.Join(v, "\n\t"))
	}
}

// TestEveryPrefixExists keeps a rename or a move from silently turning a
// rule off: a rule about a folder that holds no package always passes.
func TestEveryPrefixExists(t *testing.T) {
	g, err := tree()
	if err != nil {
		t.Fatal(err)
	}
	prefixes := slices.Collect(maps.Keys(classes))
	prefixes = append(prefixes, channels...)
	for f, what := range fakes {
		prefixes = append(prefixes, f, what.fakes)
		prefixes = append(prefixes, what.may...)
	}
	for _, where := range thirdParty {
		prefixes = append(prefixes, where...)
	}
	for _, prefix := range prefixes {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(g[0])), func(p string) bool { return under(p, prefix) }) {
			t.Errorf("the layer tables name %s, but go list ./... has no package there: update internal/arch", prefix)
		}
	}
}
