// Package tbf is the Token Bucket Filter (net/sched/sch_tbf.c): a
// bucket of `burst` bytes refilled at `rate` (and optionally a second
// one of `mtu` bytes at `peakrate`), kept as transmission time in ns
// (tokens, ptokens, t_c); the head packet leaves when both buckets hold
// its time, otherwise the watchdog is armed for when they will.
//
// The queue behind the buckets is the kernel's default child, a bfifo
// of `limit` bytes (fifo_create_dflt, invisible to tc qdisc show),
// modelled inside the plugin. The kernel's tbf is classful: its one
// class 1:1 can take another qdisc (tc qdisc add ... parent 1:1 ...);
// that is for the classful host and is not modelled here. tbf_segment
// is the host's: a plugin cannot split one skb into several, so tbf
// declares its max_size (Info.SegmentOver) and a GSO skb past it whose
// segments fit (a TSO burst over a small bucket) arrives as those
// segments.
package tbf

import (
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/plugins/internal/bfifo"
)

func init() {
	qdisc.Register("tbf", "Token Bucket Filter: rate, burst, peakrate shaper over a byte FIFO (sch_tbf.c)",
		func() qdisc.Qdisc { return &TBF{} })
}

// TBF is struct tbf_sched_data.
type TBF struct {
	cfg config

	tokens  int64    // B tokens, in ns of transmission at rate
	ptokens int64    // P tokens, in ns at peakrate
	tc      sim.Time // t_c, the time check-point

	child bfifo.Fifo // the default child, a bfifo of limit bytes

	drops      uint64
	overlimits uint64

	speedBps int64 // the device's, for rates in percent
}

// Init implements qdisc.Qdisc (tbf_init: t_c now, the noop child, then
// tbf_change).
func (q *TBF) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	*q = TBF{child: bfifo.Noop(), speedBps: s.RateBps}
	q.tc = ctx.Now()
	return q.change(args)
}

// Change implements qdisc.Changer (tbf_change): the new buckets start
// full; the child keeps its packets and takes the new byte limit
// (fifo_set_limit: packets above it stay queued).
func (q *TBF) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	return q.change(args)
}

func (q *TBF) change(args []string) (qdisc.Info, error) {
	o, err := parse(args, q.speedBps)
	if err != nil {
		return qdisc.Info{}, err
	}
	c, err := validate(o)
	if err != nil {
		return qdisc.Info{}, err
	}
	q.child.SetLimit(c.limit)
	q.cfg = c
	q.tokens, q.ptokens = c.buffer, c.mtu
	return q.info(), nil
}

// info: tbf sets no flags and leaves sch->limit 0 (its limit is the
// child's). EmptyNoop: an empty dequeue peeks an empty child and stops.
// SegmentOver: GSO skbs past max_size reach tbfEnqueue as segments
// (tbf_segment).
func (q *TBF) info() qdisc.Info {
	return qdisc.Info{Flags: qdisc.EmptyNoop, SegmentOver: q.cfg.maxSize}
}

// Enqueue implements qdisc.Qdisc (tbf_enqueue for each packet).
func (q *TBF) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i := range batch {
		rc[i] = q.tbfEnqueue(ctx, batch[i])
	}
}

// tbfEnqueue is tbf_enqueue: a packet the bucket can never hold is
// dropped (a GSO skb whose segments fit came as segments: Info's
// SegmentOver), the rest go to the child, whose drop tbf counts as its
// own too.
func (q *TBF) tbfEnqueue(ctx qdisc.Ctx, p skb.Packet) qdisc.Code {
	ctx.Work(qdisc.WorkEnqueue, 1)
	if p.Len > q.cfg.maxSize {
		q.drops++
		ctx.Drop(p.Handle, skb.DropQdiscDrop)
		return qdisc.XmitDrop
	}
	if !q.child.Enqueue(ctx, p) {
		// The child's NET_XMIT_DROP (noop_qdisc's NET_XMIT_CN counts as
		// a drop too: net_xmit_drop_count).
		q.drops++
		return qdisc.XmitDrop
	}
	return qdisc.XmitSuccess
}

// tbfDequeue is tbf_dequeue: peek the child's head, refill the buckets
// for the time since t_c (at most a full bucket), and take the packet
// if both hold its transmission time; else arm the watchdog for when
// they will and count an overlimit.
func (q *TBF) tbfDequeue(ctx qdisc.Ctx) (skb.Packet, bool) {
	p, ok := q.child.Peek()
	if !ok {
		return skb.Packet{}, false
	}
	ctx.Work(qdisc.WorkTstamp, 1)
	now := ctx.Now()
	toks := min(int64(now-q.tc), q.cfg.buffer)
	var ptoks int64
	if q.cfg.peak.Present() {
		ptoks = min(toks+q.ptokens, q.cfg.mtu) - int64(q.cfg.peak.L2T(p.Len))
	}
	toks = min(toks+q.tokens, q.cfg.buffer) - int64(q.cfg.rate.L2T(p.Len))
	if toks|ptoks >= 0 {
		ctx.Work(qdisc.WorkDequeue, 1)
		q.child.Dequeue() // qdisc_dequeue_peeked
		q.tc, q.tokens, q.ptokens = now, toks, ptoks
		return p, true
	}
	ctx.Watchdog(now + sim.Time(max(-toks, -ptoks)))
	q.overlimits++
	return skb.Packet{}, false
}

// Dequeue implements qdisc.Qdisc: tbf_dequeue until it throttles or the
// bulk is full.
func (q *TBF) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.tbfDequeue(ctx) })
}

// Reset implements qdisc.Resetter (tbf_reset): purge the child, full
// buckets from now, the watchdog off.
func (q *TBF) Reset(ctx qdisc.Ctx) {
	q.child.Purge(ctx, skb.DropQueuePurge)
	q.tc = ctx.Now()
	q.tokens, q.ptokens = q.cfg.buffer, q.cfg.mtu
	ctx.CancelWatchdog()
}

// Stats implements qdisc.Qdisc. tbf has no xstats; its backlog is the
// child's (tbf_dump copies it).
func (q *TBF) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.child.Len(), Backlog: q.child.Backlog(), Drops: q.drops, Overlimits: q.overlimits}
}
