package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// t0 is the tests' clock: every instant is explicit, and ledgers are
// opened pruning at t0, not at the wall clock.
var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func openTest(t testing.TB, path string) *Ledger {
	t.Helper()
	l, err := openAt(context.Background(), path, t0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// create makes a ledger at path and closes it.
func create(t *testing.T, path string) {
	t.Helper()
	l, err := openAt(context.Background(), path, t0)
	if err != nil {
		t.Fatal(err)
	}
	must(t, l.Close())
}

func newLedger(t testing.TB) *Ledger {
	t.Helper()
	return openTest(t, filepath.Join(t.TempDir(), "ledger.db"))
}

// rawDB opens path with no ledger code, as another program would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestOpenCreatesPrivateFiles(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(state, "bulksend", "ledger.db")
	l, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Admit(context.Background(), "whatsapp:1", []string{"+15550001"}, time.Now(), 10); err != nil {
		t.Fatal(err) // writes, so that the WAL and its index exist
	}
	for _, tc := range []struct {
		path string
		want os.FileMode
	}{
		{state, 0o700},
		{filepath.Dir(path), 0o700},
		{path, 0o600},
		{path + "-wal", 0o600},
		{path + "-shm", 0o600},
	} {
		if got := mode(t, tc.path); got != tc.want {
			t.Errorf("%s: mode %v, want %v", tc.path, got, tc.want)
		}
	}
	if l.Path() != path {
		t.Errorf("Path() = %q, want %q", l.Path(), path)
	}
	var journal string
	if err := l.db.QueryRow(`PRAGMA journal_mode`).Scan(&journal); err != nil || journal != "wal" {
		t.Errorf("journal_mode = %q (%v), want wal", journal, err)
	}
}

func TestOpenKeepsWhatWasWritten(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := openAt(ctx, path, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Admit(ctx, "sms:+12065550100", []string{"+15550001", "+15550002"}, t0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddOptOuts(ctx, []OptOut{{Phone: "+15550003", Channel: "sms", Source: "reply STOP", At: t0}}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = openTest(t, path)
	if used, _, err := l.Used(ctx, "sms:+12065550100", t0); err != nil || used != 2 {
		t.Errorf("reopened: used %d (%v), want 2", used, err)
	}
	if _, ok, err := l.OptedOut(ctx, "+15550003"); err != nil || !ok {
		t.Errorf("reopened: opt-out lost (%v)", err)
	}
	var v int
	if err := l.db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != schemaVersion {
		t.Errorf("user_version %d (%v), want %d", v, err, schemaVersion)
	}
}

// TestOpenRefuses: every file Open must not use is refused with its own
// error, and left as it was.
func TestOpenRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, dir string) string // makes the file, returns the path to open
		want error                                 // nil: any error
	}{
		{"symbolic link to a ledger", func(t *testing.T, dir string) string {
			real := filepath.Join(dir, "real.db")
			create(t, real)
			link := filepath.Join(dir, "ledger.db")
			must(t, os.Symlink(real, link))
			return link
		}, ErrSymlink},
		{"symbolic link to nothing", func(t *testing.T, dir string) string {
			link := filepath.Join(dir, "ledger.db")
			must(t, os.Symlink(filepath.Join(dir, "elsewhere.db"), link))
			return link
		}, ErrSymlink},
		{"second hard link", func(t *testing.T, dir string) string {
			real := filepath.Join(dir, "real.db")
			create(t, real)
			must(t, os.Link(real, filepath.Join(dir, "ledger.db")))
			return real
		}, ErrHardLinked},
		{"SQLite database of another program", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "ledger.db")
			db := rawDB(t, path)
			_, err := db.Exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES ('a', 'b')`)
			must(t, err)
			db.Close()
			return path
		}, ErrNotLedger},
		{"SQLite database marked by another application", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "ledger.db")
			db := rawDB(t, path)
			_, err := db.Exec(`PRAGMA application_id = 1234`)
			must(t, err)
			db.Close()
			return path
		}, ErrNotLedger},
		{"text file", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "ledger.db")
			must(t, os.WriteFile(path, []byte("phone,name\n+15550001,Ann\n"), 0o600))
			return path
		}, ErrNotSQLite},
		{"ledger of a newer bulksend", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "ledger.db")
			create(t, path)
			db := rawDB(t, path)
			_, err := db.Exec(`PRAGMA user_version = 99`)
			must(t, err)
			db.Close()
			return path
		}, ErrNewerSchema},
		{"folder", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "ledger.db")
			must(t, os.Mkdir(path, 0o700))
			return path
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tc.make(t, dir)
			before := snapshot(t, dir)
			l, err := openAt(context.Background(), path, t0)
			if err == nil {
				l.Close()
				t.Fatalf("Open(%s) succeeded", tc.name)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
			for _, other := range []error{ErrSymlink, ErrHardLinked, ErrNotLedger, ErrNotSQLite, ErrNewerSchema} {
				if other != tc.want && errors.Is(err, other) {
					t.Errorf("Open: %v is also %v", err, other)
				}
			}
			if after := snapshot(t, dir); !slices.Equal(before, after) {
				t.Errorf("Open changed the folder:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// An empty file, as a first Open killed before its schema leaves, is made
// a ledger.
func TestOpenEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	must(t, os.WriteFile(path, nil, 0o600))
	l := openTest(t, path)
	if _, err := l.Admit(context.Background(), "k", []string{"+15550001"}, t0, 1); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists dir's files with their contents and modes.
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s := e.Name() + " " + fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			s += " " + string(bytes.ToValidUTF8(b, []byte("?")))
		}
		out = append(out, s)
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// File names are data: each one names its file and no other, whatever
// bytes SQLite's URIs give a meaning to.
func TestFileNamesAreData(t *testing.T) {
	for _, name := range []string{
		"ledger?mode=ro.db",
		"led#ger.db",
		"100%.db",
		"%3F.db",
		"with space.db",
		"a&_journal_mode=DELETE.db",
		"ünïcode.db",
		"-dash.db",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			l := openTest(t, path)
			if _, err := l.Admit(context.Background(), "k", []string{"+15550001"}, t0, 1); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() != name && e.Name() != name+"-wal" && e.Name() != name+"-shm" {
					t.Errorf("file %q made beside %q", e.Name(), name)
				}
			}
			if _, err := os.Stat(path + "-wal"); err != nil {
				t.Errorf("no WAL beside %q: %v", name, err)
			}
		})
	}
}

// TestQueryPlans: the statements of a claim, of Used and FreeAt and of
// Prune walk indexes, never the whole sends table.
func TestQueryPlans(t *testing.T) {
	if dayMS != 86400000 {
		t.Fatalf("dayMS is %d, the SQL's window is 86400000", dayMS)
	}
	l := newLedger(t)
	for _, tc := range []struct {
		name string
		sql  string
		args []any
	}{
		{"budget", budgetSelect, []any{"k", 0}},
		{"existing", existingSelect, []any{"k", "[]"}},
		{"upsert sends", sendsUpsert, []any{"k", 0, "[]"}},
		{"used", usedSelect, []any{"k", 0}},
		{"free at", freeAtSelect, []any{"k", 0, 1}},
		{"forget count", forgetCount, []any{"k", 0, "[]", 0}},
		{"forget delete", forgetDelete, []any{"k", 0, "[]"}},
		{"forget undo", forgetUndo, []any{"k", 0, "[]"}},
		{"prune budgets", pruneStatements[0], []any{0}},
		{"prune sends", pruneStatements[1], []any{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := l.db.Query(`EXPLAIN QUERY PLAN `+tc.sql, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				must(t, rows.Scan(&id, &parent, &unused, &detail))
				plan = append(plan, detail)
			}
			must(t, rows.Err())
			for _, step := range plan {
				if strings.HasPrefix(step, "SCAN sends") || strings.HasPrefix(step, "SCAN s ") || step == "SCAN s" {
					t.Errorf("full scan of sends: %s\nplan:\n\t%s", step, strings.Join(plan, "\n\t"))
				}
			}
		})
	}
}
