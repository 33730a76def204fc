// Package dualpi2 is the kernel's DualPI2 qdisc (net/sched/sch_dualpi2.c,
// 6.17 on; RFC 9332): a coupled dual queue. Packets whose ECN field
// matches the mask (ECT(1), the L4S identifier, by default) go to the
// low-latency L-queue, the rest to the classic C-queue. One PI2
// controller, updated every tupdate from the larger of the two queues'
// head delays, gives a base probability p: classic packets are dropped
// (or CE-marked) with p squared, L4S packets marked with p times the
// coupling factor, and the L-queue also marks at a step when a packet's
// sojourn exceeds step_thresh. A WRR with classic_protection's weights
// shares the link between the queues so neither starves.
package dualpi2

import (
	"math"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func init() {
	qdisc.Register("dualpi2", "DualPI2: coupled L4S and classic queues under one PI2 controller, step marking, WRR starvation protection, RFC 9332 (sch_dualpi2.c)",
		func() qdisc.Qdisc { return &DualPI2{} })
}

// dropStep is SKB_DROP_REASON_DUALPI2_STEP_DROP: a not-ECT packet in
// the L-queue past the step threshold.
const dropStep skb.DropReason = "DUALPI2_STEP_DROP"

// class is enum dualpi2_classification_results.
type class uint8

const (
	classic class = iota // DUALPI2_C_CLASSIC: C-queue
	l4s                  // DUALPI2_C_L4S: L-queue, scalable marking and classic drop
	llll                 // DUALPI2_C_LLLL: L-queue, no drop or mark
	numClasses
)

// item is a queued packet with struct dualpi2_skb_cb.
type item struct {
	pkt       skb.Packet
	ts        sim.Time // enqueue time
	class     class
	applyStep bool
}

// queue is one of the two: its packets, backlog, head's enqueue time
// (c_head_ts, l_head_ts: 0 when empty) and packets_in_c or _l.
type queue struct {
	r         qdisc.Ring[item]
	bytes     uint32
	headTs    sim.Time
	packetsIn uint32
}

func (x *queue) Len() int { return x.r.Len() }

// push is the tail of dualpi2_enqueue_skb for one queue.
func (x *queue) push(it item) {
	x.packetsIn++
	if x.headTs == 0 {
		x.headTs = it.ts
	}
	x.r.PushTail(it)
	x.bytes += it.pkt.Len
}

// pop takes the head (__qdisc_dequeue_head), the next head's time
// becoming the queue's (head_enqueue_time).
func (x *queue) pop() item {
	it := x.r.PopHead()
	x.bytes -= it.pkt.Len
	x.headTs = 0
	if x.r.Len() > 0 {
		x.headTs = x.r.Front().ts
	}
	return it
}

// DualPI2 is struct dualpi2_sched_data with its two queues (sch->q is
// the C-queue, l_queue's the L-queue; the L-queue's packets count in the
// qdisc's qlen and backlog too).
type DualPI2 struct {
	handle uint16
	mtu    uint32 // psched_mtu
	c, l   queue

	// PI2
	target  uint64 // ns
	tupdate uint32 // ns
	prob    uint32
	alpha   uint32 // scaled
	beta    uint32

	stepThresh    uint32 // packets or ns
	stepInPackets bool

	credit, creditInit int32 // c_protection_credit (its sign: which queue)
	wc, wl             uint8

	limit        uint32 // sch->limit
	memoryLimit  uint32
	coupling     uint8
	ecnMask      uint8
	minQlenStep  uint32
	dropEarly    bool
	dropOverload bool
	splitGSO     bool

	// statistics
	lastQdelay    uint64
	maxq          uint32
	ecnMark       uint32
	stepMarks     uint32
	memoryUsed    uint32
	maxMemoryUsed uint32
	drops         uint64
	overlimits    uint64
	now           sim.Time // the last call's, for the dump's delays
}

// calculateCProtection is dualpi2_calculate_c_protection: the WRR
// weights and the credit the scheduler starts from.
func (q *DualPI2) calculateCProtection(wc uint8) {
	q.wc, q.wl = wc, maxWC-wc
	q.creditInit = int32(q.mtu) * (int32(q.wc) - int32(q.wl))
	q.credit = q.creditInit
}

// memoryLimitFor is get_memory_limit: the limit in packets at twice
// the MTU each.
func (q *DualPI2) memoryLimitFor(limit uint32) uint32 {
	return uint32(min(uint64(limit)*2*uint64(q.mtu), math.MaxUint32))
}

// Init implements qdisc.Qdisc (dualpi2_init: the defaults of
// dualpi2_reset_default, then dualpi2_change when options are given,
// and the PI2 timer at now + tupdate).
func (q *DualPI2) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	*q = DualPI2{handle: uint16(s.Major()), mtu: uint32(max(s.MTU, 1))}
	q.limit = 10000 // max 125 ms at 1 Gbit/s
	q.memoryLimit = q.memoryLimitFor(q.limit)
	q.target = 15 * uint64(sim.Millisecond)
	q.tupdate = uint32(16 * sim.Millisecond)
	q.alpha, q.beta = scaleAlphaBeta(41), scaleAlphaBeta(819) // ~0.16 and ~3.2 Hz, x256
	q.stepThresh = uint32(sim.Millisecond)
	q.calculateCProtection(10) // wc 10%, wl 90%
	q.ecnMask = ecnMaskL4S
	q.coupling = 2 // window fairness for equal RTTs
	q.dropOverload = true
	q.splitGSO = true
	q.now = ctx.Now()
	if len(args) > 0 {
		if err := q.apply(ctx, o); err != nil {
			return qdisc.Info{}, err
		}
	}
	ctx.ModTimer(ctx.Now() + sim.Time(q.tupdate))
	return q.info(), nil
}

// info is what the host needs: sch->limit, TCQ_F_DEQUEUE_DROPS, split
// GSO skbs, the step drop's reason and the filter block.
func (q *DualPI2) info() qdisc.Info {
	f := qdisc.EmptyNoop | qdisc.DequeueDrops | qdisc.HasBlock
	if q.splitGSO {
		f |= qdisc.SplitGSO
	}
	return qdisc.Info{Flags: f, Limit: int(min(q.limit, math.MaxInt32)), DropReasons: []skb.DropReason{dropStep}}
}

// Change implements qdisc.Changer (dualpi2_change).
func (q *DualPI2) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	if len(args) == 0 {
		// tc sends an empty nest
		return qdisc.Info{}, qdisc.Refusef("dualpi2", "Error: sch_dualpi2: Dualpi2 options are required.")
	}
	q.now = ctx.Now()
	if err := q.apply(ctx, o); err != nil {
		return qdisc.Info{}, err
	}
	return q.info(), nil
}

// apply is dualpi2_change after tc: the policy's checks, the attributes
// given, then drops from the C-queue's head, then the L-queue's, until
// the queues are within the limits.
func (q *DualPI2) apply(ctx qdisc.Ctx, o opts) error {
	for _, a := range []qdisc.Attr[uint32]{o.alpha, o.beta} {
		if a.Set && (a.V < 1 || a.V > alphaBetaMax) {
			return qdisc.Refusef("dualpi2", "Error: integer out of range (alpha and beta are 1/256 to 8388607.996).")
		}
	}
	if o.coupling.Set && o.coupling.V < 1 {
		return qdisc.Refusef("dualpi2", "Error: integer out of range (coupling_factor is 1 to 255).")
	}
	o.ecnMask.Apply(&q.ecnMask)
	if o.limit.Set {
		q.limit = o.limit.V
		q.memoryLimit = q.memoryLimitFor(q.limit)
	}
	o.memlimit.Apply(&q.memoryLimit)
	if o.target.Set {
		q.target = uint64(o.target.V) * 1000
	}
	if o.tupdate.Set {
		q.tupdate = usToNs(o.tupdate.V)
	}
	if o.alpha.Set {
		q.alpha = scaleAlphaBeta(o.alpha.V)
	}
	if o.beta.Set {
		q.beta = scaleAlphaBeta(o.beta.V)
	}
	if o.stepPkts.Set {
		q.stepInPackets, q.stepThresh = true, o.stepPkts.V
	} else if o.stepUs.Set {
		q.stepInPackets, q.stepThresh = false, usToNs(o.stepUs.V)
	}
	o.minQlenStep.Apply(&q.minQlenStep)
	o.coupling.Apply(&q.coupling)
	o.dropOverload.Apply(&q.dropOverload)
	o.dropEarly.Apply(&q.dropEarly)
	if o.cProtection.Set {
		q.calculateCProtection(o.cProtection.V)
	}
	o.splitGSO.Apply(&q.splitGSO)
	for uint32(q.qlen()) > q.limit || q.memoryUsed > q.memoryLimit {
		// qdisc_dequeue_internal, which leaves the head times alone
		x := &q.c
		if x.Len() == 0 {
			x = &q.l
		}
		it := x.r.PopHead()
		x.bytes -= it.pkt.Len
		q.memoryUsed -= it.pkt.TrueSize
		q.drops++
		ctx.Drop(it.pkt.Handle, skb.DropNotSpecified) // rtnl_qdisc_drop
	}
	return nil
}

func (q *DualPI2) qlen() int            { return q.c.Len() + q.l.Len() }
func (q *DualPI2) backlog() uint32      { return q.c.bytes + q.l.bytes }
func inLQueue(it *item) bool            { return it.class != classic }
func roll(ctx qdisc.Ctx, p uint32) bool { return ctx.Rand() <= p } // dualpi2_roll

// rollSquared is dualpi2_roll(p) && dualpi2_roll(p): two draws, the
// second only if the first passed.
func rollSquared(ctx qdisc.Ctx, p uint32) bool {
	if !roll(ctx, p) {
		return false
	}
	return roll(ctx, p)
}

// classify is dualpi2_skb_classify: the ECN field against the mask,
// then skb->priority's minor when its major is the qdisc's, then the
// filters' classid minor. ok is false for a packet a filter dropped.
func (q *DualPI2) classify(ctx qdisc.Ctx, p *skb.Packet) (class, bool) {
	if p.ECN&q.ecnMask != 0 {
		return l4s, true
	}
	if uint16(p.Priority>>16) == q.handle && p.Priority&0xFFFF < uint32(numClasses) {
		return class(p.Priority & 0xFFFF), true
	}
	at := qdisc.MakeClassID(q.handle, 0)
	fc, ok := qdisc.Filters(ctx, at)
	if !ok {
		return classic, true
	}
	r := fc.Classify(p, at)
	switch r.Verdict {
	case qdisc.VerdictShot:
		return classic, false
	case qdisc.VerdictClass:
		if m := r.Class.Minor(); m < uint16(numClasses) {
			return class(m), true
		}
	}
	return classic, true
}

// mark is dualpi2_mark.
func (q *DualPI2) mark(p *skb.Packet) bool {
	if p.SetCE() {
		q.ecnMark++
		return true
	}
	return false
}

// mustDrop is must_drop: whether the packet is dropped (or marked, if
// ECT) by the PI2 probability; never below a standing queue of 2 MTUs.
func (q *DualPI2) mustDrop(ctx qdisc.Ctx, it *item) bool {
	if q.backlog() < 2*q.mtu {
		return false
	}
	prob := q.prob
	localL := uint64(prob) * uint64(q.coupling)
	overload := localL > maxProb
	switch it.class {
	case classic:
		// dualpi2_classic_marking: p squared
		if rollSquared(ctx, prob) {
			if overload || it.pkt.ECN == 0 {
				return true
			}
			q.mark(&it.pkt)
		}
		return false
	case l4s:
		// dualpi2_scalable_marking: p times the coupling; on overload
		// classic drops first, if drop_on_overload
		if overload {
			if q.dropOverload && rollSquared(ctx, prob) {
				return true
			}
			q.mark(&it.pkt)
			return false
		}
		if roll(ctx, uint32(localL)) {
			if it.pkt.ECN == 0 { // a not-ECT packet a filter put in the L-queue
				return true
			}
			q.mark(&it.pkt)
		}
	}
	return false // DUALPI2_C_LLLL
}

// Enqueue implements qdisc.Qdisc (dualpi2_qdisc_enqueue for each skb:
// classified once, and with split_gso a GSO skb the host split comes as
// its segments together, each enqueued; the skb's code is a success if
// any segment was queued).
func (q *DualPI2) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	q.now = ctx.Now()
	for i := 0; i < len(batch); {
		n := qdisc.GSOSkbLen(ctx, i)
		code := q.enqueueSkb(ctx, batch[i:i+n])
		for j := i; j < i+n; j++ {
			rc[j] = code
		}
		i += n
	}
}

func (q *DualPI2) enqueueSkb(ctx qdisc.Ctx, segs []skb.Packet) qdisc.Code {
	cl, ok := q.classify(ctx, &segs[0])
	if !ok {
		// TC_ACT_SHOT: NET_XMIT_SUCCESS | __NET_XMIT_BYPASS, counted
		q.drops++
		for i := range segs {
			ctx.Drop(segs[i].Handle, skb.DropQdiscDrop)
		}
		return qdisc.XmitSuccess | qdisc.XmitBypass
	}
	code, queued := qdisc.XmitDrop, false
	for i := range segs {
		c := q.enqueueOne(ctx, &segs[i], cl)
		if c == qdisc.XmitSuccess {
			queued = true
		}
		code = c
	}
	if queued {
		return qdisc.XmitSuccess
	}
	return code
}

// enqueueOne is dualpi2_enqueue_skb.
func (q *DualPI2) enqueueOne(ctx qdisc.Ctx, p *skb.Packet, cl class) qdisc.Code {
	ctx.Work(qdisc.WorkEnqueue, 1)
	it := item{pkt: *p, class: cl}
	if uint32(q.qlen()) >= q.limit || uint64(q.memoryUsed)+uint64(p.TrueSize) > uint64(q.memoryLimit) {
		q.overlimits++
		q.drops++
		ctx.Drop(p.Handle, skb.DropQdiscOverlimit)
		return qdisc.XmitDrop
	}
	if q.dropEarly && q.mustDrop(ctx, &it) {
		q.drops++
		ctx.Drop(p.Handle, skb.DropQdiscCongested)
		return qdisc.XmitSuccess | qdisc.XmitBypass
	}
	ctx.Work(qdisc.WorkTstamp, 1)
	it.ts = ctx.Now()
	q.memoryUsed += p.TrueSize
	q.maxMemoryUsed = max(q.maxMemoryUsed, q.memoryUsed)
	q.maxq = max(q.maxq, uint32(q.qlen()))
	if !inLQueue(&it) {
		q.c.push(it)
		return qdisc.XmitSuccess
	}
	// the step threshold applies to an L4S packet while the L-queue
	// holds at least min_qlen_step
	it.applyStep = it.class == l4s && uint32(q.l.Len()) >= q.minQlenStep
	q.l.push(it)
	return qdisc.XmitSuccess
}

// dequeuePacket is dequeue_packet: the WRR's choice (the L-queue while
// the credit is not positive or the C-queue is empty), and the credit
// change the packet would make if sent.
func (q *DualPI2) dequeuePacket() (item, int32, bool) {
	var it item
	var change int32
	switch {
	case q.l.Len() > 0 && (q.c.Len() == 0 || q.credit <= 0):
		it = q.l.pop()
		if q.c.Len() > 0 {
			change = int32(q.wc)
		}
	case q.c.Len() > 0:
		it = q.c.pop()
		if q.l.Len() > 0 {
			change = -int32(q.wl)
		}
	default:
		q.credit = q.creditInit
		return item{}, 0, false
	}
	q.memoryUsed -= it.pkt.TrueSize
	return it, change * int32(it.pkt.Len), true
}

// stepAQM is do_step_aqm: an L-queue packet past the step (its
// sojourn, or the L-queue's length in packets) is marked, or dropped
// if not ECT.
func (q *DualPI2) stepAQM(it *item, now sim.Time) bool {
	var qdelay uint64
	if q.stepInPackets {
		qdelay = uint64(q.l.Len())
	} else {
		qdelay = uint64(now - it.ts)
	}
	if it.applyStep && qdelay > uint64(q.stepThresh) {
		if it.pkt.ECN == 0 {
			return true
		}
		if q.mark(&it.pkt) {
			q.stepMarks++
		}
	}
	return false
}

// dequeue is __dualpi2_qdisc_dequeue: packets dropped on the way (at
// dequeue unless drop_enqueue, and by the step) go to DequeueDrop.
func (q *DualPI2) dequeue(ctx qdisc.Ctx) (skb.Packet, bool) {
	ctx.Work(qdisc.WorkTstamp, 1)
	now := ctx.Now()
	q.now = now
	for {
		it, change, ok := q.dequeuePacket()
		if !ok {
			return skb.Packet{}, false
		}
		ctx.Work(qdisc.WorkDequeue, 1)
		if !q.dropEarly && q.mustDrop(ctx, &it) {
			q.drops++
			ctx.DequeueDrop(it.pkt.Handle, skb.DropQdiscCongested)
			continue
		}
		if inLQueue(&it) && q.stepAQM(&it, now) {
			q.drops++
			ctx.DequeueDrop(it.pkt.Handle, dropStep)
			continue
		}
		q.credit += change
		return it.pkt, true
	}
}

// Dequeue implements qdisc.Qdisc.
func (q *DualPI2) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.dequeue(ctx) })
}

// Timer implements qdisc.TimerQdisc (dualpi2_timer: the probability,
// then the next update tupdate on).
func (q *DualPI2) Timer(ctx qdisc.Ctx) {
	q.now = ctx.Now()
	q.prob = q.calculateProbability(ctx.Now())
	ctx.ModTimer(ctx.Now() + sim.Time(q.tupdate))
}

// queueDelays is get_queue_delays: each queue's head delay, 0 when empty.
func (q *DualPI2) queueDelays(now sim.Time) (c, l uint64) {
	if q.c.headTs != 0 {
		c = uint64(now - q.c.headTs)
	}
	if q.l.headTs != 0 {
		l = uint64(now - q.l.headTs)
	}
	return c, l
}

// calculateProbability is calculate_probability: PI on the larger head
// delay, alpha on its distance from target and beta on its change since
// the last update, in 64 ns units, bounded to 0..MAX_PROB; without
// drop_on_overload capped so the L4S probability stays at most 100%.
func (q *DualPI2) calculateProbability(now sim.Time) uint32 {
	dc, dl := q.queueDelays(now)
	qdelay := max(dl, dc)
	delta := (int64(qdelay) - int64(q.target)) * int64(q.alpha)
	delta += (int64(qdelay) - int64(q.lastQdelay)) * int64(q.beta)
	q.lastQdelay = qdelay
	var p uint32
	if delta > 0 {
		p = uint32(uint64(delta)>>alphaBetaGran) + q.prob
		if p < q.prob {
			p = maxProb
		}
	} else {
		p = q.prob - uint32(uint64(-delta)>>alphaBetaGran)
		if p > q.prob {
			p = 0
		}
	}
	if !q.dropOverload {
		return min(p, maxProb/uint32(q.coupling))
	}
	return p
}

// Reset implements qdisc.Resetter (dualpi2_reset: both queues, the
// counters, the probability and the credit; the configuration stays).
func (q *DualPI2) Reset(ctx qdisc.Ctx) {
	for _, x := range []*queue{&q.c, &q.l} {
		for x.Len() > 0 {
			ctx.Drop(x.r.PopHead().pkt.Handle, skb.DropNotSpecified)
		}
		*x = queue{}
	}
	q.prob = 0
	q.maxq, q.ecnMark, q.stepMarks = 0, 0, 0
	q.memoryUsed, q.maxMemoryUsed = 0, 0
	q.credit = q.creditInit
}

// Stats implements qdisc.Qdisc: tc_dualpi2_xstats, the delays at the
// qdisc's last call (dualpi2_dump_stats reads the clock at the dump).
func (q *DualPI2) Stats() qdisc.Stats {
	dc, dl := q.queueDelays(q.now)
	x := []qdisc.XStat{qdisc.XFloat("prob", float64(q.prob)/maxProb),
		qdisc.XUint("delay_c", uint64(nsToUs(dc))), qdisc.XUint("delay_l", uint64(nsToUs(dl))),
		qdisc.XUint("pkts_in_c", uint64(q.c.packetsIn)), qdisc.XUint("pkts_in_l", uint64(q.l.packetsIn)),
		qdisc.XUint("maxq", uint64(q.maxq)), qdisc.XUint("ecn_mark", uint64(q.ecnMark)),
		qdisc.XUint("step_mark", uint64(q.stepMarks)), qdisc.XInt("credit", int64(q.credit)),
		qdisc.XUint("memory_used", uint64(q.memoryUsed)), qdisc.XUint("max_memory_used", uint64(q.maxMemoryUsed)),
		qdisc.XUint("memory_limit", uint64(q.memoryLimit))}
	return qdisc.Stats{Qlen: q.qlen(), Backlog: int64(q.backlog()), Drops: q.drops, Overlimits: q.overlimits, XStats: x}
}

// Dump implements qdisc.Qdisc.
func (q *DualPI2) Dump() string { return q.dump() }
