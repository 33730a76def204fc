// Package cake is CAKE (net/sched/sch_cake.c): diffserv tins, an 8-way
// set-associative flow table with host isolation, COBALT (CoDel + BLUE)
// per flow, an overflow max-heap that drops from the fattest flow, and a
// deficit-mode shaper. Drops at dequeue go through Ctx.DequeueDrop, as
// with TCQ_F_DEQUEUE_DROPS.
package cake

import (
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Sizes from sch_cake.c.
const (
	cakeSetWays = 8    // CAKE_SET_WAYS
	cakeMaxTins = 8    // CAKE_MAX_TINS
	cakeQueues  = 1024 // CAKE_QUEUES
)

// Flow isolation modes (enum CAKE_FLOW_*).
const (
	flowNone    = 0
	flowSrcIP   = 1
	flowDstIP   = 2
	flowHosts   = 3
	flowFlows   = 4
	flowDualSrc = 5
	flowDualDst = 6
	flowTriple  = 7
	flowNATFlag = 64
	flowMask    = 63
)

// Diffserv modes (enum CAKE_DIFFSERV_*).
const (
	diffserv3 = iota
	diffserv4
	diffserv8
	besteffort
	precedence
)

// Flow sets (enum CAKE_SET_*).
const (
	setNone = iota
	setSparse
	setSparseWait // counted in sparse, actually in bulk
	setBulk
	setDecaying
)

// Rate flags (enum CAKE_FLAG_*).
const (
	flagOverhead = 1 << 0
	flagAutorate = 1 << 1
	flagIngress  = 1 << 2
	flagWash     = 1 << 3
	flagSplitGSO = 1 << 4
)

// ATM modes.
const (
	atmNone = iota
	atmATM
	atmPTM
)

// Ack filter modes.
const (
	ackNone = iota
	ackFilter
	ackAggressive
)

// pkt is a queued packet with cobalt's cb.
type pkt struct {
	skb.Packet
	enqueued    sim.Time
	adjustedLen uint32
}

// cakeFlow is struct cake_flow.
type cakeFlow struct {
	q       qdisc.Ring[pkt] // a ring: reused, no allocation per packet
	deficit int32
	dropped uint32
	cvars   cobaltVars
	srchost uint16
	dsthost uint16
	set     uint8
	list    int8 // which flowchain it is on: -1 none, 0 new, 1 old, 2 decaying
}

// cakeHost is struct cake_host.
type cakeHost struct {
	srchostTag, dsthostTag                     uint32
	srchostBulkFlowCount, dsthostBulkFlowCount uint16
}

// cakeTin is struct cake_tin_data.
type cakeTin struct {
	flows       [cakeQueues]cakeFlow
	backlogs    [cakeQueues]uint32
	tags        [cakeQueues]uint32
	overflowIdx [cakeQueues]uint16
	hosts       [cakeQueues]cakeHost
	flowQuantum uint16

	cparams cobaltParams

	dropOverlimit         uint32
	bulkFlowCount         uint16
	sparseFlowCount       uint16
	decayingFlowCount     uint16
	unresponsiveFlowCount uint16
	maxSkblen             uint32

	newFlows, oldFlows, decayingFlows flowList

	timeNextPacket sim.Time
	tinRateNs      uint64
	tinRateBps     uint64
	tinRateShft    uint16
	tinQuantum     uint16
	tinDeficit     int32
	tinBacklog     uint32
	tinDropped     uint32
	tinEcnMark     uint32
	packets        uint32
	bytes          uint64
	ackDrops       uint32

	avgeDelay, peakDelay, baseDelay uint64

	wayDirects, wayHits, wayMisses, wayCollisions uint32
}

// flowList is a list_head of flows, by index, FIFO.
type flowList struct {
	idx  []uint16
	head int
}

func (l *flowList) empty() bool   { return l.head == len(l.idx) }
func (l *flowList) first() uint16 { return l.idx[l.head] }
func (l *flowList) pushTail(i uint16) {
	if l.head > 0 && l.head == len(l.idx) {
		l.idx, l.head = l.idx[:0], 0
	}
	l.idx = append(l.idx, i)
}

// remove takes flow i off the list (list_del); O(n) but lists are short
// relative to the work a real kernel does per packet.
func (l *flowList) remove(i uint16) {
	for k := l.head; k < len(l.idx); k++ {
		if l.idx[k] == i {
			if k == l.head {
				l.head++
			} else {
				copy(l.idx[k:], l.idx[k+1:])
				l.idx = l.idx[:len(l.idx)-1]
			}
			return
		}
	}
}

type heapEntry struct {
	t uint8
	b uint16
}

// Cake is the qdisc (struct cake_sched_data).
type Cake struct {
	tins            [cakeMaxTins]*cakeTin
	overflowHeap    [cakeQueues * cakeMaxTins]heapEntry
	overflowTimeout uint16

	tinCnt    int
	tinMode   int
	flowMode  int
	ackFilter int
	atmMode   int
	// acks are the TCP headers of the queued packets the ACK filter
	// could take out (pure ACKs, read at enqueue while it is on: the
	// filter reads the queued skbs' headers, which do not change in the
	// queue), by handle. Kept aside so that a queued packet costs no
	// more for them (TestPktSize).
	acks map[skb.Handle]skb.TCPHeader

	rateShft           uint16
	timeNextPacket     sim.Time
	failsafeNextPacket sim.Time
	rateNs             uint64
	rateBps            uint64 // bytes/s
	rateFlags          int
	rateOverhead       int16
	rateMpu            uint16
	interval           uint64 // us (rtt)
	target             uint64 // us

	bufferUsed        uint32
	bufferMaxUsed     uint32
	bufferLimit       uint32
	bufferConfigLimit uint32

	curTin  uint16
	curFlow uint16

	tinIndex []uint8
	tinOrder []uint8
	// now is the time of the last enqueue, dequeue or peek: what a flow
	// class's drop_next and blue_timer count from
	// (cake_dump_class_stats reads ktime_get; FlowClasses has none).
	now sim.Time

	limit int // sch->limit
	mtu   int // psched_mtu

	qlen              int
	backlog           int64
	drops, overlimits uint64

	avgNetoff                                  uint32
	maxNetlen, maxAdjlen, minNetlen, minAdjlen uint16

	hashrnd uint32
	peeked  *skb.Packet // qdisc_peek_dequeued's stash

	fwmarkMask  uint32 // fwmark MASK: skb->mark's bits that name a tin
	fwmarkShft  uint
	handleMajor uint32 // TC_H_MAJ(sch->handle) >> 16, for priority steering
	// classified is the packet cake_classify hands the filters: the
	// filters may edit it, and a field, unlike enqueue's own copy, does
	// not move to the heap for each packet the filters see.
	classified skb.Packet

	// cake_mq sharing (see mq.go).
	sharedGroup                   bool // a cake_mq child (Setup.Group), joined or not yet
	shared                        *sharedConfig
	txq                           int // a cake_mq child's TX queue (Setup.Queue)
	lastActive, lastCheckedActive sim.Time
	activeQueues                  int
	clearTinBug                   bool

	// avgPeakBandwidth is avg_peak_bandwidth, the capacity estimate tc -s
	// shows: cake_init sets it to the rate its own options gave, and only
	// autorate-ingress moves it after; a change of bandwidth leaves it.
	// A cake_mq child is made with no options (qdisc_create_dflt) and
	// given the shared configuration after (cake_config_replace), so its
	// estimate is 0.
	avgPeakBandwidth uint64
	// autorate-ingress's estimate of the arrival rate (cake_enqueue):
	// last_packet_time, avg_window_begin (both 0 at first, as kzalloc
	// leaves them), avg_packet_interval, avg_window_bytes. The kernel
	// reads last_reconfig_time but never writes it, so its 250 ms gate
	// is always open: the model has no field for it.
	lastPacketTime, avgWindowBegin    sim.Time
	avgPacketInterval, avgWindowBytes uint64

	noBlue bool // txlab's lab-noblue: BLUE's p never rises
}

var quantumDiv [cakeQueues + 1]uint16

func init() {
	for i := 1; i <= cakeQueues; i++ {
		quantumDiv[i] = uint16(65535 / i)
	}
	qdisc.Register("cake", "Common Applications Kept Enhanced: tins, host/flow isolation, COBALT, shaper (sch_cake.c)",
		func() qdisc.Qdisc { return &Cake{} })
	qdisc.RegisterLabOptions("cake", labOptions...)
}

// Init implements qdisc.Qdisc: cake_init, with cake_change's options.
// A cake_mq child (s.Group set) joins its root's shared configuration.
func (q *Cake) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	q.tinMode = diffserv3
	q.flowMode = flowTriple
	q.interval = 100000 // 100 ms
	q.target = 5000     // 5 ms
	q.rateFlags = flagSplitGSO
	q.limit = 10240
	q.mtu = s.MTU
	if q.mtu == 0 {
		q.mtu = 1514
	}
	q.hashrnd = ctx.Rand()
	q.handleMajor = s.Major()
	q.sharedGroup = s.Group != ""
	o, err := parse(args)
	if err == nil {
		err = q.validate(o)
	}
	if err != nil {
		return qdisc.Info{}, err
	}
	q.apply(o)
	q.minNetlen, q.minAdjlen = ^uint16(0), ^uint16(0)
	if s.Group == "" {
		q.avgPeakBandwidth = q.rateBps
	}
	if s.Group != "" {
		q.txq = s.Queue()
		q.join(s.Group, s.GroupSize)
	}
	for i := range q.tins {
		q.tins[i] = &cakeTin{}
		for j := range q.tins[i].flows {
			q.tins[i].flows[j].list = -1
		}
	}
	for i := 0; i < cakeMaxTins; i++ {
		for j := 0; j < cakeQueues; j++ {
			k := j*cakeMaxTins + i
			q.overflowHeap[k] = heapEntry{t: uint8(i), b: uint16(j)}
			q.tins[i].overflowIdx[j] = uint16(k)
		}
	}
	q.reconfigure(nil)
	return q.info(), nil
}

// info is what cake tells the host: TCQ_F_DEQUEUE_DROPS, its filter
// block, sch->limit, with split-gso that GSO skbs come segmented
// (cake_enqueue's skb_gso_segment), with an ACK filter that it reads
// TCP headers, and the reason of the ACKs the filter takes out.
func (q *Cake) info() qdisc.Info {
	// HasBlock: cake_class_ops' tcf_block (q->block, cake_init's
	// tcf_block_get).
	i := qdisc.Info{Flags: qdisc.DequeueDrops | qdisc.HasBlock, Limit: q.limit}
	if q.rateFlags&flagSplitGSO != 0 {
		i.Flags |= qdisc.SplitGSO
	}
	if q.ackFilter != ackNone {
		i.Flags |= qdisc.ReadsTCPHeaders
	}
	i.DropReasons = []skb.DropReason{dropAckFilter}
	return i
}

// Change implements qdisc.Changer (cake_change; for a cake_mq root the
// host changes every child, as cake_mq_change reconfigures each): the
// options, the size statistics reset if the overhead changed, then
// cake_reconfigure, which recomputes every tin's rate and CoDel
// parameters and purges tins no longer in use (cake_clear_tin's
// kfree_skb_reason with QUEUE_PURGE, since 6.14's drop reasons for cake;
// the other qdiscs' resets free with rtnl_kfree_skbs: NOT_SPECIFIED).
func (q *Cake) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err == nil {
		err = q.validate(o)
	}
	if err != nil {
		return qdisc.Info{}, err
	}
	if q.apply(o) {
		q.maxNetlen, q.maxAdjlen = 0, 0
		q.minNetlen, q.minAdjlen = ^uint16(0), ^uint16(0)
	}
	q.reconfigure(ctx)
	return q.info(), nil
}

// setRate is cake_set_rate: rate in bytes/s to ns per byte in fixed
// point, CoDel parameters auto-tuned to the serialisation delay.
func setRate(b *cakeTin, rate uint64, mtu uint32, targetNs, rttNs uint64) {
	const minRate = 64
	byteTarget := uint64(mtu)
	var rateShft uint16
	var rateNs uint64
	b.flowQuantum = 1514
	if rate != 0 {
		b.flowQuantum = uint16(max(min(rate>>12, 1514), 300))
		rateShft = 34
		rateNs = uint64(sim.Second) << rateShft
		rateNs /= max(minRate, rate)
		for rateNs>>34 != 0 {
			rateNs >>= 1
			rateShft--
		}
	}
	b.tinRateBps, b.tinRateNs, b.tinRateShft = rate, rateNs, rateShft
	if mtu == 0 {
		return // cake_mq: only update the rate, leave cobalt's parameters
	}
	byteTargetNs := (byteTarget * rateNs) >> rateShft
	b.cparams.target = sim.Time(max(byteTargetNs*3/2, targetNs))
	b.cparams.interval = sim.Time(max(rttNs+uint64(b.cparams.target)-targetNs, uint64(b.cparams.target)*2))
	b.cparams.mtuTime = sim.Time(byteTargetNs)
	b.cparams.pInc = 1 << 24 // 1/256
	b.cparams.pDec = 1 << 20 // 1/4096
}

// configTins is cake_config_{besteffort,precedence,diffserv8,4,3}; it
// returns the tin whose rate is the global one.
func (q *Cake) configTins() int { return q.configTinsRate(q.rateBps, uint32(q.mtu)) }

// configTinsRate is cake_config_* for rate with mtu as
// cake_configure_rates passes it: 0 (rate_adjust) sets the tins' rates
// and leaves COBALT's parameters.
func (q *Cake) configTinsRate(rate uint64, mtu uint32) int {
	t, i := q.target*1000, q.interval*1000
	switch q.tinMode {
	case besteffort:
		q.tinCnt, q.tinIndex, q.tinOrder = 1, besteffortMap[:], normalOrder[:]
		setRate(q.tins[0], rate, mtu, t, i)
		q.tins[0].tinQuantum = 65535
	case precedence, diffserv8:
		q.tinCnt, q.tinOrder = 8, normalOrder[:]
		q.tinIndex = precedenceMap[:]
		if q.tinMode == diffserv8 {
			q.tinIndex = diffserv8Map[:]
		}
		quantum := uint32(256)
		for k := 0; k < 8; k++ {
			setRate(q.tins[k], rate, mtu, t, i)
			q.tins[k].tinQuantum = uint16(max(1, quantum))
			rate = rate * 7 >> 3
			quantum = quantum * 7 >> 3
		}
	case diffserv4:
		q.tinCnt, q.tinIndex, q.tinOrder = 4, diffserv4Map[:], bulkOrder[:]
		setRate(q.tins[0], rate, mtu, t, i)
		setRate(q.tins[1], rate>>4, mtu, t, i)
		setRate(q.tins[2], rate>>1, mtu, t, i)
		setRate(q.tins[3], rate>>2, mtu, t, i)
		q.tins[0].tinQuantum, q.tins[1].tinQuantum, q.tins[2].tinQuantum, q.tins[3].tinQuantum = 1024, 1024>>4, 1024>>1, 1024>>2
	default: // diffserv3
		q.tinCnt, q.tinIndex, q.tinOrder = 3, diffserv3Map[:], bulkOrder[:]
		setRate(q.tins[0], rate, mtu, t, i)
		setRate(q.tins[1], rate>>4, mtu, t, i)
		setRate(q.tins[2], rate>>2, mtu, t, i)
		q.tins[0].tinQuantum, q.tins[1].tinQuantum, q.tins[2].tinQuantum = 1024, 1024>>4, 1024>>2
	}
	return 0
}

// reconfigure is cake_reconfigure: tins, the global rate, the buffer
// limit; tins no longer in use are cleared (their packets purged).
func (q *Cake) reconfigure(ctx qdisc.Ctx) {
	ft := q.configTins()
	for c := q.tinCnt; c < cakeMaxTins; c++ {
		q.clearTin(ctx, c)
		q.tins[c].cparams.mtuTime = q.tins[ft].cparams.mtuTime
	}
	q.rateNs, q.rateShft = q.tins[ft].tinRateNs, q.tins[ft].tinRateShft
	switch {
	case q.bufferConfigLimit != 0:
		q.bufferLimit = q.bufferConfigLimit
	case q.rateBps != 0:
		// max_t(u32, t, 4U << 20): t is truncated to u32 first, so a
		// rate x rtt above 4 GB wraps.
		t := q.rateBps * q.interval / (1000000 / 4)
		q.bufferLimit = max(uint32(t), 4<<20)
	default:
		q.bufferLimit = ^uint32(0)
	}
	q.bufferLimit = min(q.bufferLimit, max(uint32(q.limit*q.mtu), q.bufferConfigLimit))
}

// clearTin is cake_clear_tin: discard every packet of a tin. It leaves
// cur_tin/cur_flow pointing into that tin, as the kernel does.
func (q *Cake) clearTin(ctx qdisc.Ctx, tin int) {
	q.curTin = uint16(tin)
	for q.curFlow = 0; q.curFlow < cakeQueues; q.curFlow++ {
		for {
			p, ok := q.dequeueOne()
			if !ok {
				break
			}
			if ctx == nil {
				panic("cake: clearing a tin with packets before init")
			}
			ctx.Work(qdisc.WorkDequeue, 1)
			// kfree_skb_reason alone: cake_clear_tin counts no
			// qstats drop (tc -s's dropped leaves the purge out).
			ctx.Drop(p.Handle, skb.DropQueuePurge)
		}
	}
	q.curFlow = 0
}

// cakeEwma is cake_ewma: avg -= avg >> shift; avg += sample >> shift.
func cakeEwma(avg, sample uint64, shift uint) uint64 {
	avg -= avg >> shift
	avg += sample >> shift
	return avg
}

// overhead is cake_overhead -> cake_calc_overhead: the length the shaper
// charges for a packet (per segment for GSO).
func (q *Cake) overhead(p *skb.Packet) uint32 {
	const off = 14 // skb_network_offset on Ethernet
	q.avgNetoff = uint32(cakeEwma(uint64(q.avgNetoff), off<<16, 8))
	segs := uint32(max(p.GSOSegs, 1))
	l := uint32(p.Len) / segs
	if q.rateFlags&flagOverhead != 0 {
		l -= off
	}
	q.maxNetlen = max(q.maxNetlen, uint16(l))
	q.minNetlen = min(q.minNetlen, uint16(l))
	l = uint32(int32(l) + int32(q.rateOverhead))
	l = max(l, uint32(q.rateMpu))
	switch q.atmMode {
	case atmATM:
		l = (l + 47) / 48 * 53
	case atmPTM:
		l += (l + 63) / 64
	}
	q.maxAdjlen = max(q.maxAdjlen, uint16(l))
	q.minAdjlen = min(q.minAdjlen, uint16(l))
	return l * segs
}

// Diffserv maps (sch_cake.c), DSCP -> tin.
var (
	precedenceMap = [64]uint8{
		0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
		2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
		4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5,
		6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7}
	diffserv8Map = [64]uint8{
		2, 0, 1, 2, 4, 2, 2, 2, 1, 2, 1, 2, 1, 2, 1, 2,
		5, 2, 4, 2, 4, 2, 4, 2, 3, 2, 3, 2, 3, 2, 3, 2,
		6, 2, 3, 2, 3, 2, 3, 2, 6, 2, 2, 2, 6, 2, 6, 2,
		7, 2, 2, 2, 2, 2, 2, 2, 7, 2, 2, 2, 2, 2, 2, 2}
	diffserv4Map = [64]uint8{
		0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
		2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0,
		3, 0, 2, 0, 2, 0, 2, 0, 3, 0, 0, 0, 3, 0, 3, 0,
		3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0}
	diffserv3Map = [64]uint8{
		0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0,
		2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}
	besteffortMap [64]uint8
	normalOrder   = [8]uint8{0, 1, 2, 3, 4, 5, 6, 7}
	bulkOrder     = [4]uint8{1, 0, 2, 3}
)

// selectTin is cake_select_tin: the fwmark, then skb->priority under
// this qdisc's major, then the DSCP pick the tin.
func (q *Cake) selectTin(p *skb.Packet) int {
	dscp := p.DSCP & 63
	if q.rateFlags&flagWash != 0 {
		p.DSCP = 0 // wash: clear the DSCP, keep ECN
	}
	switch {
	case q.tinMode == besteffort:
		return 0
	case q.fwmarkMask != 0 && p.Mark&q.fwmarkMask != 0 && int((p.Mark&q.fwmarkMask)>>q.fwmarkShft) <= q.tinCnt:
		// The fwmark's masked value, 1-based, names the tin.
		return int(q.tinOrder[(p.Mark&q.fwmarkMask)>>q.fwmarkShft-1])
	}
	if c, ok := qdisc.PriorityClass(p.Priority, q.handleMajor, uint32(q.tinCnt)); ok {
		// "priority 8001:2" steers into this cake's second tin.
		return int(q.tinOrder[c])
	}
	tin := int(q.tinIndex[dscp])
	if tin >= q.tinCnt {
		tin = 0
	}
	return tin
}

// classify is cake_classify: the filters attached to the qdisc, if any,
// run first; a drop action drops the packet (ok false), and a result
// overrides cake_hash's flow with its minor and its hosts with its major
// where they are at most CAKE_QUEUES (no filter matching overrides
// nothing). Then cake_select_tin picks the tin (a filter's skbedit of
// skb->priority or the mark steers it) and cake_hash the queue.
func (q *Cake) classify(ctx qdisc.Ctx, p *skb.Packet) (tin int, idx uint16, ok bool) {
	var flow, host uint16
	at := qdisc.MakeClassID(uint16(q.handleMajor), 0)
	if fc, filtered := qdisc.Filters(ctx, at); filtered {
		q.classified = *p
		r := fc.Classify(&q.classified, at)
		*p = q.classified // an action's skbedit
		switch r.Verdict {
		case qdisc.VerdictShot:
			return 0, 0, false
		case qdisc.VerdictClass:
			if m := r.Class.Minor(); m <= cakeQueues {
				flow = m
			}
			if uint32(r.Class)&0xFFFF0000 <= cakeQueues<<16 {
				host = r.Class.Major()
			}
		}
	}
	tin = q.selectTin(p)
	return tin, q.hash(ctx, q.tins[tin], p, flow, host), true
}

// flowHashFromKeys stands in for flow_hash_from_keys (siphash of the
// dissected keys with the boot-time hashrnd).
func (q *Cake) flowHashFromKeys(src, dst uint32, sport, dport uint16, proto uint8) uint32 {
	x := uint64(src)<<32 ^ uint64(dst) ^ uint64(sport)<<48 ^ uint64(dport)<<16 ^ uint64(proto)<<8 ^ uint64(q.hashrnd)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return uint32(x)
}

func cakeDsrc(mode int) bool { return mode&flowDualSrc == flowDualSrc }
func cakeDdst(mode int) bool { return mode&flowDualDst == flowDualDst }

// hash is cake_hash: the flow's queue in tin b, with set-associative
// placement and, for the dual/triple modes, host table slots. A filter's
// overrides (cake_classify: nonzero, 1-based) stand in for the flow's
// hash and for both hosts' hashes, and spare computing them.
func (q *Cake) hash(ctx qdisc.Ctx, b *cakeTin, p *skb.Packet, flowOverride, hostOverride uint16) uint16 {
	mode := q.flowMode & flowMask
	if mode == flowNone {
		return 0
	}
	hashFlows := flowOverride == 0 && mode&flowFlows != 0
	hashHosts := hostOverride == 0 && mode&flowHosts != 0
	useSkbHash := p.Hash != 0
	var flowHash, srchostHash, dsthostHash uint32
	if hashHosts || (hashFlows && !useSkbHash) {
		// skb_flow_dissect_flow_keys and one flow_hash_from_keys: the
		// unit qdisc_hash prices (costs.go).
		ctx.Work(qdisc.WorkHash, 1)
		if hashHosts {
			// Two flow_hash_from_keys (siphash) of the keys just
			// dissected, no second dissection; with the flow's own
			// hash (no L4 skb hash) three in all. The unit above
			// has one of them.
			dsthostHash = q.flowHashFromKeys(0, p.Keys.Dst, 0, 0, 0)
			srchostHash = q.flowHashFromKeys(p.Keys.Src, 0, 0, 0, 0)
			more := 1
			if hashFlows && !useSkbHash {
				more++
			}
			ctx.Work(qdisc.WorkSiphash, more)
		}
		if hashFlows && !useSkbHash {
			flowHash = q.flowHashFromKeys(p.Keys.Src, p.Keys.Dst, p.Keys.SrcPort, p.Keys.DstPort, p.Keys.Proto)
		}
	}
	switch {
	case flowOverride != 0:
		flowHash = uint32(flowOverride) - 1
	case useSkbHash && mode&flowFlows != 0:
		// Only a flow mode takes the skb hash as the flow's: the
		// host-only modes keep flow_hash 0 and isolate by the host
		// hashes alone (Toke's fix to b0c19ed6088a).
		flowHash = p.Hash
	}
	if hostOverride != 0 {
		dsthostHash = uint32(hostOverride) - 1
		srchostHash = uint32(hostOverride) - 1
	}
	if mode&flowFlows == 0 {
		if mode&flowSrcIP != 0 {
			flowHash ^= srchostHash
		}
		if mode&flowDstIP != 0 {
			flowHash ^= dsthostHash
		}
	}
	reduced := uint16(flowHash % cakeQueues)
	if b.tags[reduced] == flowHash && b.flows[reduced].set != setNone {
		b.wayDirects++
		return reduced
	}
	inner := reduced % cakeSetWays
	outer := reduced - inner
	allocSrc, allocDst := false, false
	k := inner
	found := false
	for i := 0; i < cakeSetWays; i, k = i+1, (k+1)%cakeSetWays {
		ctx.Work(qdisc.WorkFlowScan, 1)
		if b.tags[outer+k] == flowHash {
			if i != 0 {
				b.wayHits++
			}
			if b.flows[outer+k].set == setNone {
				allocSrc, allocDst = cakeDsrc(mode), cakeDdst(mode)
			}
			found = true
			break
		}
	}
	if !found {
		for i := 0; i < cakeSetWays; i, k = i+1, (k+1)%cakeSetWays {
			ctx.Work(qdisc.WorkFlowScan, 1)
			if b.flows[outer+k].set == setNone {
				b.wayMisses++
				allocSrc, allocDst = cakeDsrc(mode), cakeDdst(mode)
				found = true
				break
			}
		}
	}
	if !found {
		// No empty queue: take over the original one (a collision).
		b.wayCollisions++
		if b.flows[outer+k].set == setBulk {
			q.decBulkHosts(b, &b.flows[outer+k])
		}
		allocSrc, allocDst = cakeDsrc(mode), cakeDdst(mode)
	}
	reduced = outer + k
	b.tags[reduced] = flowHash
	if allocSrc {
		b.flows[reduced].srchost = q.hostSlot(ctx, b, srchostHash, true)
		if h := &b.hosts[b.flows[reduced].srchost]; b.flows[reduced].set == setBulk && h.srchostBulkFlowCount < cakeQueues {
			h.srchostBulkFlowCount++ // cake_inc_srchost_bulk_flow_count
		}
	}
	if allocDst {
		b.flows[reduced].dsthost = q.hostSlot(ctx, b, dsthostHash, false)
		if h := &b.hosts[b.flows[reduced].dsthost]; b.flows[reduced].set == setBulk && h.dsthostBulkFlowCount < cakeQueues {
			h.dsthostBulkFlowCount++ // cake_inc_dsthost_bulk_flow_count
		}
	}
	return reduced
}

// hostSlot finds or takes the host-table slot for a host hash (the
// found_src / found_dst blocks of cake_hash).
func (q *Cake) hostSlot(ctx qdisc.Ctx, b *cakeTin, h uint32, src bool) uint16 {
	idx := uint16(h % cakeQueues)
	inner := idx % cakeSetWays
	outer := idx - inner
	k := inner
	for i := 0; i < cakeSetWays; i, k = i+1, (k+1)%cakeSetWays {
		ctx.Work(qdisc.WorkFlowScan, 1)
		tag := b.hosts[outer+k].dsthostTag
		if src {
			tag = b.hosts[outer+k].srchostTag
		}
		if tag == h {
			return outer + k
		}
	}
	for i := 0; i < cakeSetWays; i, k = i+1, (k+1)%cakeSetWays {
		ctx.Work(qdisc.WorkFlowScan, 1)
		n := b.hosts[outer+k].dsthostBulkFlowCount
		if src {
			n = b.hosts[outer+k].srchostBulkFlowCount
		}
		if n == 0 {
			break
		}
	}
	if src {
		b.hosts[outer+k].srchostTag = h
	} else {
		b.hosts[outer+k].dsthostTag = h
	}
	return outer + k
}
