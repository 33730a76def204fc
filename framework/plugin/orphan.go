package plugin

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

// The plugin side of "nothing outlives the host". The host starts each
// plugin leading a process group of its own, with SIGTERM as its
// parent-death signal (Linux); the plugin exits, taking its group
// (whatever it forked) with it, when
//   - it gets SIGTERM (the host died, even by SIGKILL, or someone asks),
//   - its parent changes (the host died where there is no parent-death
//     signal, or it was lost),
//   - its host closes the data path.

// hostGone ends the plugin, and its process group when it leads one.
func hostGone(code int) {
	if leadsGroup() {
		killGroup(syscall.Getpid()) // SIGKILL, this process included
	}
	os.Exit(code)
}

// watchHost runs hostGone when the host goes away.
func watchHost() {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	ppid := os.Getppid()
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		for {
			select {
			case <-term:
				hostGone(143)
			case <-tick.C:
				if os.Getppid() != ppid {
					hostGone(0)
				}
			}
		}
	}()
}
