package store

import (
	"context"
	"database/sql"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
)

// Duplicates are found without holding the phones in memory and, in the
// usual file with no or few repeats, without reading the table back.
//
// While rows stream in, every row to send leaves a 32-bit fingerprint of
// its phone, in the order rows come: 4 bytes a row, written in sequence.
// Once all rows are in, the fingerprints are sorted (a radix sort, a
// sixteenth of them at a time so that it needs half a byte a row more) and
// those found more than once are the fingerprints of every repeated phone,
// and of a few phones that merely share one (about 1 in 4,000 phones at a
// million rows, twice as many at two million). Only the rows with those
// fingerprints are read back, into the temporary table import_repeats,
// where SQLite compares the phones: the first row of each phone stays, the
// later ones are skipped.
//
// This replaced a 16 MB Bloom filter, which cost a tenth of the import's
// time in cache misses and sent every file with a single repeat to a scan
// of the whole table. A file too large for the fingerprints
// (maxFingerprints rows) is searched in SQL instead, more slowly.

var (
	// maxFingerprints bounds the fingerprints kept: 32 MB.
	maxFingerprints = 1 << 23
	// fingerprintMask keeps the bits of a fingerprint used; a test makes
	// fingerprints collide with a smaller one.
	fingerprintMask = ^uint32(0)
)

// dupFinder collects what finding duplicates needs as rows stream in (add)
// and then marks them (mark). It is not safe for concurrent use.
type dupFinder struct {
	seed maphash.Seed
	// fps holds, for each row in the order add was given them, its
	// phone's fingerprint, or 0 for a row not to send.
	fps    []uint32
	first  int64   // the row number of fps[0]
	rows   []int64 // the row number of each fps[i]; nil while they are first, first+1, …
	inSQL  bool    // too many rows: find duplicates in SQL
	toSend int64   // rows to send so far
}

func newDupFinder() *dupFinder {
	return &dupFinder{seed: maphash.MakeSeed()}
}

// add takes the next row: its number, its phone and whether it is to be
// sent (only those can be duplicates or have them).
func (d *dupFinder) add(row int64, phone string, toSend bool) {
	if toSend {
		d.toSend++
	}
	if d.inSQL {
		return
	}
	i := len(d.fps)
	if i == maxFingerprints {
		d.inSQL, d.fps, d.rows = true, nil, nil
		return
	}
	var fp uint32
	if toSend {
		fp = uint32(maphash.String(d.seed, phone)) & fingerprintMask
		if fp == 0 {
			fp = 1 // 0 marks rows not to send
		}
	}
	if i == 0 {
		d.first = row
	}
	if d.rows == nil && row != d.first+int64(i) {
		d.rows = make([]int64, i, cap(d.fps))
		for j := range d.rows {
			d.rows[j] = d.first + int64(j)
		}
	}
	if d.rows != nil {
		d.rows = append(d.rows, row)
	}
	d.fps = append(d.fps, fp)
}

func (d *dupFinder) row(i int) int64 {
	if d.rows != nil {
		return d.rows[i]
	}
	return d.first + int64(i)
}

// mark skips every row to send whose phone an earlier row to send has,
// with the earlier row's number as the reason, and counts them in t. The
// recipients table must hold every row given to add.
func (d *dupFinder) mark(ctx context.Context, tx *sql.Tx, t *importTally) error {
	if d.toSend < 2 {
		return nil
	}
	if d.inSQL {
		return markDuplicatesInSQL(ctx, tx, t)
	}
	repeated := d.repeated()
	if len(repeated) == 0 {
		return nil
	}
	// The rows whose fingerprint is repeated, read back in chunks. A
	// rollback drops the temporary tables too.
	if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE import_repeats(row INTEGER PRIMARY KEY, phone TEXT NOT NULL)`); err != nil {
		return err
	}
	var chunk []int64
	for i, fp := range d.fps {
		if fp == 0 {
			continue
		}
		if _, ok := slices.BinarySearch(repeated, fp); !ok {
			continue
		}
		if chunk = append(chunk, d.row(i)); len(chunk) == 1000 {
			if err := copyRepeats(ctx, tx, chunk); err != nil {
				return err
			}
			chunk = chunk[:0]
		}
	}
	if err := copyRepeats(ctx, tx, chunk); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `
		CREATE TEMP TABLE import_firsts(phone TEXT PRIMARY KEY, row INTEGER NOT NULL) WITHOUT ROWID;
		INSERT INTO import_firsts(phone, row) SELECT phone, min(row) FROM import_repeats GROUP BY phone;`); err != nil {
		return err
	}
	if err := skipDuplicates(ctx, tx, t, `UPDATE recipients SET status = 'skipped', skip_kind = 'duplicate',
			reason = 'duplicate of row ' || (SELECT f.row FROM import_firsts f WHERE f.phone = recipients.phone)
			WHERE row IN (SELECT r.row FROM import_repeats r JOIN import_firsts f USING (phone) WHERE r.row > f.row)`); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DROP TABLE import_firsts; DROP TABLE import_repeats;`)
	return err
}

// repeated returns, sorted, the fingerprints found more than once. It
// sorts them a sixteenth at a time (those whose top four bits are p, for
// each p), so it needs two buffers of a sixteenth of them.
func (d *dupFinder) repeated() []uint32 {
	const parts = 16
	var out []uint32
	size := len(d.fps)/parts + len(d.fps)/(4*parts) + 16 // a part's expected size, and room to spare
	part, tmp := make([]uint32, 0, size), make([]uint32, 0, size)
	for p := range uint32(parts) {
		part = part[:0]
		for _, fp := range d.fps {
			if fp != 0 && fp>>28 == p {
				part = append(part, fp)
			}
		}
		if cap(tmp) < len(part) {
			tmp = make([]uint32, len(part))
		}
		sorted := radixSort(part, tmp[:len(part)])
		for i := 1; i < len(sorted); i++ {
			if sorted[i] == sorted[i-1] && (len(out) == 0 || out[len(out)-1] != sorted[i]) {
				out = append(out, sorted[i])
			}
		}
	}
	return out
}

// radixSort sorts a, using tmp (as long as a) for scratch, and returns the
// sorted slice: a or tmp.
func radixSort(a, tmp []uint32) []uint32 {
	for shift := uint(0); shift < 32; shift += 8 {
		var count [256]int
		for _, v := range a {
			count[v>>shift&0xff]++
		}
		pos := 0
		for i, c := range count {
			count[i], pos = pos, pos+c
		}
		for _, v := range a {
			k := v >> shift & 0xff
			tmp[count[k]] = v
			count[k]++
		}
		a, tmp = tmp, a
	}
	return a
}

// copyRepeats copies rows (row numbers) from recipients to import_repeats.
func copyRepeats(ctx context.Context, tx *sql.Tx, rows []int64) error {
	if len(rows) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, r := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(r, 10))
	}
	b.WriteByte(']')
	_, err := tx.ExecContext(ctx, `INSERT INTO import_repeats(row, phone)
		SELECT row, phone FROM recipients WHERE row IN (SELECT value FROM json_each(?))`, b.String())
	return err
}

// markDuplicatesInSQL is mark for a file too large for the fingerprints:
// one scan of the table finds the first row of every phone to send, a
// second skips the rows that are not it.
func markDuplicatesInSQL(ctx context.Context, tx *sql.Tx, t *importTally) error {
	if _, err := tx.ExecContext(ctx, `
		CREATE TEMP TABLE import_firsts(phone TEXT PRIMARY KEY, row INTEGER NOT NULL) WITHOUT ROWID;
		INSERT INTO import_firsts(phone, row)
			SELECT phone, row FROM recipients WHERE status = 'pending'
			ON CONFLICT(phone) DO UPDATE SET row = min(row, excluded.row);`); err != nil {
		return err
	}
	if err := skipDuplicates(ctx, tx, t, `UPDATE recipients SET status = 'skipped', skip_kind = 'duplicate',
			reason = 'duplicate of row ' || (SELECT f.row FROM import_firsts f WHERE f.phone = recipients.phone)
			WHERE status = 'pending' AND row > (SELECT f.row FROM import_firsts f WHERE f.phone = recipients.phone)`); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DROP TABLE import_firsts`)
	return err
}
