package netdev

import (
	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// driverHolder marks an skb the driver owns (on a ring).
const driverHolder = -1

// qdiscRunBegin is qdisc_run_begin.
func (n *Net) qdiscRunBegin(c *sim.CPU, q *Qdisc) bool {
	if q.nolock() {
		if q.seqlock.TryLock(c, n.site.seqlock) {
			if n.Hooks.RunBegin != nil {
				n.Hooks.RunBegin(c, q)
			}
			return true
		}
		// test_and_set_bit(__QDISC_STATE_MISSED): if it was already set,
		// the running CPU will see it; otherwise retry once.
		q.lineWrite.Atomic(c)
		if q.state&stateMissed != 0 {
			return false
		}
		q.state |= stateMissed
		ok := q.seqlock.TryLock(c, n.site.seqlock)
		if ok && n.Hooks.RunBegin != nil {
			n.Hooks.RunBegin(c, q)
		}
		return ok
	}
	if q.running {
		if n.Cfg.RunBeginReads {
			q.lineWrite.Read(c) // READ_ONCE(q->running): true, nothing stored
		} else {
			q.lineWrite.Write(c) // __test_and_set_bit(__QDISC_STATE2_RUNNING): a store either way
		}
		return false
	}
	// The load and the store of an idle qdisc's flag: one fetch of the
	// line for ownership (the core stores right after it loads).
	q.lineWrite.Write(c)
	q.running = true
	if n.Hooks.RunBegin != nil {
		n.Hooks.RunBegin(c, q)
	}
	return true
}

// qdiscRunEnd is qdisc_run_end; it hands back the dequeue-drop list
// (191ff13e42a7) for the caller to free after the root lock.
func (n *Net) qdiscRunEnd(c *sim.CPU, q *Qdisc) skb.List {
	var out skb.List
	if n.Hooks.RunEnd != nil {
		n.Hooks.RunEnd(c, q)
	}
	if q.nolock() {
		q.seqlock.Unlock(c)
		q.lineWrite.Read(c) // smp_mb(); test_bit(__QDISC_STATE_MISSED)
		if q.state&stateMissed != 0 {
			n.netifSchedule(c, q, SchedMissed)
		}
		return out
	}
	if q.Flags&qdisc.DequeueDrops != 0 {
		out = q.toFree
		q.toFree = skb.List{}
	}
	q.lineWrite.Write(c)
	q.running = false
	return out
}

// qdiscRun is qdisc_run. ran says whether qdisc_run_begin succeeded,
// sent how many packets __qdisc_run dequeued.
func (n *Net) qdiscRun(c *sim.CPU, q *Qdisc) (free skb.List, ran bool, sent int) {
	defer c.SetAct(c.SetAct(n.act.run))
	t := c.Now()
	if !n.qdiscRunBegin(c, q) {
		n.prof(c, PhRunBegin, t)
		return skb.List{}, false, 0
	}
	n.prof(c, PhRunBegin, t)
	if !q.nolock() || q.state&stateDeactivated == 0 {
		sent = n.qdiscRunInner(c, q)
	}
	t = c.Now()
	free = n.qdiscRunEnd(c, q)
	n.prof(c, PhRunEnd, t)
	return free, true, sent
}

// qdiscRunInner is __qdisc_run: restart until the quota is used, then
// leave the rest to NET_TX_SOFTIRQ.
// It returns the packets dequeued.
func (n *Net) qdiscRunInner(c *sim.CPU, q *Qdisc) int {
	prev := c.SetAct(n.act.run)
	sent := n.qdiscRestarts(c, q)
	c.SetAct(prev)
	return sent
}

// qdiscRestarts is __qdisc_run's loop.
func (n *Net) qdiscRestarts(c *sim.CPU, q *Qdisc) int {
	quota := n.Cfg.DevTxWeight
	sent := 0
	for {
		packets, more := n.qdiscRestart(c, q, quota)
		sent += packets
		if !more {
			return sent
		}
		quota -= packets
		// Before b60fa1c5d01a (5.5), also when another task waits for
		// this CPU: the same __netif_schedule, counted as the quota's.
		if quota <= 0 || (n.Cfg.QdiscRunResched && c.NeedResched()) {
			if q.nolock() {
				q.lineWrite.Atomic(c)
				q.state |= stateMissed
			} else {
				t := c.Now()
				n.netifSchedule(c, q, SchedQuota)
				n.prof(c, PhQuota, t)
			}
			return sent
		}
	}
}

// qdiscRestart is qdisc_restart.
func (n *Net) qdiscRestart(c *sim.CPU, q *Qdisc, quota int) (int, bool) {
	t := c.Now()
	n.setCur(PhDequeue)
	ra := c.SetAct(n.act.dequeue)
	list, validate, packets := n.dequeueSkb(c, q, quota)
	c.SetAct(ra)
	n.prof(c, PhDequeue, t)
	if list.Empty() {
		return 0, false
	}
	if n.Prof != nil {
		n.Prof.Restarts++
	}
	q.Restarts++
	q.RestartPkts += uint64(list.Len)
	txq := q.dev.Queues[list.Head.Queue]
	more := n.schDirectXmit(c, &list, q, q.dev, txq, !q.nolock(), validate)
	if more && n.Cfg.DirectXmitQlen {
		// 4.x: ret = qdisc_qlen(q); if (ret && netif_xmit_frozen_or_stopped(txq)) ret = 0
		more = q.Qlen() > 0 && !txq.frozenOrStopped()
	}
	return packets, more
}

// maybeClearMissed is qdisc_maybe_clear_missed (NOLOCK only).
func (n *Net) maybeClearMissed(q *Qdisc, txq *TxQueue) {
	if !q.nolock() {
		return
	}
	q.state &^= stateMissed
	if !txq.frozenOrStopped() {
		q.state |= stateMissed
	} else {
		q.state |= stateDraining
	}
}

// dequeueSkb is dequeue_skb: requeued skbs first, then skb_bad_txq, then
// the qdisc with bulk dequeue.
func (n *Net) dequeueSkb(c *sim.CPU, q *Qdisc, budget int) (list skb.List, validate bool, packets int) {
	packets = 1
	if !q.gsoSkb.Empty() {
		if q.nolock() {
			q.lock.Lock(c, n.site.rootRun)
		}
		s := q.gsoSkb.Head
		txq := q.dev.Queues[s.Queue]
		if !txq.frozenOrStopped() {
			list.Push(q.gsoSkb.Pop())
		} else {
			n.maybeClearMissed(q, txq)
		}
		if q.nolock() {
			q.lock.Unlock(c)
		}
		return list, false, packets // requeued skbs were validated already
	}
	validate = true
	if q.Flags&qdisc.OneTxQueue != 0 && q.devQueue.frozenOrStopped() {
		n.maybeClearMissed(q, q.devQueue)
		return list, validate, packets
	}
	if s := q.skbBadTxq; s != nil { // qdisc_dequeue_skb_bad_txq
		txq := q.dev.Queues[s.Queue]
		if q.nolock() {
			q.lock.Lock(c, n.site.rootRun)
		}
		stopped := txq.frozenOrStopped()
		if stopped {
			n.maybeClearMissed(q, txq) // SKB_XOFF_MAGIC
		} else {
			q.skbBadTxq = nil
		}
		if q.nolock() {
			q.lock.Unlock(c)
		}
		if stopped {
			return list, validate, packets
		}
		list.Push(s)
		// Only try_bulk_dequeue_skb_slow parks an skb in skb_bad_txq,
		// so qdisc_may_bulk is false here.
		n.tryBulkDequeueSkbSlow(c, q, &list, &packets)
		return list, validate, packets
	}
	switch {
	case q.Flags&qdisc.OneTxQueue != 0: // qdisc_may_bulk
		n.tryBulkDequeueSkb(c, q, &list, q.devQueue, &packets, budget)
	case n.Cfg.BulkDequeue == BulkOneTxQueue:
		// Before 4d202a0d1: one skb per qdisc_restart.
		for _, s := range n.qdiscDequeue(c, q, qdisc.DequeueReq{Max: 1, Bytes: 1 << 62}) {
			list.Push(s)
		}
	default:
		n.tryBulkDequeueSkbSlow(c, q, &list, &packets)
	}
	return list, validate, packets
}

// tryBulkDequeueSkb is try_bulk_dequeue_skb, with dequeue_skb's first
// q->dequeue in the same request to the qdisc: after the first skb, more
// while BQL's available bytes last (qdisc_avail_bulklimit) and, with
// 0345552a653c, at most budget (the remaining quota) more.
func (n *Net) tryBulkDequeueSkb(c *sim.CPU, q *Qdisc, list *skb.List, txq *TxQueue, packets *int, budget int) {
	req := qdisc.DequeueReq{Max: 1 << 30, Bytes: n.availBulkLimit(txq)}
	if pr := n.Prof; pr != nil {
		pr.Bulks++
		pr.BulkAvail += req.Bytes
		pr.BulkQlen += int64(q.Qlen())
		pr.BulkQlens[log2Bucket(q.Qlen())]++
		if req.Bytes <= 0 {
			pr.BulkStopped++
		}
	}
	if n.Cfg.BulkQuota {
		req.Max = 1 + budget
	}
	for _, s := range n.qdiscDequeue(c, q, req) {
		list.Push(s)
	}
	if n.Prof != nil {
		n.Prof.BulkPkts += uint64(list.Len)
		n.Prof.BulkSizes[log2Bucket(list.Len)]++
	}
	if list.Len > 1 {
		*packets += list.Len - 1
	}
}

// tryBulkDequeueSkbSlow is try_bulk_dequeue_skb_slow: up to 8 more skbs
// for the first one's txq; the first of another txq is parked in
// skb_bad_txq. A fresh dequeue asks the qdisc for the first skb and the
// 8 in one request; after skb_bad_txq (list holds it) it asks for one at
// a time, as the kernel's loop does.
func (n *Net) tryBulkDequeueSkbSlow(c *sim.CPU, q *Qdisc, list *skb.List, packets *int) {
	if list.Empty() {
		got := n.qdiscDequeue(c, q, qdisc.DequeueReq{Max: 9, Bytes: 1 << 62, SameQueue: true})
		for i, s := range got {
			if i > 0 && s.Queue != got[0].Queue {
				q.skbBadTxq = s
				break
			}
			list.Push(s)
		}
		if list.Len > 1 {
			*packets += list.Len - 1
		}
		return
	}
	mapping := list.Head.Queue
	for cnt := 0; cnt < 8; cnt++ {
		got := n.qdiscDequeue(c, q, qdisc.DequeueReq{Max: 1})
		if len(got) == 0 {
			return
		}
		if got[0].Queue != mapping {
			q.skbBadTxq = got[0]
			return
		}
		list.Push(got[0])
		*packets++
	}
}

// availBulkLimit is qdisc_avail_bulklimit: BQL's available bytes.
func (n *Net) availBulkLimit(txq *TxQueue) int64 {
	if !n.Cfg.BQL || !txq.dev.Info.BQL {
		return 0
	}
	return int64(txq.DQL.Avail())
}

// schDirectXmit is sch_direct_xmit: transmit a bulk outside the root lock
// under HARD_TX_LOCK; requeue what the driver refused. It returns false
// when the caller should stop (requeue happened).
func (n *Net) schDirectXmit(c *sim.CPU, list *skb.List, q *Qdisc, d *Device, txq *TxQueue, rootLock, validate bool) bool {
	t := c.Now()
	if rootLock {
		q.lock.Unlock(c)
	}
	n.prof(c, PhUnlock, t)
	ra := c.SetAct(n.act.driver)
	if validate { // validate_xmit_skb_list, outside all locks
		t = c.Now()
		c.Spend(n.E.Costs.ValidateXmit * int64(list.Len))
		n.prof(c, PhValidate, t)
	}
	ret := txBusy
	var rest skb.List
	t = c.Now()
	n.hardTxLock(c, d, txq)
	n.prof(c, PhHardLock, t)
	t = c.Now()
	n.setCur(PhDriver)
	if !txq.frozenOrStopped() {
		total := list.Len
		rest, ret = n.devHardStartXmit(c, d, txq, list)
		if n.Prof != nil {
			n.Prof.Pkts += uint64(total - rest.Len)
		}
	} else {
		n.maybeClearMissed(q, txq)
		rest = *list
	}
	n.prof(c, PhDriver, t)
	t = c.Now()
	n.hardTxUnlock(c, d, txq)
	n.prof(c, PhHardUnlock, t)
	t = c.Now()
	c.SetAct(ra)
	if rootLock {
		q.lock.Lock(c, n.site.rootRun)
	}
	n.prof(c, PhRelock, t)
	if ret == txBusy { // !dev_xmit_complete: NET_XMIT_DROP is complete
		c.SetAct(n.act.requeue)
		defer c.SetAct(ra)
		t = c.Now()
		if n.Prof != nil {
			n.Prof.Requeued += uint64(rest.Len)
		}
		n.devRequeueSkb(c, &rest, q)
		n.prof(c, PhRequeue, t)
		return false
	}
	return true
}

const (
	txOK   = 0x00 // NETDEV_TX_OK
	txBusy = 0x10 // NETDEV_TX_BUSY
	txDrop = 0x01 // NET_XMIT_DROP: complete (dev_xmit_complete), the last packet dropped
)

// devHardStartXmit is dev_hard_start_xmit: the bulk goes to the driver in
// one call, xmit_more set on all but the last. It returns what the driver
// did not take.
func (n *Net) devHardStartXmit(c *sim.CPU, d *Device, txq *TxQueue, list *skb.List) (skb.List, int) {
	if d.Bond != nil {
		n.bondHardStartXmit(c, d, txq, list)
		return skb.List{}, txOK
	}
	if d.Ifb != nil {
		n.ifbHardStartXmit(c, d, txq, list)
		return skb.List{}, txOK
	}
	ctx := d.ctxFor(c)
	batch, tap := ctx.buf[:0], ctx.tap[:0]
	for s := list.Head; s != nil; s = s.Next {
		n.touchSkb(c, s)
		batch = append(batch, s.Packet)
		if n.Hooks.Tap != nil {
			tap = append(tap, *s) // a copy: by the time the hook runs, the driver may have freed it
		}
	}
	n.driverXmitHook(c, txq, list)
	// The driver owns what it takes from the moment it takes it: a sync
	// point inside Xmit (netdev_tx_sent_queue's line, netif_tx_stop_queue)
	// lets another CPU's TX completion free a packet already on the ring,
	// and the pool hands its skb to the next sender. So the list is taken
	// apart before the call, and only the packets the driver refused are
	// touched after it.
	skbs := ctx.skbs[:0]
	for s := list.Pop(); s != nil; s = list.Pop() {
		s.Holder = driverHolder
		skbs = append(skbs, s)
	}
	ctx.buf, ctx.tap = batch, tap
	sent, rc := d.Drv.Xmit(ctx, txq.Index, batch)
	if sent < 0 || sent > len(batch) || (sent == len(batch) && rc == driver.TxBusy) || (sent < len(batch) && rc == driver.TxDrop) {
		sim.Panicf("driver %s: xmit claims %d of %d packets sent with rc %#x", d.Name, sent, len(batch), rc)
	}
	if n.Hooks.Tap != nil { // xmit_one: dev_queue_xmit_nit before each netdev_start_xmit
		tapped := sent
		if rc == driver.TxBusy {
			tapped++ // the refused one was tapped too
		}
		ptrs := ctx.tapPtrs[:0]
		for i := range tap[:tapped] {
			ptrs = append(ptrs, &tap[i])
		}
		n.Hooks.Tap(c, txq, ptrs)
		clear(ptrs)
		clear(tap)
		ctx.tapPtrs = ptrs[:0]
	}
	var rest skb.List
	for i, s := range skbs[sent:] {
		if n.Pool.Lookup(batch[sent+i].Handle) != s || s.Holder != driverHolder {
			sim.Panicf("driver %s: refused packet %#x of a bulk but consumed or dropped it", d.Name, uint64(batch[sent+i].Handle))
		}
		s.Holder = 0
		rest.Push(s)
	}
	clear(skbs)
	ctx.skbs = skbs[:0]
	if sent < len(batch) {
		// The driver refused batch[sent] (BUSY) or stopped the queue with
		// packets left: dev_hard_start_xmit reports NETDEV_TX_BUSY.
		return rest, txBusy
	}
	if rc == driver.TxDrop {
		return rest, txDrop
	}
	return rest, txOK
}

// driverXmitHook calls Hooks.DriverXmit with a copy of list in c's
// softnet data, so that list itself stays on its caller's stack.
func (n *Net) driverXmitHook(c *sim.CPU, txq *TxQueue, list *skb.List) {
	if n.Hooks.DriverXmit == nil {
		return
	}
	sd := &n.sd[c.ID]
	sd.hookList = *list
	n.Hooks.DriverXmit(c, txq, &sd.hookList)
	sd.hookList = skb.List{}
}

// devRequeueSkb is dev_requeue_skb: the rest goes to q->gso_skb and the
// qdisc is rescheduled.
func (n *Net) devRequeueSkb(c *sim.CPU, rest *skb.List, q *Qdisc) {
	if q.nolock() {
		q.lock.Lock(c, n.site.rootRun)
	}
	for s := rest.Pop(); s != nil; s = rest.Pop() {
		q.gsoSkb.Push(s)
		q.Requeues++
		q.dev.Queues[s.Queue].Requeues++
	}
	if q.nolock() {
		q.lock.Unlock(c)
		q.state |= stateMissed
		return
	}
	n.netifSchedule(c, q, SchedRequeue)
}

// hardTxLock is HARD_TX_LOCK: the txq's _xmit_lock unless the device is
// lltx.
func (n *Net) hardTxLock(c *sim.CPU, d *Device, txq *TxQueue) {
	if !d.Info.LLTX {
		txq.xmitLock.Lock(c, n.site.hardTx)
	}
}

func (n *Net) hardTxUnlock(c *sim.CPU, d *Device, txq *TxQueue) {
	if !d.Info.LLTX {
		txq.xmitLock.Unlock(c)
	}
}
