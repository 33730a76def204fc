//go:build !unix

package plugin

import (
	"os/exec"
	"syscall"
)

func pluginProcAttr() *syscall.SysProcAttr { return nil }

func startPlugin(cmd *exec.Cmd) error { return cmd.Start() }

func waitExit(r *procRunner) (reaped bool) {
	r.waitErr = r.cmd.Wait()
	return true
}

func killGroup(int) {}

func leadsGroup() bool { return false }
