package enginetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
)

// Open makes a checkpoint holding rows, all pending and due, and returns it
// with a Probe that reads it back.
type Open func(t *testing.T, rows []Row) (engine.Checkpoint, Probe)

// Probe reads a checkpoint's rows back, for the suite's checks: Memory is
// one. State need only fill Status, Attempts, MessageID, Code, Title and
// Throttles.
type Probe interface {
	Counts() campaign.Counts
	State(row int64) (State, bool)
}

// Rows returns n rows of sender, numbered from first, with two parameters.
func Rows(first int64, n int, sender string) []Row {
	out := make([]Row, n)
	for i := range out {
		row := first + int64(i)
		out[i] = Row{Row: row, Phone: fmt.Sprintf("+4477009%05d", row), Sender: sender, Params: []string{"p", fmt.Sprint(row)}}
	}
	return out
}

// CheckpointSuite runs the tests every engine.Checkpoint must pass, the
// contract the engine relies on, against the checkpoints open makes.
func CheckpointSuite(t *testing.T, open Open) {
	ctx := context.Background()
	// Whole milliseconds: the store keeps instants at that precision.
	now := time.UnixMilli(1_750_000_000_000)

	claim := func(t *testing.T, cp engine.Checkpoint, sender string, at time.Time, limit int) []engine.Job {
		t.Helper()
		jobs, err := cp.Claim(ctx, sender, at, limit)
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	rowsOf := func(jobs []engine.Job) string {
		var rows []int64
		for _, j := range jobs {
			rows = append(rows, j.Row)
		}
		return fmt.Sprint(rows)
	}
	record := func(t *testing.T, cp engine.Checkpoint, rs ...engine.Result) {
		t.Helper()
		if err := cp.Record(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("claim takes due rows of one sender in row order and marks them sending", func(t *testing.T) {
		cp, probe := open(t, append(Rows(1, 5, "A"), Rows(6, 2, "B")...))
		jobs := claim(t, cp, "A", now, 3)
		if got := rowsOf(jobs); got != "[1 2 3]" {
			t.Fatalf("claimed rows %s, want [1 2 3]", got)
		}
		j := jobs[1]
		if j.Phone != "+447700900002" || j.Sender != "A" || fmt.Sprint(j.Params) != "[p 2]" || j.Attempts != 1 {
			t.Fatalf("job = %+v", j)
		}
		if c := probe.Counts(); c.Sending != 3 || c.Pending != 4 || c.Total != 7 {
			t.Fatalf("counts after claim = %+v", c)
		}
		if got := rowsOf(claim(t, cp, "A", now, 10)); got != "[4 5]" {
			t.Fatalf("second claim %s, want [4 5]: a claimed row is not claimed again", got)
		}
		if got := rowsOf(claim(t, cp, "A", now, 10)); got != "[]" {
			t.Fatalf("third claim %s, want none", got)
		}
	})

	t.Run("each outcome leaves its row in its state", func(t *testing.T) {
		cp, probe := open(t, Rows(1, 5, "A"))
		claim(t, cp, "A", now, 5)
		record(t, cp,
			engine.Result{Row: 1, Outcome: engine.OutcomeSent, MessageID: "wamid.1", At: now},
			engine.Result{Row: 2, Outcome: engine.OutcomeFailed, Code: 131026, Title: "Message undeliverable", At: now},
			engine.Result{Row: 3, Outcome: engine.OutcomeRetry, Code: 131000, Title: "Something went wrong", NextAt: now.Add(time.Hour), At: now},
			engine.Result{Row: 4, Outcome: engine.OutcomeInDoubt, Title: "timeout", At: now},
			engine.Result{Row: 5, Outcome: engine.OutcomeRelease, NextAt: now, At: now},
		)
		want := campaign.Counts{Total: 5, Sent: 1, Failed: 1, Pending: 2, InDoubt: 1}
		if c := probe.Counts(); c != want {
			t.Fatalf("counts = %+v, want %+v", c, want)
		}
		for _, w := range []State{
			{Row: Row{Row: 1}, Status: campaign.Sent, Attempts: 1, MessageID: "wamid.1"},
			{Row: Row{Row: 2}, Status: campaign.Failed, Attempts: 1, Code: 131026, Title: "Message undeliverable"},
			{Row: Row{Row: 3}, Status: campaign.Pending, Attempts: 1, Code: 131000, Title: "Something went wrong"},
			{Row: Row{Row: 4}, Status: campaign.InDoubt, Attempts: 1, Title: "timeout"},
			{Row: Row{Row: 5}, Status: campaign.Pending, Attempts: 0},
		} {
			got, ok := probe.State(w.Row.Row)
			if !ok || got.Status != w.Status || got.Attempts != w.Attempts || got.MessageID != w.MessageID || got.Code != w.Code || got.Title != w.Title {
				t.Errorf("row %d = %s, %d attempts, %q #%d %q; want %s, %d, %q #%d %q", w.Row.Row,
					got.Status, got.Attempts, got.MessageID, got.Code, got.Title, w.Status, w.Attempts, w.MessageID, w.Code, w.Title)
			}
		}
		// Only the released row is due now; the retry waits an hour.
		jobs := claim(t, cp, "A", now, 10)
		if rowsOf(jobs) != "[5]" || jobs[0].Attempts != 1 {
			t.Fatalf("claim = %+v, want row 5 on its first attempt (a release spends none)", jobs)
		}
		jobs = claim(t, cp, "A", now.Add(time.Hour), 10)
		if rowsOf(jobs) != "[3]" || jobs[0].Attempts != 2 {
			t.Fatalf("claim an hour later = %+v, want row 3 on its second attempt", jobs)
		}
	})

	t.Run("a throttled try spends no attempt, counts a throttle and waits", func(t *testing.T) {
		rows := Rows(1, 2, "A")
		rows[0].Parts, rows[1].Parts = 3, 1
		cp, probe := open(t, rows)
		jobs := claim(t, cp, "A", now, 2)
		if len(jobs) != 2 || jobs[0].Cost != 3 || jobs[1].Cost != 1 || jobs[0].Throttles != 0 {
			t.Fatalf("jobs = %+v, want costs 3 and 1 (the rows' parts), no throttles", jobs)
		}
		for try := 1; try <= 2; try++ {
			record(t, cp, Throttled(1, now, now.Add(time.Duration(try)*time.Second)))
			st, _ := probe.State(1)
			if st.Status != campaign.Pending || st.Attempts != 0 || st.Throttles != try || st.Code != 429 {
				t.Fatalf("after throttle %d: %+v, want pending, 0 attempts, %d throttles, code 429", try, st, try)
			}
			if got := claim(t, cp, "A", now.Add(time.Duration(try)*time.Second-time.Millisecond), 10); len(got) != 0 {
				t.Fatalf("claimed %+v before the throttled row was due", got)
			}
			jobs = claim(t, cp, "A", now.Add(time.Duration(try)*time.Second), 10)
			if len(jobs) != 1 || jobs[0].Row != 1 || jobs[0].Throttles != try || jobs[0].Attempts != 1 || jobs[0].Cost != 3 {
				t.Fatalf("claim after throttle %d = %+v, want row 1 with %d throttles on its first attempt", try, jobs, try)
			}
		}
	})

	t.Run("a result for a row no longer sending changes nothing", func(t *testing.T) {
		cp, probe := open(t, Rows(1, 2, "A"))
		claim(t, cp, "A", now, 2)
		record(t, cp, engine.Result{Row: 1, Outcome: engine.OutcomeSent, MessageID: "wamid.1", At: now})
		record(t, cp,
			engine.Result{Row: 1, Outcome: engine.OutcomeRelease, NextAt: now, At: now},         // settled
			engine.Result{Row: 99, Outcome: engine.OutcomeSent, MessageID: "wamid.99", At: now}, // no such row
		)
		if c := probe.Counts(); c.Sent != 1 || c.Sending != 1 || c.Pending != 0 {
			t.Fatalf("counts = %+v: a late result moved a settled row", c)
		}
		if jobs := claim(t, cp, "A", now, 10); len(jobs) != 0 {
			t.Fatalf("claim = %+v, want none", jobs)
		}
	})

	t.Run("claims follow due time, then row", func(t *testing.T) {
		cp, _ := open(t, Rows(1, 4, "A"))
		claim(t, cp, "A", now, 4)
		record(t, cp,
			engine.Result{Row: 1, Outcome: engine.OutcomeRetry, NextAt: now.Add(3 * time.Second), At: now},
			engine.Result{Row: 2, Outcome: engine.OutcomeRetry, NextAt: now.Add(time.Second), At: now},
			engine.Result{Row: 3, Outcome: engine.OutcomeRelease, NextAt: now.Add(time.Second), At: now},
			engine.Result{Row: 4, Outcome: engine.OutcomeRetry, NextAt: now.Add(2 * time.Second), At: now},
		)
		if got := rowsOf(claim(t, cp, "A", now.Add(5*time.Second), 10)); got != "[2 3 4 1]" {
			t.Fatalf("claim order %s, want [2 3 4 1]", got)
		}
	})

	t.Run("next due", func(t *testing.T) {
		cp, _ := open(t, append(Rows(1, 2, "A"), Rows(3, 1, "B")...))
		if _, ok, err := cp.NextDue(ctx, "C"); err != nil || ok {
			t.Fatalf("next due of a sender without rows: ok %v, %v", ok, err)
		}
		claim(t, cp, "A", now, 2)
		record(t, cp,
			engine.Result{Row: 1, Outcome: engine.OutcomeRetry, NextAt: now.Add(time.Minute), At: now},
			engine.Result{Row: 2, Outcome: engine.OutcomeRetry, NextAt: now.Add(time.Hour), At: now},
		)
		due, ok, err := cp.NextDue(ctx, "A")
		if err != nil || !ok || !due.Equal(now.Add(time.Minute)) {
			t.Fatalf("next due of A = %v %v %v, want %v", due, ok, err, now.Add(time.Minute))
		}
		due, ok, err = cp.NextDue(ctx, "")
		if err != nil || !ok || due.After(now) {
			t.Fatalf("next due of any = %v %v %v: B's row is due already", due, ok, err)
		}
		claim(t, cp, "B", now, 1)
		record(t, cp, engine.Result{Row: 3, Outcome: engine.OutcomeSent, MessageID: "w3", At: now})
		if _, ok, _ := cp.NextDue(ctx, "B"); ok {
			t.Fatal("B has nothing pending but NextDue found a row")
		}
	})

	t.Run("concurrent claims never hand out a row twice", func(t *testing.T) {
		const perSender = 300
		senders := []string{"A", "B", "C"}
		var rows []Row
		for i, s := range senders {
			rows = append(rows, Rows(int64(i*perSender+1), perSender, s)...)
		}
		cp, probe := open(t, rows)
		var mu sync.Mutex
		seen := map[int64]int{}
		var wg sync.WaitGroup
		errs := make(chan error, 2*len(senders))
		for _, s := range senders {
			for range 2 { // two claimers per sender, as a resumed run could race
				wg.Go(func() {
					for {
						jobs, err := cp.Claim(ctx, s, now, 7)
						if err != nil {
							errs <- err
							return
						}
						if len(jobs) == 0 {
							return
						}
						res := make([]engine.Result, len(jobs))
						for i, j := range jobs {
							res[i] = engine.Result{Row: j.Row, Outcome: engine.OutcomeSent, MessageID: fmt.Sprint("w", j.Row), At: now}
						}
						if err := cp.Record(ctx, res); err != nil {
							errs <- err
							return
						}
						mu.Lock()
						for _, j := range jobs {
							seen[j.Row]++
						}
						mu.Unlock()
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for row, n := range seen {
			if n != 1 {
				t.Errorf("row %d claimed %d times", row, n)
			}
		}
		if c := probe.Counts(); c.Sent != int64(len(rows)) || len(seen) != len(rows) {
			t.Fatalf("counts = %+v, %d rows claimed; want all %d sent once", c, len(seen), len(rows))
		}
	})
}

// Throttled is a throttled try of row at at, due again at next.
func Throttled(row int64, at, next time.Time) engine.Result {
	return engine.Result{Row: row, Outcome: engine.OutcomeThrottled, Code: 429, Title: "throttled", NextAt: next, At: at}
}
