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

// Cleanup stops every plugin process still running, idle or in use by a
// run (on any exit path; the CLI also calls it on SIGINT and SIGTERM).
func Cleanup() {
	procs.Lock()
	defer procs.Unlock()
	for p := range procs.all {
		p.Close()
	}
	procs.all = map[*Proc]bool{}
	procs.idle = map[string][]*Proc{}
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
	if err := o.CheckLogLevel(); err != nil {
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

// procs are the plugin processes started so far. A run takes a process
// for its own use (a conn serves one host goroutine at a time) and gives
// it back when it closes; the next run reuses it: starting one costs
// tens of milliseconds (checksum, AutoMTLS keys, handshake). Runs at the
// same time (txlab run -j) each get a process of their own. Each run
// makes fresh instances, so reuse does not change results. Cleanup stops
// them all.
var procs = struct {
	sync.Mutex
	all  map[*Proc]bool     // every process started and not yet closed
	idle map[string][]*Proc // by procKey: processes no run uses
}{all: map[*Proc]bool{}, idle: map[string][]*Proc{}}

func procKey(f Found, o Options) string {
	return fmt.Sprintf("%s|%x|%s|%s", f.Path, f.Sum, cmp.Or(o.Transport, os.Getenv(EnvTransport)), o.LogLevel)
}

// takeIdle takes an idle, healthy process for key, closing the dead
// ones it meets.
func takeIdle(key string) *Proc {
	procs.Lock()
	defer procs.Unlock()
	for list := procs.idle[key]; len(list) > 0; list = procs.idle[key] {
		p := list[len(list)-1]
		procs.idle[key] = list[:len(list)-1]
		if p.Err() == nil && !p.client.Exited() {
			return p
		}
		p.Close()
		delete(procs.all, p)
	}
	return nil
}

func (h *Host) proc(f Found) (*Proc, error) {
	if p, ok := h.procs[f.Path]; ok {
		return p, p.err
	}
	key := procKey(f, h.opts)
	p := takeIdle(key)
	if p == nil {
		var err error
		if p, err = Start(f, h.opts); err != nil {
			return nil, err
		}
		p.key = key
		procs.Lock()
		procs.all[p] = true
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

// Close frees the run's instances and gives its plugin processes back
// for the next run; a dead or broken one is stopped, never reused, and
// so is one with a call still open (close the engine first: a task
// parked inside a call puts it back as it unwinds, and the next run
// must not share the conn with it).
func (h *Host) Close() {
	for _, p := range h.procs {
		open := p.c.open
		if p.Err() == nil && open == 0 {
			p.closeInstances()
		}
		if open > 0 && h.opts.Log != nil {
			fmt.Fprintf(h.opts.Log, "[plugin %s] closed with %d calls open: process not reused\n", p.c.name, open)
		}
		procs.Lock()
		switch {
		case !procs.all[p]: // Cleanup closed it
		case p.Err() != nil, open > 0: // a parked task still holds a call: never hand it on
			p.Close()
			delete(procs.all, p)
		default:
			procs.idle[p.key] = append(procs.idle[p.key], p)
		}
		procs.Unlock()
	}
	h.procs = map[string]*Proc{}
}
