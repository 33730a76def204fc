// Package qfq is the kernel's Quick Fair Queueing Plus scheduler
// (net/sched/sch_qfq.c, 6.12): flat classes, each with a weight
// (1..1024) and a maximum packet size lmax (512..65536, default the
// device's MTU, psched_mtu), and a leaf qdisc the host holds. Classes
// of one weight and lmax share an aggregate (up to 8 of them), whose
// budget is its classes' lmax summed and among which DRR serves, each
// with lmax as its quantum. Aggregates are timestamped in a virtual
// time V (start S, finish F = S + budget / weight, fixed point of 30
// bits) and sorted into groups by the size of their slot, about
// log2(lmax / weight); each group keeps its aggregates in 32 slots by
// start time, and four bitmaps of groups (eligible or ineligible,
// ready or blocked) find the eligible aggregate of earliest finish in
// constant time. Packets go to a class by skb->priority (major = the
// qdisc's handle) or the qdisc's filters, or are dropped.
package qfq

import (
	"fmt"
	"math/bits"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
)

func init() {
	qdisc.Register("qfq", "Quick Fair Queueing Plus: classes with weights and a maximum packet size, in aggregates served by virtual finish time (sch_qfq.c)",
		func() qdisc.Qdisc { return &QFQ{} })
}

// class is struct qfq_class.
type class struct {
	id      qdisc.ClassID
	agg     *aggregate
	deficit int32 // the kernel's int; compared with lengths as unsigned
	active  bool  // on agg.active (cl_is_active)

	bytes, packets uint64 // bstats: counted at enqueue

	// the leaf's head at the Enqueue call's peek (see flush), valid
	// while peekGen is the call's
	peekGen    uint64
	peekHandle skb.Handle
	peekOK     bool
}

// QFQ is struct qfq_sched.
type QFQ struct {
	handle uint16
	mtu    uint32
	clhash qdisc.ClassHash[*class]
	byID   map[qdisc.ClassID]*class

	oldV, V       uint64
	inServAgg     *aggregate
	wsum, iwsum   uint32
	bitmaps       [qfqMaxState]uint64
	groups        [qfqMaxIndex + 1]group
	minSlotShift  uint32
	maxAggClasses int
	nonfullAggs   []*aggregate // hlist: head first

	leaves qdisc.LeafTable
	drops  uint64

	// per-call buffers
	batch qdisc.LeafBatch
	cls   []*class
	gen   uint64
}

// Init implements qdisc.Qdisc (qfq_init_qdisc): qfq takes no options.
// At most min(txqueuelen + 1, 8) classes, rounded down to a power of
// two, share an aggregate; the groups' slot sizes follow.
func (q *QFQ) Init(_ qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	if len(args) > 0 {
		if psched.Matches(args[0], "help") {
			return qdisc.Info{}, qdisc.Parsef("qfq", "Usage: ... qfq")
		}
		return qdisc.Info{}, qdisc.Parsef("qfq", "What is %q? Usage: ... qfq", args[0])
	}
	q.handle, q.mtu = uint16(s.Major()), uint32(s.MTU)
	q.byID = map[qdisc.ClassID]*class{}
	maxClasses := min(uint64(max(s.TxQueueLen, 0))+1, qfqMaxAggClasses)
	maxClShift := uint32(bits.Len64(maxClasses) - 1) // __fls
	q.maxAggClasses = 1 << maxClShift
	maxbudgShift := qfqMTUShift + maxClShift // log2(max_len * max_classes_per_agg)
	q.minSlotShift = fracBits + maxbudgShift - qfqMaxIndex
	for i := range q.groups {
		q.groups[i].index = uint32(i)
		q.groups[i].slotShift = q.minSlotShift + uint32(i)
	}
	return qdisc.Info{}, nil
}

// qfqClassify is qfq_classify: nil drops the packet.
func (q *QFQ) qfqClassify(x qdisc.ClassCtx, p *skb.Packet) *class {
	if uint16(p.Priority>>16) == q.handle {
		if cl := q.byID[qdisc.ClassID(p.Priority)]; cl != nil {
			return cl
		}
	}
	r := x.Classify(p, qdisc.MakeClassID(q.handle, 0))
	if r.Verdict != qdisc.VerdictClass {
		return nil // no match, or TC_ACT_SHOT
	}
	return q.byID[r.Class]
}

// Enqueue implements qdisc.Qdisc: qfq_enqueue for each packet. The
// packets go to their leaves in one host call, then each is accounted
// in order (see flush); a packet longer than its class's lmax first
// moves the class to an aggregate of that lmax (qfq_change_agg), after
// the packets before it.
func (q *QFQ) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	x := ctx.(qdisc.ClassCtx)
	q.batch.Reset()
	q.cls = q.cls[:0]
	for i := range batch {
		ctx.Work(qdisc.WorkEnqueue, 1)
		p := &batch[i]
		cl := q.qfqClassify(x, p)
		if cl == nil {
			// no class, or a filter's TC_ACT_SHOT: counted, dropped,
			// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS
			q.drops++
			ctx.Drop(p.Handle, skb.DropQdiscDrop)
			rc[i] = qdisc.XmitSuccess | qdisc.XmitBypass
			continue
		}
		if cl.agg.lmax < p.Len {
			q.flush(ctx, x, rc)
			if !q.qfqChangeAgg(cl, cl.agg.classWeight, p.Len) {
				q.drops++ // qdisc_drop (and cl->qstats.drops, which nothing prints)
				ctx.Drop(p.Handle, skb.DropQdiscDrop)
				rc[i] = qdisc.XmitDrop
				continue
			}
		}
		q.batch.Add(p, cl.id, i)
		q.cls = append(q.cls, cl)
	}
	q.flush(ctx, x, rc)
}

// flush hands the packets batched so far to their leaves and does the
// rest of qfq_enqueue for each, in order: a class counts what its leaf
// took (bstats) and, inactive, joins its aggregate's DRR queue with a
// full deficit, waking the aggregate if it is the first. An active
// class is moved to its queue's tail if the packet became its leaf's
// head while the class is at the front without the deficit for it;
// the kernel peeks the leaf at every such packet, the model once a
// call (a peek's side effects, qdisc_peek_dequeued's, come once).
func (q *QFQ) flush(ctx qdisc.Ctx, x qdisc.ClassCtx, rc []qdisc.Code) {
	if q.batch.Len() == 0 {
		return
	}
	q.drops += q.batch.Send(x, &q.leaves, rc)
	q.gen++
	for k, cl := range q.cls {
		if q.batch.Result(k).Code != qdisc.XmitSuccess {
			continue // the leaf's drop, counted by Send (net_xmit_drop_count)
		}
		p := q.batch.Packet(k)
		cl.bytes += uint64(p.Len)
		cl.packets += uint64(max(p.GSOSegs, 1))
		if q.leaves.Get(cl.id).Qlen == 0 {
			continue // a peek below dropped it: nothing to schedule
		}
		agg := cl.agg
		if cl.active {
			head, ok := q.peekOnce(x, cl)
			if ok && head == p.Handle && cl.active && agg.active[0] == cl && uint32(cl.deficit) < p.Len {
				listMoveTail(cl)
			}
			continue
		}
		cl.deficit = int32(agg.lmax)
		agg.active = append(agg.active, cl)
		cl.active = true
		if agg.active[0] != cl || q.inServAgg == agg {
			continue // the aggregate is active or in service already
		}
		ctx.Work(qdisc.WorkFlowScan, 1)
		q.qfqActivateAgg(agg, enqueue)
	}
	q.batch.Reset()
	q.cls = q.cls[:0]
}

// peekOnce is the leaf's peek (cl->qdisc->ops->peek), once per flush.
func (q *QFQ) peekOnce(x qdisc.ClassCtx, cl *class) (skb.Handle, bool) {
	if cl.peekGen != q.gen {
		p, ok, st, dropped := q.leaves.Peek(x, cl.id)
		q.noteLeafDrops(cl, st, dropped)
		cl.peekGen, cl.peekHandle, cl.peekOK = q.gen, p.Handle, ok
	}
	return cl.peekHandle, cl.peekOK
}

// noteLeafDrops counts a leaf's own drops (a CoDel leaf's, in its
// dequeue or a dequeuing peek) and, when they emptied it, runs
// qfq_qlen_notify, as the leaf's qdisc_tree_reduce_backlog does inside
// the call.
func (q *QFQ) noteLeafDrops(cl *class, st qdisc.LeafState, dropped int) {
	if dropped == 0 {
		return
	}
	q.drops += uint64(dropped)
	if st.Qlen == 0 {
		q.qfqQlenNotify(cl)
	}
}

// qfqQlenNotify is qfq_qlen_notify (idempotent).
func (q *QFQ) qfqQlenNotify(cl *class) {
	if cl.active {
		q.qfqDeactivateClass(cl)
	}
}

// qfqPeekSkb is qfq_peek_skb: the head class of the aggregate's DRR
// queue and its leaf's head length (0 and false if it shows none: a
// leaf that is not work-conserving).
func (q *QFQ) qfqPeekSkb(x qdisc.ClassCtx, agg *aggregate) (*class, uint32, bool) {
	if len(agg.active) == 0 {
		return nil, 0, false
	}
	cl := agg.active[0]
	p, ok, st, dropped := q.leaves.Peek(x, cl.id)
	q.noteLeafDrops(cl, st, dropped)
	if !ok {
		return cl, 0, false // qdisc_warn_nonwc
	}
	return cl, p.Len, true
}

// aggDequeue is agg_dequeue: the head class's packet; an emptied class
// leaves the queue (its aggregate stays in service), one whose deficit
// no longer covers its next packet goes to the tail with lmax more.
func (q *QFQ) aggDequeue(x qdisc.ClassCtx, agg *aggregate, cl *class, length uint32) (skb.Packet, bool) {
	p, ok, st, dropped := q.leaves.Dequeue(x, cl.id)
	q.noteLeafDrops(cl, st, dropped)
	if !ok {
		return skb.Packet{}, false
	}
	cl.deficit -= int32(length)
	if st.Qlen == 0 {
		listDel(cl)
	} else if next := q.qdiscPeekLen(x, cl); cl.active && uint32(cl.deficit) < next {
		cl.deficit += int32(agg.lmax)
		listMoveTail(cl)
	}
	return p, true
}

// qdiscPeekLen is qdisc_peek_len of the class's leaf.
func (q *QFQ) qdiscPeekLen(x qdisc.ClassCtx, cl *class) uint32 {
	p, ok, st, dropped := q.leaves.Peek(x, cl.id)
	q.noteLeafDrops(cl, st, dropped)
	if !ok {
		return 0
	}
	return p.Len
}

// qfqDequeue is qfq_dequeue: the in-service aggregate sends while its
// budget covers its head class's next packet; then it is charged for
// what it sent and, still active, rescheduled, and the eligible
// aggregate of earliest finish takes over. V advances by each packet's
// length over the weight sum.
//
// A peek that drops all a leaf holds (a CoDel leaf's) may deschedule
// the aggregate in service inside the call (qfq_qlen_notify); the
// kernel then goes on with its stale local pointer and loses the
// aggregate it had chosen next, the model starts over with the one in
// service now.
func (q *QFQ) qfqDequeue(ctx qdisc.Ctx, x qdisc.ClassCtx) (skb.Packet, bool) {
	for {
		agg := q.inServAgg
		if agg == nil {
			return skb.Packet{}, false
		}
		var cl *class
		var length uint32 // 0: no active class in the aggregate
		var ok bool
		if len(agg.active) > 0 {
			cl, length, ok = q.qfqPeekSkb(x, agg)
			if q.inServAgg != agg {
				continue
			}
		}
		if length == 0 || agg.budget < length {
			chargeActualService(agg)
			agg.initBudget, agg.budget = agg.budgetmax, agg.budgetmax // recharge
			if len(agg.active) > 0 {
				q.qfqUpdateAggTs(agg, requeue)
				q.qfqScheduleAgg(agg)
			} else if q.leaves.Qlen == 0 {
				q.inServAgg = nil // nothing to serve
				return skb.Packet{}, false
			}
			ctx.Work(qdisc.WorkFlowScan, 1)
			agg = q.qfqChooseNextAgg()
			q.inServAgg = agg
			if agg == nil {
				return skb.Packet{}, false // the kernel's would be a NULL dereference
			}
			cl, length, ok = q.qfqPeekSkb(x, agg)
			if q.inServAgg != agg {
				continue
			}
		}
		if !ok {
			return skb.Packet{}, false
		}
		p, ok := q.aggDequeue(x, agg, cl, length)
		if !ok {
			return skb.Packet{}, false
		}
		// a lowered lmax may leave a class a longer packet than the budget
		if agg.budget < length {
			agg.budget = 0
		} else {
			agg.budget -= length
		}
		q.V += uint64(length) * uint64(q.iwsum)
		ctx.Work(qdisc.WorkDequeue, 1)
		return p, true
	}
}

// Dequeue implements qdisc.Qdisc: qfq_dequeue per packet of the bulk.
// qfq's peek is qdisc_peek_dequeued (the host's).
func (q *QFQ) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	x := ctx.(qdisc.ClassCtx)
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.qfqDequeue(ctx, x) })
}

// Reset implements qdisc.Resetter (qfq_reset_qdisc: every active class
// descheduled; the host resets the leaves).
func (q *QFQ) Reset(qdisc.Ctx) {
	for _, cl := range q.clhash.Walk() {
		if cl.active {
			q.qfqDeactivateClass(cl)
		}
	}
	q.leaves.Reset()
}

// Stats implements qdisc.Qdisc.
func (q *QFQ) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.leaves.Qlen, Backlog: q.leaves.Backlog, Drops: q.drops}
}

// Dump implements qdisc.Qdisc: qfq has no qdisc options.
func (q *QFQ) Dump() string { return "" }

// QlenNotify implements qdisc.Classful (qdisc_tree_reduce_backlog's
// qfq_qlen_notify when the leaf is empty).
func (q *QFQ) QlenNotify(_ qdisc.Ctx, id qdisc.ClassID, st qdisc.LeafState) {
	q.drops += uint64(q.leaves.Update(id, st, 0, 0))
	if cl := q.byID[id]; cl != nil && st.Qlen == 0 {
		q.qfqQlenNotify(cl)
	}
}

const classUsage = "Usage: ... qfq weight NUMBER maxpkt BYTES"

// parseClass is tc's qfq_parse_class_opt: "weight N" and "maxpkt N",
// decimal u32s (get_u32), the last of each kept (the kernel reads the
// last attribute).
func parseClass(args []string) (weight, lmax qdisc.Attr[uint32], err error) {
	for i := 0; i < len(args); i++ {
		k := args[i]
		var dst *qdisc.Attr[uint32]
		var name string
		switch {
		case psched.Matches(k, "weight"):
			dst, name = &weight, "weight"
		case psched.Matches(k, "maxpkt"):
			dst, name = &lmax, "maxpkt"
		case k == "help":
			return weight, lmax, qdisc.Parsef("qfq", classUsage)
		default:
			return weight, lmax, qdisc.Parsef("qfq", "What is %q? %s", k, classUsage)
		}
		if i+1 >= len(args) {
			return weight, lmax, qdisc.Parsef("qfq", "Command line is not complete after %q. Try option \"help\"", k)
		}
		i++
		n, perr := units.GetUnsigned(args[i], 10)
		if perr != nil {
			return weight, lmax, qdisc.Parsef("qfq", "Illegal %q (%q) %s", name, args[i], classUsage)
		}
		dst.Put(n)
	}
	return weight, lmax, nil
}

// ChangeClass implements qdisc.Classful (qfq_change_class): weight
// default 1, lmax default psched_mtu, both taken whole at every change
// (a change that leaves one out sets its default). The kernel ignores
// the parent.
func (q *QFQ) ChangeClass(_ qdisc.Ctx, req qdisc.ClassReq) error {
	w, l, err := parseClass(req.Args)
	if err != nil {
		return err
	}
	// qfq_policy: NLA_POLICY_RANGE, -ERANGE with the policy's message
	if w.Set && (w.V < 1 || w.V > qfqMaxWeight) || l.Set && (l.V < qfqMinLmax || l.V > qfqMaxLmax) {
		return qdisc.Refusef("qfq", "Error: integer out of range (weight is 1 to %d, maxpkt %d to %d).", qfqMaxWeight, qfqMinLmax, qfqMaxLmax)
	}
	weight, lmax := uint32(1), l.V
	w.Apply(&weight)
	if !l.Set {
		lmax = q.mtu // psched_mtu: the MTU is the user's
		if lmax < qfqMinLmax || lmax > qfqMaxLmax {
			return qdisc.Refusef("qfq", "Error: sch_qfq: MTU size out of bounds for qfq (%d).", lmax)
		}
	}
	weight = oneFP / (oneFP / weight) // through inv_w, as the kernel keeps it
	cl := q.byID[req.ID]
	var oldWeight uint32
	if cl != nil {
		oldWeight = cl.agg.classWeight
		if lmax == cl.agg.lmax && weight == oldWeight {
			return nil // nothing to change
		}
	}
	deltaW := int32(weight) - int32(oldWeight)
	if q.wsum+uint32(deltaW) > qfqMaxWSum {
		// the kernel's message ends in a newline (tc prints its "." on the next line)
		return qdisc.Refusef("qfq", "Error: sch_qfq: total weight out of range (%d + %d).", deltaW, q.wsum)
	}
	if cl == nil {
		if req.ID.Minor() == 0 || req.ID.Major() != q.handle {
			return qdisc.Lacksf("qfq", "classid %s: the kernel makes a qfq class of any classid tc_ctl_tclass passes, txlab only %x:1 to %x:ffff", req.ID, q.handle, q.handle)
		}
		cl = &class{id: req.ID, deficit: int32(lmax)}
		q.byID[cl.id] = cl
		q.clhash.Insert(cl.id, cl)
	}
	newAgg := q.qfqFindAgg(lmax, weight)
	if newAgg == nil {
		newAgg = &aggregate{}
		q.qfqInitAgg(newAgg, lmax, weight)
	}
	if cl.agg != nil {
		q.qfqDeactRmFromAgg(cl)
	}
	q.qfqAddToAgg(newAgg, cl)
	q.clhash.Grow()
	return nil
}

// DeleteClass implements qdisc.Classful (qfq_delete_class; a class a
// filter points at is refused by the host, qdisc_class_in_use).
func (q *QFQ) DeleteClass(_ qdisc.Ctx, id qdisc.ClassID) error {
	cl := q.byID[id]
	if cl == nil {
		return qdisc.Refusef("qfq", "RTNETLINK answers: No such file or directory (class %s)", id)
	}
	// qdisc_purge_queue: its qdisc_tree_reduce_backlog counts the
	// packets as drops and notifies
	q.drops += uint64(q.leaves.Remove(id).Qlen)
	q.qfqQlenNotify(cl)
	q.clhash.Remove(id)
	delete(q.byID, id)
	q.qfqRmFromAgg(cl)
	return nil
}

// Classes implements qdisc.Classful (qfq_walk, qfq_dump_class,
// qfq_dump_class_stats): parent root; the class's own bstats, which
// qfq_enqueue counts as its leaf takes each packet, and its leaf's
// qstats (drops, overlimits). tc prints no qfq xstats.
func (q *QFQ) Classes() []qdisc.Class {
	var out []qdisc.Class
	for _, cl := range q.clhash.Walk() {
		out = append(out, qdisc.Class{ID: cl.id, Parent: qdisc.RootClass, Leaf: true, LeafQstats: true,
			Options:     fmt.Sprintf("weight %d maxpkt %d ", cl.agg.classWeight, cl.agg.lmax),
			SentPackets: cl.packets, SentBytes: cl.bytes})
	}
	return out
}
