package atomicfile

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: the file appears only when written whole; a failed
// write leaves the file that was there as it was, and no temporary file.
func TestWrite(t *testing.T) {
	errWrite := errors.New("render failed")
	for _, tc := range []struct {
		name    string
		before  string // "" for no file
		perm    os.FileMode
		write   func(*bufio.Writer) error
		want    string
		wantErr error
	}{
		{"new file", "", 0o644, func(w *bufio.Writer) error { _, err := w.WriteString("<html>new</html>"); return err }, "<html>new</html>", nil},
		{"replaces the old one", "old", 0o644, func(w *bufio.Writer) error { _, err := w.WriteString("new"); return err }, "new", nil},
		{"a failure keeps the old one", "old", 0o644, func(w *bufio.Writer) error { w.WriteString("half"); return errWrite }, "old", errWrite},
		{"private", "old", 0o600, func(w *bufio.Writer) error { _, err := w.WriteString("+447700900123"); return err }, "+447700900123", nil},
		{"a failure makes none", "", 0o644, func(w *bufio.Writer) error { w.WriteString("half"); return errWrite }, "", errWrite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "report.html")
			if tc.before != "" {
				if err := os.WriteFile(path, []byte(tc.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := Write(path, tc.perm, tc.write); !errors.Is(err, tc.wantErr) {
				t.Fatalf("Write = %v, want %v", err, tc.wantErr)
			}
			got, err := os.ReadFile(path)
			switch {
			case tc.want == "" && !errors.Is(err, os.ErrNotExist):
				t.Errorf("file %q (%v), want none", got, err)
			case tc.want != "" && string(got) != tc.want:
				t.Errorf("file %q (%v), want %q", got, err, tc.want)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() != "report.html" {
					t.Errorf("left behind %s", e.Name())
				}
			}
			if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() != tc.perm {
				t.Errorf("mode %v, want %v", fi.Mode().Perm(), tc.perm)
			}
		})
	}
}
