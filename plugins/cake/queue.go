package cake

import (
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// incBulkHosts is cake_inc_srchost_bulk_flow_count and
// cake_inc_dsthost_bulk_flow_count: only in the modes that isolate that
// host, and never past CAKE_QUEUES.
func (q *Cake) incBulkHosts(b *cakeTin, flow *cakeFlow) {
	if h := &b.hosts[flow.srchost]; cakeDsrc(q.flowMode) && h.srchostBulkFlowCount < cakeQueues {
		h.srchostBulkFlowCount++
	}
	if h := &b.hosts[flow.dsthost]; cakeDdst(q.flowMode) && h.dsthostBulkFlowCount < cakeQueues {
		h.dsthostBulkFlowCount++
	}
}

// decBulkHosts is cake_dec_srchost_bulk_flow_count and
// cake_dec_dsthost_bulk_flow_count: only in the modes that isolate that
// host, and never below zero.
func (q *Cake) decBulkHosts(b *cakeTin, flow *cakeFlow) {
	if h := &b.hosts[flow.srchost]; cakeDsrc(q.flowMode) && h.srchostBulkFlowCount > 0 {
		h.srchostBulkFlowCount--
	}
	if h := &b.hosts[flow.dsthost]; cakeDdst(q.flowMode) && h.dsthostBulkFlowCount > 0 {
		h.dsthostBulkFlowCount--
	}
}

// flowQuantum is cake_get_flow_quantum: the tin's flow quantum shared
// among the bulk flows of the flow's busiest host, plus a
// get_random_u16() that dithers away the rounding error.
func (q *Cake) flowQuantum(ctx qdisc.Ctx, b *cakeTin, flow *cakeFlow) int32 {
	hostLoad := uint16(1)
	if cakeDsrc(q.flowMode) {
		hostLoad = max(hostLoad, b.hosts[flow.srchost].srchostBulkFlowCount)
	}
	if cakeDdst(q.flowMode) {
		hostLoad = max(hostLoad, b.hosts[flow.dsthost].dsthostBulkFlowCount)
	}
	dither := ctx.Rand() >> 16 // get_random_u16
	return int32((uint32(b.flowQuantum)*uint32(quantumDiv[hostLoad]) + dither) >> 16)
}

// heapBacklog is cake_heap_get_backlog.
func (q *Cake) heapBacklog(i int) uint32 {
	e := q.overflowHeap[i]
	return q.tins[e.t].backlogs[e.b]
}

// heapSwap is cake_heap_swap.
func (q *Cake) heapSwap(i, j int) {
	ii, jj := q.overflowHeap[i], q.overflowHeap[j]
	q.overflowHeap[i], q.overflowHeap[j] = jj, ii
	q.tins[ii.t].overflowIdx[ii.b] = uint16(j)
	q.tins[jj.t].overflowIdx[jj.b] = uint16(i)
}

// heapify is cake_heapify: sift down in the max-heap of flow backlogs.
func (q *Cake) heapify(ctx qdisc.Ctx, i int) {
	const a = cakeMaxTins * cakeQueues
	mb := q.heapBacklog(i)
	m := i
	steps := 0
	for m < a {
		steps++
		l, r := 2*m+1, 2*m+2
		if l < a {
			if lb := q.heapBacklog(l); lb > mb {
				m, mb = l, lb
			}
		}
		if r < a {
			if rb := q.heapBacklog(r); rb > mb {
				m, mb = r, rb
			}
		}
		if m == i {
			break
		}
		q.heapSwap(i, m)
		i = m
	}
	if ctx != nil {
		ctx.Work(qdisc.WorkFlowScan, steps)
	}
}

// heapifyUp is cake_heapify_up.
func (q *Cake) heapifyUp(ctx qdisc.Ctx, i int) {
	steps := 0
	for i > 0 && i < cakeMaxTins*cakeQueues {
		steps++
		p := (i - 1) >> 1
		if q.heapBacklog(i) <= q.heapBacklog(p) {
			break
		}
		q.heapSwap(i, p)
		i = p
	}
	ctx.Work(qdisc.WorkFlowScan, steps)
}

// advanceShaper is cake_advance_shaper: charge the packet to its tin and
// to the global shaper (and the failsafe, unless it is a drop).
func (q *Cake) advanceShaper(b *cakeTin, p *pkt, now sim.Time, drop bool) uint32 {
	l := p.adjustedLen
	if q.rateNs != 0 {
		tinDur := sim.Time((uint64(l) * b.tinRateNs) >> b.tinRateShft)
		globalDur := sim.Time((uint64(l) * q.rateNs) >> q.rateShft)
		failsafeDur := globalDur + globalDur>>1
		if b.timeNextPacket < now {
			b.timeNextPacket += tinDur
		} else if b.timeNextPacket < now+tinDur {
			b.timeNextPacket = now + tinDur
		}
		q.timeNextPacket += globalDur
		if !drop {
			q.failsafeNextPacket += failsafeDur
		}
	}
	return l
}

// drop is cake_drop: prune the head of the longest flow anywhere (the
// overflow max-heap), push BLUE up for it, and hand the packet to the
// caller's to_free with QDISC_OVERLIMIT. It returns the flow it hit.
func (q *Cake) drop(ctx qdisc.Ctx) (tin, idx int) {
	ctx.Work(qdisc.WorkTstamp, 1) // cake_drop reads the clock itself
	now := ctx.Now()
	if q.overflowTimeout == 0 {
		// Build a fresh max-heap.
		for i := cakeMaxTins*cakeQueues/2 - 1; i >= 0; i-- {
			q.heapify(ctx, i)
		}
	}
	q.overflowTimeout = 65535
	top := q.overflowHeap[0]
	tin, idx = int(top.t), int(top.b)
	b := q.tins[tin]
	flow := &b.flows[idx]
	if flow.q.Len() == 0 {
		q.overflowTimeout = 0 // the heap has gone wrong: rebuild next time
		return tin, idx
	}
	p := flow.q.PopHead()
	q.forgetAck(p.Handle)
	if cobaltQueueFull(&flow.cvars, &b.cparams, now, !q.noBlue) {
		b.unresponsiveFlowCount++
	}
	q.bufferUsed -= p.TrueSize
	b.backlogs[idx] -= p.Len
	b.tinBacklog -= p.Len
	q.backlog -= int64(p.Len)
	flow.dropped++
	b.tinDropped++
	q.drops++
	if q.rateFlags&flagIngress != 0 {
		q.advanceShaper(b, &p, now, true)
	}
	q.qlen--
	ctx.Drop(p.Handle, skb.DropQdiscOverlimit)
	q.heapify(ctx, 0)
	return tin, idx
}

// Enqueue implements qdisc.Qdisc for a batch: each skb is one
// cake_enqueue, and a GSO skb the host split for split-gso comes as its
// segments together (qdisc.GSOSkbLen), which get the skb's code.
func (q *Cake) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	q.now = ctx.Now()
	for i := 0; i < len(batch); {
		n := qdisc.GSOSkbLen(ctx, i)
		code := q.enqueue(ctx, batch[i:i+n], i)
		for j := i; j < i+n; j++ {
			rc[j] = code
		}
		i += n
	}
}

// enqueue is cake_enqueue of one skb: segs is the skb, or with
// split-gso the segments skb_gso_segment made of it. Cake classifies
// the skb before it segments it, so the segments share one
// classification, one flow and one check of the buffer, after the last
// (as do the stale-shaper check, the heap and the flow chain). at is
// the skb's place in the call's batch.
func (q *Cake) enqueue(ctx qdisc.Ctx, segs []skb.Packet, at int) qdisc.Code {
	ctx.Work(qdisc.WorkEnqueue, len(segs))
	ctx.Work(qdisc.WorkTstamp, 1)
	now := ctx.Now()
	p := &segs[0]
	tin, idx, ok := q.classify(ctx, p)
	if !ok {
		// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS: counted as a qdisc
		// drop, freed with __qdisc_drop; the sender sees
		// NET_XMIT_SUCCESS (dev_qdisc_enqueue's mask). A GSO skb is
		// one drop: it is freed whole, before it is segmented.
		q.drops++
		for i := range segs {
			ctx.Drop(segs[i].Handle, skb.DropQdiscDrop)
		}
		return qdisc.XmitSuccess | qdisc.XmitBypass
	}
	for i := 1; i < len(segs); i++ {
		// What the filters' actions wrote into the skb, every segment
		// carries.
		s := &segs[i]
		s.Priority, s.Mark, s.DSCP, s.ECN = p.Priority, p.Mark, p.DSCP, p.ECN
	}
	b := q.tins[tin]
	flow := &b.flows[idx]

	// Ensure the shaper state isn't stale.
	if b.tinBacklog == 0 {
		if b.timeNextPacket < now {
			b.timeNextPacket = now
		}
		if q.qlen == 0 {
			if q.timeNextPacket < now {
				q.failsafeNextPacket = now
				q.timeNextPacket = now
			} else if q.timeNextPacket > now && q.failsafeNextPacket > now {
				q.overlimits++
				ctx.Watchdog(min(q.timeNextPacket, q.failsafeNextPacket))
			}
		}
	}
	var length uint32 // qdisc_pkt_len of the skb, before any split
	for i := range segs {
		length += segs[i].Len
	}
	if length > b.maxSkblen {
		b.maxSkblen = length
	}
	for i := range segs {
		s := &segs[i]
		flow.q.PushTail(pkt{Packet: *s, enqueued: now, adjustedLen: q.overhead(s)})
		q.qlen++
		q.bufferUsed += s.TrueSize
		b.packets++
	}
	b.bytes += uint64(length)
	b.backlogs[idx] += length
	b.tinBacklog += length
	q.backlog += int64(length)
	var ackLen uint32
	if q.ackFilter != ackNone && len(segs) == 1 {
		// Not split: cake_ack_filter on the flow it joined.
		if th, ok := qdisc.TCPHeaderOf(ctx, at); ok {
			if i, ok := q.findRedundantAck(ctx, flow, &th); ok {
				ackLen = q.filterAck(ctx, b, flow, idx, i, now)
			}
			q.keepAck(p.Handle, &th)
		}
	}
	q.avgWindowBytes += uint64(length - ackLen) // u32 arithmetic, as the kernel's len - ack_pkt_len
	if q.overflowTimeout != 0 {
		q.heapifyUp(ctx, int(b.overflowIdx[idx]))
	}
	q.estimateCapacity(ctx, now)
	// flowchain
	switch flow.set {
	case setNone, setDecaying:
		if flow.set == setNone {
			b.newFlows.pushTail(idx)
		} else {
			b.decayingFlowCount--
			b.decayingFlows.remove(idx)
			b.newFlows.pushTail(idx)
		}
		flow.list = 0
		flow.set = setSparse
		b.sparseFlowCount++
		flow.deficit = q.flowQuantum(ctx, b, flow)
	case setSparseWait:
		// Empty, counted as sparse, but actually in the bulk rotation.
		flow.set = setBulk
		b.sparseFlowCount--
		b.bulkFlowCount++
		q.incBulkHosts(b, flow)
	}

	if q.bufferUsed > q.bufferMaxUsed {
		q.bufferMaxUsed = q.bufferUsed
	}
	code := qdisc.XmitSuccess
	if q.bufferUsed > q.bufferLimit {
		var dropped uint32
		for q.bufferUsed > q.bufferLimit {
			dropped++
			dt, di := q.drop(ctx)
			if dt == tin && di == int(idx) {
				code = qdisc.XmitCN
			}
		}
		b.dropOverlimit += dropped
	}
	return code
}

// dequeueOne is cake_dequeue_one: the head of (cur_tin, cur_flow).
func (q *Cake) dequeueOne() (pkt, bool) {
	b := q.tins[q.curTin]
	flow := &b.flows[q.curFlow]
	if flow.q.Len() == 0 {
		return pkt{}, false
	}
	p := flow.q.PopHead()
	q.forgetAck(p.Handle)
	b.backlogs[q.curFlow] -= p.Len
	b.tinBacklog -= p.Len
	q.backlog -= int64(p.Len)
	q.bufferUsed -= p.TrueSize
	q.qlen--
	if q.overflowTimeout != 0 {
		q.heapify(nil, int(b.overflowIdx[q.curFlow]))
	}
	return p, true
}

// Dequeue implements qdisc.Qdisc: cake_dequeue, repeated for a bulk.
func (q *Cake) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	q.now = ctx.Now()
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) {
		if p, ok := q.takePeeked(); ok {
			return p, true
		}
		return q.dequeue(ctx)
	})
}

// dequeue is cake_dequeue.
func (q *Cake) dequeue(ctx qdisc.Ctx) (skb.Packet, bool) {
	ctx.Work(qdisc.WorkTstamp, 1)
	now := ctx.Now()
	if q.shared != nil {
		q.mqSyncRate(ctx, now)
	}
	b := q.tins[q.curTin]
	firstFlow := true
begin:
	if q.qlen == 0 {
		return skb.Packet{}, false
	}
	// Global hard shaper.
	if q.timeNextPacket > now && q.failsafeNextPacket > now {
		q.overlimits++
		ctx.Watchdog(min(q.timeNextPacket, q.failsafeNextPacket))
		return skb.Packet{}, false
	}
	// Choose a tin.
	if q.rateNs == 0 {
		// Unlimited: balance tins with DRR.
		wrapped, empty := false, true
		for b.tinDeficit < 0 || b.sparseFlowCount+b.bulkFlowCount == 0 {
			ctx.Work(qdisc.WorkFlowScan, 1)
			if b.tinDeficit <= 0 {
				b.tinDeficit += int32(b.tinQuantum)
			}
			if b.sparseFlowCount+b.bulkFlowCount != 0 {
				empty = false
			}
			q.curTin++
			if int(q.curTin) >= q.tinCnt {
				q.curTin = 0
				if wrapped {
					if empty {
						return skb.Packet{}, false
					}
				} else {
					wrapped = true
				}
			}
			b = q.tins[q.curTin]
		}
	} else {
		// Shaped: the highest-priority tin meeting its schedule, else
		// the earliest scheduled tin with a queue.
		bestTime := sim.Time(1<<62 - 1)
		best := 0
		for tin := 0; tin < q.tinCnt; tin++ {
			t := q.tins[tin]
			if t.sparseFlowCount+t.bulkFlowCount > 0 {
				ttp := t.timeNextPacket - now
				if ttp <= 0 || ttp <= bestTime {
					bestTime, best = ttp, tin
				}
			}
		}
		q.curTin = uint16(best)
		b = q.tins[best]
		if b.sparseFlowCount+b.bulkFlowCount == 0 {
			return skb.Packet{}, false
		}
	}

retry:
	head := &b.decayingFlows
	if !firstFlow || head.empty() {
		head = &b.newFlows
		if head.empty() {
			head = &b.oldFlows
			if head.empty() {
				head = &b.decayingFlows
				if head.empty() {
					goto begin
				}
			}
		}
	}
	{
		idx := head.first()
		flow := &b.flows[idx]
		q.curFlow = idx
		firstFlow = false

		// Flow isolation (DRR++).
		if flow.deficit <= 0 {
			if flow.set == setSparse {
				if flow.q.Len() > 0 {
					b.sparseFlowCount--
					b.bulkFlowCount++
					q.incBulkHosts(b, flow)
					flow.set = setBulk
				} else {
					flow.set = setSparseWait
				}
			}
			flow.deficit += q.flowQuantum(ctx, b, flow)
			head.remove(idx)
			b.oldFlows.pushTail(idx)
			flow.list = 1
			goto retry
		}

		// Retrieve a packet via the AQM.
		var p pkt
		for {
			var ok bool
			p, ok = q.dequeueOne()
			if !ok {
				// This queue was actually empty.
				if cobaltQueueEmpty(&flow.cvars, &b.cparams, now) {
					b.unresponsiveFlowCount--
				}
				if flow.cvars.pDrop != 0 || flow.cvars.count != 0 || now < flow.cvars.dropNext {
					// Keep it in the flowchain until its state has decayed.
					head.remove(idx)
					b.decayingFlows.pushTail(idx)
					flow.list = 2
					switch flow.set {
					case setBulk:
						b.bulkFlowCount--
						q.decBulkHosts(b, flow)
						b.decayingFlowCount++
					case setSparse, setSparseWait:
						b.sparseFlowCount--
						b.decayingFlowCount++
					}
					flow.set = setDecaying
				} else {
					// Remove the empty queue from the flowchain.
					head.remove(idx)
					flow.list = -1
					switch flow.set {
					case setSparse, setSparseWait:
						b.sparseFlowCount--
					case setBulk:
						b.bulkFlowCount--
						q.decBulkHosts(b, flow)
					default:
						b.decayingFlowCount--
					}
					flow.set = setNone
				}
				goto begin
			}
			ctx.Work(qdisc.WorkDequeue, 1)
			bulk := uint32(0)
			if q.rateFlags&flagIngress != 0 {
				bulk = uint32(b.bulkFlowCount)
			}
			verdict, marked := cobaltShouldDrop(&flow.cvars, &b.cparams, now, p.enqueued, p.ECN != 0, bulk, ctx.Rand)
			if marked {
				p.ECN = 3 // INET_ECN_set_ce
			}
			// The last packet of a flow may be marked, never dropped.
			if verdict == cobaltPass || flow.q.Len() == 0 {
				break
			}
			if q.rateFlags&flagIngress != 0 {
				l := q.advanceShaper(b, &p, now, true)
				flow.deficit -= int32(l)
				b.tinDeficit -= int32(l)
			}
			flow.dropped++
			b.tinDropped++
			q.drops++
			reason := skb.DropQdiscCongested
			if verdict == cobaltDropBlue {
				reason = skb.DropCakeFlood
			}
			ctx.DequeueDrop(p.Handle, reason)
			if q.rateFlags&flagIngress != 0 {
				goto retry
			}
		}

		if flow.cvars.ecnMarked {
			b.tinEcnMark++
		}
		q.lastActive = now // cake_mq: seen by siblings counting active queues
		delay := uint64(now - p.enqueued)
		b.avgeDelay = cakeEwma(b.avgeDelay, delay, 8)
		if delay > b.peakDelay {
			b.peakDelay = cakeEwma(b.peakDelay, delay, 2)
		} else {
			b.peakDelay = cakeEwma(b.peakDelay, delay, 8)
		}
		if delay < b.baseDelay {
			b.baseDelay = cakeEwma(b.baseDelay, delay, 2)
		} else {
			b.baseDelay = cakeEwma(b.baseDelay, delay, 8)
		}
		l := q.advanceShaper(b, &p, now, false)
		flow.deficit -= int32(l)
		b.tinDeficit -= int32(l)

		if q.timeNextPacket > now && q.qlen > 0 {
			ctx.Watchdog(min(q.timeNextPacket, q.failsafeNextPacket))
		} else if q.qlen == 0 {
			for i := 0; i < q.tinCnt; i++ {
				if q.tins[i].decayingFlowCount != 0 {
					ctx.Watchdog(now + q.tins[i].cparams.target)
					break
				}
			}
		}
		if q.overflowTimeout != 0 {
			q.overflowTimeout--
		}
		return p.Packet, true
	}
}

// Peek implements qdisc.Qdisc as qdisc_peek_dequeued does for cake:
// dequeue one packet and keep it aside (still counted in qlen/backlog)
// for the next Dequeue.
func (q *Cake) Peek(ctx qdisc.Ctx) (skb.Packet, bool) {
	q.now = ctx.Now()
	if q.peeked == nil {
		p, ok := q.dequeue(ctx)
		if !ok {
			return skb.Packet{}, false
		}
		q.peeked = &p
		q.qlen++
		q.backlog += int64(p.Len)
	}
	return *q.peeked, true
}

// takePeeked returns the packet Peek kept aside, if any.
func (q *Cake) takePeeked() (skb.Packet, bool) {
	if q.peeked == nil {
		return skb.Packet{}, false
	}
	p := *q.peeked
	q.peeked = nil
	q.qlen--
	q.backlog -= int64(p.Len)
	return p, true
}

// Reset implements qdisc.Qdisc (cake_reset: clear every tin).
func (q *Cake) Reset(ctx qdisc.Ctx) {
	if p, ok := q.takePeeked(); ok {
		ctx.Drop(p.Handle, skb.DropQueuePurge)
	}
	for c := 0; c < cakeMaxTins; c++ {
		q.clearTin(ctx, c)
	}
}

// FlowClasses implements qdisc.FlowClasses: cake_walk lists, tin by tin
// in tin_order, the flows on a flowchain (new, old or decaying) as
// classes tin*CAKE_QUEUES + flow + 1, and cake_dump_class_stats gives
// each its packets, its backlogs[] bytes, its drops (flow->dropped) and
// the TCA_CAKE_STATS_* tc prints: deficit, count (cobalt's), dropping (0
// or 1) and drop_next (us, now - drop_next: negative while the next drop
// is ahead) when dropping, blue_prob (p_drop) and blue_timer (us since
// blue_timer) when p_drop is not 0. Now is the last call's time.
func (q *Cake) FlowClasses() []qdisc.Class {
	var out []qdisc.Class
	us := func(d sim.Time) int64 { return int64(int32(int64(d) / 1000)) } // ktime_to_us into an s32
	for i := 0; i < q.tinCnt; i++ {
		b := q.tins[q.tinOrder[i]]
		for j := range b.flows {
			f := &b.flows[j]
			if f.list < 0 {
				continue
			}
			var dropping int64
			if f.cvars.dropping {
				dropping = 1
			}
			xs := []qdisc.XStat{
				qdisc.XInt("deficit", int64(f.deficit)),
				qdisc.XUint("count", uint64(f.cvars.count)),
				qdisc.XInt("dropping", dropping),
			}
			if f.cvars.dropping {
				xs = append(xs, qdisc.XInt("drop_next", us(q.now-f.cvars.dropNext)))
			}
			xs = append(xs, qdisc.XUint("blue_prob", uint64(f.cvars.pDrop)))
			if f.cvars.pDrop != 0 {
				xs = append(xs, qdisc.XInt("blue_timer", us(q.now-f.cvars.blueTimer)))
			}
			out = append(out, qdisc.Class{ID: qdisc.MakeClassID(0, uint16(i*cakeQueues+j+1)), Qlen: f.q.Len(),
				Backlog: int64(b.backlogs[j]), Drops: uint64(f.dropped), XStats: xs})
		}
	}
	return out
}

// estimateCapacity is cake_enqueue's incoming bandwidth estimate. With
// autorate-ingress, a gap between packets longer than their average
// interval (an EWMA that rises fast and falls slowly, so bursts such as
// wifi aggregates do not count) closes a window: its bytes over its
// length update avg_peak_bandwidth (the same kind of EWMA), and the
// shaper takes 15/16 of it (cake_reconfigure). Without it the window
// restarts at every packet.
func (q *Cake) estimateCapacity(ctx qdisc.Ctx, now sim.Time) {
	if q.rateFlags&flagAutorate == 0 {
		q.avgWindowBytes = 0
		q.lastPacketTime = now
		return
	}
	interval := min(uint64(now-q.lastPacketTime), uint64(sim.Second))
	q.avgPacketInterval = ewma(q.avgPacketInterval, interval)
	q.lastPacketTime = now
	if interval <= q.avgPacketInterval {
		return
	}
	window := uint64(now - q.avgWindowBegin)
	rate := q.avgWindowBytes * uint64(sim.Second) / window
	q.avgPeakBandwidth = ewma(q.avgPeakBandwidth, rate)
	q.avgWindowBytes = 0
	q.avgWindowBegin = now
	// ktime_after(now, last_reconfig_time + 250 ms): never written,
	// always past.
	q.rateBps = q.avgPeakBandwidth * 15 >> 4
	q.reconfigure(ctx)
}

// ewma is cake_ewma as both its callers use it: avg moves a quarter of
// the way to a sample above it (shift 2), 1/256 to one below (shift 8).
func ewma(avg, sample uint64) uint64 {
	shift := 8
	if sample > avg {
		shift = 2
	}
	avg -= avg >> shift
	return avg + sample>>shift
}
