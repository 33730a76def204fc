// Package script is txlab's Tengo front end: a script builds one run.Spec
// per variant (host, device, qdisc tree, senders, profile, toggles, costs,
// times, seed) and may schedule actions in simulated time. See
// docs/scripting.md for the `txlab` module.
//
// Scripts are sandboxed: only the safe stdlib modules (base64, enum, fmt
// with sprintf only, hex, json, math, text) and `txlab` can be imported;
// no file, process, network or clock access. Every VM run is bounded by
// an allocation count and a wall-time limit. A script is compiled once
// (Load) and may be evaluated many times (Eval); hooks are compiled when
// the script defines them and re-run with live stats at each occurrence.
package script

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/d5/tengo/v2"
	"github.com/d5/tengo/v2/parser"

	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/internal/regfile"
)

// maxValueBytes is the most one string or bytes value may ever hold.
const maxValueBytes = 16 << 20

func init() { tengo.MaxStringLen, tengo.MaxBytesLen = maxValueBytes, maxValueBytes }

// valueBound is the most bytes one string or bytes value of a program
// with these options may hold: its --max-allocs (a value of n bytes
// counts like n objects, so one text.repeat or "s += s" cannot build
// what the allocation bound refuses in pieces), at most maxValueBytes.
func (o *Options) valueBound() int {
	return int(min(max(o.MaxAllocs, 1), maxValueBytes))
}

// bound shares tengo's process-wide MaxStringLen and MaxBytesLen among
// the programs that compile or run at the same time (variants run in
// parallel, txlab run -j): each holds its own bound in place while it
// compiles or runs, and one with another bound waits until nobody uses
// the current one. Programs with the same bound (one script's variants,
// a sweep's points) never wait.
var bound = struct {
	mu    sync.Mutex
	free  *sync.Cond
	cur   int
	users int
}{cur: maxValueBytes}

func init() { bound.free = sync.NewCond(&bound.mu) }

// holdBound puts n in place as tengo's bounds until release is called.
func holdBound(n int) (release func()) {
	bound.mu.Lock()
	for bound.users > 0 && bound.cur != n {
		bound.free.Wait()
	}
	if bound.cur != n {
		bound.cur = n
		tengo.MaxStringLen, tengo.MaxBytesLen = n, n
	}
	bound.users++
	bound.mu.Unlock()
	return func() {
		bound.mu.Lock()
		if bound.users--; bound.users == 0 {
			bound.free.Broadcast()
		}
		bound.mu.Unlock()
	}
}

// Defaults for the bounds.
const (
	DefaultMaxAllocs     = 5_000_000
	DefaultTimeout       = 5 * time.Second
	DefaultHookMaxAllocs = 100_000
	DefaultHookTimeout   = 100 * time.Millisecond
	// MaxSourceBytes is the largest script Load and ReadFile take.
	MaxSourceBytes = 1 << 20
	// MaxHookRuns bounds how often a run's hooks run, all together: each
	// run is a fresh VM and the live stats (about 30 us), so 100,000 stay
	// within a few seconds where run.MaxActionRuns of them would not.
	MaxHookRuns = 100_000
)

// Options bound and parameterise a script.
type Options struct {
	// MaxAllocs bounds the objects one run of the script may allocate
	// (0: DefaultMaxAllocs).
	MaxAllocs int64
	// Timeout bounds one run of the script in wall time (0: DefaultTimeout).
	Timeout time.Duration
	// HookMaxAllocs and HookTimeout bound one run of a hook.
	HookMaxAllocs int64
	HookTimeout   time.Duration
	// Quick is what txlab.quick() returns: scripts scale themselves down.
	Quick bool
	// Params are what txlab.param(name, default) returns (--param k=v).
	Params map[string]string
	// Log receives txlab.log() lines (nil: discarded).
	Log io.Writer
	// Plugins name the plugins whose kinds a script may use: they are
	// checked when the run starts them, not at the script line.
	Plugins plugin.Options
}

func (o *Options) fill() {
	if o.MaxAllocs == 0 {
		o.MaxAllocs = DefaultMaxAllocs
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.HookMaxAllocs == 0 {
		o.HookMaxAllocs = DefaultHookMaxAllocs
	}
	if o.HookTimeout == 0 {
		o.HookTimeout = DefaultHookTimeout
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// Error is a script error with its place: it prints as
// "file:line:col: message" (line and col are 0 when unknown). Err, if
// set, is the error Msg was made from (a module function's, behind the
// VM's runtime error), so errors.Is still finds its class (a qdisc
// option error's, for the exit code).
type Error struct {
	File      string
	Line, Col int
	Msg       string
	Err       error
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Program is a compiled script.
type Program struct {
	name     string
	src      []byte
	opts     Options
	bytecode *tengo.Bytecode
	nglobals int
	rawHooks map[string]srcPos // raw-string hook sources -> where they start

	mu  sync.Mutex
	cur *builder // the evaluation in progress (module functions use it)
}

type srcPos struct{ line, col int }

// Plan is what a script describes.
type Plan struct {
	File        string
	Description string
	// Specs is one spec per variant; a script without variants has one,
	// with an empty Name.
	Specs []run.Spec
	// Params are the names the script asked txlab.param for, sorted
	// (what --param and a sweep's grid may set).
	Params []string
}

// Load compiles a script. name is used in messages ("scripts/e1.tengo").
func Load(name string, src []byte, opts Options) (*Program, error) {
	opts.fill()
	if len(src) > MaxSourceBytes {
		return nil, &Error{File: name, Msg: fmt.Sprintf("script is %d bytes, more than the %d allowed", len(src), MaxSourceBytes)}
	}
	p := &Program{name: name, src: src, opts: opts, rawHooks: findRawHooks(src)}
	release := holdBound(opts.valueBound())
	bc, n, err := compile(name, src, p.modules(), nil, false)
	release()
	if err != nil {
		return nil, err
	}
	p.bytecode, p.nglobals = bc, n
	return p, nil
}

// ReadFile reads a script file, at most MaxSourceBytes of it: a bigger
// or endless file (/dev/zero) is an error naming the file and the bound,
// not a read of all of it. A named pipe or a socket is refused, naming
// the file, before it is opened (opening a FIFO waits for a writer:
// regfile.Open). A missing file is the open's *PathError
// (fs.ErrNotExist).
func ReadFile(path string) ([]byte, error) {
	blocks := func(st os.FileInfo) error {
		switch m := st.Mode(); {
		case m&os.ModeNamedPipe != 0:
			return &Error{File: path, Msg: "a named pipe, not a script file"}
		case m&os.ModeSocket != 0:
			return &Error{File: path, Msg: "a socket, not a script file"}
		}
		return nil
	}
	f, err := regfile.Open(path, blocks)
	if err != nil {
		return nil, err // blocks' refusal, or the open's *PathError: both name the file
	}
	defer f.Close()
	src, over, err := regfile.ReadAll(f, MaxSourceBytes)
	if err != nil {
		return nil, err // a *PathError: it names the file
	}
	if over {
		return nil, &Error{File: path, Msg: fmt.Sprintf("script is larger than the %d bytes allowed", MaxSourceBytes)}
	}
	return src, nil
}

// Name is the script's file name as given to Load.
func (p *Program) Name() string { return p.name }

// Eval runs the script and returns its plan. Each Eval starts afresh.
func (p *Program) Eval() (*Plan, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := newBuilder(p)
	p.cur = b
	defer func() { p.cur = nil }()
	globals := newGlobals(p.nglobals, 0)
	started := func(vm *tengo.VM) { b.vm = vm }
	if err := runVMOn(started, p.name, p.bytecode, globals, p.opts.valueBound(), p.opts.MaxAllocs, p.opts.Timeout, "--max-allocs", "--script-timeout"); err != nil {
		return nil, err
	}
	b.vm = nil
	specs, err := b.finish()
	var placed *Error
	if errors.As(err, &placed) {
		return nil, placed // at the line that declared what is wrong
	}
	if err != nil {
		return nil, &Error{File: p.name, Msg: err.Error()}
	}
	params := make([]string, 0, len(b.paramsRead))
	for k := range b.paramsRead {
		params = append(params, k)
	}
	sort.Strings(params)
	return &Plan{File: p.name, Description: b.description, Specs: specs, Params: params}, nil
}

// Describe returns the script's one-line description: the text of its
// first comment line ("// E1: ..."), without running it.
func Describe(src []byte) string {
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if d, ok := strings.CutPrefix(line, "//"); ok {
			return strings.TrimSpace(d)
		}
		return ""
	}
	return ""
}

// allowedModules are the stdlib modules a script may import.
var allowedModules = []string{"base64", "enum", "fmt", "hex", "json", "math", "text"}

// modules is the sandbox: safe stdlib modules plus txlab. times (the
// wall clock) and rand (an unseeded source) are left out to keep runs
// deterministic; os has files and processes.
func (p *Program) modules() *tengo.ModuleMap {
	m := sandboxModules()
	m.AddBuiltinModule("txlab", p.module())
	return m
}

func hookModules() *tengo.ModuleMap { return sandboxModules() }

var notFound = regexp.MustCompile(`^module '(.*)' not found`)

// compile parses and compiles src, once checkShape lets it through
// (every source handed to tengo, script or hook, comes here); predefined
// names become the first globals (index order), then the sandbox's
// overrides (see newGlobals).
// It returns the bytecode and the globals needed.
func compile(name string, src []byte, modules *tengo.ModuleMap, predefined []string, hook bool) (*tengo.Bytecode, int, error) {
	if err := checkShape(name, src); err != nil { // before tengo recurses through it
		return nil, 0, err
	}
	st := tengo.NewSymbolTable()
	for i, fn := range tengo.GetAllBuiltinFunctions() {
		st.DefineBuiltin(i, fn.Name)
	}
	for _, n := range predefined {
		st.Define(n)
	}
	fs := parser.NewFileSet()
	file := fs.AddFile(name, -1, len(src))
	f, err := parser.NewParser(file, src, nil).ParseFile()
	if err != nil {
		var el parser.ErrorList
		if errors.As(err, &el) && len(el) > 0 {
			return nil, 0, &Error{File: name, Line: el[0].Pos.Line, Col: el[0].Pos.Column, Msg: "syntax error: " + el[0].Msg}
		}
		return nil, 0, &Error{File: name, Msg: err.Error()}
	}
	rewriteLoops(f)
	c := tengo.NewCompiler(file, st, nil, modules, nil)
	for _, n := range overrides { // after NewCompiler, which (re)defines the builtins
		st.Define(n)
	}
	if err := c.Compile(f); err != nil {
		var ce *tengo.CompilerError
		if errors.As(err, &ce) {
			pos := ce.FileSet.Position(ce.Node.Pos())
			msg := ce.Err.Error()
			if m := notFound.FindStringSubmatch(msg); m != nil {
				msg = moduleRefused(m[1], hook)
			}
			return nil, 0, &Error{File: name, Line: pos.Line, Col: pos.Column, Msg: msg}
		}
		return nil, 0, &Error{File: name, Msg: err.Error()}
	}
	bc := c.Bytecode()
	bc.RemoveDuplicates()
	return bc, st.MaxSymbols() + 1, nil
}

func moduleRefused(mod string, hook bool) string {
	avail := append([]string(nil), allowedModules...)
	if !hook {
		avail = append(avail, "txlab")
	}
	sort.Strings(avail)
	why := "is not a module"
	switch mod {
	case "os", "times", "rand":
		why = "is not allowed in txlab scripts (no file, process, network or clock access; runs must be deterministic)"
	}
	return fmt.Sprintf("import %q refused: it %s; available: %s", mod, why, strings.Join(avail, ", "))
}

var atPos = regexp.MustCompile(`\n\tat (.*):(\d+):(\d+)`)

// newGlobals are a VM's globals: the predefined ones are the caller's to
// set, the sandbox's overrides follow them.
func newGlobals(n, predefined int) []tengo.Object {
	g := make([]tengo.Object, n)
	copy(g[predefined:], overrideObjs)
	return g
}

// runVM runs bytecode with the bounds; errors come back as *Error, at
// the place the VM stopped when that is known.
func runVM(name string, bc *tengo.Bytecode, globals []tengo.Object, valueBound int, maxAllocs int64, timeout time.Duration, allocFlag, timeFlag string) (err error) {
	return runVMOn(nil, name, bc, globals, valueBound, maxAllocs, timeout, allocFlag, timeFlag)
}

// runVMOn is runVM telling started the VM before it runs (the module
// functions ask it where their call is).
func runVMOn(started func(*tengo.VM), name string, bc *tengo.Bytecode, globals []tengo.Object, valueBound int, maxAllocs int64, timeout time.Duration, allocFlag, timeFlag string) (err error) {
	defer holdBound(valueBound)()
	vm := tengo.NewVM(bc, globals, maxAllocs)
	if started != nil {
		started(vm)
	}
	var fired atomic.Bool
	done := make(chan struct{})
	t := time.AfterFunc(timeout, func() {
		fired.Store(true)
		vm.Abort()
		close(done)
	})
	at := func(msg string, aborted bool) *Error {
		e := &Error{File: name, Msg: msg}
		if pos, ok := vmPos(vm, bc.FileSet, aborted); ok {
			e.File, e.Line, e.Col = pos.Filename, pos.Line, pos.Column
		}
		return e
	}
	defer func() {
		if r := recover(); r != nil {
			t.Stop()
			err = at(fmt.Sprint(r), false) // a Go panic inside the VM (integer divide by zero)
		}
	}()
	rerr := vm.Run()
	if !t.Stop() {
		<-done
	}
	if fired.Load() {
		return at(fmt.Sprintf("stopped after %v of wall time (an endless loop?); raise the bound with %s", timeout, timeFlag), true)
	}
	if rerr == nil {
		return nil
	}
	var placed *Error
	if errors.As(rerr, &placed) {
		return placed
	}
	return runtimeError(name, rerr, valueBound, maxAllocs, allocFlag)
}

func runtimeError(name string, err error, valueBound int, maxAllocs int64, allocFlag string) *Error {
	full := err.Error()
	msg, _, _ := strings.Cut(strings.TrimPrefix(full, "Runtime Error: "), "\n\tat ")
	switch {
	case errors.Is(err, tengo.ErrObjectAllocLimit):
		msg = fmt.Sprintf("allocation limit exceeded (%d objects); raise the bound with %s", maxAllocs, allocFlag)
	case errors.Is(err, tengo.ErrStringLimit), errors.Is(err, tengo.ErrBytesLimit):
		msg = fmt.Sprintf("%s: one string or bytes value may hold %d bytes (--max-allocs, at most %d)", msg, valueBound, maxValueBytes)
	}
	e := &Error{File: name, Msg: msg, Err: err}
	if m := atPos.FindStringSubmatch(full); m != nil {
		e.File = m[1]
		e.Line, _ = strconv.Atoi(m[2])
		e.Col, _ = strconv.Atoi(m[3])
	}
	return e
}

var rawHookRe = regexp.MustCompile("\\.hook\\(\\s*`([^`]*)`")

// findRawHooks finds txlab.hook(`...`) raw-string sources and where
// their text starts, so errors in a hook point into the script file.
func findRawHooks(src []byte) map[string]srcPos {
	out := map[string]srcPos{}
	for _, m := range rawHookRe.FindAllSubmatchIndex(src, -1) {
		off := m[2]
		line := 1 + strings.Count(string(src[:off]), "\n")
		col := off - strings.LastIndex(string(src[:off]), "\n")
		text := string(src[m[2]:m[3]])
		if _, dup := out[text]; !dup {
			out[text] = srcPos{line, col}
		}
	}
	return out
}
