package netdev

import (
	"fmt"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Qdisc state bits (enum qdisc_state_t).
const (
	stateSched       = 1 << 0 // __QDISC_STATE_SCHED
	stateDeactivated = 1 << 1 // __QDISC_STATE_DEACTIVATED
	stateMissed      = 1 << 2 // __QDISC_STATE_MISSED
	stateDraining    = 1 << 3 // __QDISC_STATE_DRAINING
)

// Qdisc is the kernel's struct Qdisc around a plugin: the root lock,
// busylock, running flag, state, defer_list, gso_skb, skb_bad_txq and
// to_free live here; the plugin only holds packets and its algorithm.
type Qdisc struct {
	ID     int32
	Handle string
	Parent string
	Kind   string
	Args   []string
	Ops    qdisc.Qdisc
	Flags  qdisc.Flags
	Limit  int

	dev      *Device
	devQueue *TxQueue // for TCQ_F_ONETXQUEUE children

	lock     sim.SpinLock // qdisc_lock(q), the root lock
	busylock sim.SpinLock // q->busylock (<= 6.18)
	seqlock  sim.SpinLock // q->seqlock (TCQ_F_NOLOCK)
	prodLock sim.SpinLock // ptr_ring producer lock (pfifo_fast bands)

	running bool
	state   uint32

	lineWrite sim.CacheLine // write group: q, state, bstats, running, qstats
	lineDefer sim.CacheLine // defer_count + defer_list, their own line
	lineData  sim.CacheLine // the plugin's private data

	deferHead  *skb.SKB // llist, newest first
	deferCount int64

	gsoSkb    skb.List // requeued skbs (dev_requeue_skb)
	skbBadTxq *skb.SKB
	toFree    skb.List // dequeue drops (TCQ_F_DEQUEUE_DROPS)

	held      int   // packets inside the plugin
	heldBytes int64 // their bytes

	// Stats.
	SentPkts, SentBytes uint64
	Requeues            uint64
	DeferMax            int64

	wdAt  sim.Time
	wdGen uint64

	ctx      qctx
	batch    []skb.Packet
	rc       []qdisc.Code
	out      []skb.Packet
	skbs     []*skb.SKB
	deferBuf []*skb.SKB
}

func (n *Net) newQdisc(d *Device, words []string, handle, parent string, one *TxQueue, group string, groupSize int) (*Qdisc, error) {
	kind := words[0]
	if _, mqRoot := qdisc.MultiQueueChild(kind); kind == "mq" || kind == "noqueue" || mqRoot {
		return nil, fmt.Errorf("%s can only be the root qdisc", kind)
	}
	ops, err := n.newQdiscOps(kind)
	if err != nil {
		return nil, err
	}
	n.nextQdiscID++
	q := &Qdisc{ID: n.nextQdiscID, Handle: handle, Parent: parent, Kind: kind, Args: words[1:], Ops: ops, dev: d, devQueue: one}
	numTx := len(d.Queues)
	if one != nil {
		numTx = 1
	}
	stream := "qdisc/" + d.Name + "/" + handle
	info, err := ops.Init(qdisc.Setup{Handle: handle, Parent: parent, MTU: d.MTU + 14,
		TxQueueLen: n.Cfg.TxQueueLen, NumTxQ: numTx, Rand: n.E.Rand(stream),
		Group: group, GroupSize: groupSize, RandSeed: n.E.RandSeed(stream),
		CtxSeed: n.E.RandSeed("qdisc-ctx/" + d.Name + "/" + handle), Prices: qdisc.WorkPrices(n.E.Costs)}, words[1:])
	if err != nil {
		return nil, err
	}
	q.Flags, q.Limit = info.Flags, info.Limit
	if one != nil {
		q.Flags |= qdisc.OneTxQueue
	}
	name := d.Name + " " + kind + " " + handle
	q.lock.Name, q.busylock.Name, q.seqlock.Name = name+" root_lock", name+" busylock", name+" seqlock"
	q.prodLock.Name = name + " producer_lock"
	q.ctx = qctx{net: n, q: q}
	n.qdiscs = append(n.qdiscs, q)
	return q, nil
}

// nolock reports TCQ_F_NOLOCK.
func (q *Qdisc) nolock() bool { return q.Flags&qdisc.NoLock != 0 }

// Qlen is qdisc_qlen(q): packets in the qdisc, requeued or stashed.
func (q *Qdisc) Qlen() int {
	n := q.held + q.gsoSkb.Len
	if q.skbBadTxq != nil {
		n++
	}
	return n
}

// Backlog is qstats.backlog in bytes.
func (q *Qdisc) Backlog() int64 {
	b := q.heldBytes + q.gsoSkb.Bytes
	if q.skbBadTxq != nil {
		b += int64(q.skbBadTxq.Len)
	}
	return b
}

// Running is qdisc_is_running for locked qdiscs.
func (q *Qdisc) Running() bool { return q.running }

func (q *Qdisc) deferLen() int {
	n := 0
	for s := q.deferHead; s != nil; s = s.Next {
		n++
	}
	return n
}

// Spec is the qdisc in tc words ("fq limit 100").
func (q *Qdisc) Spec() string { return strings.TrimSpace(q.Kind + " " + strings.Join(q.Args, " ")) }

// qctx is the qdisc.Ctx the host hands a plugin for one call.
type qctx struct {
	net    *Net
	q      *Qdisc
	cpu    *sim.CPU
	toFree *skb.List // caller's to_free (enqueue side)
}

func (x *qctx) Now() sim.Time  { return x.cpu.Now() }
func (x *qctx) Spend(ns int64) { x.cpu.Spend(ns) }

// Rand and Work are what the plugin boundary's context does on the
// plugin's side (wire.QdiscCtx); the host's context never sees them.
func (x *qctx) Rand() uint32 {
	panic("qdisc Ctx.Rand reached the host: the qdisc is not behind wire.WrapQdisc")
}
func (x *qctx) Work(qdisc.Work, int) {
	panic("qdisc Ctx.Work reached the host: the qdisc is not behind wire.WrapQdisc")
}

// take resolves a handle the plugin claims to hold and takes it back.
func (x *qctx) take(h skb.Handle, what string) *skb.SKB { return x.q.takeBack(x.net, h, what) }

// takeBack resolves a handle q's plugin claims to hold and takes it back.
func (q *Qdisc) takeBack(n *Net, h skb.Handle, what string) *skb.SKB {
	s := n.Pool.Lookup(h)
	if s == nil || s.Holder != q.ID {
		sim.Panicf("qdisc %s %s: %s of packet %#x it does not hold", q.Kind, q.Handle, what, uint64(h))
	}
	s.Holder = 0
	q.held--
	q.heldBytes -= int64(s.Len)
	return s
}

func (x *qctx) Drop(h skb.Handle, reason skb.DropReason) {
	s := x.take(h, "drop")
	s.Reason = reason
	if x.toFree == nil {
		// A drop outside enqueue (e.g. from a dequeue without the
		// flag): freed now.
		x.net.kfreeSkb(x.cpu, s, reason)
		return
	}
	x.toFree.Push(s)
}

func (x *qctx) DequeueDrop(h skb.Handle, reason skb.DropReason) {
	s := x.take(h, "dequeue drop")
	s.Reason = reason
	if x.q.Flags&qdisc.DequeueDrops != 0 && x.net.Cfg.DequeueDrops {
		// qdisc_dequeue_drop: freed after the root lock is released.
		x.q.toFree.Push(s)
		return
	}
	// Without the flag the qdisc frees under the root lock.
	x.net.kfreeSkb(x.cpu, s, reason)
}

func (x *qctx) Watchdog(at sim.Time) {
	q := x.q
	if q.wdAt != 0 && q.wdAt <= at {
		return // hrtimer already armed earlier
	}
	q.wdAt = at
	q.wdGen++
	gen := q.wdGen
	n := x.net
	n.E.RaiseIRQ(x.cpu, at, func(c *sim.CPU) {
		if q.wdGen != gen {
			return
		}
		q.wdAt = 0
		n.netifSchedule(c, q) // qdisc_watchdog -> __netif_schedule(qdisc_root(q))
	})
}

func (q *Qdisc) bind(c *sim.CPU, toFree *skb.List) *qctx {
	q.ctx.cpu, q.ctx.toFree = c, toFree
	return &q.ctx
}

// enqueue hands a batch to the plugin (dev_qdisc_enqueue for each skb, in
// one call). The last skb's code is returned.
func (n *Net) qdiscEnqueue(c *sim.CPU, q *Qdisc, skbs []*skb.SKB, toFree *skb.List) qdisc.Code {
	q.lineData.WriteMany(c, n.E.Costs.QdiscDataLines)
	if n.Hooks.EnqueueBatch != nil {
		n.Hooks.EnqueueBatch(c, q, skbs)
	}
	q.batch, q.rc = q.batch[:0], q.rc[:0]
	now := c.Now()
	for i, s := range skbs {
		n.touchSkbPrefetched(c, s, i > 0)
		s.Enqueued = now
		s.Holder = q.ID
		q.held++
		q.heldBytes += int64(s.Len)
		q.batch = append(q.batch, s.Packet)
		q.rc = append(q.rc, qdisc.XmitSuccess)
	}
	q.Ops.Enqueue(q.bind(c, toFree), q.batch, q.rc)
	for i, s := range skbs {
		if q.rc[i] == qdisc.XmitDrop && s.Holder == q.ID {
			sim.Panicf("qdisc %s %s: returned NET_XMIT_DROP for packet %#x but kept it", q.Kind, q.Handle, uint64(s.Handle))
		}
	}
	return q.rc[len(q.rc)-1]
}

// qdiscDequeue asks the plugin for a bulk and resolves it to skbs.
func (n *Net) qdiscDequeue(c *sim.CPU, q *Qdisc, req qdisc.DequeueReq) []*skb.SKB {
	q.lineData.WriteMany(c, n.E.Costs.QdiscDataLines)
	if q.held == 0 && q.Flags&qdisc.EmptyNoop != 0 {
		return q.skbs[:0]
	}
	q.out = q.Ops.Dequeue(q.bind(c, nil), req, q.out[:0])
	if len(q.out) > max(req.Max, 1) {
		sim.Panicf("qdisc %s %s: returned %d packets for a dequeue of at most %d", q.Kind, q.Handle, len(q.out), req.Max)
	}
	q.skbs = q.skbs[:0]
	for _, p := range q.out {
		s := q.ctx.take(p.Handle, "dequeue")
		s.ECN = p.ECN // the qdisc may have CE-marked it
		q.SentPkts++
		q.SentBytes += uint64(s.Len)
		q.skbs = append(q.skbs, s)
	}
	if n.Hooks.Dequeue != nil && len(q.skbs) > 0 {
		n.Hooks.Dequeue(c, q, q.skbs)
	}
	return q.skbs
}
