package main

import (
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/run"
)

// exitCode is the one place that maps an error to the process's exit
// status: 0 for none, 130/143 for a run stopped by SIGINT/SIGTERM, a
// cli.Exit's own code, else 1.
//
// TODO(merge i12-options): tc tells a parse error from a kernel refusal
// by its exit code; when framework/qdisc's error types for the two land
// (a parse error and a refusal by the qdisc's init/change), map them
// here (errors.As) to tc's codes.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, run.ErrInterrupted) {
		if c := int(signalCode.Load()); c != 0 {
			return c
		}
		return 130
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return 1
}
