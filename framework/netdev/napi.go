package netdev

import (
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// napiWeight is NAPI_POLL_WEIGHT.
const napiWeight = 64

// napi is a napi_struct for one MSI-X vector.
type napi struct {
	dev       *Device
	vec       int
	irq       func(*sim.CPU)  // the driver's MSI-X handler: napi_schedule_irqoff
	scheduled bool            // NAPI_STATE_SCHED
	missed    bool            // NAPI_STATE_MISSED: scheduled again while scheduled
	local     *localRx        // a local receive queue's NAPI (local.go), not the driver's
	backlog   *softnetBacklog // a CPU's backlog NAPI (backlog.go)
}

// napiSchedule is napi_schedule on CPU c.
func (n *Net) napiSchedule(c *sim.CPU, x *napi) {
	if x.scheduled {
		// napi_schedule_prep: already scheduled (maybe polling right
		// now); napi_complete_done will see MISSED and poll again.
		x.missed = true
		return
	}
	x.scheduled = true
	n.napiListAdd(c, x)
}

// netRxAction is net_rx_action: poll each NAPI on this CPU's poll_list
// once, within netdev_budget and netdev_budget_usecs; a NAPI that used
// its whole weight goes on the repoll list, spliced back behind the ones
// not reached and the ones scheduled meanwhile, and the softirq is raised
// again (__do_softirq restarts it, or the next irq exit does). Running
// out of budget or time counts a time_squeeze. While it runs
// (sd->in_net_rx_action) a NAPI scheduled on this CPU raises nothing:
// once its list and the repoll list are empty, it takes poll_list again
// ('goto start') with the budget and time limit it has left.
// With Cfg.KfreeSkbDefer a loop that ends in a break is followed by
// __kfree_skb_flush (4.5-4.9).
func (n *Net) netRxAction(c *sim.CPU) {
	sd := &n.sd[c.ID]
	budget := n.Cfg.NetdevBudget
	// time_limit = jiffies + usecs_to_jiffies(netdev_budget_usecs),
	// checked with time_after_eq(jiffies, time_limit).
	jiffy := sim.Second / HZ
	limit := c.Now()/jiffy + netdevBudgetUsecs/jiffy
	// Four arrays take turns (no allocation per softirq): the list
	// taken, poll_list filling meanwhile, the repoll list and the
	// spliced result.
	sd.inNetRxAction = true
	all := sd.pollList
	list := all
	sd.pollList = sd.pollSpare[:0]
	repoll := sd.repoll[:0]
	for {
		n.skbDeferFreeFlush(c)
		if len(list) == 0 {
			if len(repoll) > 0 {
				break
			}
			sd.inNetRxAction = false
			if len(sd.pollList) == 0 {
				sd.pollSpare, sd.repoll = all[:0], repoll
				return
			}
			// goto start: the NAPIs scheduled meanwhile.
			sd.inNetRxAction = true
			all, sd.pollList = sd.pollList, all[:0]
			list = all
		}
		x := list[0]
		list = list[1:]
		work, done := n.napiPoll(c, x)
		switch {
		case !done:
			// work == weight: the driver must not complete; repoll.
			x.missed = false
			repoll = append(repoll, x)
		case x.missed:
			// napi_complete_done saw NAPI_STATE_MISSED: __napi_schedule
			// again, onto the tail of sd->poll_list.
			x.missed = false
			n.napiListAdd(c, x)
		default:
			x.scheduled = false
			if x.dev != nil && x.dev.rx != nil && x.local == nil {
				n.rxComplete(c, x.dev, x.vec)
			}
		}
		budget -= work
		if budget <= 0 || c.Now()/jiffy >= limit {
			n.softnet[c.ID].TimeSqueeze++
			break
		}
	}
	if n.Cfg.KfreeSkbDefer {
		// 4.5-4.9: __kfree_skb_flush after the loop; the early return
		// above (every NAPI completed) skips it.
		n.kfreeSkbFlush(c)
	}
	rest := append(append(append(sd.pollRest[:0], list...), sd.pollList...), repoll...)
	sd.pollSpare, sd.pollRest, sd.repoll = all[:0], sd.pollList[:0], repoll[:0]
	sd.pollList = rest
	if len(sd.pollList) > 0 {
		c.RaiseSoftirq(sim.NetRxSoftirq)
	} else {
		sd.inNetRxAction = false
	}
}

// napiPoll is napi_poll -> the driver's poll: its TX clean, and on a
// vector with RX rings the RX clean (ice_napi_poll's second half):
// incomplete (the whole weight) unless both finished.
func (n *Net) napiPoll(c *sim.CPU, x *napi) (int, bool) {
	n.softnet[c.ID].Polls++
	if x.backlog != nil {
		// No device behind it: no interrupt to re-arm, no DIM.
		c.Spend(n.E.Costs.BacklogPoll)
		return n.processBacklog(c, x.backlog, napiWeight) // quota dev_weight
	}
	if x.local != nil {
		c.Spend(n.E.Costs.NapiPoll)
		return n.pollLocal(c, x.local, napiWeight)
	}
	if x.dev.Info.Wire {
		c.Spend(n.E.Costs.NapiPoll)
	} else {
		// veth_poll: a software NAPI (no wire, no device), no
		// interrupt to re-arm, no DIM.
		c.Spend(n.E.Costs.VethPoll)
	}
	work, done := x.dev.Drv.Poll(x.dev.ctxFor(c), x.vec, napiWeight)
	d := x.dev
	if d.rx == nil || len(d.rx.vecs[x.vec].rings) == 0 {
		return work, done
	}
	rxWork, rxDone := n.rxPoll(c, d, x.vec)
	if !done || !rxDone {
		return napiWeight, false
	}
	return min(rxWork, napiWeight-1), true
}

func (d *Device) ctxFor(c *sim.CPU) *dctx { return &d.ctxs[c.ID] }

// dctx is the driver.Ctx for calls made on one CPU.
type dctx struct {
	net  *Net
	dev  *Device
	cpu  *sim.CPU
	buf  []skb.Packet
	skbs []*skb.SKB // the skbs of buf, detached from their list for the driver call
	// tap holds copies of the skbs Hooks.Tap sees, taken before the
	// driver call; tapPtrs points at them.
	tap     []skb.SKB
	tapPtrs []*skb.SKB
}

func (x *dctx) Now() sim.Time  { return x.cpu.Now() }
func (x *dctx) Spend(ns int64) { x.cpu.Spend(ns) }
func (x *dctx) CPU() int       { return x.cpu.ID }
func (x *dctx) txq(i int) *TxQueue {
	if i < 0 || i >= len(x.dev.Queues) {
		sim.Panicf("driver %s: txq %d out of range", x.dev.Name, i)
	}
	return x.dev.Queues[i]
}

// SentQueue is netdev_tx_sent_queue.
func (x *dctx) SentQueue(i int, bytes int) {
	if !x.net.Cfg.BQL {
		return
	}
	q := x.txq(i)
	q.line.Write(x.cpu)
	q.DQL.Queued(uint32(bytes))
	if q.DQL.Avail() >= 0 {
		return
	}
	q.stateLine().AtomicNoSync(x.cpu) // set_bit(__QUEUE_STATE_STACK_XOFF)
	q.state |= queueStackXoff
	q.Stops++
	// smp_mb: a completion may have raced; re-check.
	if q.DQL.Avail() >= 0 {
		q.stateLine().AtomicNoSync(x.cpu) // test_and_clear_bit
		q.state &^= queueStackXoff
	}
}

// stateLine is txq->state's line, _xmit_lock's: its bit operations are
// locked ops on it (AtomicNoSync right after the dql line's sync point).
func (q *TxQueue) stateLine() *sim.CacheLine { return q.xmitLock.Line() }

// SentQueueMore is __netdev_tx_sent_queue.
func (x *dctx) SentQueueMore(i int, bytes int, more bool) bool {
	if more {
		if x.net.Cfg.BQL {
			q := x.txq(i)
			q.line.Write(x.cpu)
			q.DQL.Queued(uint32(bytes))
		}
		return x.QueueStopped(i)
	}
	x.SentQueue(i, bytes)
	return true
}

// CompletedQueue is netdev_tx_completed_queue.
func (x *dctx) CompletedQueue(i int, pkts, bytes int) {
	if !x.net.Cfg.BQL || bytes == 0 {
		return
	}
	q := x.txq(i)
	q.line.Write(x.cpu)
	q.DQL.Completed(uint32(bytes), uint64(x.cpu.Now()/(sim.Second/HZ)))
	if q.DQL.Avail() < 0 {
		return
	}
	// test_and_clear_bit(__QUEUE_STATE_STACK_XOFF) whether or not it is
	// set: a locked RMW, which takes _xmit_lock's line from the CPU
	// that transmitted last.
	q.stateLine().AtomicNoSync(x.cpu)
	if q.state&queueStackXoff != 0 {
		q.state &^= queueStackXoff
		q.Wakes++
		if !q.Stopped() && q.qdisc != nil { // netif_schedule_queue
			x.net.netifSchedule(x.cpu, q.qdisc, SchedBQLWake)
		}
	}
}

// StopQueue is netif_tx_stop_queue.
func (x *dctx) StopQueue(i int) {
	q := x.txq(i)
	q.stateLine().Atomic(x.cpu) // set_bit(__QUEUE_STATE_DRV_XOFF)
	if q.state&queueDrvXoff == 0 {
		q.Stops++
	}
	q.state |= queueDrvXoff
}

// WakeQueue is netif_tx_wake_queue.
func (x *dctx) WakeQueue(i int) {
	q := x.txq(i)
	q.stateLine().Atomic(x.cpu) // test_and_clear_bit(__QUEUE_STATE_DRV_XOFF)
	if q.state&queueDrvXoff == 0 {
		return
	}
	q.state &^= queueDrvXoff
	q.Wakes++
	if q.qdisc != nil {
		x.net.netifSchedule(x.cpu, q.qdisc, SchedDrvWake)
	}
}

// StartQueue is netif_tx_start_queue: DRV_XOFF cleared, no reschedule.
func (x *dctx) StartQueue(i int) {
	q := x.txq(i)
	q.stateLine().Atomic(x.cpu) // clear_bit(__QUEUE_STATE_DRV_XOFF)
	q.state &^= queueDrvXoff
}

// SyncPoint implements driver.SyncPoint: a sync point in global time.
func (x *dctx) SyncPoint() { x.cpu.Sync() }

// HasQdisc is !qdisc_txq_has_no_queue: the txq has a qdisc, not noqueue.
func (x *dctx) HasQdisc(i int) bool { return x.txq(i).qdisc != nil }

func (x *dctx) QueueStopped(i int) bool { return x.txq(i).state&queueDrvXoff != 0 }
func (x *dctx) XmitStopped(i int) bool  { return x.txq(i).Stopped() }

func (x *dctx) skb(h skb.Handle, what string) *skb.SKB {
	s := x.net.Pool.Lookup(h)
	if s == nil || s.Holder != driverHolder {
		sim.Panicf("driver %s: %s of packet %#x it does not hold", x.dev.Name, what, uint64(h))
	}
	s.Holder = 0
	return s
}

// Consume is a driver's end of a transmitted packet in its NAPI poll:
// a NIC's TX completion frees it with napi_consume_skb and its NAPI
// budget (ice_clean_tx_irq, i40e_clean_tx_irq, idpf's
// idpf_tx_splitq_clean, mlx5e_poll_tx_cq); veth's peer receive
// (veth_xdp_rcv) hands it to the peer's stack, which the model ends
// with a plain free.
func (x *dctx) Consume(h skb.Handle) {
	s := x.skb(h, "completion")
	q := x.dev.Queues[s.Queue]
	q.TxPackets++
	q.TxBytes += uint64(s.Len)
	if x.dev.Info.Wire {
		x.net.napiConsumeSkb(x.cpu, s)
		return
	}
	// The peer's __netif_receive_skb_core: softnet_stat's processed.
	x.net.softnet[x.cpu.ID].Processed++
	x.net.consumeSkb(x.cpu, s)
}

// Drop frees a packet the driver could not send.
func (x *dctx) Drop(h skb.Handle, reason skb.DropReason) {
	x.dev.link.drvTxDropped++ // the driver's own tx_dropped (veth: priv->dropped)
	x.net.kfreeSkb(x.cpu, x.skb(h, "drop"), reason)
}

// RaiseIRQ fires vector v on its affinity CPU at time at.
func (x *dctx) RaiseIRQ(v int, at sim.Time) {
	d := x.dev
	if v < 0 || v >= len(d.napis) {
		sim.Panicf("driver %s: IRQ vector %d out of range", d.Name, v)
	}
	if d.rx != nil {
		// A vector that also serves RX rings: its interrupt is masked
		// while NAPI runs and enabled again by napi_complete_done.
		x.net.rxRaiseTx(d, v, at)
		return
	}
	x.net.E.RaiseIRQ(x.net.E.CPUs[d.vecCPU[v]], at, d.napis[v].irq)
}

// NapiScheduleLocal schedules vector v's NAPI on the calling CPU.
func (x *dctx) NapiScheduleLocal(v int) {
	if v < 0 || v >= len(x.dev.napis) {
		sim.Panicf("driver %s: NAPI vector %d out of range", x.dev.Name, v)
	}
	x.net.napiSchedule(x.cpu, x.dev.napis[v])
}
