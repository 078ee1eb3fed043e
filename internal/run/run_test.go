package run_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/run"
	"github.com/bulksend/bulksend/internal/store"
)

// channel is a run.Channel of a made-up provider: its senders are
// "s1"… and its body has one placeholder column; a row whose first cell is
// "bad" is skipped. It counts what the run asked of it.
type channel struct {
	mu       sync.Mutex
	binds    int
	resumes  int
	preflit  int
	sent     []campaign.Message
	pinned   string // this run's value of the channel's one pinned setting
	preflErr error
}

func (c *channel) Name() campaign.Channel { return "test" }

func (c *channel) CheckSender(id string) error {
	if !strings.HasPrefix(id, "s") {
		return fmt.Errorf("%q is not a sender", id)
	}
	return nil
}

func (c *channel) Bind(context.Context, []string) (run.Binding, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.binds++
	return binding{pinned: c.pinned}, nil
}

type binding struct{ pinned string }

func (b binding) Pin(s *store.Settings) { s.Template = b.pinned }

func (binding) Row(r *store.Row, cells []string) {
	if len(cells) > 0 && cells[0] == "bad" {
		r.Skip, r.SkipKind = "bad cell", campaign.SkipParameter
	}
	if len(cells) > 0 && cells[0] == "three parts" {
		r.Parts = 3
	}
}

func (c *channel) Pinned(s store.Settings) []run.Pinned {
	return []run.Pinned{{Setting: "template", Was: s.Template, Now: c.pinned}}
}

func (c *channel) Resume(context.Context, store.Settings) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resumes++
	return nil
}

func (c *channel) Preflight(context.Context, *run.Campaign) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.preflit++
	return c.preflErr
}

func (c *channel) Sender(context.Context, *run.Campaign) (*run.Sender, error) {
	return &run.Sender{Sender: c, Name: "test provider"}, nil
}

func (c *channel) Send(_ context.Context, m campaign.Message) (campaign.Receipt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(m.Params) > 0 && m.Params[0] == "stops marketing" {
		return campaign.Receipt{}, &campaign.SendError{Class: campaign.Permanent, Code: 131050, Title: "stopped marketing", Reason: campaign.FailStoppedMarketing}
	}
	c.sent = append(c.sent, m)
	return campaign.Receipt{ID: fmt.Sprint("id.", m.Row)}, nil
}

// utility is the channel of a campaign that is not marketing.
type utility struct{ *channel }

func (utility) Marketing(store.Settings) bool { return false }

// campaignFile writes a CSV of n recipients (the third is "bad", the
// fourth from a sender that is not one) and returns its path.
func campaignFile(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("phone,from,name\n")
	for i := range n {
		from, name := "", fmt.Sprint("Name ", i)
		if i == 2 {
			name = "bad"
		}
		if i == 3 {
			from = "x/../y"
		}
		fmt.Fprintf(&b, "+1201555%04d,%s,%s\n", 100+i, from, name)
	}
	path := filepath.Join(t.TempDir(), "c.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func options(csv string) run.Options {
	return run.Options{CSV: csv, DB: strings.TrimSuffix(csv, ".csv") + ".bulksend.db", From: []string{"s1", "s2"},
		Rate: 1000, MaxAttempts: 3, PhoneColumn: "phone", InDoubt: campaign.Hold}
}

func TestFirstRunImportsAndSends(t *testing.T) {
	ctx := context.Background()
	o := options(campaignFile(t, 10))
	ch := &channel{pinned: "v1"}
	c, err := run.Open(ctx, o, ch)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ch.binds != 1 || ch.resumes != 0 || c.Settings.Template != "v1" || c.Binding() == nil {
		t.Fatalf("first run: %d binds, %d resumes, pinned %q", ch.binds, ch.resumes, c.Settings.Template)
	}
	var started bool
	res, err := c.Run(ctx, ctx, run.Hooks{Started: func(*engine.Engine, time.Time, campaign.Counts) func() { started = true; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	out := res.Outcome
	if res.Plan != nil || out == nil || !started || ch.preflit != 1 {
		t.Fatalf("result %+v, started %v, %d preflights", res, started, ch.preflit)
	}
	if c := out.Counts; c.Total != 10 || c.Sent != 8 || c.Skipped != 2 || out.Unfinished() {
		t.Fatalf("counts %+v: want 8 sent, the bad cell and the bad sender skipped", c)
	}
	for _, m := range ch.sent {
		if m.Ref.Campaign != c.Settings.CampaignID || m.Ref.Row != m.Row {
			t.Errorf("message of row %d carries %+v", m.Row, m.Ref)
		}
	}
}

func TestResumeComparesPinnedSettings(t *testing.T) {
	ctx := context.Background()
	csv := campaignFile(t, 5)
	c, err := run.Open(ctx, options(csv), &channel{pinned: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	given := func(names ...string) func(string) bool {
		return func(s string) bool { return strings.Contains(strings.Join(names, ","), s) }
	}
	for _, tc := range []struct {
		name  string
		o     func(o *run.Options)
		ch    *channel
		check func(t *testing.T, c *run.Campaign, err error)
	}{
		{"the channel's pinned setting given otherwise", func(o *run.Options) { o.Given = given("template") }, &channel{pinned: "v2"},
			func(t *testing.T, _ *run.Campaign, err error) {
				var ce *run.ChangedError
				if !errors.As(err, &ce) || ce.Setting != "template" || ce.Was != "v1" || ce.Now != "v2" {
					t.Errorf("err = %v, want a ChangedError of template v1 → v2", err)
				}
			}},
		{"the channel's pinned setting not given", func(o *run.Options) {}, &channel{pinned: "v2"},
			func(t *testing.T, c *run.Campaign, err error) {
				if err != nil || c.Settings.Template != "v1" {
					t.Errorf("err = %v, template %q: an unchanged flag takes the stored value", err, c.Settings.Template)
				}
			}},
		{"the senders given otherwise", func(o *run.Options) { o.Given, o.From = given("from"), []string{"s9"} }, &channel{pinned: "v1"},
			func(t *testing.T, _ *run.Campaign, err error) {
				var ce *run.ChangedError
				if !errors.As(err, &ce) || ce.Setting != "from" {
					t.Errorf("err = %v, want a ChangedError of from", err)
				}
			}},
		{"the rate given otherwise is saved", func(o *run.Options) { o.Given, o.Rate = given("rate"), 50 }, &channel{pinned: "v1"},
			func(t *testing.T, c *run.Campaign, err error) {
				if err != nil || c.Settings.Rate != 50 {
					t.Errorf("err = %v, rate %v, want 50", err, c.Settings.Rate)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options(csv)
			tc.o(&o)
			c, err := run.Open(ctx, o, tc.ch)
			if c != nil {
				defer c.Close()
			}
			tc.check(t, c, err)
			if err == nil && (tc.ch.binds != 0 || tc.ch.resumes != 1) {
				t.Errorf("a resume bound %d times and resumed %d, want 0 and 1", tc.ch.binds, tc.ch.resumes)
			}
		})
	}
	// A CSV that changed is refused.
	if err := os.WriteFile(csv, []byte("phone\n+12015550100\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := run.Open(ctx, options(csv), &channel{pinned: "v1"}); !errors.Is(err, run.ErrCSVChanged) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("a changed CSV: %v, want ErrCSVChanged", err)
	}
}

// A dry run of a new campaign plans from a temporary checkpoint it
// removes; one that cannot read its senders still plans, with the error.
func TestDryRunPlans(t *testing.T) {
	ctx := context.Background()
	o := options(campaignFile(t, 6))
	o.DryRun, o.Rate = true, 10
	offline := errors.New("preflight: the API cannot be reached")
	ch := &channel{pinned: "v1", preflErr: offline}
	c, err := run.Open(ctx, o, ch)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(ctx, ctx, run.Hooks{})
	if !errors.Is(err, offline) || res.Plan == nil || res.Outcome != nil {
		t.Fatalf("Run = %+v, %v; want the plan and the preflight's error", res, err)
	}
	p := res.Plan
	if p.Breakdown.Counts.Pending != 4 || len(ch.sent) != 0 {
		t.Errorf("plan: %d pending, %d sent; want 4 pending, nothing sent", p.Breakdown.Counts.Pending, len(ch.sent))
	}
	if d := p.Duration(98); d < 10*time.Second || d > 10100*time.Millisecond {
		t.Errorf("98 messages at 10/s take %v, want about 10 s (the pacer keeps 9.8/s)", d)
	}
	path := p.Store.Path()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(o.DB); err == nil {
		t.Error("a dry run of a new campaign made its checkpoint")
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("the dry run's temporary checkpoint %s was left", path)
	}
}

func TestNoSender(t *testing.T) {
	o := options(campaignFile(t, 3))
	path := filepath.Join(filepath.Dir(o.CSV), "nofrom.csv")
	os.WriteFile(path, []byte("phone,name\n+12015550100,Ana\n"), 0o600)
	o.CSV, o.From = path, nil
	if c, err := run.Open(context.Background(), o, &channel{}); !errors.Is(err, run.ErrNoSender) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("no from column and no senders: %v, want ErrNoSender", err)
	}
}

// The plan's pending parts per sender: the pending rows when every row
// is one part (taken from the breakdown), their parts when some row has
// several; either way what the checkpoint holds.
func TestPlanPendingParts(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		cells []string
		want  int64
	}{
		{"one part each", []string{"a", "b", "c"}, 3},
		{"one of three parts", []string{"a", "three parts", "c"}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := "phone,name\n"
			for i, c := range tc.cells {
				body += fmt.Sprintf("+1201555%04d,%s\n", 100+i, c)
			}
			path := filepath.Join(t.TempDir(), "c.csv")
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			o := options(path)
			o.From, o.DryRun, o.Rate = []string{"s1"}, true, 10
			res, done := runOnce(t, o, &channel{})
			defer done()
			stored, err := res.Plan.Store.PendingParts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Plan.Pending; got["s1"] != tc.want || len(got) != 1 || stored["s1"] != tc.want {
				t.Fatalf("pending %v, the checkpoint's %v; want s1: %d", got, stored, tc.want)
			}
		})
	}
}

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
