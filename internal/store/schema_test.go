package store

import (
	"context"
	"database/sql"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/reconcile"
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
	if _, err := db.Exec(`SELECT held FROM recipients`); err == nil {
		t.Fatal("migration 3 stayed applied although a later one failed")
	}
}

// TestMigrateSecondSchema opens a checkpoint of schema version 2, with
// rows in each state, and finds the columns of version 3 added, empty (0
// and NULL), every other value as it was, and the new columns written by
// the next results and statuses.
func TestMigrateSecondSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	db := rawDB(t, path)
	for _, m := range migrations[:2] {
		if _, err := db.Exec(m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`PRAGMA user_version = 2`); err != nil {
		t.Fatal(err)
	}
	rows := []string{
		`(1, 2, '+447700900001', 'A', '[]', 'sent', 1, 'w1', NULL, NULL, NULL, NULL, 1000)`,
		`(2, 3, '+447700900002', 'A', '[]', 'delivered', 1, 'w2', NULL, NULL, NULL, NULL, 1000)`,
		`(3, 4, '+447700900003', 'A', '[]', 'failed', 1, NULL, 131049, 'cap', NULL, NULL, 1000)`,
		`(4, 5, '+447700900004', 'A', '[]', 'pending', 0, NULL, NULL, NULL, NULL, NULL, 1000)`,
		`(5, 6, '+447700900005', 'A', '[]', 'skipped', 0, NULL, NULL, NULL, 'excluded', 'excluded', 1000)`,
		`(6, 7, '+447700900006', 'A', '[]', 'in_doubt', 1, NULL, NULL, 'timeout', NULL, NULL, 1000)`,
	}
	if _, err := db.Exec(`INSERT INTO recipients(row, line, phone, sender, params, status, attempts, wamid, error_code, error_title, reason, skip_kind, updated_at)
		VALUES ` + strings.Join(rows, ",")); err != nil {
		t.Fatal(err)
	}
	oldCols := columns(t, db)
	before := dumpRows(t, db, oldCols)
	db.Close()

	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v := version(t, s.db); v != schemaVersion {
		t.Fatalf("user_version %d, want %d", v, schemaVersion)
	}
	if after := dumpRows(t, s.db, oldCols); !slices.Equal(before, after) {
		t.Fatalf("rows changed by the migration:\nbefore %q\nafter  %q", before, after)
	}
	if got, want := columns(t, s.db), append(slices.Clone(oldCols), "held", "fail_reason", "pricing_category", "pricing_type", "billable"); len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("columns %q, want %q first", got, want)
	}
	for row := int64(1); row <= int64(len(rows)); row++ {
		if got := columns3(t, s, row); got != "0 NULL NULL NULL NULL" {
			t.Errorf("row %d: held, fail_reason, pricing: %s, want 0 and NULLs", row, got)
		}
	}
	// What comes next writes the new columns.
	if jobs, err := s.Claim(ctx, "A", time.Now(), 10); err != nil || len(jobs) != 1 || jobs[0].Row != 4 {
		t.Fatalf("claim: %+v, %v", jobs, err)
	}
	if err := s.Record(ctx, []engine.Result{{Row: 4, Outcome: engine.OutcomeSent, MessageID: "w4", Held: true, At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveDeliveries(ctx, nil, []reconcile.Delivery{{Row: 2, Status: campaign.Delivered, Price: marketing}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	for row, want := range map[int64]string{4: "1 NULL NULL NULL NULL", 2: "0 NULL marketing regular 1"} {
		if got := columns3(t, s, row); got != want {
			t.Errorf("row %d: %s, want %s", row, got, want)
		}
	}
	r, err := s.Report(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r.Held != 1 || r.Billable != 1 || len(r.FailedByReason) != 0 || r.ByPricingCategory["marketing"] != 1 {
		t.Errorf("report: held %d, billable %d, failed by reason %v, by pricing category %v", r.Held, r.Billable, r.FailedByReason, r.ByPricingCategory)
	}
}

// TestMigrateFixture migrates a checkpoint written by the first release
// that had no schema version (testdata/checkpoint): every column of every
// row and the settings read back as they were, each skipped row gains its
// kind, and the columns of migration 3 hold nothing (0 and NULL).
func TestMigrateFixture(t *testing.T) {
	path := copyFixture(t)
	old := rawDB(t, path)
	if v := version(t, old); v != 0 {
		t.Fatalf("fixture user_version = %d, want 0", v)
	}
	oldCols := columns(t, old)
	before := dumpRows(t, old, nil)
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
	after := dumpRows(t, s.db, oldCols)
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
	var set int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM recipients WHERE held <> 0 OR fail_reason IS NOT NULL
		OR pricing_category IS NOT NULL OR pricing_type IS NOT NULL OR billable IS NOT NULL`).Scan(&set); err != nil || set != 0 {
		t.Fatalf("%d rows with a value in a column of migration 3 (%v)", set, err)
	}
	r, err := s.Report(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r.Held != 0 || r.Billable != 0 || len(r.FailedByReason) != 0 || len(r.ByPricingCategory) != 0 {
		t.Fatalf("report: held %d, billable %d, failed by reason %v, by pricing category %v: want none",
			r.Held, r.Billable, r.FailedByReason, r.ByPricingCategory)
	}
}

// TestMigrateFixtureExport: the migrated v0 fixture exports what the
// release that wrote it exported (testdata/checkpoint/v0.export.csv), field
// for field, and nothing in the fields added since (held, fail reason,
// pricing), which `export` appends as columns after the old ones.
func TestMigrateFixtureExport(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "testdata", "checkpoint", "v0.export.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	golden, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	header := []string{"row", "phone", "from", "status", "attempts", "wamid", "error_code", "error_title", "updated_at",
		"id", "line", "reason", "sent_at", "delivered_at", "read_at"}
	if !slices.Equal(golden[0], header) {
		t.Fatalf("golden header %q", golden[0])
	}
	s, err := Open(copyFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	n := 0
	err = s.Export(context.Background(), func(r ExportRow) error {
		n++
		code := ""
		if r.ErrorCode != 0 {
			code = strconv.Itoa(r.ErrorCode)
		}
		got := []string{strconv.FormatInt(r.Row, 10), r.Phone, r.Sender, string(r.Status), strconv.Itoa(r.Attempts),
			r.MessageID, code, r.ErrorTitle, ts(r.UpdatedAt), r.ExtID, strconv.FormatInt(r.Line, 10), r.Reason,
			ts(r.SentAt), ts(r.DeliveredAt), ts(r.ReadAt)}
		if n >= len(golden) || !slices.Equal(got, golden[n]) {
			t.Errorf("row %d exports\n%q, the golden file has\n%q", r.Row, got, golden[min(n, len(golden)-1)])
		}
		if r.Held || r.FailReason != "" || r.Price != (campaign.Pricing{}) {
			t.Errorf("row %d: held %v, fail reason %q, pricing %+v: want none", r.Row, r.Held, r.FailReason, r.Price)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(golden)-1 {
		t.Fatalf("%d rows exported, the golden file has %d", n, len(golden)-1)
	}
}

// copyFixture copies the v0 fixture into a temporary directory: it must
// never change (testdata/checkpoint/README.md).
func copyFixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "checkpoint", "v0.checkpoint.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// columns lists the columns of recipients in db, in table order.
func columns(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM pragma_table_info('recipients') ORDER BY cid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// dumpRows is every row of recipients in db, each column named; cols nil
// means all of them.
func dumpRows(t *testing.T, db *sql.DB, cols []string) []string {
	t.Helper()
	q := `SELECT * FROM recipients ORDER BY row`
	if cols != nil {
		q = `SELECT ` + strings.Join(cols, ", ") + ` FROM recipients ORDER BY row`
	}
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ = rows.Columns()
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
			line += fmt.Sprintf("%s=%v ", c, vals[i])
		}
		out = append(out, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
