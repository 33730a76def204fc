//go:build unix

package sim

import (
	"syscall"
	"time"
)

// cpuTime is the process's CPU time (user and system, the garbage
// collector's included): on a machine shared with other jobs it moves
// far less than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
