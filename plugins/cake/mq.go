package cake

import (
	"sync"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
)

// syncTime is cake_mq's rate re-synchronisation period (200 us).
const syncTime = 200 * sim.Microsecond

// sharedConfig is cake_mq's cake_sched_config shared by the children of
// one root: the configured rate and the members to count.
type sharedConfig struct {
	rateBps   uint64 // the root's bandwidth, bytes/s
	members   []*Cake
	clearTins bool // the variant that reprograms via cake_configure_rates + cake_clear_tin
}

var (
	groupsMu sync.Mutex
	groups   = map[string]*sharedConfig{}
)

func init() {
	qdisc.Register("cake_mq", "cake per TX queue sharing one rate, re-synchronised every 200us from dequeue (cake_mq)",
		func() qdisc.Qdisc { return &Cake{} })
	qdisc.RegisterMultiQueue("cake_mq", "cake")
}

// join attaches a cake child to its cake_mq group; the group is
// forgotten once all its members have joined.
func (q *Cake) join(group string, size int) {
	groupsMu.Lock()
	defer groupsMu.Unlock()
	g, ok := groups[group]
	if !ok {
		g = &sharedConfig{rateBps: q.rateBps, clearTins: q.clearTinBug}
		groups[group] = g
	}
	g.members = append(g.members, q)
	q.shared = g
	if len(g.members) >= size {
		delete(groups, group)
	}
}

// mqSyncRate is cake_mq's dequeue-time rate sharing: every sync_time,
// count the active siblings and give this queue rate / active.
func (q *Cake) mqSyncRate(ctx qdisc.Ctx, now sim.Time) {
	if now-q.lastCheckedActive < syncTime {
		return
	}
	active := 1 // this queue
	for _, m := range q.shared.members {
		if m == q {
			continue
		}
		ctx.Work(qdisc.WorkFlowScan, 1)
		if m.qlen > 0 || m.lastActive > q.lastCheckedActive {
			active++
		}
	}
	q.lastCheckedActive = now
	q.activeQueues = active
	newRate := q.shared.rateBps / uint64(max(active, 1))
	if newRate == q.rateBps {
		return
	}
	q.rateBps = newRate
	if q.clearTinBug {
		// cake_configure_rates(sch, rate, rate_adjust=true): every tin
		// reprogrammed, and unused tins cleared on the dequeue path —
		// a walk of every flow of five empty tins, which also leaves
		// cur_tin/cur_flow pointing at the last cleared tin.
		q.reconfigure(ctx)
		for c := q.tinCnt; c < cakeMaxTins; c++ {
			ctx.Work(qdisc.WorkFlowScan, cakeQueues)
		}
		return
	}
	// torvalds 9d3e7f97: cake_set_rate on the current tin only, and the
	// global rate follows it.
	b := q.tins[q.curTin]
	setRate(b, newRate, 0, 0, 0)
	q.rateNs, q.rateShft = b.tinRateNs, b.tinRateShft
}
