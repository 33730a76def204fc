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

// mqSyncRate is cake_dequeue's cake_mq rate sharing, as net-next has
// it (sch_cake.c, intel-lab-lkp 08e6db1c): every sync_time while the
// child shapes, count the siblings that are active (packets queued, or
// active since the last check: READ_ONCE of their q.qlen and
// last_active, lines their CPUs write on every enqueue and dequeue,
// priced by Ctx.ReadSibling) and call cake_configure_rates(sch,
// rate_bps / active, rate_adjust = true) whether or not the share
// changed: every tin's rate is reprogrammed for the mode (mtu 0, so
// COBALT's parameters, tuned to the configured rate, stay). The 2026
// change (mq-clear-tins) made cake_configure_rates also run
// cake_clear_tin on every unused tin there: a walk of the 1024 flows of
// each (cake_dequeue_one reads each flow's head), under the child's root
// lock on the dequeue path, every 200 us; it leaves cur_tin/cur_flow in
// the last tin, which the shaped tin choice resets. The fix skips the
// clearing when only the rate changes (rate_adjust).
//
// The kernel's q.qlen also counts a requeued skb (dev_requeue_skb's
// q->q.qlen++); the model's requeued skb sits in the host's gso_skb,
// which the plugin does not see, so a sibling holding only that counts
// by last_active alone (set by the dequeue that handed the skb out).
func (q *Cake) mqSyncRate(ctx qdisc.Ctx, now sim.Time) {
	if q.rateNs == 0 || now-q.lastCheckedActive < syncTime {
		return
	}
	active := 1 // this queue
	for _, m := range q.shared.members {
		if m == q {
			continue
		}
		ctx.ReadSibling(m.txq)
		if m.qlen > 0 || m.lastActive > q.lastCheckedActive {
			active++
		}
	}
	newRate := q.shared.rateBps
	if active > 1 {
		newRate /= uint64(active)
	}
	q.configureRates(ctx, newRate)
	q.lastCheckedActive = now
	q.activeQueues = active
}

// configureRates is cake_configure_rates(sch, rate, rate_adjust=true).
func (q *Cake) configureRates(ctx qdisc.Ctx, rate uint64) {
	ft := q.configTinsRate(rate, 0)
	if q.clearTinBug {
		for c := q.tinCnt; c < cakeMaxTins; c++ {
			q.clearTin(ctx, c)
			ctx.Work(qdisc.WorkFlowScan, cakeQueues) // cake_dequeue_one on every flow
			q.tins[c].cparams.mtuTime = q.tins[ft].cparams.mtuTime
		}
	}
	q.rateNs, q.rateShft = q.tins[ft].tinRateNs, q.tins[ft].tinRateShft
}
