// Package plugintest has the qdiscs the plugin tests serve from their
// own test binaries: pfifo variants that crash, hang, hand packets back
// twice or forged, panic, talk on stderr, or lie in their stats.
package plugintest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// ServeIfPlugin serves the built-ins plus Qdiscs and exits, when this
// process was started as a plugin (call it first in TestMain).
func ServeIfPlugin() {
	if plugin.IsPluginProcess() {
		plugin.Serve(plugin.Builtins().WithQdiscs("test:", Qdiscs))
		os.Exit(0)
	}
}

// MisbehaveAt is the dequeue at which the bad qdiscs misbehave.
const MisbehaveAt = 20

// bad is pfifo that misbehaves at its MisbehaveAt-th dequeue. The test
// qdiscs embed *qdisc.PFifo, not the qdisc.Qdisc interface, so pfifo's
// optional Peek and Reset stay visible.
type bad struct {
	*qdisc.PFifo
	n    int
	how  func(b *bad, out []skb.Packet) []skb.Packet
	last skb.Packet
}

func (b *bad) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	if b.n++; b.n == MisbehaveAt {
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
	"test_fifo": fifo,
	"test_crash": newBad(func(*bad, []skb.Packet) []skb.Packet {
		// A crash no recover can catch: the runtime prints the panic on
		// the process's stderr and exits.
		go func() { panic("test_crash: crashing on purpose") }()
		select {}
	}),
	"test_hang": newBad(func(*bad, []skb.Packet) []skb.Packet { select {} }),
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
