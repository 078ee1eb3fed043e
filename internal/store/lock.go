package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"
)

// Lock is an exclusive hold on a checkpoint, so that two runs never send
// the same campaign at once. It is a flock on CHECKPOINT.lock beside the
// resolved checkpoint (Resolve), so every name that reaches the file
// shares one lock. The operating system drops it when the process dies,
// so a crash never leaves a stale lock.
type Lock struct{ f *os.File }

// LockedError says another process holds the checkpoint.
type LockedError struct {
	Path   string
	Holder string // what the holder wrote: pid, host, command, start time
}

func (e *LockedError) Error() string {
	h := e.Holder
	if h == "" {
		h = "another process"
	}
	return fmt.Sprintf("checkpoint %s is in use by %s", e.Path, h)
}

// lockInfoMax bounds what is read of a lock file: bulksend writes one
// short line.
const lockInfoMax = 4 << 10

// Acquire takes the lock of the checkpoint at path without waiting. If
// another process holds it, the error is a *LockedError naming it.
//
// The lock file is opened without following a symbolic link planted in
// its place, and a file there that bulksend did not write (not a regular
// file of one name, or holding other text than a lock line) is refused
// and left as it was. A checkpoint with a second hard link is refused
// (ErrHardLinked).
func Acquire(path, command string) (*Lock, error) {
	path, err := Resolve(path)
	if err != nil {
		return nil, err
	}
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("lock checkpoint: %s is a symbolic link, not bulksend's lock file: remove it", name)
	}
	if errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("lock checkpoint %s: %w (%w)", path, ErrReadOnly, err)
	}
	if err != nil {
		return nil, fmt.Errorf("lock checkpoint: %w", err)
	}
	if err := ours(f, name); err != nil {
		f.Close()
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := readInfo(f)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Path: path, Holder: holder}
		}
		return nil, fmt.Errorf("lock checkpoint: %w", err)
	}
	// Checked under the lock: a link made meanwhile is seen by the next run.
	if err := checkFile(path); err != nil {
		f.Close()
		return nil, err
	}
	host, _ := os.Hostname()
	info := fmt.Sprintf("pid %d on %s (bulksend %s, since %s)\n", os.Getpid(), host, command, time.Now().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(info), 0)
	}
	return &Lock{f: f}, nil
}

// ours refuses a lock file that bulksend did not write: only a regular
// file with one name, empty or holding a lock line, is truncated.
func ours(f *os.File, name string) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("lock checkpoint: %w", err)
	}
	notOurs := func(why string) error {
		return fmt.Errorf("lock checkpoint: %s is not bulksend's lock file (%s): move it away and run again", name, why)
	}
	if !fi.Mode().IsRegular() {
		return notOurs("not a regular file")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return notOurs("it has other names")
	}
	if fi.Size() == 0 {
		return nil
	}
	if fi.Size() > lockInfoMax {
		return notOurs(fmt.Sprintf("%d bytes", fi.Size()))
	}
	info, err := readInfo(f)
	if err != nil {
		return fmt.Errorf("lock checkpoint: %w", err)
	}
	if !strings.HasPrefix(info, "pid ") || strings.Count(info, "\n") > 0 {
		return notOurs("other text")
	}
	return nil
}

// readInfo reads the lock line of f, at most lockInfoMax bytes.
func readInfo(f *os.File) (string, error) {
	b := make([]byte, lockInfoMax)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return string(bytes.TrimSpace(b[:n])), nil
}

// Release drops the lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	l.f.Truncate(0)
	err := l.f.Close() // closing the descriptor releases the flock
	l.f = nil
	return err
}

// Holder returns what the process holding the checkpoint's lock wrote
// about itself, if that process is alive. It takes no lock, so looking
// (bulksend status) never keeps a run from starting.
func Holder(path string) (string, bool) {
	path, err := Resolve(path)
	if err != nil {
		return "", false
	}
	f, err := os.OpenFile(path+".lock", os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	info, err := readInfo(f)
	if err != nil {
		return "", false
	}
	var pid int
	if _, err := fmt.Sscanf(info, "pid %d", &pid); err != nil || pid <= 0 {
		return "", false
	}
	// Signal 0 checks that the process exists. A lock left by a killed
	// run is released by the kernel, but its text stays: this tells them apart.
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return "", false
	}
	return info, true
}
