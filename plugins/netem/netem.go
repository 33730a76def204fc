// Package netem is the network emulator (net/sched/sch_netem.c): per
// packet it draws duplication, loss (random with correlation, or the
// 4-state and Gilbert-Elliott Markov models), corruption, reordering and
// a delay (latency with jitter, uniform or from a distribution table,
// with correlation), optionally serialised at a rate with packet and
// cell overheads, and holds the packet in a time-ordered queue (tfifo)
// until it is due, waking itself with the watchdog; slots release
// packets in bursts. Decisions come from the qdisc's own prandom stream
// (seeded by `seed`, or from Ctx.Rand once at init).
//
// With a delay, jitter or rate netem orphans what it queues
// (qdisc.OrphanPartial: the socket's charge ends at the enqueue, so TCP
// small queues do not count the packets netem holds).
//
// netem is classful, as the kernel's: its one class 1:1 holds no qdisc
// until `tc qdisc add ... parent 1:1 ...` grafts one (netem_graft; a
// tbf there is the usual WAN emulation); from then on netem_dequeue
// moves every packet that is due into that child and dequeues the
// child, and netem's limit counts the child's packets.
//
// What the model leaves out: corruption's payload (it is a counter: the
// model has no bytes to flip, and no GSO packet to segment for it), and
// the per-CPU recursion limit (a duplicate comes back to this qdisc
// marked, with duplication off, so it never nests).
package netem

import (
	"math"
	"math/bits"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func init() {
	qdisc.Register("netem", "network emulator: delay with jitter and distribution, loss, duplicate, reorder, corrupt, rate, slot (sch_netem.c)",
		func() qdisc.Qdisc { return &Netem{} })
}

// Loss models (netem's loss_model).
const (
	clgRandom = iota
	clg4States
	clgGilbEll
)

// States of the 4-state model (_4_state_model) and of Gilbert-Elliott.
const (
	txInGapPeriod     = 1 // TX_IN_GAP_PERIOD
	txInBurstPeriod   = 2 // TX_IN_BURST_PERIOD
	lostInGapPeriod   = 3 // LOST_IN_GAP_PERIOD
	lostInBurstPeriod = 4 // LOST_IN_BURST_PERIOD
	goodState         = 1 // GOOD_STATE
	badState          = 2 // BAD_STATE
)

// clgState is struct clgstate: the Markov chain's state and its
// transition probabilities (a1..a5 as the kernel names them).
type clgState struct {
	state              uint8
	a1, a2, a3, a4, a5 uint32
}

// slotState is struct slotstate; on stands for the kernel's
// slot_next != 0 (a ktime is never 0 there; the model's clock starts at 0).
type slotState struct {
	next        int64
	on          bool
	packetsLeft int32
	bytesLeft   int32
}

// Netem is struct netem_sched_data.
type Netem struct {
	tfifo    tfifo
	reorderQ qdisc.Ring[item] // sch->q: reordered packets, enqueued and dequeued at its head (a stack)

	latency, jitter int64
	loss, limit     uint32
	counter, gap    uint32
	duplicate       uint32
	reorder         uint32
	corrupt         uint32
	ecn             bool
	rate            uint64
	packetOverhead  int32
	cellSize        uint32
	cellOverhead    int32

	delayCor, lossCor, dupCor, reorderCor, corruptCor crndState

	prng rndState
	seed uint64

	delayDist, slotDist distributed
	lossModel           int
	clg                 clgState
	slotCfg             slotSpec
	slot                slotState

	speedBps int64 // the device's, for a rate in percent
	backlog  int64 // the tfifo's and sch->q's bytes (the child's are leaves')
	drops    uint64

	// The child (q->qdisc): class 1:1's leaf, which the host holds once
	// tc grafts one (netem_graft); none until then.
	handle uint16
	child  bool
	leaves qdisc.LeafTable
	batch  qdisc.LeafBatch

	// tc_netem_xstats.
	delayed, lossDropped, corrupted, duplicated, reordered, ecnMarked uint64
}

// Init implements qdisc.Qdisc (netem_init: the random loss model, a
// seed from get_random_u64, then netem_change). The model draws the seed
// after the correlations' get_random_u32s: an entropy source's order is
// not observable, and this keeps every stream as it was.
func (q *Netem) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	*q = Netem{speedBps: s.RateBps, handle: uint16(s.Major())}
	o, err := parse(args, q.speedBps)
	if err != nil {
		return qdisc.Info{}, err
	}
	q.apply(ctx, o)
	if !o.seed.Set {
		q.seed = qdisc.RandU64(ctx) // get_random_u64
		q.prng.prandomSeedState(q.seed)
	}
	return q.info(), nil
}

// Change implements qdisc.Changer (netem_change). Like the kernel, a
// change sets the limit, loss, gap, duplicate, latency and jitter from
// what tc sends every time (a word left out is 0), but keeps the
// correlations, reorder, corrupt, rate, slot, ECN and tables it does not
// send; the prng is reseeded only by a `seed` word (its stream and the
// seed tc shows go on otherwise). Packets above a lowered limit stay.
func (q *Netem) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse(args, q.speedBps)
	if err != nil {
		return qdisc.Info{}, err
	}
	q.apply(ctx, o)
	return q.info(), nil
}

// info: netem_enqueue orphans what it delays (skb_orphan_partial when
// latency, jitter or rate is set), so the sockets' charge ends at the
// enqueue. NoBlock: netem_class_ops has no tcf_block.
func (q *Netem) info() qdisc.Info {
	f := qdisc.EmptyNoop | qdisc.NoBlock
	if q.latency != 0 || q.jitter != 0 || q.rate != 0 {
		f |= qdisc.OrphanPartial
	}
	return qdisc.Info{Flags: f, Limit: int(min(q.limit, math.MaxInt32))}
}

// apply is netem_change under sch_tree_lock (tc's tables are always
// valid here: the model makes them).
func (q *Netem) apply(ctx qdisc.Ctx, o qopt) {
	switch {
	case o.gi.Set:
		g := o.gi.V
		q.lossModel = clg4States
		q.clg = clgState{state: txInGapPeriod, a1: g.p13, a2: g.p31, a3: g.p32, a4: g.p14, a5: g.p23}
	case o.ge.Set:
		g := o.ge.V
		q.lossModel = clgGilbEll
		q.clg = clgState{state: goodState, a1: g.p, a2: g.r, a3: g.h, a4: g.k1}
	default:
		q.lossModel = clgRandom
	}
	if o.delayDist.table != nil {
		q.delayDist = o.delayDist
	}
	if o.slotDist.table != nil {
		q.slotDist = o.slotDist
	}
	q.latency, q.jitter = 0, 0 // PSCHED_TICKS2NS(qopt->latency): tc sends 0
	q.limit, q.gap, q.counter = o.limit, o.gap, 0
	q.loss, q.duplicate = o.loss, o.duplicate
	if q.gap != 0 {
		q.reorder = math.MaxUint32 // a gap alone means reorder 100%
	}
	if o.corr.Set {
		q.delayCor = initCrandom(ctx, o.corr.V.delay)
		q.lossCor = initCrandom(ctx, o.corr.V.loss)
		q.dupCor = initCrandom(ctx, o.corr.V.dup)
	}
	if o.reorder.Set {
		q.reorder = o.reorder.V.prob
		q.reorderCor = initCrandom(ctx, o.reorder.V.corr)
	}
	if o.corrupt.Set {
		q.corrupt = o.corrupt.V.prob
		q.corruptCor = initCrandom(ctx, o.corrupt.V.corr)
	}
	if o.rate.Set {
		r := o.rate.V
		q.rate, q.packetOverhead, q.cellSize, q.cellOverhead = uint64(r.rate), r.packetOverhead, r.cellSize, r.cellOverhead
	}
	if o.rate64.Set {
		q.rate = max(q.rate, o.rate64.V)
	}
	if o.latency64.Set {
		q.latency = o.latency64.V
	}
	if o.jitter64.Set {
		q.jitter = o.jitter64.V
	}
	if o.ecn {
		q.ecn = true
	}
	if o.slot.Set {
		q.getSlot(ctx, o.slot.V)
	}
	if q.jitter < 0 {
		q.jitter = -q.jitter
	}
	q.jitter = min(q.jitter, math.MaxInt32)
	if o.seed.Set {
		q.seed = o.seed.V
		q.prng.prandomSeedState(q.seed)
	}
}

// initCrandom is init_crandom: the correlation and a random last value.
func initCrandom(ctx qdisc.Ctx, rho uint32) crndState {
	return crndState{rho: rho, last: ctx.Rand()}
}

// getSlot is get_slot.
func (q *Netem) getSlot(ctx qdisc.Ctx, s slotSpec) {
	if s.maxPackets == 0 {
		s.maxPackets = math.MaxInt32
	}
	if s.maxBytes == 0 {
		s.maxBytes = math.MaxInt32
	}
	if s.distJitter < 0 {
		s.distJitter = -s.distJitter
	}
	s.distJitter = min(s.distJitter, math.MaxInt32)
	q.slotCfg = s
	q.slot.packetsLeft, q.slot.bytesLeft = s.maxPackets, s.maxBytes
	q.slot.on = s.minDelay|s.maxDelay|s.distJitter != 0
	if q.slot.on {
		ctx.Work(qdisc.WorkTstamp, 1)
		q.slot.next = int64(ctx.Now())
	} else {
		q.slot.next = 0
	}
}

// getSlotNext is get_slot_next: the next slot opens after a delay drawn
// uniformly in [min_delay, max_delay) (get_random_u32) or from the slot
// table, with a fresh packet and byte budget.
func (q *Netem) getSlotNext(ctx qdisc.Ctx, now int64) {
	var next int64
	if q.slotDist.table == nil {
		c := q.slotCfg
		next = c.minDelay + int64(mulU64U32Shr(uint64(c.maxDelay-c.minDelay), ctx.Rand(), 32))
	} else {
		next = tabledist(q.slotCfg.distDelay, int32(q.slotCfg.distJitter), nil, &q.prng, q.slotDist.table)
	}
	q.slot.next = now + next
	q.slot.packetsLeft, q.slot.bytesLeft = q.slotCfg.maxPackets, q.slotCfg.maxBytes
}

// mulU64U32Shr is mul_u64_u32_shr: a 96-bit product, shifted, so a
// slot range past 2^31 ns does not overflow.
func mulU64U32Shr(a uint64, mul uint32, shift uint) uint64 {
	hi, lo := bits.Mul64(a, uint64(mul))
	return hi<<(64-shift) | lo>>shift
}

// loss4State is loss_4state: one draw against the transitions out of the
// current state (GI model: p13, p31, p32, p14, p23 in a1..a5), each
// range closed below, so a draw equal to a bound takes the next one.
func (q *Netem) loss4State() bool {
	c := &q.clg
	rnd := q.prng.prandomU32State()
	switch c.state {
	case txInGapPeriod:
		switch {
		case rnd < c.a4:
			c.state = lostInGapPeriod
			return true
		case rnd < c.a1+c.a4:
			c.state = lostInBurstPeriod
			return true
		default:
			c.state = txInGapPeriod
		}
	case txInBurstPeriod:
		if rnd < c.a5 {
			c.state = lostInBurstPeriod
			return true
		}
		c.state = txInBurstPeriod
	case lostInBurstPeriod:
		switch {
		case rnd < c.a3:
			c.state = txInBurstPeriod
		case rnd < c.a2+c.a3:
			c.state = txInGapPeriod
		default:
			c.state = lostInBurstPeriod
			return true
		}
	case lostInGapPeriod:
		c.state = txInGapPeriod
	}
	return false
}

// lossGilbEll is loss_gilb_ell: a draw for the transition (p good to
// bad, r bad to good), then one for the loss in the new state (1-k in
// good, 1-h in bad).
func (q *Netem) lossGilbEll() bool {
	c := &q.clg
	switch c.state {
	case goodState:
		if q.prng.prandomU32State() < c.a1 {
			c.state = badState
		}
		if q.prng.prandomU32State() < c.a4 {
			return true
		}
	case badState:
		if q.prng.prandomU32State() < c.a2 {
			c.state = goodState
		}
		if q.prng.prandomU32State() > c.a3 {
			return true
		}
	}
	return false
}

// lossEvent is loss_event.
func (q *Netem) lossEvent() bool {
	switch q.lossModel {
	case clg4States:
		return q.loss4State()
	case clgGilbEll:
		return q.lossGilbEll()
	}
	return q.loss != 0 && q.loss >= getCrandom(&q.lossCor, &q.prng)
}

// packetTimeNs is packet_time_ns: the serialisation time at rate, with
// the per-packet overhead and cells (C's u64/u32 arithmetic).
func (q *Netem) packetTimeNs(length uint64) uint64 {
	length += uint64(int64(q.packetOverhead))
	if q.cellSize != 0 {
		cells := uint32(length) / q.cellSize
		if uint32(length) > cells*q.cellSize {
			cells++
		}
		length = uint64(cells * (q.cellSize + uint32(q.cellOverhead)))
	}
	return length * 1e9 / q.rate
}

// Enqueue implements qdisc.Qdisc (netem_enqueue for each packet).
func (q *Netem) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i := range batch {
		rc[i] = q.netemEnqueue(ctx, batch[i])
	}
}

// netemEnqueue is netem_enqueue. A clone this qdisc asked for comes back
// marked (p.Dup) and is enqueued with duplication off, as netem_enqueue
// zeroes q->duplicate while the root enqueues it.
func (q *Netem) netemEnqueue(ctx qdisc.Ctx, p skb.Packet) qdisc.Code {
	ctx.Work(qdisc.WorkEnqueue, 1)
	count := 1
	if !p.IsDup() && q.duplicate != 0 && q.duplicate >= getCrandom(&q.dupCor, &q.prng) {
		count++
	}
	if q.lossEvent() {
		if q.ecn && p.SetCE() {
			q.drops++ // the kernel counts a mark as a drop (qdisc_qstats_drop)
			q.ecnMarked++
		} else {
			count--
			q.lossDropped++
		}
	}
	if count == 0 {
		// __qdisc_drop; NET_XMIT_SUCCESS | __NET_XMIT_BYPASS: a
		// classful parent counts the drop in its class's drops, the
		// sender sees NET_XMIT_SUCCESS.
		q.drops++
		ctx.Drop(p.Handle, skb.DropQdiscDrop)
		return qdisc.XmitSuccess | qdisc.XmitBypass
	}
	if q.corrupt != 0 && q.corrupt >= getCrandom(&q.corruptCor, &q.prng) {
		q.corrupted++ // a bit of the payload flipped: the model has no payload
	}
	if uint32(q.qlen()) >= q.limit {
		// sch->q.qlen >= sch->limit: the qlen counts the reordered
		// packets in sch->q and the child's as well as the tfifo's.
		// qdisc_drop_all; the clone (skb2) is freed with it, never
		// made.
		q.drops++
		ctx.Drop(p.Handle, skb.DropQdiscDrop)
		return qdisc.XmitDrop
	}
	if count > 1 {
		// skb_clone, then rootq->enqueue of the clone: the root of this
		// qdisc's tree (this qdisc as a root or an mq child, whose
		// dev_queue->qdisc it is; a classful root above it as a leaf).
		q.duplicated++
		ctx.Duplicate(p.Handle)
	}
	q.backlog += int64(p.Len)
	if q.gap == 0 || q.counter < q.gap-1 || q.reorder < getCrandom(&q.reorderCor, &q.prng) {
		delay := tabledist(q.latency, int32(q.jitter), &q.delayCor, &q.prng, q.delayDist.table)
		ctx.Work(qdisc.WorkTstamp, 1)
		now := int64(ctx.Now())
		if q.rate != 0 {
			// The last packet queued is the reference: it is sent at its
			// time_to_send, and this one is serialised after it.
			last, ok := q.tfifo.last()
			if q.reorderQ.Len() > 0 {
				if t := q.reorderQ.Front().timeToSend; !ok || t > last {
					last, ok = t, true
				}
			}
			if ok {
				delay = max(0, delay-(last-now))
				now = last
			}
			delay += int64(q.packetTimeNs(uint64(p.Len)))
		}
		if delay > 0 {
			q.delayed++
		}
		q.counter++
		if depth := q.tfifo.enqueue(item{pkt: p, timeToSend: now + delay}); depth > 0 {
			ctx.Work(qdisc.WorkFlowScan, depth)
		}
		return qdisc.XmitSuccess
	}
	// Reorder: this one goes out first, now (__qdisc_enqueue_head).
	ctx.Work(qdisc.WorkTstamp, 1)
	q.counter = 0
	q.reorderQ.PushTail(item{pkt: p, timeToSend: int64(ctx.Now())})
	q.reordered++
	return qdisc.XmitSuccess
}

// qlen is sch->q.qlen: the tfifo's packets, the reordered ones in
// sch->q, and the child's.
func (q *Netem) qlen() int { return q.tfifo.len() + q.reorderQ.Len() + q.leaves.Qlen }

// class is netem's one class, 1:1 under its handle.
func (q *Netem) class() qdisc.ClassID { return qdisc.MakeClassID(q.handle, 1) }

// netemDequeue is netem_dequeue: reordered packets first, then the
// tfifo's head once it is due and its slot is open; with a child, every
// packet due goes into it (qdisc_enqueue; what it refuses is dropped,
// freed at once) and the child is dequeued; else the watchdog for when
// the head will be due.
func (q *Netem) netemDequeue(ctx qdisc.Ctx) (skb.Packet, bool) {
	for {
		if q.reorderQ.Len() > 0 {
			ctx.Work(qdisc.WorkDequeue, 1)
			it := q.reorderQ.PopTail()
			q.backlog -= int64(it.pkt.Len)
			return it.pkt, true
		}
		head, fromTree := q.tfifo.peek()
		if head == nil {
			break
		}
		ctx.Work(qdisc.WorkTstamp, 1)
		now := int64(ctx.Now())
		timeToSend := head.timeToSend
		if q.slot.on && q.slot.next < timeToSend {
			q.getSlotNext(ctx, now)
		}
		if timeToSend > now || (q.slot.on && q.slot.next > now) {
			if p, ok := q.dequeueChild(ctx); ok {
				return p, true
			}
			at := timeToSend
			if q.slot.on {
				at = max(at, q.slot.next)
			}
			ctx.Watchdog(sim.Time(at))
			break
		}
		ctx.Work(qdisc.WorkDequeue, 1)
		it := q.tfifo.eraseHead(fromTree)
		if q.slot.on {
			q.slot.packetsLeft--
			q.slot.bytesLeft -= int32(it.pkt.Len)
			if q.slot.packetsLeft <= 0 || q.slot.bytesLeft <= 0 {
				q.getSlotNext(ctx, now)
			}
		}
		q.backlog -= int64(it.pkt.Len)
		if !q.child {
			return it.pkt, true
		}
		_, drops := q.batch.SendOne(ctx.(qdisc.ClassCtx), &q.leaves, &it.pkt, q.class())
		q.drops += drops
	}
	// A head not yet due has had the child dequeued once already; the
	// kernel asks it again here (netem_dequeue falls through).
	return q.dequeueChild(ctx)
}

// dequeueChild is the child's dequeue (q->qdisc->ops->dequeue), if
// netem has one.
func (q *Netem) dequeueChild(ctx qdisc.Ctx) (skb.Packet, bool) {
	if !q.child {
		return skb.Packet{}, false
	}
	p, ok, _, dropped := q.leaves.Dequeue(ctx.(qdisc.ClassCtx), q.class())
	q.drops += uint64(dropped)
	return p, ok
}

// Dequeue implements qdisc.Qdisc: netem_dequeue until nothing is due or
// the bulk is full.
func (q *Netem) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.netemDequeue(ctx) })
}

// Reset implements qdisc.Resetter (netem_reset: both queues purged, the
// host resets the child, the watchdog off).
func (q *Netem) Reset(ctx qdisc.Ctx) {
	q.leaves.Reset()
	for q.reorderQ.Len() > 0 {
		ctx.Drop(q.reorderQ.PopTail().pkt.Handle, skb.DropNotSpecified)
	}
	for q.tfifo.len() > 0 {
		_, fromTree := q.tfifo.peek()
		ctx.Drop(q.tfifo.eraseHead(fromTree).pkt.Handle, skb.DropNotSpecified)
	}
	q.backlog = 0
	ctx.CancelWatchdog()
}

// Stats implements qdisc.Qdisc: tc_netem_xstats as tc prints them (the
// kernel's sch->qstats.requeues for reordered packets has no field
// here: "reordered" counts them).
func (q *Netem) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.qlen(), Backlog: q.backlog + q.leaves.Backlog, Drops: q.drops, XStats: []qdisc.XStat{
		qdisc.XUint("delayed", q.delayed),
		qdisc.XUint("dropped", q.lossDropped),
		qdisc.XUint("corrupted", q.corrupted),
		qdisc.XUint("duplicated", q.duplicated),
		qdisc.XUint("reordered", q.reordered),
		qdisc.XUint("ecn_marked", q.ecnMarked),
	}}
}

// ChangeClass implements qdisc.Classful: tc has no class options for
// netem (q_netem.c has no parse_copt).
func (q *Netem) ChangeClass(qdisc.Ctx, qdisc.ClassReq) error {
	return qdisc.Parsef("netem", `Error: Qdisc "netem" is classless.`)
}

// DeleteClass implements qdisc.Classful: netem_class_ops has no delete.
func (q *Netem) DeleteClass(qdisc.Ctx, qdisc.ClassID) error {
	return qdisc.Refusef("netem", "RTNETLINK answers: Operation not supported (netem's one class goes with the qdisc)")
}

// Classes implements qdisc.Classful (netem_walk, netem_dump_class): the
// one class 1:1, which holds a leaf only once tc grafts one (GraftOnly:
// netem makes no default child and dumps no class without one), with
// no stats of its own (netem has no dump_stats).
func (q *Netem) Classes() []qdisc.Class {
	return []qdisc.Class{{ID: q.class(), Parent: qdisc.MakeClassID(q.handle, 0), Leaf: true, GraftOnly: true, NoStats: true}}
}

// Grafted implements qdisc.Grafter (netem_graft): from now on what is
// due goes through the child, or, once tc deleted it (q->qdisc NULL
// again), straight out.
func (q *Netem) Grafted(_ qdisc.Ctx, id qdisc.ClassID, leaf bool) {
	if id == q.class() {
		q.child = leaf
	}
}

// QlenNotify implements qdisc.Classful: the child changed without netem
// (a purge, its own timer's drops): qdisc_tree_reduce_backlog counts
// them in netem's drops.
func (q *Netem) QlenNotify(_ qdisc.Ctx, id qdisc.ClassID, st qdisc.LeafState) {
	q.drops += uint64(q.leaves.Update(id, st, 0, 0))
}
