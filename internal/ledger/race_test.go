package ledger

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
)

// Processes that open a ledger not made yet, all at once, all get it: the
// ones SQLite tells "database is locked" while another makes it try again.
func TestOpenNewAtOnce(t *testing.T) {
	for range 5 {
		path := filepath.Join(t.TempDir(), "ledger.db")
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := Open(context.Background(), path)
				if err == nil {
					err = l.Close()
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}
