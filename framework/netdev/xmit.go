package netdev

import (
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// DevQueueXmit is __dev_queue_xmit (net/core/dev.c): pick a txq, hand the
// skb to its qdisc (or straight to the driver for noqueue). Softirqs
// raised on the way run at rcu_read_unlock_bh, inside the measured time,
// as bpftrace's @__dev_queue_xmit_ns sees them.
func (n *Net) DevQueueXmit(c *sim.CPU, d *Device, s *skb.SKB) qdisc.Code {
	start := c.Now()
	if s.RxQueue == 0 {
		// A forwarded skb was offered when it reached the RX port.
		n.unoffered--
		n.Offered++
	}
	h := s.Handle
	if n.Hooks.XmitStart != nil {
		n.Hooks.XmitStart(c, s)
	}
	rc := n.devQueueXmit(c, d, s)
	n.XmitHist.Add(int64(c.Now() - start))
	if n.Hooks.XmitDone != nil {
		n.Hooks.XmitDone(c, h, start)
	}
	return rc
}

// devQueueXmit is __dev_queue_xmit's body, also for a stacked device's
// call on its lower one (bond_dev_queue_xmit), which offers nothing new.
func (n *Net) devQueueXmit(c *sim.CPU, d *Device, s *skb.SKB) qdisc.Code {
	c.LocalBhDisable() // rcu_read_lock_bh()
	prevAct := c.SetAct(n.act.xmit)
	c.Spend(n.E.Costs.XmitEntry)
	var txq *TxQueue
	if d.clsact != nil {
		// egress_needed_key: sch_handle_egress before the queue pick
		var rc qdisc.Code
		var done bool
		if txq, rc, done = n.schHandleEgress(c, d, s); done {
			c.SetAct(prevAct)
			c.LocalBhEnable()
			return rc
		}
	}
	if txq == nil {
		txq = n.netdevCorePickTx(c, d, s)
	}
	var rc qdisc.Code
	if q := txq.qdisc; q != nil {
		rc = n.devXmitSkb(c, s, q, d, txq)
	} else {
		rc = n.xmitNoQueue(c, d, txq, s)
	}
	c.SetAct(prevAct)
	c.LocalBhEnable() // rcu_read_unlock_bh(): pending softirqs run here
	return rc
}

// netdevCorePickTx is netdev_core_pick_tx -> netdev_pick_tx: the socket's
// cached queue, else XPS by CPU, else skb_tx_hash.
func (n *Net) netdevCorePickTx(c *sim.CPU, d *Device, s *skb.SKB) *TxQueue {
	c.Spend(n.E.Costs.PickTx)
	if s.XmitCPU == 0 {
		// skb->sender_cpu, set once, before ndo_select_queue: a
		// bond's slave picks by the sender's CPU (2bd82484bb4c).
		s.XmitCPU = int16(c.ID + 1)
	}
	if d.Bond != nil {
		return n.bondSelectQueue(d, s) // ndo_select_queue, on every bond
	}
	nq := len(d.Queues)
	if nq == 1 {
		s.Queue = 0
		return d.Queues[0]
	}
	// ndo_select_queue: a driver with its own selector (i40e's
	// i40e_lan_select_queue) decides first; ok=false is its
	// "return netdev_pick_tx()", which is the code below.
	if sel := d.selector; sel != nil {
		if qi, ok := sel.SelectQueue(s.Packet, nq); ok {
			if qi < 0 || qi >= nq {
				qi = 0 // netdev_cap_txqueue
			}
			s.Queue = uint16(qi)
			return d.Queues[qi]
		}
	}
	var m *TxqMapping
	if cache, ok := n.Pool.Owner(s).(TxQueueCache); ok {
		m = cache.txqMapping()
		if qi := n.skTxQueueGet(c, m); qi >= 0 && qi < nq && !s.OooOkay {
			s.Queue = uint16(qi)
			return d.Queues[qi]
		}
	}
	qi := d.xps[s.XmitCPU-1] // get_xps_queue: XPS_CPUS map of sender_cpu
	if qi < 0 {
		qi = d.skbTxHash(s)
	}
	if m != nil {
		m.set(c.Now(), qi) // sk_tx_queue_set
	}
	s.Queue = uint16(qi)
	return d.Queues[qi]
}

// skbTxHash is skb_tx_hash: a queue among the packet's traffic class's
// (all the device's without classes), the RX queue folded into them for
// an skb a NIC received (skb_rx_queue_recorded), else its flow hash
// scaled to them.
func (d *Device) skbTxHash(s *skb.SKB) int {
	off, cnt := d.tcRange(s.Priority)
	if s.RxQueue > 0 {
		qi := int(s.RxQueue - 1)
		if qi >= off {
			qi -= off
		}
		for qi >= cnt {
			qi -= cnt
		}
		return qi + off
	}
	return off + int(uint64(s.Hash)*uint64(cnt)>>32) // reciprocal_scale(skb_get_hash(skb), qcount) + qoffset
}

// TxQueueCache is a connected socket, whose TX queue netdev_pick_tx
// caches (sk->sk_dst_cache set); its types embed a TxqMapping.
type TxQueueCache interface {
	txqMapping() *TxqMapping
}

// TxqMapping is a socket's sk_tx_queue_mapping with, since
// 4a7708443dec, sk_tx_queue_mapping_jiffies. The zero value maps no
// queue (NO_QUEUE_MAPPING).
type TxqMapping struct {
	queue int32 // the queue + 1; 0 is NO_QUEUE_MAPPING
	at    int64 // jiffies when it was set or last refreshed
}

func (m *TxqMapping) txqMapping() *TxqMapping { return m }

// TxQueue is the cached queue, -1 if none.
func (m *TxqMapping) TxQueue() int { return int(m.queue) - 1 }

// set is sk_tx_queue_set as 4a7708443dec made it: a new queue stamps
// the time; the same one refreshes a stamp older than a second (HZ).
func (m *TxqMapping) set(now sim.Time, qi int) {
	j := int64(now / sim.Jiffy)
	if m.TxQueue() != qi {
		m.queue, m.at = int32(qi)+1, j
		return
	}
	if j > m.at+int64(sim.Second/sim.Jiffy) {
		m.at = j
	}
}

// skTxQueueGet is sk_tx_queue_get: the cached queue, or -1 once
// net.core.txq_reselection_ms has passed since it was stamped
// (4a7708443dec; 0 keeps it forever, as kernels before it did).
func (n *Net) skTxQueueGet(c *sim.CPU, m *TxqMapping) int {
	qi := m.TxQueue()
	if r := n.Cfg.TxqReselectionMs; qi >= 0 && r > 0 {
		resel := int64(sim.Time(r) * sim.Millisecond / sim.Jiffy) // msecs_to_jiffies
		if int64(c.Now()/sim.Jiffy) > m.at+resel {                // time_is_before_jiffies(at + resel)
			return -1
		}
	}
	return qi
}

// xmitNoQueue is the noqueue branch of __dev_queue_xmit: straight to the
// driver under HARD_TX_LOCK, dropping if the queue is stopped.
func (n *Net) xmitNoQueue(c *sim.CPU, d *Device, txq *TxQueue, s *skb.SKB) qdisc.Code {
	if n.xmitRecursion(c) {
		return n.recursionAlert(c, d, s)
	}
	c.Spend(n.E.Costs.ValidateXmit)
	if d.Bond != nil {
		return n.bondXmitNoQueue(c, d, txq, s)
	}
	n.hardTxLock(c, d, txq)
	if !txq.Stopped() {
		var l skb.List
		l.Push(s)
		rest, ret := n.devHardStartXmit(c, d, txq, &l)
		n.hardTxUnlock(c, d, txq)
		if rest.Empty() { // dev_xmit_complete
			if ret == txDrop {
				return qdisc.XmitDrop // the driver dropped it: rc to the sender
			}
			return qdisc.XmitSuccess
		}
		// "Virtual device asks to queue packet!": dropped, one
		// dev_core_stats_tx_dropped_inc for the list.
		d.link.coreTxDropped++
		for r := rest.Pop(); r != nil; r = rest.Pop() {
			n.kfreeSkb(c, r, skb.DropDevReady)
		}
		return qdisc.XmitDrop
	}
	n.hardTxUnlock(c, d, txq)
	d.link.coreTxDropped++             // dev_core_stats_tx_dropped_inc
	n.kfreeSkb(c, s, skb.DropDevReady) // -ENETDOWN path: tx_dropped
	return qdisc.XmitDrop
}

// devXmitSkb is __dev_xmit_skb.
func (n *Net) devXmitSkb(c *sim.CPU, s *skb.SKB, q *Qdisc, d *Device, txq *TxQueue) qdisc.Code {
	qdiscCalculatePktLen(s, q)
	if q.nolock() {
		return n.devXmitSkbNolock(c, s, q, d, txq)
	}
	if n.Cfg.Xmit == XmitLlist {
		return n.devXmitSkbLlist(c, s, q, d, txq)
	}
	return n.devXmitSkbBusylock(c, s, q, d, txq)
}

// devXmitSkbBusylock is __dev_xmit_skb up to 6.18: contended enqueuers
// serialise on q->busylock before the root lock.
func (n *Net) devXmitSkbBusylock(c *sim.CPU, s *skb.SKB, q *Qdisc, d *Device, txq *TxQueue) qdisc.Code {
	x := n.getScratch(c)
	toFree := &x.toFree
	var runFree skb.List
	q.lineWrite.Read(c)
	contended := q.running // qdisc_is_running(q)
	xact := c.SetAct(n.act.pusher)
	if contended {
		q.busylock.Lock(c, n.site.busylock)
	}
	q.lock.Lock(c, n.site.rootEnq)
	c.SetAct(xact)
	var rc qdisc.Code
	switch {
	case q.state&stateDeactivated != 0:
		n.kfreeSkb(c, s, skb.DropQdiscDrop)
		rc = qdisc.XmitDrop
	case q.Flags&qdisc.CanBypass != 0 && q.Qlen() == 0 && n.qdiscRunBegin(c, q):
		if n.bypassXmit(c, s, q, d, txq, true) {
			if contended {
				q.busylock.Unlock(c)
				contended = false
			}
			n.qdiscRunInner(c, q)
		}
		runFree = n.qdiscRunEnd(c, q)
		rc = qdisc.XmitSuccess
	default:
		x.one[0] = s
		ea := c.SetAct(n.act.enqueue)
		rc = n.qdiscEnqueue(c, q, x.one[:], toFree)
		c.SetAct(ea)
		if n.qdiscRunBegin(c, q) {
			if contended {
				q.busylock.Unlock(c)
				contended = false
			}
			n.qdiscRunInner(c, q)
			runFree = n.qdiscRunEnd(c, q)
		}
	}
	q.lock.Unlock(c)
	n.kfreeSkbList(c, toFree)
	n.kfreeSkbList(c, &runFree)
	if contended {
		q.busylock.Unlock(c)
	}
	n.putScratch(c, x)
	return rc
}

// devXmitSkbLlist is __dev_xmit_skb with the lockless defer_list
// (100dfa74cad9): push onto q->defer_list; only the CPU that found it
// empty takes the root lock and enqueues the whole batch.
func (n *Net) devXmitSkbLlist(c *sim.CPU, s *skb.SKB, q *Qdisc, d *Device, txq *TxQueue) qdisc.Code {
	// Open-coded llist_add() + bound. READ_ONCE(q->defer_list.first) is
	// followed at once by a locked RMW on the same line (the
	// defer_count increment or the cmpxchg): the core fetches the line
	// once, for ownership, and the RMWs then hit it. One transfer per
	// push, as the seed's @__dev_queue_xmit_ns after the llist shows
	// (a third of the calls, push and all, in [128, 256) ns: no room
	// for a second transfer).
	q.lineDefer.Write(c)
	first := q.deferHead
	counted := false
	for {
		if first != nil && !counted {
			// atomic_long_inc_return(&q->defer_count), once.
			q.lineDefer.AtomicNoSync(c)
			q.deferCount++
			counted = true
			if q.deferCount > q.DeferMax {
				q.DeferMax = q.deferCount
			}
			if reason, over := n.deferOver(c, q); over {
				n.DeferDrops++
				n.kfreeSkb(c, s, reason)
				return qdisc.XmitDrop
			}
		}
		s.Next = first
		// try_cmpxchg(&q->defer_list.first, &first_n, node): on the
		// line fetched above, unless the bound check's read of qlen let
		// another CPU take it (then it is priced as a transfer). A
		// failed cmpxchg leaves the line here with the new head, so the
		// retry follows at once.
		q.lineDefer.AtomicNoSync(c)
		if q.deferHead == first {
			q.deferHead = s
			if n.Hooks.DeferPush != nil {
				n.Hooks.DeferPush(c, q, s)
			}
			break
		}
		first = q.deferHead
	}
	if first != nil {
		return qdisc.XmitSuccess // the CPU that found it empty sends ours
	}

	x := n.getScratch(c)
	toFree := &x.toFree
	var runFree skb.List
	t := c.Now()
	xact := c.SetAct(n.act.pusher)
	q.lock.Lock(c, n.site.rootEnq)
	c.SetAct(n.act.drain)
	n.prof(c, PhEnqLock, t)
	t = c.Now()
	q.lineDefer.Atomic(c) // llist_del_all + atomic_long_set(&q->defer_count, 0)
	list := q.deferHead
	q.deferHead, q.deferCount = nil, 0
	// llist_reverse_order: back to arrival order, following and
	// rewriting each node's next. Priced per node as the kernel's
	// profile measures it (cost llist_node, see costs.go), not as a
	// line transfer: the skb's lines are paid once, by the enqueue that
	// reads them (touchSkbPrefetched).
	batch := q.deferBuf[:0]
	for p := list; p != nil; {
		nx := p.Next
		p.Next = nil
		batch = append(batch, p)
		p = nx
	}
	c.Spend(int64(len(batch)) * n.E.Costs.LlistNode)
	n.DeferBatch.Add(int64(len(batch)))
	for i, j := 0, len(batch)-1; i < j; i, j = i+1, j-1 {
		batch[i], batch[j] = batch[j], batch[i]
	}
	var rc qdisc.Code
	q.lineWrite.ReadNoSync(c)
	n.prof(c, PhReverse, t)
	switch {
	case q.state&stateDeactivated != 0:
		for _, b := range batch {
			n.kfreeSkb(c, b, skb.DropQdiscDrop)
		}
		rc = qdisc.XmitDrop
	case q.Flags&qdisc.CanBypass != 0 && q.Qlen() == 0 && len(batch) == 1 && n.qdiscRunBegin(c, q):
		if n.bypassXmit(c, batch[0], q, d, txq, true) {
			n.qdiscRunInner(c, q)
		}
		runFree = n.qdiscRunEnd(c, q)
		rc = qdisc.XmitSuccess
	default:
		t = c.Now()
		n.setCur(PhEnqueue)
		c.SetAct(n.act.enqueue)
		rc = n.qdiscEnqueue(c, q, batch, toFree)
		c.SetAct(n.act.drain)
		n.prof(c, PhEnqueue, t)
		runFree, _, _ = n.qdiscRun(c, q)
		if len(batch) != 1 {
			rc = qdisc.XmitSuccess
		}
	}
	q.deferBuf = batch[:0]
	t = c.Now()
	q.lock.Unlock(c)
	c.SetAct(n.act.free)
	n.kfreeSkbList(c, toFree)
	n.kfreeSkbList(c, &runFree)
	c.SetAct(xact)
	n.prof(c, PhDrainUnlock, t)
	n.putScratch(c, x)
	return rc
}

// bypassXmit is the TCQ_F_CAN_BYPASS branch of __dev_xmit_skb: count
// the lone skb in bstats and hand it to sch_direct_xmit.
func (n *Net) bypassXmit(c *sim.CPU, s *skb.SKB, q *Qdisc, d *Device, txq *TxQueue, rootLock bool) bool {
	if n.Hooks.Bypass != nil {
		n.Hooks.Bypass(c, s)
	}
	n.touchSkb(c, s)
	q.bstatsUpdate(s)
	n.Bypass++
	var l skb.List
	l.Push(s)
	prev := c.SetAct(n.act.run) // its relock spins as __qdisc_run's does
	ok := n.schDirectXmit(c, &l, q, d, txq, rootLock, true)
	c.SetAct(prev)
	return ok
}

// deferOver applies the defer_list bound policy to the count just taken.
func (n *Net) deferOver(c *sim.CPU, q *Qdisc) (skb.DropReason, bool) {
	switch n.Cfg.DeferBound {
	case BoundThread:
		q.lineWrite.Read(c) // READ_ONCE(q->q.qlen)
		total := q.deferCount + int64(q.Qlen())
		return skb.DropQdiscDrop, q.deferCount > 256 || total > int64(q.Limit)
	case BoundMaxBurst:
		return skb.DropQdiscBurst, q.deferCount > int64(n.Cfg.QdiscMaxBurst)
	default:
		return skb.DropQdiscDrop, q.deferCount > int64(q.Limit)
	}
}

// devXmitSkbNolock is __dev_xmit_skb for TCQ_F_NOLOCK qdiscs
// (pfifo_fast): no root lock, the seqlock decides who runs the qdisc.
func (n *Net) devXmitSkbNolock(c *sim.CPU, s *skb.SKB, q *Qdisc, d *Device, txq *TxQueue) qdisc.Code {
	x := n.getScratch(c)
	toFree := &x.toFree
	var runFree skb.List
	var rc qdisc.Code
	q.lineWrite.Read(c)
	empty := q.state&(stateMissed|stateDraining) == 0 // nolock_qdisc_is_empty
	if q.Flags&qdisc.CanBypass != 0 && empty && n.qdiscRunBegin(c, q) {
		if q.state&(stateMissed|stateDraining) != 0 {
			rc = n.nolockEnqueue(c, q, x, s)
			n.qdiscRunInner(c, q)
			runFree = n.qdiscRunEnd(c, q)
		} else {
			if n.bypassXmit(c, s, q, d, txq, false) && q.state&(stateMissed|stateDraining) != 0 {
				n.qdiscRunInner(c, q)
			}
			runFree = n.qdiscRunEnd(c, q)
			rc = qdisc.XmitSuccess
		}
	} else {
		rc = n.nolockEnqueue(c, q, x, s)
		runFree, _, _ = n.qdiscRun(c, q)
	}
	n.kfreeSkbList(c, toFree)
	n.kfreeSkbList(c, &runFree)
	n.putScratch(c, x)
	return rc
}

// nolockEnqueue is dev_qdisc_enqueue on a NOLOCK qdisc: the band ring's
// producer lock serialises producers.
func (n *Net) nolockEnqueue(c *sim.CPU, q *Qdisc, x *xmitScratch, s *skb.SKB) qdisc.Code {
	prev := c.SetAct(n.act.pusher)
	q.prodLock.Lock(c, n.site.nolockEnq)
	c.SetAct(n.act.enqueue)
	x.one[0] = s
	rc := n.qdiscEnqueue(c, q, x.one[:], &x.toFree)
	q.prodLock.Unlock(c)
	c.SetAct(prev)
	return rc
}

// xmitScratch is what one __dev_xmit_skb call needs that the qdisc
// context (and so the heap) may point to: its to_free list and the
// one-skb batch. Each CPU keeps a stack of them (nested calls from
// interrupts take another), so the data path allocates nothing.
type xmitScratch struct {
	toFree skb.List
	one    [1]*skb.SKB
}

// getScratch takes a free xmitScratch of c's.
func (n *Net) getScratch(c *sim.CPU) *xmitScratch {
	sd := &n.sd[c.ID]
	if k := len(sd.scratch); k > 0 {
		x := sd.scratch[k-1]
		sd.scratch = sd.scratch[:k-1]
		return x
	}
	return &xmitScratch{}
}

// putScratch gives x back to c's stack, cleared.
func (n *Net) putScratch(c *sim.CPU, x *xmitScratch) {
	*x = xmitScratch{}
	sd := &n.sd[c.ID]
	sd.scratch = append(sd.scratch, x)
}

// SchedCaller is where a __netif_schedule call comes from.
type SchedCaller uint8

// The callers of __netif_schedule the model has.
const (
	SchedBQLWake  SchedCaller = iota // netdev_tx_completed_queue -> netif_schedule_queue (BQL cleared STACK_XOFF)
	SchedDrvWake                     // netif_tx_wake_queue (the driver's own flow control)
	SchedQuota                       // __qdisc_run used up dev_tx_weight
	SchedRequeue                     // dev_requeue_skb
	SchedMissed                      // qdisc_run_end found __QDISC_STATE_MISSED (NOLOCK)
	SchedWatchdog                    // qdisc_watchdog
	NumSchedCallers
)

// String is the caller's name in reports.
func (s SchedCaller) String() string {
	return [...]string{"bql_wake", "drv_wake", "quota", "requeue", "missed", "watchdog"}[s]
}

// SchedStat counts one caller's __netif_schedule calls by outcome:
// Calls = Skipped + AlreadySched + Raised.
type SchedStat struct {
	Calls        uint64
	Skipped      uint64 // the fast path returned: defer_list not empty
	AlreadySched uint64 // __QDISC_STATE_SCHED was set: on some output_queue already
	Raised       uint64 // put on this CPU's output_queue, NET_TX_SOFTIRQ raised
	// TxActionTakes counts net_tx_action's root-lock takes of the
	// qdiscs this caller put on an output_queue, TxActionWait their
	// wait for the lock, on the CPUs whose lock statistics are
	// recorded (perf lock record -C): which path makes the
	// net_tx_action row of a perf lock table.
	TxActionTakes uint64
	TxActionWait  sim.Time
}

// netifSchedule is __netif_schedule, with the fast path (f8a55d5e71e6)
// when enabled: a CPU on the defer path is about to run the qdisc anyway.
func (n *Net) netifSchedule(c *sim.CPU, q *Qdisc, from SchedCaller) {
	st := &n.Sched[from]
	st.Calls++
	n.NetifSchedule++
	if n.Cfg.FastPath {
		q.lineDefer.Read(c) // llist_empty(&q->defer_list)
		if q.deferHead != nil {
			st.Skipped++
			n.NetifScheduleSkipped++
			return
		}
	}
	q.lineWrite.Atomic(c) // test_and_set_bit(__QDISC_STATE_SCHED)
	if q.state&stateSched != 0 {
		st.AlreadySched++
		return
	}
	q.state |= stateSched
	q.schedFrom = from
	st.Raised++
	n.netifReschedule(c, q)
}

// netifReschedule is __netif_reschedule: append to this CPU's
// output_queue and raise NET_TX_SOFTIRQ.
func (n *Net) netifReschedule(c *sim.CPU, q *Qdisc) {
	sd := &n.sd[c.ID]
	sd.outputQueue = append(sd.outputQueue, q)
	n.TxSoftirqRaised++
	c.RaiseSoftirq(sim.NetTxSoftirq)
}

// netTxAction is net_tx_action: run every qdisc on this CPU's
// output_queue under its root lock.
func (n *Net) netTxAction(c *sim.CPU) {
	sd := &n.sd[c.ID]
	if len(sd.outputQueue) == 0 {
		return
	}
	// Take the list and give output_queue the spare's array: qdiscs
	// rescheduled meanwhile go there, for the next round.
	list := sd.outputQueue
	sd.outputQueue, sd.outputSpare = sd.outputSpare[:0], nil
	for _, q := range list {
		c.Spend(n.E.Costs.NetTxAction)
		if !q.nolock() {
			t := c.Now()
			q.lock.Lock(c, n.site.txAction)
			wait := c.Now() - t
			if c.LockRecorded() {
				st := &n.Sched[q.schedFrom]
				st.TxActionTakes++
				st.TxActionWait += wait
			}
			if n.OnTxAction != nil {
				n.OnTxAction(c, q, q.schedFrom, wait)
			}
			n.prof(c, PhTxActionLock, t)
		} else if q.state&stateDeactivated != 0 {
			q.state &^= stateSched
			continue
		}
		q.lineWrite.Atomic(c) // clear_bit(__QDISC_STATE_SCHED)
		q.state &^= stateSched
		runFree, ran, sent := n.qdiscRun(c, q)
		n.TxAction.Qdiscs++
		switch {
		case !ran:
			n.TxAction.FoundRunning++
		case sent == 0:
			n.TxAction.Empty++
		}
		n.TxAction.Packets += uint64(sent)
		if !q.nolock() {
			q.lock.Unlock(c)
		}
		n.kfreeSkbList(c, &runFree)
	}
	clear(list)
	sd.outputSpare = list[:0]
}
