package netdev

import (
	"fmt"
	"math"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// The receive side of a NIC and the forwarding path: frames arrive from
// the wire, RSS steers each to an RX queue, the NIC writes it into a
// posted buffer of that queue's ring (or drops it when the ring has none:
// rx_missed_errors), raises the queue's MSI-X vector (moderated), and the
// vector's NAPI poll cleans the ring on the IRQ CPU in NET_RX_SOFTIRQ:
// napi_build_skb, napi_gro_receive, netif_receive_skb_list, ip_rcv,
// ip_forward, neigh_output and __dev_queue_xmit out of the egress device.
//
// The rings are modelled here, in the host, from the driver's RxInfo
// (ring size, buffer size, refill batching, RSS table, moderation): the
// per-frame work is the host's, so a driver plugin is called once per
// NAPI poll (its TX clean), never per frame. Frames are taken from the
// traffic generator lazily: a queue's arrivals up to time t are taken
// when its CPU polls the ring at t (or a report snapshot reaches t). That
// is exact, because only the polling CPU gives buffers back to the NIC,
// so whether a frame finds a free descriptor depends only on arrivals and
// on refills at earlier poll times.

// RxStream is one RX queue's share of the wire: the frames RSS steers to
// the queue, in arrival order. The traffic generator (framework/workload)
// implements it.
type RxStream interface {
	// Peek is the arrival time and flow (an index into RxConfig.Flows)
	// of the next frame not yet taken; ok is false when there is none.
	Peek() (at sim.Time, flow int32, ok bool)
	// Pop takes the frame Peek showed.
	Pop()
}

// RxConfig connects a traffic generator to a device's RX port.
type RxConfig struct {
	// Flows are the 5-tuples the generator sends (IPv4 UDP).
	Flows []skb.FlowKeys
	// FrameLen is skb->len of every frame: the L2 frame without FCS.
	FrameLen uint32
	DSCP     uint8
	// Streams makes each RX queue's arrival stream from the flows RSS
	// steers to it (queueFlows[q] lists flow indices, ascending).
	Streams func(queueFlows [][]int32) ([]RxStream, error)
	// Out is the device the frames are forwarded out of: the RX device
	// itself (the seeds' DUT sends back out of the port it receives on)
	// or another.
	Out *Device
}

// groNormalBatch is net.core.gro_normal_batch's default: napi_gro_receive
// hands GRO misses up the stack in lists of 8 (gro_normal_one).
const groNormalBatch = 8

// netdevBudgetUsecs is net.core.netdev_budget_usecs's default, 2 * USEC_PER_SEC / HZ.
const netdevBudgetUsecs = 2 * sim.Millisecond

// neverAt is "no such time".
const neverAt = sim.Time(math.MaxInt64)

// rxFrame is a frame the NIC wrote into a descriptor, not yet cleaned.
type rxFrame struct {
	at   sim.Time
	flow int32
}

// rxRing is one RX queue's descriptor ring as the NIC and the driver
// share it: buffers posted to the NIC (hwFree), frames written back
// (ready, in order), cleaned descriptors not yet given back (unrefilled).
// hwFree + ready + unrefilled = size - 1: the driver fills
// ICE_DESC_UNUSED / I40E_DESC_UNUSED at open, one slot short of full.
type rxRing struct {
	idx, vec, cpu int
	size          int
	hwFree        int
	unrefilled    int
	fifo          []rxFrame // circular, len size
	head, n       int
	src           RxStream
	upTo          sim.Time // arrivals taken through here
	// batch is the gro_normal list; per ring, as the stack below may
	// let other CPUs run (and poll other rings) before it returns.
	batch []*skb.SKB

	// occupancy: frames written back and not cleaned, integrated over time
	areaFrom sim.Time
	area     float64

	packets, bytes, dropped, polls, refills, maxUsed uint64
	maxClean                                         int // most frames one clean took
}

// rxVec is one MSI-X vector of a device with RX queues: its interrupt
// enable (INTENA, cleared when it fires, set again by napi_complete_done:
// ice_enable_interrupt), the causes waiting while it is masked, and its
// RX moderation: a static ITR, or the RX container's DIM.
type rxVec struct {
	rings   []*rxRing
	enabled bool
	txAt    sim.Time // a TX cause latched while masked (neverAt: none)
	lastIRQ sim.Time
	itr     sim.Time
	dim     *driver.DIM // the RX container's dim (rx.dim, rx_dim); nil when static
	// own is the driver's own moderation (RxInfo.OwnITR), nil if not;
	// ownPkts and ownBytes are the RX rings' counts at its last call,
	// ownChanges the RX ITR changes it made.
	own                           driver.RxModerator
	ownPkts, ownBytes, ownChanges uint64
	pendAt                        sim.Time // a scheduled interrupt (neverAt: none)
	gen                           uint64
	irqs                          uint64 // the vector's interrupts: q_vector->total_events
	// fire and irq are rxArm's event and the MSI-X handler it raises,
	// made once (a closure an interrupt was an allocation).
	fire func(gen uint64)
	irq  func(c *sim.CPU)
}

// rxPort is a device's receive side.
type rxPort struct {
	cfg      RxConfig
	rings    []*rxRing
	vecs     []*rxVec
	hash     []uint32 // RSS hash of each flow
	truesize uint32
	bufSize  int
	refill   int
}

// SoftnetStat is one CPU's /proc/net/softnet_stat row, the columns the
// model has: processed (__netif_receive_skb_core), dropped
// (enqueue_to_backlog's drops), time_squeeze (net_rx_action out of
// budget or time), plus NAPI polls it ran; InputQlen and ProcessQlen
// (softnet_seq_show's input_qlen and process_qlen, whose sum is its
// backlog_len) are the backlog's queues now.
type SoftnetStat struct {
	Processed, Dropped, TimeSqueeze, Polls uint64
	InputQlen, ProcessQlen                 uint64
}

// Softnet is CPU cpu's softnet_stat counters.
func (n *Net) Softnet(cpu int) SoftnetStat {
	st := n.softnet[cpu]
	if b := n.sd[cpu].backlog; b != nil {
		st.InputQlen, st.ProcessQlen = uint64(len(b.input)), uint64(len(b.process)-b.head)
	}
	return st
}

// netdevRSSKeyLen is NETDEV_RSS_KEY_LEN.
const netdevRSSKeyLen = 52

// rssKey is netdev_rss_key_fill: one random key per boot, shared by
// every device (get_random_once); here from the run's seed.
func (n *Net) rssKey() []byte {
	if n.rssKeyBytes == nil {
		r := n.E.Rand("netdev/rss_key")
		n.rssKeyBytes = make([]byte, netdevRSSKeyLen)
		for i := range n.rssKeyBytes {
			n.rssKeyBytes[i] = byte(r.Uint32())
		}
	}
	return n.rssKeyBytes
}

// Toeplitz is the Microsoft RSS hash the Intel NICs compute: for every
// set bit of the input (most significant first), XOR in the 32 key bits
// starting at that bit position. key must be at least len(in)+4 bytes.
func Toeplitz(key, in []byte) uint32 {
	var h uint32
	win := uint32(key[0])<<24 | uint32(key[1])<<16 | uint32(key[2])<<8 | uint32(key[3])
	for i, b := range in {
		next := key[i+4]
		for bit := 7; bit >= 0; bit-- {
			if b&(1<<bit) != 0 {
				h ^= win
			}
			win = win<<1 | uint32(next>>bit&1)
		}
	}
	return h
}

// RSSHash is the hash the NIC computes for an IPv4 frame: Toeplitz over
// source address, destination address, source port, destination port
// (the 4-tuple ice and i40e hash TCP and UDP over by default), network
// byte order; other protocols (ICMP) over the two addresses only, as
// their default "other IPv4" hash fields are (ICE_FLOW_HASH_IPV4).
func RSSHash(key []byte, k skb.FlowKeys) uint32 {
	in := [12]byte{byte(k.Src >> 24), byte(k.Src >> 16), byte(k.Src >> 8), byte(k.Src),
		byte(k.Dst >> 24), byte(k.Dst >> 16), byte(k.Dst >> 8), byte(k.Dst),
		byte(k.SrcPort >> 8), byte(k.SrcPort), byte(k.DstPort >> 8), byte(k.DstPort)}
	if k.Proto != 0 && k.Proto != 6 && k.Proto != 17 {
		return Toeplitz(key, in[:8])
	}
	return Toeplitz(key, in[:])
}

// RSSQueue is the RX queue of a hash: the low bits index the indirection
// table, which ethtool_rxfh_indir_default fills round robin (i % nq).
func RSSQueue(hash uint32, lutSize, nq int) int {
	return int(hash&uint32(lutSize-1)) % nq
}

// AttachRx connects a traffic generator to d's RX port: d must have been
// built with RX queues (DeviceSpec.RxQueues) by a driver with a receive
// side. Call before the engine runs.
func (n *Net) AttachRx(d *Device, cfg RxConfig) error {
	info := d.Info.Rx
	if info == nil || d.numRxQ == 0 {
		return fmt.Errorf("device %s: no receive side (driver %s, %d RX queues)", d.Name, d.driverName, d.numRxQ)
	}
	if d.rx != nil {
		return fmt.Errorf("device %s: a traffic generator is already attached", d.Name)
	}
	if cfg.Out == nil {
		return fmt.Errorf("device %s: no egress device to forward to", d.Name)
	}
	if len(cfg.Flows) == 0 || cfg.Streams == nil {
		return fmt.Errorf("device %s: a traffic generator without flows", d.Name)
	}
	if err := info.Validate(d.numRxQ); err != nil {
		return fmt.Errorf("device %s: driver %s: %w", d.Name, d.driverName, err)
	}
	p := &rxPort{cfg: cfg, truesize: skb.TruesizeFrag(info.BufSize), bufSize: info.BufSize, refill: info.RefillBatch}
	key := n.rssKey()
	queueFlows := make([][]int32, d.numRxQ)
	p.hash = make([]uint32, len(cfg.Flows))
	for i, k := range cfg.Flows {
		h := RSSHash(key, k)
		p.hash[i] = h
		q := RSSQueue(h, info.LUTSize, d.numRxQ)
		queueFlows[q] = append(queueFlows[q], int32(i))
	}
	streams, err := cfg.Streams(queueFlows)
	if err != nil {
		return err
	}
	if len(streams) != d.numRxQ {
		return fmt.Errorf("device %s: %d arrival streams for %d RX queues", d.Name, len(streams), d.numRxQ)
	}
	var own driver.RxModerator
	if info.OwnITR {
		m, ok := d.Drv.(driver.RxModerator)
		if !ok {
			return fmt.Errorf("device %s: driver %s says its RX moderation is its own but has none (RxComplete)", d.Name, d.driverName)
		}
		own = m
	}
	p.vecs = make([]*rxVec, len(d.napis))
	itr := info.StartITR()
	for v := range p.vecs {
		x := &rxVec{enabled: true, txAt: neverAt, lastIRQ: -itr, itr: itr, pendAt: neverAt, own: own}
		if len(info.ITRProfile) > 0 {
			x.dim = driver.NewDIM(info.DIMStart, len(info.ITRProfile))
		}
		p.vecs[v] = x
	}
	for q := 0; q < d.numRxQ; q++ {
		v := info.QueueVec[q]
		if v < 0 || v >= len(d.napis) {
			return fmt.Errorf("device %s: RX queue %d on vector %d of %d", d.Name, q, v, len(d.napis))
		}
		r := &rxRing{idx: q, vec: v, cpu: d.vecCPU[v], size: info.RingSize, hwFree: info.RingSize - 1,
			fifo: make([]rxFrame, info.RingSize), src: streams[q]}
		p.rings = append(p.rings, r)
		p.vecs[v].rings = append(p.vecs[v].rings, r)
	}
	d.rx = p
	n.rxDevs = append(n.rxDevs, d)
	for v := range p.vecs {
		n.rxArm(d, v)
	}
	return nil
}

// RxCatchUp takes every RX queue's arrivals up to t (a report snapshot:
// offered and RX drops are then current). A queue already past t is left
// alone; its CPU took them.
func (n *Net) RxCatchUp(t sim.Time) {
	for _, d := range n.rxDevs {
		for _, r := range d.rx.rings {
			n.rxAdvance(d, r, t)
		}
	}
}

// rxAdvance is the NIC receiving: every frame of r's stream that arrived
// by t is written into a posted buffer, or dropped when there is none.
func (n *Net) rxAdvance(d *Device, r *rxRing, t sim.Time) {
	if t <= r.upTo {
		return
	}
	var missed uint64
	for {
		at, flow, ok := r.src.Peek()
		if !ok || at > t {
			break
		}
		r.src.Pop()
		r.accrue(at)
		n.Offered++
		if r.hwFree == 0 {
			missed++
			continue
		}
		r.hwFree--
		i := r.head + r.n
		if i >= len(r.fifo) {
			i -= len(r.fifo)
		}
		r.fifo[i] = rxFrame{at: at, flow: flow}
		r.n++
		n.rxHeld++
		if uint64(r.n) > r.maxUsed {
			r.maxUsed = uint64(r.n)
		}
	}
	r.accrue(t)
	r.upTo = t
	if missed > 0 {
		r.dropped += missed
		n.Drops[skb.DropRxMissed] += missed
	}
}

// accrue integrates the ring's occupancy up to t.
func (r *rxRing) accrue(t sim.Time) {
	if t > r.areaFrom {
		r.area += float64(r.n) * float64(t-r.areaFrom)
		r.areaFrom = t
	}
}

// rxRefill gives the cleaned descriptors' buffers back to the NIC
// (ice_alloc_rx_bufs / i40e_alloc_rx_buffers: a page_pool buffer per
// descriptor, then one tail write). Frames that arrived before the
// refill saw the ring as it was.
func (n *Net) rxRefill(c *sim.CPU, d *Device, r *rxRing) {
	if r.unrefilled == 0 {
		return
	}
	n.rxAdvance(d, r, c.Now())
	c.Spend(n.E.Costs.RxRefill * int64(r.unrefilled))
	c.Spend(n.E.Costs.Doorbell) // writel(val, rx_ring->tail)
	r.hwFree += r.unrefilled
	r.unrefilled = 0
	r.refills++
}

// rxClean is the driver's RX clean of one ring (ice_clean_rx_irq,
// i40e_clean_rx_irq, idpf_rx_splitq_clean) on CPU c, at most budget
// frames: each becomes an skb around its buffer (napi_build_skb, so its
// truesize is the buffer's), goes through napi_gro_receive, and every
// gro_normal_batch of them up the stack to be forwarded.
func (n *Net) rxClean(c *sim.CPU, d *Device, r *rxRing, budget int) int {
	p := d.rx
	costs := n.E.Costs
	n.rxAdvance(d, r, c.Now())
	r.polls++
	batch := r.batch[:0]
	cleaned := 0
	for cleaned < budget {
		// i40e_clean_rx_irq: "return some buffers to hardware", at the
		// top of the loop, before the next descriptor is read.
		if p.refill > 0 && r.unrefilled >= p.refill {
			n.rxRefill(c, d, r)
		}
		if r.n == 0 {
			// The next descriptor's DD bit, read now: frames written
			// while this poll ran are cleaned in it too.
			n.rxAdvance(d, r, c.Now())
			if r.n == 0 {
				break
			}
		}
		f := r.fifo[r.head]
		r.head++
		if r.head == len(r.fifo) {
			r.head = 0
		}
		r.accrue(max(c.Now(), r.areaFrom))
		r.n--
		n.rxHeld--
		cleaned++
		r.unrefilled++
		c.Spend(costs.RxClean)
		ref := n.napiSkbCacheGet(c) // napi_build_skb's sk_buff
		s := n.Pool.Get()
		s.Skbuff = ref
		s.Len, s.TrueSize = p.cfg.FrameLen, p.truesize
		s.Keys, s.Hash = p.cfg.Flows[f.flow], p.hash[f.flow]
		s.DSCP = p.cfg.DSCP
		s.Sock, s.GSOSegs = -1, 1
		s.RxQueue = uint16(r.idx + 1) // skb_record_rx_queue
		s.SenderCPU, s.Born = int16(c.ID), f.at
		n.ownSkb(c, s)
		r.packets++
		r.bytes += uint64(s.Len)
		c.Spend(costs.GROReceive) // napi_gro_receive: no GRO for these, gro_normal_one
		batch = append(batch, s)
		if len(batch) == groNormalBatch {
			n.netifReceiveSkbList(c, d, batch, p.cfg.Out)
			batch = batch[:0]
		}
	}
	r.maxClean = max(r.maxClean, cleaned)
	if p.refill == 0 {
		n.rxRefill(c, d, r)
	}
	if len(batch) > 0 { // gro_normal_list at the end of the poll
		n.netifReceiveSkbList(c, d, batch, p.cfg.Out)
	}
	r.batch = batch[:0]
	return cleaned
}

// netifReceiveSkbList is netif_receive_skb_list_internal for a list of
// forwarded IPv4 frames: each goes through __netif_receive_skb_core and
// ip_list_rcv (ip_rcv_core, the route lookup), then, one by one,
// ip_sublist_rcv_finish -> dst_input = ip_forward -> ip_output ->
// neigh_output -> dev_queue_xmit out of out. A frame the ingress block
// drops (sch_handle_ingress, in __netif_receive_skb_core before the
// protocol handlers) goes no further.
func (n *Net) netifReceiveSkbList(c *sim.CPU, d *Device, batch []*skb.SKB, out *Device) {
	costs := n.E.Costs
	sn := &n.softnet[c.ID]
	kept := batch[:0]
	for _, s := range batch {
		c.Spend(costs.NetifReceiveSkb)
		sn.Processed++
		if s.Redir&skb.SkipClassify != 0 {
			s.Redir &^= skb.SkipClassify // skb_skip_tc_classify: past the taps and sch_handle_ingress
		} else if n.schHandleIngress(c, d, s) {
			continue
		}
		c.Spend(costs.IPRcv)
		kept = append(kept, s)
	}
	for _, s := range kept {
		c.Spend(costs.IPForward + costs.NeighOutput)
		n.DevQueueXmit(c, out, s)
	}
}

// netifReceiveSkb is netif_receive_skb of one frame received on d (an
// ifb giving back what d's ingress block redirected to it): the
// forwarding path of netifReceiveSkbList, out of d's forwarding device.
func (n *Net) netifReceiveSkb(c *sim.CPU, d *Device, s *skb.SKB) {
	if n.deliverLocalSkb(c, s) {
		return // a packet for the host's own sockets
	}
	if d.rx == nil {
		// A copy the ifb's qdisc made of a packet for the host's
		// sockets (netem's duplicate): the socket would take it as a
		// duplicate segment; the model ends it here.
		n.kfreeSkb(c, s, skb.DropNotSpecified)
		return
	}
	one := &n.sd[c.ID].rxOne
	one[0] = s
	n.netifReceiveSkbList(c, d, one[:], d.rx.cfg.Out)
	one[0] = nil
}

// rxPoll is the RX half of the vector's NAPI poll (ice_napi_poll after
// the TX clean): the budget shared by the vector's RX rings, at least 1
// each; done when every ring cleaned less than its share.
func (n *Net) rxPoll(c *sim.CPU, d *Device, vec int) (work int, done bool) {
	rings := d.rx.vecs[vec].rings
	per := napiWeight
	if len(rings) > 1 {
		per = max(napiWeight/len(rings), 1)
	}
	done = true
	for _, r := range rings {
		cl := n.rxClean(c, d, r, per)
		work += cl
		if cl >= per {
			done = false
		}
	}
	return work, done
}

// rxRaiseTx is a TX cause of vector v (the driver's moderated TX
// interrupt): it fires at once if the vector's interrupt is enabled, or
// waits, latched, for napi_complete_done to enable it again.
func (n *Net) rxRaiseTx(d *Device, v int, at sim.Time) {
	x := d.rx.vecs[v]
	x.txAt = min(x.txAt, at)
	if x.enabled {
		n.rxArm(d, v)
	}
}

// rxComplete is napi_complete_done on CPU c on a vector of a device
// with RX rings: the RX DIM's sample (rxNetDim) or the driver's own
// moderation (rxOwnITR), then ice_enable_interrupt. A latched TX cause
// or a frame already written back fires the interrupt again (the RX one
// no sooner than the ITR).
func (n *Net) rxComplete(c *sim.CPU, d *Device, v int) {
	x := d.rx.vecs[v]
	switch {
	case len(x.rings) == 0:
	case x.dim != nil:
		n.rxNetDim(c, d, x)
	case x.own != nil:
		rxOwnITR(c, x, v)
	}
	x.enabled = true
	n.rxArm(d, v)
}

// rxNetDim is the RX half of ice_net_dim and idpf_net_dim: a sample of
// the vector's interrupts (total_events, every cause's) and the packets
// and bytes its RX rings have cleaned (__ice_update_sample sums the
// container's rings), taken after the whole poll, as the drivers call it
// once napi_complete_done succeeds. A new profile's ITR applies at once
// (the kernel writes it from ice_rx_dim_work / idpf_rx_dim_work: the
// model has no workqueue, as on the TX side).
func (n *Net) rxNetDim(c *sim.CPU, d *Device, x *rxVec) {
	pkts, bytes := x.cleaned()
	if x.dim.Sample(driver.DIMSample{Time: c.Now(), Pkts: uint32(pkts), Bytes: uint32(bytes), Events: uint16(x.irqs)}) {
		x.itr = d.Info.Rx.ProfileITR(x.dim.ProfileIx)
	}
}

// cleaned is what the vector's RX rings have cleaned so far, summed (the
// RX container's counts).
func (x *rxVec) cleaned() (pkts, bytes uint64) {
	for _, r := range x.rings {
		pkts += r.packets
		bytes += r.bytes
	}
	return pkts, bytes
}

// rxOwnITR is the driver's own moderation at napi_complete_done
// (i40e_update_enable_itr): it is given what the vector's RX rings
// cleaned since its last call, the RX container's totals, and returns
// the RX interval, which applies from this re-enable on.
func rxOwnITR(c *sim.CPU, x *rxVec, v int) {
	pkts, bytes := x.cleaned()
	itr := x.own.RxComplete(c.Now(), v, pkts-x.ownPkts, bytes-x.ownBytes)
	x.ownPkts, x.ownBytes = pkts, bytes
	if itr != x.itr {
		x.itr = itr
		x.ownChanges++
	}
}

// rxArm schedules vector v's next interrupt while it is enabled: the
// earlier of a latched TX cause and the next frame on its RX rings (no
// sooner than ITR after the last interrupt).
func (n *Net) rxArm(d *Device, v int) {
	x := d.rx.vecs[v]
	if !x.enabled {
		return
	}
	rxAt := neverAt
	for _, r := range x.rings {
		if r.n > 0 {
			rxAt = min(rxAt, r.fifo[r.head].at)
		} else if at, _, ok := r.src.Peek(); ok {
			rxAt = min(rxAt, at)
		}
	}
	if rxAt != neverAt {
		rxAt = max(rxAt, x.lastIRQ+x.itr)
	}
	at := min(x.txAt, rxAt)
	if at == neverAt || at >= x.pendAt {
		return
	}
	x.gen++
	x.pendAt = at
	if x.fire == nil {
		nx := d.napis[v]
		x.irq = func(c *sim.CPU) { n.napiSchedule(c, nx) } // the MSI-X handler: napi_schedule_irqoff
		x.fire = func(gen uint64) {
			if x.gen != gen || !x.enabled {
				return
			}
			now := n.E.Now()
			x.enabled, x.pendAt, x.txAt, x.lastIRQ = false, neverAt, neverAt, now
			x.irqs++
			n.E.RaiseIRQ(n.E.CPUs[d.vecCPU[v]], now, x.irq)
		}
	}
	n.E.AtGen(at, x.fire, x.gen)
}

// RxQueueStats is one RX queue's counters (ethtool -S and the model's).
type RxQueueStats struct {
	Queue, Vector, CPU int
	Packets, Bytes     uint64 // cleaned
	Dropped            uint64 // frames the NIC had no buffer for
	Polls, Refills     uint64
	Irqs               uint64 // interrupts of the queue's vector
	// ITR is the vector's RX interval now; DIMChanges counts the RX
	// DIM's profile changes, or the RX ITR changes of a driver's own
	// moderation (0 when static).
	ITR        sim.Time
	DIMChanges uint64
	RingSize   int
	Used       int     // descriptors holding frames, now
	MaxUsed    uint64  // the most seen at once
	AvgUsed    float64 // time-averaged
	// PacketsKey and BytesKey are the driver's ethtool -S names.
	PacketsKey, BytesKey string
}

// RxQueues reports d's RX queues (nil without a receive side), their
// arrivals taken up to now.
func (n *Net) RxQueues(d *Device, now sim.Time) []RxQueueStats {
	if d.rx == nil {
		return nil
	}
	info := d.Info.Rx
	var out []RxQueueStats
	for _, r := range d.rx.rings {
		n.rxAdvance(d, r, now)
		st := RxQueueStats{Queue: r.idx, Vector: r.vec, CPU: r.cpu, Packets: r.packets, Bytes: r.bytes,
			Dropped: r.dropped, Polls: r.polls, Refills: r.refills, Irqs: d.rx.vecs[r.vec].irqs,
			ITR: d.rx.vecs[r.vec].itr, RingSize: r.size, Used: r.n, MaxUsed: r.maxUsed,
			PacketsKey: fmt.Sprintf(info.QueuePackets, r.idx), BytesKey: fmt.Sprintf(info.QueueBytes, r.idx)}
		if x := d.rx.vecs[r.vec]; x.dim != nil {
			st.DIMChanges = x.dim.Changes
		} else if x.own != nil {
			st.DIMChanges = x.ownChanges
		}
		if r.areaFrom > 0 {
			st.AvgUsed = r.area / float64(r.areaFrom)
		}
		out = append(out, st)
	}
	return out
}

// RxPortDropped is d's port drop counter as ethtool -S names it, and its
// value (every RX queue's missed frames).
func (n *Net) RxPortDropped(d *Device) (string, uint64) {
	if d.rx == nil {
		return "", 0
	}
	var t uint64
	for _, r := range d.rx.rings {
		t += r.dropped
	}
	return d.Info.Rx.PortDropped, t
}

// RxTruesize is skb->truesize of d's received frames (0 without RX).
func (d *Device) RxTruesize() uint32 {
	if d.rx == nil {
		return 0
	}
	return d.rx.truesize
}

// RxQueueCount is the number of RX queues d was built with.
func (d *Device) RxQueueCount() int { return d.numRxQ }
