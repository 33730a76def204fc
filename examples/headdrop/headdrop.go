// Command txlab-qdisc-headdrop is the worked example of an out-of-process
// qdisc plugin: a packet FIFO that, when full, drops its oldest packet to
// make room for the new one — the kernel's pfifo_head_drop
// (net/sched/sch_fifo.c). Under overload it keeps the freshest packets,
// which is what a latency-sensitive flow (telemetry, voice, game state)
// wants: a stale packet is worth less than a new one.
//
// Build it as txlab-qdisc-headdrop and hand it to txlab with --plugin or a
// plugin directory; see README.md.
package main

import (
	"fmt"

	"github.com/txlab/txlab/framework/plugin/sdk"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
)

func main() { sdk.ServeQdisc(New) }

// New makes a headdrop qdisc; Init configures it.
func New() qdisc.Qdisc { return &HeadDrop{} }

var _ qdisc.Qdisc = (*HeadDrop)(nil)

// HeadDrop is pfifo_head_drop: a FIFO of at most limit packets that drops
// from the head when full.
type HeadDrop struct {
	q       qdisc.Ring[skb.Packet] // sch->q
	backlog int64                  // sch->qstats.backlog, in bytes
	limit   int                    // sch->limit, in packets
	drops   uint64                 // sch->qstats.drops
}

// Kind names the qdisc whatever the binary is called.
func (*HeadDrop) Kind() string { return "headdrop" }

// Help is the line `txlab plugin list` prints.
func (*HeadDrop) Help() string {
	return "packet FIFO that drops the oldest packet when full (pfifo_head_drop, sch_fifo.c)"
}

// Init implements qdisc.Qdisc (fifo_init). The default limit is
// tx_queue_len as it is, 0 included, as for pfifo. No TCQ_F_CAN_BYPASS:
// keep the example minimal and let every packet pass through Enqueue.
func (h *HeadDrop) Init(_ qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	h.limit = s.TxQueueLen // __fifo_init keeps a 0 (every packet dropped)
	a := qdisc.NewArgs("headdrop", args)
	for k := a.Next(); k != ""; k = a.Next() {
		switch k {
		case "limit":
			n, err := a.Size(k) // fifo_parse_opt reads it with get_size
			if err != nil {
				return qdisc.Info{}, err
			}
			h.limit = int(n)
		default:
			return qdisc.Info{}, a.Unknown(k, "limit")
		}
	}
	return qdisc.Info{Limit: h.limit}, nil
}

func (h *HeadDrop) push(p skb.Packet) {
	h.q.PushTail(p)
	h.backlog += int64(p.Len)
}

func (h *HeadDrop) pop() skb.Packet {
	p := h.q.PopHead()
	h.backlog -= int64(p.Len)
	return p
}

// Enqueue implements qdisc.Qdisc (pfifo_tail_enqueue).
func (h *HeadDrop) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i, p := range batch {
		ctx.Work(qdisc.WorkEnqueue, 1)
		switch {
		case h.limit == 0:
			// No head to drop: the new packet goes (qdisc_drop).
			h.drops++
			ctx.Drop(p.Handle, skb.DropQdiscDrop)
			rc[i] = qdisc.XmitDrop
		case h.q.Len() < h.limit:
			h.push(p) // qdisc_enqueue_tail
			rc[i] = qdisc.XmitSuccess
		default:
			// Full: __qdisc_queue_drop_head + qdisc_qstats_drop, then
			// take the new packet. Unlinking the head costs a dequeue.
			// The kernel counts a drop, not an overlimit, and frees the
			// head with the reason __dev_xmit_skb set on it when it
			// came: QDISC_DROP.
			ctx.Work(qdisc.WorkDequeue, 1)
			h.drops++
			ctx.Drop(h.pop().Handle, skb.DropQdiscDrop)
			h.push(p)
			rc[i] = qdisc.XmitCN // this packet is queued, another was dropped
		}
	}
}

// Dequeue implements qdisc.Qdisc (qdisc_dequeue_head, in bulk).
func (h *HeadDrop) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) {
		if h.q.Len() == 0 {
			return skb.Packet{}, false
		}
		ctx.Work(qdisc.WorkDequeue, 1)
		return h.pop(), true
	})
}

// Peek implements qdisc.Peeker (qdisc_peek_head).
func (h *HeadDrop) Peek(qdisc.Ctx) (skb.Packet, bool) {
	if h.q.Len() == 0 {
		return skb.Packet{}, false
	}
	return h.q.Head(), true
}

// Reset implements qdisc.Resetter (qdisc_reset_queue): purges are not
// counted as drops.
func (h *HeadDrop) Reset(ctx qdisc.Ctx) {
	for h.q.Len() > 0 {
		ctx.Drop(h.pop().Handle, skb.DropNotSpecified)
	}
}

// Stats implements qdisc.Qdisc. Overlimits stays 0, as in the kernel.
func (h *HeadDrop) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: h.q.Len(), Backlog: h.backlog, Drops: h.drops}
}

// Dump implements qdisc.Qdisc (fifo_dump; tc prints the limit in packets).
func (h *HeadDrop) Dump() string { return fmt.Sprintf("limit %dp", h.limit) }
