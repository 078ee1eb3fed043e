//go:build !race

package csvin

const raceEnabled = false
