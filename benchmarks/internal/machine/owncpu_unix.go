//go:build unix

package machine

import (
	"syscall"
	"time"
)

// ownCPU returns the user and system time of this process and of its
// children that have been waited for (and theirs, recursively).
func ownCPU() (time.Duration, bool) {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			return 0, false
		}
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total, true
}
