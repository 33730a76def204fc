package netdev

import (
	"fmt"
	"slices"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
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
	// setsTC: the qdisc wrote the device's traffic classes
	// (Info.TCMap, taprio's), which go with it (netdev_reset_tc).
	setsTC bool
	ID     int32
	Handle tc.Handle // sch->handle: 0: for the kernel's default qdiscs
	Parent tc.Handle // sch->parent: tc.Root, or the mq class it hangs off
	Kind   string
	Args   []string
	Ops    qdisc.Qdisc
	Flags  qdisc.Flags
	Limit  int
	// filtered: a filter was added to the qdisc or one of its classes,
	// and tc_new_tfilter cleared TCQ_F_CAN_BYPASS for good (a change's
	// Info does not give it back).
	filtered bool

	reasons []skb.DropReason // declared in Info

	dev      *Device
	devQueue *TxQueue // for TCQ_F_ONETXQUEUE children

	lock     sim.SpinLock // qdisc_lock(q), the root lock
	busylock sim.SpinLock // q->busylock (<= 6.18)
	seqlock  sim.SpinLock // q->seqlock (TCQ_F_NOLOCK)
	prodLock sim.SpinLock // ptr_ring producer lock (pfifo_fast bands)

	running bool
	state   uint32
	// schedFrom is the caller of the __netif_schedule that set
	// __QDISC_STATE_SCHED last (Net.OnTxAction reports it).
	schedFrom SchedCaller

	lineWrite sim.CacheLine // write group: q, state, bstats, running, qstats
	lineDefer sim.CacheLine // defer_count + defer_list, their own line
	lineData  sim.CacheLine // the plugin's private data
	// flowLines are the plugin's per-flow lines (Ctx.Lines), by the key
	// it names them with.
	flowLines map[uint64]*sim.CacheLine
	lineStats sim.CacheLine // qstats on their own line (Config.QdiscStatsLine)

	deferHead  *skb.SKB // llist, newest first
	deferCount int64

	gsoSkb    skb.List // requeued skbs (dev_requeue_skb)
	skbBadTxq *skb.SKB
	toFree    skb.List // dequeue drops (TCQ_F_DEQUEUE_DROPS)

	held      int   // packets inside the plugin
	heldBytes int64 // their bytes
	// dequeuing: a CPU is inside Ops.Dequeue. It can be suspended there
	// (a drop the qdisc frees under the root lock waits for a slab
	// lock), with packets the plugin has taken off its queues for this
	// dequeue that the host takes back only when the call returns.
	dequeuing bool

	// dups are the packets the plugin asked to duplicate during the
	// current enqueue call (Ctx.Duplicate), cloned when it returns.
	dups []skb.Handle
	// leafClones are, for a root, the clones its leaves' Duplicate
	// made during its current enqueue call: netem_enqueue hands its
	// clone to rootq->enqueue (qdisc_root_bh), so the root enqueues
	// them when the call returns.
	leafClones []*skb.SKB

	// Stats. SentPkts and SentBytes are the qdisc's bstats, as
	// bstats_update counts them: a GSO skb is its gso_segs packets (and
	// its qdisc_pkt_len bytes). The accounting counts skbs, not these.
	SentPkts, SentBytes uint64
	Requeues            uint64
	DeferMax            int64
	// Restarts counts the qdisc_restart calls whose dequeue_skb gave
	// skbs, RestartPkts those skbs: RestartPkts/Restarts is the mean
	// bulk, and each restart is one root-lock round trip of the
	// dequeuer (sch_direct_xmit drops and retakes the lock).
	Restarts, RestartPkts uint64

	watchdog   sim.HrTimer // q->watchdog (struct qdisc_watchdog)
	timer      sim.HrTimer // the qdisc's own timer (Ctx.ModTimer)
	watchdogFn func(*sim.CPU)
	timerFn    func(*sim.CPU)

	// slot names the qdisc's random stream (qdiscPlace.slot).
	slot string

	// The class tree (class.go): the classful qdisc q is a leaf of and
	// its class, whether the host made it as a default leaf, and, for a
	// classful q, the qdiscs of its leaf classes.
	parentQ   *Qdisc
	classID   qdisc.ClassID
	invisible bool
	leaves    map[qdisc.ClassID]*Qdisc
	dead      bool         // destroyed (grafted over, its class deleted)
	stab      *tc.SizeSpec // its size table (stab.go), nil without
	// retiring: a root graft deactivated it and will destroy it once
	// reset and idle (activate.go); until then it is the host's still.
	retiring bool
	noop     bool   // the device's noop_qdisc
	leafGen  uint64 // its class's LeafGen when the host made it

	ctx      qctx
	batch    []skb.Packet
	rc       []qdisc.Code
	out      []skb.Packet
	skbs     []*skb.SKB
	deferBuf []*skb.SKB
	segBuf   []*skb.SKB // splitGSO's output
	inFlight []int64    // prefetched skbs' transfers still on their way (qdiscEnqueue)
	// segIdx is, for a qdisc with SplitGSO, each packet's place among
	// its GSO skb's segments in the batch splitGSO made (qctx.GSOSeg).
	segIdx []uint16
	// tcpHdrs is, for a qdisc with ReadsTCPHeaders, each batch packet's
	// TCP header (qctx.TCPHeaders), empty when none has one.
	tcpHdrs []skb.TCPHeader
	// segmentOver is Info.SegmentOver: GSO skbs past it reach the qdisc
	// as segments (tbf_segment).
	segmentOver uint32
}

// qdiscPlace is where a new qdisc goes and what the kernel names it.
type qdiscPlace struct {
	handle, parent tc.Handle
	// slot names the qdisc's random streams. It predates handles that
	// follow the kernel ("8001:" for the root, "8001:<queue+1>" for an mq
	// child, whatever the handles are), so a seed keeps its streams.
	slot      string
	one       *TxQueue // TCQ_F_ONETXQUEUE: the one queue it feeds
	group     string
	groupSize int
}

func (n *Net) newQdisc(d *Device, words []string, at qdiscPlace) (*Qdisc, error) {
	kind := words[0]
	if kind == "mqprio" {
		// mqprio_init refuses a parent other than the root, and
		// qdisc_create's err_out5 runs mqprio_destroy all the same.
		d.setNumTC(0)
		return nil, kernelf("RTNETLINK answers: Operation not supported (mqprio can only be the root qdisc)")
	}
	if _, mqRoot := qdisc.MultiQueueChild(kind); kind == "mq" || kind == "noqueue" || mqRoot {
		return nil, fmt.Errorf("%s can only be the root qdisc", kind)
	}
	ops, err := n.newQdiscOps(kind)
	if err != nil {
		return nil, err
	}
	n.nextQdiscID++
	q := &Qdisc{ID: n.nextQdiscID, Handle: at.handle, Parent: at.parent, Kind: kind, Args: words[1:], Ops: ops,
		dev: d, devQueue: at.one}
	numTx := len(d.Queues)
	if at.one != nil {
		numTx = 1
	}
	q.slot = at.slot
	name := d.Name + " " + kind + " " + at.slot
	q.lock.Name, q.busylock.Name, q.seqlock.Name = name+" root_lock", name+" busylock", name+" seqlock"
	q.prodLock.Name = name + " producer_lock"
	q.lock.ShareLine(&q.lineWrite) // q.lock beside q.qlen: struct qdisc_skb_head
	q.ctx = qctx{net: n, q: q}
	// Init runs with tc, off the data path: a context with no CPU.
	info, err := ops.Init(q.bind(nil, nil), qdisc.Setup{Handle: at.handle.QdiscString(), Parent: at.parent.String(),
		MTU: d.MTU + 14, DevMTU: d.MTU, RateBps: d.Info.RateBps, TxQueueLen: d.TxQueueLen(), NumTxQ: numTx,
		DevTxQ: len(d.Queues), Group: at.group, GroupSize: at.groupSize}, words[1:])
	if err != nil {
		return nil, err
	}
	q.Flags, q.Limit, q.reasons, q.segmentOver = info.Flags, info.Limit, info.DropReasons, info.SegmentOver
	if info.TCMap != nil {
		if at.parent != tc.Root {
			return nil, fmt.Errorf("qdisc %s set the device's traffic classes but is not the root", kind)
		}
		if err := d.applyTCMap(kind, info.TCMap); err != nil {
			d.setNumTC(0) // its destroy's netdev_reset_tc
			return nil, err
		}
		q.setsTC = true
	}
	if at.one != nil {
		q.Flags |= qdisc.OneTxQueue
	}
	n.qdiscs = append(n.qdiscs, q)
	if q.Classful() {
		var none skb.List
		if err := n.syncLeaves(q, &none); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// Name is the qdisc as tc's show line starts it: "fq_codel 8001: root",
// "pfifo 0: parent 8001:3".
func (q *Qdisc) Name() string {
	if q.Parent == tc.Root {
		return q.Kind + " " + q.Handle.QdiscString() + " root"
	}
	return q.Kind + " " + q.Handle.QdiscString() + " parent " + q.Parent.String()
}

// nolock reports TCQ_F_NOLOCK.
func (q *Qdisc) nolock() bool { return q.Flags&qdisc.NoLock != 0 }

// Qlen is qdisc_qlen(q): packets in the qdisc, requeued or stashed; a
// classful qdisc's include its leaves' (sch->q.qlen counts the tree).
func (q *Qdisc) Qlen() int {
	n, _ := q.treeHeld()
	n += q.gsoSkb.Len
	if q.skbBadTxq != nil {
		n++
	}
	return n
}

// Backlog is qstats.backlog in bytes (the tree's, as Qlen).
func (q *Qdisc) Backlog() int64 {
	_, b := q.treeHeld()
	for s := q.gsoSkb.Head; s != nil; s = s.Next {
		b += int64(s.QdiscPktLen()) // qdisc_qstats_backlog_inc at the requeue
	}
	if q.skbBadTxq != nil {
		b += int64(q.skbBadTxq.QdiscPktLen())
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

// qctx is the context the host hands the plugin boundary for one call
// (a wire.QdiscHost): what the qdisc's posted operations are applied
// to. cpu is nil during Init, which runs with tc, off the data path.
type qctx struct {
	net    *Net
	q      *Qdisc
	cpu    *sim.CPU
	toFree *skb.List // caller's to_free (enqueue side)
	skbs   []*skb.SKB
}

// Now is ktime_get(): the qdisc's clock reads the simulated time plus
// the host's uptime (sim.Ktime), as a kernel's does; Watchdog and
// ModTimer take times on that clock.
func (x *qctx) Now() sim.Time {
	if x.cpu == nil {
		return sim.Ktime(x.net.E.Now())
	}
	return sim.Ktime(x.cpu.Now())
}

// Spend charges the plugin's reported work to the CPU; at Init there is
// none to charge.
func (x *qctx) Spend(ns int64) {
	if x.cpu != nil {
		x.cpu.Spend(ns)
	}
}

// Rand and Work are what the plugin boundary's context does on the
// plugin's side (wire.QdiscCtx); the host's context never sees them.
func (x *qctx) Rand() uint32 {
	panic("qdisc Ctx.Rand reached the host: the qdisc is not behind wire.WrapQdisc")
}
func (x *qctx) Work(qdisc.Work, int) {
	panic("qdisc Ctx.Work reached the host: the qdisc is not behind wire.WrapQdisc")
}

// RandSeed is the seed of the qdisc's one random stream.
func (x *qctx) RandSeed() sim.Seed {
	return x.net.E.RandSeed("qdisc-ctx/" + x.q.dev.Name + "/" + x.q.slot)
}

// WorkPrices are the qdisc work prices from the cost table.
func (x *qctx) WorkPrices() qdisc.Prices { return qdisc.WorkPrices(x.net.E.Costs) }

// armCPU is where a timer armed now fires: this call's CPU, or CPU 0
// (where the model runs tc) for one armed in Init.
func (x *qctx) armCPU() *sim.CPU {
	if x.cpu == nil {
		return x.net.E.CPUs[0]
	}
	return x.cpu
}

// take resolves a handle the plugin claims to hold and takes it back.
func (x *qctx) take(h skb.Handle, what string) *skb.SKB { return x.q.takeBack(x.net, h, what) }

// takeBack resolves a handle q's plugin claims to hold and takes it back.
func (q *Qdisc) takeBack(n *Net, h skb.Handle, what string) *skb.SKB {
	s := n.Pool.Lookup(h)
	if s == nil || s.Holder != q.ID {
		sim.Panicf("qdisc %s: %s of packet %#x it does not hold", q.Name(), what, uint64(h))
	}
	s.Holder = 0
	q.held--
	q.heldBytes -= int64(s.QdiscPktLen())
	return s
}

// GSOSegs implements qdisc.SegCtx for the batch the current Enqueue
// call was handed (splitGSO's places, empty when it split nothing).
func (x *qctx) GSOSegs() []uint16 { return x.q.segIdx }

// TCPHeaders implements qdisc.TCPCtx for the batch the current Enqueue
// call was handed (readTCPHeaders').
func (x *qctx) TCPHeaders() []skb.TCPHeader { return x.q.tcpHdrs }

func (x *qctx) Drop(h skb.Handle, reason skb.DropReason) {
	x.checkReason(reason)
	s := x.take(h, "drop")
	x.net.Pool.SetReason(s, reason)
	if x.cpu != nil {
		x.net.touchSkbDrop(x.cpu, s) // under the root lock (cake_drop's dequeue_head)
	}
	if x.toFree == nil {
		// A drop outside enqueue (e.g. from a dequeue without the
		// flag): freed now.
		x.net.kfreeSkb(x.cpu, s, reason)
		return
	}
	x.toFree.Push(s)
}

func (x *qctx) DequeueDrop(h skb.Handle, reason skb.DropReason) {
	x.checkReason(reason)
	s := x.take(h, "dequeue drop")
	x.net.touchSkbDrop(x.cpu, s) // cake_dequeue_one's reads, under the root lock
	x.net.Pool.SetReason(s, reason)
	if x.q.Flags&qdisc.DequeueDrops != 0 && x.net.Cfg.DequeueDrops && x.q.parentQ == nil {
		// qdisc_dequeue_drop: freed after the root lock is released.
		// (Only a root's to_free is freed by qdisc_run_end: a leaf
		// frees under the lock.)
		x.q.toFree.Push(s)
		return
	}
	// Without the flag the qdisc frees under the root lock.
	x.net.kfreeSkb(x.cpu, s, reason)
}

// Watchdog is qdisc_watchdog_schedule_ns: WatchdogRange without slack.
func (x *qctx) Watchdog(at sim.Time) { x.WatchdogRange(at, 0) }

// WatchdogRange is qdisc_watchdog_schedule_range_ns: an hrtimer armed
// for at with slack (hrtimer_start_range_ns), or re-armed there (the
// latest call wins); already armed with a soft expiry in [at, at +
// slack], it is left alone. On expiry, qdisc_watchdog reschedules the
// root (of a leaf's tree too).
func (x *qctx) WatchdogRange(at, slack sim.Time) {
	q, n := x.q, x.net
	at = sim.SimTime(at)
	if soft, queued := q.watchdog.Queued(); queued && soft >= at && soft-at <= slack {
		return
	}
	if q.watchdogFn == nil { // made once: arming allocates nothing
		q.watchdogFn = func(c *sim.CPU) {
			if !q.dead {
				n.netifSchedule(c, q.root(), SchedWatchdog) // qdisc_watchdog -> __netif_schedule(qdisc_root(q))
			}
		}
	}
	q.watchdog.StartRange(x.armCPU(), at, slack, q.watchdogFn)
}

// CancelWatchdog is qdisc_watchdog_cancel (hrtimer_cancel).
func (x *qctx) CancelWatchdog() { x.q.watchdog.Cancel() }

// ModTimer is mod_timer on the qdisc's own timer_list: at expiry the
// timer interrupt queues the qdisc for TIMER_SOFTIRQ on that CPU.
func (x *qctx) ModTimer(at sim.Time) {
	q, n := x.q, x.net
	at = sim.SimTime(at)
	if q.timerFn == nil {
		q.timerFn = func(c *sim.CPU) {
			n.sd[c.ID].timers = append(n.sd[c.ID].timers, q)
			c.RaiseSoftirq(sim.TimerSoftirq)
		}
	}
	q.timer.Start(x.armCPU(), at, q.timerFn)
}

// DelTimer is timer_delete on the qdisc's own timer.
func (x *qctx) DelTimer() { x.q.timer.Cancel() }

// Lines prices n lines of the flow key's state written by this CPU:
// moved here if another CPU wrote them last (a struct fq_flow that the
// previous drainer or dequeuer dirtied). Outside a CPU (Init, a change)
// nothing is charged.
func (x *qctx) Lines(key uint64, n int) {
	if x.cpu == nil {
		return
	}
	q := x.q
	l := q.flowLines[key]
	if l == nil {
		if q.flowLines == nil {
			q.flowLines = make(map[uint64]*sim.CacheLine)
		}
		l = new(sim.CacheLine)
		q.flowLines[key] = l
	}
	l.WriteGroup(x.cpu, int64(n))
}

// TxqStates implements wire.QdiscHost: a bit for each TX queue a root
// over several feeds, netif_xmit_stopped; nothing for one queue's qdisc.
func (x *qctx) TxqStates(buf []byte) []byte {
	q := x.q
	if q.parentQ != nil || q.dev.Root != q || len(q.dev.Queues) < 2 {
		return buf
	}
	for i, t := range q.dev.Queues {
		if i%8 == 0 {
			buf = append(buf, 0)
		}
		if t.Stopped() {
			buf[len(buf)-1] |= 1 << (i % 8)
		}
	}
	return buf
}

// ReadSibling prices the lockless loads of another qdisc of the device
// (cake_dequeue's cake_mq sync): READ_ONCE(other_sch->q.qlen) on its
// struct Qdisc line (lineWrite, as __dev_xmit_skb's reads of q.qlen) and
// READ_ONCE(other_priv->last_active) on its private data (lineData),
// each moved from the CPU that wrote it last. No sync point, though
// other CPUs write those lines under their own root locks: the read is
// applied with the qdisc's other posted operations after its callback,
// where a sync point could run interrupts amid them, so it is priced
// against the lines as of the CPU's last sync point (the kernel's
// READ_ONCE is as unordered).
func (x *qctx) ReadSibling(txq int) {
	if x.cpu == nil {
		return
	}
	d := x.q.dev
	if txq < 0 || txq >= len(d.Queues) {
		sim.Panicf("qdisc %s: read the qdisc of TX queue %d of %s, which has %d", x.q.Name(), txq, d.Name, len(d.Queues))
	}
	o := d.Queues[txq].qdisc
	if o == nil || o == x.q {
		return
	}
	o.lineWrite.ReadNoSync(x.cpu)
	o.lineData.ReadNoSync(x.cpu)
}

// maxDupDepth bounds clones of clones. One duplicating netem never
// duplicates its own clone (Packet.Dup); two in one tree could hand
// clones back and forth without end, which the kernel prevents by
// refusing such a tree ("netem: cannot mix duplicating netems with
// other netems in tree").
const maxDupDepth = 32

// Duplicate notes a packet to clone: a root's own duplicates when the
// enqueue call returns, a leaf's at once, for its root (the plugin must
// hold it).
func (x *qctx) Duplicate(h skb.Handle) {
	q := x.q
	if x.toFree == nil {
		sim.Panicf("qdisc %s: duplicated packet %#x outside Enqueue", q.Name(), uint64(h))
	}
	s := x.net.Pool.Lookup(h)
	if s == nil || s.Holder != q.ID {
		sim.Panicf("qdisc %s: duplicate of packet %#x it does not hold", q.Name(), uint64(h))
	}
	if s.DupDepth >= maxDupDepth {
		sim.Panicf("qdisc %s: a duplicate of a duplicate %d deep: duplicating qdiscs hand clones to each other "+
			"(the kernel refuses to mix a duplicating netem with other netems in one tree)", q.Name(), s.DupDepth)
	}
	if q.parentQ == nil {
		q.dups = append(q.dups, h)
		return
	}
	// A leaf: skb_clone now, rootq->enqueue once the root's call returns.
	root := q.root()
	root.leafClones = append(root.leafClones, x.net.skbClone(x.cpu, s, q))
}

// skbClone is skb_clone for a duplicating qdisc by: skbCloneFor, marked
// as by's (Packet.Dup when it comes back to by).
func (n *Net) skbClone(c *sim.CPU, s *skb.SKB, by *Qdisc) *skb.SKB {
	d := n.skbCloneFor(c, s)
	d.DupOf, d.DupDepth = by.ID, s.DupDepth+1
	return d
}

// skbCloneFor is skb_clone of s (netem's duplicates, mirred's mirror): a
// new skb with the packet's fields and no socket (sk NULL, no
// destructor). It counts as offered: the accounting identity covers the
// packets the host's clones create.
func (n *Net) skbCloneFor(c *sim.CPU, s *skb.SKB) *skb.SKB {
	d := n.Pool.Get()
	h := d.Handle
	d.Packet = s.Packet
	d.Handle, d.Sock = h, -1
	d.Born, d.SenderCPU = s.Born, s.SenderCPU
	d.PktLen = s.PktLen // the cb is copied: rootq->enqueue does not recompute it
	n.ownSkb(c, d)
	c.Spend(n.E.Costs.KfreeSkb) // an sk_buff from the slab and its header copied: priced as freeing one
	n.Offered++
	n.Clones++
	return d
}

// packetFor is s as q's plugin gets it: a clone q asked for is marked
// when it comes back to q (netem_enqueue's q->duplicate = 0 while it
// enqueues it).
func packetFor(q *Qdisc, s *skb.SKB) skb.Packet {
	p := qdiscPacket(s)
	if s.DupOf != 0 && s.DupOf == q.ID {
		p.Flags |= skb.PacketDup
		s.DupOf = 0
	}
	return p
}

// qdiscPacket is s as a qdisc sees it: its length qdisc_pkt_len.
func qdiscPacket(s *skb.SKB) skb.Packet {
	p := s.Packet
	p.Len = s.QdiscPktLen()
	return p
}

// runQdiscTimers is the qdisc part of run_timer_softirq: each expired
// timer's callback runs under its qdisc's root lock, the way
// sfq_perturbation takes qdisc_lock(qdisc_root_sleeping(sch)). Drops
// are freed at once, under the lock (kfree_skb in the callback).
func (n *Net) runQdiscTimers(c *sim.CPU) {
	sd := &n.sd[c.ID]
	for i := 0; i < len(sd.timers); i++ { // expiries meanwhile join the tail
		q := sd.timers[i]
		t, ok := q.Ops.(qdisc.TimerQdisc)
		if !ok {
			sim.Panicf("qdisc %s %s: its timer fired but it has no Timer method", q.Kind, q.Handle)
		}
		if q.dead {
			continue
		}
		root := q.root()
		root.lock.Lock(c, n.site.timer)
		n.writePrivate(c, q)
		before := q.leafState()
		t.Timer(q.bind(c, nil))
		if q.parentQ != nil && q.leafState() != before {
			n.notifyUp(c, q) // qdisc_tree_reduce_backlog from the callback
		}
		root.lock.Unlock(c)
	}
	clear(sd.timers)
	sd.timers = sd.timers[:0]
}

// checkReason refuses a drop reason that is neither the kernel's nor
// one the qdisc declared (Info.DropReasons).
func (x *qctx) checkReason(r skb.DropReason) {
	if skb.IsKernelReason(r) || slices.Contains(x.q.reasons, r) {
		return
	}
	sim.Panicf("qdisc %s %s: drop reason %q is not a kernel SKB_DROP_REASON_* name nor one it declared in Info.DropReasons",
		x.q.Kind, x.q.Handle, r)
}

func (q *Qdisc) bind(c *sim.CPU, toFree *skb.List) *qctx {
	q.ctx.cpu, q.ctx.toFree = c, toFree
	return &q.ctx
}

// enqueue hands a batch to the plugin (dev_qdisc_enqueue for each skb, in
// one call). The last skb's code is returned.
func (n *Net) qdiscEnqueue(c *sim.CPU, q *Qdisc, skbs []*skb.SKB, toFree *skb.List) qdisc.Code {
	n.enqueueLines(c, q)
	n.writeStatsLine(c, q)
	skbs, split := n.splitGSO(c, q, skbs)
	n.readTCPHeaders(q, skbs)
	if n.Hooks.EnqueueBatch != nil {
		n.Hooks.EnqueueBatch(c, q, skbs)
	}
	q.batch, q.rc = q.batch[:0], q.rc[:0]
	inFlight := q.inFlight[:0]
	for i, s := range skbs {
		if l := n.touchSkbPrefetched(c, s, i > 0); l > 0 {
			inFlight = append(inFlight, l)
		}
		s.Holder = q.ID
		p := packetFor(q, s)
		q.held++
		q.heldBytes += int64(p.Len)
		q.batch = append(q.batch, p)
		q.rc = append(q.rc, qdisc.XmitSuccess)
	}
	q.inFlight = inFlight
	since := c.Now()
	q.Ops.Enqueue(q.bind(c, toFree), q.batch, q.rc)
	n.stallPrefetched(c, since, len(skbs), inFlight)
	n.orphanPartial(c, q, skbs, q.rc)
	n.noopDropped(q, len(skbs))
	for i := range q.rc {
		q.rc[i] = q.rc[i].Masked() // dev_qdisc_enqueue: rc & NET_XMIT_MASK
	}
	for i, s := range skbs {
		if q.rc[i] == qdisc.XmitDrop && s.Holder == q.ID {
			sim.Panicf("qdisc %s: returned NET_XMIT_DROP for packet %#x but kept it", q.Name(), uint64(s.Handle))
		}
	}
	rc := q.rc[len(q.rc)-1]
	if split {
		rc = q.gsoCode(q.rc)
	}
	if len(q.dups) > 0 || len(q.leafClones) > 0 {
		// rootq->enqueue(skb2) for each duplicate: q is the root of its
		// tree (the device's root, or an mq child), whether q or one of
		// its leaves asked. The return code is ignored, as netem
		// ignores it.
		clones := make([]*skb.SKB, 0, len(q.dups)+len(q.leafClones))
		for _, h := range q.dups {
			clones = append(clones, n.skbClone(c, n.Pool.Lookup(h), q))
		}
		clones = append(clones, q.leafClones...)
		q.dups, q.leafClones = q.dups[:0], q.leafClones[:0]
		n.qdiscEnqueue(c, q, clones, toFree)
	}
	if q.parentQ == nil && n.gsoSplit != nil {
		clear(n.gsoSplit) // the tree's counts are told
	}
	return rc
}

// orphanPartial is skb_orphan_partial for a qdisc that declares it
// (qdisc.OrphanPartial: netem with a delay or a rate), on each skb of
// its enqueue call but those it dropped before (netem's loss, answered
// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS): the socket gets its charge
// back now, not at TX completion, and the skb keeps the socket with
// sock_efree (skb_set_owner_sk_safe: a reference taken, the destructor
// run, both priced). An skb dropped at the limit was orphaned first,
// as in netem_enqueue.
func (n *Net) orphanPartial(c *sim.CPU, q *Qdisc, skbs []*skb.SKB, rc []qdisc.Code) {
	if q.Flags&qdisc.OrphanPartial == 0 {
		return
	}
	for i, s := range skbs {
		if rc[i] == qdisc.XmitSuccess|qdisc.XmitBypass {
			continue
		}
		o := n.Pool.Orphan(s)
		if o == nil {
			continue
		}
		c.Spend(n.E.Costs.AtomicOp + n.destructorCost())
		o.Orphan(c, s)
	}
}

// qdiscDequeue asks the plugin for a bulk and resolves it to skbs. A
// NOLOCK qdisc that comes back empty with __QDISC_STATE_MISSED or
// DRAINING set clears both and looks once more, as pfifo_fast_dequeue
// does (the only NOLOCK qdisc; the host does it for any, since a plugin
// does not see q->state): without it MISSED would make every
// qdisc_run_end reschedule an empty qdisc, and DRAINING would keep
// nolock_qdisc_is_empty false, so the bypass never ran again.
func (n *Net) qdiscDequeue(c *sim.CPU, q *Qdisc, req qdisc.DequeueReq) []*skb.SKB {
	out := n.qdiscDequeueOnce(c, q, req)
	if len(out) == 0 && q.nolock() && q.state&(stateMissed|stateDraining) != 0 {
		q.lineWrite.Atomic(c) // clear_bit twice; smp_mb__after_atomic
		q.state &^= stateMissed | stateDraining
		out = n.qdiscDequeueOnce(c, q, req)
	}
	return out
}

// opsDequeue calls the plugin's dequeue into q.out, marked as under way
// for its whole length (Qdisc.dequeuing).
func (q *Qdisc) opsDequeue(c *sim.CPU, req qdisc.DequeueReq) []skb.Packet {
	q.dequeuing = true
	out := q.Ops.Dequeue(q.bind(c, nil), req, q.out[:0])
	q.dequeuing = false
	return out
}

func (n *Net) qdiscDequeueOnce(c *sim.CPU, q *Qdisc, req qdisc.DequeueReq) []*skb.SKB {
	held, _ := q.treeHeld()
	if held > 0 {
		n.writeHot(c, q) // sch->q.qlen--, backlog, bstats, and its own data
	} else {
		n.writePrivate(c, q)
		if q.Flags&qdisc.EmptyNoop != 0 {
			return q.skbs[:0]
		}
	}
	n.writeStatsLine(c, q)
	q.out = q.opsDequeue(c, req)
	if len(q.out) > max(req.Max, 1) {
		sim.Panicf("qdisc %s: returned %d packets for a dequeue of at most %d", q.Name(), len(q.out), req.Max)
	}
	q.skbs = q.skbs[:0]
	for _, p := range q.out {
		s := q.ctx.take(p.Handle, "dequeue")
		// Read under the root lock; the driver then finds it hot, or
		// with pkt_segs reads the rest.
		n.touchSkbDequeue(c, s)
		takeEdits(s, &p, q.dev)
		q.bstatsUpdate(s)
		q.skbs = append(q.skbs, s)
	}
	if n.Hooks.Dequeue != nil && len(q.skbs) > 0 {
		n.Hooks.Dequeue(c, q, q.skbs)
	}
	return q.skbs
}

// takeEdits makes what a qdisc wrote into a packet it held the skb's:
// the kernel's qdiscs edit the one skb they hold, and the TX path after
// the dequeue (the driver, a parent qdisc, the report) reads the edited
// skb. A qdisc writes the ECN field (a CE mark: INET_ECN_set_ce), the
// DSCP (cake's wash: cake_handle_diffserv's ipv4_change_dsfield), and
// through its filters' actions skb->priority and skb->mark
// (tcf_skbedit_act, run by the flow qdiscs' tcf_classify), and
// skb->queue_mapping (skbedit's queue_mapping in a qdisc's filters, the
// multiqueue recipe's: multiq bands by it, and sch_direct_xmit sends
// the skb on that TX queue, skb_get_tx_queue) when the device has it.
// Nothing else a qdisc hands back is taken.
func takeEdits(s *skb.SKB, p *skb.Packet, d *Device) {
	s.ECN, s.DSCP = p.ECN, p.DSCP
	s.Priority, s.Mark = p.Priority, p.Mark
	if int(p.Queue) < len(d.Queues) {
		s.Queue = p.Queue
	}
}

// bstatsUpdate is qdisc_bstats_update (bstats_update) for an skb q
// dequeued or sent by the bypass: its bytes, and skb_is_gso(skb) ?
// gso_segs : 1 packets.
func (q *Qdisc) bstatsUpdate(s *skb.SKB) {
	q.SentPkts += uint64(max(s.GSOSegs, 1))
	q.SentBytes += uint64(s.QdiscPktLen())
}

// writeStatsLine prices the qstats line of the layout before 4d202a0d1
// (Config.QdiscStatsLine): qdisc_qstats_backlog_inc/dec on a line apart
// from q.qlen's. After it, they are in the write group (writeHot).
func (n *Net) writeStatsLine(c *sim.CPU, q *Qdisc) {
	if n.Cfg.QdiscStatsLine {
		q.lineStats.WriteNoSync(c)
	}
}

// enqueueLines prices the private lines an enqueue touches: written,
// unless the qdisc declares that its enqueue only reads them
// (qdisc.EnqueueReadsPrivate) and its tree holds packets, when it reads
// one.
func (n *Net) enqueueLines(c *sim.CPU, q *Qdisc) {
	if held, _ := q.treeHeld(); held > 0 && q.Flags&qdisc.EnqueueReadsPrivate != 0 {
		if q.nolock() {
			q.lineData.ReadNoSync(c)
			return
		}
		c.Sync() // waiters arrive during the hold
		sim.ReadWithWrite(c, &q.lineData, &q.lineWrite)
		return
	}
	n.writeHot(c, q)
}

// writeHot prices an enqueue's or a dequeue's stores to struct Qdisc's
// write group (sch->q.qlen, qstats.backlog or drops, bstats), the line
// q.lock sits on, and to its private data (writePrivate). The group's
// line is free to a holder that took the lock with it, a transfer back
// when a CPU that arrived at the lock since (its atomics on the lock
// word) or a lockless reader of q.qlen or q->running took it; it is
// priced at a sync point, so that those arrivals are seen. qdisc_priv
// is the same allocation, its fields and q.qlen at fixed offsets from
// the qdisc, so the requests are in flight at once and the CPU waits
// for the slower (sim.WriteWithGroup). A NOLOCK qdisc counts in per-CPU
// stats and a ptr_ring instead.
func (n *Net) writeHot(c *sim.CPU, q *Qdisc) {
	if q.nolock() {
		n.writePrivate(c, q)
		return
	}
	c.Sync() // waiters arrive during the hold
	sim.WriteWithGroup(c, &q.lineWrite, &q.lineData, n.E.Costs.QdiscDataLines)
}

// writePrivate prices the stores of an enqueue or a dequeue to the
// qdisc's private data (qdisc_priv: fq_sched_data's counters and flow
// lists, cake's tin): fields at fixed offsets from the qdisc, whose
// addresses do not wait on each other's loads, so their requests are in
// flight together as a flow's pair is (CacheLine.WriteGroup).
func (n *Net) writePrivate(c *sim.CPU, q *Qdisc) {
	q.lineData.WriteGroup(c, n.E.Costs.QdiscDataLines)
}
