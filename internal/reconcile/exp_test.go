package reconcile

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/store"
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
	wam := make([]string, n+1)
	for i := range wam {
		wam[i] = fmt.Sprintf("wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI%08dAA==", i)
	}
	path := func() string {
		p := filepath.Join(t.TempDir(), "x.db")
		os.WriteFile(p, tmpl, 0o600)
		return p
	}
	raw := func(name string, f func(db *sql.DB)) {
		best := time.Hour
		var bw time.Duration
		for range 3 {
			db, _ := sql.Open("sqlite3", "file:"+path()+"?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000&_txlock=immediate")
			db.SetMaxOpenConns(1)
			db.Exec("SELECT COUNT(*) FROM recipients")
			w0, c0 := time.Now(), cpu()
			f(db)
			if c := cpu() - c0; c < best {
				best, bw = c, time.Since(w0)
			}
			db.Close()
		}
		t.Logf("%-28s cpu %6.2fµs/row (wall %v)", name, float64(best.Nanoseconds())/1000/n, bw)
	}
	tx := func(db *sql.DB, f func(tx *sql.Tx)) {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		f(tx)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	best := func(name string, f func(st *store.Store)) {
		b := time.Hour
		for range 3 {
			st, _ := store.Open(path())
			st.Counts(ctx)
			c0 := cpu()
			f(st)
			if c := cpu() - c0; c < b {
				b = c
			}
			st.Close()
		}
		t.Logf("%-28s cpu %6.2fµs/row", name, float64(b.Nanoseconds())/1000/n)
	}
	rows := make([]int64, n)
	for i := range rows {
		rows[i] = int64(i + 1)
	}
	best("store.States", func(st *store.Store) { st.States(ctx, rows, nil) })
	best("store.SaveStates", func(st *store.Store) {
		ss := make([]store.State, n)
		for i := range ss {
			ss[i] = store.State{Row: int64(i + 1), Status: campaign.Read, WAMID: wam[i+1], SentAt: time.UnixMilli(now), DeliveredAt: time.UnixMilli(now), ReadAt: time.UnixMilli(now)}
		}
		if err := st.SaveStates(ctx, ss, time.Now()); err != nil {
			t.Fatal(err)
		}
	})
	raw("update changed cols", func(db *sql.DB) {
		tx(db, func(tx *sql.Tx) {
			up, _ := tx.Prepare(`UPDATE recipients SET status = ?2, sent_at = ?3, delivered_at = ?4, read_at = ?5, updated_at = ?6 WHERE row = ?1`)
			for r := 1; r <= n; r++ {
				up.Exec(r, "read", now, now, now, now)
			}
		})
	})
	raw("update times only", func(db *sql.DB) {
		tx(db, func(tx *sql.Tx) {
			up, _ := tx.Prepare(`UPDATE recipients SET sent_at = ?2, delivered_at = ?3, read_at = ?4, updated_at = ?5 WHERE row = ?1`)
			for r := 1; r <= n; r++ {
				up.Exec(r, now, now, now, now)
			}
		})
	})
	for _, k := range []int{32, 128} {
		raw(fmt.Sprintf("cte %d all cols", k), func(db *sql.DB) {
			tx(db, func(tx *sql.Tx) {
				vals := strings.TrimSuffix(strings.Repeat("(?,?,?,?,?,?,?,?),", k), ",")
				up, err := tx.Prepare(`WITH v(row, status, wamid, code, title, s, d, r) AS (VALUES ` + vals + `)
			UPDATE recipients SET status = v.status, wamid = v.wamid, error_code = v.code, error_title = v.title, sent_at = v.s, delivered_at = v.d, read_at = v.r, updated_at = ?` + fmt.Sprint(8*k+1) + `
			FROM v WHERE recipients.row = v.row`)
				if err != nil {
					t.Fatal(err)
				}
				args := make([]any, 0, 8*k+1)
				for r := 1; r+k-1 <= n; r += k {
					args = args[:0]
					for i := r; i < r+k; i++ {
						args = append(args, i, "read", wam[i], nil, nil, now, now, now)
					}
					args = append(args, now)
					if _, err := up.Exec(args...); err != nil {
						t.Fatal(err)
					}
				}
			})
		})
	}
	raw("select range", func(db *sql.DB) {
		rs, _ := db.Query(`SELECT row, sender, status, attempts, attempted_at, COALESCE(wamid, ''), COALESCE(error_code, 0), COALESCE(error_title, ''), sent_at, delivered_at, read_at FROM recipients WHERE row BETWEEN ? AND ?`, 1, n)
		for rs.Next() {
			var st store.State
			var status string
			var a, b, c, d sql.NullInt64
			rs.Scan(&st.Row, &st.Sender, &status, &st.Attempts, &a, &st.WAMID, &st.Code, &st.Title, &b, &c, &d)
		}
		rs.Close()
	})
}
