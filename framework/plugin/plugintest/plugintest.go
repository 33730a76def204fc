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

// bad is pfifo that misbehaves at its MisbehaveAt-th dequeue.
type bad struct {
	qdisc.Qdisc
	n    int
	how  func(b *bad, out []skb.Packet) []skb.Packet
	last skb.Packet
}

func (b *bad) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	if b.n++; b.n == MisbehaveAt {
		return b.how(b, out)
	}
	out = b.Qdisc.Dequeue(ctx, req, out)
	if len(out) > 0 {
		b.last = out[len(out)-1]
	}
	return out
}

func fifo() qdisc.Qdisc { q, _ := qdisc.New("pfifo"); return q }

func newBad(how func(b *bad, out []skb.Packet) []skb.Packet) func() qdisc.Qdisc {
	return func() qdisc.Qdisc { return &bad{Qdisc: fifo(), how: how} }
}

// chatty is pfifo that says hello on stderr at init.
type chatty struct{ qdisc.Qdisc }

func (c chatty) Init(s qdisc.Setup, args []string) (qdisc.Info, error) {
	fmt.Fprintln(os.Stderr, "hello from init", s.Handle)
	return c.Qdisc.Init(s, args)
}

// leaky is pfifo whose stats hide one packet.
type leaky struct{ qdisc.Qdisc }

func (l leaky) Stats() qdisc.Stats {
	s := l.Qdisc.Stats()
	if s.Qlen > 0 {
		s.Qlen--
	}
	return s
}

// changer is pfifo that accepts `tc qdisc change`: a new Init.
type changer struct{ qdisc.Qdisc }

func (c changer) Change(_ qdisc.Ctx, args []string) (qdisc.Info, error) {
	return c.Qdisc.Init(qdisc.Setup{Handle: "1:", Parent: "root", MTU: 1514, TxQueueLen: 1000, NumTxQ: 1}, args)
}

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
	"test_chatty": func() qdisc.Qdisc { return chatty{fifo()} },
	"test_leaky":  func() qdisc.Qdisc { return leaky{fifo()} },
	"test_change": func() qdisc.Qdisc { return changer{fifo()} },
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
