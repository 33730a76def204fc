// Package tbf is the Token Bucket Filter (net/sched/sch_tbf.c): a
// bucket of `burst` bytes refilled at `rate` (and optionally a second
// one of `mtu` bytes at `peakrate`), kept as transmission time in ns
// (tokens, ptokens, t_c); the head packet leaves when both buckets hold
// its time, otherwise the watchdog is armed for when they will.
//
// tbf is classful, as the kernel's: its one class 1:1 holds the queue
// behind the buckets, a leaf the host holds. By default it is a bfifo
// of `limit` bytes (fifo_create_dflt, invisible to tc qdisc show);
// `tc qdisc add ... parent 1:1 ...` puts any qdisc there (tbf_graft),
// fq_codel under a tbf shaper being the usual one. A change of limit
// reaches a fifo leaf (fifo_set_limit). tbf_segment is the host's: a
// plugin cannot split one skb into several, so tbf declares its
// max_size (Info.SegmentOver) and a GSO skb past it whose segments fit
// (a TSO burst over a small bucket) arrives as those segments.
package tbf

import (
	"strconv"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func init() {
	qdisc.Register("tbf", "Token Bucket Filter: rate, burst, peakrate shaper over a child qdisc, a byte FIFO by default (sch_tbf.c)",
		func() qdisc.Qdisc { return &TBF{} })
}

// TBF is struct tbf_sched_data; its child (q->qdisc) is the host's leaf
// of class 1:1.
type TBF struct {
	cfg config

	tokens  int64    // B tokens, in ns of transmission at rate
	ptokens int64    // P tokens, in ns at peakrate
	tc      sim.Time // t_c, the time check-point

	handle uint16
	leaves qdisc.LeafTable

	drops      uint64
	overlimits uint64

	speedBps int64 // the device's, for rates in percent

	batch qdisc.LeafBatch
}

// Init implements qdisc.Qdisc (tbf_init: t_c now, the noop child, then
// tbf_change; the host then gives class 1:1 its default bfifo).
func (q *TBF) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	*q = TBF{speedBps: s.RateBps, handle: uint16(s.Major())}
	q.tc = ctx.Now()
	return q.change(args)
}

// Change implements qdisc.Changer (tbf_change): the new buckets start
// full; the child keeps its packets and, if a fifo, takes the new limit
// (fifo_set_limit, which the host applies from Classes: packets above
// it stay queued).
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
	q.cfg = c
	q.tokens, q.ptokens = c.buffer, c.mtu
	return q.info(), nil
}

// info: tbf sets no flags and leaves sch->limit 0 (its limit is the
// child's). EmptyNoop: an empty dequeue peeks an empty child and stops.
// NoBlock: tbf_class_ops has no tcf_block. SegmentOver: GSO skbs past
// max_size reach tbfEnqueue as segments (tbf_segment).
func (q *TBF) info() qdisc.Info {
	return qdisc.Info{Flags: qdisc.EmptyNoop | qdisc.NoBlock, SegmentOver: q.cfg.maxSize}
}

// class is tbf's one class, 1:1 under its handle.
func (q *TBF) class() qdisc.ClassID { return qdisc.MakeClassID(q.handle, 1) }

// Enqueue implements qdisc.Qdisc (tbf_enqueue for each packet): a
// packet the bucket can never hold is dropped (a GSO skb whose segments
// fit came as segments: Info's SegmentOver); the rest go to the child in
// one host call, and the child's drops are tbf's too
// (net_xmit_drop_count).
func (q *TBF) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	q.batch.Reset()
	for i := range batch {
		ctx.Work(qdisc.WorkEnqueue, 1)
		if batch[i].Len > q.cfg.maxSize {
			q.drops++
			ctx.Drop(batch[i].Handle, skb.DropQdiscDrop)
			rc[i] = qdisc.XmitDrop
			continue
		}
		q.batch.Add(&batch[i], q.class(), i)
	}
	q.drops += q.batch.Send(ctx.(qdisc.ClassCtx), &q.leaves, rc)
}

// tbfDequeue is tbf_dequeue: peek the child's head, refill the buckets
// for the time since t_c (at most a full bucket), and take the packet
// (qdisc_dequeue_peeked) if both hold its transmission time; else arm
// the watchdog for when they will and count an overlimit.
func (q *TBF) tbfDequeue(ctx qdisc.Ctx) (skb.Packet, bool) {
	x := ctx.(qdisc.ClassCtx)
	id := q.class()
	p, ok, dropped := q.leaves.PeekHead(x, id)
	q.drops += uint64(dropped)
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
		var dropped int
		p, ok, _, dropped = q.leaves.Dequeue(x, id)
		q.drops += uint64(dropped)
		if !ok {
			return skb.Packet{}, false
		}
		ctx.Work(qdisc.WorkDequeue, 1)
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

// Reset implements qdisc.Resetter (tbf_reset): the host resets the
// child; full buckets from now, the watchdog off.
func (q *TBF) Reset(ctx qdisc.Ctx) {
	q.leaves.Reset()
	q.tc = ctx.Now()
	q.tokens, q.ptokens = q.cfg.buffer, q.cfg.mtu
	ctx.CancelWatchdog()
}

// Stats implements qdisc.Qdisc. tbf has no xstats; its qlen and backlog
// are the child's (tbf_dump copies the backlog).
func (q *TBF) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.leaves.Qlen, Backlog: q.leaves.Backlog, Drops: q.drops, Overlimits: q.overlimits}
}

// ChangeClass implements qdisc.Classful: tc has no class options for
// tbf (its q_tbf.c has no parse_copt).
func (q *TBF) ChangeClass(qdisc.Ctx, qdisc.ClassReq) error {
	return qdisc.Parsef("tbf", `Error: Qdisc "tbf" is classless.`)
}

// DeleteClass implements qdisc.Classful: tbf's class ops have no delete.
func (q *TBF) DeleteClass(qdisc.Ctx, qdisc.ClassID) error {
	return qdisc.Refusef("tbf", "RTNETLINK answers: Operation not supported (tbf's one class goes with the qdisc)")
}

// Classes implements qdisc.Classful (tbf_walk, tbf_dump_class): the one
// class 1:1 under the qdisc, with no stats of its own (tbf has no
// dump_stats); its default leaf is a bfifo of limit bytes, a fifo leaf
// takes a new limit, and a deleted leaf leaves noop_qdisc (tbf_graft).
func (q *TBF) Classes() []qdisc.Class {
	lim := q.cfg.limit
	return []qdisc.Class{{ID: q.class(), Parent: qdisc.MakeClassID(q.handle, 0), Leaf: true,
		DefaultLeaf: []string{"bfifo", "limit", uitoa(lim)}, FifoLimit: lim, NoStats: true, DelNoop: true}}
}

// QlenNotify implements qdisc.Classful: the child changed without tbf
// (a purge, its own timer's drops).
func (q *TBF) QlenNotify(_ qdisc.Ctx, id qdisc.ClassID, st qdisc.LeafState) {
	q.drops += uint64(q.leaves.Update(id, st, 0, 0))
}

func uitoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
