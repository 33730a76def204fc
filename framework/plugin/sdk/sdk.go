// Package sdk is what a plugin author imports. A qdisc plugin is a Go
// type implementing qdisc.Qdisc and
//
//	func main() { sdk.ServeQdisc(New) }
//
// built as txlab-qdisc-KIND; a driver plugin is the same with
// driver.Driver, sdk.ServeDriver and txlab-driver-NAME. The kind is the
// binary's name after the prefix, unless the type has a Kind() string
// method; a Help() string method gives the one-line description `txlab
// plugin list` prints.
//
// The qdisc contract (qdisc.Qdisc, the optional Peeker, Resetter,
// Changer and TimerQdisc, and every qdisc.Ctx method) is documented in
// docs/plugins.md; examples/outoftree builds a plugin in its own module.
package sdk

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/qdisc"
)

type kinder interface{ Kind() string }
type helper interface{ Help() string }

// name is the kind: Kind() if the type has it, else the binary's name
// after prefix.
func name(v any, prefix string) string {
	if k, ok := v.(kinder); ok {
		return k.Kind()
	}
	return strings.TrimPrefix(filepath.Base(os.Args[0]), prefix)
}

func help(v any) string {
	if h, ok := v.(helper); ok {
		return h.Help()
	}
	return ""
}

// mustBePlugin explains what the binary is when someone runs it by hand.
func mustBePlugin(what string) {
	if !plugin.IsPluginProcess() {
		fmt.Fprintf(os.Stderr, "%s is a txlab %s plugin: run it through txlab (txlab plugin test %s)\n",
			filepath.Base(os.Args[0]), what, os.Args[0])
		os.Exit(1)
	}
}

// ServeQdisc serves one qdisc kind; it returns when the host is done.
func ServeQdisc(newQdisc func() qdisc.Qdisc) {
	mustBePlugin("qdisc")
	q := newQdisc()
	cat := &plugin.Catalog{Version: plugin.Version(), Qdiscs: map[string]plugin.Kind[qdisc.Qdisc]{
		name(q, plugin.QdiscPrefix): {Help: help(q), New: newQdisc},
	}}
	plugin.Serve(cat)
}

// ServeDriver serves one driver; it returns when the host is done.
func ServeDriver(newDriver func() driver.Driver) {
	mustBePlugin("driver")
	d := newDriver()
	cat := &plugin.Catalog{Version: plugin.Version(), Drivers: map[string]plugin.Kind[driver.Driver]{
		name(d, plugin.DriverPrefix): {Help: help(d), New: newDriver},
	}}
	plugin.Serve(cat)
}
