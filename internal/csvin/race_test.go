//go:build race

package csvin

// raceEnabled lets the slowest single-goroutine checks (phonenumbers' Parse
// on every one of 100,000 numbers) sample instead under the race detector,
// which slows them tenfold and has nothing to find in them.
const raceEnabled = true
