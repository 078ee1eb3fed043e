package store

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// Lock is an exclusive hold on a checkpoint, so that two runs never send
// the same campaign at once. The operating system drops it when the
// process dies, so a crash never leaves a stale lock.
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

// Acquire takes the lock of the checkpoint at path without waiting. If
// another process holds it, the error is a *LockedError naming it.
func Acquire(path, command string) (*Lock, error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock checkpoint: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(name)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Path: path, Holder: strings.TrimSpace(string(holder))}
		}
		return nil, fmt.Errorf("lock checkpoint: %w", err)
	}
	host, _ := os.Hostname()
	info := fmt.Sprintf("pid %d on %s (bulksend %s, since %s)\n", os.Getpid(), host, command, time.Now().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(info), 0)
	}
	return &Lock{f: f}, nil
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
	b, err := os.ReadFile(path + ".lock")
	if err != nil {
		return "", false
	}
	info := strings.TrimSpace(string(b))
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
