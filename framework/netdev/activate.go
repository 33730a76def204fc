package netdev

import (
	"slices"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// A root graft on a device that is up (qdisc_graft with parent NULL) is
// not instant: dev_deactivate points every TX queue at noop_qdisc and
// marks the old qdiscs __QDISC_STATE_DEACTIVATED, waits for an RCU grace
// period (synchronize_net under RTNL: synchronize_rcu_expedited), resets
// the old qdiscs (their packets freed), waits while any of them still
// runs or is scheduled (schedule_timeout_uninterruptible(1), a jiffy at
// a time), and only then grafts the new root; dev_activate points the
// queues at it. Every packet a sender hands the device meanwhile meets
// noop_qdisc, which drops it (NET_XMIT_CN, tx_dropped). A device is up
// once the run starts (Net.Up); the run's setup tc grafts as on a device
// that is down, at once.

// Up marks the devices up (dev_open, IFF_UP): root grafts from now on
// deactivate and activate the device.
func (n *Net) Up() { n.up = true }

// rootSwap is a graft in progress on a device that is up: a root's, or
// an mq child's.
type rootSwap struct {
	start  sim.Time  // dev_deactivate
	old    devQdiscs // the deactivated tree: reset, then destroyed
	newTxq []*Qdisc  // each TX queue's qdisc in the new tree (nil: noqueue)
	freed  skb.List  // what the resets purged, freed at the end
	root   bool      // a root's graft, not an mq child's
}

// noopQdisc is noop_qdisc's ops: every packet dropped, nothing held.
type noopQdisc struct{}

func (noopQdisc) Init(qdisc.Ctx, qdisc.Setup, []string) (qdisc.Info, error) {
	return qdisc.Info{Flags: qdisc.EmptyNoop}, nil
}

// Enqueue is noop_enqueue: __qdisc_drop, NET_XMIT_CN.
func (noopQdisc) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i := range batch {
		ctx.Drop(batch[i].Handle, skb.DropQdiscDrop)
		rc[i] = qdisc.XmitCN
	}
}

func (noopQdisc) Dequeue(_ qdisc.Ctx, _ qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return out
}

// Peek is noop_qdisc's peek, noop_dequeue: nothing.
func (noopQdisc) Peek(qdisc.Ctx) (skb.Packet, bool) { return skb.Packet{}, false }
func (noopQdisc) Stats() qdisc.Stats                { return qdisc.Stats{} }
func (noopQdisc) Dump() string                      { return "" }

// noop is the device's noop_qdisc (the kernel has one for every device,
// TCQ_F_BUILTIN: never deactivated, in no device's tree; the model gives
// each device its own).
func (n *Net) noop(d *Device) *Qdisc {
	if d.noopQ == nil {
		d.noopQ = n.newNoop(d)
	}
	return d.noopQ
}

// newNoop makes a noop_qdisc for d: the device's, or a leaf a delete
// left under a class (DelNoop).
func (n *Net) newNoop(d *Device) *Qdisc {
	n.nextQdiscID++
	q := &Qdisc{ID: n.nextQdiscID, Kind: "noop", Ops: wire.WrapQdisc(noopQdisc{}), dev: d, slot: "noop", noop: true}
	name := d.Name + " noop"
	q.lock.Name, q.busylock.Name, q.seqlock.Name, q.prodLock.Name = name+" root_lock", name+" busylock", name+" seqlock", name+" producer_lock"
	q.lock.ShareLine(&q.lineWrite)
	q.ctx = qctx{net: n, q: q}
	info, err := q.Ops.Init(q.bind(nil, nil), qdisc.Setup{Handle: "0:", Parent: "root"}, nil)
	if err != nil {
		sim.Panicf("noop_qdisc: %v", err)
	}
	q.Flags = info.Flags
	return q
}

// noopDropped counts k packets q dropped if it is a noop_qdisc:
// noop_enqueue's dev_core_stats_tx_dropped_inc.
func (n *Net) noopDropped(q *Qdisc, k int) {
	if q.noop {
		q.dev.link.coreTxDropped += uint64(k)
		n.NoopDrops += uint64(k)
	}
}

// graftRootLive is qdisc_graft of a new root (words; the kernel's
// default without) on device d while it is up. The new tree is made
// now (qdisc_create comes first: one that cannot be made changes
// nothing) and is what tc shows and configures from now on; the queues
// reach it at dev_activate. A second root graft before the first's
// activation replaces the new tree, which never held a packet, and ends
// with the first (the kernel would deactivate twice).
func (n *Net) graftRootLive(d *Device, words []string) error {
	old, err := n.newRoot(d, words)
	if err != nil {
		return err
	}
	n.deactivate(d, old, d.queueQdiscs(), true)
	return nil
}

// deactivate is dev_deactivate for a graft on d while it is up: every
// TX queue meets noop_qdisc until the activation, which points it at
// newTxq's qdisc. The qdiscs the queues reached until now are marked
// deactivated and, after the grace period, reset (dev_reset_queue);
// those of them in newTxq (an mq graft's other children) come back at
// the activation, the rest and the qdiscs under them (old.qdiscs) are
// destroyed. A graft while another is in progress joins it: its new
// qdiscs take effect at that one's activation, and of the qdiscs it
// replaces those the first deactivated are destroyed at its end, the
// others, which no packet reached, at once.
func (n *Net) deactivate(d *Device, old devQdiscs, newTxq []*Qdisc, root bool) {
	noop := n.noop(d)
	for _, txq := range d.Queues {
		txq.qdisc = noop
	}
	if sw := d.swap; sw != nil {
		fresh := devQdiscs{destroy: old.destroy}
		for _, q := range old.qdiscs {
			if q.retiring || q.state&stateDeactivated != 0 || q.underDeactivated() {
				if !q.retiring {
					q.retiring = true
					sw.old.qdiscs = append(sw.old.qdiscs, q)
					n.addRetiring(q)
				}
				continue
			}
			fresh.qdiscs = append(fresh.qdiscs, q)
		}
		fresh.put()
		n.qdiscs = slices.DeleteFunc(n.qdiscs, func(q *Qdisc) bool { return slices.Contains(fresh.qdiscs, q) })
		sw.newTxq = newTxq
		return
	}
	// dev_deactivate_queue: each queue's qdisc marked deactivated and
	// the queue pointed at noop_qdisc. The old qdiscs stay in the host
	// (they hold packets, and a CPU may be running one) until destroyed.
	for _, q := range old.txq {
		if q != nil {
			q.state |= stateDeactivated
		}
	}
	for _, q := range old.qdiscs {
		q.retiring = true
		n.addRetiring(q)
	}
	d.swap = &rootSwap{start: n.E.Now(), old: old, newTxq: newTxq, root: root}
	n.E.SynchronizeRCUExpedited(func() { n.resetDeactivated(d) })
}

// addRetiring keeps q among the host's qdiscs until the graft that
// retires it destroys it (a root graft took its tree off; an mq graft
// left the child there).
func (n *Net) addRetiring(q *Qdisc) {
	if !slices.Contains(n.qdiscs, q) {
		n.qdiscs = append(n.qdiscs, q)
	}
}

// underDeactivated says q is a leaf somewhere under a deactivated
// qdisc: reset with it, so retired with it.
func (q *Qdisc) underDeactivated() bool {
	for p := q.parentQ; p != nil; p = p.parentQ {
		if p.state&stateDeactivated != 0 {
			return true
		}
	}
	return false
}

// resetDeactivated is dev_deactivate_many after synchronize_net:
// dev_reset_queue on each queue's old qdisc, then the wait for
// outstanding qdisc_run calls.
func (n *Net) resetDeactivated(d *Device) {
	sw := d.swap
	for _, q := range sleepingQdiscs(sw.old.txq) {
		n.qdiscResetTree(q, &sw.freed)
	}
	n.waitDeactivated(d)
}

// waitDeactivated is the loop on some_qdisc_is_busy: a jiffy's sleep
// while an old qdisc runs or waits in a softnet output queue; then the
// graft and dev_activate.
func (n *Net) waitDeactivated(d *Device) {
	sw := d.swap
	for _, q := range sleepingQdiscs(sw.old.txq) {
		if q.running || q.state&stateSched != 0 {
			n.E.At(n.E.Now()+sim.Jiffy, func() { n.waitDeactivated(d) })
			return
		}
	}
	// notify_and_destroy: qdisc_put of the old tree, whose reset frees
	// what a requeue left after the first one.
	for _, q := range sleepingQdiscs(sw.old.txq) {
		n.qdiscResetTree(q, &sw.freed)
	}
	// The device's retiring qdiscs are this graft's old tree.
	n.qdiscs = slices.DeleteFunc(n.qdiscs, func(q *Qdisc) bool { return q.retiring && q.dev == d })
	sw.old.put()
	// dev_activate: transition_one_qdisc points each queue at its new
	// qdisc and clears __QDISC_STATE_DEACTIVATED (an mq graft's other
	// children had it).
	for i, txq := range d.Queues {
		txq.qdisc = sw.newTxq[i]
		if q := txq.qdisc; q != nil {
			q.state &^= stateDeactivated
		}
	}
	d.swap = nil
	if sw.root {
		n.RootGrafts++
	} else {
		n.MQGrafts++
	}
	n.DeactivatedNs += uint64(n.E.Now() - sw.start)
	n.rtnlKfreeSkbs(&sw.freed)
}

// sleepingQdiscs are the distinct qdiscs of txq (each queue's
// qdisc_sleeping: one root for all, or an mq child each).
func sleepingQdiscs(txq []*Qdisc) []*Qdisc {
	var out []*Qdisc
	for i, q := range txq {
		if q != nil && (i == 0 || q != txq[i-1]) {
			out = append(out, q)
		}
	}
	return out
}

// qdiscResetTree is qdisc_reset on q and the leaves under its classes
// (a classful reset resets its leaves): what they hold, their requeued
// skbs and a bad-txq skb go into freed; a NOLOCK qdisc's MISSED and
// DRAINING are cleared (dev_reset_queue).
func (n *Net) qdiscResetTree(q *Qdisc, freed *skb.List) {
	for _, id := range sortedClassIDs(q.leaves) {
		n.qdiscResetTree(q.leaves[id], freed)
	}
	n.purge(q, freed)
	for s := q.gsoSkb.Pop(); s != nil; s = q.gsoSkb.Pop() {
		n.Pool.SetReason(s, skb.DropQueuePurge) // __skb_queue_purge
		freed.Push(s)
	}
	if s := q.skbBadTxq; s != nil {
		q.skbBadTxq = nil
		n.Pool.SetReason(s, skb.DropQueuePurge)
		freed.Push(s)
	}
	if q.nolock() {
		q.state &^= stateMissed | stateDraining
	}
}
