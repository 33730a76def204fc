package plugin

// Making a run's qdiscs and drivers (a netdev.Maker): in process behind
// the plugin boundary, or in plugin processes, which the host keeps from
// one run to the next.

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"sync"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
)

// Local makes the registered qdiscs and drivers in this process, each
// behind the same boundary a plugin process has (wire.LocalQdisc,
// wire.LocalDriver), so a run gives the same result in or out of
// process. It is a netdev.Maker.
type Local struct{}

// Qdisc makes a registered qdisc kind.
func (Local) Qdisc(kind string) (qdisc.Qdisc, error) {
	q, err := qdisc.New(kind)
	if err != nil {
		return nil, err
	}
	return wire.WrapQdisc(q), nil
}

// Driver makes a registered driver.
func (Local) Driver(name string) (driver.Driver, error) {
	d, err := driver.New(name)
	if err != nil {
		return nil, err
	}
	return wire.WrapDriver(d), nil
}

// Cleanup stops every plugin process still running (on any exit path;
// the CLI also calls it on SIGINT and SIGTERM).
func Cleanup() {
	procs.Lock()
	defer procs.Unlock()
	for k, p := range procs.m {
		p.Close()
		delete(procs.m, k)
	}
	goplugin.CleanupClients()
}

// Host makes qdiscs and drivers for a run (it is a netdev.Maker): a
// plugin's kinds out of process, built-ins in process (Local) unless
// isolated.
// Close stops every plugin it started.
type Host struct {
	opts   Options
	found  map[string]Found // "qdisc/KIND", "driver/NAME"
	procs  map[string]*Proc // by path
	selfFd Found
	// replacing are the plugins in found with a built-in's name: the
	// report's note, or why they are refused (override.go).
	replacing map[string]replacement
	overrides []string // the notes of those used, sorted
}

// NewHost discovers the plugins o names.
func NewHost(o Options) (*Host, error) {
	h := &Host{opts: o, found: map[string]Found{}, procs: map[string]*Proc{}}
	if err := o.CheckOverrides(); err != nil {
		return nil, err
	}
	fs, err := Discover(o)
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		key := f.Type + "/" + f.Name
		if prev, ok := h.found[key]; ok {
			return nil, fmt.Errorf("%s %s is served by both %s and %s", f.Type, f.Name, prev.Path, f.Path)
		}
		h.noteReplacement(key, f)
		h.found[key] = f
	}
	if o.Isolate {
		if h.selfFd, err = Self(); err != nil {
			return nil, fmt.Errorf("isolate: %w", err)
		}
	}
	return h, nil
}

// procs are the plugin processes started so far, kept for the next run
// (variants, benchmarks): starting one costs tens of milliseconds
// (checksum, AutoMTLS keys, handshake). Each run makes fresh instances,
// so reuse does not change results. Cleanup stops them all.
var procs = struct {
	sync.Mutex
	m map[string]*Proc
}{m: map[string]*Proc{}}

func procKey(f Found, o Options) string {
	return fmt.Sprintf("%s|%x|%s|%s", f.Path, f.Sum, cmp.Or(o.Transport, os.Getenv(EnvTransport)), o.LogLevel)
}

func (h *Host) proc(f Found) (*Proc, error) {
	if p, ok := h.procs[f.Path]; ok {
		return p, p.err
	}
	key := procKey(f, h.opts)
	procs.Lock()
	p, ok := procs.m[key]
	procs.Unlock()
	if !ok || p.Err() != nil || p.client.Exited() {
		if ok {
			p.Close()
		}
		var err error
		p, err = Start(f, h.opts)
		if err != nil {
			return nil, err
		}
		procs.Lock()
		procs.m[key] = p
		procs.Unlock()
	}
	p.c.timeout = cmp.Or(h.opts.Timeout, DefaultTimeout)
	h.procs[f.Path] = p
	return p, nil
}

// Qdisc implements netdev.Maker.
func (h *Host) Qdisc(kind string) (qdisc.Qdisc, error) {
	f, ok := h.found["qdisc/"+kind]
	if err := h.useReplacement("qdisc/" + kind); err != nil {
		return nil, err
	}
	if !ok {
		if !h.opts.Isolate || !slices.Contains(qdisc.Kinds(), kind) {
			return Local{}.Qdisc(kind)
		}
		f = h.selfFd
	}
	p, err := h.proc(f)
	if err != nil {
		return nil, err
	}
	return p.NewQdisc(kind)
}

// Driver implements netdev.Maker.
func (h *Host) Driver(name string) (driver.Driver, error) {
	f, ok := h.found["driver/"+name]
	if err := h.useReplacement("driver/" + name); err != nil {
		return nil, err
	}
	if !ok {
		if !h.opts.Isolate || !slices.Contains(driver.Names(), name) {
			return Local{}.Driver(name)
		}
		f = h.selfFd
	}
	p, err := h.proc(f)
	if err != nil {
		return nil, err
	}
	return p.NewDriver(name)
}

// Close stops every plugin process.
func (h *Host) Close() {
	for _, p := range h.procs {
		if p.Err() != nil {
			p.Close() // dead or broken: never reused
			continue
		}
		p.closeInstances()
	}
}
