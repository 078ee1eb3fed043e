package receive

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	namePrefix = "webhooks-"
	plainExt   = ".jsonl"
	gzExt      = ".jsonl.gz"
	tmpExt     = ".jsonl.gz.tmp" // a compression under way, or cut by a crash
	dayLayout  = "2006-01-02"
)

// logName is one file of the log: the day its bodies were kept on, its
// number within the day (0 for the first, which has none in its name), and
// whether it is the compressed form.
type logName struct {
	day string // YYYY-MM-DD, UTC
	seq int
	gz  bool
}

// String is the file's name: webhooks-2026-12-02.jsonl,
// webhooks-2026-12-02.1.jsonl.gz, …
func (n logName) String() string {
	s := namePrefix + n.day
	if n.seq > 0 {
		s += "." + strconv.Itoa(n.seq)
	}
	if n.gz {
		return s + gzExt
	}
	return s + plainExt
}

// plain is n's uncompressed form.
func (n logName) plain() logName { n.gz = false; return n }

// parseName reads a file name of the log; ok is false for any other name
// (the lock, a temporary file, something the operator put there). It
// accepts exactly the names String writes.
func parseName(s string) (n logName, ok bool) {
	rest, ok := strings.CutPrefix(s, namePrefix)
	if !ok || len(rest) < len(dayLayout) {
		return logName{}, false
	}
	n.day, rest = rest[:len(dayLayout)], rest[len(dayLayout):]
	if t, err := time.Parse(dayLayout, n.day); err != nil || t.Format(dayLayout) != n.day {
		return logName{}, false
	}
	switch {
	case strings.HasSuffix(rest, gzExt):
		n.gz, rest = true, strings.TrimSuffix(rest, gzExt)
	case strings.HasSuffix(rest, plainExt):
		rest = strings.TrimSuffix(rest, plainExt)
	default:
		return logName{}, false
	}
	if rest == "" {
		return n, true
	}
	num, ok := strings.CutPrefix(rest, ".")
	if !ok || num == "" || num[0] == '0' || len(num) > 9 {
		return logName{}, false
	}
	for i := 0; i < len(num); i++ {
		if num[i] < '0' || num[i] > '9' {
			return logName{}, false
		}
	}
	n.seq, _ = strconv.Atoi(num) // nine digits at most: cannot fail
	return n, true
}

// day is the UTC day of t, as file names write it.
func day(t time.Time) string { return t.UTC().Format(dayLayout) }

// Files returns the paths of the log's files in dir in the order they
// were written (by day, then by number), for reconcile to read in turn.
// Where a file is there in both forms (a crash between compressing it and
// removing the plain one), only the compressed one is listed: it is
// complete, being renamed into place only once written. The current file
// of a running receiver is listed too, as it is up to its last fsync.
func Files(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list webhook log: %w", err)
	}
	found := map[logName]bool{} // plain name → has a .gz
	for _, e := range entries {
		n, ok := parseName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		found[n.plain()] = found[n.plain()] || n.gz
	}
	names := make([]logName, 0, len(found))
	for n, gz := range found {
		n.gz = gz
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b logName) int {
		return cmp.Or(strings.Compare(a.day, b.day), cmp.Compare(a.seq, b.seq))
	})
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(dir, n.String())
	}
	return paths, nil
}
