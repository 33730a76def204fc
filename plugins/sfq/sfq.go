// Package sfq is Stochastic Fairness Queueing (net/sched/sch_sfq.c): flows
// hashed with a keyed hash into divisor buckets, each bucket mapped to one
// of maxflows slots, slots served round robin with a byte allotment, and
// on overflow a drop from the longest slot (found in O(1) through per-depth
// lists); with redflowlimit, RED on each slot's backlog (include/net/red.h,
// plugins/internal/redalgo).
package sfq

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/khash"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
	"github.com/txlab/txlab/plugins/internal/redalgo"
)

func init() {
	qdisc.Register("sfq", "Stochastic Fairness Queueing: hashed slots served round robin (sch_sfq.c)",
		func() qdisc.Qdisc { return &SFQ{} })
}

// Limits from sch_sfq.c.
const (
	sfqMaxDepth     = 127                       // SFQ_MAX_DEPTH: packets per slot
	sfqDefaultFlows = 128                       // SFQ_DEFAULT_FLOWS
	sfqMaxFlows     = 0x10000 - sfqMaxDepth - 1 // SFQ_MAX_FLOWS: 65408
	sfqEmptySlot    = 0xffff                    // SFQ_EMPTY_SLOT
	sfqDefaultDiv   = 1024                      // SFQ_DEFAULT_HASH_DIVISOR
	hz              = 1000                      // jiffies per second, as the model's netdev.HZ
)

// Drop reasons sch_sfq.c uses besides QDISC_OVERLIMIT (skb.DropQdiscOverlimit,
// from sfq_drop): a new flow with no free slot, a slot at its depth limit,
// and the plain kfree_skb of sfq_rehash.
const (
	DropQdiscMaxFlows skb.DropReason = "QDISC_MAXFLOWS"
	DropQdiscMaxDepth skb.DropReason = "QDISC_MAXDEPTH"
	DropNotSpecified                 = skb.DropNotSpecified
)

// deque is a slot's packet list (skblist_next/prev): add at the tail,
// take from either end.
type deque = qdisc.Ring[skb.Packet]

// sfqHead is struct sfq_head. Values below sfqMaxFlows index slots[],
// values from sfqMaxFlows up index dep[], as in the kernel.
type sfqHead struct{ next, prev uint16 }

// slot is struct sfq_slot.
type slot struct {
	q       deque
	qlen    uint16 // number of packets (q.n, kept as the kernel's sfq_index)
	next    uint16 // next slot in the round-robin ring
	dep     sfqHead
	hash    uint32 // index in ht[]
	allot   int32
	backlog uint32
	vars    redalgo.Vars // the slot's RED state
}

// redStats is struct tc_sfqred_stats.
type redStats struct {
	probDrop, forcedDrop, probMark, forcedMark, probMarkHead, forcedMarkHead uint32
}

// SFQ is struct sfq_sched_data.
type SFQ struct {
	limit    int
	divisor  uint32
	headdrop bool
	maxdepth int
	maxflows int
	quantum  uint32
	// perturbPeriod is in jiffies like the kernel's; 0 means no rehash.
	perturbPeriod int64

	perturbation [2]uint64 // siphash_key_t
	curDepth     int       // depth of the longest slot
	ht           []uint16  // bucket -> slot, sfqEmptySlot if none
	slots        []slot
	tail         int // current slot in the round (q->tail), -1 for NULL
	dep          [sfqMaxDepth + 1]sfqHead

	qlen       int // sch->q.qlen, the peeked packet included
	backlog    int64
	drops      uint64
	overlimits uint64

	// red is q->red_parms, nil without RED; flags are TC_RED_ECN and
	// TC_RED_HARDDROP.
	red   *redalgo.Parms
	flags uint8
	stats redStats

	peeked qdisc.Peeked // qdisc_peek_dequeued's stash

	handleMajor uint32
}

func (q *SFQ) depHead(v uint16) *sfqHead {
	if v < sfqMaxFlows {
		return &q.slots[v].dep
	}
	return &q.dep[v-sfqMaxFlows]
}

// sfqLink is sfq_link: put slot x at the head of dep[its qlen].
func (q *SFQ) sfqLink(x uint16) {
	s := &q.slots[x]
	p := s.qlen + sfqMaxFlows
	n := q.dep[s.qlen].next
	s.dep.next, s.dep.prev = n, p
	q.dep[s.qlen].next = x
	q.depHead(n).prev = x
}

// sfqUnlink is the sfq_unlink macro; it returns the old neighbours.
func (q *SFQ) sfqUnlink(x uint16) (n, p uint16) {
	n, p = q.slots[x].dep.next, q.slots[x].dep.prev
	q.depHead(p).next = n
	q.depHead(n).prev = p
	return n, p
}

// sfqDec is sfq_dec: one packet fewer; if x was the only slot at the
// greatest depth, that depth goes down by one.
func (q *SFQ) sfqDec(x uint16) {
	n, p := q.sfqUnlink(x)
	d := int(q.slots[x].qlen)
	q.slots[x].qlen--
	if n == p && q.curDepth == d {
		q.curDepth--
	}
	q.sfqLink(x)
}

// sfqInc is sfq_inc.
func (q *SFQ) sfqInc(x uint16) {
	q.sfqUnlink(x)
	q.slots[x].qlen++
	if d := int(q.slots[x].qlen); q.curDepth < d {
		q.curDepth = d
	}
	q.sfqLink(x)
}

// Init is sfq_init: the defaults, sfq_change with tc's tc_sfq_qopt_v1
// when options are given, then the tables.
func (q *SFQ) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	mtu := uint32(1514)
	if s.MTU > 0 {
		mtu = uint32(s.MTU)
	}
	*q = SFQ{limit: sfqMaxDepth, maxdepth: sfqMaxDepth, divisor: sfqDefaultDiv, maxflows: sfqDefaultFlows,
		quantum: mtu, tail: -1, handleMajor: s.Major()}
	q.perturbation = qdisc.RandKey(ctx) // get_random_bytes(&q->perturbation)
	ctl, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	if ctl.sent {
		if err := q.sfqChange(ctl); err != nil {
			return qdisc.Info{}, err
		}
		// sfq_change's end: with a perturb period, the timer armed and
		// a key drawn again.
		if q.perturbPeriod != 0 {
			q.armPerturb(ctx)
			q.perturbation = qdisc.RandKey(ctx)
		}
	}

	for i := range q.dep {
		q.dep[i] = sfqHead{next: uint16(i + sfqMaxFlows), prev: uint16(i + sfqMaxFlows)}
	}
	q.ht = make([]uint16, q.divisor)
	for i := range q.ht {
		q.ht[i] = sfqEmptySlot
	}
	q.slots = make([]slot, q.maxflows)
	for i := range q.slots {
		q.sfqLink(uint16(i))
	}
	return q.info(), nil
}

func (q *SFQ) info() qdisc.Info {
	// HasBlock: sfq_class_ops' tcf_block (q->block, sfq_init's
	// tcf_block_get).
	info := qdisc.Info{Flags: qdisc.HasBlock, Limit: q.limit}
	if q.limit >= 1 {
		info.Flags |= qdisc.CanBypass
	}
	return info
}

// Change implements qdisc.Changer as the kernel has it: sfq's ops have
// no change (sfq_change runs only from sfq_init; the tables are sized
// there), so qdisc_change refuses options once tc has parsed them.
func (q *SFQ) Change(_ qdisc.Ctx, args []string) (qdisc.Info, error) {
	ctl, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	if !ctl.sent {
		return q.info(), nil // no TCA_OPTIONS: qdisc_change has nothing to do
	}
	return qdisc.Info{}, qdisc.ErrCannotChange
}

// sfqHash is sfq_hash: skb_get_hash_perturb (khash.HashPerturb, with
// q->perturbation as the key) & (divisor - 1).
func (q *SFQ) sfqHash(p *skb.Packet) uint32 {
	return khash.HashPerturb(p, q.perturbation) & (q.divisor - 1)
}

// sfqClassify is sfq_classify: skb->priority naming one of our buckets
// (major = our handle) wins; then the filters attached to the qdisc, if
// any, name the bucket by their result's minor; else the hash. It
// returns the bucket (the kernel's result minus one); ok is false for a
// packet to drop (a filter's drop, no filter matching, a minor out of
// 1..divisor).
func (q *SFQ) sfqClassify(ctx qdisc.Ctx, p *skb.Packet) (uint32, bool) {
	if c, ok := qdisc.PriorityClass(p.Priority, q.handleMajor, q.divisor); ok {
		return uint32(c), true
	}
	if b, filtered := qdisc.FilterFlow(ctx, p, q.handleMajor, q.divisor); filtered {
		return uint32(b), b >= 0
	}
	ctx.Work(qdisc.WorkHash, 1)
	return q.sfqHash(p), true
}

// drop counts and hands back one packet (qdisc_drop_reason).
func (q *SFQ) drop(ctx qdisc.Ctx, h skb.Handle, r skb.DropReason) {
	q.drops++
	ctx.Drop(h, r)
}

// sfqDrop is sfq_drop: drop from the longest slot, its tail (or its head
// with headdrop). It returns the bytes dropped, 0 if nothing was held.
func (q *SFQ) sfqDrop(ctx qdisc.Ctx) uint32 {
	d := q.curDepth
	var x uint16
	switch {
	case d > 1:
		x = q.dep[d].next
	case d == 1:
		// Every slot holds one packet: take the next in the round and
		// unlink it, since it goes empty.
		x = q.slots[q.tail].next
		s := &q.slots[x]
		if s.next == x {
			q.tail = -1
		} else {
			q.slots[q.tail].next = s.next
		}
		q.ht[s.hash] = sfqEmptySlot
	default:
		return 0
	}
	s := &q.slots[x]
	var p skb.Packet
	if q.headdrop {
		p = s.q.PopHead()
	} else {
		p = s.q.PopTail()
	}
	s.backlog -= p.Len
	q.sfqDec(x)
	q.qlen--
	q.backlog -= int64(p.Len)
	q.drop(ctx, p.Handle, skb.DropQdiscOverlimit)
	return p.Len
}

// linkNew puts a slot that just got its first packet at the end of the
// round (after q->tail) with a full allotment. Putting a new flow last
// may look unfair to it, but serving new flows first could freeze old ones.
func (q *SFQ) linkNew(x uint16) {
	s := &q.slots[x]
	if q.tail < 0 {
		s.next = x
	} else {
		s.next = q.slots[q.tail].next
		q.slots[q.tail].next = x
	}
	q.tail = int(x)
	s.allot = int32(q.quantum)
}

// Enqueue implements qdisc.Qdisc (sfq_enqueue for each packet).
func (q *SFQ) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i := range batch {
		rc[i] = q.sfqEnqueue(ctx, &batch[i])
	}
}

// sfqEnqueue is sfq_enqueue.
func (q *SFQ) sfqEnqueue(ctx qdisc.Ctx, p *skb.Packet) qdisc.Code {
	ctx.Work(qdisc.WorkEnqueue, 1)
	hash, ok := q.sfqClassify(ctx, p)
	if !ok {
		// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS: counted as a qdisc
		// drop, freed with __qdisc_drop; the sender sees
		// NET_XMIT_SUCCESS (dev_qdisc_enqueue's mask).
		q.drop(ctx, p.Handle, skb.DropQdiscDrop)
		return qdisc.XmitSuccess | qdisc.XmitBypass
	}
	x := q.ht[hash]
	if x == sfqEmptySlot {
		x = q.dep[0].next // a free slot
		if x >= sfqMaxFlows {
			q.drop(ctx, p.Handle, DropQdiscMaxFlows)
			return qdisc.XmitDrop
		}
		q.ht[hash] = x
		s := &q.slots[x]
		s.hash, s.backlog = hash, 0
		s.vars.Reset() // red_set_vars
	} else if s := &q.slots[x]; q.redCongested(ctx, s, p) || int(s.qlen) >= q.maxdepth {
		// congestion_drop: RED's or the depth limit's (the patch that
		// named sfq's drop reasons gives both QDISC_MAXDEPTH).
		if !q.headdrop {
			q.drop(ctx, p.Handle, DropQdiscMaxDepth)
			return qdisc.XmitDrop
		}
		// Head drop keeps the newest data, which matters for TCP: the
		// loss is seen a full queue earlier than with a tail drop.
		head := s.q.PopHead()
		q.backlog += int64(p.Len) - int64(head.Len)
		s.backlog += p.Len - head.Len
		q.drop(ctx, head.Handle, DropQdiscMaxDepth)
		s.q.PushTail(*p)
		return qdisc.XmitCN
	}
	s := &q.slots[x]
	q.backlog += int64(p.Len)
	s.backlog += p.Len
	s.q.PushTail(*p)
	q.sfqInc(x)
	if s.qlen == 1 { // the flow is new
		q.linkNew(x)
	}
	q.qlen++
	if q.qlen <= q.limit {
		return qdisc.XmitSuccess
	}
	qlen := s.qlen
	q.sfqDrop(ctx)
	if qlen != s.qlen {
		// We dropped from this flow: NET_XMIT_CN, even when a tail
		// drop took this very packet or emptied a one-packet slot, as
		// sfq_enqueue returns it (a sender takes it as sent,
		// net_xmit_eval).
		return qdisc.XmitCN
	}
	return qdisc.XmitSuccess
}

// redCongested is sfq_enqueue's RED step for a packet joining slot s:
// the slot's average backlog moves (red_calc_qavg_no_idle_time: sfq
// never idles its slots' averages), and red_action decides. A mark
// sets CE on the slot's head with headdrop, else on the packet; true
// means it goes to congestion_drop instead (not ECN-capable, or ecn
// not asked, or harddrop above max).
func (q *SFQ) redCongested(ctx qdisc.Ctx, s *slot, p *skb.Packet) bool {
	if q.red == nil {
		return false
	}
	s.vars.QAvg = q.red.QavgNoIdleTime(&s.vars, s.backlog)
	st := &q.stats
	switch q.red.Action(&s.vars, s.vars.QAvg, ctx) {
	case redalgo.ProbMark:
		return q.redMark(s, p, q.flags&flagECN != 0, &st.probMarkHead, &st.probMark, &st.probDrop) // sfq_prob_mark
	case redalgo.HardMark:
		return q.redMark(s, p, q.flags&(flagECN|flagHarddrop) == flagECN, &st.forcedMarkHead, &st.forcedMark, &st.forcedDrop) // sfq_hard_mark
	}
	return false
}

// redMark is one of RED's actions on a packet joining slot s: an
// overlimit, then, if marking is allowed, CE on the slot's head with
// headdrop or else on the packet, counted in head or mark; true when
// neither could be marked, counted in drop (congestion_drop follows).
func (q *SFQ) redMark(s *slot, p *skb.Packet, mark bool, head, marked, drop *uint32) bool {
	q.overlimits++
	switch {
	case mark && q.headdrop && s.q.Front().SetCE():
		*head++
	case mark && p.SetCE():
		*marked++
	default:
		*drop++
		return true
	}
	return false
}

// sfqDequeue is sfq_dequeue: round robin from the slot after q->tail; a
// slot out of allotment gets another quantum and the turn passes.
func (q *SFQ) sfqDequeue(ctx qdisc.Ctx) (skb.Packet, bool) {
	if q.tail < 0 {
		return skb.Packet{}, false
	}
	var a uint16
	for {
		a = q.slots[q.tail].next
		s := &q.slots[a]
		if s.allot > 0 {
			break
		}
		q.tail = int(a)
		s.allot += int32(q.quantum)
	}
	ctx.Work(qdisc.WorkDequeue, 1)
	s := &q.slots[a]
	p := s.q.PopHead()
	q.sfqDec(a)
	q.qlen--
	q.backlog -= int64(p.Len)
	s.backlog -= p.Len
	if s.qlen == 0 {
		q.ht[s.hash] = sfqEmptySlot
		if nextA := s.next; a == nextA {
			q.tail = -1 // no more active slots
		} else {
			q.slots[q.tail].next = nextA
		}
	} else {
		s.allot -= int32(p.Len)
	}
	return p, true
}

// Timer is sfq_perturbation, the perturbation timer (perturb_timer,
// armed by sfq_change every perturb_period): a new key, then, unless
// filters are attached (q->filter_list), the held packets moved to
// their slots under it (sfq_rehash) so that each flow's packets stay in
// one slot and in order; then the timer is armed again. The host runs
// it under the root lock. The kernel's timer is TIMER_DEFERRABLE: on an
// idle CPU it waits for that CPU's next wake-up; here it runs on time.
func (q *SFQ) Timer(ctx qdisc.Ctx) {
	q.perturbation = qdisc.RandKey(ctx) // get_random_bytes(&nkey)
	if _, filtered := qdisc.Filters(ctx, qdisc.MakeClassID(uint16(q.handleMajor), 0)); !filtered && q.tail >= 0 {
		q.sfqRehash(ctx)
	}
	if q.perturbPeriod != 0 {
		q.armPerturb(ctx)
	}
}

// armPerturb is mod_timer(&q->perturb_timer, jiffies + perturb_period).
func (q *SFQ) armPerturb(ctx qdisc.Ctx) {
	ctx.ModTimer(ctx.Now() + sim.Time(q.perturbPeriod)*(sim.Second/hz))
}

// sfqRehash is sfq_rehash: take every held packet out of its slot, slot
// by slot, and put it back under the new key, without touching the
// counters. Packets that no longer fit (a slot over depth after two
// flows merged, or no free slot) are freed: kfree_skb, NOT_SPECIFIED,
// and, as in the kernel, not counted as qdisc drops.
func (q *SFQ) sfqRehash(ctx qdisc.Ctx) {
	var list []skb.Packet
	for i := range q.slots {
		s := &q.slots[i]
		if s.qlen == 0 {
			continue
		}
		for s.qlen > 0 {
			list = append(list, s.q.PopHead())
			q.sfqDec(uint16(i))
		}
		s.backlog = 0
		s.vars.Reset()
		q.ht[s.hash] = sfqEmptySlot
	}
	q.tail = -1
	ctx.Work(qdisc.WorkFlowScan, len(q.slots))

	dropped := 0
	for _, p := range list {
		ctx.Work(qdisc.WorkHash, 1)
		hash := q.sfqHash(&p)
		x := q.ht[hash]
		if x == sfqEmptySlot {
			x = q.dep[0].next
			if x >= sfqMaxFlows {
				q.backlog -= int64(p.Len)
				ctx.DequeueDrop(p.Handle, DropNotSpecified)
				dropped++
				continue
			}
			q.ht[hash] = x
			q.slots[x].hash = hash
		}
		s := &q.slots[x]
		if int(s.qlen) >= q.maxdepth {
			q.backlog -= int64(p.Len)
			ctx.DequeueDrop(p.Handle, DropNotSpecified)
			dropped++
			continue
		}
		s.q.PushTail(p)
		if q.red != nil {
			s.vars.QAvg = q.red.QavgNoIdleTime(&s.vars, s.backlog) // red_calc_qavg: never idling
		}
		s.backlog += p.Len
		q.sfqInc(x)
		if s.qlen == 1 {
			q.linkNew(x)
		}
	}
	q.qlen -= dropped
}

// next returns the next packet, the peeked one first (qdisc_dequeue_peeked).
func (q *SFQ) next(ctx qdisc.Ctx) (skb.Packet, bool) {
	return q.peeked.Dequeue(&q.qlen, &q.backlog, func() (skb.Packet, bool) { return q.sfqDequeue(ctx) })
}

// Dequeue implements qdisc.Qdisc: a bulk of sfq_dequeue calls.
func (q *SFQ) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.next(ctx) })
}

// Peek implements qdisc.Qdisc (qdisc_peek_dequeued).
func (q *SFQ) Peek(ctx qdisc.Ctx) (skb.Packet, bool) {
	return q.peeked.Peek(&q.qlen, &q.backlog, func() (skb.Packet, bool) { return q.sfqDequeue(ctx) })
}

// Reset implements qdisc.Qdisc (sfq_reset: dequeue and free everything).
func (q *SFQ) Reset(ctx qdisc.Ctx) {
	for {
		p, ok := q.next(ctx)
		if !ok {
			return
		}
		ctx.Drop(p.Handle, skb.DropNotSpecified)
	}
}

// Stats implements qdisc.Qdisc. Without RED, sfq has no qdisc-level
// xstats (tc's "allot" is per class) and no overlimits; with it, tc -s
// prints its tc_sfqred_stats, which sfq_dump puts in its options.
func (q *SFQ) Stats() qdisc.Stats {
	st := qdisc.Stats{Qlen: q.qlen, Backlog: q.backlog, Drops: q.drops, Overlimits: q.overlimits}
	if q.red != nil {
		r := q.stats
		st.XStats = []qdisc.XStat{qdisc.XUint("prob_mark", uint64(r.probMark)), qdisc.XUint("prob_mark_head", uint64(r.probMarkHead)),
			qdisc.XUint("prob_drop", uint64(r.probDrop)), qdisc.XUint("forced_mark", uint64(r.forcedMark)),
			qdisc.XUint("forced_mark_head", uint64(r.forcedMarkHead)), qdisc.XUint("forced_drop", uint64(r.forcedDrop))}
	}
	return st
}

// FlowClasses implements qdisc.FlowClasses: sfq_walk lists the hash
// buckets that map to a slot (ht[i] != SFQ_EMPTY_SLOT) as classes i+1,
// and sfq_dump_class_stats gives the slot's qlen, backlog and allot.
func (q *SFQ) FlowClasses() []qdisc.Class {
	var out []qdisc.Class
	for i, x := range q.ht {
		if x == sfqEmptySlot {
			continue
		}
		s := &q.slots[x]
		out = append(out, qdisc.Class{ID: qdisc.MakeClassID(0, uint16(i+1)), Qlen: int(s.qlen), Backlog: int64(s.backlog),
			XStats: []qdisc.XStat{qdisc.XInt("allot", int64(s.allot))}})
	}
	return out
}

// Dump implements qdisc.Qdisc: sfq_dump as tc -d prints it
// (sfq_print_opt; "flows" is printed with -d only).
func (q *SFQ) Dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "limit %dp quantum %s depth %d", q.limit, units.SprintSize(uint64(q.quantum)), q.maxdepth)
	if q.headdrop {
		b.WriteString(" headdrop")
	}
	fmt.Fprintf(&b, " flows %d divisor %d", q.maxflows, q.divisor)
	if q.perturbPeriod != 0 {
		fmt.Fprintf(&b, " perturb %dsec", q.perturbPeriod/hz)
	}
	if p := q.red; p != nil {
		fmt.Fprintf(&b, " ewma %d min %s max %s probability %s", p.Wlog, units.SprintSize(uint64(p.QthMin>>p.Wlog)),
			units.SprintSize(uint64(p.QthMax>>p.Wlog)), strconv.FormatFloat(float64(p.MaxP)/(1<<32), 'g', 6, 64))
		if q.flags&flagECN != 0 { // tc_red_print_flags
			b.WriteString(" ecn")
		}
		if q.flags&flagHarddrop != 0 {
			b.WriteString(" harddrop")
		}
	}
	return b.String()
}
