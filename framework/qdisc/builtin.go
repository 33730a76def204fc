package qdisc

import (
	"fmt"

	"github.com/txlab/txlab/framework/skb"
)

func init() {
	Register("pfifo", "packet FIFO with a packet limit (sch_fifo.c)", func() Qdisc { return &PFifo{} })
	Register("pfifo_fast", "3-band priority FIFO, the kernel default (sch_generic.c)", func() Qdisc { return &PFifoFast{} })
}

// fifo is a packet FIFO with its byte backlog; shared by the built-ins.
type fifo struct {
	Ring[skb.Packet]
	backlog int64
}

func (f *fifo) push(p skb.Packet) {
	f.PushTail(p)
	f.backlog += int64(p.Len)
}

func (f *fifo) pop() skb.Packet {
	p := f.PopHead()
	f.backlog -= int64(p.Len)
	return p
}

func (f *fifo) peek() skb.Packet { return f.Head() }

// BulkDequeue fills a bulk the way the host's DequeueReq asks: at least
// one packet, at most req.Max, after the first only while the bytes so
// far are below req.Bytes, and with SameQueue stopping after the first
// packet of another txq. next returns false when nothing is left.
func BulkDequeue(req DequeueReq, out []skb.Packet, next func() (skb.Packet, bool)) []skb.Packet {
	var bytes int64
	first := -1
	for n := 0; n < max(req.Max, 1); n++ {
		if n > 0 && bytes >= req.Bytes {
			break
		}
		p, ok := next()
		if !ok {
			break
		}
		out = append(out, p)
		bytes += int64(p.Len)
		if first < 0 {
			first = int(p.Queue)
		} else if req.SameQueue && int(p.Queue) != first {
			break
		}
	}
	return out
}

// dequeueBulk is BulkDequeue over a queue with an emptiness test.
func dequeueBulk(req DequeueReq, out []skb.Packet, empty func() bool, next func() skb.Packet) []skb.Packet {
	return BulkDequeue(req, out, func() (skb.Packet, bool) {
		if empty() {
			return skb.Packet{}, false
		}
		return next(), true
	})
}

// PFifo is pfifo (net/sched/sch_fifo.c): tail drop at limit packets.
type PFifo struct {
	q     fifo
	limit int
	drops uint64
}

// fifoQopt is struct tc_fifo_qopt as tc sends it: only when a limit is
// given (fifo_parse_opt).
type fifoQopt struct {
	limit uint32
	set   bool
}

// parseFifo is fifo_parse_opt: "limit" read with get_size, as tc does
// for pfifo too.
func parseFifo(kind string, args []string) (fifoQopt, error) {
	var ctl fifoQopt
	a := NewArgs(kind, args)
	for k := a.Next(); k != ""; k = a.Next() {
		if k != "limit" {
			return ctl, Parsef(kind, "unknown parameter %q (known: limit)", k)
		}
		n, err := a.Size(k)
		if err != nil {
			return ctl, err
		}
		ctl = fifoQopt{limit: n, set: true}
	}
	return ctl, nil
}

// Init implements Qdisc (fifo_init): without a limit, __fifo_init takes
// tx_queue_len as it is. A tx_queue_len of 0 gives limit 0, which drops
// every packet and clears CAN_BYPASS: the kernel stopped turning 0 into
// 1 when IFF_NO_QUEUE replaced tx_queue_len 0 as the noqueue marker.
func (p *PFifo) Init(_ Ctx, s Setup, args []string) (Info, error) {
	ctl, err := parseFifo("pfifo", args)
	if err != nil {
		return Info{}, err
	}
	p.limit = max(s.TxQueueLen, 0)
	return p.apply(ctl), nil
}

// Change implements Changer: pfifo's change op is fifo_init again. A new
// limit takes effect for the next enqueue; packets above it stay queued.
func (p *PFifo) Change(_ Ctx, args []string) (Info, error) {
	ctl, err := parseFifo("pfifo", args)
	if err != nil {
		return Info{}, err
	}
	return p.apply(ctl), nil
}

// apply is __fifo_init's second half: the limit, and CAN_BYPASS only
// with room for a packet.
func (p *PFifo) apply(ctl fifoQopt) Info {
	if ctl.set {
		p.limit = int(ctl.limit)
	}
	info := Info{Flags: EmptyNoop | DequeueReadsCb, Limit: min(p.limit, 1<<31-1)}
	if p.limit >= 1 {
		info.Flags |= CanBypass
	}
	return info
}

// Enqueue implements Qdisc (pfifo_enqueue).
func (p *PFifo) Enqueue(ctx Ctx, batch []skb.Packet, rc []Code) {
	for i, pk := range batch {
		ctx.Work(WorkEnqueue, 1)
		if p.q.Len() < p.limit {
			p.q.push(pk)
			rc[i] = XmitSuccess
			continue
		}
		p.drops++
		ctx.Drop(pk.Handle, skb.DropQdiscDrop)
		rc[i] = XmitDrop
	}
}

// Dequeue implements Qdisc (qdisc_dequeue_head).
func (p *PFifo) Dequeue(ctx Ctx, req DequeueReq, out []skb.Packet) []skb.Packet {
	return dequeueBulk(req, out, func() bool { return p.q.Len() == 0 }, func() skb.Packet {
		ctx.Work(WorkDequeue, 1)
		return p.q.pop()
	})
}

// Peek implements Peeker (qdisc_peek_head).
func (p *PFifo) Peek(Ctx) (skb.Packet, bool) {
	if p.q.Len() == 0 {
		return skb.Packet{}, false
	}
	return p.q.peek(), true
}

// Reset implements Resetter.
func (p *PFifo) Reset(ctx Ctx) {
	for p.q.Len() > 0 {
		ctx.Drop(p.q.pop().Handle, skb.DropQueuePurge)
	}
}

// Stats implements Qdisc.
func (p *PFifo) Stats() Stats { return Stats{Qlen: p.q.Len(), Backlog: p.q.backlog, Drops: p.drops} }

// Dump implements Qdisc.
func (p *PFifo) Dump() string { return fmt.Sprintf("limit %dp", p.limit) }

// prio2band is pfifo_fast's priority map (sch_generic.c).
var prio2band = [16]uint8{1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}

// PFifoFast is pfifo_fast: three bands, each a ring of tx_queue_len; band
// 0 first. The kernel marks it TCQ_F_NOLOCK; so does this model.
type PFifoFast struct {
	band  [3]fifo
	limit int
	drops uint64
}

// errNoOptions is tc's answer to options for pfifo_fast, whose tc
// module has no parse_qopt: tc_qdisc_modify refuses them itself.
var errNoOptions = Syntaxf("qdisc 'pfifo_fast' does not support option parsing")

// Init implements Qdisc. pfifo_fast takes no options.
func (p *PFifoFast) Init(_ Ctx, s Setup, args []string) (Info, error) {
	if len(args) > 0 {
		return Info{}, errNoOptions
	}
	if s.TxQueueLen < 1 {
		return Info{}, Refusef("pfifo_fast", "tx_queue_len must be >= 1 (its rings are that size)")
	}
	p.limit = s.TxQueueLen
	return p.info(), nil
}

func (p *PFifoFast) info() Info {
	return Info{Flags: CanBypass | NoLock | EmptyNoop | DequeueReadsCb, Limit: p.limit}
}

// Change implements Changer. pfifo_fast has no change op, but tc sends
// no options for it, and qdisc_change without options changes nothing;
// any option word is tc's parse error.
func (p *PFifoFast) Change(_ Ctx, args []string) (Info, error) {
	if len(args) > 0 {
		return Info{}, errNoOptions
	}
	return p.info(), nil
}

// Enqueue implements Qdisc (pfifo_fast_enqueue).
func (p *PFifoFast) Enqueue(ctx Ctx, batch []skb.Packet, rc []Code) {
	for i, pk := range batch {
		ctx.Work(WorkEnqueue, 1)
		b := &p.band[prio2band[pk.Priority&15]]
		if b.Len() >= p.limit {
			p.drops++
			ctx.Drop(pk.Handle, skb.DropQdiscDrop)
			rc[i] = XmitDrop
			continue
		}
		b.push(pk)
		rc[i] = XmitSuccess
	}
}

func (p *PFifoFast) first() *fifo {
	for i := range p.band {
		if p.band[i].Len() > 0 {
			return &p.band[i]
		}
	}
	return nil
}

// Dequeue implements Qdisc (pfifo_fast_dequeue, band 0 first).
func (p *PFifoFast) Dequeue(ctx Ctx, req DequeueReq, out []skb.Packet) []skb.Packet {
	return dequeueBulk(req, out, func() bool { return p.first() == nil }, func() skb.Packet {
		ctx.Work(WorkDequeue, 1)
		return p.first().pop()
	})
}

// Peek implements Peeker (qdisc_peek_head).
func (p *PFifoFast) Peek(Ctx) (skb.Packet, bool) {
	if b := p.first(); b != nil {
		return b.peek(), true
	}
	return skb.Packet{}, false
}

// Reset implements Resetter.
func (p *PFifoFast) Reset(ctx Ctx) {
	for b := p.first(); b != nil; b = p.first() {
		ctx.Drop(b.pop().Handle, skb.DropQueuePurge)
	}
}

// Stats implements Qdisc.
func (p *PFifoFast) Stats() Stats {
	s := Stats{Drops: p.drops}
	for i := range p.band {
		s.Qlen += p.band[i].Len()
		s.Backlog += p.band[i].backlog
	}
	return s
}

// Dump implements Qdisc.
func (p *PFifoFast) Dump() string { return "bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1" }
