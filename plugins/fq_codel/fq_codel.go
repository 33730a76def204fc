// Package fqcodel is the fq_codel qdisc (net/sched/sch_fq_codel.c): flows
// hashed into buckets, DRR over new_flows then old_flows with per-flow
// deficits, a CoDel instance per flow, and on overflow a batch drop from
// the fattest flow.
package fqcodel

import (
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/plugins/codel"
)

func init() {
	qdisc.Register("fq_codel", "Fair Queue CoDel: hashed flows, DRR, per-flow CoDel AQM (sch_fq_codel.c)",
		func() qdisc.Qdisc { return &FQCodel{} })
}

// Limits from sch_fq_codel.c.
const (
	maxFlows       = 65536   // fq_codel_change: flows_cnt in [1, 65536]
	minQuantum     = 256     // fq_codel_change: quantum = max(256, q)
	quantumMax     = 1 << 20 // FQ_CODEL_QUANTUM_MAX
	memoryLimitMax = 1 << 31 // fq_codel_change: memory_limit capped at 1<<31
)

// ring is one flow's packet FIFO (fq_codel_flow head/tail).
type ring = qdisc.Ring[codel.Item]

// flow is struct fq_codel_flow.
type flow struct {
	q       ring
	deficit int32
	cvars   codel.Vars

	qdisc.FlowLink // flowchain
}

// FQCodel is struct fq_codel_sched_data.
type FQCodel struct {
	flows       []flow
	backlogs    []uint32 // bytes per flow, scanned by fqCodelDrop
	flowsCnt    uint32
	quantum     uint32
	dropBatch   uint32
	memoryLimit uint32
	limit       uint32 // sch->limit
	cparams     codel.Params
	cstats      codel.Stats

	memoryUsage    uint32
	dropOvermemory uint32
	dropOverlimit  uint32
	newFlowCount   uint32
	newFlows       qdisc.FlowList
	oldFlows       qdisc.FlowList

	qlen    int    // sch->q.qlen, the peeked packet included
	backlog uint32 // sch->qstats.backlog: what CoDel compares with mtu
	drops   uint64
	// peeked is qdisc_peek_dequeued's stash (sch->gso_skb): a packet
	// already through CoDel, still counted in qlen and backlog.
	peeked    codel.Item
	hasPeeked bool

	// now is codel_get_time at the last enqueue, dequeue or peek: what
	// a flow class's drop_next counts from (fq_codel_dump_class_stats
	// reads the clock; FlowClasses has none), as codel's Stats does.
	now codel.Time

	handleMajor uint32 // TC_H_MAJ(sch->handle) >> 16, 0 if unknown
	flags       qdisc.Flags
	cq          codelQueue
}

// codelQueue adapts one flow to codel.Queue: dequeue_func, drop_func and
// codel_get_time for the flow being served.
type codelQueue struct {
	q   *FQCodel
	f   *flow
	idx int
	ctx qdisc.Ctx
}

// Dequeue is dequeue_func: take the flow's head, with the per-flow,
// memory, qlen and qdisc-backlog accounting.
func (c *codelQueue) Dequeue() (codel.Item, bool) {
	if c.f.q.Len() == 0 {
		return codel.Item{}, false
	}
	c.ctx.Work(qdisc.WorkDequeue, 1)
	it := c.f.q.PopHead()
	q := c.q
	q.backlogs[c.idx] -= it.Pkt.Len
	q.memoryUsage -= it.MemUsage
	q.qlen--
	q.backlog -= it.Pkt.Len
	return it, true
}

// Drop is drop_func: qdisc_dequeue_drop(..., QDISC_DROP_CONGESTED).
func (c *codelQueue) Drop(it codel.Item) {
	c.ctx.DequeueDrop(it.Pkt.Handle, skb.DropQdiscCongested)
	c.q.drops++
}

// Now is codel_get_time, one ktime_get per codel_dequeue call.
func (c *codelQueue) Now() codel.Time {
	c.ctx.Work(qdisc.WorkTstamp, 1)
	return codel.GetTime(int64(c.ctx.Now()))
}

// Init is fq_codel_init: the kernel's defaults, then fq_codel_change's
// options, then the flow table.
func (q *FQCodel) Init(_ qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	mtu := uint32(1514)
	if s.MTU > 0 {
		mtu = uint32(s.MTU)
	}
	*q = FQCodel{limit: 10 * 1024, flowsCnt: 1024, memoryLimit: 32 << 20, dropBatch: 64, quantum: mtu}
	q.cparams = codel.ParamsInit()
	q.cparams.ECN = true // fq_codel, unlike codel, defaults to ECN on
	q.cparams.MTU = mtu
	q.handleMajor = s.Major()

	o, err := parse(args)
	if err == nil {
		err = q.validate(o)
	}
	if err != nil {
		return qdisc.Info{}, err
	}
	q.apply(o)

	q.flows = make([]flow, q.flowsCnt)
	q.backlogs = make([]uint32, q.flowsCnt)
	q.newFlows = qdisc.NewFlowList()
	q.oldFlows = qdisc.NewFlowList()
	q.cq.q = q

	// HasBlock: fq_codel_class_ops' tcf_block (q->block, attached by
	// fq_codel_init's tcf_block_get).
	q.flags = qdisc.DequeueDrops | qdisc.HasBlock
	if q.limit >= 1 {
		q.flags |= qdisc.CanBypass
	}
	return q.info(), nil
}

func (q *FQCodel) info() qdisc.Info {
	return qdisc.Info{Flags: q.flags, Limit: int(min(q.limit, 1<<31-1))}
}

// Change implements qdisc.Changer (fq_codel_change): apply the options,
// then dequeue from the head (the peeked packet first, then DRR and
// CoDel as a dequeue would) until the queue is within the new limit and
// memory_limit. Those packets are freed with rtnl_kfree_skbs: plain
// kfree_skb, NOT_SPECIFIED, not qdisc drops (the kernel counts them as
// sent, a quirk the model leaves out: they never reach the wire).
func (q *FQCodel) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err == nil {
		err = q.validate(o)
	}
	if err != nil {
		return qdisc.Info{}, err
	}
	q.apply(o)
	for uint64(q.qlen) > uint64(q.limit) || q.memoryUsage > q.memoryLimit {
		p, ok := q.next(ctx)
		if !ok {
			break
		}
		ctx.Drop(p.Handle, skb.DropNotSpecified)
	}
	return q.info(), nil
}

// fqCodelClassify is fq_codel_classify: skb->priority naming one of our
// flows (major = our handle) wins; then the filters attached to the
// qdisc, if any, name the flow by their result's minor; else the hash.
// It returns the flow index (the kernel's result minus one), -1 for a
// packet to drop (a filter's drop, no filter matching, a minor out of
// 1..flows).
func (q *FQCodel) fqCodelClassify(ctx qdisc.Ctx, p *skb.Packet) int {
	if c, ok := qdisc.PriorityClass(p.Priority, q.handleMajor, q.flowsCnt); ok {
		return c
	}
	if idx, filtered := qdisc.FilterFlow(ctx, p, q.handleMajor, q.flowsCnt); filtered {
		return idx
	}
	// skb_get_hash dissects only when the skb carries no hash yet: a
	// NIC's RSS hash or the socket's sk_txhash (skb_set_owner_w) is
	// read as it is. Hash 0 is an skb without one.
	if p.Hash == 0 {
		ctx.Work(qdisc.WorkHash, 1)
	}
	return int(fqCodelHash(p.Hash, q.flowsCnt))
}

// fqCodelHash is fq_codel_hash: reciprocal_scale(skb_get_hash(skb), flows).
func fqCodelHash(hash, flows uint32) uint32 { return uint32((uint64(hash) * uint64(flows)) >> 32) }

// Enqueue implements qdisc.Qdisc (fq_codel_enqueue for each packet).
func (q *FQCodel) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	q.now = codel.GetTime(int64(ctx.Now()))
	for i := range batch {
		rc[i] = q.fqCodelEnqueue(ctx, &batch[i])
	}
}

// fqCodelEnqueue is fq_codel_enqueue.
func (q *FQCodel) fqCodelEnqueue(ctx qdisc.Ctx, p *skb.Packet) qdisc.Code {
	ctx.Work(qdisc.WorkEnqueue, 1)
	idx := q.fqCodelClassify(ctx, p)
	if idx < 0 {
		// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS: counted as a qdisc
		// drop (qdisc_qstats_drop), freed with __qdisc_drop; the sender
		// sees NET_XMIT_SUCCESS (dev_qdisc_enqueue's mask).
		q.drops++
		ctx.Drop(p.Handle, skb.DropQdiscDrop)
		return qdisc.XmitSuccess | qdisc.XmitBypass
	}
	ctx.Work(qdisc.WorkTstamp, 1) // codel_set_enqueue_time
	it := codel.Item{Pkt: *p, EnqueueTime: codel.GetTime(int64(ctx.Now()))}
	// fq_codel_enqueue charges every packet its truesize
	// (get_codel_cb(skb)->mem_usage = skb->truesize), whether a socket
	// owns it or not.
	it.MemUsage = p.TrueSize
	f := &q.flows[idx]
	f.q.PushTail(it)
	q.backlogs[idx] += p.Len
	q.backlog += p.Len
	if !f.Linked() {
		qdisc.FlowPushTail(q.flows, &q.newFlows, int32(idx))
		q.newFlowCount++
		f.deficit = int32(q.quantum)
	}
	q.memoryUsage += it.MemUsage
	memoryLimited := q.memoryUsage > q.memoryLimit
	q.qlen++
	if uint64(q.qlen) <= uint64(q.limit) && !memoryLimited {
		return qdisc.XmitSuccess
	}

	prevQlen := q.qlen
	// fq_codel_drop scans every flow, so it drops half the fat flow (at
	// most drop_batch packets) at once rather than one per enqueue.
	victim := q.fqCodelDrop(ctx, q.dropBatch)
	dropped := uint32(prevQlen - q.qlen)
	q.dropOverlimit += dropped
	if memoryLimited {
		q.dropOvermemory += dropped
	}
	if victim == idx {
		// Our own flow paid: NET_XMIT_CN (ret == idx), even if the
		// drop reached this very packet (the whole flow went). A
		// sender takes it as sent (net_xmit_eval) and TCP recovers
		// the loss as any other.
		return qdisc.XmitCN
	}
	return qdisc.XmitSuccess
}

// fqCodelDrop is fq_codel_drop: find the flow with the largest backlog by
// a linear scan of backlogs[] (4 KB for 1024 flows, cheaper than keeping
// a heap on the fast path) and drop from its head until half of its
// backlog or maxPackets packets are gone. Returns the victim's index.
func (q *FQCodel) fqCodelDrop(ctx qdisc.Ctx, maxPackets uint32) int {
	// backlogs[] is a dense u32 array read in order ("with 1024 flows,
	// we scan 4KB of memory ... amortizing this linear lookup to one
	// cache line per drop", sch_fq_codel.c): priced per cache line
	// scanned, 16 flows a line, not per flow.
	ctx.Work(qdisc.WorkFlowScan, (int(q.flowsCnt)*4+63)/64)
	var maxBacklog uint32
	idx := 0
	for i, b := range q.backlogs {
		if b > maxBacklog {
			maxBacklog, idx = b, i
		}
	}
	threshold := maxBacklog >> 1
	f := &q.flows[idx]
	var length, mem, i uint32
	// The kernel's do/while assumes the fat flow holds a packet; only
	// zero-length packets could break that, so the model checks.
	for f.q.Len() > 0 {
		it := f.q.PopHead()
		length += it.Pkt.Len
		mem += it.MemUsage
		ctx.Drop(it.Pkt.Handle, skb.DropQdiscOverlimit)
		i++
		if i >= maxPackets || length >= threshold {
			break
		}
	}
	// Tell codel to increase its signal strength too.
	f.cvars.Count += i
	q.backlogs[idx] -= length
	q.memoryUsage -= mem
	q.drops += uint64(i)
	q.backlog -= length
	q.qlen -= int(i)
	return idx
}

// fqCodelDequeue is fq_codel_dequeue: serve new flows before old ones,
// refilling a flow's deficit by quantum each time it runs out.
func (q *FQCodel) fqCodelDequeue(ctx qdisc.Ctx) (codel.Item, bool) {
	for {
		head := &q.newFlows
		if head.Empty() {
			head = &q.oldFlows
			if head.Empty() {
				return codel.Item{}, false
			}
		}
		idx := head.First()
		f := &q.flows[idx]
		if f.deficit <= 0 {
			f.deficit += int32(q.quantum)
			qdisc.FlowPopHead(q.flows, head)
			qdisc.FlowPushTail(q.flows, &q.oldFlows, idx)
			continue
		}
		q.cq.f, q.cq.idx, q.cq.ctx = f, int(idx), ctx
		it, ok := codel.Dequeue(&q.cq, &q.backlog, &q.cparams, &f.cvars, &q.cstats)
		q.cq.ctx = nil
		if !ok {
			qdisc.FlowPopHead(q.flows, head)
			// A new flow that went empty passes through old_flows once,
			// so it cannot starve them by coming back as new each time.
			if head == &q.newFlows && !q.oldFlows.Empty() {
				qdisc.FlowPushTail(q.flows, &q.oldFlows, idx)
			}
			continue
		}
		f.deficit -= int32(it.Pkt.Len)
		// drop_count/drop_len feed qdisc_tree_reduce_backlog for the
		// parents; the host tracks that itself.
		q.cstats.DropCount, q.cstats.DropLen = 0, 0
		return it, true
	}
}

// next returns the next packet to send, the peeked one first
// (qdisc_dequeue_peeked).
func (q *FQCodel) next(ctx qdisc.Ctx) (skb.Packet, bool) {
	if q.hasPeeked {
		q.hasPeeked = false
		q.qlen--
		q.backlog -= q.peeked.Pkt.Len
		return q.peeked.Pkt, true
	}
	it, ok := q.fqCodelDequeue(ctx)
	return it.Pkt, ok
}

// Dequeue implements qdisc.Qdisc: a bulk of fq_codel_dequeue calls.
func (q *FQCodel) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	q.now = codel.GetTime(int64(ctx.Now()))
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.next(ctx) })
}

// Peek implements qdisc.Qdisc (qdisc_peek_dequeued: dequeue, run CoDel,
// and keep the packet for the next dequeue).
func (q *FQCodel) Peek(ctx qdisc.Ctx) (skb.Packet, bool) {
	q.now = codel.GetTime(int64(ctx.Now()))
	if !q.hasPeeked {
		it, ok := q.fqCodelDequeue(ctx)
		if !ok {
			return skb.Packet{}, false
		}
		q.peeked, q.hasPeeked = it, true
		q.qlen++
		q.backlog += it.Pkt.Len
	}
	return q.peeked.Pkt, true
}

// Reset implements qdisc.Qdisc (fq_codel_reset, plus the stash).
func (q *FQCodel) Reset(ctx qdisc.Ctx) {
	if q.hasPeeked {
		ctx.Drop(q.peeked.Pkt.Handle, skb.DropQueuePurge)
		q.hasPeeked = false
	}
	for i := range q.flows {
		f := &q.flows[i]
		for f.q.Len() > 0 {
			ctx.Drop(f.q.PopHead().Pkt.Handle, skb.DropNotSpecified)
		}
		f.FlowLink, f.cvars = qdisc.FlowLink{}, codel.Vars{}
		q.backlogs[i] = 0
	}
	q.newFlows = qdisc.NewFlowList()
	q.oldFlows = qdisc.NewFlowList()
	q.memoryUsage, q.qlen, q.backlog = 0, 0, 0
}

// FlowClasses implements qdisc.FlowClasses: fq_codel_walk lists the
// flows on new_flows or old_flows (a non-empty flowchain; a flow that
// emptied stays listed until fq_codel_dequeue unlinks it) as classes
// idx+1, and fq_codel_dump_class_stats gives each its packets, its
// backlogs[] bytes and tc_fq_codel_cl_stats: deficit, count, lastcount,
// ldelay (us), dropping (0 or 1) and drop_next (us from the last call,
// negative when past; 0 out of the dropping state).
func (q *FQCodel) FlowClasses() []qdisc.Class {
	var out []qdisc.Class
	for i := range q.flows {
		f := &q.flows[i]
		if !f.Linked() {
			continue
		}
		var dropping, dropNext int64
		if f.cvars.Dropping {
			dropping = 1
			if delta := int32(f.cvars.DropNext - q.now); delta >= 0 {
				dropNext = int64(codel.ToUs(codel.Time(delta)))
			} else {
				dropNext = -int64(codel.ToUs(codel.Time(-delta)))
			}
		}
		out = append(out, qdisc.Class{ID: qdisc.MakeClassID(0, uint16(i+1)), Qlen: f.q.Len(), Backlog: int64(q.backlogs[i]),
			XStats: []qdisc.XStat{
				qdisc.XInt("deficit", int64(f.deficit)),
				qdisc.XUint("count", uint64(f.cvars.Count)),
				qdisc.XUint("lastcount", uint64(f.cvars.LastCount)),
				qdisc.XUint("ldelay", uint64(codel.ToUs(f.cvars.LDelay))),
				qdisc.XInt("dropping", dropping),
				qdisc.XInt("drop_next", dropNext),
			}})
	}
	return out
}

// Stats implements qdisc.Qdisc; XStats in tc's order for fq_codel,
// then txlab's codel_dropping: the flows in CoDel's dropping state (the
// kernel shows each flow's in tc -s class show), for the report's series.
// fq_codel never counts overlimits (its overflow drops are drops).
func (q *FQCodel) Stats() qdisc.Stats {
	var dropping int64
	for i := range q.flows {
		if q.flows[i].cvars.Dropping {
			dropping++
		}
	}
	return qdisc.Stats{Qlen: q.qlen, Backlog: int64(q.backlog), Drops: q.drops, XStats: []qdisc.XStat{
		qdisc.XInt("maxpacket", int64(q.cstats.MaxPacket)),
		qdisc.XInt("drop_overlimit", int64(q.dropOverlimit)),
		qdisc.XInt("new_flow_count", int64(q.newFlowCount)),
		qdisc.XInt("ecn_mark", int64(q.cstats.ECNMark)),
		qdisc.XInt("ce_mark", int64(q.cstats.CEMark)),
		qdisc.XInt("memory_used", int64(q.memoryUsage)),
		qdisc.XInt("drop_overmemory", int64(q.dropOvermemory)),
		qdisc.XInt("new_flows_len", int64(q.newFlows.Len())),
		qdisc.XInt("old_flows_len", int64(q.oldFlows.Len())),
		qdisc.XInt("codel_dropping", dropping), // txlab
	}}
}
