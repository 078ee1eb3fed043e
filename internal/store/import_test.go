package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
)

// TestImportFindsDuplicates checks the duplicate search (see dupFinder)
// on its every path: fingerprints as they are, fingerprints that nearly
// all collide (so SQLite must tell the true repeats from the false ones),
// a file too large for fingerprints (searched in SQL), and rows numbered
// with gaps. Invalid rows are never a first occurrence.
func TestImportFindsDuplicates(t *testing.T) {
	for _, tc := range []struct {
		name            string
		mask            uint32
		maxFingerprints int
		step            int64 // between row numbers
	}{
		{"fingerprints", ^uint32(0), 1 << 23, 1},
		{"colliding fingerprints", 0x7, 1 << 23, 1},
		{"too many rows for fingerprints", ^uint32(0), 1000, 1},
		{"rows numbered with gaps", 0xff, 1 << 23, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(m uint32, n int) { fingerprintMask, maxFingerprints = m, n }(fingerprintMask, maxFingerprints)
			fingerprintMask, maxFingerprints = tc.mask, tc.maxFingerprints
			var rows []Row
			want := map[int64]string{} // row: reason; absent rows are to send
			first := map[string]int64{}
			for i := int64(1); i <= 3000; i++ {
				row := 5 + i*tc.step
				phone := fmt.Sprintf("+4477009%05d", i%1900) // rows 1901 on repeat earlier phones
				r := Row{Row: row, Line: int(i) + 1, Phone: phone, Sender: "1"}
				switch {
				case i%500 == 0:
					r.Skip, r.SkipKind = "invalid phone: test", campaign.SkipInvalid // never a first occurrence
					want[row] = r.Skip
				case first[phone] != 0:
					want[row] = fmt.Sprintf("duplicate of row %d", first[phone])
				default:
					first[phone] = row
				}
				rows = append(rows, r)
			}
			s := newStore(t, rows...)
			n := 0
			err := s.Export(context.Background(), func(r ExportRow) error {
				n++
				if r.Reason != want[r.Row] {
					t.Errorf("row %d (%s): reason %q, want %q", r.Row, r.Phone, r.Reason, want[r.Row])
				}
				if (r.Reason == "") != (r.Status == campaign.Pending) {
					t.Errorf("row %d: status %s with reason %q", r.Row, r.Status, r.Reason)
				}
				return nil
			})
			if err != nil || n != len(rows) {
				t.Fatalf("exported %d rows (%v), want %d", n, err, len(rows))
			}
		})
	}
}

// TestRadixSort compares radixSort with sorting by comparison.
func TestRadixSort(t *testing.T) {
	for _, n := range []int{0, 1, 2, 255, 1000} {
		a := make([]uint32, n)
		for i := range a {
			a[i] = uint32(i*2654435761) ^ uint32(i>>3) // spread over every byte
		}
		want := append([]uint32(nil), a...)
		slices.Sort(want)
		got := radixSort(a, make([]uint32, n))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("radixSort of %d values: got %v, want %v", n, got, want)
		}
	}
}

// TestImportKilled kills (SIGKILL) a process in the middle of a large
// import, once SQLite has had to write much of it to the file, and checks
// that the checkpoint it leaves holds no campaign and no rows, so that the
// next run imports again, and can.
func TestImportKilled(t *testing.T) {
	if path := os.Getenv("BULKSEND_TEST_KILLED_IMPORT"); path != "" {
		importUntilKilled(path)
		return
	}
	if testing.Short() {
		t.Skip("starts a process that imports 200,000 rows")
	}
	path := filepath.Join(t.TempDir(), "c.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestImportKilled$")
	cmd.Env = append(os.Environ(), "BULKSEND_TEST_KILLED_IMPORT="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "importing\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q (%v)", line, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if fi, err := os.Stat(path); err != nil || fi.Size() < 10<<20 {
		t.Fatalf("checkpoint at the kill: %v, %v; want over 10 MB written", fi, err)
	}

	// What a run reads before it takes the checkpoint: the killed
	// import's journal is rolled back, not refused.
	if _, err := ReadSettings(path); !errors.Is(err, ErrNoSettings) {
		t.Fatalf("ReadSettings after a killed import: %v, want ErrNoSettings", err)
	}
	ctx := context.Background()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Settings(ctx); !errors.Is(err, ErrNoSettings) {
		t.Fatalf("settings after a killed import: %v, want ErrNoSettings", err)
	}
	if c, err := s.Counts(ctx); err != nil || c.Total != 0 {
		t.Fatalf("%d rows after a killed import (%v), want none", c.Total, err)
	}
	if n, err := s.Import(ctx, rowsOf(phones(1000, "A")...), func() Settings { return Settings{CampaignID: "c2"} }); err != nil || n != 1000 {
		t.Fatalf("import after a killed one: %d rows, %v", n, err)
	}
}

// importUntilKilled imports rows into the checkpoint at path, says
// "importing" on stdout after 200,000 of them, and waits to be killed.
func importUntilKilled(path string) {
	s, err := Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	i := 0
	s.Import(context.Background(), func() (Row, error) {
		i++
		if i == 200_000 {
			// SQLite has the rows before these: wait for them to be
			// written, then for the kill.
			time.Sleep(500 * time.Millisecond)
			fmt.Println("importing")
			time.Sleep(time.Minute)
			return Row{}, io.EOF
		}
		return Row{Row: int64(i), Line: i + 1, Phone: fmt.Sprintf("+4477%08d", i), Sender: "A", Params: []string{"p", fmt.Sprint(i)}}, nil
	}, func() Settings { return Settings{CampaignID: "c1"} })
	fmt.Println("import ended before the kill")
}

// TestImportCommonAndOtherRows mixes batches of common rows only (to send,
// no id, WhatsApp: inserted with fewer values) with batches that hold a
// row of each other kind, and checks every row reads back whole.
func TestImportCommonAndOtherRows(t *testing.T) {
	ctx := context.Background()
	var rows []Row
	for i := int64(1); i <= 4*importBatch+3; i++ {
		r := Row{Row: i, Line: int(i + 1), Phone: fmt.Sprintf("+4477009%05d", i), Sender: "A", Params: []string{"p", fmt.Sprint(i), `"q"`}}
		switch i {
		case importBatch + 5:
			r.ExtID = "id-1"
		case importBatch + 6:
			r.Skip, r.SkipKind = "invalid phone: test", campaign.SkipInvalid
		case 3*importBatch + 1:
			r.Parts, r.Encoding = 2, "UCS-2"
		}
		rows = append(rows, r)
	}
	s := newStore(t, rows...)
	readsBackWhole(t, s, rows)
	jobs, err := s.Claim(ctx, "A", time.Now(), len(rows))
	if err != nil || len(jobs) != len(rows)-1 {
		t.Fatalf("claimed %d rows (%v), want %d", len(jobs), err, len(rows)-1)
	}
	for _, j := range jobs {
		if want := fmt.Sprintf(`[p %d "q"]`, j.Row); fmt.Sprint(j.Params) != want {
			t.Errorf("row %d: params %v, want %s", j.Row, j.Params, want)
		}
	}
}

// readsBackWhole checks that s exports each of rows as it was imported:
// pending, or skipped with its reason.
func readsBackWhole(t *testing.T, s *Store, rows []Row) {
	t.Helper()
	var got []ExportRow
	if err := s.Export(context.Background(), func(r ExportRow) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("exported %d rows, want %d", len(got), len(rows))
	}
	for i, w := range rows {
		g := got[i]
		status := campaign.Pending
		if w.Skip != "" {
			status = campaign.Skipped
		}
		if g.Row != w.Row || g.Line != int64(w.Line) || g.ExtID != w.ExtID || g.Phone != w.Phone || g.Sender != w.Sender ||
			g.Status != status || g.Reason != w.Skip || g.Parts != w.Parts || g.Encoding != w.Encoding || g.UpdatedAt.IsZero() {
			t.Errorf("row %d = %+v, want %+v as %s", w.Row, g, w, status)
		}
	}
}

// TestImportBesideAReader: a status (or waitcount, or a report) that
// opened the new checkpoint before the first run's import keeps it in WAL
// mode; the import goes on in WAL rather than fail "database is locked".
func TestImportBesideAReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.bulksend.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := OpenRead(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Counts(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := []Row{{Row: 1, Line: 2, Phone: "+447700900001", Sender: "1"}, {Row: 2, Line: 3, Phone: "+447700900002", Sender: "1"}}
	n, err := s.Import(context.Background(), rowsOf(rows...), func() Settings { return Settings{CampaignID: "c1", Template: "t", MaxAttempts: 5} })
	if err != nil || n != 2 {
		t.Fatalf("import beside a reader: %d rows, %v", n, err)
	}
	c, err := r.Counts(context.Background())
	if err != nil || c.Pending != 2 {
		t.Fatalf("the reader sees %+v (%v), want 2 pending", c, err)
	}
}
