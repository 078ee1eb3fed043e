package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// migrations[i] brings a checkpoint from schema version i to i+1; the
// version is SQLite's PRAGMA user_version. A checkpoint on a user's disk
// outlives the code that wrote it, so a migration that has shipped is
// never edited: a change to the schema is a new migration at the end.
var migrations = []string{
	// 1: the first schema. Checkpoints of the first releases hold it with
	// user_version 0, hence IF NOT EXISTS.
	`CREATE TABLE IF NOT EXISTS meta (
		key   TEXT PRIMARY KEY,
		value TEXT NOT NULL
	);
	CREATE TABLE IF NOT EXISTS recipients (
		row          INTEGER PRIMARY KEY, -- data row number, 1 for the first row after the header
		line         INTEGER NOT NULL,    -- CSV line the row starts on
		ext_id       TEXT,                -- the CSV's id column
		phone        TEXT NOT NULL,       -- E.164, or as written when invalid
		sender       TEXT NOT NULL,       -- sender phone-number ID
		params       TEXT NOT NULL,       -- JSON array of body parameters
		status       TEXT NOT NULL,
		attempts     INTEGER NOT NULL DEFAULT 0,
		next_at      INTEGER NOT NULL DEFAULT 0, -- pending rows are due from this instant
		attempted_at INTEGER,
		wamid        TEXT,
		error_code   INTEGER,
		error_title  TEXT,
		reason       TEXT,                -- why a row was skipped
		sent_at      INTEGER,
		delivered_at INTEGER,
		read_at      INTEGER,
		updated_at   INTEGER NOT NULL
	);
	-- Partial indexes that no imported row enters: made with the table,
	-- they cost the import nothing.
	CREATE INDEX IF NOT EXISTS recipients_wamid ON recipients(wamid) WHERE wamid IS NOT NULL;
	CREATE INDEX IF NOT EXISTS recipients_sending ON recipients(row) WHERE status = 'sending';
	CREATE INDEX IF NOT EXISTS recipients_in_doubt ON recipients(row) WHERE status = 'in_doubt';`,

	// 2: the kind of a skip reason, written with it (campaign.SkipKind),
	// so that reports group by it rather than by the wording of reasons.
	// Rows skipped before this had only the reason: their kind is read
	// off its wording, once, here.
	`ALTER TABLE recipients ADD COLUMN skip_kind TEXT;
	UPDATE recipients SET skip_kind = ` + legacySkipKind + ` WHERE status = 'skipped';`,

	// 3: what Meta's account rules add to a row (issue 11). held: the
	// send was accepted but held back (WhatsApp's template pacing,
	// campaign.Receipt.Held); it stays set when a webhook later settles
	// the row, and reports count it only while the row is still sent.
	// fail_reason: the stable name of a failure that reports group apart
	// (campaign.FailMarketingCap), NULL for none. pricing_*: the first
	// pricing a status webhook gave the message, never replaced; billable
	// NULL when no status said. Rows of older checkpoints keep 0 and NULL:
	// nothing was recorded of them.
	`ALTER TABLE recipients ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE recipients ADD COLUMN fail_reason TEXT;
	ALTER TABLE recipients ADD COLUMN pricing_category TEXT;
	ALTER TABLE recipients ADD COLUMN pricing_type TEXT;
	ALTER TABLE recipients ADD COLUMN billable INTEGER;`,

	// 4: the SMS channel (issue 12). parts and encoding: the rendered
	// body's message parts and its encoding (GSM-7 or UCS-2), measured at
	// import; NULL for a WhatsApp row, whose send costs the pacer one.
	// throttles: tries of the row the provider throttled (an SMS row fails
	// after a limit of them; a WhatsApp row only counts them). billed_parts
	// and charged: what an SMS event said was billed (parts, and the price
	// with carrier fees in US dollars), the first one kept like pricing_*.
	`ALTER TABLE recipients ADD COLUMN parts INTEGER;
	ALTER TABLE recipients ADD COLUMN encoding TEXT;
	ALTER TABLE recipients ADD COLUMN throttles INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE recipients ADD COLUMN billed_parts INTEGER;
	ALTER TABLE recipients ADD COLUMN charged REAL;`,

	// 5: the campaign's history (issue 13). runs: one row per run that
	// sent, with when it began and ended (NULL: it is running, or it was
	// killed) and what it was given. attempts: every request to the
	// provider, written with the results it led to (same transaction):
	// when it left, how long its answer took, and how it was classed.
	`CREATE TABLE runs (
		id         INTEGER PRIMARY KEY,
		started_at INTEGER NOT NULL,
		ended_at   INTEGER,
		pid        INTEGER NOT NULL,
		version    TEXT NOT NULL,
		rate       REAL NOT NULL,
		senders    TEXT NOT NULL -- JSON array
	);
	CREATE TABLE attempts (
		run        INTEGER NOT NULL,
		row        INTEGER NOT NULL,
		sender     TEXT NOT NULL,
		at         INTEGER NOT NULL, -- Unix ms, when the request left
		latency_us INTEGER NOT NULL,
		class      TEXT NOT NULL,    -- engine.Accepted or a campaign.Class
		code       INTEGER           -- the provider's error code, NULL for none
	);`,

	// 6: what a run learned (issue 14): the sender numbers whose answers
	// showed they accept less than the run's rate, with what they accept
	// per second (JSON object); NULL: none, or the run was killed.
	`ALTER TABLE runs ADD COLUMN learned TEXT;`,

	// 7: the name of an error without a numeric code (issue 13): AWS names
	// its errors ("ThrottlingException", "ConflictException:
	// DESTINATION_PHONE_NUMBER_OPTED_OUT") where Meta gives a code, and a
	// proxy's 502 has neither. NULL for an accepted attempt, an answer with
	// a code, a request without an answer, and the attempts of older
	// checkpoints.
	`ALTER TABLE attempts ADD COLUMN error TEXT;`,

	// 8: when a row may be sent (issue 25). send_at: the row's own
	// earliest send (Unix ms), from the CSV's send_at column, NULL for
	// none; the import makes it the row's first next_at. zones: the time
	// zones its phone may be in (schedule.Zones.Key), for windows in the
	// recipient's local time; NULL when no window needed them. wait: why a
	// pending row's next_at is in the future when a run's schedule put it
	// there ('window', 'send_at', 'budget', 'start'), so that status can
	// say it without the operator ledger; NULL for a retry or none. Rows
	// of older checkpoints have none of them.
	`ALTER TABLE recipients ADD COLUMN send_at INTEGER;
	ALTER TABLE recipients ADD COLUMN zones TEXT;
	ALTER TABLE recipients ADD COLUMN wait TEXT;`,

	// 9: the recipient's first reply after the campaign's message (issue
	// 26): when (Unix ms), and what (a tapped button's label or the first
	// characters of the text). NULL for none.
	`ALTER TABLE recipients ADD COLUMN replied_at INTEGER;
	ALTER TABLE recipients ADD COLUMN reply TEXT;`,
}

// legacySkipKind reads a skip reason's kind off its wording, as releases
// before skip_kind grouped them; migration 2 runs it, so it never changes. It is for rows skipped without a kind:
// those of a checkpoint that migration 2 finds, and those an older
// bulksend writes into a migrated checkpoint (it knows no skip_kind).
const legacySkipKind = `CASE
		WHEN reason LIKE 'duplicate%' THEN 'duplicate'
		WHEN reason LIKE 'invalid%' THEN 'invalid'
		WHEN reason LIKE 'excluded%' THEN 'excluded'
		WHEN reason LIKE 'no sender%' THEN 'no sender'
		ELSE COALESCE(reason, 'unknown') END`

// dueIndex orders each sender's pending rows for claims (an index ends with
// the rowid, row, so ORDER BY next_at, row needs no sort). The first import
// makes it, before its rows go in (see Import for why). Phones have no
// index: duplicates are found at import without one (see Import) and
// --exclude scans once per run.
const dueIndex = `CREATE INDEX IF NOT EXISTS recipients_due ON recipients(sender, next_at) WHERE status = 'pending'`

// wamidIndex is the index reconcile finds rows by their message id with,
// as migration 1 makes it. A run drops it while it sends and builds it
// again when it stops (see DropMessageIDIndex).
const wamidIndex = `CREATE INDEX IF NOT EXISTS recipients_wamid ON recipients(wamid) WHERE wamid IS NOT NULL`

// schemaVersion is the schema this code writes and reads.
var schemaVersion = len(migrations)

// ErrNewerSchema refuses a checkpoint written by a newer bulksend: this
// one cannot know what its columns mean.
var ErrNewerSchema = errors.New("checkpoint written by a newer bulksend")

// migrate brings db's schema to schemaVersion in one transaction: a
// checkpoint is either migrated whole or left as it was.
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
		return nil // another process migrated it meanwhile
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
