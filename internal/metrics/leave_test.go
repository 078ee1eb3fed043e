package metrics

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLeave: a run that ends before it began sending rewrites the metrics
// file from the checkpoint (an earlier run's figures must not stay); one
// that sent, or has no file, leaves it as it is.
func TestLeave(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		attached bool
		noFile   bool
		want     string // in the file afterwards
	}{
		{"never sent", false, false, `bulksend_rows{campaign="c1",channel="whatsapp",state="pending"} 4`},
		{"sent", true, false, "earlier run"},
		{"no file", false, true, "earlier run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := checkpoint(t, 4, "1000001")
			path := filepath.Join(t.TempDir(), "bulksend.prom")
			if err := os.WriteFile(path, []byte("earlier run\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			file := path
			if tc.noFile {
				file = ""
			}
			mo := NewOutput(file, 0, nil)
			if tc.attached {
				mo.Attach(New("c1", "whatsapp"))
			}
			mo.Leave(ctx, st)
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(got), tc.want) {
				t.Errorf("file:\n%s\nwant it to hold %q", got, tc.want)
			}
		})
	}
	var none *Output
	none.Leave(ctx, checkpoint(t, 1, "1000001")) // no output: nothing to do
}
