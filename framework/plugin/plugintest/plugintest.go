// Package plugintest has the qdiscs and drivers the plugin tests serve
// from their own test binaries: pfifo variants that crash, hang, hand
// packets back twice or forged, panic, talk on stderr (or flood it),
// lie in their stats, fork a grandchild, exit at start or in Init, or
// put garbage on the wire; a driver that never completes a descriptor.
package plugintest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/txlab/txlab/drivers/ice" // test_stuck wraps it
	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Environment the test plugins read (a host passes its own on).
const (
	// EnvPidDir names a directory where each plugin process writes
	// plugin-PID and each grandchild sleeper-PID, for tests that check
	// nothing survives.
	EnvPidDir = "TXLAB_TEST_PIDDIR"
	// EnvFloodMB is how many MB test_flood writes to each of its
	// stdout, stderr and raw fd 2 (default 4).
	EnvFloodMB = "TXLAB_TEST_FLOOD_MB"
	envSleeper = "TXLAB_TEST_SLEEPER"
)

// ExitAtStart is the kind whose plugin process exits before the
// handshake (it is the link's name that tells it so).
const ExitAtStart = "test_exitstart"

// ServeIfPlugin serves the built-ins plus Qdiscs and Drivers and exits,
// when this process was started as a plugin (call it first in TestMain).
// It is also the grandchild test_fork starts, which sleeps.
func ServeIfPlugin() {
	if os.Getenv(envSleeper) == "1" {
		writePid("sleeper")
		for {
			time.Sleep(time.Hour)
		}
	}
	if plugin.IsPluginProcess() {
		if filepath.Base(os.Args[0]) == plugin.QdiscPrefix+ExitAtStart {
			fmt.Fprintln(os.Stderr, ExitAtStart+": exiting before the handshake")
			os.Exit(5)
		}
		writePid("plugin")
		plugin.Serve(plugin.Builtins().WithQdiscs("test:", Qdiscs).WithDrivers("test:", Drivers))
		os.Exit(0)
	}
}

func writePid(what string) {
	if dir := os.Getenv(EnvPidDir); dir != "" {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d", what, os.Getpid())), nil, 0o644)
	}
}

// Pids are the processes that wrote what-PID files in dir (what:
// "plugin" or "sleeper").
func Pids(dir, what string) []int {
	var out []int
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if s, ok := strings.CutPrefix(e.Name(), what+"-"); ok {
			if pid, err := strconv.Atoi(s); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// Alive reports whether process pid runs (a zombie does not: it is dead,
// waiting to be reaped).
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// The host's own stdout and stderr pipes (go-plugin points os.Stdout
// and os.Stderr elsewhere), held so they are never closed.
var (
	fd1 = os.NewFile(1, "stdout")
	fd2 = os.NewFile(2, "stderr")
)

var forkOnce sync.Once

// forkSleeper starts, once per plugin process, a grandchild that sleeps
// for ever holding the host's stdout and stderr pipes open.
func forkSleeper() {
	forkOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			panic(err)
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), envSleeper+"=1")
		cmd.Stdout, cmd.Stderr = fd1, fd2
		if err := cmd.Start(); err != nil {
			panic(err)
		}
	})
}

// flood writes EnvFloodMB MB of lines to stdout, stderr and raw fd 2,
// and one long line without a newline.
func flood() {
	mb := 4
	if n, err := strconv.Atoi(os.Getenv(EnvFloodMB)); err == nil && n >= 0 {
		mb = n
	}
	line := []byte(strings.Repeat("flood ", 170) + "\n") // 1 KB
	long := []byte(strings.Repeat("x", 256<<10))
	for _, w := range []*os.File{os.Stdout, os.Stderr, fd2} {
		w.Write(long)
		w.Write([]byte("\n"))
		for range mb << 10 {
			w.Write(line)
		}
	}
}

// MisbehaveAt is the dequeue at which the bad qdiscs misbehave.
const MisbehaveAt = 20

// bad is pfifo that misbehaves at its MisbehaveAt-th dequeue. The test
// qdiscs embed *qdisc.PFifo, not the qdisc.Qdisc interface, so pfifo's
// optional Peek and Reset stay visible.
type bad struct {
	*qdisc.PFifo
	n      int
	how    func(b *bad, out []skb.Packet) []skb.Packet
	last   skb.Packet
	onInit func()
	ctx    qdisc.Ctx // the misbehaving dequeue's
	req    qdisc.DequeueReq
}

func (b *bad) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	if b.onInit != nil {
		b.onInit()
	}
	return b.PFifo.Init(ctx, s, args)
}

func (b *bad) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	if b.n++; b.n == MisbehaveAt && b.how != nil {
		b.ctx, b.req = ctx, req
		return b.how(b, out)
	}
	out = b.PFifo.Dequeue(ctx, req, out)
	if len(out) > 0 {
		b.last = out[len(out)-1]
	}
	return out
}

func fifo() qdisc.Qdisc { return &qdisc.PFifo{} }

func newBad(how func(b *bad, out []skb.Packet) []skb.Packet) func() qdisc.Qdisc {
	return func() qdisc.Qdisc { return &bad{PFifo: &qdisc.PFifo{}, how: how} }
}

// atInit is pfifo that runs f in Init, then behaves, or misbehaves at
// its MisbehaveAt-th dequeue as how says (nil: never).
func atInit(f func(), how func(b *bad, out []skb.Packet) []skb.Packet) func() qdisc.Qdisc {
	return func() qdisc.Qdisc {
		return &bad{PFifo: &qdisc.PFifo{}, how: how, onInit: f}
	}
}

func crash(*bad, []skb.Packet) []skb.Packet {
	// A crash no recover can catch: the runtime prints the panic on the
	// process's stderr and exits.
	go func() { panic("test_crash: crashing on purpose") }()
	select {}
}

// garbage is pfifo whose MisbehaveAt-th dequeue reply is corrupted on
// the wire by mangle.
type garbage struct {
	*bad
	on     bool
	mangle func([]byte) []byte
}

func (g *garbage) GarbleReply(frame []byte) []byte {
	if !g.on {
		return frame
	}
	g.on = false
	return g.mangle(frame)
}

func newGarbage(mangle func([]byte) []byte) func() qdisc.Qdisc {
	return func() qdisc.Qdisc {
		g := &garbage{mangle: mangle}
		g.bad = &bad{PFifo: &qdisc.PFifo{}, how: func(b *bad, out []skb.Packet) []skb.Packet {
			g.on = true
			return b.PFifo.Dequeue(b.ctx, b.req, out)
		}}
		return g
	}
}

// noise keeps the frame's type, call id and status and overwrites the
// rest (posted ops, packets) with a fixed pseudo-random pattern.
func noise(b []byte) []byte {
	x := uint32(2463534242)
	for i := 6; i < len(b); i++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// stuck is ice whose NAPI poll never cleans a descriptor: the ring
// fills, the queue stops and is never woken.
type stuck struct{ driver.Driver }

func (stuck) Poll(driver.Ctx, int, int) (int, bool) { return 0, true }

// Drivers are the test drivers, by name.
var Drivers = map[string]func() driver.Driver{
	"test_stuck": func() driver.Driver {
		d, err := driver.New("ice")
		if err != nil {
			panic(err)
		}
		return stuck{d}
	},
}

// chatty is pfifo that says hello on stderr at init.
type chatty struct{ *qdisc.PFifo }

func (c chatty) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	fmt.Fprintln(os.Stderr, "hello from init", s.Handle)
	return c.PFifo.Init(ctx, s, args)
}

// leaky is pfifo whose stats hide one packet.
type leaky struct{ *qdisc.PFifo }

func (l leaky) Stats() qdisc.Stats {
	s := l.PFifo.Stats()
	if s.Qlen > 0 {
		s.Qlen--
	}
	return s
}

// stalled is pfifo paced to one packet per 10 us that forgets to arm its
// watchdog: it holds packets, returns none, and nothing would ever
// dequeue them. No Peek (it would not honour the pacing), so the host's
// qdisc_peek_dequeued stands in.
type stalled struct {
	f    qdisc.PFifo
	next sim.Time
}

func (s *stalled) Init(ctx qdisc.Ctx, st qdisc.Setup, args []string) (qdisc.Info, error) {
	return s.f.Init(ctx, st, args)
}
func (s *stalled) Enqueue(ctx qdisc.Ctx, b []skb.Packet, rc []qdisc.Code) { s.f.Enqueue(ctx, b, rc) }
func (s *stalled) Reset(ctx qdisc.Ctx)                                    { s.f.Reset(ctx) }
func (s *stalled) Stats() qdisc.Stats                                     { return s.f.Stats() }
func (s *stalled) Dump() string                                           { return s.f.Dump() }
func (s *stalled) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	if now := ctx.Now(); now < s.next {
		return out // the bug: no ctx.Watchdog(s.next)
	}
	s.next = ctx.Now() + 10*sim.Microsecond
	return s.f.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, out)
}

// ticker is pfifo with a timer of its own, armed in Init every 100 us:
// each tick frees the oldest packet with a reason it declared.
type ticker struct{ *qdisc.PFifo }

const tickEvery = 100 * sim.Microsecond

func (k ticker) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	info, err := k.PFifo.Init(ctx, s, args)
	info.DropReasons = []skb.DropReason{"TEST_TICK"}
	ctx.ModTimer(ctx.Now() + tickEvery)
	return info, err
}

func (k ticker) Timer(ctx qdisc.Ctx) {
	if p, ok := k.PFifo.Peek(ctx); ok {
		k.PFifo.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil)
		ctx.Drop(p.Handle, "TEST_TICK")
	}
	ctx.ModTimer(ctx.Now() + tickEvery)
}

// changer is pfifo that accepts `tc qdisc change`: a new Init (pfifo's
// Init uses no context).
type changer struct{ *qdisc.PFifo }

func (c changer) Change(_ qdisc.Ctx, args []string) (qdisc.Info, error) {
	return c.PFifo.Init(nil, qdisc.Setup{Handle: "1:", Parent: "root", MTU: 1514, TxQueueLen: 1000, NumTxQ: 1}, args)
}

// fixed is pfifo without a change op (Qdisc_ops.change NULL): its
// methods forward to pfifo's, all but Change.
type fixed struct{ f *qdisc.PFifo }

func (x fixed) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	return x.f.Init(ctx, s, args)
}
func (x fixed) Enqueue(ctx qdisc.Ctx, b []skb.Packet, rc []qdisc.Code) { x.f.Enqueue(ctx, b, rc) }
func (x fixed) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return x.f.Dequeue(ctx, req, out)
}
func (x fixed) Peek(ctx qdisc.Ctx) (skb.Packet, bool) { return x.f.Peek(ctx) }
func (x fixed) Reset(ctx qdisc.Ctx)                   { x.f.Reset(ctx) }
func (x fixed) Stats() qdisc.Stats                    { return x.f.Stats() }
func (x fixed) Dump() string                          { return x.f.Dump() }

// Qdiscs are the test kinds, by name.
var Qdiscs = map[string]func() qdisc.Qdisc{
	"test_fifo":  fifo,
	"test_crash": newBad(crash),
	"test_hang":  newBad(func(*bad, []skb.Packet) []skb.Packet { select {} }),
	"test_twice": newBad(func(b *bad, out []skb.Packet) []skb.Packet {
		return append(out, b.last) // handed back before
	}),
	"test_forge": newBad(func(b *bad, out []skb.Packet) []skb.Packet {
		p := b.last
		p.Handle += 1 << 40 // never handed in
		return append(out, p)
	}),
	"test_panic": newBad(func(*bad, []skb.Packet) []skb.Packet {
		panic("test_panic: a bug in the plugin")
	}),
	"test_chatty":  func() qdisc.Qdisc { return chatty{&qdisc.PFifo{}} },
	"test_leaky":   func() qdisc.Qdisc { return leaky{&qdisc.PFifo{}} },
	"test_change":  func() qdisc.Qdisc { return changer{&qdisc.PFifo{}} },
	"test_stalled": func() qdisc.Qdisc { return &stalled{} },
	"test_ticker":  func() qdisc.Qdisc { return ticker{&qdisc.PFifo{}} },
	"test_fixed":   func() qdisc.Qdisc { return fixed{&qdisc.PFifo{}} },
	// A grandchild holding the host's stdout and stderr: forked in Init,
	// then the qdisc behaves (test_fork) or crashes (test_forkcrash).
	"test_fork":      atInit(forkSleeper, nil),
	"test_forkcrash": atInit(forkSleeper, crash),
	"test_flood":     atInit(flood, nil),
	"test_exitinit": atInit(func() {
		fmt.Fprintln(fd2, "test_exitinit: exiting in Init")
		os.Exit(4)
	}, nil),
	"test_garbage":  newGarbage(noise),
	"test_badframe": newGarbage(func(b []byte) []byte { b[0] = 99; return b }),
}

// Link makes dir/PREFIX+NAME (plugin.QdiscPrefix or DriverPrefix), a
// link to this test binary, which serves what ServeIfPlugin serves.
func Link(t testing.TB, dir, prefix, name string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, prefix+name)
	if err := os.Symlink(self, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// RunChecked runs a test binary's tests (m.Run) and then checks that
// nothing they started survives: every plugin process and grandchild
// (each writes a PID file into a directory this sets as EnvPidDir) must
// be gone, and no plugin shared-memory file may be left, within a few
// seconds of plugin.Cleanup. A leak fails the binary.
func RunChecked(m *testing.M) int {
	dir, err := os.MkdirTemp("", "txlab-pids-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Setenv(EnvPidDir, dir)
	before := map[string]bool{} // another process's, not ours
	for _, f := range shmFiles() {
		before[f] = true
	}
	code := m.Run()
	plugin.Cleanup()
	if err := Leftovers(dir, 5*time.Second, before); err != nil {
		fmt.Fprintln(os.Stderr, "LEAK after the tests:", err)
		return 1
	}
	return code
}

// Leftovers waits up to d for every process that wrote a PID file into
// dir to be gone and for the shared-memory directories to hold no plugin
// channel file (but those in ignore), and says what is still there.
func Leftovers(dir string, d time.Duration, ignore map[string]bool) error {
	var left []string
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		left = left[:0]
		for _, what := range []string{"plugin", "sleeper"} {
			for _, pid := range Pids(dir, what) {
				if Alive(pid) {
					left = append(left, fmt.Sprintf("%s process %d", what, pid))
				}
			}
		}
		for _, f := range shmFiles() {
			if !ignore[f] {
				left = append(left, f)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Since(start) > d {
			return fmt.Errorf("still there after %v: %s", d, strings.Join(left, ", "))
		}
	}
}

// shmFiles are the plugin channel files (framework/plugin/shm) that exist.
func shmFiles() []string {
	var out []string
	for _, dir := range []string{"/dev/shm", os.TempDir()} {
		files, _ := filepath.Glob(filepath.Join(dir, "txlab-plugin-*"))
		out = append(out, files...)
	}
	return out
}
