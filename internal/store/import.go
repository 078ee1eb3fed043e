package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-sqlite3"

	"github.com/bulksend/bulksend/internal/campaign"
)

// Row is one recipient as imported from the CSV.
type Row struct {
	Row    int64
	Line   int
	ExtID  string
	Phone  string // E.164, or as written when Skip is set
	Sender string
	Params []string
	// Parts and Encoding are an SMS row's rendered body measured (see
	// package segment); 0 and "" for a WhatsApp row.
	Parts    int
	Encoding string
	// SendAt is the row's own earliest send (the CSV's send_at), zero for
	// none; Zones the time zones its phone may be in (schedule.Zones.Key),
	// "" when no window needs them.
	SendAt time.Time
	Zones  string
	// Skip says why the row will not be sent, "" to send it; SkipKind
	// groups it and must be set with it.
	Skip     string
	SkipKind campaign.SkipKind
}

// importBatch is the rows per INSERT, under SQLite's limit of bound values
// (32,766, checked below). Each INSERT is one call into C long enough for
// the runtime to hand the goroutine's P to another thread and take one
// back after: with 1,024 rows rather than 128, a 1M-row dry run switched
// threads a quarter less and took about a tenth of a second less.
const importBatch = 1024

var _ [32766 - importBatch*schedColumns]struct{} // the widest batch's values fit

// Import loads the campaign into an empty checkpoint in one transaction,
// with its settings: a crash during import leaves nothing behind, so the
// next run imports again. Rows whose phone appeared on an earlier row to
// send are skipped as duplicates. next returns io.EOF after the last row;
// any other error from it aborts the import and is returned as is. next is
// called from another goroutine, so that reading overlaps with SQLite's
// work. settings is called after the last row, so it can include what
// reading the rows learnt (the file's hash).
//
// The work is split so that SQLite's goroutine does little but SQLite's
// work: the other goroutine reads the rows, looks for repeated phones and
// turns each batch of rows into the arguments of one INSERT, which SQLite's
// goroutine then runs through the driver directly (see insertRows).
func (s *Store) Import(ctx context.Context, next func() (Row, error), settings func() Settings) (_ int64, err error) {
	defer mark(&err)
	if _, err := s.Settings(ctx); err == nil {
		return 0, errors.New("import: checkpoint already holds a campaign")
	} else if !errors.Is(err, ErrNoSettings) {
		return 0, err
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer conn.Close()
	// Into an empty file a rollback journal has next to nothing to save,
	// while WAL would write every page twice (WAL, then checkpoint). A
	// reader that has the new file open already (a status started with
	// the run) keeps it in WAL: the import then goes on in WAL, slower,
	// rather than fail. The temporary tables that find duplicates get a
	// cache of their own that grows only as far as there are repeated
	// phones: a file with 10% duplicates imports a third faster with it.
	if _, err := conn.ExecContext(ctx, `PRAGMA journal_mode=DELETE`); err != nil && !busy(err) {
		return 0, fmt.Errorf("import: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA temp.cache_size=-32768`); err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	var tally *importTally // once committed
	defer func() {
		conn.ExecContext(context.Background(), `PRAGMA journal_mode=WAL; PRAGMA temp.cache_size=-2000`)
		// After the switch to WAL, which counts as a change of version.
		if w, err := writesOf(context.Background(), conn); tally != nil && err == nil {
			s.imported.Store(&imported{report: tally.report(), writes: w})
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer tx.Rollback()
	// The claim index is kept up to date as rows come rather than built
	// afterwards: its entries (sender, next_at 0, row) arrive in order for
	// each sender, so keeping it costs next to nothing with one sender and
	// about what a build costs with ten, and a build reads the whole table
	// back and sorts it (a quarter of the import's time with one sender).
	if _, err := tx.ExecContext(ctx, dueIndex); err != nil {
		return 0, fmt.Errorf("import: index: %w", err)
	}
	batches, dupes, rows, stop := readAhead(next)
	defer stop()
	var n int64
	now := strconv.FormatInt(ms(time.Now()), 10)
	err = conn.Raw(func(dc any) error {
		var err error
		n, err = insertRows(ctx, dc, now, batches)
		return err
	})
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := dupes.mark(ctx, tx, rows); err != nil {
		return 0, fmt.Errorf("import: duplicates: %w", err)
	}
	if err := writeSettings(ctx, tx, settings()); err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	tally = rows
	return n, nil
}

// insertRows runs the INSERTs of batches on dc, the driver's connection
// (in the transaction Import began on it), until batches is closed or
// brings an error, and returns the rows inserted.
//
// The statements are run with Query, not Exec, and through the driver
// rather than database/sql: go-sqlite3 binds a query's arguments and takes
// its first step in one cgo call, from a copy of them in C memory, where
// Exec makes a cgo call per argument and SQLite copies every string into
// memory of its own and frees it at the next reset; and database/sql would
// check and convert every argument again, into a slice of its own per
// statement: for a million rows, about half a second of SQLite's goroutine
// in profiles on a 2-core machine. An INSERT returns no rows; reading them
// to the end runs it to completion however lazily a driver steps.
func insertRows(ctx context.Context, dc any, now string, batches <-chan insertBatch) (n int64, err error) {
	c, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return 0, fmt.Errorf("import: driver %T cannot prepare statements with a context", dc)
	}
	full := &rawInsert{conn: c, width: rowColumns,
		prefix: `INSERT INTO recipients(row, line, ext_id, phone, sender, params, status, reason, skip_kind, parts, encoding, updated_at) VALUES `,
		one:    "(?,?,?,?,?,?,?,?,?,?,?," + now + ")"}
	defer full.close()
	sched := &rawInsert{conn: c, width: schedColumns,
		prefix: `INSERT INTO recipients(row, line, ext_id, phone, sender, params, status, reason, skip_kind, parts, encoding, send_at, next_at, wait, zones, updated_at) VALUES `,
		one:    "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?," + now + ")"}
	defer sched.close()
	common := &rawInsert{conn: c, width: commonColumns,
		prefix: `INSERT INTO recipients(row, line, phone, sender, params, status, updated_at) VALUES `,
		one:    "(?,?,?,?,?,'pending'," + now + ")"}
	defer common.close()
	for b := range batches {
		if b.rows > 0 {
			ins := full
			switch {
			case b.common:
				ins = common
			case b.sched:
				ins = sched
			}
			if err := ins.run(ctx, b.args); err != nil {
				return 0, fmt.Errorf("import row %d: %w", b.last, err)
			}
			n += int64(b.rows)
		}
		if b.err != nil {
			return 0, b.err
		}
		b.recycle()
	}
	return n, nil
}

// rawInsert runs a multi-row INSERT on a driver connection: one statement
// prepared for importBatch rows, and one for a last, shorter batch.
type rawInsert struct {
	conn        driver.ConnPrepareContext
	prefix, one string // the statement up to VALUES, and one row's values
	width       int    // values bound per row
	full        driver.Stmt
}

// run inserts the rows whose values are args, at most importBatch rows.
func (ri *rawInsert) run(ctx context.Context, args []driver.NamedValue) error {
	rows := len(args) / ri.width
	stmt := ri.full
	if stmt == nil || rows != importBatch {
		s, err := ri.conn.PrepareContext(ctx, ri.prefix+placeholdersWith(rows, ri.one))
		if err != nil {
			return err
		}
		if rows != importBatch {
			defer s.Close()
		} else {
			ri.full = s
		}
		stmt = s
	}
	q, ok := stmt.(driver.StmtQueryContext)
	if !ok {
		return fmt.Errorf("driver statement %T cannot query with a context", stmt)
	}
	r, err := q.QueryContext(ctx, args)
	if err != nil {
		return err
	}
	for {
		if err := r.Next(nil); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			r.Close()
			return err
		}
	}
	return r.Close()
}

func (ri *rawInsert) close() {
	if ri.full != nil {
		ri.full.Close()
	}
}

// The values bound per row of recipients: every column import writes but
// updated_at and the schedule's, or for a common row (to send, no id,
// WhatsApp, no schedule) row, line, phone, sender and params; a batch with
// a row the schedule concerns (a send_at, zones) binds the schedule's
// columns too, for every row. Binding a value costs SQLite a lock and an
// unlock of the connection's mutex, so the common row's NULLs and status
// are part of the statement: a batch of common rows is the usual batch.
const (
	rowColumns    = 11
	commonColumns = 5
	schedColumns  = rowColumns + 4 // send_at, next_at, wait, zones
)

// insertBatch is the arguments of one INSERT into recipients, as
// readAhead makes them.
type insertBatch struct {
	args   []driver.NamedValue // rowColumns per row, or commonColumns if common
	common bool                // every row is a common row
	sched  bool                // some row has a send_at or zones: schedColumns per row
	rows   int
	last   int64 // the last row's number
	err    error // after the rows; ends the stream (io.EOF is not passed on)
	free   chan<- []driver.NamedValue
}

// recycle hands b's argument slice back for another batch.
func (b *insertBatch) recycle() {
	clear(b.args) // let the rows' strings go
	select {
	case b.free <- b.args[:0]:
	default:
	}
}

// Values bound for every row that has them, made once.
var (
	pendingArg any = string(campaign.Pending)
	skippedArg any = string(campaign.Skipped)
	waitSendAt any = string(WaitSendAt)
)

const (
	readBatch = 1024 // rows per hand-over from the reading goroutine
	inFlight  = 2    // batches of INSERT arguments waiting for SQLite
)

type rowBatch struct {
	rows []Row
	err  error // after rows; ends the stream (io.EOF is not passed on)
}

// readAhead calls next in a goroutine of its own, and hands its rows to
// another that gives each to dupes and turns them into the arguments of
// INSERTs: reading (next), making arguments and SQLite's work then run side
// by side. The returned channel is closed after the last batch; dupes and
// tally, which have seen every row, may be used from then on. stop ends
// the goroutines early and returns once they have: next is never left
// running.
func readAhead(next func() (Row, error)) (_ <-chan insertBatch, dupes *dupFinder, tally *importTally, stop func()) {
	rows := make(chan rowBatch, 4)
	spare := make(chan []Row, 6)
	out := make(chan insertBatch, inFlight)
	done := make(chan struct{})
	dupes, tally = newDupFinder(), newImportTally()
	go func() {
		defer close(rows)
		b := rowBatch{rows: make([]Row, 0, readBatch)}
		send := func(err error) bool {
			b.err = err
			select {
			case rows <- b:
			case <-done:
				return false
			}
			select {
			case b.rows = <-spare:
			default:
				b.rows = make([]Row, 0, readBatch)
			}
			return true
		}
		for {
			select {
			case <-done:
				return
			default:
			}
			r, err := next()
			if errors.Is(err, io.EOF) {
				send(nil)
				return
			}
			if err != nil {
				send(err)
				return
			}
			if b.rows = append(b.rows, r); len(b.rows) == cap(b.rows) && !send(nil) {
				return
			}
		}
	}()
	go func() {
		defer close(out)
		defer func() {
			for range rows { // until the reading goroutine has returned
			}
		}()
		a := newArgMaker(make(chan []driver.NamedValue, inFlight+2))
		send := func(err error) bool {
			select {
			case out <- a.batch(err):
				return true
			case <-done:
				return false
			}
		}
		for b := range rows {
			for i := range b.rows {
				r := &b.rows[i]
				if r.Skip != "" && r.SkipKind == "" {
					send(fmt.Errorf("import row %d: skipped (%s) without a skip kind", r.Row, r.Skip))
					return
				}
				dupes.add(r.Row, r.Phone, r.Skip == "")
				tally.add(r)
				if a.add(r) == importBatch && !send(nil) {
					return
				}
			}
			if b.err != nil {
				send(b.err)
				return
			}
			clear(b.rows)
			select {
			case spare <- b.rows[:0]:
			default:
			}
		}
		send(nil)
	}()
	var once sync.Once
	return out, dupes, tally, func() {
		once.Do(func() {
			close(done)
			for range out {
			}
		})
	}
}

// argMaker turns rows into the arguments of an INSERT into recipients.
// The parameters of a batch's rows (JSON arrays) are written one after the
// other and made one string, of which each row's is a part; a sender the
// same as the row before's is the same argument. It saves two allocations
// a row.
type argMaker struct {
	b      insertBatch
	free   chan []driver.NamedValue
	params []byte      // the batch's rows' parameters
	ends   []int       // where each row's parameters end in params
	sched  []schedArgs // each row's schedule columns

	sender    string
	senderArg any
}

func newArgMaker(free chan []driver.NamedValue) *argMaker {
	a := &argMaker{free: free}
	a.reset()
	return a
}

func (a *argMaker) reset() {
	a.b = insertBatch{free: a.free, common: true}
	select {
	case a.b.args = <-a.free:
	default:
		a.b.args = make([]driver.NamedValue, 0, importBatch*rowColumns)
	}
	a.params, a.ends, a.sched = a.params[:0], a.ends[:0], a.sched[:0]
}

// add adds r's arguments (but for its parameters, which batch adds) and
// returns the rows in the batch.
func (a *argMaker) add(r *Row) int {
	status := pendingArg
	if r.Skip != "" {
		status = skippedArg
	}
	a.b.common = a.b.common && r.ExtID == "" && r.Skip == "" && r.Parts == 0 && r.Encoding == "" && r.SendAt.IsZero() && r.Zones == ""
	var sa schedArgs
	if !r.SendAt.IsZero() || r.Zones != "" {
		a.b.sched = true
		sa = schedArgs{nextAt: int64(0), zones: nullText(r.Zones)}
		if !r.SendAt.IsZero() {
			sa.sendAt, sa.nextAt, sa.wait = ms(r.SendAt), ms(r.SendAt), waitSendAt
		}
	}
	a.sched = append(a.sched, sa)
	if r.Sender != a.sender || a.senderArg == nil {
		a.sender, a.senderArg = r.Sender, r.Sender
	}
	a.params = appendParams(a.params, r.Params)
	a.ends = append(a.ends, len(a.params))
	i := len(a.b.args)
	a.b.args = append(a.b.args, arg(i, r.Row), arg(i+1, int64(r.Line)), arg(i+2, nullText(r.ExtID)), arg(i+3, r.Phone),
		arg(i+4, a.senderArg), arg(i+5, nil), arg(i+6, status), arg(i+7, nullText(r.Skip)),
		arg(i+8, nullText(string(r.SkipKind))), arg(i+9, nullInt(int64(r.Parts))), arg(i+10, nullText(r.Encoding)))
	a.b.rows++
	a.b.last = r.Row
	return a.b.rows
}

// schedArgs are a row's values of the schedule's columns.
type schedArgs struct{ sendAt, nextAt, wait, zones any }

// batch returns the batch made so far, with err, and starts another.
func (a *argMaker) batch(err error) insertBatch {
	all, start := string(a.params), 0
	for k, end := range a.ends {
		a.b.args[k*rowColumns+5].Value = all[start:end]
		start = end
	}
	if a.b.sched {
		// The schedule's columns after each row's others: a new slice, a
		// cost only a scheduled campaign's batches pay.
		args := make([]driver.NamedValue, 0, a.b.rows*schedColumns)
		for k, sa := range a.sched {
			for j := range rowColumns {
				args = append(args, arg(len(args), a.b.args[k*rowColumns+j].Value))
			}
			nextAt := sa.nextAt
			if nextAt == nil {
				nextAt = int64(0)
			}
			args = append(args, arg(len(args), sa.sendAt), arg(len(args)+1, nextAt), arg(len(args)+2, sa.wait), arg(len(args)+3, sa.zones))
		}
		a.b.args = args
	} else if a.b.common {
		// row, line, phone, sender, params of each row, moved down: no
		// value moves up or is overwritten before it moves.
		args := a.b.args
		for k := range a.b.rows {
			for j, from := range [commonColumns]int{0, 1, 3, 4, 5} {
				args[k*commonColumns+j] = arg(k*commonColumns+j, args[k*rowColumns+from].Value)
			}
		}
		clear(args[a.b.rows*commonColumns:])
		a.b.args = args[:a.b.rows*commonColumns]
	}
	b := a.b
	b.err = err
	a.reset()
	return b
}

// arg is v as the i-th (from 0) positional argument of a statement.
func arg(i int, v any) driver.NamedValue { return driver.NamedValue{Ordinal: i + 1, Value: v} }

// appendParams appends params as a JSON array of strings.
func appendParams(b []byte, params []string) []byte {
	b = append(b, '[')
	for i, p := range params {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, p)
	}
	return append(b, ']')
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json does.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\\ufffd"...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// busy reports whether err is SQLite's answer that another connection
// holds the file.
func busy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}
