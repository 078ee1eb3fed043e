package reconcile

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestExp(t *testing.T) {
	if os.Getenv("EXP") == "" {
		t.Skip()
	}
	tmpl, _, _ := benchSetup(&testing.B{})
	const n = 20000
	now := time.Now().UnixMilli()
	run := func(name string, f func(tx *sql.Tx)) {
		best := time.Hour
		for range 5 {
			p := filepath.Join(t.TempDir(), "x.db")
			os.WriteFile(p, tmpl, 0o600)
			db, _ := sql.Open("sqlite3", "file:"+p+"?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000&_txlock=immediate")
			db.SetMaxOpenConns(1)
			db.Exec("SELECT COUNT(*) FROM recipients")
			c0 := cpu()
			tx, _ := db.Begin()
			f(tx)
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if c := cpu() - c0; c < best {
				best = c
			}
			db.Close()
		}
		t.Logf("%-20s cpu %5.2fµs/row", name, float64(best.Nanoseconds())/1000/n)
	}
	run("narrow per row", func(tx *sql.Tx) {
		up, _ := tx.Prepare(`UPDATE recipients SET status = ?2, sent_at = ?3, delivered_at = ?4, read_at = ?5, updated_at = ?6 WHERE row = ?1`)
		for r := 1; r <= n; r++ {
			if _, err := up.Exec(int64(r), "read", sql.NullInt64{Int64: now, Valid: true}, sql.NullInt64{Int64: now, Valid: true}, sql.NullInt64{Int64: now, Valid: true}, now); err != nil {
				t.Fatal(err)
			}
		}
	})
	for _, k := range []int{16, 64} {
		run(fmt.Sprintf("narrow values %d", k), func(tx *sql.Tx) {
			vals := strings.TrimSuffix(strings.Repeat("(?,?,?,?,?),", k), ",")
			up, err := tx.Prepare(`UPDATE recipients SET status = v.column2, sent_at = v.column3, delivered_at = v.column4, read_at = v.column5, updated_at = ?
				FROM (VALUES ` + vals + `) AS v WHERE recipients.row = v.column1`)
			if err != nil {
				t.Fatal(err)
			}
			args := make([]any, 0, 5*k+1)
			for r := 1; r+k-1 <= n; r += k {
				args = append(args[:0], now)
				for i := r; i < r+k; i++ {
					args = append(args, int64(i), "read", now, now, now)
				}
				if _, err := up.Exec(args...); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
