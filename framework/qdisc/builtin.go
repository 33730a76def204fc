package qdisc

import (
	"github.com/txlab/txlab/framework/skb"
)

func init() {
	Register("pfifo", "packet FIFO with a packet limit (sch_fifo.c)", func() Qdisc { return &PFifo{} })
	Register("bfifo", "byte FIFO with a byte limit (sch_fifo.c)", func() Qdisc { return &BFifo{} })
	Register("pfifo_head_drop", "packet FIFO that drops its oldest packet when full (sch_fifo.c)",
		func() Qdisc { return &PFifoHeadDrop{} })
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
	return Info{Flags: CanBypass | NoLock | EmptyNoop, Limit: p.limit}
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
		ctx.Drop(b.pop().Handle, skb.DropNotSpecified)
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

// RandU64 is get_random_u64 (or get_random_bytes of 8 bytes) from ctx's
// stream: two draws, the high word first.
func RandU64(ctx Ctx) uint64 { return uint64(ctx.Rand())<<32 | uint64(ctx.Rand()) }

// RandBelow is get_random_u32_below (act_gact's netrand, choke's
// random packet): Lemire's multiply, with its rejection of the biased
// low products.
func RandBelow(ctx Ctx, ceil uint32) uint32 {
	m := uint64(ctx.Rand()) * uint64(ceil)
	if uint32(m) < ceil {
		bound := -ceil % ceil
		for uint32(m) < bound {
			m = uint64(ctx.Rand()) * uint64(ceil)
		}
	}
	return uint32(m >> 32)
}

// RandKey is get_random_bytes of a siphash_key_t (sfq's and sfb's
// perturbation): four draws.
func RandKey(ctx Ctx) [2]uint64 { return [2]uint64{RandU64(ctx), RandU64(ctx)} }
