package cli

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/store"
)

// TestStatusWatch: not on a terminal, --watch writes a line of counts each
// interval (with --json an object per line) until interrupted, then ends
// without error.
func TestStatusWatch(t *testing.T) {
	db := filepath.Join(t.TempDir(), "c.bulksend.db")
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if _, err := st.Import(context.Background(), func() (store.Row, error) {
		if n == 3 {
			return store.Row{}, io.EOF
		}
		n++
		return store.Row{Row: int64(n), Line: n + 1, Phone: "+44770090000" + string(rune('0'+n)), Sender: "1"}, nil
	}, func() store.Settings { return store.Settings{CampaignID: "c1", Template: "t", MaxAttempts: 5} }); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, tc := range []struct {
		json bool
		line *regexp.Regexp
	}{
		{false, regexp.MustCompile(`^\d{4}-\d\d-\d\dT\S+ 3 rows = 0 sent .* \+ 3 pending \+ 0 sending \+ 0 in doubt$`)},
		{true, regexp.MustCompile(`^\{.*"total":3,"pending":3,.*\}$`)},
	} {
		// The watch is stopped once it has written three views, however
		// long a loaded machine takes to write them.
		ctx, cancel := context.WithCancel(context.Background())
		out := &viewCounter{views: 3, done: cancel}
		ios := &IO{In: strings.NewReader(""), Out: out, Err: io.Discard, Getenv: func(string) string { return "" }, Abort: func(int) {}}
		err := runStatus(ctx, ios, &statusOptions{db: db, watch: true, json: tc.json, interval: 100 * time.Millisecond})
		cancel()
		if err != nil {
			t.Fatalf("json %v: %v", tc.json, err)
		}
		lines := strings.Split(strings.TrimSpace(out.b.String()), "\n")
		if len(lines) < 3 {
			t.Fatalf("json %v: %d views, want 3 or more:\n%s", tc.json, len(lines), out.b.String())
		}
		for _, l := range lines {
			if !tc.line.MatchString(l) {
				t.Fatalf("json %v: line %q does not match %s", tc.json, l, tc.line)
			}
		}
	}
	var out bytes.Buffer
	ios := &IO{Out: &out, Err: io.Discard, Getenv: func(string) string { return "" }, Abort: func(int) {}}
	if err := runStatus(context.Background(), ios, &statusOptions{db: db, watch: true, interval: time.Millisecond}); err == nil || !strings.Contains(err.Error(), "invalid --interval") {
		t.Fatalf("--interval 1ms: %v, want refused", err)
	}
}

// viewCounter is a watch's output: after views writes it calls done.
type viewCounter struct {
	b     bytes.Buffer
	views int
	done  func()
}

func (v *viewCounter) Write(p []byte) (int, error) {
	n, err := v.b.Write(p)
	if v.views--; v.views == 0 {
		v.done()
	}
	return n, err
}
