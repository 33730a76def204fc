package pie

import (
	"fmt"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
)

func init() {
	qdisc.Register("fq_pie", "Flow Queue PIE: hashed flows, DRR, per-flow PIE AQM (sch_fq_pie.c)",
		func() qdisc.Qdisc { return &FQPIE{} })
}

// fq_pie's limits (sch_fq_pie.c).
const (
	fqPieMaxFlows   = 65536   // "Number of flows must range in [1..65536]"
	fqPieQuantumMax = 1 << 20 // fq_pie_q_range
	timerBatch      = 2048    // flows a timer round updates
)

// flow is struct fq_pie_flow.
type flow struct {
	vars    vars
	deficit int32
	backlog uint32
	qlen    uint32
	q       qdisc.Ring[item]

	qdisc.FlowLink // flowchain
}

// FQPIE is struct fq_pie_sched_data.
type FQPIE struct {
	flows        []flow
	newFlows     qdisc.FlowList
	oldFlows     qdisc.FlowList
	params       params
	ecnProb      uint32
	flowsCnt     uint32
	flowsCursor  uint32
	quantum      uint32
	memoryLimit  uint32
	newFlowCount uint32
	memoryUsage  uint32
	overmemory   uint32
	stats        stats

	qlen        int
	backlog     int64
	drops       uint64
	mtu         uint32
	handleMajor uint32
}

// Init implements qdisc.Qdisc (fq_pie_init: the defaults, fq_pie_change,
// the flow table, the timer at HZ/2).
func (q *FQPIE) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	mtu := uint32(max(s.MTU, 1))
	// fq_pie_init: quantum is psched_mtu clamped to [256, 1 << 20].
	*q = FQPIE{params: paramsInit(), quantum: min(max(mtu, 256), fqPieQuantumMax), ecnProb: 10, flowsCnt: 1024, memoryLimit: 32 << 20, mtu: mtu,
		handleMajor: s.Major(), newFlows: qdisc.NewFlowList(), oldFlows: qdisc.NewFlowList()}
	q.params.limit = 10 * 1024
	info, err := q.Change(ctx, args)
	if err != nil {
		return info, err
	}
	q.flows = make([]flow, q.flowsCnt)
	for i := range q.flows {
		q.flows[i].vars.varsInit()
	}
	ctx.ModTimer(ctx.Now() + sim.Second/2)
	return info, nil
}

// Change implements qdisc.Changer (fq_pie_change): flows only before the
// table exists; then packets are dequeued from the head (a normal
// dequeue) and freed (rtnl_kfree_skbs: NOT_SPECIFIED, not drops) until
// the queue is within a lowered limit.
func (q *FQPIE) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse("fq_pie", args)
	if err != nil {
		return qdisc.Info{}, err
	}
	// fq_pie_policy's range for the quantum: nla_parse_nested refuses
	// it before anything is applied.
	if o.quantum.Set && o.quantum.V > fqPieQuantumMax {
		return qdisc.Info{}, qdisc.Refusef("fq_pie", "quantum %d: integer out of range [1, %d] (EINVAL)", o.quantum.V, fqPieQuantumMax)
	}
	// fq_pie_change applies the limit first (sch->limit and
	// p_params.limit), then refuses flows: the new limit stays, and
	// nothing after it is applied (the queue is not trimmed to it).
	if o.limit.Set {
		q.params.limit = o.limit.V
	}
	if o.flows.Set {
		var refused error
		switch {
		case q.flows != nil:
			refused = qdisc.Refusef("fq_pie", "Number of flows cannot be changed")
		case o.flows.V > fqPieMaxFlows:
			refused = qdisc.Refusef("fq_pie", "Number of flows must range in [1..65536]")
		}
		if refused != nil {
			return qdisc.Info{}, &qdisc.PartialChange{Info: q.info(), Err: refused}
		}
		q.flowsCnt = o.flows.V
	}
	o.apply(&q.params)
	if o.quantum.Set {
		q.quantum = o.quantum.V
	}
	if o.memoryLimit.Set {
		q.memoryLimit = o.memoryLimit.V
	}
	if o.ecnProb.Set {
		q.ecnProb = o.ecnProb.V
	}
	for uint32(q.qlen) > q.params.limit {
		p, ok := q.fqPieDequeue(ctx)
		if !ok {
			break
		}
		ctx.Drop(p.Handle, skb.DropNotSpecified)
	}
	return q.info(), nil
}

func (q *FQPIE) info() qdisc.Info {
	return qdisc.Info{Flags: qdisc.EmptyNoop, Limit: int(min(q.params.limit, 1<<31-1))}
}

// classify is fq_pie_classify: skb->priority naming one of our flows,
// then the filters of q->filter_list, else the hash. It returns the flow
// index, -1 for a packet to drop. The filter step is the kernel's code,
// but no filter ever reaches it: fq_pie's Qdisc_ops have no cl_ops, so
// tc_new_tfilter refuses a filter on it ("Qdisc not classful"), and the
// model's fq_pie declares no qdisc.HasBlock.
func (q *FQPIE) classify(ctx qdisc.Ctx, p *skb.Packet) int32 {
	if c, ok := qdisc.PriorityClass(p.Priority, q.handleMajor, q.flowsCnt); ok {
		return int32(c)
	}
	if idx, filtered := qdisc.FilterFlow(ctx, p, q.handleMajor, q.flowsCnt); filtered {
		return int32(idx)
	}
	ctx.Work(qdisc.WorkHash, 1)
	return int32((uint64(p.Hash) * uint64(q.flowsCnt)) >> 32) // reciprocal_scale
}

// Enqueue implements qdisc.Qdisc (fq_pie_qdisc_enqueue for each packet).
func (q *FQPIE) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i := range batch {
		rc[i] = q.fqPieEnqueue(ctx, &batch[i])
	}
}

// fqPieEnqueue is fq_pie_qdisc_enqueue: tail drop at the limit
// (QDISC_OVERLIMIT); over memory_limit only counted; else the flow's
// PIE decides (QDISC_CONGESTED), ECN-capable packets marked instead
// while the flow's probability is at most ecn_prob percent. Either drop
// returns NET_XMIT_CN, not NET_XMIT_DROP, as the kernel's does.
func (q *FQPIE) fqPieEnqueue(ctx qdisc.Ctx, p *skb.Packet) qdisc.Code {
	ctx.Work(qdisc.WorkEnqueue, 1)
	idx := q.classify(ctx, p)
	if idx < 0 {
		// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS, a qdisc drop.
		q.drops++
		ctx.Drop(p.Handle, skb.DropQdiscDrop)
		return qdisc.XmitSuccess | qdisc.XmitBypass
	}
	f := &q.flows[idx]
	memoryLimited := q.memoryUsage > q.memoryLimit+p.TrueSize // u32 sum, wraps as the kernel's
	reason := skb.DropQdiscOverlimit
	if uint32(q.qlen) >= q.params.limit {
		q.stats.overlimit++
	} else {
		if memoryLimited {
			q.overmemory++
		}
		reason = skb.DropQdiscCongested
		enqueue := false
		if !dropEarly(ctx, &q.params, &f.vars, q.mtu, f.backlog, p.Len) {
			enqueue = true
		} else if q.params.ecn && f.vars.prob <= (maxProb/100)*uint64(q.ecnProb) && p.SetCE() {
			q.stats.ecnMark++
			enqueue = true
		}
		if enqueue {
			it := item{pkt: *p, memUsage: p.TrueSize}
			if !q.params.dqRateEstimator {
				it.enqueueTime = now(ctx)
			}
			q.stats.packetsIn++
			q.memoryUsage += p.TrueSize
			q.backlog += int64(p.Len)
			q.qlen++
			f.q.PushTail(it)
			if !f.Linked() {
				qdisc.FlowPushTail(q.flows, &q.newFlows, idx)
				q.newFlowCount++
				f.deficit = int32(q.quantum)
				f.qlen, f.backlog = 0, 0
			}
			f.qlen++
			f.backlog += p.Len
			return qdisc.XmitSuccess
		}
	}
	q.stats.dropped++
	f.vars.accuProb = 0
	q.drops++
	ctx.Drop(p.Handle, reason)
	return qdisc.XmitCN
}

// fqPieDequeue is fq_pie_qdisc_dequeue: DRR over new then old flows.
func (q *FQPIE) fqPieDequeue(ctx qdisc.Ctx) (skb.Packet, bool) {
	for {
		head := &q.newFlows
		if head.Empty() {
			head = &q.oldFlows
			if head.Empty() {
				return skb.Packet{}, false
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
		if f.q.Len() == 0 {
			// A new flow that emptied passes through old_flows once, so
			// it cannot starve them.
			qdisc.FlowPopHead(q.flows, head)
			if head == &q.newFlows && !q.oldFlows.Empty() {
				qdisc.FlowPushTail(q.flows, &q.oldFlows, idx)
			}
			continue
		}
		ctx.Work(qdisc.WorkDequeue, 1)
		it := f.q.PopHead()
		q.backlog -= int64(it.pkt.Len)
		q.qlen--
		f.qlen--
		f.deficit -= int32(it.pkt.Len)
		f.backlog -= it.pkt.Len
		q.memoryUsage -= it.memUsage
		processDequeue(ctx, &it, &q.params, &f.vars, f.backlog)
		return it.pkt, true
	}
}

// Dequeue implements qdisc.Qdisc.
func (q *FQPIE) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.fqPieDequeue(ctx) })
}

// Timer implements qdisc.TimerQdisc (fq_pie_timer): the probability of
// up to 2048 flows a round, the next round at once until every flow had
// its turn, then after tupdate. (The kernel's "at once" is the next
// jiffy.)
func (q *FQPIE) Timer(ctx qdisc.Ctx) {
	n := min(q.flowsCnt-q.flowsCursor, timerBatch)
	ctx.Work(qdisc.WorkFlowScan, int(n))
	for range n {
		f := &q.flows[q.flowsCursor]
		calculateProbability(&q.params, &f.vars, f.backlog)
		q.flowsCursor++
	}
	var next sim.Time
	if q.flowsCursor >= q.flowsCnt {
		q.flowsCursor = 0
		next = jiffies(q.params.tupdate)
	}
	if q.params.tupdate != 0 {
		ctx.ModTimer(ctx.Now() + next)
	}
}

// Reset implements qdisc.Resetter (fq_pie_reset).
func (q *FQPIE) Reset(ctx qdisc.Ctx) {
	for i := range q.flows {
		f := &q.flows[i]
		for f.q.Len() > 0 {
			ctx.Drop(f.q.PopHead().pkt.Handle, skb.DropNotSpecified)
		}
		f.FlowLink = qdisc.FlowLink{}
		f.vars.varsInit()
	}
	q.newFlows, q.oldFlows = qdisc.NewFlowList(), qdisc.NewFlowList()
	q.qlen, q.backlog, q.memoryUsage = 0, 0, 0
}

// Stats implements qdisc.Qdisc: tc_fq_pie_xstats as fq_pie_print_xstats
// prints them (two lines in tc, one here).
func (q *FQPIE) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.qlen, Backlog: q.backlog, Drops: q.drops, XStats: []qdisc.XStat{
		qdisc.XUint("pkts_in", uint64(q.stats.packetsIn)),
		qdisc.XUint("overlimit", uint64(q.stats.overlimit)),
		qdisc.XUint("overmemory", uint64(q.overmemory)),
		qdisc.XUint("dropped", uint64(q.stats.dropped)),
		qdisc.XUint("ecn_mark", uint64(q.stats.ecnMark)),
		qdisc.XUint("new_flow_count", uint64(q.newFlowCount)),
		qdisc.XUint("new_flows_len", uint64(q.newFlows.Len())),
		qdisc.XUint("old_flows_len", uint64(q.oldFlows.Len())),
		qdisc.XUint("memory_used", uint64(q.memoryUsage)),
	}}
}

// Dump implements qdisc.Qdisc: fq_pie_dump as fq_pie_print_opt prints it.
func (q *FQPIE) Dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "limit %dp flows %d ", q.params.limit, q.flowsCnt)
	printCommon(&b, &q.params)
	fmt.Fprintf(&b, "quantum %s memory_limit %s ecn_prob %d ", units.SprintSize(uint64(q.quantum)),
		units.SprintSize(uint64(q.memoryLimit)), q.ecnProb)
	printFlags(&b, &q.params)
	return b.String()
}
