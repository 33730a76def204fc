// Package builtintest registers every built-in qdisc and driver for the
// framework's tests (import it blank): internal/builtins holds the list,
// which the txlab command imports too (cli/builtins.go), and framework
// packages import none of them outside tests.
package builtintest

import _ "github.com/txlab/txlab/internal/builtins"
