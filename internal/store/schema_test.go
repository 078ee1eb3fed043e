package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
)

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func version(t *testing.T, db *sql.DB) int {
	t.Helper()
	v, err := userVersion(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNewCheckpointHasTheLatestSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if v := version(t, rawDB(t, path)); v != schemaVersion || v < 2 {
		t.Fatalf("user_version = %d, want %d", v, schemaVersion)
	}
	// Opening a checkpoint at the latest version takes no write lock: it
	// succeeds while another process holds one (status during a run).
	db := rawDB(t, path)
	db.SetMaxOpenConns(1)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`UPDATE meta SET value = value`); err != nil { // now a writer
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatalf("open beside a writer: %v", err)
	}
	s.Close()
}

// TestMigrateFirstSchema opens a checkpoint as the first releases wrote
// it (user_version 0, no skip_kind) and finds each skipped row's kind read
// off its reason.
func TestMigrateFirstSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	db := rawDB(t, path)
	if _, err := db.Exec(migrations[0]); err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		reason string
		kind   campaign.SkipKind
	}{
		{"duplicate of row 1", campaign.SkipDuplicate},
		{"invalid phone number: too short", campaign.SkipInvalid},
		{"excluded", campaign.SkipExcluded},
		{"excluded after an attempt with no answer", campaign.SkipExcluded},
		{"no sender: the from column is empty and no --from was given", campaign.SkipNoSender},
	}
	for i, r := range rows {
		if _, err := db.Exec(`INSERT INTO recipients(row, line, phone, sender, params, status, reason, updated_at) VALUES(?, ?, '+447700900001', 'A', '[]', 'skipped', ?, 0)`, i+1, i+2, r.reason); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO recipients(row, line, phone, sender, params, status, updated_at) VALUES(99, 100, '+447700900002', 'A', '[]', 'pending', 0)`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, r := range rows {
		var kind string
		if err := s.db.QueryRow(`SELECT skip_kind FROM recipients WHERE row = ?`, i+1).Scan(&kind); err != nil || campaign.SkipKind(kind) != r.kind {
			t.Errorf("row %d (%q): kind %q (%v), want %q", i+1, r.reason, kind, err, r.kind)
		}
	}
	var kind sql.NullString
	if err := s.db.QueryRow(`SELECT skip_kind FROM recipients WHERE row = 99`).Scan(&kind); err != nil || kind.Valid {
		t.Errorf("pending row got a skip kind %v (%v)", kind, err)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	if _, err := rawDB(t, path).Exec(`PRAGMA user_version = 999`); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path)
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("Open: %v, want ErrNewerSchema", err)
	}
	if v := version(t, rawDB(t, path)); v != 999 {
		t.Fatalf("user_version changed to %d", v)
	}
}

// TestFailedMigrationChangesNothing: migrations run in one transaction, so
// a checkpoint is never left half migrated.
func TestFailedMigrationChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	if _, err := rawDB(t, path).Exec(migrations[0]); err != nil {
		t.Fatal(err)
	}
	saved := migrations
	defer func() { migrations, schemaVersion = saved, len(saved) }()
	migrations = append(append([]string{}, saved...), `SELECT no_such_function()`)
	schemaVersion = len(migrations)
	if _, err := Open(path); err == nil {
		t.Fatal("Open succeeded with a broken migration")
	}
	db := rawDB(t, path)
	if v := version(t, db); v != 0 {
		t.Fatalf("user_version = %d after a failed migration, want 0", v)
	}
	if _, err := db.Exec(`SELECT skip_kind FROM recipients`); err == nil {
		t.Fatal("migration 2 stayed applied although a later one failed")
	}
}

// TestMigrateFixture migrates a checkpoint written by the first release
// that had no schema version (testdata/checkpoint): every column of every
// row and the settings read back as they were, and each skipped row gains
// its kind.
func TestMigrateFixture(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "checkpoint", "v0.checkpoint.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	dump := func(db *sql.DB) []string {
		rows, err := db.Query(`SELECT * FROM recipients ORDER BY row`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out []string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			line := ""
			for i, c := range cols {
				if c != "skip_kind" {
					line += fmt.Sprintf("%s=%v ", c, vals[i])
				}
			}
			out = append(out, line)
		}
		return out
	}
	old := rawDB(t, path)
	if v := version(t, old); v != 0 {
		t.Fatalf("fixture user_version = %d, want 0", v)
	}
	before := dump(old)
	var settings string
	if err := old.QueryRow(`SELECT value FROM meta WHERE key = 'settings'`).Scan(&settings); err != nil {
		t.Fatal(err)
	}
	old.Close()

	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v := version(t, s.db); v != schemaVersion {
		t.Fatalf("user_version = %d after migration, want %d", v, schemaVersion)
	}
	after := dump(s.db)
	if !slices.Equal(before, after) || len(before) != 41 {
		t.Fatalf("rows changed by the migration:\nbefore %q\nafter  %q", before, after)
	}
	var now string
	if err := s.db.QueryRow(`SELECT value FROM meta WHERE key = 'settings'`).Scan(&now); err != nil || now != settings {
		t.Fatalf("settings %q (%v), want %q", now, err, settings)
	}
	var missing int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM recipients WHERE (status = 'skipped') <> (skip_kind IS NOT NULL)`).Scan(&missing); err != nil || missing != 0 {
		t.Fatalf("%d rows with a skip kind that does not match their status (%v)", missing, err)
	}
}
