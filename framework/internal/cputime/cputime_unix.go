//go:build unix

// Package cputime reads the process's CPU time for the benchmarks: on a
// machine shared with other jobs it moves far less than wall time.
package cputime

import (
	"syscall"
	"time"
)

// Process is the process's CPU time, user and system (the garbage
// collector's included).
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
