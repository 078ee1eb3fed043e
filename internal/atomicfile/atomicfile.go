// Package atomicfile writes a file so that it appears only when complete:
// a reader, or whoever opens it after a crash, finds the previous file or
// the new one whole, never a part.
package atomicfile

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// Write writes the file at path through write: into a temporary file
// beside it, synced, given mode perm, then renamed over path. A failure
// leaves no file behind (and an older one as it was). write's own error
// is returned as it is; the file's are said with path.
func Write(path string, perm os.FileMode, write func(*bufio.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriter(tmp)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
