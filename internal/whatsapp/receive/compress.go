package receive

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// compressor gzips closed log files, one at a time, in a goroutine of its
// own, so that neither the writer nor a POST ever waits for it.
type compressor struct {
	dir string
	log *slog.Logger
	st  *stats

	mu       sync.Mutex
	paths    []string // plain files waiting, oldest first
	stopping bool
	wake     chan struct{} // capacity 1: a signal, never waited on by a sender
	done     chan struct{} // closed when run returns
	once     sync.Once
}

func newCompressor(dir string, log *slog.Logger, st *stats) *compressor {
	c := &compressor{dir: dir, log: log, st: st, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go c.run()
	return c
}

// add queues the closed plain file at path.
func (c *compressor) add(path string) {
	c.mu.Lock()
	c.paths = append(c.paths, path)
	c.mu.Unlock()
	c.signal()
}

func (c *compressor) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// stop compresses what is queued, then returns.
func (c *compressor) stop() {
	c.once.Do(func() {
		c.mu.Lock()
		c.stopping = true
		c.mu.Unlock()
		c.signal()
	})
	<-c.done
}

func (c *compressor) run() {
	defer close(c.done)
	for {
		c.mu.Lock()
		if len(c.paths) == 0 {
			stopping := c.stopping
			c.mu.Unlock()
			if stopping {
				return
			}
			<-c.wake
			continue
		}
		path := c.paths[0]
		c.paths = c.paths[1:]
		c.mu.Unlock()
		if err := compress(c.dir, path); err != nil {
			c.st.gzipFailed.Add(1)
			c.log.Warn("webhook log file not compressed: it stays plain, and the next start tries again", "path", path, "err", err)
			continue
		}
		c.st.gzipped.Add(1)
		c.log.Debug("webhook log file compressed", "path", path)
	}
}

// compress replaces the plain log file at path by its gzip: written to a
// temporary file, fsynced, renamed into place and the folder fsynced, and
// only then the plain file removed. A crash at any point leaves the plain
// file or a complete .gz (or both, which New sorts out), never a partial
// .gz alone. BestSpeed: on a small machine the receiver's CPU matters more
// than a few percent of disk (status bodies still shrink about tenfold).
func compress(dir, path string) (err error) {
	stem := strings.TrimSuffix(path, plainExt)
	gzPath, tmp := stem+gzExt, stem+tmpExt
	src, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	// O_EXCL after removing what a crash left: nothing planted there is
	// written through.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dst, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			dst.Close()
			os.Remove(tmp)
		}
	}()
	zw, err := gzip.NewWriterLevel(dst, gzip.BestSpeed)
	if err != nil {
		return err
	}
	zw.Name, zw.ModTime = filepath.Base(path), fi.ModTime()
	n, err := io.Copy(zw, src)
	if err != nil {
		return err
	}
	if n != fi.Size() {
		return fmt.Errorf("%s changed while being compressed (%d bytes, then %d)", path, fi.Size(), n)
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := dst.Sync(); err != nil {
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, gzPath); err != nil {
		return err
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	// From here on the .gz is the file: a failure to remove the plain one
	// leaves both, which New and Files handle.
	if os.Remove(path) == nil {
		syncDir(dir)
	}
	return nil
}
