package receive

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/bulksend/bulksend/internal/logfile"
)

// file is what the writer needs of a log file: *os.File, or a test's
// wrapper of one that fails on demand.
type file interface {
	Write(p []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

// maxBatch is the most bodies one write and fsync carry, so that a POST
// queued behind a surge waits for one bounded write, not for all of it.
const maxBatch = 1024

// current is the file being written.
type current struct {
	name logName
	path string
	f    file
	size int64 // bytes in it, all fsynced
}

// writer is the one goroutine that writes the log: it owns the current
// file, the day's numbering and the batch buffer; nothing else touches
// them once run has started.
type writer struct {
	dir  string
	log  *slog.Logger
	now  func() time.Time
	size int64 // RotatePolicy.Size
	wrap func(file) file
	tick time.Duration
	st   *stats
	gz   *compressor

	seqs    map[string]int // highest number of a file of each day in the folder
	cur     *current       // nil until the next body needs one (after a rotation or a failure)
	buf     []byte
	failing int // writes failed since the last that did not

	done chan struct{} // closed when run returns
	err  error         // of closing the last file, set before done is closed
}

// openWriter recovers the folder (see the package documentation) and opens
// the day's file: the day's last one if it is plain and has room, else a
// new one.
func openWriter(r *Receiver, cfg Config) (*writer, error) {
	w := &writer{dir: cfg.Dir, log: r.log, now: r.now, size: cfg.Rotate.Size, wrap: cfg.wrap, tick: cfg.tick,
		st: &r.st, gz: r.gz, seqs: map[string]int{}, done: make(chan struct{})}
	if w.tick <= 0 {
		w.tick = time.Minute
	}
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return nil, fmt.Errorf("receive: log folder: %w", err)
	}
	found := map[logName]*struct{ plain, gz bool }{}
	removed := false
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, namePrefix) && strings.HasSuffix(name, tmpExt) {
			// A compression a crash cut short: the plain file is still there.
			if err := os.Remove(filepath.Join(w.dir, name)); err != nil {
				return nil, fmt.Errorf("receive: remove a cut compression: %w", err)
			}
			removed = true
			continue
		}
		n, ok := parseName(name)
		if !ok {
			continue
		}
		w.seqs[n.day] = max(w.seqs[n.day], n.seq)
		if !e.Type().IsRegular() {
			w.log.Warn("not a file: left alone, and its name not reused", "path", filepath.Join(w.dir, name))
			continue
		}
		f := found[n.plain()]
		if f == nil {
			f = &struct{ plain, gz bool }{}
			found[n.plain()] = f
		}
		f.plain = f.plain || !n.gz
		f.gz = f.gz || n.gz
	}

	today := day(w.now())
	last, hasToday := logName{day: today, seq: w.seqs[today]}, false
	if f := found[last]; f != nil && f.plain && !f.gz {
		hasToday = true
	}
	names := slices.SortedFunc(func(yield func(logName) bool) {
		for n := range found {
			if !yield(n) {
				return
			}
		}
	}, func(a, b logName) int { return cmp.Or(strings.Compare(a.day, b.day), cmp.Compare(a.seq, b.seq)) })
	for _, n := range names {
		f, path := found[n], filepath.Join(w.dir, n.String())
		switch {
		case !f.plain || hasToday && n == last:
		case f.gz:
			// Compressed, then a crash before the plain one was removed: the
			// .gz is complete (it is renamed into place only once written).
			if err := os.Remove(path); err != nil {
				return nil, fmt.Errorf("receive: remove a file already compressed: %w", err)
			}
			removed = true
		default:
			// Closed but not compressed: a crash, or Close on an earlier day.
			of, size, err := w.openLog(path)
			if err != nil {
				w.log.Warn("a closed log file not compressed", "path", path, "err", err)
				continue
			}
			of.Close()
			if size == 0 {
				os.Remove(path)
				removed = true
				continue
			}
			w.gz.add(path)
		}
	}
	if removed {
		if err := syncDir(w.dir); err != nil {
			return nil, fmt.Errorf("receive: log folder: %w", err)
		}
	}
	if hasToday {
		if err := w.open(last); err != nil {
			return nil, err
		}
		if w.size > 0 && w.cur.size >= w.size {
			w.closeCurrent()
		}
	}
	if w.cur == nil {
		if err := w.open(logName{day: today, seq: w.next(today)}); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// openLog opens the plain log file at path to append to it, through
// logfile.Append (no link followed, nothing foreign written to), and cuts a
// partial last line: the part of a write a crash cut, which was never
// answered 200. Appending after it would make the next body part of a
// broken line, which reconcile would skip with it.
func (w *writer) openLog(path string) (*os.File, int64, error) {
	f, err := logfile.Append(path)
	if err != nil {
		return nil, 0, fmt.Errorf("receive: open log: %w", err)
	}
	size, err := w.cutPartial(f, path)
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("receive: open log %s: %w", path, err)
	}
	return f, size, nil
}

// cutPartial truncates f, open to append at path, after its last newline,
// and returns its size then.
func (w *writer) cutPartial(f *os.File, path string) (int64, error) {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return 0, err
	}
	rf, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return 0, err
	}
	defer rf.Close()
	if rfi, err := rf.Stat(); err != nil || !os.SameFile(fi, rfi) {
		return 0, errors.Join(err, errors.New("replaced while opened"))
	}
	size, keep := fi.Size(), int64(0)
	chunk := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(0, end-int64(len(chunk)))
		b := chunk[:end-start]
		if _, err := rf.ReadAt(b, start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			keep = start + int64(i) + 1
			break
		}
		end = start
	}
	if keep == size {
		return size, nil
	}
	if err := f.Truncate(keep); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	w.log.Warn("cut a partial last line left by a crash (never answered 200: Meta sends it again)", "path", path, "bytes", size-keep)
	return keep, nil
}

// open makes n the current file, creating it if it is not there.
func (w *writer) open(n logName) error {
	path := filepath.Join(w.dir, n.String())
	f, size, err := w.openLog(path)
	if err != nil {
		return err
	}
	// The file's name must survive a crash as its content does.
	if err := syncDir(w.dir); err != nil {
		f.Close()
		return fmt.Errorf("receive: log folder: %w", err)
	}
	var lf file = f
	if w.wrap != nil {
		lf = w.wrap(f)
	}
	w.seqs[n.day] = max(w.seqs[n.day], n.seq)
	w.cur = &current{name: n, path: path, f: lf, size: size}
	w.st.files.Add(1)
	w.log.Info("webhook log file opened", "path", path, "bytes", size)
	return nil
}

// next is the number of the day's next file.
func (w *writer) next(d string) int {
	if s, ok := w.seqs[d]; ok {
		return s + 1
	}
	return 0
}

// closeCurrent closes the current file and hands it to the compressor
// (or removes it, empty).
func (w *writer) closeCurrent() {
	c := w.cur
	w.cur = nil
	if err := c.f.Close(); err != nil {
		// Every byte of it was fsynced: nothing answered 200 is lost.
		w.log.Warn("close webhook log file", "path", c.path, "err", err)
	}
	if c.size == 0 {
		os.Remove(c.path)
		return
	}
	w.gz.add(c.path)
}

// run writes what handlers queue until q is closed, then closes the
// current file.
func (w *writer) run(q <-chan *pending, h *hook) {
	defer close(w.done)
	t := time.NewTicker(w.tick)
	defer t.Stop()
	batch := make([]*pending, 0, maxBatch)
	for {
		select {
		case p, ok := <-q:
			if !ok {
				w.finish()
				return
			}
			batch = append(batch[:0], p)
			batch, ok = drain(q, batch)
			w.commit(batch, h)
			clear(batch) // drop the bodies: the handlers have them
			if !ok {
				w.finish()
				return
			}
		case <-t.C:
			// A quiet night must not keep yesterday's file open and plain.
			if w.cur != nil && w.cur.name.day != day(w.now()) {
				w.closeCurrent()
			}
		}
	}
}

// drain adds to batch what is queued now, up to maxBatch, without waiting;
// ok is false if q was closed.
func drain(q <-chan *pending, batch []*pending) (_ []*pending, ok bool) {
	for len(batch) < maxBatch {
		select {
		case p, ok := <-q:
			if !ok {
				return batch, false
			}
			batch = append(batch, p)
		default:
			return batch, true
		}
	}
	return batch, true
}

// commit writes batch to the log, fsyncs, answers every body of it and
// gives the kept ones to the hook. A batch that crosses a rotation is
// written in two parts, each fsynced before any of its bodies is answered.
func (w *writer) commit(batch []*pending, h *hook) {
	today := day(w.now())
	for i := 0; i < len(batch); {
		if err := w.prepare(today, len(batch[i].line)); err != nil {
			answer(batch[i:], err)
			return
		}
		w.buf = w.buf[:0]
		j := i
		for j < len(batch) && (j == i || w.fits(len(w.buf)+len(batch[j].line))) {
			w.buf = append(w.buf, batch[j].line...)
			j++
		}
		if err := w.write(w.buf); err != nil {
			// The rest would fail the same way (a full disk): Meta resends.
			answer(batch[i:], err)
			return
		}
		answer(batch[i:j], nil)
		if h != nil {
			h.add(batch[i:j])
		}
		i = j
	}
	if cap(w.buf) > 16<<20 {
		w.buf = nil // a surge of large bodies is over: give its memory back
	}
}

func answer(ps []*pending, err error) {
	for _, p := range ps {
		p.done <- err
	}
}

// prepare makes the current file the one a body of n bytes goes to on
// day d: a new file when the day changed or the body would take the
// current one beyond the size limit.
func (w *writer) prepare(d string, n int) error {
	if w.cur != nil && (w.cur.name.day != d || w.cur.size > 0 && !w.fits(n)) {
		w.closeCurrent()
	}
	if w.cur == nil {
		return w.open(logName{day: d, seq: w.next(d)})
	}
	return nil
}

// fits reports whether n more bytes keep the current file within the size
// limit.
func (w *writer) fits(n int) bool { return w.size <= 0 || w.cur.size+int64(n) <= w.size }

// write appends b to the current file and fsyncs it. On failure the file
// is cut back to what was fsynced before (part of b may have reached it,
// and a body appended after a partial line would be read as part of that
// broken line) and closed: after a failed fsync the kernel may have dropped
// pages it had taken, so the next body goes to a new file.
func (w *writer) write(b []byte) error {
	c := w.cur
	n, err := c.f.Write(b)
	if err == nil {
		err = c.f.Sync()
		w.st.fsyncs.Add(1)
	}
	if err == nil {
		c.size += int64(n)
		w.st.bytes.Add(int64(n))
		if w.failing > 0 {
			w.log.Info("webhook log written again", "path", c.path, "failed_writes", w.failing)
			w.failing = 0
		}
		return nil
	}
	w.st.writeErrors.Add(1)
	if terr := c.f.Truncate(c.size); terr != nil {
		w.log.Error("cut back a failed write: the file may end with a partial line", "path", c.path, "err", terr)
	}
	// A full disk fails every batch until it has room: one error, then
	// debug lines, until a write succeeds.
	level := slog.LevelError
	if w.failing > 0 {
		level = slog.LevelDebug
	}
	w.failing++
	w.log.Log(context.Background(), level, "webhook log write failed: its bodies answered 503, Meta sends them again", "path", c.path, "err", err)
	w.closeCurrent()
	return fmt.Errorf("write webhook log %s: %w", c.path, err)
}

// finish closes the current file, leaving it plain for the next New, or
// removes it if it is empty.
func (w *writer) finish() {
	if w.cur == nil {
		return
	}
	c := w.cur
	w.cur = nil
	if err := c.f.Close(); err != nil {
		w.err = fmt.Errorf("close webhook log %s: %w", c.path, err)
	}
	if c.size == 0 {
		os.Remove(c.path)
	}
}

// wait waits for run to return and returns the error of closing the last
// file.
func (w *writer) wait() error {
	<-w.done
	return w.err
}

// syncDir fsyncs the folder dir, so that files created, renamed or
// removed in it stay so after a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// flock takes f's lock without waiting.
func flock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}
