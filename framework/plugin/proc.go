package plugin

// Starting a plugin process and making instances in it.

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/txlab/txlab/framework/plugin/pb"
	"github.com/txlab/txlab/framework/plugin/shm"
	"github.com/txlab/txlab/framework/plugin/wire"
)

// Proc is one running plugin process.
type Proc struct {
	Found  Found
	Desc   *pb.Description
	client *goplugin.Client
	c      *conn
	tail   *tailWriter
	err    error
	once   sync.Once
	insts  []uint32 // instances made for the current run
	key    string   // procKey: where it waits between runs
}

// closeInstances frees the run's instances in the plugin.
func (p *Proc) closeInstances() {
	for _, inst := range p.insts {
		if p.c.control(inst, wire.MClose, "close", nil, nil) != nil {
			break
		}
	}
	p.insts = p.insts[:0]
}

// CheckLogLevel checks o.LogLevel (--plugin-log) is a level Start
// takes, so a bad one is refused before anything runs, not only when a
// plugin starts.
func (o Options) CheckLogLevel() error {
	_, err := logLevel(o.LogLevel)
	return err
}

// logLevel is hclog's level for --plugin-log: trace, debug, info, warn,
// error (the default, also for "") or off, in any case.
func logLevel(s string) (hclog.Level, error) {
	level := hclog.LevelFromString(cmp.Or(s, "error"))
	if level == hclog.NoLevel {
		return level, fmt.Errorf("--plugin-log %q: want trace, debug, info, warn, error or off", s)
	}
	return level, nil
}

// Start starts and verifies a plugin: go-plugin checks its checksum
// before it runs, then the host asks what it serves and opens the data
// path.
func Start(f Found, o Options) (*Proc, error) {
	if f.SumErr != nil {
		return nil, fmt.Errorf("plugin %s: refused: %w", f.Path, f.SumErr)
	}
	name := f.Name
	if f.Type != "builtin" {
		name = f.Type + " " + f.Name
	}
	label := fmt.Sprintf("%s (%s)", name, f.Path)
	out := o.Log
	if out == nil {
		out = os.Stderr
	}
	level, err := logLevel(o.LogLevel)
	if err != nil {
		return nil, err
	}
	tail, crash := &tailWriter{}, &crashWriter{}
	logger := hclog.New(&hclog.LoggerOptions{Name: "plugin." + f.Name, Output: out, Level: level, Exclude: quietCrash()})
	pr := newProcRunner(f.Path, f.Sum) // runner.go: process group, parent-death signal, bounded pipes
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          pluginMap,
		RunnerFunc:       pr.runnerFunc,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		Managed:          true,
		Logger:           logger,
		Stderr:           io.MultiWriter(tail, crash),
		SyncStdout:       &prefixWriter{out: out, prefix: "[plugin " + f.Name + "] "},
		SyncStderr:       io.MultiWriter(tail, &prefixWriter{out: out, prefix: "[plugin " + f.Name + "] "}),
		StartTimeout:     20 * time.Second,
	})
	p := &Proc{Found: f, client: client, tail: tail}
	fail := func(err error) (*Proc, error) {
		if pr.exitedWithin(200 * time.Millisecond) { // say why, not what go-plugin missed
			pr.drained()
			if last := tail.last(); last != "" {
				err = fmt.Errorf("the plugin process exited during start-up (%s)%s", pr.status(), last)
			} else {
				err = fmt.Errorf("the plugin process exited during start-up (%s): %w", pr.status(), oneLine(err))
			}
		}
		client.Kill()
		p.err = fmt.Errorf("plugin %s: %w", label, oneLine(err))
		return p, p.err
	}
	rpc, err := client.Client()
	if err != nil {
		return fail(err)
	}
	raw, err := rpc.Dispense("txlab")
	if err != nil {
		return fail(err)
	}
	pc := raw.(pb.PluginClient)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.Desc, err = pc.Describe(ctx, &pb.Empty{})
	if err != nil {
		return fail(fmt.Errorf("describe: %w", err))
	}
	if p.Desc.Protocol != FrameProtocol {
		return fail(fmt.Errorf("speaks frame protocol %d, the host %d", p.Desc.Protocol, FrameProtocol))
	}
	if f.Type != "builtin" && !p.serves(f.Type, f.Name) {
		return fail(fmt.Errorf("is named for %s %s but serves %s", f.Type, f.Name, p.kindList()))
	}
	alive := func() error {
		if pr.exited() {
			pr.drained() // its last stderr lines (a crash's panic)
			if msg, stack, ok := crash.crash(); ok {
				return &PanicError{Msg: "the plugin process exited: " + msg, Stack: stack}
			}
			return fmt.Errorf("the plugin process exited (%s)%s", pr.status(), tail.last())
		}
		return nil
	}
	var tr hostTransport
	switch t := cmp.Or(o.Transport, os.Getenv(EnvTransport), "shm"); {
	case t == "shm" && shm.Supported:
		ch, path, err := shm.Create("", shm.DefaultSize)
		if err != nil {
			return fail(err)
		}
		_, err = pc.Open(ctx, &pb.OpenRequest{Path: path, Size: shm.DefaultSize})
		os.Remove(path)
		if err != nil {
			ch.Close()
			return fail(fmt.Errorf("open shared memory: %w", err))
		}
		tr = &shmHostSide{ch: ch, alive: alive}
	case t == "grpc" || t == "shm":
		s, err := newStreamHostSide(pc, alive)
		if err != nil {
			return fail(err)
		}
		tr = s
	default:
		return fail(fmt.Errorf("transport %q: want shm or grpc", t))
	}
	p.c = &conn{name: label, tr: tr, timeout: cmp.Or(o.Timeout, DefaultTimeout), kill: client.Kill}
	return p, nil
}

func (p *Proc) serves(typ, name string) bool {
	for _, k := range p.Desc.Kinds {
		if k.Type == typ && k.Name == name {
			return true
		}
	}
	return false
}

func (p *Proc) kindList() string {
	var s []string
	for _, k := range p.Desc.Kinds {
		s = append(s, k.Type+" "+k.Name)
	}
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

// NewQdisc makes a qdisc instance in the plugin.
func (p *Proc) NewQdisc(kind string) (*Qdisc, error) {
	if p.err != nil {
		return nil, p.err
	}
	inst, classful, err := p.c.newInstance(wire.MNewQdisc, kind)
	if err != nil {
		return nil, err
	}
	p.insts = append(p.insts, inst)
	return &Qdisc{c: p.c, inst: inst, kind: kind, classful: classful, hold: newHoldings()}, nil
}

// NewDriver makes a driver instance in the plugin.
func (p *Proc) NewDriver(name string) (*Driver, error) {
	if p.err != nil {
		return nil, p.err
	}
	inst, sel, err := p.c.newInstance(wire.MNewDriver, name)
	if err != nil {
		return nil, err
	}
	p.insts = append(p.insts, inst)
	return &Driver{c: p.c, inst: inst, name: name, sel: sel, hold: newHoldings()}, nil
}

// Err is the error that ended the plugin, if any.
func (p *Proc) Err() error {
	if p.c != nil && p.c.dead != nil {
		return p.c.dead
	}
	return p.err
}

// Close stops the process.
func (p *Proc) Close() {
	p.once.Do(func() {
		if p.client != nil {
			p.client.Kill()
		}
		if p.c != nil {
			p.c.tr.Close()
		}
	})
}

// oneLine keeps an error to its first line (go-plugin's start-up errors
// run to a paragraph); the wrapped error is kept for errors.Is.
func oneLine(err error) error {
	msg := err.Error()
	i := strings.IndexByte(msg, '\n')
	if i < 0 {
		return err
	}
	return &lineError{msg: strings.TrimSpace(msg[:i]) + " (is it a txlab plugin, built for this machine?)", err: err}
}

type lineError struct {
	msg string
	err error
}

func (e *lineError) Error() string { return e.msg }
func (e *lineError) Unwrap() error { return e.err }
