package logfile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestAppend: the sandbox's logs are made 0600 and appended to,
// never truncated; whatever else is in their place (a symbolic link, to a
// file or to nothing, a FIFO, a hard link, another user's file) is
// refused with an error naming the file and left as it was.
func TestAppend(t *testing.T) {
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
			f, err := Append(s.path)
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
			var fe *ForeignError
			if !errors.Is(err, ErrForeign) || !errors.As(err, &fe) || fe.Hint() == "" {
				t.Errorf("error %v is not a *ForeignError with a hint", err)
			}
			if !strings.Contains(err.Error(), s.path) || !regexp.MustCompile(tc.why).MatchString(err.Error()) {
				t.Errorf("error %q: want it to name %s and say %q", err, s.path, tc.why)
			}
			s.check(t)
		})
	}
}

// Open reads a file as it is, a gzip file decompressed, and "-" from
// stdin, which Close leaves open.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "log.jsonl")
	if err := os.WriteFile(plain, []byte("{\"a\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte("{\"b\":2}\n"))
	zw.Close()
	zipped := filepath.Join(dir, "log.jsonl.gz")
	if err := os.WriteFile(zipped, zb.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path  string
		stdin io.Reader
		want  string
	}{
		{plain, nil, "{\"a\":1}\n"},
		{zipped, nil, "{\"b\":2}\n"},
		{"-", bytes.NewReader(zb.Bytes()), "{\"b\":2}\n"},
		{"-", strings.NewReader("x\n"), "x\n"},
	} {
		rc, err := Open(tc.path, tc.stdin)
		if err != nil {
			t.Fatalf("Open(%s): %v", tc.path, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(b) != tc.want {
			t.Errorf("Open(%s) read %q, %v; want %q", tc.path, b, err, tc.want)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing"), nil); err == nil || !strings.Contains(err.Error(), "open log") {
		t.Errorf("Open(missing) = %v, want an error that says it opens a log", err)
	}
}
