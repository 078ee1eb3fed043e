package listen

import (
	"math"
	"syscall"
)

// fdLimit is the process's limit on open files (its soft RLIMIT_NOFILE,
// which Go raises to the hard limit at start), or 0 if it is unknown or
// unlimited. A listener keeps at most half of it, so that a flood of
// connections leaves the other half to what the process does (a run's
// sends, its checkpoint, its logs).
func fdLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > math.MaxInt32 {
		return 0
	}
	return int(r.Cur)
}
