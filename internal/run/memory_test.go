package run

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestImportMemory: the limit an import sets grows with its rows and is
// put back after; a limit set before (GOMEMLIMIT) is never touched.
func TestImportMemory(t *testing.T) {
	limit := func() int64 { return debug.SetMemoryLimit(-1) }
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))

	m := limitImportMemory()
	if got := limit(); got != importMemoryBase {
		t.Fatalf("limit at the start %d, want %d", got, importMemoryBase)
	}
	m.rows(importMemoryEvery - 1)
	if got := limit(); got != importMemoryBase {
		t.Fatalf("limit raised between two steps: %d", got)
	}
	m.rows(4 * importMemoryEvery)
	if want := int64(importMemoryBase + importMemoryPerRow*4*importMemoryEvery); limit() != want {
		t.Fatalf("limit after %d rows %d, want %d", 4*importMemoryEvery, limit(), want)
	}
	m.restore()
	if got := limit(); got != math.MaxInt64 {
		t.Fatalf("limit after the import %d, want none", got)
	}

	debug.SetMemoryLimit(1 << 30) // as GOMEMLIMIT=1GiB sets it
	m = limitImportMemory()
	m.rows(importMemoryEvery)
	m.restore()
	if got := limit(); got != 1<<30 {
		t.Fatalf("the operator's limit became %d", got)
	}
}
