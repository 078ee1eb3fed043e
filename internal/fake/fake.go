// Package fake is the plumbing the sandboxes share: fates drawn from a
// hash, so that a seed gives the same outcomes whatever the order of
// requests, and the latency of an answer. Only fakes import it.
package fake

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// Draws returns the uniform draws in [0, 1) of one request's fate, by
// index: all of them follow from a hash of seed, the keys (a recipient, a
// row's reference) and the attempt n, and nothing else, so concurrency
// and the order of unrelated requests cannot change them.
func Draws(seed int64, keys []string, n int) func(i uint64) float64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
	}
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
	return Stream(h.Sum64())
}

// Stream is the sequence of uniform draws in [0, 1) that h seeds.
func Stream(h uint64) func(i uint64) float64 {
	return func(i uint64) float64 {
		return float64(splitmix64(h+i*0x9e3779b97f4a7c15)>>11) / (1 << 53)
	}
}

// Mix is splitmix64's finalizer: a well-spread 64 bits of x, for the IDs
// a sandbox makes up.
func Mix(x uint64) uint64 { return splitmix64(x) }

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Latency draws an answer's delay: d ± jitter, uniform, never below 0.
// It uses the global generator: delays are not part of a message's fate.
func Latency(d, jitter time.Duration) time.Duration {
	if jitter > 0 {
		d += time.Duration((2*rand.Float64() - 1) * float64(jitter))
	}
	return max(d, 0)
}

// LongestLatency is the most Latency can draw.
func LongestLatency(d, jitter time.Duration) time.Duration {
	return max(d+max(jitter, 0), 0)
}
