package store

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
)

// tallyRows are n rows over three senders in runs, with invalid phones,
// rows without a sender and repeated phones (every 7th row repeats the
// phone of the row 100 before it, and some of those repeat an invalid
// row's phone, which is never a first).
func tallyRows(n int) []Row {
	var rows []Row
	for i := 1; i <= n; i++ {
		r := Row{Row: int64(i), Line: i + 1, Phone: fmt.Sprintf("+4477009%05d", i), Sender: []string{"A", "B", "C"}[i/50%3], Params: []string{"p"}}
		if i%7 == 0 && i > 100 {
			r.Phone = fmt.Sprintf("+4477009%05d", i-100)
		}
		switch {
		case i%97 == 0:
			r.Skip, r.SkipKind = "invalid phone number: too short", campaign.SkipInvalid
		case i%89 == 0:
			r.Sender, r.Skip, r.SkipKind = "", "no sender: the from column is empty", campaign.SkipNoSender
		}
		rows = append(rows, r)
	}
	return rows
}

// TestImportTallyIsABreakdown: the breakdown an import counts as its rows
// go in is the one a scan of the checkpoint finds, on every path of the
// duplicate search.
func TestImportTallyIsABreakdown(t *testing.T) {
	for _, tc := range []struct {
		name            string
		rows            []Row
		maxFingerprints int
	}{
		{"no rows", nil, 1 << 23},
		{"one sender, nothing skipped", phones(300, "A"), 1 << 23},
		{"senders, skips and duplicates", tallyRows(3000), 1 << 23},
		{"duplicates found in SQL", tallyRows(3000), 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(n int) { maxFingerprints = n }(maxFingerprints)
			maxFingerprints = tc.maxFingerprints
			ctx := context.Background()
			s := newStore(t, tc.rows...)
			got, ok := s.importedBreakdown(ctx)
			if !ok {
				t.Fatal("no tally right after the import")
			}
			want, err := s.breakdown(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("tally:\n%+v\nscan:\n%+v", got, want)
			}
			if len(tc.rows) > 1000 && want.Skipped[campaign.SkipDuplicate] == 0 {
				t.Errorf("no duplicates in %+v: the case tests nothing", want.Skipped)
			}
			if b, err := s.Breakdown(ctx); err != nil || !reflect.DeepEqual(b, want) {
				t.Errorf("Breakdown: %+v, %v; want %+v", b, err, want)
			}
		})
	}
}

// TestBreakdownAfterWrites: once a row has changed since the import, on
// the store's connection or another, Breakdown scans again; what changes
// no row (an empty suppression list, no rows left sending) keeps the
// import's tally, which a dry run plans from.
func TestBreakdownAfterWrites(t *testing.T) {
	list := func(phones ...string) func() (string, error) {
		return func() (string, error) {
			if len(phones) == 0 {
				return "", io.EOF
			}
			p := phones[0]
			phones = phones[1:]
			return p, nil
		}
	}
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, s *Store)
		tally bool // the import's tally is still used
	}{
		{"nothing", func(*testing.T, *Store) {}, true},
		{"an empty suppression list", func(t *testing.T, s *Store) {
			if n, err := s.Exclude(context.Background(), list()); n != 0 || err != nil {
				t.Fatalf("Exclude: %d, %v", n, err)
			}
		}, true},
		{"no rows left sending", func(t *testing.T, s *Store) {
			if n, err := s.RecoverSending(context.Background(), time.Now()); n != 0 || err != nil {
				t.Fatalf("RecoverSending: %d, %v", n, err)
			}
		}, true},
		{"a suppression list", func(t *testing.T, s *Store) {
			if n, err := s.Exclude(context.Background(), list("+447700900002")); n != 1 || err != nil {
				t.Fatalf("Exclude: %d, %v", n, err)
			}
		}, false},
		{"another connection", func(t *testing.T, s *Store) {
			db, err := sql.Open("sqlite3", uri(s.Path(), "_busy_timeout=5000"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE recipients SET status = 'skipped', skip_kind = 'excluded', reason = 'excluded' WHERE row = 3`); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t, phones(10, "A")...)
			tc.write(t, s)
			if _, ok := s.importedBreakdown(ctx); ok != tc.tally {
				t.Errorf("the import's tally used: %v, want %v", ok, tc.tally)
			}
			want, err := s.breakdown(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := s.Breakdown(ctx); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("Breakdown: %+v, %v; a scan: %+v", got, err, want)
			}
			if pending := want.Counts.Pending; tc.tally != (pending == 10) {
				t.Errorf("%d rows pending after %s", pending, tc.name)
			}
		})
	}
}

// TestBreakdownTallyIsACopy: a caller that changes the report it got does
// not change the next one.
func TestBreakdownTallyIsACopy(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, tallyRows(200)...)
	first, err := s.Breakdown(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := s.breakdown(ctx)
	first.BySender[0].Sender = "changed"
	first.Skipped[campaign.SkipInvalid] = 1000
	first.SkipExamples[campaign.SkipInvalid] = SkipExample{}
	if got, err := s.Breakdown(ctx); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Breakdown after a caller changed the last one: %+v, %v; want %+v", got, err, want)
	}
}
