package pie

import (
	"fmt"
	"strings"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
)

func init() {
	qdisc.Register("pie", "Proportional Integral controller Enhanced: delay-based AQM, RFC 8033 (sch_pie.c)",
		func() qdisc.Qdisc { return &PIE{} })
}

// PIE is struct pie_sched_data with its queue (sch->q).
type PIE struct {
	q       qdisc.Ring[item]
	backlog uint32
	params  params
	vars    vars
	stats   stats
	drops   uint64
	mtu     uint32
}

// Init implements qdisc.Qdisc (pie_init: the defaults, pie_change, the
// timer at HZ/2).
func (q *PIE) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	*q = PIE{params: paramsInit(), mtu: uint32(max(s.MTU, 1))}
	q.vars.varsInit()
	info, err := q.Change(ctx, args)
	if err != nil {
		return info, err
	}
	ctx.ModTimer(ctx.Now() + sim.Second/2)
	return info, nil
}

// Change implements qdisc.Changer (pie_change): the attributes given,
// then the head dropped (rtnl_qdisc_drop: a drop, NOT_SPECIFIED) until
// the queue is within a lowered limit.
func (q *PIE) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse("pie", args)
	if err != nil {
		return qdisc.Info{}, err
	}
	o.apply(&q.params)
	for uint32(q.q.Len()) > q.params.limit {
		it := q.q.PopHead()
		q.backlog -= it.pkt.Len
		q.drops++
		ctx.Drop(it.pkt.Handle, skb.DropNotSpecified)
	}
	return qdisc.Info{Flags: qdisc.EmptyNoop, Limit: int(min(q.params.limit, 1<<31-1))}, nil
}

// Enqueue implements qdisc.Qdisc (pie_qdisc_enqueue for each packet).
func (q *PIE) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i := range batch {
		rc[i] = q.pieEnqueue(ctx, &batch[i])
	}
}

// pieEnqueue is pie_qdisc_enqueue: tail drop at the limit
// (QDISC_OVERLIMIT), else pie_drop_early (QDISC_CONGESTED), an
// ECN-capable packet marked instead while the probability is at most 10%.
func (q *PIE) pieEnqueue(ctx qdisc.Ctx, p *skb.Packet) qdisc.Code {
	ctx.Work(qdisc.WorkEnqueue, 1)
	reason := skb.DropQdiscOverlimit
	if uint32(q.q.Len()) >= q.params.limit {
		q.stats.overlimit++
	} else {
		reason = skb.DropQdiscCongested
		enqueue := false
		if !dropEarly(ctx, &q.params, &q.vars, q.mtu, q.backlog, p.Len) {
			enqueue = true
		} else if q.params.ecn && q.vars.prob <= maxProb/10 && p.SetCE() {
			q.stats.ecnMark++
			enqueue = true
		}
		if enqueue {
			it := item{pkt: *p}
			if !q.params.dqRateEstimator {
				it.enqueueTime = now(ctx)
			}
			q.stats.packetsIn++
			q.stats.maxq = max(q.stats.maxq, uint32(q.q.Len()))
			q.q.PushTail(it)
			q.backlog += p.Len
			return qdisc.XmitSuccess
		}
	}
	q.stats.dropped++
	q.vars.accuProb = 0
	q.drops++
	ctx.Drop(p.Handle, reason)
	return qdisc.XmitDrop
}

// Dequeue implements qdisc.Qdisc (pie_qdisc_dequeue: the head, then
// pie_process_dequeue).
func (q *PIE) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) {
		if q.q.Len() == 0 {
			return skb.Packet{}, false
		}
		ctx.Work(qdisc.WorkDequeue, 1)
		it := q.q.PopHead()
		q.backlog -= it.pkt.Len
		processDequeue(ctx, &it, &q.params, &q.vars, q.backlog)
		return it.pkt, true
	})
}

// Timer implements qdisc.TimerQdisc (pie_timer: the probability, then
// the next update in tupdate jiffies).
func (q *PIE) Timer(ctx qdisc.Ctx) {
	calculateProbability(&q.params, &q.vars, q.backlog)
	if q.params.tupdate != 0 {
		ctx.ModTimer(ctx.Now() + jiffies(q.params.tupdate))
	}
}

// Reset implements qdisc.Resetter (pie_reset).
func (q *PIE) Reset(ctx qdisc.Ctx) {
	for q.q.Len() > 0 {
		ctx.Drop(q.q.PopHead().pkt.Handle, skb.DropNotSpecified)
	}
	q.backlog = 0
	q.vars.varsInit()
}

// Stats implements qdisc.Qdisc: tc_pie_xstats as pie_print_xstats prints
// them (on two lines in tc; one here).
func (q *PIE) Stats() qdisc.Stats {
	x := []qdisc.XStat{probXStat(q.vars.prob),
		qdisc.XTime("delay", sim.Time(uint32(psched.TicksToNs(q.vars.qdelay))/1000)*sim.Microsecond)}
	if q.params.dqRateEstimator {
		x = append(x, qdisc.XRate("avg_dq_rate", uint64(uint32(uint64(q.vars.avgDqRate)*ticksPerSec>>pieScale))))
	}
	x = append(x, qdisc.XUint("pkts_in", uint64(q.stats.packetsIn)), qdisc.XUint("overlimit", uint64(q.stats.overlimit)),
		qdisc.XUint("dropped", uint64(q.stats.dropped)), qdisc.XUint("maxq", uint64(q.stats.maxq)), qdisc.XUint("ecn_mark", uint64(q.stats.ecnMark)))
	return qdisc.Stats{Qlen: q.q.Len(), Backlog: int64(q.backlog), Drops: q.drops, XStats: x}
}

// Dump implements qdisc.Qdisc: pie_dump as pie_print_opt prints it.
func (q *PIE) Dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "limit %dp ", q.params.limit)
	printCommon(&b, &q.params)
	printFlags(&b, &q.params)
	return b.String()
}

// printCommon prints target, tupdate, alpha and beta, as pie_print_opt
// and fq_pie_print_opt do.
func printCommon(b *strings.Builder, p *params) {
	target := uint32(psched.TicksToNs(p.target)) / 1000 // (u32)PSCHED_TICKS2NS / NSEC_PER_USEC
	fmt.Fprintf(b, "target %s tupdate %s alpha %d beta %d ", units.SprintTime(target),
		units.SprintTime(p.tupdate*(1e6/hz)), p.alpha, p.beta)
}

// printFlags prints the flags that are on.
func printFlags(b *strings.Builder, p *params) {
	if p.ecn {
		b.WriteString("ecn ")
	}
	if p.bytemode {
		b.WriteString("bytemode ")
	}
	if p.dqRateEstimator {
		b.WriteString("dq_rate_estimator ")
	}
}
