package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// SandboxScope is Settings.Scope of a campaign whose first run went to
// the in-process sandbox (run --sandbox).
const SandboxScope = "sandbox"

// Settings are what the first run was given; later runs reuse them.
type Settings struct {
	CampaignID string `json:"campaign_id"`
	// Scope is where the first run sent when not to the provider: a
	// rehearsal ("sandbox", or the URL a flag pointed it at; see
	// run.Options.LedgerScope). "" for the provider, and in checkpoints
	// written before it was kept.
	Scope         string   `json:"scope,omitempty"`
	Template      string   `json:"template"`
	Lang          string   `json:"lang"`
	Senders       []string `json:"senders,omitempty"` // --from; empty when the CSV has a from column
	Rate          float64  `json:"rate"`
	Concurrency   int      `json:"concurrency"` // 0: derived from rate and latency
	MaxAttempts   int      `json:"max_attempts"`
	DefaultRegion string   `json:"default_region,omitempty"`
	Params        []string `json:"params"`                 // parameter column names
	PhoneColumn   string   `json:"phone_column,omitempty"` // "": "phone"
	// How the CSV was read: its delimiter ("," ";" "tab" "|"; "": ","), its
	// encoding, and the phones whose leading apostrophe was removed.
	Delimiter          string `json:"delimiter,omitempty"`
	Encoding           string `json:"encoding,omitempty"`
	ApostrophesRemoved int64  `json:"apostrophes_removed,omitempty"`
	// The template: how the CSV's columns fill it (a template.Mapping as
	// JSON, kept as it is: the store does not read it; absent in checkpoints
	// made before, where every column is a body parameter), the flags that
	// made the mapping, and what its approved definition said.
	Mapping         json.RawMessage `json:"mapping,omitempty"`
	ParamFlags      []string        `json:"param_flags,omitempty"`
	IgnoreColumns   []string        `json:"ignore_columns,omitempty"`
	ParamFormat     string          `json:"param_format,omitempty"`
	WABA            string          `json:"waba,omitempty"`
	Category        string          `json:"category,omitempty"`         // marketing, utility, authentication; "" unknown
	TemplateChecked string          `json:"template_checked,omitempty"` // where the definition came from; "" not checked
	// How it is sent: "" or "messages" (Cloud API), "marketing" (the
	// Marketing Messages API, with MMPolicy "fallback" or "strict").
	API      string `json:"api,omitempty"`
	MMPolicy string `json:"mm_policy,omitempty"`
	// The channel ("" or "whatsapp", "sms") and, for SMS, the body's text
	// with its {{column}} placeholders and what every SendTextMessage
	// carries: MessageType (TRANSACTIONAL, PROMOTIONAL or ""),
	// ConfigurationSet, MaxPrice (US dollars per message, all its parts, as AWS takes it) and
	// TTL (seconds, 0 for AWS's default). ThrottleTries: a row throttled
	// this many times fails (0: no limit, WhatsApp).
	Channel          string `json:"channel,omitempty"`
	Text             string `json:"text,omitempty"`
	MessageType      string `json:"message_type,omitempty"`
	ConfigurationSet string `json:"configuration_set,omitempty"`
	MaxPrice         string `json:"max_price,omitempty"`
	TTL              int    `json:"ttl_seconds,omitempty"`
	ThrottleTries    int    `json:"throttle_tries,omitempty"`
	// When to send (issue 25): fixed by the first run, changed by a later
	// one that gives them. Window is schedule.Window's specs, in each
	// recipient's local time (WindowTZ: one zone for everyone); StartAt and
	// EndAt bound the campaign (EndAt with Expire: rows left then are
	// skipped); DailyLimit is the moving 24-hour limit of unique
	// recipients, a number or "auto" (the preflight's), "" for none.
	Window     []string  `json:"window,omitempty"`
	WindowTZ   string    `json:"window_tz,omitempty"`
	StartAt    time.Time `json:"start_at,omitzero"`
	EndAt      time.Time `json:"end_at,omitzero"`
	Expire     bool      `json:"expire,omitempty"`
	DailyLimit string    `json:"daily_limit,omitempty"`
	// SendAtColumn: the CSV has a send_at column.
	SendAtColumn bool `json:"send_at_column,omitempty"`
	// Preflight is what the last preflight read of the sender numbers (the
	// CLI's record, as JSON), absent when none ran.
	Preflight json.RawMessage `json:"preflight,omitempty"`
	CSVHash   string          `json:"csv_sha256"`
	CSVSize   int64           `json:"csv_size"`
	CreatedAt time.Time       `json:"created_at"`
}

// ErrNoSettings means the checkpoint has not been set up by a first run.
var ErrNoSettings = errors.New("checkpoint has no campaign yet")

// Settings returns the stored settings, or ErrNoSettings.
func (s *Store) Settings(ctx context.Context) (Settings, error) {
	var st Settings
	var v string
	err := s.q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'settings'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return st, ErrNoSettings
	}
	if err != nil {
		return st, fmt.Errorf("read settings: %w", err)
	}
	if err := json.Unmarshal([]byte(v), &st); err != nil {
		return st, fmt.Errorf("read settings: %w", err)
	}
	return st, nil
}

// SaveSettings stores st. Rows waiting for a retry that have already used
// st.MaxAttempts (it was lowered) are failed in the same transaction, so a
// lower limit never allows one more send. It returns how many it failed.
func (s *Store) SaveSettings(ctx context.Context, st Settings) (_ int64, err error) {
	defer mark(&err)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("save settings: %w", err)
	}
	defer tx.Rollback()
	if err := writeSettings(ctx, tx, st); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `UPDATE recipients SET status = 'failed', updated_at = ?2,
		error_title = COALESCE(error_title, 'not sent') || ' (after ' || attempts || ' attempts; the limit is now ' || ?1 || ')'
		WHERE status = 'pending' AND attempts >= ?1`, st.MaxAttempts, ms(time.Now()))
	if err != nil {
		return 0, fmt.Errorf("save settings: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, tx.Commit()
}

func writeSettings(ctx context.Context, e execer, st Settings) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("write settings: %w", err)
	}
	_, err = e.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES('settings', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, string(b))
	if err != nil {
		return fmt.Errorf("write settings: %w", err)
	}
	return nil
}

// ReadSettings reads the settings of the checkpoint at path without taking
// it: no migration, nothing created, nothing written (but the rollback of
// an import that was killed, see readQuery). It returns ErrNoSettings
// for a checkpoint that holds no campaign yet.
func ReadSettings(path string) (Settings, error) {
	path, err := Resolve(path)
	if err != nil {
		return Settings{}, err
	}
	ok, _ := writable(path)
	db, err := sql.Open("sqlite3", uri(path, readQuery(ok)))
	if err != nil {
		return Settings{}, fmt.Errorf("open checkpoint %q: %w", path, err)
	}
	defer db.Close()
	s := &Store{db: db, q: db, path: path}
	st, err := s.Settings(context.Background())
	if err != nil && !errors.Is(err, ErrNoSettings) && strings.Contains(err.Error(), "no such table") {
		return st, ErrNoSettings // made, but never set up
	}
	if isNotADB(err) {
		return st, notADB(path, err)
	}
	mark(&err)
	return st, err
}
