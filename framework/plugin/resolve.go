package plugin

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/plugin/pb"
	"github.com/txlab/txlab/framework/plugin/shm"
	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
)

// Env names.
const (
	EnvDir        = "TXLAB_PLUGIN_DIR"        // the plugin directory
	EnvOverride   = "TXLAB_PLUGIN_OVERRIDE"   // built-ins the directory's plugins may replace (comma-separated)
	EnvTransport  = "TXLAB_PLUGIN_TRANSPORT"  // "shm" (default) or "grpc"
	EnvCPUProfile = "TXLAB_PLUGIN_CPUPROFILE" // a plugin profiles itself to FILE.PID
	Manifest      = "txlab-plugins.sum"       // checksums of a directory's plugins
	QdiscPrefix   = "txlab-qdisc-"            // a qdisc plugin's file name: txlab-qdisc-KIND
	DriverPrefix  = "txlab-driver-"           // a driver plugin's file name: txlab-driver-NAME
)

// DefaultTimeout is how long the host waits for one call's answer.
const DefaultTimeout = 10 * time.Second

// Options say which plugins a run may use and how.
type Options struct {
	// Isolate runs the built-in qdiscs and drivers out of process too,
	// served by Self.
	Isolate bool
	// Paths are plugin binaries named on the command line.
	Paths []string
	// Dir is a plugin directory; its plugins need an entry in Dir's
	// txlab-plugins.sum.
	Dir string
	// Timeout bounds each call (0: DefaultTimeout).
	Timeout time.Duration
	// Transport is "shm" (default where supported) or "grpc".
	Transport string
	// Override names the built-ins a plugin from Dir may replace
	// (override.go).
	Override []string
	// Log receives the plugins' log lines, prefixed with the plugin's
	// name (nil: stderr); LogLevel is hclog's ("" = error).
	Log      io.Writer
	LogLevel string
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

// Enabled reports whether anything runs out of process.
func (o Options) Enabled() bool { return o.Isolate || len(o.Paths) > 0 || o.Dir != "" }

// Serves reports whether a plugin o names serves typ ("qdisc" or
// "driver") name, by the plugins' file names: nothing is started or
// hashed (a script asks this at every qdisc and device line).
func (o Options) Serves(typ, name string) bool {
	want := QdiscPrefix + name
	if typ == "driver" {
		want = DriverPrefix + name
	}
	for _, p := range o.Paths {
		if filepath.Base(p) == want {
			return true
		}
	}
	if o.Dir == "" {
		return false
	}
	st, err := os.Stat(filepath.Join(o.Dir, want))
	return err == nil && !st.IsDir()
}

// Found is a plugin binary found by name.
type Found struct {
	Path   string
	Type   string // "qdisc" or "driver"
	Name   string // the kind or driver name
	Sum    []byte // the checksum it must have
	SumErr error  // why it has none (not in the manifest)
}

// Discover lists the plugins Paths and Dir name.
func Discover(o Options) ([]Found, error) {
	var out []Found
	for _, p := range o.Paths {
		f, err := Locate(p)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "plugin ") {
				err = fmt.Errorf("plugin %s: %w", p, err)
			}
			return nil, err
		}
		out = append(out, f)
	}
	if o.Dir != "" {
		sums, err := readManifest(o.Dir)
		if err != nil {
			return nil, err
		}
		ents, err := os.ReadDir(o.Dir)
		if err != nil {
			return nil, fmt.Errorf("plugin dir: %w", err)
		}
		for _, e := range ents {
			if e.IsDir() || !(strings.HasPrefix(e.Name(), QdiscPrefix) || strings.HasPrefix(e.Name(), DriverPrefix)) {
				continue
			}
			f, err := found(filepath.Join(o.Dir, e.Name()))
			if err != nil {
				return nil, err
			}
			if s, ok := sums[e.Name()]; ok {
				f.Sum = s
			} else {
				f.SumErr = fmt.Errorf("not in %s (add it with `txlab plugin add`)", filepath.Join(o.Dir, Manifest))
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// Locate is a plugin binary named on the command line, with the
// checksum it has now (the user vouches for it).
func Locate(path string) (Found, error) {
	f, err := found(path)
	if err != nil {
		return f, err
	}
	f.Sum, err = fileSum(path)
	return f, err
}

// Self is this binary as the plugin that serves the built-ins.
func Self() (Found, error) {
	selfOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			selfErr = err
			return
		}
		sum, err := fileSum(self)
		selfFound, selfErr = Found{Path: self, Type: "builtin", Name: "txlab", Sum: sum}, err
	})
	return selfFound, selfErr
}

// The running binary does not change under us: hash it once.
var (
	selfOnce  sync.Once
	selfFound Found
	selfErr   error
)

func found(path string) (Found, error) {
	base := filepath.Base(path)
	switch {
	case strings.HasPrefix(base, QdiscPrefix) && len(base) > len(QdiscPrefix):
		return Found{Path: path, Type: "qdisc", Name: strings.TrimPrefix(base, QdiscPrefix)}, nil
	case strings.HasPrefix(base, DriverPrefix) && len(base) > len(DriverPrefix):
		return Found{Path: path, Type: "driver", Name: strings.TrimPrefix(base, DriverPrefix)}, nil
	}
	return Found{}, fmt.Errorf("plugin %s: name it %sKIND or %sNAME", path, QdiscPrefix, DriverPrefix)
}

func fileSum(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

func readManifest(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	f, err := os.Open(filepath.Join(dir, Manifest))
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		sum, err := hex.DecodeString(fields[0])
		if len(fields) != 2 || err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("%s:%d: want \"SHA256  FILE\"", filepath.Join(dir, Manifest), n)
		}
		out[fields[1]] = sum
	}
	return out, sc.Err()
}

// Add copies the plugin at path into dir and records its checksum.
func Add(dir, path string) (string, error) {
	f, err := found(path)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.Base(f.Path))
	if err := os.WriteFile(dst+".tmp", b, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(dst+".tmp", dst); err != nil {
		return "", err
	}
	sums, err := readManifest(dir)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	sums[filepath.Base(dst)] = s[:]
	var sb strings.Builder
	for _, name := range slices.Sorted(maps.Keys(sums)) {
		fmt.Fprintf(&sb, "%x  %s\n", sums[name], name)
	}
	return dst, os.WriteFile(filepath.Join(dir, Manifest), []byte(sb.String()), 0o644)
}

// Host makes qdiscs and drivers for a run (it is a netdev.Resolver):
// a plugin's kinds out of process, built-ins in process unless isolated.
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

// Qdisc implements netdev.Resolver.
func (h *Host) Qdisc(kind string) (qdisc.Qdisc, error) {
	f, ok := h.found["qdisc/"+kind]
	if err := h.useReplacement("qdisc/" + kind); err != nil {
		return nil, err
	}
	if !ok {
		if !h.opts.Isolate || !slices.Contains(qdisc.Kinds(), kind) {
			return qdisc.New(kind)
		}
		f = h.selfFd
	}
	p, err := h.proc(f)
	if err != nil {
		return nil, err
	}
	return p.NewQdisc(kind)
}

// Driver implements netdev.Resolver.
func (h *Host) Driver(name string) (driver.Driver, error) {
	f, ok := h.found["driver/"+name]
	if err := h.useReplacement("driver/" + name); err != nil {
		return nil, err
	}
	if !ok {
		if !h.opts.Isolate || !slices.Contains(driver.Names(), name) {
			return driver.New(name)
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
	level := hclog.LevelFromString(cmp.Or(o.LogLevel, "error"))
	if level == hclog.NoLevel {
		return nil, fmt.Errorf("plugin log level %q: want trace, debug, info, warn or error", o.LogLevel)
	}
	tail, crash := &tailWriter{}, &crashWriter{}
	logger := hclog.New(&hclog.LoggerOptions{Name: "plugin." + f.Name, Output: out, Level: level, Exclude: quietCrash()})
	pr := newProcRunner(f.Path, f.Sum, sha256.New()) // runner.go: process group, parent-death signal, bounded pipes
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
	inst, _, err := p.c.newInstance(wire.MNewQdisc, kind)
	if err != nil {
		return nil, err
	}
	p.insts = append(p.insts, inst)
	return &Qdisc{c: p.c, inst: inst, kind: kind, hold: newHoldings()}, nil
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

// tailWriter keeps the end of the plugin's raw stderr, for the error
// when it dies.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 8192 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(b), nil
}

// last is the last line the plugin printed, for an error message.
func (t *tailWriter) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "goroutine ") && !strings.HasPrefix(l, "exit status") &&
			!strings.HasPrefix(l, `{"@level"`) {
			// Prefer the panic line if there is one.
			for _, m := range lines {
				if strings.HasPrefix(strings.TrimSpace(m), "panic:") {
					return ": " + strings.TrimSpace(m)
				}
			}
			return ": " + l
		}
	}
	return ""
}

// prefixWriter writes whole lines to out, each after prefix.
type prefixWriter struct {
	mu      sync.Mutex
	out     io.Writer
	prefix  string
	partial []byte
}

func (w *prefixWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, b...)
	for {
		i := strings.IndexByte(string(w.partial), '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(w.out, "%s%s\n", w.prefix, w.partial[:i])
		w.partial = w.partial[i+1:]
	}
	return len(b), nil
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

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
