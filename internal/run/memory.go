package run

import (
	"math"
	"runtime/debug"
)

// An import streams: its live heap is a few MB and 4 bytes a row (the
// phones' fingerprints, see store's dupFinder). Left to GOGC alone, the
// collector lets the heap grow to twice that and gives freed memory back
// to the system slowly: a dry run of 1M rows peaked at 65 MB of RSS, of
// which 30 MB are the binary's own pages. During an import a soft memory
// limit holds it closer; the limit grows with the rows, so that a file of
// millions of rows never makes the collector run without pause, and a
// limit the operator set (GOMEMLIMIT) is left alone.
const (
	importMemoryBase   = 20 << 20
	importMemoryPerRow = 8
	importMemoryEvery  = 1 << 16 // rows between two raises of the limit
)

// importMemory is the soft limit of one import.
type importMemory struct {
	was int64
	on  bool
}

func limitImportMemory() *importMemory {
	was := debug.SetMemoryLimit(-1)
	if was != math.MaxInt64 {
		return &importMemory{} // GOMEMLIMIT, or a caller's own limit
	}
	m := &importMemory{was: was, on: true}
	m.rows(0)
	return m
}

// rows raises the limit for an import that has read n rows.
func (m *importMemory) rows(n int64) {
	if m.on && n%importMemoryEvery == 0 {
		debug.SetMemoryLimit(importMemoryBase + importMemoryPerRow*n)
	}
}

// restore puts back the limit there was.
func (m *importMemory) restore() {
	if m.on {
		debug.SetMemoryLimit(m.was)
	}
}
