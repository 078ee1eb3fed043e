package bench

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain gives every bulksend the benchmarks start an operator ledger
// of their own: the user's would skip the rows it holds opt-outs for (a
// rehearsal's reconcile puts the sandbox's stops there) and carry limits
// and counts from one benchmark to the next.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bulksend-bench-")
	if err != nil {
		panic(err)
	}
	os.Setenv("BULKSEND_LEDGER", filepath.Join(dir, "ledger.db"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
