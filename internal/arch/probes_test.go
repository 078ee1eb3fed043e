package arch

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

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

// TestRulesCatchViolations shows each rule fails for its reason, and only
// then: on synthetic graphs the checker reports exactly the violations
// and nothing on a clean one.
func TestRulesCatchViolations(t *testing.T) {
	var (
		campaign   = mod("internal/campaign")
		engine     = mod("internal/engine")
		run        = mod("internal/run")
		store      = mod("internal/store")
		csvin      = mod("internal/csvin")
		cli        = mod("internal/cli")
		metrics    = mod("internal/metrics")
		listen     = mod("internal/listen")
		whatsapp   = mod("internal/whatsapp")
		template   = mod("internal/whatsapp/template")
		webhook    = mod("internal/whatsapp/webhook")
		sandbox    = mod("internal/whatsapp/sandbox")
		wachannel  = mod("internal/whatsapp/channel")
		sms        = mod("internal/sms")
		segment    = mod("internal/sms/segment")
		smssandbox = mod("internal/sms/smssandbox")
	)
	clean := map[string][]string{
		campaign:             {"strings"},
		engine:               {campaign, "context"},
		run:                  {campaign, engine, store, csvin},
		store:                {campaign, engine, "database/sql", "github.com/mattn/go-sqlite3"},
		csvin:                {"github.com/nyaruka/phonenumbers"},
		metrics:              {engine, listen, "github.com/prometheus/client_golang/prometheus"},
		listen:               {"net/http"},
		whatsapp:             {campaign, template},
		template:             {"encoding/json"},
		webhook:              {campaign},
		sandbox:              {template, listen, mod("internal/fake")},
		wachannel:            {run, whatsapp, sandbox, webhook},
		sms:                  {campaign, segment, "github.com/aws/aws-sdk-go-v2/aws"},
		segment:              {"unicode/utf8"},
		smssandbox:           {"net/http", mod("internal/fake")},
		mod("internal/fake"): {"hash/fnv"},
		cli:                  {run, wachannel, sms, metrics, "github.com/spf13/cobra"},
	}
	with := func(from string, deps ...string) map[string][]string {
		g := maps.Clone(clean)
		g[from] = append(slices.Clone(g[from]), deps...)
		for _, d := range deps {
			if _, ok := g[d]; !ok && inModule(d) {
				g[d] = nil
			}
		}
		return g
	}
	for _, tc := range []struct {
		name    string
		imports map[string][]string
		want    []string // rules that must be named (a transitive import breaks the importers' rules too)
	}{
		{"clean layering", clean, nil},
		{"the domain imports a channel", with(engine, whatsapp), []string{"the domain imports no use case"}},
		{"the domain imports an adapter through another package", with(engine, mod("internal/pace")), nil},
		{"campaign imports the module", with(campaign, mod("internal/pace")), []string{"campaign imports no package of this module"}},
		{"the run imports a channel", with(run, wachannel), []string{"the run knows channels only through its Channel seam"}},
		{"a channel imports the other", with(whatsapp, sms), []string{"channels never import each other"}},
		{"a fake imports its client", with(sandbox, whatsapp), []string{"a fake imports nothing of what it fakes"}},
		{"a fake imports its channel's parts counter", with(smssandbox, segment), []string{"a fake imports nothing of what it fakes"}},
		{"an adapter imports a channel", with(store, webhook), []string{"adapters and support know no channel"}},
		{"support imports the domain", with(listen, engine), []string{"support packages know no campaign"}},
		{"a channel imports the fakes' plumbing", with(whatsapp, mod("internal/fake")), []string{"only fakes import the fakes' plumbing"}},
		{"SQL outside the store", with(run, "database/sql"), []string{"SQL is the store's"}},
		{"the AWS SDK outside the SMS channel", with(cli, "github.com/aws/aws-sdk-go-v2/aws"), []string{"a third-party module is imported where it belongs"}},
		{"cobra outside cli", with(run, "github.com/spf13/cobra"), []string{"a third-party module is imported where it belongs"}},
		{"an unknown module", with(engine, "example.com/x"), []string{"a third-party module is imported where it belongs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := violations(tc.imports, closure(tc.imports), rules())
			if len(tc.want) == 0 && len(got) > 0 {
				t.Fatalf("violations of a clean graph:\n\t%s", strings.Join(got, "\n\t"))
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(got, func(v string) bool { return strings.Contains(v, w) }) {
					t.Errorf("no violation names %q; got:\n\t%s", w, strings.Join(got, "\n\t"))
				}
			}
		})
	}
	// A package in no class's folder.
	g := with(mod("internal/zzz"))
	if u := unclassified(g); !slices.Equal(u, []string{"internal/zzz"}) {
		t.Errorf("unclassified = %q, want internal/zzz", u)
	}
}

// TestProbes adds each probe to a temporary copy of the module, as a
// developer would make the mistake, and expects the layer check of that
// copy to fail for its reason.
func TestProbes(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the module and lists it once per probe")
	}
	src, err := root()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		name, file, pkg, imp, want string
	}{
		{"engine imports the OpenAPI checker", "internal/engine/zz_probe.go", "engine", module + "/internal/whatsapp/internal/oas", "the domain imports no use case, channel, fake or adapter"},
		{"the SMS sandbox imports segment", "internal/sms/smssandbox/zz_probe.go", "smssandbox", module + "/internal/sms/segment", "a fake imports nothing of what it fakes"},
		{"the WhatsApp sandbox imports the client", "internal/whatsapp/sandbox/zz_probe.go", "sandbox", module + "/internal/whatsapp", "a fake imports nothing of what it fakes"},
		{"the WhatsApp client imports the SMS client", "internal/whatsapp/zz_probe.go", "whatsapp", module + "/internal/sms", "channels never import each other"},
		{"cli imports the AWS SDK", "internal/cli/zz_probe.go", "cli", "github.com/aws/aws-sdk-go-v2/aws", "a third-party module is imported where it belongs"},
		{"a new package nobody classified", "internal/zzprobe/probe.go", "zzprobe", "strings", "unclassified"},
	} {
		t.Run(p.name, func(t *testing.T) {
			dir := copyModule(t, src)
			code := "package " + p.pkg + "\n\nimport _ \"" + p.imp + "\"\n"
			path := filepath.Join(dir, p.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(code), 0o644); err != nil {
				t.Fatal(err)
			}
			imports, deps, err := graph(dir)
			if err != nil {
				t.Fatal(err)
			}
			v := check(imports, deps)
			if !slices.ContainsFunc(v, func(s string) bool { return strings.Contains(s, p.want) }) {
				t.Errorf("the check of the copy with %s found:\n\t%s\nwant a violation naming %q", p.file, strings.Join(v, "\n\t"), p.want)
			}
		})
	}
}

// copyModule copies the module's go.mod, go.sum and its packages' files
// (not their testdata) into a temporary folder.
func copyModule(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(src, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			rel, _ := filepath.Rel(src, path)
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out := filepath.Join(dst, rel)
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return err
			}
			return os.WriteFile(out, b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
