// Package red is Random Early Detection (net/sched/sch_red.c,
// include/net/red.h): the kernel's divisionless fixed-point RED. At
// every enqueue the average backlog (qavg, scaled by 2^Wlog) moves
// toward the child's backlog, or decays over an idle period through the
// Stab table; below min nothing happens, between min and max a packet
// is marked (dropped, or CE-marked with ecn) once a count since the last
// mark reaches a random threshold, above max every packet is.
//
// red is classful, as the kernel's: its one class 1:1 holds the queue, a
// leaf the host holds. Every change that gives a limit (tc always does)
// puts a new bfifo of limit bytes there (__red_change's
// fifo_create_dflt, the old child purged: Class.LeafGen), and `tc qdisc
// add ... parent 1:1 ...` grafts any qdisc there until the next change.
package red

import (
	"strconv"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/plugins/internal/redalgo"
)

func init() {
	qdisc.Register("red", "Random Early Detection: average-queue AQM with ECN, harddrop, nodrop, adaptive (sch_red.c)",
		func() qdisc.Qdisc { return &RED{} })
}

// Adaptive RED's max_P bounds (RED_ONE_PERCENT: DIV_ROUND_CLOSEST(2^32, 100)).
const (
	redOnePercent = uint32((1<<32 + 50) / 100)
	maxPMin       = 1 * redOnePercent
	maxPMax       = 50 * redOnePercent
	adaptPeriod   = 500 * sim.Millisecond // HZ/2
)

// redStats is struct red_stats.
type redStats struct {
	probDrop, probMark, forcedDrop, forcedMark, pdrop uint64
}

// RED is struct red_sched_data; its child (q->qdisc) is the host's leaf
// of class 1:1.
type RED struct {
	limit    uint32
	flags    uint8
	userbits uint8
	parms    redalgo.Parms
	vars     redalgo.Vars
	stats    redStats

	handle uint16
	leaves qdisc.LeafTable
	batch  qdisc.LeafBatch
	// gen counts the changes that made a new child (Class.LeafGen).
	gen uint64

	drops, overlimits uint64
	speedBps          int64 // the device's, for a bandwidth in percent
}

// Init implements qdisc.Qdisc (red_init: the noop child, then
// __red_change; the host makes the bfifo child it asks for).
func (q *RED) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	*q = RED{speedBps: s.RateBps, handle: uint16(s.Major())}
	return q.Change(ctx, args)
}

// class is red's one class, 1:1 under its handle.
func (q *RED) class() qdisc.ClassID { return qdisc.MakeClassID(q.handle, 1) }

// Change implements qdisc.Changer (__red_change): a new child, a bfifo
// of limit bytes (the host makes it after the change and purges the old
// one, as qdisc_purge_queue frees it, telling red with QlenNotify), the
// parameters, the average and count reset, the adaptive timer re-armed
// if asked.
func (q *RED) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse(args, q.speedBps)
	if err != nil {
		return qdisc.Info{}, err
	}
	flags, err := q.validate(o)
	if err != nil {
		return qdisc.Info{}, err
	}
	q.flags, q.userbits = flags, o.qoptFlags&^historicFlags
	q.limit = o.limit
	if o.limit > 0 {
		q.gen++ // fifo_create_dflt: a new child in place of the old
	}
	q.redSetParms(o)
	q.vars.Reset() // red_set_vars
	ctx.DelTimer()
	// The kernel arms the adaptive timer on the flags in tc_red_qopt,
	// which current tc leaves 0 (it sends them in TCA_RED_FLAGS): so
	// `adaptive` shows in the dump but its timer never runs.
	if o.qoptFlags&flagAdaptative != 0 {
		ctx.ModTimer(ctx.Now() + adaptPeriod)
	}
	if o.limit > 0 || q.leaves.Qlen == 0 { // the new child is empty
		q.startIdle(ctx)
	}
	// not EmptyNoop: red_dequeue on an empty child starts the idle period
	return qdisc.Info{Flags: qdisc.NoBlock}, nil
}

// redSetParms is red_set_parms.
func (q *RED) redSetParms(o qopt) {
	q.parms.Set(o.qthMin, o.qthMax, o.wlog, o.plog, o.scellLog, &o.stab, o.maxP)
}

func (q *RED) startIdle(ctx qdisc.Ctx) {
	ctx.Work(qdisc.WorkTstamp, 1)
	q.vars.IdleStart, q.vars.Idling = ctx.Now(), true
}

// calcQavgFromIdleTime is red_calc_qavg_from_idle_time, with its
// ktime_get.
func (q *RED) calcQavgFromIdleTime(ctx qdisc.Ctx) uint64 {
	ctx.Work(qdisc.WorkTstamp, 1)
	return q.parms.QavgFromIdleTime(&q.vars, ctx.Now())
}

// calcQavg is red_calc_qavg.
func (q *RED) calcQavg(ctx qdisc.Ctx, backlog uint32) uint64 {
	if q.vars.Idling {
		return q.calcQavgFromIdleTime(ctx)
	}
	return q.parms.QavgNoIdleTime(&q.vars, backlog)
}

// Enqueue implements qdisc.Qdisc (red_enqueue for each packet).
func (q *RED) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i := range batch {
		rc[i] = q.redEnqueue(ctx, &batch[i])
	}
}

// redEnqueue is red_enqueue.
func (q *RED) redEnqueue(ctx qdisc.Ctx, p *skb.Packet) qdisc.Code {
	ctx.Work(qdisc.WorkEnqueue, 1)
	q.vars.QAvg = q.calcQavg(ctx, uint32(q.leaves.Get(q.class()).Backlog))
	q.vars.Idling = false // red_end_of_idle_period
	reason := skb.DropQdiscCongested
	switch q.parms.Action(&q.vars, q.vars.QAvg, ctx) {
	case redalgo.ProbMark:
		q.overlimits++
		switch {
		case q.flags&flagECN == 0:
			q.stats.probDrop++
			return q.congestionDrop(ctx, p, reason)
		case p.SetCE():
			q.stats.probMark++
		case q.flags&flagNodrop == 0:
			q.stats.probDrop++
			return q.congestionDrop(ctx, p, reason)
		}
	case redalgo.HardMark:
		reason = skb.DropQdiscOverlimit
		q.overlimits++
		switch {
		case q.flags&flagHarddrop != 0 || q.flags&flagECN == 0:
			q.stats.forcedDrop++
			return q.congestionDrop(ctx, p, reason)
		case p.SetCE():
			q.stats.forcedMark++
		case q.flags&flagNodrop == 0:
			q.stats.forcedDrop++
			return q.congestionDrop(ctx, p, reason)
		}
	}
	// qdisc_enqueue into the child, one packet at a time: the next
	// packet's average reads the child's backlog after this one.
	code, drops := q.batch.SendOne(ctx.(qdisc.ClassCtx), &q.leaves, p, q.class())
	q.drops += drops
	if code != qdisc.XmitSuccess { // net_xmit_drop_count
		q.stats.pdrop++
	}
	return code
}

// congestionDrop is red_enqueue's congestion_drop: qdisc_drop_reason,
// then NET_XMIT_CN, not NET_XMIT_DROP: an early drop is congestion, so a
// sender takes the skb as sent (net_xmit_eval) and TCP enters CWR.
func (q *RED) congestionDrop(ctx qdisc.Ctx, p *skb.Packet, reason skb.DropReason) qdisc.Code {
	q.drops++
	ctx.Drop(p.Handle, reason)
	return qdisc.XmitCN
}

// redDequeue is red_dequeue: the child's head (qdisc_dequeue_peeked);
// none starts an idle period.
func (q *RED) redDequeue(ctx qdisc.Ctx) (skb.Packet, bool) {
	p, ok, _, dropped := q.leaves.Dequeue(ctx.(qdisc.ClassCtx), q.class())
	q.drops += uint64(dropped)
	if ok {
		ctx.Work(qdisc.WorkDequeue, 1)
		return p, true
	}
	if !q.vars.Idling {
		q.startIdle(ctx)
	}
	return skb.Packet{}, false
}

// Dequeue implements qdisc.Qdisc.
func (q *RED) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.redDequeue(ctx) })
}

// Peek implements qdisc.Peeker (red_peek: the child's peek).
func (q *RED) Peek(ctx qdisc.Ctx) (skb.Packet, bool) {
	p, ok, _, dropped := q.leaves.Peek(ctx.(qdisc.ClassCtx), q.class())
	q.drops += uint64(dropped)
	return p, ok
}

// Reset implements qdisc.Resetter (red_reset: the host resets the
// child; red_restart).
func (q *RED) Reset(ctx qdisc.Ctx) {
	q.leaves.Reset()
	q.vars = redalgo.Vars{QCount: -1}
}

// Timer implements qdisc.TimerQdisc: red_adaptative_timer.
func (q *RED) Timer(ctx qdisc.Ctx) {
	q.redAdaptativeAlgo(ctx)
	ctx.ModTimer(ctx.Now() + adaptPeriod)
}

// redAdaptativeAlgo is red_adaptative_algo (Adaptive RED, Floyd et al.
// 2001): every 500 ms, max_P grows by min(1%, max_P/4) while the average
// is above the target band and max_P <= 50%, and shrinks by 10% while
// it is below and max_P >= 1%.
func (q *RED) redAdaptativeAlgo(ctx qdisc.Ctx) {
	p := &q.parms
	qavg := q.vars.QAvg
	if q.vars.Idling {
		qavg = q.calcQavgFromIdleTime(ctx)
	}
	qavg >>= p.Wlog
	switch {
	case qavg > uint64(p.TargetMax) && p.MaxP <= maxPMax:
		p.MaxP += min(maxPMin, p.MaxP/4)
	case qavg < uint64(p.TargetMin) && p.MaxP >= maxPMin:
		p.MaxP = p.MaxP / 10 * 9
	}
	p.MaxPDelta = max((p.MaxP+p.QthDelta/2)/p.QthDelta, 1) // DIV_ROUND_CLOSEST
}

// Stats implements qdisc.Qdisc: tc_red_xstats as red_print_xstats prints
// them (early: probability and forced drops; other is always 0).
func (q *RED) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.leaves.Qlen, Backlog: q.leaves.Backlog, Drops: q.drops, Overlimits: q.overlimits,
		XStats: []qdisc.XStat{
			qdisc.XUint("marked", q.stats.probMark+q.stats.forcedMark),
			qdisc.XUint("early", q.stats.probDrop+q.stats.forcedDrop),
			qdisc.XUint("pdrop", q.stats.pdrop),
			qdisc.XUint("other", 0),
		}}
}

// ChangeClass implements qdisc.Classful: tc has no class options for red
// (q_red.c has no parse_copt).
func (q *RED) ChangeClass(qdisc.Ctx, qdisc.ClassReq) error {
	return qdisc.Parsef("red", `Error: Qdisc "red" is classless.`)
}

// DeleteClass implements qdisc.Classful: red_class_ops has no delete.
func (q *RED) DeleteClass(qdisc.Ctx, qdisc.ClassID) error {
	return qdisc.Refusef("red", "RTNETLINK answers: Operation not supported (red's one class goes with the qdisc)")
}

// Classes implements qdisc.Classful (red_walk, red_dump_class): the one
// class 1:1, with no stats of its own; its leaf is a new bfifo of limit
// bytes at each change (LeafGen), and a deleted leaf leaves noop_qdisc
// (red_graft).
func (q *RED) Classes() []qdisc.Class {
	return []qdisc.Class{{ID: q.class(), Parent: qdisc.MakeClassID(q.handle, 0), Leaf: true,
		DefaultLeaf: []string{"bfifo", "limit", strconv.FormatUint(uint64(q.limit), 10)}, LeafGen: q.gen,
		NoStats: true, DelNoop: true}}
}

// QlenNotify implements qdisc.Classful: the child changed without red
// (the purge of a change, its own drops): qdisc_tree_reduce_backlog
// counts them in red's drops.
func (q *RED) QlenNotify(_ qdisc.Ctx, id qdisc.ClassID, st qdisc.LeafState) {
	q.drops += uint64(q.leaves.Update(id, st, 0, 0))
}
