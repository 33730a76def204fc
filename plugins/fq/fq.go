// Package fq is the Fair Queue packet scheduler with per-flow pacing
// (net/sched/sch_fq.c): flows keyed by socket in a hash table of ordered
// buckets, three priority bands served by weighted DRR, new/old flow round
// robin with credits, pacing from the socket's rate, the qdisc maxrate or
// EDT timestamps, a time-ordered set of throttled flows woken by a
// watchdog, and an internal fast-path FIFO used while nothing else is
// eligible.
package fq

import (
	"math"
	"math/bits"
	"slices"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func init() {
	qdisc.Register("fq", "Fair Queue with per-flow pacing, 3 priority bands, EDT horizon (sch_fq.c)",
		func() qdisc.Qdisc { return &FQ{} })
}

const (
	fqBands       = 3              // FQ_BANDS
	fqMinWeight   = 16384          // FQ_MIN_WEIGHT
	fqGCMax       = 8              // FQ_GC_MAX: flows freed per gc pass
	fqGCAge       = 3 * sim.Second // FQ_GC_AGE (3*HZ)
	fqMaxTreesLog = 18             // ilog2(256*1024)
	fqFastpathMax = 8              // internal queue bound in fq_fastpath_check

	rateUnlimited = math.MaxUint64 // ~0UL: no flow_max_rate / no sk_pacing_rate
	timeNever     = math.MaxInt64  // ~0ULL: no delayed flow
	ceNever       = uint64(math.MaxUint32) * 1000

	// internalKey names q->internal's lines for Ctx.Lines: no socket
	// (id << 1) or orphan (odd, below 2^33) key reaches bit 62.
	internalKey = 1 << 62
)

// defaultPrio2band is sch_default_prio2band (pfifo_fast's map).
var defaultPrio2band = [16]uint8{1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}

// defaultWeights are the band quanta set by fq_init: 9:3:1.
var defaultWeights = [fqBands]int{9 << 16, 3 << 16, 1 << 16}

// FQ is struct fq_sched_data.
type FQ struct {
	// speedBps is the device's link speed, for a rate in percent.
	speedBps int64
	// configuration (fq_init defaults, fq_change options)
	limit            int // sch->limit, checked per band
	flowPlimit       int
	quantum          int
	initialQuantum   int
	flowRefillDelay  sim.Time
	flowMaxRate      uint64 // bytes/s, rateUnlimited = none
	ceThreshold      uint64 // ns
	horizon          sim.Time
	orphanMask       uint32
	lowRateThreshold uint64 // bytes/s
	rateEnable       bool
	fqTreesLog       uint
	horizonDrop      bool
	prio2band        [16]uint8
	timerSlack       sim.Time
	offloadHorizon   sim.Time // always 0: the model's devices offer no pacing offload

	// state
	fqRoot              [][]*fqFlow // buckets, each sorted by key
	bandNr              int
	bandFlows           [fqBands]fqPerbandFlows
	internal            fqFlow
	delayed             delayedHeap
	hseq                uint64
	timeNextDelayedFlow sim.Time
	unthrottleLatencyNs int64
	bandPktCount        [fqBands]int
	flows               int
	inactiveFlows       int
	throttledFlows      int
	qlen                int
	backlog             int64
	lastNow             sim.Time

	// qdisc_peek_dequeued's stash (sch->gso_skb): still counted in qlen.
	peeked    skb.Packet
	hasPeeked bool

	// counters
	drops                uint64
	statThrottled        uint64
	statGCFlows          uint64
	statBandDrops        [fqBands]uint64
	statCEMark           uint64
	statHorizonDrops     uint64
	statHorizonCaps      uint64
	statFlowsPlimit      uint64
	statPktsTooLong      uint64
	statAllocationErrors uint64
	statFastpathPackets  uint64
}

// Init implements qdisc.Qdisc (fq_init, then fq_change with the options).
func (q *FQ) Init(_ qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	mtu := s.MTU
	if mtu <= 0 {
		mtu = 1514 // psched_mtu of an Ethernet device; a zero quantum would never earn credit
	}
	*q = FQ{
		limit:               10000,
		flowPlimit:          100,
		quantum:             2 * mtu,
		initialQuantum:      10 * mtu,
		flowRefillDelay:     40 * sim.Millisecond,
		flowMaxRate:         rateUnlimited,
		timeNextDelayedFlow: timeNever,
		rateEnable:          true,
		fqTreesLog:          10,
		orphanMask:          1024 - 1,
		lowRateThreshold:    550000 / 8,
		timerSlack:          10 * sim.Microsecond,
		horizon:             10 * sim.Second,
		horizonDrop:         true,
		ceThreshold:         ceNever,
		prio2band:           defaultPrio2band,
	}
	for i := range q.bandFlows {
		q.bandFlows[i].quantum = defaultWeights[i]
	}
	q.internal.hidx = -1
	q.internal.key = internalKey
	q.speedBps = s.RateBps
	o, err := parse(args, q.speedBps)
	if err == nil {
		err = validate(o)
	}
	if err != nil {
		return qdisc.Info{}, err
	}
	q.apply(o, 0)
	// fq has its own fast path and does not set TCQ_F_CAN_BYPASS.
	return q.info(), nil
}

// info is what the host keeps of fq: its limit, and whether it takes over
// pacing of the sockets it sees (pacing, the default; not nopacing).
func (q *FQ) info() qdisc.Info {
	// fq_dequeue reads the cb (time_to_send, band) and skb->next.
	in := qdisc.Info{Limit: q.limit}
	if q.rateEnable {
		in.Flags |= qdisc.PacesSockets
	}
	return in
}

// Change implements qdisc.Changer (fq_change): the options, a new table
// if buckets changed (the flows move over, keeping their packets and
// state), then dequeues from the head (the peeked packet first, then as
// fq_dequeue would, which stops at throttled flows) while more than limit
// packets are held. Those are freed by rtnl_kfree_skbs: NOT_SPECIFIED,
// not qdisc drops.
func (q *FQ) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse(args, q.speedBps)
	if err == nil {
		err = validate(o)
	}
	if err != nil {
		return qdisc.Info{}, err
	}
	q.apply(o, ctx.Now())
	for q.sqlen() > q.limit {
		p, ok := q.next(ctx)
		if !ok {
			break
		}
		ctx.Drop(p.Handle, skb.DropNotSpecified)
	}
	return q.info(), nil
}

// fqFlowAddTail is fq_flow_add_tail: append to the flow's band's list.
// Linking behind a flow writes that flow's next, on the second line of
// another struct fq_flow, which its own enqueues dirty (f->band).
func (q *FQ) fqFlowAddTail(ctx qdisc.Ctx, f *fqFlow, newFlow bool) {
	pb := &q.bandFlows[f.band]
	h := &pb.oldFlows
	if newFlow {
		h = &pb.newFlows
	}
	if h.first != nil {
		ctx.Lines(h.last.key, 1)
		h.last.next = f
	} else {
		h.first = f
	}
	h.last = f
	f.next = nil
}

// fqFlowUnsetThrottled is fq_flow_unset_throttled: back to old_flows.
func (q *FQ) fqFlowUnsetThrottled(ctx qdisc.Ctx, f *fqFlow) {
	q.delayed.remove(f)
	f.throttled = false
	q.throttledFlows--
	q.fqFlowAddTail(ctx, f, false)
}

// fqFlowSetThrottled is fq_flow_set_throttled: park the flow in the
// time-ordered delayed set until its time_next_packet.
func (q *FQ) fqFlowSetThrottled(ctx qdisc.Ctx, f *fqFlow) {
	// The kernel walks an rb-tree of throttled flows to insert.
	ctx.Work(qdisc.WorkFlowScan, bits.Len(uint(len(q.delayed))))
	q.hseq++
	f.hseq = q.hseq
	q.delayed.push(f)
	f.throttled = true
	f.next = nil
	q.throttledFlows++
	q.statThrottled++
	if q.timeNextDelayedFlow > f.timeNextPacket {
		q.timeNextDelayedFlow = f.timeNextPacket
	}
}

// fqGCCandidate is fq_gc_candidate: detached for longer than FQ_GC_AGE.
func fqGCCandidate(f *fqFlow, now sim.Time) bool {
	return f.detached && now > f.age+fqGCAge
}

// tailKey names the line of a flow's tail skb for Ctx.Lines, apart from
// the flow's own (keys are socket ids << 1 or small odd hashes: the top
// bit is free).
func tailKey(key uint64) uint64 { return key | 1<<63 }

// hashPtr is hash_ptr(sk, bits): hash_64 with GOLDEN_RATIO_64.
func hashPtr(key uint64, log uint) int {
	return int((key * 0x61C8864680B583EB) >> (64 - log))
}

// fqGC is fq_gc: while walking the bucket towards key, collect detached
// flows older than FQ_GC_AGE (at most FQ_GC_MAX) and free them.
func (q *FQ) fqGC(ctx qdisc.Ctx, idx int, key uint64, now sim.Time) {
	root := q.fqRoot[idx]
	var tofree [fqGCMax]int
	n, visited := 0, 0
	// The sorted bucket is walked as the balanced tree its binary search
	// implies: the probed elements are the root-to-leaf path.
	for lo, hi := 0, len(root); lo < hi; {
		mid := int(uint(lo+hi) >> 1)
		f := root[mid]
		visited++
		if f.key == key {
			break
		}
		if fqGCCandidate(f, now) {
			tofree[n] = mid
			n++
			if n == fqGCMax {
				break
			}
		}
		if key < f.key {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	ctx.Work(qdisc.WorkFlowScan, visited)
	if n == 0 {
		return
	}
	del := tofree[:n]
	slices.Sort(del)
	for i := n - 1; i >= 0; i-- {
		root[del[i]] = nil
		root = slices.Delete(root, del[i], del[i]+1)
	}
	q.fqRoot[idx] = root
	q.flows -= n
	q.inactiveFlows -= n
	q.statGCFlows += uint64(n)
}

// fqFastpathCheck is fq_fastpath_check: may this packet skip the flow
// tables for the internal FIFO?
func (q *FQ) fqFastpathCheck(tts, now sim.Time) bool {
	if tts > now+q.offloadHorizon {
		return false
	}
	if q.sqlen() != 0 {
		// Packets are held, but the fast path is still fine if none
		// of them is eligible now (or they are in the internal queue).
		if q.flows != q.inactiveFlows+q.throttledFlows {
			return false
		}
		// Keep fair queueing under pressure.
		if q.internal.qlen >= fqFastpathMax {
			return false
		}
		// Delayed flows that are due must go first to keep ordering.
		if q.timeNextDelayedFlow <= now+q.offloadHorizon {
			return false
		}
	}
	// The kernel also refuses non-TCP sockets with SO_MAX_PACING_RATE;
	// the model's packets carry no max pacing rate.
	return q.flowMaxRate == rateUnlimited
}

// skHash is the model's sk->sk_hash: a hash of the socket's flow keys,
// so a socket id reused for another connection is seen as reallocated.
func skHash(p *skb.Packet) uint32 {
	k := p.Keys
	h := k.Src*0x9e3779b1 ^ k.Dst*0x85ebca6b ^ (uint32(k.SrcPort)<<16|uint32(k.DstPort))*0xc2b2ae35 ^ uint32(k.Proto)
	return h ^ h>>16
}

// fqClassify is fq_classify: find or create the packet's flow.
func (q *FQ) fqClassify(ctx qdisc.Ctx, p *skb.Packet, tts, now sim.Time) *fqFlow {
	var key uint64
	hasSk := p.Sock >= 0
	if hasSk {
		// The flow is the socket: hash_ptr(sk) picks the tree, no
		// flow dissection.
		key = uint64(uint32(p.Sock)) << 1 // even, like a word-aligned socket pointer
	} else {
		// Orphans share a pseudo socket per masked hash; the low bit
		// set keeps it apart from every real socket key.
		// skb_get_hash dissects only when the skb carries no hash (a
		// NIC's RSS hash, sk_txhash): Hash 0 in the model.
		if p.Hash == 0 {
			ctx.Work(qdisc.WorkHash, 1)
		}
		key = uint64(p.Hash&q.orphanMask)<<1 | 1
	}

	if q.fqFastpathCheck(tts, now) {
		q.statFastpathPackets++
		return &q.internal
	}

	idx := hashPtr(key, q.fqTreesLog)
	q.fqGC(ctx, idx, key, now)

	root := q.fqRoot[idx]
	lo, hi, visited := 0, len(root), 0
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		f := root[mid]
		visited++
		if f.key == key {
			ctx.Work(qdisc.WorkFlowScan, visited)
			// The socket may have been freed and reallocated: a new
			// connection starts with initial_quantum and no pacing
			// debt.
			if h := skHash(p); hasSk && f.socketHash != h {
				f.credit = q.initialQuantum
				f.socketHash = h
				if f.throttled {
					q.fqFlowUnsetThrottled(ctx, f)
				}
				f.timeNextPacket = 0
			}
			return f
		}
		if key < f.key {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	ctx.Work(qdisc.WorkFlowScan, visited)

	f := &fqFlow{key: key, detached: true, age: now, credit: q.initialQuantum, hidx: -1}
	if hasSk {
		f.socketHash = skHash(p)
	}
	q.fqRoot[idx] = slices.Insert(root, lo, f)
	q.flows++
	q.inactiveFlows++
	return f
}

// sqlen is sch->q.qlen, which includes a packet stashed by peek.
func (q *FQ) sqlen() int {
	if q.hasPeeked {
		return q.qlen + 1
	}
	return q.qlen
}

// fqPacketBeyondHorizon is fq_packet_beyond_horizon.
func (q *FQ) fqPacketBeyondHorizon(p *skb.Packet, now sim.Time) bool {
	return p.Tstamp > now+q.horizon
}

// Enqueue implements qdisc.Qdisc (fq_enqueue per packet).
func (q *FQ) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i := range batch {
		rc[i] = q.fqEnqueue(ctx, batch[i])
	}
}

// fqEnqueue is fq_enqueue.
func (q *FQ) fqEnqueue(ctx qdisc.Ctx, p skb.Packet) qdisc.Code {
	ctx.Work(qdisc.WorkEnqueue, 1)
	band := q.prio2band[p.Priority&15]
	if q.bandPktCount[band] >= q.limit {
		q.statBandDrops[band]++
		return q.drop(ctx, p, skb.DropFQBandLimit)
	}

	now := ctx.Now()
	ctx.Work(qdisc.WorkTstamp, 1)
	q.lastNow = now
	var tts sim.Time
	if p.Tstamp == 0 {
		tts = now
	} else {
		if q.fqPacketBeyondHorizon(&p, now) {
			if q.horizonDrop {
				q.statHorizonDrops++
				return q.drop(ctx, p, skb.DropFQHorizonLimit)
			}
			q.statHorizonCaps++
			p.Tstamp = now + q.horizon
		}
		tts = p.Tstamp
	}

	f := q.fqClassify(ctx, &p, tts, now)
	if f != &q.internal {
		// struct fq_flow's first line (t_root, head, tail, qlen): read
		// here, written below; the second (credit, band, next) is written
		// too: one structure, two lines. (The internal flow lives in
		// fq_sched_data: the private lines.)
		if f.qlen >= q.flowPlimit {
			ctx.Lines(f.key, 1)
			q.statFlowsPlimit++
			return q.drop(ctx, p, skb.DropFQFlowLimit)
		}
		ctx.Lines(f.key, 2)
		if f.detached {
			q.fqFlowAddTail(ctx, f, true)
			// An idle flow earns back at least a quantum, but the
			// kernel compares as u32, so a negative credit (a debt)
			// is kept.
			if now > f.age+q.flowRefillDelay && f.credit >= 0 {
				f.credit = max(f.credit, q.quantum)
			}
		}
		f.band = int(band)
		q.bandPktCount[band]++
		if f.qlen == 0 {
			q.inactiveFlows--
		}
	}
	f.qlen++
	// flow_queue_add reads the tail skb's cb and writes its next when the
	// flow's list holds one (t_root's packets aside): another structure,
	// reached through f->tail, that the CPU which queued it dirtied. So
	// for the internal queue too, though the flow itself is private.
	if f.list.Len() > 0 {
		ctx.Lines(tailKey(f.key), 1)
	}
	ctx.Work(qdisc.WorkFlowScan, f.flowQueueAdd(fqPkt{p: p, tts: tts, band: band}))
	q.qlen++
	q.backlog += int64(p.Len)
	return qdisc.XmitSuccess
}

func (q *FQ) drop(ctx qdisc.Ctx, p skb.Packet, r skb.DropReason) qdisc.Code {
	q.drops++
	ctx.Drop(p.Handle, r)
	return qdisc.XmitDrop
}

// fqCheckThrottled is fq_check_throttled: move flows whose time has come
// from the delayed set back to old_flows.
func (q *FQ) fqCheckThrottled(ctx qdisc.Ctx, now sim.Time) {
	if q.timeNextDelayedFlow > now+q.offloadHorizon {
		return
	}
	// EWMA (1/8) of how late the unthrottle runs: timer diagnostics.
	if sample := now - q.timeNextDelayedFlow; sample > 0 {
		q.unthrottleLatencyNs -= q.unthrottleLatencyNs >> 3
		q.unthrottleLatencyNs += int64(sample >> 3)
	}
	now += q.offloadHorizon
	q.timeNextDelayedFlow = timeNever
	for len(q.delayed) > 0 {
		f := q.delayed[0]
		if f.timeNextPacket > now {
			q.timeNextDelayedFlow = f.timeNextPacket
			break
		}
		q.fqFlowUnsetThrottled(ctx, f)
	}
}

// fqVisit charges a flow that fq_dequeue's loop meets at the head of a
// list and leaves without a packet (out of credit, empty, throttled):
// one flow visited, and the n lines of its struct fq_flow it reads and
// writes.
func fqVisit(ctx qdisc.Ctx, f *fqFlow, n int) {
	ctx.Work(qdisc.WorkFlowScan, 1)
	ctx.Lines(f.key, n)
}

// fqDequeueSkb is fq_dequeue_skb: take what fqPeek returned.
func (q *FQ) fqDequeueSkb(f *fqFlow, fromTree bool) fqPkt {
	p := f.fqEraseHead(fromTree)
	q.qlen--
	q.backlog -= int64(p.p.Len)
	return p
}

// fqDequeue is fq_dequeue: one packet, or none (arming the watchdog when
// flows are throttled).
func (q *FQ) fqDequeue(ctx qdisc.Ctx) (skb.Packet, bool) {
	if q.qlen == 0 {
		return skb.Packet{}, false
	}
	if pk, fromTree := q.internal.fqPeek(); pk != nil {
		q.internal.qlen--
		ctx.Work(qdisc.WorkDequeue, 1)
		return q.fqDequeueSkb(&q.internal, fromTree).p, true
	}

	now := ctx.Now()
	ctx.Work(qdisc.WorkTstamp, 1)
	q.lastNow = now
	q.fqCheckThrottled(ctx, now)
	retry := 0
	pband := &q.bandFlows[q.bandNr]
	for {
		head := pband.fqPbandHeadSelect()
		if head == nil {
			// Weighted DRR over bands: move on, refilling credit up
			// to one quantum, until a band with credit has flows or
			// every band was tried.
			found := false
			for {
				retry++
				if retry > fqBands {
					break
				}
				q.bandNr++
				if q.bandNr == fqBands {
					q.bandNr = 0
				}
				pband = &q.bandFlows[q.bandNr]
				pband.credit = min(pband.credit+pband.quantum, pband.quantum)
				if pband.credit > 0 {
					found = true
					break
				}
				retry = 0
			}
			if found {
				continue
			}
			if q.timeNextDelayedFlow != timeNever {
				ctx.WatchdogRange(q.timeNextDelayedFlow, q.timerSlack) // qdisc_watchdog_schedule_range_ns
			}
			return skb.Packet{}, false
		}
		f := head.first
		retry = 0
		if f.credit <= 0 {
			fqVisit(ctx, f, 1) // credit and next: the second line
			f.credit += q.quantum
			head.first = f.next
			q.fqFlowAddTail(ctx, f, false)
			continue
		}

		pk, fromTree := f.fqPeek()
		if pk == nil {
			// credit (second line), fq_peek's head and t_root, then
			// next or age (first)
			fqVisit(ctx, f, 2)
			head.first = f.next
			if head == &pband.newFlows {
				// A pass through old_flows first prevents starvation.
				q.fqFlowAddTail(ctx, f, false)
			} else {
				f.detached, f.age = true, now
			}
			continue
		}
		timeNextPacket := max(pk.tts, f.timeNextPacket)
		if now+q.offloadHorizon < timeNextPacket {
			fqVisit(ctx, f, 2) // fq_peek's first line, time_next_packet and rate_node on the second
			head.first = f.next
			f.timeNextPacket = timeNextPacket
			q.fqFlowSetThrottled(ctx, f)
			continue
		}
		p := q.fqDequeueSkb(f, fromTree)
		ctx.Lines(f.key, 2) // head and qlen, then credit: both lines of struct fq_flow
		if now-timeNextPacket-sim.Time(q.ceThreshold) > 0 {
			if p.p.ECN == 1 || p.p.ECN == 2 { // INET_ECN_set_ce: only ECT packets
				p.p.ECN = 3
			}
			q.statCEMark++
		}
		f.qlen--
		if f.qlen == 0 {
			q.inactiveFlows++
		}
		q.bandPktCount[p.band]--
		ctx.Work(qdisc.WorkDequeue, 1)

		plen := int(p.p.Len)
		f.credit -= plen
		pband.credit -= plen
		if !q.rateEnable {
			return p.p, true
		}
		rate := q.flowMaxRate
		// With an EDT timestamp the sender already spaced the packet;
		// only a qdisc maxrate still applies, per packet length.
		if p.p.Tstamp == 0 {
			if p.p.Sock >= 0 && p.p.PacingRate != 0 {
				rate = min(p.p.PacingRate, rate)
			}
			if rate <= q.lowRateThreshold {
				f.credit = 0 // pace every packet of a slow flow
			} else {
				plen = max(plen, q.quantum)
				if f.credit > 0 {
					return p.p, true
				}
			}
		}
		if rate != rateUnlimited {
			delay := uint64(plen) * uint64(sim.Second)
			if rate != 0 {
				delay /= rate
			}
			// The socket rate may change later: never wait more than 1s.
			if delay > uint64(sim.Second) {
				delay = uint64(sim.Second)
				q.statPktsTooLong++
			}
			// Absorb timer and scheduling drift: if we are late
			// against the previous slot, start this one earlier, by
			// at most half the delay.
			if f.timeNextPacket != 0 {
				delay -= min(delay/2, uint64(now-f.timeNextPacket))
			}
			f.timeNextPacket = now + sim.Time(delay)
		}
		return p.p, true
	}
}

// Dequeue implements qdisc.Qdisc: fq_dequeue repeated as dequeue_skb's
// bulk loop does (at least one, then only while under req.Bytes).
func (q *FQ) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.next(ctx) })
}

// next is qdisc_dequeue_peeked: the peeked packet first, else fq_dequeue.
func (q *FQ) next(ctx qdisc.Ctx) (skb.Packet, bool) {
	if q.hasPeeked {
		p := q.peeked
		q.peeked, q.hasPeeked = skb.Packet{}, false
		return p, true
	}
	return q.fqDequeue(ctx)
}

// Peek implements qdisc.Qdisc as qdisc_peek_dequeued: dequeue one packet
// and keep it (still counted in qlen/backlog) for the next Dequeue.
func (q *FQ) Peek(ctx qdisc.Ctx) (skb.Packet, bool) {
	if !q.hasPeeked {
		p, ok := q.fqDequeue(ctx)
		if !ok {
			return skb.Packet{}, false
		}
		q.peeked, q.hasPeeked = p, true
	}
	return q.peeked, true
}

// fqFlowPurge is fq_flow_purge: drop every packet of a flow.
func fqFlowPurge(ctx qdisc.Ctx, f *fqFlow) {
	for f.list.Len() > 0 {
		ctx.Drop(f.list.PopHead().p.Handle, skb.DropNotSpecified)
	}
	for _, p := range f.troot {
		ctx.Drop(p.p.Handle, skb.DropNotSpecified)
	}
	f.troot = nil
	f.qlen = 0
}

// Reset implements qdisc.Qdisc (fq_reset, plus the peek stash that
// qdisc_reset frees).
func (q *FQ) Reset(ctx qdisc.Ctx) {
	if q.hasPeeked {
		ctx.Drop(q.peeked.Handle, skb.DropQueuePurge)
		q.peeked, q.hasPeeked = skb.Packet{}, false
	}
	q.qlen, q.backlog = 0, 0
	fqFlowPurge(ctx, &q.internal)
	for i, root := range q.fqRoot {
		for _, f := range root {
			fqFlowPurge(ctx, f)
		}
		q.fqRoot[i] = nil
	}
	for i := range q.bandFlows {
		q.bandFlows[i].newFlows = fqFlowHead{}
		q.bandFlows[i].oldFlows = fqFlowHead{}
	}
	q.delayed = nil
	q.flows, q.inactiveFlows, q.throttledFlows = 0, 0, 0
	// fq_reset leaves band_pkt_count[] and time_next_delayed_flow as
	// they were; so does the model, to stay with the kernel.
}
