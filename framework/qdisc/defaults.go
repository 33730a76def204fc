package qdisc

import (
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Defaults calls a qdisc's ops the way the kernel's qdisc layer does
// when an optional op is NULL. One per qdisc instance; the host (the
// plugin boundary) uses it, a qdisc never does.
//
// Peek without a Peeker is qdisc_peek_dequeued (sch_generic.h): dequeue
// one packet and keep it aside, still counted in qlen and backlog, as
// the kernel keeps it on sch->gso_skb. The next Dequeue returns that
// packet alone, as dequeue_skb takes a gso_skb packet without bulking.
//
// Reset is ops->reset if the qdisc has one, then the purge of the
// packet kept aside (qdisc_reset). A qdisc without a reset op that
// holds packets would leak them (the kernel would only zero qlen): that
// is an error.
type Defaults struct {
	kept Peeked // the packet Peek kept aside (its p and held)
	buf  []skb.Packet
}

// Dequeue is the qdisc's dequeue, the packet kept aside by Peek first.
func (d *Defaults) Dequeue(q Qdisc, ctx Ctx, req DequeueReq, out []skb.Packet) []skb.Packet {
	if d.kept.held {
		d.kept.held = false
		return append(out, d.kept.p)
	}
	return q.Dequeue(ctx, req, out)
}

// Peek is the qdisc's peek op, or qdisc_peek_dequeued.
func (d *Defaults) Peek(q Qdisc, ctx Ctx) (skb.Packet, bool) {
	if p, ok := q.(Peeker); ok {
		return p.Peek(ctx)
	}
	if !d.kept.held {
		d.buf = q.Dequeue(ctx, DequeueReq{Max: 1}, d.buf[:0])
		if len(d.buf) == 0 {
			return skb.Packet{}, false
		}
		d.kept.p, d.kept.held = d.buf[0], true
	}
	return d.kept.p, true
}

// Stats is the qdisc's counters with the packet kept aside counted.
func (d *Defaults) Stats(q Qdisc) Stats {
	st := q.Stats()
	if d.kept.held {
		st.Qlen++
		st.Backlog += int64(d.kept.p.Len)
	}
	return st
}

// Reset is qdisc_reset: ops->reset, then the kept packet purged.
func (d *Defaults) Reset(q Qdisc, ctx Ctx) {
	if r, ok := q.(Resetter); ok {
		r.Reset(ctx)
	} else if n := q.Stats().Qlen; n > 0 {
		sim.Panicf("qdisc holds %d packets and has no Reset method to drop them", n)
	}
	d.kept.Purge(ctx)
}

// Peeked is qdisc_peek_dequeued for a qdisc whose own peek op it is
// (hhf, sfq): the packet a peek dequeued, kept on sch->gso_skb for the
// next dequeue and counted in the qdisc's qlen and backlog meanwhile.
// Defaults does the same for a qdisc without a peek op.
type Peeked struct {
	p    skb.Packet
	held bool
}

// Dequeue is qdisc_dequeue_peeked: the kept packet first, out of qlen
// and backlog again, else dequeue's.
func (k *Peeked) Dequeue(qlen *int, backlog *int64, dequeue func() (skb.Packet, bool)) (skb.Packet, bool) {
	if k.held {
		k.held = false
		*qlen--
		*backlog -= int64(k.p.Len)
		return k.p, true
	}
	return dequeue()
}

// Peek is qdisc_peek_dequeued: the kept packet, else one from dequeue,
// kept and counted back in qlen and backlog.
func (k *Peeked) Peek(qlen *int, backlog *int64, dequeue func() (skb.Packet, bool)) (skb.Packet, bool) {
	if !k.held {
		p, ok := dequeue()
		if !ok {
			return skb.Packet{}, false
		}
		k.p, k.held = p, true
		*qlen++
		*backlog += int64(p.Len)
	}
	return k.p, true
}

// Purge is qdisc_reset's purge of sch->gso_skb: the kept packet freed
// as QUEUE_PURGE. It leaves qlen and backlog to the caller's reset.
func (k *Peeked) Purge(ctx Ctx) {
	if k.held {
		k.held = false
		ctx.Drop(k.p.Handle, skb.DropQueuePurge)
	}
}

// CheckCtx is a context for Init alone, to check a qdisc's options off
// any host (txlab check): its random stream is fixed, timers and the
// watchdog are ignored, and there is nothing to drop.
func CheckCtx() Ctx { return &checkCtx{rng: sim.NewRand(sim.Seed{})} }

type checkCtx struct{ rng *sim.Rand }

func (*checkCtx) Now() sim.Time                    { return 0 }
func (*checkCtx) Work(Work, int)                   {}
func (c *checkCtx) Rand() uint32                   { return c.rng.Uint32() }
func (*checkCtx) Watchdog(sim.Time)                {}
func (*checkCtx) WatchdogRange(sim.Time, sim.Time) {}
func (*checkCtx) CancelWatchdog()                  {}
func (*checkCtx) ModTimer(sim.Time)                {}
func (*checkCtx) DelTimer()                        {}
func (*checkCtx) Lines(uint64, int)                {}
func (*checkCtx) ReadSibling(int)                  {}
func (*checkCtx) Duplicate(skb.Handle) {
	sim.Panicf("qdisc duplicated a packet in Init, holding none")
}
func (*checkCtx) Drop(skb.Handle, skb.DropReason) {
	sim.Panicf("qdisc dropped a packet in Init, holding none")
}
func (*checkCtx) DequeueDrop(skb.Handle, skb.DropReason) {
	sim.Panicf("qdisc dropped a packet in Init, holding none")
}
