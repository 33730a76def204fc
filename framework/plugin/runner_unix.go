//go:build unix && !linux

package plugin

import (
	"os/exec"
	"syscall"
)

// pluginProcAttr puts the plugin in a process group of its own. There
// is no parent-death signal here: the plugin's own watch on its parent
// (Serve) ends it and its group.
func pluginProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func startPlugin(cmd *exec.Cmd) error { return cmd.Start() }

func waitExit(r *procRunner) (reaped bool) {
	r.waitErr = r.cmd.Wait()
	return true
}

func killGroup(pgid int) { syscall.Kill(-pgid, syscall.SIGKILL) }

func leadsGroup() bool { return syscall.Getpgrp() == syscall.Getpid() }
