//go:build race

package schedule

// raceEnabled lets the slowest single-goroutine checks sample instead
// under the race detector, which slows them tenfold and has nothing to
// find in them (TestConcurrentUse is what it is for).
const raceEnabled = true
