package receive

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want logName
		ok   bool
	}{
		{"webhooks-2026-12-02.jsonl", logName{day: "2026-12-02"}, true},
		{"webhooks-2026-12-02.jsonl.gz", logName{day: "2026-12-02", gz: true}, true},
		{"webhooks-2026-12-02.1.jsonl", logName{day: "2026-12-02", seq: 1}, true},
		{"webhooks-2026-12-02.17.jsonl.gz", logName{day: "2026-12-02", seq: 17, gz: true}, true},
		{"webhooks-2026-12-02.0.jsonl", logName{}, false},  // the first file has no number
		{"webhooks-2026-12-02.01.jsonl", logName{}, false}, // one name per file
		{"webhooks-2026-12-02..jsonl", logName{}, false},
		{"webhooks-2026-12-02.x.jsonl", logName{}, false},
		{"webhooks-2026-12-02.-1.jsonl", logName{}, false},
		{"webhooks-2026-12-02.1234567890.jsonl", logName{}, false},
		{"webhooks-2026-02-30.jsonl", logName{}, false}, // no such day
		{"webhooks-2026-2-03.jsonl", logName{}, false},
		{"webhooks-2026-12-02.jsonl.gz.tmp", logName{}, false},
		{"webhooks-2026-12-02.json", logName{}, false},
		{"webhooks-2026-12-02", logName{}, false},
		{"receive.lock", logName{}, false},
		{"campaign.webhooks.jsonl", logName{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseName(tc.name)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("parseName(%q) = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
			}
			if ok && got.String() != tc.name {
				t.Errorf("%+v.String() = %q, want %q", got, got.String(), tc.name)
			}
		})
	}
}

// FuzzParseName: a name parseName accepts is the name of what it parsed
// (one name per file, so Files never lists a file twice).
func FuzzParseName(f *testing.F) {
	for _, s := range []string{"webhooks-2026-12-02.jsonl", "webhooks-2026-12-02.3.jsonl.gz", "webhooks-2026-12-02.03.jsonl", "webhooks-9999-12-31.999999999.jsonl"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := parseName(s)
		if ok && n.String() != s {
			t.Fatalf("parseName(%q) = %+v, whose name is %q", s, n, n.String())
		}
	})
}

// TestFiles: files listed by day, then number (2 before 10), a file in
// both forms once (its .gz), and nothing else of the folder.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{
		"webhooks-2026-12-02.10.jsonl", "webhooks-2026-12-02.2.jsonl.gz", "webhooks-2026-12-02.jsonl.gz",
		"webhooks-2026-12-01.1.jsonl", "webhooks-2026-12-01.1.jsonl.gz", "webhooks-2026-12-01.jsonl.gz",
		"webhooks-2026-12-02.3.jsonl.gz.tmp", "receive.lock", "notes.txt",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "webhooks-2026-12-03.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	got, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i] = filepath.Base(got[i])
	}
	want := []string{"webhooks-2026-12-01.jsonl.gz", "webhooks-2026-12-01.1.jsonl.gz", "webhooks-2026-12-02.jsonl.gz",
		"webhooks-2026-12-02.2.jsonl.gz", "webhooks-2026-12-02.10.jsonl"}
	if !slices.Equal(got, want) {
		t.Errorf("Files:\n%q\nwant\n%q", got, want)
	}
}
