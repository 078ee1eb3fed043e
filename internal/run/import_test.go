package run_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/run"
	"github.com/bulksend/bulksend/internal/store"
)

// bigFile writes a CSV of n rows, row bad (from 1) with a field too many
// when bad > 0, and returns its path.
func bigFile(t *testing.T, n, bad int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("phone,name\n")
	for i := 1; i <= n; i++ {
		extra := ""
		if i == bad {
			extra = ",x"
		}
		fmt.Fprintf(&b, "+1201555%04d,Name %d%s\n", i, i, extra)
	}
	path := filepath.Join(t.TempDir(), "c.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestImportStopsAtABadLine: a line that breaks the file, after thousands
// of rows are on their way into the checkpoint, fails the import with its
// line, and the checkpoint holds no campaign and no row, so that the next
// run imports again.
func TestImportStopsAtABadLine(t *testing.T) {
	ctx := context.Background()
	for _, bad := range []int{1, 4000, 9000} {
		t.Run(fmt.Sprint("row ", bad), func(t *testing.T) {
			o := options(bigFile(t, 9000, bad))
			c, err := run.Open(ctx, o, &channel{})
			if err == nil {
				c.Close()
				t.Fatal("imported a file with a broken line")
			}
			var le *csvin.LineError
			var ce *run.CSVError
			if !errors.As(err, &ce) || !errors.As(err, &le) || le.Line != bad+1 || !errors.Is(err, csvin.ErrFieldCount) {
				t.Fatalf("Open: %v; want a CSVError at line %d, a field too many", err, bad+1)
			}
			if s, err := run.Stored(o.DB); s != nil || err != nil {
				t.Fatalf("after the failed import the checkpoint holds %+v (%v)", s, err)
			}
			st, err := store.Open(o.DB)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if n, err := st.Counts(ctx); n.Total != 0 || err != nil {
				t.Errorf("after the failed import the checkpoint holds %d rows (%v)", n.Total, err)
			}
		})
	}
}

// TestDryRunPlanSeesExclusions: what the run does to the rows after the
// import (a suppression list) is in the plan, not the import's count.
func TestDryRunPlanSeesExclusions(t *testing.T) {
	o := options(bigFile(t, 3000, 0))
	o.DryRun, o.Exclude = true, filepath.Join(filepath.Dir(o.CSV), "exclude.txt")
	if err := os.WriteFile(o.Exclude, []byte("+12015550007\n+12015552999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, done := runOnce(t, o, &channel{})
	defer done()
	r := res.Plan.Breakdown
	if r.Counts.Total != 3000 || r.Counts.Pending != 2998 || r.Skipped[campaign.SkipExcluded] != 2 {
		t.Errorf("plan: %+v, skipped %v; want 2998 of 3000 pending, 2 excluded", r.Counts, r.Skipped)
	}
	if e := r.SkipExamples[campaign.SkipExcluded]; e.Row != 7 || e.Line != 8 {
		t.Errorf("the example of an excluded row: %+v, want row 7, line 8", e)
	}
}
