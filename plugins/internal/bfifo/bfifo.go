// Package bfifo is the default child qdisc classful shapers create
// (fifo_create_dflt with bfifo_qdisc_ops, net/sched/sch_fifo.c): the
// bfifo qdisc (qdisc.BFifo), invisible to tc qdisc show, that tbf and red
// keep inside the plugin. Before it is given a limit it is the
// noop_qdisc the parent starts with, which drops everything.
package bfifo

import (
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
)

// Fifo is the child: the bfifo once the parent made it, the noop qdisc
// before, and the drops of both.
type Fifo struct {
	b         qdisc.BFifo
	noop      bool
	noopDrops uint64
}

// Noop is the noop_qdisc a parent starts with.
func Noop() Fifo { return Fifo{noop: true} }

// SetLimit is fifo_set_limit on the child, or fifo_create_dflt with
// limit when the parent still has the noop qdisc (limit 0 keeps it).
// Packets above a lowered limit stay queued (bfifo's change is
// fifo_init: a limit only).
func (f *Fifo) SetLimit(limit uint32) {
	if !f.noop || limit > 0 {
		f.noop = false
		f.b.SetLimit(limit)
	}
}

// Enqueue is bfifo_enqueue (qdisc.BFifo.Add), or noop_enqueue for the
// noop qdisc, whose drop's reason is the QDISC_DROP __dev_xmit_skb set.
// It reports whether the packet was queued.
func (f *Fifo) Enqueue(ctx qdisc.Ctx, p skb.Packet) bool {
	if f.noop {
		f.noopDrops++
		ctx.Drop(p.Handle, skb.DropQdiscDrop)
		return false
	}
	return f.b.Add(ctx, p)
}

// Len is the child's qlen; Backlog its bytes; Limit its byte limit.
func (f *Fifo) Len() int       { return f.b.Len() }
func (f *Fifo) Backlog() int64 { return f.b.Backlog() }
func (f *Fifo) Limit() uint32  { return f.b.Limit() }

// Drops are the child's own drops.
func (f *Fifo) Drops() uint64 { return f.noopDrops + f.b.Stats().Drops }

// Peek is qdisc_peek_head.
func (f *Fifo) Peek() (skb.Packet, bool) { return f.b.Head() }

// Dequeue is qdisc_dequeue_head.
func (f *Fifo) Dequeue() (skb.Packet, bool) { return f.b.TakeHead() }

// Purge frees every packet with reason (qdisc_reset's rtnl_kfree_skbs
// is NOT_SPECIFIED, a Reset's QUEUE_PURGE).
func (f *Fifo) Purge(ctx qdisc.Ctx, reason skb.DropReason) { f.b.Purge(ctx, reason) }
