package reconcile_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/reconcile"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp/webhook"
)

// BenchmarkReconcile applies a 60,000-status log (sent, delivered and read
// for each row, 5% of them replaced by duplicates of others, shuffled) to a
// 20,000-row checkpoint whose rows were sent (5% in doubt), and reports
// statuses per second end to end: decoding the log, matching, writing the
// checkpoint and closing it. The target is 200,000 events/s. events/cpu-s
// is the same count per second of CPU time, steadier on a busy machine.
//
//	go test -run '^$' -bench Reconcile -benchtime 20x ./internal/reconcile
//	BENCH_BATCH=10000 go test -run '^$' -bench Reconcile -benchtime 20x ./internal/reconcile
func BenchmarkReconcile(b *testing.B) {
	const target = 200_000
	tmpl, log, events := benchSetup(b)
	ctx := context.Background()
	dir := b.TempDir()
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration // process CPU time in Apply: the machine may be busy with other work
	for i := range b.N {
		b.StopTimer()
		path := filepath.Join(dir, fmt.Sprintf("run%d.db", i))
		if err := os.WriteFile(path, tmpl, 0o600); err != nil {
			b.Fatal(err)
		}
		st, err := store.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		c0 := cpuTime()
		sum, err := apply(ctx, st, reconcile.Options{Batch: benchBatch, Now: func() time.Time { return at(100) }}, source(log))
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += cpuTime() - c0
		if sum.Events != int64(events) || sum.Matched != sum.Events || sum.Changed < benchRows*9/10 {
			b.Fatalf("summary %+v", sum)
		}
		os.Remove(path)
		b.StartTimer()
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events)*float64(b.N)/cpu.Seconds(), "events/cpu-s")
	b.ReportMetric(target, "target-events/s")
}

// cpuTime is the CPU time the process has used, in user and system mode.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchBatch is reconcile.Options.Batch: 0 (DefaultBatch) unless BENCH_BATCH says
// otherwise, to compare batch sizes.
var benchBatch, _ = strconv.Atoi(os.Getenv("BENCH_BATCH"))

const benchRows = 20_000

// bench is the checkpoint and log of BenchmarkReconcile, built once per
// process: building the checkpoint takes longer than reconciling it.
var bench struct {
	once   sync.Once
	tmpl   []byte // the checkpoint file
	log    []byte
	events int
	err    error
}

func benchSetup(b *testing.B) (tmpl, log []byte, events int) {
	bench.once.Do(func() { bench.tmpl, bench.log, bench.events, bench.err = buildBench() })
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.tmpl, bench.log, bench.events
}

func buildBench() (tmpl, log []byte, events int, err error) {
	const rows = benchRows
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "reconcile-bench")
	if err != nil {
		return nil, nil, 0, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "template.db")
	st, err := store.Open(path)
	if err != nil {
		return nil, nil, 0, err
	}
	defer st.Close()
	n := 0
	_, err = st.Import(ctx, func() (store.Row, error) {
		if n == rows {
			return store.Row{}, io.EOF
		}
		n++
		return store.Row{Row: int64(n), Line: n + 1, Phone: fmt.Sprintf("+1555%07d", n), Sender: ourNumber, Params: []string{"Ada", "42"}}, nil
	}, func() store.Settings { return store.Settings{CampaignID: testCampaign, MaxAttempts: 3} })
	if err != nil {
		return nil, nil, 0, err
	}
	jobs, err := st.Claim(ctx, ourNumber, at(0), rows)
	if err != nil {
		return nil, nil, 0, err
	}
	wamid := func(row int64) string { return fmt.Sprintf("wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI%08dAA==", row) }
	results := make([]engine.Result, len(jobs))
	for i, j := range jobs {
		results[i] = engine.Result{Row: j.Row, Outcome: engine.OutcomeSent, MessageID: wamid(j.Row), At: at(1)}
		if j.Row%20 == 0 {
			results[i] = engine.Result{Row: j.Row, Outcome: engine.OutcomeInDoubt, Title: "context deadline exceeded", At: at(1)}
		}
	}
	if err := st.Record(ctx, results); err != nil {
		return nil, nil, 0, err
	}
	if err := st.Close(); err != nil {
		return nil, nil, 0, err
	}

	r := rand.New(rand.NewPCG(1, 1))
	var ss []webhook.Status
	for row := int64(1); row <= rows; row++ {
		for i, kind := range []string{"sent", "delivered", "read"} {
			ss = append(ss, status(kind, wamid(row), float64(2+10*i+r.IntN(5)), row))
		}
	}
	for range len(ss) / 20 { // 5% duplicates, in place of statuses lost
		ss[r.IntN(len(ss))] = ss[r.IntN(len(ss))]
	}
	r.Shuffle(len(ss), func(i, j int) { ss[i], ss[j] = ss[j], ss[i] })
	tmpl, err = os.ReadFile(path)
	return tmpl, ndjson(ss...), len(ss), err
}
