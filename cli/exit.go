package main

import (
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/run"
)

// Exit codes of a qdisc option error, as iproute2's tc_qdisc_modify
// returns them (tc/tc_qdisc.c): the kind's parser refused the words
// (parse_qopt fails: 1), the kernel refused the request (rtnl_talk
// fails: 2), tc refused its own command line (invarg, duparg, an
// incomplete command, options for a kind without a parser: -1, so 255).
// tc and the kernel would accept what the model lacks: that has a code
// of txlab's. (`tc -batch` exits 1 for any failed line; txlab's scripts
// keep the class, and the message says it.)
const (
	exitParse  = 1
	exitKernel = 2
	exitLacks  = 3
	exitSyntax = 255
)

// exitCode is the one place that maps an error to the process's exit
// status: 0 for none, 130/143 for a run stopped by SIGINT/SIGTERM, a
// cli.Exit's own code, tc's code for a qdisc option error (above), else
// 1.
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
	switch {
	case errors.Is(err, qdisc.ErrKernel):
		return exitKernel
	case errors.Is(err, qdisc.ErrLacks):
		return exitLacks
	case errors.Is(err, qdisc.ErrSyntax): // before ErrParse: it is one
		return exitSyntax
	case errors.Is(err, qdisc.ErrParse):
		return exitParse
	}
	return 1
}

// errorLine is the error as main prints it: the message and, for a
// qdisc option error, its class in brackets, since tc's own exit code
// (1) does not tell a parse error from any other.
func errorLine(err error) string {
	switch {
	case errors.Is(err, run.ErrInterrupted):
	case errors.Is(err, qdisc.ErrKernel):
		return err.Error() + " [kernel refusal]"
	case errors.Is(err, qdisc.ErrLacks):
		return err.Error() + " [not modelled]"
	case errors.Is(err, qdisc.ErrSyntax):
		return err.Error() + " [tc command-line error]"
	case errors.Is(err, qdisc.ErrParse):
		return err.Error() + " [tc parse error]"
	}
	return err.Error()
}
