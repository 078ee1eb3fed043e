package cli

import (
	"os"

	"github.com/rogpeppe/go-internal/testscript"
)

// damage FILE overwrites the header of every page of the SQLite file
// FILE but the first: the file still opens as SQLite, its tables do not
// read.
func cmdDamage(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: damage FILE")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	if len(b) < 2*4096 {
		ts.Fatalf("damage: %s has %d bytes, fewer than two pages", args[0], len(b))
	}
	for i := 4096; i+16 <= len(b); i += 4096 {
		for j := i; j < i+16; j++ {
			b[j] = 0xA5
		}
	}
	ts.Check(os.WriteFile(path, b, 0o600))
}
