package cli

import (
	"database/sql"
	"fmt"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// sqlite FILE SQL runs SQL on the SQLite database FILE (made if absent),
// without bulksend's store, and prints the rows it returns, one per line,
// tab-separated: to make another program's database, or to look into one.
func cmdSQLite(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: sqlite FILE SQL")
	}
	db, err := sql.Open("sqlite3", ts.MkAbs(args[0]))
	ts.Check(err)
	defer db.Close()
	rows, err := db.Query(args[1])
	ts.Check(err)
	defer rows.Close()
	cols, err := rows.Columns()
	ts.Check(err)
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		ts.Check(rows.Scan(ptrs...))
		out := make([]string, len(vals))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			out[i] = fmt.Sprint(v)
		}
		fmt.Fprintln(ts.Stdout(), strings.Join(out, "\t"))
	}
	ts.Check(rows.Err())
}
