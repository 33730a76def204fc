// Package choke is the kernel's CHOKe (net/sched/sch_choke.c): RED over
// a table of packets, where on every arrival with the average queue
// above min a packet drawn at random from the queue is compared with
// the arrival, and both are dropped if they are of the same flow
// ("CHOose and Keep for responsive flows, CHOose and Kill for
// unresponsive flows", Pan, Prabhakar and Psounis, INFOCOM 2000). A
// flow that holds much of the queue is drawn often and loses packets in
// proportion, with no per-flow state. The average is red.h's fixed
// point (plugins/internal/redalgo) over the queue in packets; the
// thresholds are packets too. A drop punches a hole in the table; the
// head skips holes, so the table's span may hold more slots than
// packets.
package choke

import (
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/plugins/internal/redalgo"
)

func init() {
	qdisc.Register("choke", "CHOKe: RED that drops an arrival and a random queued packet of the same flow (sch_choke.c)",
		func() qdisc.Qdisc { return &Choke{} })
}

// chokeStats is choke_sched_data's stats.
type chokeStats struct {
	probDrop, probMark, forcedDrop, forcedMark, pdrop, matched uint32
}

// slot is one entry of the table: a packet, or a hole (the kernel's
// NULL), with choke_skb_cb's keys_valid (the flow keys dissected once).
type slot struct {
	p     skb.Packet
	held  bool
	keyed bool
}

// Choke is struct choke_sched_data, with sch->q.qlen and the backlog.
type Choke struct {
	limit uint32
	flags uint8
	parms redalgo.Parms
	vars  redalgo.Vars
	stats chokeStats

	head, tail, tabMask uint32
	tab                 []slot

	qlen              int
	backlog           int64
	drops, overlimits uint64
	speedBps          int64 // the device's, for a bandwidth in percent
}

// Init implements qdisc.Qdisc (choke_init is choke_change).
func (q *Choke) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	*q = Choke{speedBps: s.RateBps}
	return q.Change(ctx, args)
}

// info: choke leaves sch->limit 0 and sets no TCQ_F_CAN_BYPASS. Its
// empty dequeue starts RED's idle period, so it is no EmptyNoop.
func (q *Choke) info() qdisc.Info {
	return qdisc.Info{}
}

// Change implements qdisc.Changer (choke_change): a table of another
// size takes the packets in order, holes left out, and drops those past
// its size; then the flags, limit and RED's parameters, the average and
// count reset, and an empty queue not idling.
func (q *Choke) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse(args, q.speedBps)
	if err == nil {
		err = validate(o)
	}
	if err != nil {
		return qdisc.Info{}, err
	}
	if mask := roundupPowOfTwo(o.limit+1) - 1; mask != q.tabMask {
		ntab := make([]slot, mask+1)
		tail := uint32(0)
		for q.head != q.tail {
			s := q.tab[q.head]
			q.head = (q.head + 1) & q.tabMask
			if !s.held {
				continue
			}
			if tail < mask {
				ntab[tail] = s
				tail++
				continue
			}
			q.qlen--
			q.backlog -= int64(s.p.Len)
			q.drops++ // rtnl_qdisc_drop
			ctx.Drop(s.p.Handle, skb.DropNotSpecified)
		}
		q.head, q.tail = 0, tail
		q.tabMask, q.tab = mask, ntab
	}
	q.flags, q.limit = o.flags, o.limit
	q.parms.Set(o.qthMin, o.qthMax, o.wlog, o.plog, o.scellLog, &o.stab, o.maxP)
	q.vars.Reset() // red_set_vars
	if q.head == q.tail {
		q.vars.Idling = false // red_end_of_idle_period
	}
	return q.info(), nil
}

// roundupPowOfTwo is roundup_pow_of_two for n >= 1.
func roundupPowOfTwo(n uint32) uint32 {
	p := uint32(1)
	for p < n {
		p <<= 1
	}
	return p
}

// chokeLen is choke_len: the slots from head to tail, holes included.
func (q *Choke) chokeLen() uint32 { return (q.tail - q.head) & q.tabMask }

// chokeZapHeadHoles is choke_zap_head_holes.
func (q *Choke) chokeZapHeadHoles() {
	for {
		q.head = (q.head + 1) & q.tabMask
		if q.head == q.tail || q.tab[q.head].held {
			return
		}
	}
}

// chokeZapTailHoles is choke_zap_tail_holes.
func (q *Choke) chokeZapTailHoles() {
	for {
		q.tail = (q.tail - 1) & q.tabMask
		if q.head == q.tail || q.tab[q.tail].held {
			return
		}
	}
}

// chokeDropByIdx is choke_drop_by_idx: the packet at idx becomes a
// hole; at the head, the head moves past the holes.
func (q *Choke) chokeDropByIdx(ctx qdisc.Ctx, idx uint32) {
	p := q.tab[idx].p
	q.tab[idx] = slot{}
	if idx == q.head {
		q.chokeZapHeadHoles()
	}
	if idx == q.tail { // never: a random index is below tail (as in the kernel)
		q.chokeZapTailHoles()
	}
	q.qlen--
	q.backlog -= int64(p.Len)
	q.drops++
	ctx.Drop(p.Handle, skb.DropQdiscDrop)
}

// flowDigest is make_flow_keys_digest: the dissected addresses, ports
// and protocol, as sent (not made symmetric). A packet without keys
// (the model's hash-only packets) is told apart by its hash.
type flowDigest struct {
	keys skb.FlowKeys
	hash uint32
}

func digest(p *skb.Packet) flowDigest {
	if p.Keys == (skb.FlowKeys{}) {
		return flowDigest{hash: p.Hash}
	}
	return flowDigest{keys: p.Keys}
}

// chokeMatchFlow is choke_match_flow: each packet's keys dissected once
// (keys_valid), then compared.
func chokeMatchFlow(ctx qdisc.Ctx, o *slot, n *skb.Packet, nKeyed *bool) bool {
	if !o.keyed {
		o.keyed = true
		ctx.Work(qdisc.WorkHash, 1) // skb_flow_dissect_flow_keys
	}
	if !*nKeyed {
		*nKeyed = true
		ctx.Work(qdisc.WorkHash, 1)
	}
	return digest(&o.p) == digest(n)
}

// chokePeekRandom is choke_peek_random: three draws for a slot that is
// not a hole, then the head.
func (q *Choke) chokePeekRandom(ctx qdisc.Ctx) uint32 {
	for retrys := 3; retrys > 0; retrys-- {
		idx := (q.head + qdisc.RandBelow(ctx, q.chokeLen())) & q.tabMask
		if q.tab[idx].held {
			return idx
		}
	}
	return q.head
}

// chokeMatchRandom is choke_match_random: a random queued packet
// compared with the arrival n.
func (q *Choke) chokeMatchRandom(ctx qdisc.Ctx, n *skb.Packet, nKeyed *bool) (uint32, bool) {
	if q.head == q.tail {
		return 0, false
	}
	idx := q.chokePeekRandom(ctx)
	return idx, chokeMatchFlow(ctx, &q.tab[idx], n, nKeyed)
}

// calcQavg is red_calc_qavg over the queue's packets, with the
// ktime_get of red_calc_qavg_from_idle_time.
func (q *Choke) calcQavg(ctx qdisc.Ctx) uint64 {
	if q.vars.Idling {
		ctx.Work(qdisc.WorkTstamp, 1)
		return q.parms.QavgFromIdleTime(&q.vars, ctx.Now())
	}
	return q.parms.QavgNoIdleTime(&q.vars, uint32(q.qlen))
}

// Enqueue implements qdisc.Qdisc (choke_enqueue for each packet).
func (q *Choke) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i := range batch {
		rc[i] = q.chokeEnqueue(ctx, &batch[i])
	}
}

// chokeEnqueue is choke_enqueue: below min the arrival is queued; above
// it, a random queued packet of the same flow drops both (matched);
// else RED: above max every packet is dropped (or CE-marked with ecn,
// not with harddrop), between min and max one is after a random count.
func (q *Choke) chokeEnqueue(ctx qdisc.Ctx, p *skb.Packet) qdisc.Code {
	ctx.Work(qdisc.WorkEnqueue, 1)
	keyed := false // keys_valid = 0
	q.vars.QAvg = q.calcQavg(ctx)
	q.vars.Idling = false // red_end_of_idle_period
	if q.vars.QAvg <= uint64(q.parms.QthMin) {
		q.vars.QCount = -1
	} else {
		if idx, ok := q.chokeMatchRandom(ctx, p, &keyed); ok {
			q.stats.matched++
			q.chokeDropByIdx(ctx, idx)
			return q.congestionDrop(ctx, p)
		}
		if q.vars.QAvg > uint64(q.parms.QthMax) {
			q.vars.QCount = -1
			q.overlimits++
			if q.flags&flagHarddrop != 0 || q.flags&flagECN == 0 || !p.SetCE() {
				q.stats.forcedDrop++
				return q.congestionDrop(ctx, p)
			}
			q.stats.forcedMark++
		} else if q.vars.QCount++; q.vars.QCount != 0 {
			if q.parms.MarkProbability(&q.vars, q.vars.QAvg) {
				q.vars.QCount = 0
				q.vars.QR = q.parms.Random(ctx)
				q.overlimits++
				if q.flags&flagECN == 0 || !p.SetCE() {
					q.stats.probDrop++
					return q.congestionDrop(ctx, p)
				}
				q.stats.probMark++
			}
		} else {
			q.vars.QR = q.parms.Random(ctx)
		}
	}
	// Admit the arrival. The kernel's admission looks at qlen alone: a
	// span of packets and holes that fills the table would bring tail
	// round to head, and the queue would look empty with packets in it
	// (the next arrival overwriting the head's). The model drops the
	// arrival there instead, as over the limit.
	if uint32(q.qlen) < q.limit && (q.tail+1)&q.tabMask != q.head {
		q.tab[q.tail] = slot{p: *p, held: true, keyed: keyed}
		q.tail = (q.tail + 1) & q.tabMask
		q.qlen++
		q.backlog += int64(p.Len)
		return qdisc.XmitSuccess
	}
	q.stats.pdrop++
	q.drops++
	ctx.Drop(p.Handle, skb.DropQdiscDrop)
	return qdisc.XmitDrop
}

// congestionDrop is choke_enqueue's congestion_drop: qdisc_drop, then
// NET_XMIT_CN (the sender takes it as sent and backs off).
func (q *Choke) congestionDrop(ctx qdisc.Ctx, p *skb.Packet) qdisc.Code {
	q.drops++
	ctx.Drop(p.Handle, skb.DropQdiscDrop)
	return qdisc.XmitCN
}

// chokeDequeue is choke_dequeue: the head, past the holes after it; an
// empty queue starts RED's idle period.
func (q *Choke) chokeDequeue(ctx qdisc.Ctx) (skb.Packet, bool) {
	if q.head == q.tail {
		if !q.vars.Idling {
			ctx.Work(qdisc.WorkTstamp, 1) // red_start_of_idle_period's ktime_get
			q.vars.IdleStart, q.vars.Idling = ctx.Now(), true
		}
		return skb.Packet{}, false
	}
	ctx.Work(qdisc.WorkDequeue, 1)
	p := q.tab[q.head].p
	q.tab[q.head] = slot{}
	q.chokeZapHeadHoles()
	q.qlen--
	q.backlog -= int64(p.Len)
	return p, true
}

// Dequeue implements qdisc.Qdisc.
func (q *Choke) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.chokeDequeue(ctx) })
}

// Peek implements qdisc.Peeker (choke_peek_head).
func (q *Choke) Peek(qdisc.Ctx) (skb.Packet, bool) {
	if q.head == q.tail {
		return skb.Packet{}, false
	}
	return q.tab[q.head].p, true
}

// Reset implements qdisc.Resetter (choke_reset: every packet dropped
// with rtnl_qdisc_drop, counted and freed NOT_SPECIFIED; red_restart).
func (q *Choke) Reset(ctx qdisc.Ctx) {
	for q.head != q.tail {
		s := q.tab[q.head]
		q.head = (q.head + 1) & q.tabMask
		if s.held {
			q.drops++
			ctx.Drop(s.p.Handle, skb.DropNotSpecified)
		}
	}
	clear(q.tab)
	q.head, q.tail = 0, 0
	q.qlen, q.backlog = 0, 0
	q.vars = redalgo.Vars{QCount: -1} // red_restart
}

// Stats implements qdisc.Qdisc: tc_choke_xstats as choke_print_xstats
// prints them (early: probability and forced drops; other is never
// set).
func (q *Choke) Stats() qdisc.Stats {
	s := &q.stats
	return qdisc.Stats{Qlen: q.qlen, Backlog: q.backlog, Drops: q.drops, Overlimits: q.overlimits,
		XStats: []qdisc.XStat{
			qdisc.XUint("marked", uint64(s.probMark+s.forcedMark)),
			qdisc.XUint("early", uint64(s.probDrop+s.forcedDrop)),
			qdisc.XUint("pdrop", uint64(s.pdrop)),
			qdisc.XUint("other", 0),
			qdisc.XUint("matched", uint64(s.matched)),
		}}
}
