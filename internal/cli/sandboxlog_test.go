package cli

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestOpenSandboxLog: the sandbox's logs are made 0600 and appended to,
// never truncated; whatever else is in their place (a symbolic link, to a
// file or to nothing, a FIFO, a hard link, another user's file) is
// refused with an error naming the file and left as it was.
func TestOpenSandboxLog(t *testing.T) {
	const theirs = "not the sandbox's\n"
	type setup struct {
		path  string
		check func(t *testing.T) // the file in the log's place, after
	}
	unchanged := func(path string) func(t *testing.T) {
		return func(t *testing.T) {
			t.Helper()
			if b, err := os.ReadFile(path); err != nil || string(b) != theirs {
				t.Errorf("%s now holds %q (%v), want it untouched", path, b, err)
			}
		}
	}
	writeTheirs := func(t *testing.T, path string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(theirs), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		root bool   // needs root (to give a file to another user)
		why  string // "" for a log opened; else the refusal's words
		make func(t *testing.T, dir string) setup
	}{
		{name: "a new log is made 0600", make: func(t *testing.T, dir string) setup {
			path := filepath.Join(dir, "c.webhooks.jsonl")
			return setup{path, func(t *testing.T) {
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != 0o600 {
					t.Errorf("log made %v, want -rw------- (it holds phone numbers)", fi.Mode().Perm())
				}
			}}
		}},
		{name: "a log of ours is appended to, not truncated", make: func(t *testing.T, dir string) setup {
			path := filepath.Join(dir, "c.webhooks.jsonl")
			if err := os.WriteFile(path, []byte("{\"earlier\":1}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return setup{path, func(t *testing.T) {
				if b, _ := os.ReadFile(path); string(b) != "{\"earlier\":1}\n{\"now\":2}\n" {
					t.Errorf("log holds %q, want the earlier line kept and the new one after it", b)
				}
			}}
		}},
		{name: "a symbolic link to a file", why: `is a symbolic link to ".*target"`, make: func(t *testing.T, dir string) setup {
			target := filepath.Join(dir, "target")
			writeTheirs(t, target)
			path := filepath.Join(dir, "c.webhooks.jsonl")
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			return setup{path, unchanged(target)}
		}},
		{name: "a symbolic link to nothing", why: "is a symbolic link", make: func(t *testing.T, dir string) setup {
			target := filepath.Join(dir, "made")
			path := filepath.Join(dir, "c.sms-events.jsonl")
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			return setup{path, func(t *testing.T) {
				if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the link's target was made (%v)", err)
				}
			}}
		}},
		{name: "a FIFO without a reader", why: "FIFO", make: func(t *testing.T, dir string) setup {
			path := filepath.Join(dir, "c.webhooks.jsonl")
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
			return setup{path, func(*testing.T) {}}
		}},
		{name: "a FIFO with a reader", why: `is not a regular file \(p`, make: func(t *testing.T, dir string) setup {
			path := filepath.Join(dir, "c.webhooks.jsonl")
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return setup{path, func(t *testing.T) {
				if n, _ := r.Read(make([]byte, 16)); n > 0 {
					t.Errorf("%d bytes written into the FIFO", n)
				}
			}}
		}},
		{name: "a hard link to another file", why: `has 2 names \(hard links\)`, make: func(t *testing.T, dir string) setup {
			other := filepath.Join(dir, "other")
			writeTheirs(t, other)
			path := filepath.Join(dir, "c.webhooks.jsonl")
			if err := os.Link(other, path); err != nil {
				t.Fatal(err)
			}
			return setup{path, unchanged(other)}
		}},
		{name: "another user's file", root: true, why: `belongs to another user \(uid 65534`, make: func(t *testing.T, dir string) setup {
			path := filepath.Join(dir, "c.webhooks.jsonl")
			writeTheirs(t, path)
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return setup{path, unchanged(path)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			s := tc.make(t, t.TempDir())
			f, err := openSandboxLog(s.path)
			if tc.why == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteString("{\"now\":2}\n"); err != nil {
					t.Fatal(err)
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
				s.check(t)
				return
			}
			if err == nil {
				f.Close()
				s.check(t)
				t.Fatalf("opened %s, want it refused (%s)", s.path, tc.why)
			}
			if !errors.Is(err, errForeignLog) {
				t.Errorf("error %v does not wrap errForeignLog", err)
			}
			if !strings.Contains(err.Error(), s.path) || !regexp.MustCompile(tc.why).MatchString(err.Error()) {
				t.Errorf("error %q: want it to name %s and say %q", err, s.path, tc.why)
			}
			if code, hint := exitCode(err); code != ExitFatal || hint == "" {
				t.Errorf("exit %d, hint %q: want %d and a hint", code, hint, ExitFatal)
			}
			s.check(t)
		})
	}
}

// TestSandboxShortLog: run --sandbox reports a webhook log it could not
// write whole, as on a full disk: reconcile would read too little from
// it. The log is a file of a full tmpfs bind-mounted in its place (a
// regular file of this user's, which the sandbox takes): the test needs
// the right to mount, as root in a container has, and is skipped
// elsewhere. (Before logs refused links, a link to /dev/full did this.)
func TestSandboxShortLog(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("mounts a tmpfs")
	}
	dir := t.TempDir()
	fs := filepath.Join(dir, "fs")
	if err := os.Mkdir(fs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", fs, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(fs, syscall.MNT_DETACH) })
	full := filepath.Join(fs, "log")
	if err := os.WriteFile(full, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fill, err := os.Create(filepath.Join(fs, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	for chunk := make([]byte, 4096); ; {
		if _, err := fill.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	fill.Close()

	csv, _ := writeCampaign(t, dir, 20)
	hooks := filepath.Join(dir, "campaign.webhooks.jsonl")
	if err := os.WriteFile(hooks, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(full, hooks, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount a file here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(hooks, syscall.MNT_DETACH) })

	p := startCLI(t, nil, "run", csv, "--sandbox", "--template", "welcome", "--from", "1000001", "--rate", "0")
	if code := p.wait(t); code != ExitFatal {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitFatal, p.stderr)
	}
	stderr := p.stderr.String()
	if !strings.Contains(stderr, "this run: ") {
		t.Errorf("no summary of the run:\n%s", stderr)
	}
	if !regexp.MustCompile(`error: sandbox log .*campaign.webhooks.jsonl: .*no space left on device`).MatchString(stderr) {
		t.Errorf("the short log is not the run's error:\n%s", stderr)
	}
}
