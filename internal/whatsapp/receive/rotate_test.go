package receive_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/whatsapp/receive"
)

// TestRotationUnderLoad: 16 clients POST while the size limit rotates the
// file every few bodies and the UTC day changes halfway. Every body is in
// exactly one file; a body answered before the day changed is in a file of
// the first day, one sent after it in a file of the second; every file
// but the current one is compressed; no file is over the limit; and
// reconcile's reader reads all of them, .gz included.
func TestRotationUnderLoad(t *testing.T) {
	day1 := time.Date(2026, 12, 1, 23, 59, 59, 0, time.UTC)
	day2 := day1.Add(2 * time.Second)
	clk := &clock{t: day1}
	cfg := config(t)
	cfg.Now = clk.now
	body := statusBody(0)
	cfg.Rotate.Size = int64(10*len(body) + 5) // ten bodies a file
	r := open(t, cfg)
	url := serve(t, r)

	const clients, each = 16, 60
	const n = clients * each
	c := client(clients)
	var (
		sent     atomic.Int64
		switched atomic.Bool
		mu       sync.Mutex
		before   []string // answered before the day changed
		after    []string // sent after it
	)
	var wg sync.WaitGroup
	for w := range clients {
		wg.Go(func() {
			for j := range each {
				i := w*each + j
				late := switched.Load()
				code, err := post(c, url, statusBody(i))
				if err != nil || code != 200 {
					t.Errorf("POST %d: %d, %v", i, code, err)
					return
				}
				mu.Lock()
				if !switched.Load() {
					before = append(before, wamid(i))
				} else if late {
					after = append(after, wamid(i))
				}
				mu.Unlock()
				if sent.Add(1) == n/2 {
					mu.Lock() // no answer is filed as "before" once the clock moved
					clk.set(day2)
					switched.Store(true)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	ids := make([]string, n)
	for i := range ids {
		ids[i] = wamid(i)
	}
	k := readLog(t, cfg.Dir)
	k.once(t, ids)
	if k.counts.Invalid != 0 || k.counts.Statuses != n {
		t.Errorf("log: %d statuses, %d invalid; want %d, 0", k.counts.Statuses, k.counts.Invalid, n)
	}
	for _, tc := range []struct {
		ids []string
		day string
	}{{before, "2026-12-01"}, {after, "2026-12-02"}} {
		for _, id := range tc.ids {
			if f := k.where[id][0]; !strings.HasPrefix(f, "webhooks-"+tc.day) {
				t.Errorf("%s in %s, want a file of %s", id, f, tc.day)
			}
		}
	}
	if len(before) == 0 || len(after) == 0 {
		t.Fatalf("%d bodies answered before the day changed, %d sent after: the test did not straddle midnight", len(before), len(after))
	}

	// Every file but the last is compressed, and none is over the limit.
	var days = map[string]int{}
	for i, path := range k.files {
		name := filepath.Base(path)
		days[name[len("webhooks-"):len("webhooks-2026-12-01")]]++
		gz := strings.HasSuffix(name, ".gz")
		if last := i == len(k.files)-1; gz == last {
			t.Errorf("%s: compressed %v, want %v (only the current file stays plain)", name, gz, !last)
		}
		b, _ := os.ReadFile(path)
		if gz {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if int64(len(b)) > cfg.Rotate.Size {
			t.Errorf("%s: %d bytes, over the limit of %d", name, len(b), cfg.Rotate.Size)
		}
	}
	if days["2026-12-01"] < 2 || days["2026-12-02"] < 2 {
		t.Errorf("files by day %v: want several of each", days)
	}
	if s := r.Stats(); s.Gzipped != int64(len(k.files)-1) || s.GzipFailed != 0 {
		t.Errorf("stats %+v: want %d files compressed", s, len(k.files)-1)
	}
	for _, name := range dirNames(t, cfg.Dir) {
		if strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".jsonl") && !strings.HasSuffix(k.files[len(k.files)-1], name) {
			t.Errorf("%s left in the folder", name)
		}
	}
}

// TestQuietMidnight: with no POST after midnight, yesterday's file is
// still closed and compressed.
func TestQuietMidnight(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 1, 23, 59, 0, 0, time.UTC)}
	cfg := receive.WithTick(config(t), time.Millisecond)
	cfg.Now = clk.now
	r := open(t, cfg)
	if code, err := post(client(1), serve(t, r), statusBody(1)); err != nil || code != 200 {
		t.Fatalf("POST: %d, %v", code, err)
	}
	clk.set(clk.now().Add(2 * time.Minute))
	waitFor(t, "yesterday's file compressed", func() bool { return r.Stats().Gzipped == 1 })
	r.Close()
	if got, want := dirNames(t, cfg.Dir), []string{"receive.lock", "webhooks-2026-12-01.jsonl.gz"}; !slices.Equal(got, want) {
		t.Errorf("folder %q, want %q", got, want)
	}
}

// TestRecovery: New puts right what a crash (or an earlier Close) left in
// the folder, and appends to the day's file where it can.
func TestRecovery(t *testing.T) {
	today := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	line := func(i int) string { return string(statusBody(i)) + "\n" }
	gzipped := func(s string) string {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.String()
	}
	for _, tc := range []struct {
		name   string
		before map[string]string // file → content
		size   int64             // Rotate.Size
		after  []string          // the folder once New and Close are done (and one body POSTed)
		ids    []int             // the bodies in the log then, with the one POSTed (99)
	}{
		{
			name:   "today's file appended to",
			before: map[string]string{"webhooks-2026-12-02.jsonl": line(1)},
			after:  []string{"webhooks-2026-12-02.jsonl"},
			ids:    []int{1, 99},
		},
		{
			name:   "a partial last line cut",
			before: map[string]string{"webhooks-2026-12-02.jsonl": line(1) + line(2)[:100]},
			after:  []string{"webhooks-2026-12-02.jsonl"},
			ids:    []int{1, 99},
		},
		{
			name:   "only a partial line",
			before: map[string]string{"webhooks-2026-12-02.jsonl": line(2)[:100]},
			after:  []string{"webhooks-2026-12-02.jsonl"},
			ids:    []int{99},
		},
		{
			name:   "today's last file full: the next one",
			before: map[string]string{"webhooks-2026-12-02.jsonl.gz": gzipped(line(1)), "webhooks-2026-12-02.1.jsonl": line(2) + line(3)},
			size:   int64(len(line(2)) + 10),
			after:  []string{"webhooks-2026-12-02.1.jsonl.gz", "webhooks-2026-12-02.2.jsonl", "webhooks-2026-12-02.jsonl.gz"},
			ids:    []int{1, 2, 3, 99},
		},
		{
			name:   "today's last file compressed: the next one",
			before: map[string]string{"webhooks-2026-12-02.jsonl.gz": gzipped(line(1))},
			after:  []string{"webhooks-2026-12-02.1.jsonl", "webhooks-2026-12-02.jsonl.gz"},
			ids:    []int{1, 99},
		},
		{
			name:   "yesterday's file compressed",
			before: map[string]string{"webhooks-2026-12-01.jsonl": line(1) + line(2)},
			after:  []string{"webhooks-2026-12-01.jsonl.gz", "webhooks-2026-12-02.jsonl"},
			ids:    []int{1, 2, 99},
		},
		{
			name:   "a compression cut by a crash: done again",
			before: map[string]string{"webhooks-2026-12-01.jsonl": line(1), "webhooks-2026-12-01.jsonl.gz.tmp": gzipped(line(1))[:20]},
			after:  []string{"webhooks-2026-12-01.jsonl.gz", "webhooks-2026-12-02.jsonl"},
			ids:    []int{1, 99},
		},
		{
			name:   "a crash after compressing: the plain file removed",
			before: map[string]string{"webhooks-2026-12-01.jsonl": line(1), "webhooks-2026-12-01.jsonl.gz": gzipped(line(1))},
			after:  []string{"webhooks-2026-12-01.jsonl.gz", "webhooks-2026-12-02.jsonl"},
			ids:    []int{1, 99},
		},
		{
			name:   "an empty file of yesterday removed",
			before: map[string]string{"webhooks-2026-12-01.jsonl": ""},
			after:  []string{"webhooks-2026-12-02.jsonl"},
			ids:    []int{99},
		},
		{
			name:   "what is not the log left alone",
			before: map[string]string{"notes.txt": "x", "webhooks-2026-12-01.ndjson": "y"},
			after:  []string{"notes.txt", "webhooks-2026-12-01.ndjson", "webhooks-2026-12-02.jsonl"},
			ids:    []int{99},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(t)
			cfg.Now = func() time.Time { return today }
			cfg.Rotate.Size = tc.size
			for name, content := range tc.before {
				if err := os.WriteFile(filepath.Join(cfg.Dir, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r := open(t, cfg)
			if code, err := post(client(1), serve(t, r), statusBody(99)); err != nil || code != 200 {
				t.Fatalf("POST: %d, %v", code, err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			got := slices.DeleteFunc(dirNames(t, cfg.Dir), func(s string) bool { return s == "receive.lock" })
			if !slices.Equal(got, tc.after) {
				t.Errorf("folder %q\nwant   %q", got, tc.after)
			}
			k := readLog(t, cfg.Dir)
			var ids []string
			for _, i := range tc.ids {
				ids = append(ids, wamid(i))
			}
			k.once(t, ids)
			if k.counts.Statuses != int64(len(ids)) || k.counts.Invalid != 0 {
				t.Errorf("log: %d statuses, %d invalid; want %d, 0", k.counts.Statuses, k.counts.Invalid, len(ids))
			}
		})
	}
}
