// Package builtins registers every built-in qdisc and driver: importing
// a package registers its qdisc or driver (qdisc.Register,
// driver.Register), and this is the one list of them. The txlab command
// imports it (cli/builtins.go), and so do the framework's tests, through
// framework/internal/builtintest; no framework package imports it.
// `txlab --isolate` serves the same set out of process (plugin.Builtins).
// cli's TestBuiltinsListed keeps the list whole.
package builtins

import (
	_ "github.com/txlab/txlab/drivers/i40e"
	_ "github.com/txlab/txlab/drivers/ice"
	_ "github.com/txlab/txlab/drivers/idpf"
	_ "github.com/txlab/txlab/drivers/mlx5"
	_ "github.com/txlab/txlab/drivers/veth"
	_ "github.com/txlab/txlab/plugins/cake"
	_ "github.com/txlab/txlab/plugins/cbs"
	_ "github.com/txlab/txlab/plugins/choke"
	_ "github.com/txlab/txlab/plugins/codel"
	_ "github.com/txlab/txlab/plugins/drr"
	_ "github.com/txlab/txlab/plugins/dualpi2"
	_ "github.com/txlab/txlab/plugins/etf"
	_ "github.com/txlab/txlab/plugins/ets"
	_ "github.com/txlab/txlab/plugins/fq"
	_ "github.com/txlab/txlab/plugins/fq_codel"
	_ "github.com/txlab/txlab/plugins/hfsc"
	_ "github.com/txlab/txlab/plugins/hhf"
	_ "github.com/txlab/txlab/plugins/htb"
	_ "github.com/txlab/txlab/plugins/multiq"
	_ "github.com/txlab/txlab/plugins/netem"
	_ "github.com/txlab/txlab/plugins/pie"
	_ "github.com/txlab/txlab/plugins/plug"
	_ "github.com/txlab/txlab/plugins/prio"
	_ "github.com/txlab/txlab/plugins/qfq"
	_ "github.com/txlab/txlab/plugins/red"
	_ "github.com/txlab/txlab/plugins/sfb"
	_ "github.com/txlab/txlab/plugins/sfq"
	_ "github.com/txlab/txlab/plugins/skbprio"
	_ "github.com/txlab/txlab/plugins/taprio"
	_ "github.com/txlab/txlab/plugins/tbf"
)
