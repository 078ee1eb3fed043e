package reconcile

import (
	"math/bits"
	"slices"
)

// blocks is an append-only list kept in blocks of blockSize: growing it
// never copies what it holds, and reset keeps the blocks for the next
// batch. Its zero value is empty.
type blocks[T any] struct {
	b [][]T
	n int32
}

const blockSize = 4096

func (l *blocks[T]) at(i int32) *T { return &l.b[i/blockSize][i%blockSize] }

// push appends v and returns its index.
func (l *blocks[T]) push(v T) int32 {
	if int(l.n) == len(l.b)*blockSize {
		l.b = append(l.b, make([]T, blockSize))
	}
	i := l.n
	l.n++
	*l.at(i) = v
	return i
}

func (l *blocks[T]) reset() { l.n = 0 }

// bitset is a set of row numbers.
type bitset []uint64

func (s *bitset) set(row int64) {
	if row < 0 {
		return
	}
	i := int(row / 64)
	if i >= len(*s) {
		*s = slices.Grow(*s, i+1-len(*s))[:i+1]
	}
	(*s)[i] |= 1 << (row % 64)
}

func (s bitset) count() int64 {
	var n int
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return int64(n)
}
