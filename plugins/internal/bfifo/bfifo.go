// Package bfifo is the default child qdisc classful shapers create
// (fifo_create_dflt with bfifo_qdisc_ops, net/sched/sch_fifo.c): a byte
// FIFO, invisible to tc qdisc show, that tbf and red keep inside the
// plugin. Before it is given a limit it is the noop_qdisc the parent
// starts with, which drops everything.
package bfifo

import (
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
)

// Fifo is the child: packets, their bytes, its byte limit (sch->limit)
// and its own drop count.
type Fifo struct {
	q       qdisc.Ring[skb.Packet]
	backlog int64
	limit   uint32
	noop    bool
	drops   uint64
}

// Noop is the noop_qdisc a parent starts with.
func Noop() Fifo { return Fifo{noop: true} }

// SetLimit is fifo_set_limit on the child, or fifo_create_dflt with
// limit when the parent still has the noop qdisc (limit 0 keeps it).
// Packets above a lowered limit stay queued (bfifo's change is
// fifo_init: a limit only).
func (f *Fifo) SetLimit(limit uint32) {
	if !f.noop || limit > 0 {
		f.noop, f.limit = false, limit
	}
}

// Enqueue is bfifo_enqueue (noop_enqueue for the noop qdisc): tail drop
// when the backlog would pass the limit, reason QDISC_DROP (qdisc_drop,
// or __qdisc_drop with the reason __dev_xmit_skb set). It reports
// whether the packet was queued.
func (f *Fifo) Enqueue(ctx qdisc.Ctx, p skb.Packet) bool {
	if f.noop || f.backlog+int64(p.Len) > int64(f.limit) {
		f.drops++
		ctx.Drop(p.Handle, skb.DropQdiscDrop)
		return false
	}
	f.q.PushTail(p)
	f.backlog += int64(p.Len)
	return true
}

// Len is the child's qlen; Backlog its bytes; Limit its byte limit.
func (f *Fifo) Len() int       { return f.q.Len() }
func (f *Fifo) Backlog() int64 { return f.backlog }
func (f *Fifo) Limit() uint32  { return f.limit }

// Drops are the child's own drops.
func (f *Fifo) Drops() uint64 { return f.drops }

// Peek is qdisc_peek_head.
func (f *Fifo) Peek() (skb.Packet, bool) {
	if f.q.Len() == 0 {
		return skb.Packet{}, false
	}
	return f.q.Head(), true
}

// Dequeue is qdisc_dequeue_head.
func (f *Fifo) Dequeue() (skb.Packet, bool) {
	if f.q.Len() == 0 {
		return skb.Packet{}, false
	}
	p := f.q.PopHead()
	f.backlog -= int64(p.Len)
	return p, true
}

// Purge frees every packet with reason (qdisc_reset's rtnl_kfree_skbs
// is NOT_SPECIFIED, a Reset's QUEUE_PURGE).
func (f *Fifo) Purge(ctx qdisc.Ctx, reason skb.DropReason) {
	for f.q.Len() > 0 {
		ctx.Drop(f.q.PopHead().Handle, reason)
	}
	f.backlog = 0
}
