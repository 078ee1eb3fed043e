package ledger

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations[i] brings a ledger from schema version i to i+1; the version
// is SQLite's PRAGMA user_version. The ledger outlives the code that wrote
// it, so a migration that has shipped is never edited: a change to the
// schema is a new migration at the end.
var migrations = []string{
	// 1: the first schema. application_id marks the file as a ledger.
	//
	// sends: the last instant each key sent to each phone (Unix ms), and
	// the one before it (prev), which Forget puts back. sends_at is what
	// every window query walks.
	//
	// budgets: per key, the count of its sends later than as_of - 24 h,
	// as_of being the latest instant an Admit of the key was given. Every
	// change to sends keeps it so (same transaction), so that an Admit
	// counts only the sends that left the window since the last one
	// instead of all that are in it.
	`PRAGMA application_id = ` + fmt.Sprint(applicationID) + `;
	CREATE TABLE sends (
		key   TEXT NOT NULL,
		phone TEXT NOT NULL,
		at    INTEGER NOT NULL,
		prev  INTEGER,
		PRIMARY KEY (key, phone)
	) WITHOUT ROWID;
	CREATE INDEX sends_at ON sends(key, at);
	CREATE TABLE budgets (
		key   TEXT PRIMARY KEY,
		as_of INTEGER NOT NULL,
		used  INTEGER NOT NULL
	) WITHOUT ROWID;
	CREATE TABLE learned (
		sender     TEXT PRIMARY KEY,
		per_second REAL NOT NULL,
		at         INTEGER NOT NULL
	);
	CREATE TABLE campaigns (
		checkpoint TEXT PRIMARY KEY, -- absolute path
		csv        TEXT NOT NULL,
		channel    TEXT NOT NULL,
		id         TEXT NOT NULL,
		last_run   INTEGER NOT NULL
	);
	CREATE INDEX campaigns_last_run ON campaigns(last_run);
	CREATE TABLE optouts (
		phone   TEXT PRIMARY KEY,
		channel TEXT NOT NULL,
		source  TEXT NOT NULL,
		at      INTEGER NOT NULL
	);`,

	// 2: what an opt-out covers: 1 for marketing only (WhatsApp's "stop
	// promotions", a user_preferences stop, 131050), 0 for everything.
	`ALTER TABLE optouts ADD COLUMN marketing_only INTEGER NOT NULL DEFAULT 0;`,

	// 3: an opt-out's audit trail (issue 26): the business number it
	// reached (sender, '' when not known), and when and how a resume or a
	// START lifted it (lifted_at, lifted_by; NULL while it holds). A
	// lifted opt-out is kept, so that the record says what happened, and
	// so that replaying an old log's STOP does not put back what a later
	// START lifted.
	`ALTER TABLE optouts ADD COLUMN sender TEXT NOT NULL DEFAULT '';
	ALTER TABLE optouts ADD COLUMN lifted_at INTEGER;
	ALTER TABLE optouts ADD COLUMN lifted_by TEXT;`,

	// 4: leases: the runs sending from a number now, one row a run and a
	// number, renewed while the run sends (expires), removed when it ends.
	// key is the number as the run's ledger scope keeps it (what runs
	// split by); sender the number itself, for status.
	`CREATE TABLE leases (
		key        TEXT NOT NULL,
		holder     TEXT NOT NULL,
		sender     TEXT NOT NULL,
		host       TEXT NOT NULL,
		pid        INTEGER NOT NULL,
		checkpoint TEXT NOT NULL,
		rate       REAL NOT NULL,
		since      INTEGER NOT NULL,
		expires    INTEGER NOT NULL,
		PRIMARY KEY (key, holder)
	) WITHOUT ROWID;
	CREATE INDEX leases_sender ON leases(sender);`,
}

// schemaVersion is the schema this code writes and reads.
var schemaVersion = len(migrations)

// migrate brings db's schema to schemaVersion in one transaction: a
// ledger is either migrated whole or left as it was.
func migrate(ctx context.Context, db *sql.DB) error {
	if v, err := userVersion(ctx, db); err != nil {
		return err
	} else if v == schemaVersion {
		return nil // the common case takes no write lock
	} else if v > schemaVersion {
		return newerSchema(v)
	}
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one migrator at a time
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	v, err := userVersion(ctx, tx) // again, under the lock: another process may have migrated
	if err != nil {
		return err
	}
	switch {
	case v > schemaVersion:
		return newerSchema(v)
	case v == schemaVersion:
		return nil
	}
	for i := v; i < schemaVersion; i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migrate schema to version %d: %w", i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

func newerSchema(v int) error {
	return fmt.Errorf("%w: its schema is version %d, this bulksend knows up to %d", ErrNewerSchema, v, schemaVersion)
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func userVersion(ctx context.Context, q queryer) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}
