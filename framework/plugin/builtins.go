package plugin

import (
	"runtime/debug"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/qdisc"
)

// Builtins is every registered qdisc kind and driver (what the txlab
// binary serves as a plugin for --isolate). mq and noqueue are the
// host's own and are not served.
func Builtins() *Catalog {
	cat := &Catalog{Version: Version(), Qdiscs: map[string]Kind[qdisc.Qdisc]{}, Drivers: map[string]Kind[driver.Driver]{}}
	for _, k := range qdisc.Kinds() {
		if _, err := qdisc.New(k); err != nil {
			continue // host-expanded
		}
		cat.Qdiscs[k] = Kind[qdisc.Qdisc]{Help: qdisc.Help(k), New: func() qdisc.Qdisc { q, _ := qdisc.New(k); return q }}
	}
	for _, n := range driver.Names() {
		cat.Drivers[n] = Kind[driver.Driver]{Help: driver.Help(n), New: func() driver.Driver { d, _ := driver.New(n); return d }}
	}
	return cat
}

// Version is this binary's module version ("devel" when built from a
// work tree).
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// WithDrivers adds drivers to a catalog and returns it.
func (c *Catalog) WithDrivers(help string, drivers map[string]func() driver.Driver) *Catalog {
	for name, f := range drivers {
		c.Drivers[name] = Kind[driver.Driver]{Help: help + " " + name, New: f}
	}
	return c
}

// WithQdiscs adds qdisc kinds to a catalog (a test binary serving the
// built-ins plus qdiscs of its own) and returns it.
func (c *Catalog) WithQdiscs(help string, kinds map[string]func() qdisc.Qdisc) *Catalog {
	for name, f := range kinds {
		c.Qdiscs[name] = Kind[qdisc.Qdisc]{Help: help + " " + name, New: f}
	}
	return c
}
