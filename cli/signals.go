package main

import (
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/txlab/txlab/framework/plugin"
)

// interrupted is closed by the first SIGINT or SIGTERM. A run watching
// it (runAction) stops at its next event boundary, flushes the trace it
// has and ends with exitInterrupted; main then exits with the signal's
// code.
var (
	interrupted = make(chan struct{})
	signalCode  atomic.Int32 // 130 (SIGINT) or 143 (SIGTERM) once signalled
	watching    atomic.Bool  // a run watches interrupted
)

// graceTime is how long a watching run has to stop and flush (a trace
// flush to a collector may take 10 s) before the process exits anyway.
const graceTime = 15 * time.Second

// handleSignals installs the one SIGINT/SIGTERM handler. With no run
// watching, or at a second signal, or after graceTime, it stops the
// plugin processes and exits at once.
func handleSignals() {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-ch
		code := 130
		if s == syscall.SIGTERM {
			code = 143
		}
		signalCode.Store(int32(code))
		close(interrupted)
		if watching.Load() {
			select {
			case <-ch:
			case <-time.After(graceTime):
			}
		}
		plugin.Cleanup()
		fmt.Fprintln(os.Stderr, "txlab: interrupted")
		os.Exit(code)
	}()
}
