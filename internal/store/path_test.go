package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// mustLocked fails unless taking the lock at path finds it held.
func mustLocked(t *testing.T, path string) {
	t.Helper()
	l, err := Acquire(path, "second")
	if err == nil {
		l.Release()
		t.Fatalf("a second lock through %q was granted while the first is held", path)
	}
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("second lock through %q: %v, want *LockedError", path, err)
	}
}

// Every name that reaches one checkpoint shares its lock.
func TestLockSharedByEveryName(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "c.bulksend.db")
	s, err := Open(real)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link.bulksend.db")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(dir, "sub", "up")); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, real)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path string }{
		{"symlink", filepath.Join(dir, "link.bulksend.db")},
		{"dot dot path", filepath.Join(dir, "sub", "..", "c.bulksend.db")},
		{"linked folder", filepath.Join(dir, "sub", "up", "c.bulksend.db")},
		{"relative path", rel},
		{"doubled slashes", strings.ReplaceAll(real, "/", "//")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Acquire(real, "first")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			mustLocked(t, tc.path)
			// And the other way round.
			l.Release()
			l2, err := Acquire(tc.path, "first")
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Release()
			mustLocked(t, real)
		})
	}
}

// A checkpoint with a second hard link is refused: its two names would
// take two locks and two WALs.
func TestHardLinkedCheckpointRefused(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "c.bulksend.db")
	s, err := Open(real)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	other := filepath.Join(dir, "other.bulksend.db")
	if err := os.Link(real, other); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{real, other} {
		if _, err := Acquire(p, "run"); !errors.Is(err, ErrHardLinked) {
			t.Errorf("Acquire(%s) = %v, want ErrHardLinked", filepath.Base(p), err)
		}
		if _, err := Open(p); !errors.Is(err, ErrHardLinked) {
			t.Errorf("Open(%s) = %v, want ErrHardLinked", filepath.Base(p), err)
		}
		if _, err := OpenRead(p); !errors.Is(err, ErrHardLinked) {
			t.Errorf("OpenRead(%s) = %v, want ErrHardLinked", filepath.Base(p), err)
		}
	}
}

// A symbolic link planted where the lock file goes is not followed: its
// target is left as it was.
func TestLockFileSymlinkNotFollowed(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.txt")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.bulksend.db")
	if err := os.Symlink(victim, path+".lock"); err != nil {
		t.Fatal(err)
	}
	if l, err := Acquire(path, "run"); err == nil {
		l.Release()
		t.Fatal("Acquire took a lock through a symbolic link")
	} else if !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("error %q does not say the lock file is a symbolic link", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Fatalf("the link's target now holds %q", b)
	}
	// A dangling link in the checkpoint's place is not created through.
	if err := os.Symlink(filepath.Join(dir, "elsewhere.db"), filepath.Join(dir, "d.bulksend.db")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(dir, "d.bulksend.db")); err == nil {
		t.Fatal("Open created a checkpoint through a dangling symbolic link")
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere.db")); err == nil {
		t.Fatal("the dangling link's target was created")
	}
}

// A file in the lock file's place that bulksend did not write is refused
// and left whole.
func TestLockFileNotOursLeftAsItWas(t *testing.T) {
	for _, tc := range []struct{ name, content string }{
		{"other text", "my notes\nline two\n"},
		{"one line of other text", "hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "c.bulksend.db")
			if err := os.WriteFile(path+".lock", []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if l, err := Acquire(path, "run"); err == nil {
				l.Release()
				t.Fatal("Acquire took over a file that is not a lock file")
			}
			if b, _ := os.ReadFile(path + ".lock"); string(b) != tc.content {
				t.Fatalf("the file now holds %q, want %q", b, tc.content)
			}
		})
	}
	// bulksend's own lock line, left by a killed run, is taken.
	dir := t.TempDir()
	path := filepath.Join(dir, "c.bulksend.db")
	if err := os.WriteFile(path+".lock", []byte("pid 1 on host (bulksend run, since 2026-01-01T00:00:00Z)\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(path, "run")
	if err != nil {
		t.Fatalf("a stale lock line of bulksend's: %v", err)
	}
	l.Release()
}

// Every name a file system allows lands in the file it names, mode 0600,
// and two names never share a file.
func TestFileNamesAreData(t *testing.T) {
	names := []string{
		"spring#2.bulksend.db", "spring#3.bulksend.db", "q?x.bulksend.db", "q?y.bulksend.db",
		"50%25.bulksend.db", "50%.bulksend.db", "with space.bulksend.db", "-leading-dash.bulksend.db",
		"ünïcødé ☃.bulksend.db", "semi;colon&amp=1.bulksend.db", "file:x.bulksend.db",
	}
	dir := t.TempDir()
	for i, name := range names {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Import(context.Background(), rowsOf(phones(i+1, "1")...), func() Settings { return Settings{CampaignID: name, Template: "t", MaxAttempts: 1} }); err != nil {
				t.Fatal(err)
			}
			s.Close()
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", fi.Mode().Perm())
			}
		})
	}
	// Each file holds its own campaign, and no other file was made.
	for i, name := range names {
		s, err := OpenRead(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Settings(context.Background())
		c, cerr := s.Counts(context.Background())
		s.Close()
		if err != nil || cerr != nil || st.CampaignID != name || c.Total != int64(i+1) {
			t.Errorf("%s holds campaign %q with %d rows (%v, %v), want %q with %d", name, st.CampaignID, c.Total, err, cerr, name, i+1)
		}
	}
	entries, _ := os.ReadDir(dir)
	var got []string
	for _, e := range entries {
		n := strings.TrimSuffix(strings.TrimSuffix(e.Name(), "-wal"), "-shm")
		if !slices.Contains(got, n) {
			got = append(got, n)
		}
	}
	want := slices.Clone(names)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("files in the folder: %q, want %q", got, want)
	}
}

// A SQLite file of another program is refused by Open and left byte for
// byte as it was (no tables added, not switched to WAL); so is a file
// that is not SQLite.
func TestOpenRefusesForeignSQLite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	db, err := sql.Open("sqlite3", uri(path, ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users(name) VALUES ('ana')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	text := filepath.Join(dir, "notes.db")
	if err := os.WriteFile(text, bytes.Repeat([]byte("not a database\n"), 100), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, text} {
		before, _ := os.ReadFile(p)
		if s, err := Open(p); !errors.Is(err, ErrNotCheckpoint) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open(%s) = %v, want ErrNotCheckpoint", filepath.Base(p), err)
		}
		if after, _ := os.ReadFile(p); !bytes.Equal(before, after) {
			t.Errorf("Open changed %s", filepath.Base(p))
		}
		if _, err := os.Stat(p + "-wal"); err == nil {
			t.Errorf("Open made a WAL beside %s", filepath.Base(p))
		}
	}
}

// A damaged checkpoint is told as ErrCorrupt, so that the operator keeps it.
func TestCorruptCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.bulksend.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(context.Background(), rowsOf(phones(2000, "1")...), func() Settings { return Settings{CampaignID: "c", Template: "t", MaxAttempts: 1} }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Damage every page header but the first page's: the file is still
	// SQLite, its tables are not.
	for i := 4096; i+16 < len(b); i += 4096 {
		copy(b[i:i+16], bytes.Repeat([]byte{0xA5}, 16))
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	err = Check(path)
	if err == nil {
		s, oerr := OpenRead(path)
		if oerr == nil {
			_, err = s.Counts(context.Background())
			s.Close()
		} else {
			err = oerr
		}
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a damaged checkpoint: %v, want ErrCorrupt", err)
	}
}

// On read-only media a checkpoint is read where it is, and nothing is
// made beside it; a run's Open is refused with ErrReadOnly.
func TestCheckpointOnReadOnlyMount(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	ro := filepath.Join(dir, "ro")
	for _, d := range []string{src, ro} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeCheckpoint(t, filepath.Join(src, "c.bulksend.db"), 7)
	if err := syscall.Mount(src, ro, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("a read-only bind mount needs root and mount rights here: %v", err)
	}
	defer syscall.Unmount(ro, syscall.MNT_DETACH)
	if err := syscall.Mount(src, ro, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("remount read-only: %v", err)
	}
	readOnlyChecks(t, filepath.Join(ro, "c.bulksend.db"), 7)
}

// A checkpoint without write permission (an auditor's copy) reads too.
// As root, permissions bind nobody: the check then runs in a child
// process as user nobody.
func TestCheckpointWithReadOnlyPermissions(t *testing.T) {
	if p := os.Getenv("BULKSEND_TEST_READONLY_PATH"); p != "" {
		readOnlyChecks(t, p, 5)
		return
	}
	dir := t.TempDir()
	sub := filepath.Join(dir, "audit")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sub, "c.bulksend.db")
	writeCheckpoint(t, path, 5)
	if os.Getuid() != 0 {
		os.Chmod(path, 0o400)
		os.Chmod(sub, 0o500)
		defer os.Chmod(sub, 0o700)
		readOnlyChecks(t, path, 5)
		return
	}
	const nobody = 65534
	for d := sub; ; d = filepath.Dir(d) {
		if d == "/" || d == "." {
			break
		}
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o005 != 0o005 {
			os.Chmod(d, fi.Mode().Perm()|0o005)
		}
	}
	os.Chown(path, nobody, nobody)
	os.Chown(sub, nobody, nobody)
	os.Chmod(path, 0o400)
	os.Chmod(sub, 0o500)
	// The test binary, where user nobody can run it.
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "store.test")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestCheckpointWithReadOnlyPermissions$", "-test.v")
	cmd.Env = append(os.Environ(), "BULKSEND_TEST_READONLY_PATH="+path, "HOME=/")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("permission denied")) && !bytes.Contains(out, []byte("--- FAIL")) {
			t.Skipf("user nobody cannot run the test binary here: %s", out)
		}
		t.Fatalf("as user nobody: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS")) {
		t.Fatalf("the child did not pass:\n%s", out)
	}
}

func writeCheckpoint(t *testing.T, path string, rows int) {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(context.Background(), rowsOf(phones(rows, "1")...), func() Settings { return Settings{CampaignID: "c", Template: "t", MaxAttempts: 1} }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// readOnlyChecks reads the checkpoint at path, which this process cannot
// write, as status, export and report do.
func readOnlyChecks(t *testing.T, path string, rows int64) {
	t.Helper()
	before, _ := os.ReadDir(filepath.Dir(path))
	if err := Check(path); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if _, err := ReadSettings(path); err != nil {
		t.Fatalf("ReadSettings: %v", err)
	}
	s, err := OpenRead(path)
	if err != nil {
		t.Fatalf("OpenRead: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	c, err := s.Counts(ctx)
	if err != nil || c.Total != rows {
		t.Fatalf("counts %+v, %v; want %d rows", c, err, rows)
	}
	err = s.View(ctx, func(v *Store) error {
		c, err := v.Counts(ctx)
		if err == nil && c.Total != rows {
			t.Errorf("view counts %d rows, want %d", c.Total, rows)
		}
		return err
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	if _, err := Open(path); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Open for a run: %v, want ErrReadOnly", err)
	}
	after, _ := os.ReadDir(filepath.Dir(path))
	if len(after) != len(before) {
		t.Fatalf("files beside the checkpoint: %d, then %d", len(before), len(after))
	}
}
