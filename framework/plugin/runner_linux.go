package plugin

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// pluginProcAttr puts the plugin in a process group of its own (so its
// grandchildren can be killed with it, and a terminal's ^C reaches only
// the host, which stops the plugins itself) and asks the kernel to send
// it SIGTERM when the host dies (PR_SET_PDEATHSIG).
func pluginProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// The parent-death signal fires when the *thread* that forked the child
// exits, not the process: Go may end an OS thread (a goroutine that
// exits locked to it), so plugins are started from one thread that is
// locked for ever and never exits.
var forker struct {
	once sync.Once
	reqs chan forkReq
}

type forkReq struct {
	cmd  *exec.Cmd
	done chan error
}

func startPlugin(cmd *exec.Cmd) error {
	forker.once.Do(func() {
		forker.reqs = make(chan forkReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the host
			for r := range forker.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	forker.reqs <- forkReq{cmd, done}
	return <-done
}

// waitExit waits for the plugin to exit without reaping it (WNOWAIT):
// while it is a zombie its pid, and so its process group id, cannot be
// reused, so killing the group after this cannot hit a stranger.
func waitExit(r *procRunner) (reaped bool) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, r.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != syscall.EINTR {
			return false
		}
	}
}

// killGroup kills every process in the group pgid leads.
func killGroup(pgid int) { syscall.Kill(-pgid, syscall.SIGKILL) }

// leadsGroup reports whether this process leads its process group (a
// plugin started by a host does).
func leadsGroup() bool { return syscall.Getpgrp() == syscall.Getpid() }
