package qdisc

import (
	"fmt"
	"math"

	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
)

// The three qdiscs of net/sched/sch_fifo.c, pfifo, bfifo and
// pfifo_head_drop, share their queue (sch->q and its byte backlog),
// sch->limit, init and change (fifo_init: a limit only), dequeue
// (qdisc_dequeue_head), peek (qdisc_peek_head), reset and dump. Only
// their enqueue differs, and bfifo's limit is in bytes.

// fifoQdisc is that shared part.
type fifoQdisc struct {
	q     fifo
	limit uint32 // sch->limit: packets, bytes for bfifo
	mtu   uint32 // psched_mtu(dev): bfifo's default limit and bypass bound
	drops uint64
}

// fifoQopt is struct tc_fifo_qopt as tc sends it: only when a limit is
// given (fifo_parse_opt).
type fifoQopt struct {
	limit uint32
	set   bool
}

// fifoUsage is q_fifo.c's explain().
const fifoUsage = "Usage: ... <[p|b]fifo | pfifo_head_drop> [ limit NUMBER ]"

// parseFifo is fifo_parse_opt: "limit" read with get_size for all three
// kinds (pfifo's "limit 100" is 100 packets), in tc's messages.
func parseFifo(kind string, args []string) (fifoQopt, error) {
	var ctl fifoQopt
	a := NewArgs(kind, args)
	for k := a.Next(); k != ""; k = a.Next() {
		switch k {
		case "limit":
			v, err := a.Value(k)
			if err != nil {
				return ctl, err
			}
			n, err := units.GetSize(v)
			if err != nil {
				return ctl, Parsef(kind, "Illegal value for \"limit\": %v", err)
			}
			ctl = fifoQopt{limit: n, set: true}
		case "help":
			return ctl, Parsef(kind, "%s", fifoUsage)
		default:
			return ctl, Parsef(kind, "unknown parameter %q (%s)", k, fifoUsage)
		}
	}
	return ctl, nil
}

// fifoInit is fifo_init (__fifo_init). Without a limit word tc sends no
// options and the limit is tx_queue_len as it is, times psched_mtu for
// bfifo (a u32 product, as the kernel's). A tx_queue_len of 0 gives
// limit 0, which drops every packet and clears CAN_BYPASS: the kernel
// stopped turning 0 into 1 when IFF_NO_QUEUE replaced tx_queue_len 0 as
// the noqueue marker.
func (f *fifoQdisc) fifoInit(kind string, s Setup, args []string) (Info, error) {
	ctl, err := parseFifo(kind, args)
	if err != nil {
		return Info{}, err
	}
	f.mtu = 1514 // a Setup without an MTU is Ethernet's
	if s.MTU > 0 {
		f.mtu = uint32(s.MTU)
	}
	f.limit = uint32(max(s.TxQueueLen, 0))
	if kind == "bfifo" {
		f.limit *= f.mtu
	}
	return f.apply(kind, ctl), nil
}

// fifoChange is the change op, fifo_init again. tc sends options only
// with a limit, and qdisc_change calls no change op without them, so
// "tc qdisc change ... pfifo" alone changes nothing. A new limit takes
// effect for the next enqueue; packets above it stay queued.
func (f *fifoQdisc) fifoChange(kind string, args []string) (Info, error) {
	ctl, err := parseFifo(kind, args)
	if err != nil {
		return Info{}, err
	}
	return f.apply(kind, ctl), nil
}

// apply is __fifo_init's second half: the limit tc sent, and
// CAN_BYPASS only when a packet fits (limit >= 1 packet; for bfifo,
// limit >= psched_mtu bytes). sch->limit is the Info's Limit in the
// kind's unit: bfifo's is bytes.
func (f *fifoQdisc) apply(kind string, ctl fifoQopt) Info {
	if ctl.set {
		f.limit = ctl.limit
	}
	room := uint32(1)
	flags := EmptyNoop
	if kind == "bfifo" {
		room = f.mtu
	}
	if f.limit >= room {
		flags |= CanBypass
	}
	return Info{Flags: flags, Limit: int(min(f.limit, math.MaxInt32))}
}

// Dequeue implements Qdisc (qdisc_dequeue_head).
func (f *fifoQdisc) Dequeue(ctx Ctx, req DequeueReq, out []skb.Packet) []skb.Packet {
	return dequeueBulk(req, out, func() bool { return f.q.Len() == 0 }, func() skb.Packet {
		ctx.Work(WorkDequeue, 1)
		return f.q.pop()
	})
}

// Peek implements Peeker (qdisc_peek_head).
func (f *fifoQdisc) Peek(Ctx) (skb.Packet, bool) {
	if f.q.Len() == 0 {
		return skb.Packet{}, false
	}
	return f.q.peek(), true
}

// Reset implements Resetter (qdisc_reset_queue).
func (f *fifoQdisc) Reset(ctx Ctx) { f.purge(ctx, skb.DropNotSpecified) }

func (f *fifoQdisc) purge(ctx Ctx, reason skb.DropReason) {
	for f.q.Len() > 0 {
		ctx.Drop(f.q.pop().Handle, reason)
	}
}

// Stats implements Qdisc. None of the three counts overlimits.
func (f *fifoQdisc) Stats() Stats {
	return Stats{Qlen: f.q.Len(), Backlog: f.q.backlog, Drops: f.drops}
}

// PFifo is pfifo: tail drop at limit packets.
type PFifo struct{ fifoQdisc }

// Init implements Qdisc (fifo_init).
func (p *PFifo) Init(_ Ctx, s Setup, args []string) (Info, error) {
	return p.fifoInit("pfifo", s, args)
}

// Change implements Changer (fifo_init).
func (p *PFifo) Change(_ Ctx, args []string) (Info, error) { return p.fifoChange("pfifo", args) }

// Enqueue implements Qdisc (pfifo_enqueue).
func (p *PFifo) Enqueue(ctx Ctx, batch []skb.Packet, rc []Code) {
	for i, pk := range batch {
		ctx.Work(WorkEnqueue, 1)
		if uint64(p.q.Len()) < uint64(p.limit) {
			p.q.push(pk)
			rc[i] = XmitSuccess
			continue
		}
		p.drops++
		ctx.Drop(pk.Handle, skb.DropQdiscDrop)
		rc[i] = XmitDrop
	}
}

// Dump implements Qdisc (fifo_print_opt).
func (p *PFifo) Dump() string { return fmt.Sprintf("limit %dp", p.limit) }

// BFifo is bfifo: tail drop when the packet would take the backlog past
// limit bytes. tbf's and red's default child (fifo_create_dflt with
// bfifo_qdisc_ops) is one, the host's leaf of their class 1:1.
type BFifo struct{ fifoQdisc }

// Init implements Qdisc (fifo_init): the default limit is
// tx_queue_len * psched_mtu bytes.
func (b *BFifo) Init(_ Ctx, s Setup, args []string) (Info, error) {
	return b.fifoInit("bfifo", s, args)
}

// Change implements Changer (fifo_init).
func (b *BFifo) Change(_ Ctx, args []string) (Info, error) { return b.fifoChange("bfifo", args) }

// Enqueue implements Qdisc (bfifo_enqueue for each packet).
func (b *BFifo) Enqueue(ctx Ctx, batch []skb.Packet, rc []Code) {
	for i, pk := range batch {
		ctx.Work(WorkEnqueue, 1)
		rc[i] = XmitSuccess
		if !b.add(ctx, pk) {
			rc[i] = XmitDrop
		}
	}
}

// Add is bfifo_enqueue: the packet joins the tail while
// sch->qstats.backlog + qdisc_pkt_len stays within the limit (u32s, as
// the kernel adds them), else it is dropped (qdisc_drop, QDISC_DROP).
// It reports whether the packet was queued.
func (b *BFifo) add(ctx Ctx, p skb.Packet) bool {
	if uint32(b.q.backlog)+p.Len <= b.limit {
		b.q.push(p)
		return true
	}
	b.drops++
	ctx.Drop(p.Handle, skb.DropQdiscDrop)
	return false
}

// Dump implements Qdisc (fifo_print_opt: bfifo's limit in sprint_size).
func (b *BFifo) Dump() string { return "limit " + units.SprintSize(uint64(b.limit)) }

// PFifoHeadDrop is pfifo_head_drop: at limit packets the oldest is
// dropped to make room for the new one, so under overload it keeps the
// freshest packets.
type PFifoHeadDrop struct{ fifoQdisc }

// Init implements Qdisc (fifo_hd_init, __fifo_init as pfifo's).
func (h *PFifoHeadDrop) Init(_ Ctx, s Setup, args []string) (Info, error) {
	return h.fifoInit("pfifo_head_drop", s, args)
}

// Change implements Changer (fifo_hd_init).
func (h *PFifoHeadDrop) Change(_ Ctx, args []string) (Info, error) {
	return h.fifoChange("pfifo_head_drop", args)
}

// Enqueue implements Qdisc (pfifo_tail_enqueue). Below the limit the
// packet joins the tail. At it, __qdisc_queue_drop_head unlinks the
// head onto to_free, freed with the reason __dev_xmit_skb set on it
// when it came (QDISC_DROP); the drop is counted, the new packet joins
// the tail and the sender gets NET_XMIT_CN. With limit 0 the new packet
// is dropped (qdisc_drop), as since 2025's fix (CVE-2025-21702, in 6.12's
// stable tree): before it, the empty queue had no head to drop and took
// the packet anyway.
func (h *PFifoHeadDrop) Enqueue(ctx Ctx, batch []skb.Packet, rc []Code) {
	for i, pk := range batch {
		ctx.Work(WorkEnqueue, 1)
		if h.limit == 0 {
			ctx.Drop(pk.Handle, skb.DropQdiscDrop)
			h.drops++
			rc[i] = XmitDrop
			continue
		}
		if uint64(h.q.Len()) < uint64(h.limit) {
			h.q.push(pk)
			rc[i] = XmitSuccess
			continue
		}
		if h.q.Len() > 0 {
			ctx.Work(WorkDequeue, 1) // the head's unlink
			ctx.Drop(h.q.pop().Handle, skb.DropQdiscDrop)
		}
		h.drops++
		h.q.push(pk)
		rc[i] = XmitCN
	}
}

// Dump implements Qdisc (fifo_print_opt).
func (h *PFifoHeadDrop) Dump() string { return fmt.Sprintf("limit %dp", h.limit) }
