package netdev

import (
	"fmt"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// ChangeQdisc is `tc qdisc change` on q (qdisc_change -> ops->change):
// between engine steps, as the tc process runs under rtnl and the tree
// lock. Packets the change drops are unlinked at once and freed the way
// rtnl_kfree_skbs frees them, after the change: here on CPU 0, from an
// interrupt at the current time (tc's own process is not a simulated
// CPU, and neither is the time it spends). Until then they are in
// flight. A refused change changes nothing.
func (n *Net) ChangeQdisc(q *Qdisc, args []string) error {
	x := &ctlCtx{net: n, q: q}
	info, err := qdisc.Change(q.Ops, x, args)
	if err != nil {
		if x.freed.Len > 0 {
			return fmt.Errorf("qdisc %s %s dropped %d packets in a change it refused", q.Kind, q.Handle, x.freed.Len)
		}
		return err
	}
	q.Flags = info.Flags | q.Flags&qdisc.OneTxQueue
	q.Limit = info.Limit
	if x.freed.Len == 0 {
		return nil
	}
	for s := x.freed.Pop(); s != nil; s = x.freed.Pop() {
		n.rtnlFree.Push(s)
	}
	n.E.RaiseIRQ(n.E.CPUs[0], n.E.Now(), func(c *sim.CPU) { n.kfreeSkbList(c, &n.rtnlFree) })
	return nil
}

// ctlCtx is the qdisc.Ctx of a change: engine time, no CPU to charge,
// drops collected for rtnl_kfree_skbs.
type ctlCtx struct {
	net   *Net
	q     *Qdisc
	freed skb.List
}

func (x *ctlCtx) Now() sim.Time { return x.net.E.Now() }

// Spend is the tc process's time, which runs on no simulated CPU.
func (x *ctlCtx) Spend(int64) {}

// Rand and Work are the plugin side's (wire.QdiscCtx), as for qctx.
func (x *ctlCtx) Rand() uint32 {
	panic("qdisc Ctx.Rand reached the host: the qdisc is not behind wire.WrapQdisc")
}
func (x *ctlCtx) Work(qdisc.Work, int) {
	panic("qdisc Ctx.Work reached the host: the qdisc is not behind wire.WrapQdisc")
}

func (x *ctlCtx) Drop(h skb.Handle, reason skb.DropReason) {
	s := x.q.takeBack(x.net, h, "drop")
	s.Reason = reason
	x.freed.Push(s)
}

func (x *ctlCtx) DequeueDrop(h skb.Handle, reason skb.DropReason) { x.Drop(h, reason) }

// Watchdog arms the qdisc's watchdog from CPU 0, where the change's
// frees run too.
func (x *ctlCtx) Watchdog(at sim.Time) {
	c := x.net.E.CPUs[0]
	q := x.q
	q.ctx.cpu = c
	q.ctx.Watchdog(at)
}
