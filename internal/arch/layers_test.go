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

// module is go.mod's module path. The lists below are relative to it so
// they read like the tree; TestLayerPackagesExist fails if it changes.
const module = "github.com/bulksend/bulksend"

// domain packages hold the campaign model and the send and reconcile
// logic. They define the interfaces they need.
var domain = []string{
	"internal/campaign",
	"internal/engine",
	"internal/pace",
	"internal/reconcile",
	"internal/whatsapp/template", // WhatsApp templates as data: definitions, mappings, Meta's rules for values
	"internal/sms/segment",       // SMS parts: GSM-7 or UCS-2, and how carriers split a body
	"internal/sms/smstext",       // an SMS body with {{column}} placeholders
}

// adapters talk to the outside world (SQLite, Meta's API, the fake API,
// the terminal, webhook logs, CSV files) and satisfy domain interfaces.
var adapters = []string{
	"internal/store",
	"internal/whatsapp",
	"internal/whatsapp/sandbox",
	"internal/cli",
	"internal/whatsapp/webhook",
	"internal/csvin",
	"internal/whatsapp/pricing",
	"internal/sms",            // AWS End User Messaging SMS
	"internal/sms/smssandbox", // a fake of it
	"internal/sms/smsevent",   // its exported event records
	"internal/metrics",        // Prometheus: the textfile and /metrics
	"internal/report",         // a campaign's report: reads the store, writes HTML
	"internal/listen",         // every HTTP listener: timeouts and a connection cap
	"internal/termtext",       // outside text made safe for a terminal
	"internal/csvout",         // outside text made safe for a spreadsheet
}

// rule forbids every package in from to depend on a package deny accepts.
// Paths are full import paths: shortened ones would confuse this module's
// internal/... with the standard library's (internal/abi and the like).
type rule struct {
	name string // said in each violation, so whoever breaks it knows why
	from []string
	deny func(dep string) bool
}

func mod(rel string) string { return module + "/" + rel }

func inModule(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

// short is the path as the tree shows it, for messages.
func short(path string) string { return strings.TrimPrefix(path, module+"/") }

func layerRules() []rule {
	isAdapter := make(map[string]bool)
	for _, a := range adapters {
		isAdapter[mod(a)] = true
	}
	var from []string
	for _, d := range domain {
		from = append(from, mod(d))
	}
	return []rule{
		{
			name: "domain packages must not depend on adapters",
			from: from,
			deny: func(dep string) bool { return isAdapter[dep] },
		},
		{
			name: "campaign imports no package of this module",
			from: []string{mod("internal/campaign")},
			deny: inModule,
		},
	}
}

// violations checks each rule against deps, every package's transitive
// dependencies (go list's Deps: the go tool's verdict, not ours), and
// explains each hit with a shortest chain of direct imports.
func violations(imports, deps map[string][]string, rules []rule) []string {
	var out []string
	for _, r := range rules {
		for _, from := range r.from {
			for _, dep := range slices.Sorted(slices.Values(deps[from])) {
				if !r.deny(dep) {
					continue
				}
				// Deps is the verdict, so a dependency is reported even when
				// Imports cannot say how it arises.
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

// goList runs `go list -json ./...` once for all tests in this package
// (about a second). Without -test: test files may import anything.
var goList = sync.OnceValues(func() ([]listed, error) {
	goBin, err := goBinary()
	if err != nil {
		return nil, err
	}
	gomod, err := run(goBin, "", "env", "GOMOD")
	if err != nil {
		return nil, err
	}
	gomod = bytes.TrimSpace(gomod)
	if len(gomod) == 0 || string(gomod) == os.DevNull {
		return nil, errors.New("go env GOMOD: not inside a module")
	}
	out, err := run(goBin, filepath.Dir(string(gomod)), "list", "-json", "./...")
	if err != nil {
		return nil, err
	}
	// go list -json prints one object after another, not an array.
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list -json output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
})

// goBinary is the go command: go test puts its toolchain's bin first on
// PATH, so the graph is the one this test was compiled against.
func goBinary() (string, error) {
	p, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("finding the go command: %w", err)
	}
	return p, nil
}

// run returns the command's stdout; its stderr goes into the error.
func run(goBin, dir string, args ...string) ([]byte, error) {
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

func TestLayers(t *testing.T) {
	pkgs, err := goList()
	if err != nil {
		t.Fatal(err)
	}
	imports := make(map[string][]string, len(pkgs))
	deps := make(map[string][]string, len(pkgs))
	for _, p := range pkgs {
		imports[p.ImportPath] = p.Imports
		deps[p.ImportPath] = p.Deps
	}
	if v := violations(imports, deps, layerRules()); len(v) > 0 {
		t.Errorf("%d wrong-way dependencies; declare the interface in the domain package and let the adapter satisfy it:\n\t%s",
			len(v), strings.Join(v, "\n\t"))
	}
}

// TestLayerPackagesExist keeps a rename or a move from silently turning a
// rule off: a rule about a package that does not exist always passes.
func TestLayerPackagesExist(t *testing.T) {
	pkgs, err := goList()
	if err != nil {
		t.Fatal(err)
	}
	exists := make(map[string]bool, len(pkgs))
	for _, p := range pkgs {
		exists[p.ImportPath] = true
	}
	for _, rel := range slices.Concat(domain, adapters) {
		if !exists[mod(rel)] {
			t.Errorf("the layer rules name %s, but go list ./... has no package %s; update the lists in layers_test.go", rel, mod(rel))
		}
	}
}

// closure is what go list reports as Deps: every package reachable through
// imports, sorted, the package itself excluded.
func closure(imports map[string][]string) map[string][]string {
	deps := make(map[string][]string, len(imports))
	for p := range imports {
		seen := make(map[string]bool)
		var visit func(string)
		visit = func(q string) {
			for _, r := range imports[q] {
				if !seen[r] {
					seen[r] = true
					visit(r)
				}
			}
		}
		visit(p)
		deps[p] = slices.Sorted(maps.Keys(seen))
	}
	return deps
}

// TestLayersCatchWrongWayImport shows the checker fails for the right
// reason: on synthetic graphs it reports exactly the wrong-way imports and
// nothing on a clean one. Import lists are sorted, as go list gives them.
func TestLayersCatchWrongWayImport(t *testing.T) {
	var (
		campaign  = mod("internal/campaign")
		engine    = mod("internal/engine")
		enginetst = mod("internal/engine/enginetest")
		pace      = mod("internal/pace")
		reconcile = mod("internal/reconcile")
		store     = mod("internal/store")
		whatsapp  = mod("internal/whatsapp")
		sandbox   = mod("internal/whatsapp/sandbox")
		cli       = mod("internal/cli")
		webhook   = mod("internal/whatsapp/webhook")
		csvin     = mod("internal/csvin")
		bloom     = mod("internal/bloom")
		x         = mod("internal/x")
	)
	const (
		domainRule   = "domain packages must not depend on adapters"
		campaignRule = "campaign imports no package of this module"
	)
	for _, tc := range []struct {
		name    string
		imports map[string][]string
		deps    map[string][]string // nil: closure(imports)
		want    []string
	}{
		{
			// Adapters importing domain packages, and a test-support package
			// using an adapter, are the intended shape. campaign's stdlib
			// internal/abi must not pass for this module's internal/...
			name: "clean layering",
			imports: map[string][]string{
				campaign:  {"strings"},
				"strings": {"internal/abi"},
				engine:    {campaign, "context", pace},
				enginetst: {engine, store},
				pace:      {"time"},
				reconcile: {campaign},
				store:     {campaign, engine, "github.com/mattn/go-sqlite3"},
				whatsapp:  {campaign, engine},
				sandbox:   {whatsapp},
				webhook:   {campaign, reconcile},
				csvin:     {campaign},
				cli:       {csvin, engine, reconcile, sandbox, store, webhook, whatsapp},
			},
		},
		{
			name: "direct and transitive wrong-way imports",
			imports: map[string][]string{
				engine:    {campaign, store},
				reconcile: {campaign, x},
				x:         {whatsapp},
				store:     {campaign},
			},
			want: []string{
				"internal/engine imports internal/store (via internal/engine -> internal/store): " + domainRule,
				"internal/reconcile imports internal/whatsapp (via internal/reconcile -> internal/x -> internal/whatsapp): " + domainRule,
			},
		},
		{
			name: "the shortest chain is shown",
			imports: map[string][]string{
				engine: {bloom, x},
				bloom:  {pace},
				pace:   {store},
				x:      {store},
			},
			want: []string{
				"internal/engine imports internal/store (via internal/engine -> internal/x -> internal/store): " + domainRule,
				"internal/pace imports internal/store (via internal/pace -> internal/store): " + domainRule,
			},
		},
		{
			name: "domain importing a test-support package that uses an adapter",
			imports: map[string][]string{
				engine:    {enginetst},
				enginetst: {store},
			},
			want: []string{
				"internal/engine imports internal/store (via internal/engine -> internal/engine/enginetest -> internal/store): " + domainRule,
			},
		},
		{
			name:    "campaign imports a non-adapter package of this module",
			imports: map[string][]string{campaign: {bloom, "fmt"}},
			want: []string{
				"internal/campaign imports internal/bloom (via internal/campaign -> internal/bloom): " + campaignRule,
			},
		},
		{
			name: "campaign importing an adapter breaks both rules and taints its importers",
			imports: map[string][]string{
				campaign: {webhook},
				engine:   {campaign},
			},
			want: []string{
				"internal/campaign imports internal/whatsapp/webhook (via internal/campaign -> internal/whatsapp/webhook): " + domainRule,
				"internal/engine imports internal/whatsapp/webhook (via internal/engine -> internal/campaign -> internal/whatsapp/webhook): " + domainRule,
				"internal/campaign imports internal/whatsapp/webhook (via internal/campaign -> internal/whatsapp/webhook): " + campaignRule,
			},
		},
		{
			name:    "a dependency go list reports counts even without an import chain",
			imports: map[string][]string{engine: {campaign}},
			deps:    map[string][]string{engine: {campaign, csvin}},
			want: []string{
				"internal/engine imports internal/csvin (no import chain in go list's Imports): " + domainRule,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deps := tc.deps
			if deps == nil {
				deps = closure(tc.imports)
			}
			got := violations(tc.imports, deps, layerRules())
			if !slices.Equal(got, tc.want) {
				t.Errorf("violations:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
		})
	}
}
