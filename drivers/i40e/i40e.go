// Package i40e models the Intel XXV710 (i40e, 700 series) TX path: a
// descriptor ring with i40e_maybe_stop_tx flow control, BQL through the
// plain netdev_tx_sent_queue, the tail written when the queue is stopped
// or xmit_more is clear, the RS (report status) bit only every WB_STRIDE
// packets so that completions become visible in strides, a 25 Gbit wire,
// its own adaptive ITR (i40e_update_enable_itr, itr.go) on each queue
// pair's vector, i40e_clean_tx_irq in NAPI and
// i40e_lan_select_queue. Defaults come from
// drivers/net/ethernet/intel/i40e/i40e_txrx.[ch], i40e.h and i40e_main.c
// (KERNEL-FACTS 5.2).
package i40e

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/khash"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Constants from i40e_txrx.h / i40e.h.
const (
	DefaultNumDescriptors = 512 // I40E_DEFAULT_NUM_DESCRIPTORS
	MinNumDescriptors     = 64  // I40E_MIN_NUM_DESCRIPTORS
	// I40E_MAX_NUM_DESCRIPTORS; aa6908ca (2023) lets I40E_MAC_XL710
	// parts go to I40E_MAX_NUM_DESCRIPTORS_XL710 = 8160, not modelled.
	MaxNumDescriptors = 4096
	ReqDescMultiple   = 32 // I40E_REQ_DESC_MULTIPLE
	maxSkbFrags       = 17 // MAX_SKB_FRAGS
	// DESC_NEEDED = MAX_SKB_FRAGS + 6 (i40e_txrx.h).
	DescNeeded = maxSkbFrags + 6
	// TX_WAKE_THRESHOLD = DESC_NEEDED * 2 (i40e_clean_tx_irq).
	TxWakeThreshold = 2 * DescNeeded
	// WB_STRIDE: the RS bit at most every 4 packets (i40e_tx_map).
	WBStride = 4
	// I40E_DEFAULT_IRQ_WORK: vsi->work_limit, packets per clean.
	DefaultIRQWork = 256
	// I40E_ITR_TX_DEF = I40E_ITR_20K | I40E_ITR_DYNAMIC: 50 us to
	// start with, adaptive.
	DfltTxITR   = 50 * sim.Microsecond
	MaxITR      = 8160 * sim.Microsecond // I40E_MAX_ITR
	DefaultRate = 25_000_000_000         // XXV710: 25 Gbit/s
	// i40e_swdcb_skb_tx_hash's jhash_1word salt.
	swdcbHashSalt = 0xd631614b
	// I40E_MAX_USER_PRIORITY: entries of the ETS priority table.
	maxUserPriority = 8
	// I40E_MAX_TRAFFIC_CLASS.
	maxTrafficClass = 8
)

// Receive side (i40e.h, i40e_txrx.[ch], i40e_main.c).
const (
	// The RX ring's default is I40E_DEFAULT_NUM_DESCRIPTORS too.
	DefaultNumRxDesc = DefaultNumDescriptors
	// MaxRSSQueues is pf->rss_size_max = BIT(rss_table_entry_width):
	// 6 bits on the X710/XXV710 (the X722 has 7).
	MaxRSSQueues = 64
	// LUTSize is the PF's RSS lookup table, I40E_HLUT_ARRAY_SIZE
	// ((I40E_PFQF_HLUT_MAX_INDEX + 1) * 4).
	LUTSize = 512
	// RxBufSize is i40e_rx_frame_truesize with 4 KiB pages: half a page.
	RxBufSize = 2048
	// DfltRxITR is I40E_ITR_RX_DEF = I40E_ITR_20K | I40E_ITR_DYNAMIC,
	// 50 us to start with, adaptive.
	DfltRxITR = 50 * sim.Microsecond
)

func init() {
	driver.Register("i40e", "Intel XXV710 25G (drivers/net/ethernet/intel/i40e)", func() driver.Driver { return &I40E{} })
}

type txRing struct {
	*driver.Ring
	rs     []bool // RS bit on the (last) descriptor at this index
	stride int    // tx_ring->packet_stride
	// wbAt: completed descriptors up to this time have been written back
	// by a forced write-back (i40e_force_wb / WB_ON_ITR), RS or not.
	wbAt  sim.Time
	stats driver.QueueStats

	rsSet, forceWB uint64
}

// I40E is the driver model.
type I40E struct {
	rings []*txRing
	vecs  []driver.Vector
	wire  driver.Wire
	work  int
	// mod is each vector's adaptive ITR; hostRx the vectors whose RX
	// rings the host cleans (it calls RxComplete for them); divisor is
	// i40e_itr_divisor for the link.
	mod     []itrVector
	hostRx  int
	divisor uint32
	costs   *sim.Costs
	// descNeeded and wakeThresh are DESC_NEEDED and TX_WAKE_THRESHOLD
	// for the host's MAX_SKB_FRAGS.
	descNeeded, wakeThresh int

	// DCB (vsi->tc_config with software DCB, not mqprio).
	numTC int
	up2tc [maxUserPriority]int // local_dcbx_config.etscfg.prioritytable
	numQ  int
}

// Init implements driver.Driver. Options (ethtool words): "tx N" ring
// size (rounded up to a multiple of 32), "tx-usecs N" ITR,
// "adaptive-tx on|off" (default on, as I40E_ITR_TX_DEF has
// I40E_ITR_DYNAMIC), "work N" clean budget (vsi->work_limit), "rx N" RX
// ring size, "rx-usecs N", "adaptive-rx on|off" (default on), "dcb-tc
// N" traffic classes (software DCB; default 1), "up2tc
// a,b,c,d,e,f,g,h" the priority -> TC table (default all 0, the IEEE
// default ETS table). With a side adaptive its usecs can only stay at
// the current 50, as __i40e_set_coalesce refuses a change.
func (d *I40E) Init(s driver.Setup, args []string) (driver.Info, error) {
	o := driver.RingOpts{Ring: DefaultNumDescriptors, ITR: DfltTxITR, Work: DefaultIRQWork, Rx: DefaultNumRxDesc, RxITR: DfltRxITR}
	d.numTC = 1
	d.descNeeded = s.SkbFrags() + 6
	d.wakeThresh = 2 * d.descNeeded
	var ad driver.Adaptive
	err := driver.ParseRingOpts("i40e", args, &o, []string{"tx", "tx-usecs", "adaptive-tx", "work", "rx", "rx-usecs", "adaptive-rx", "dcb-tc", "up2tc"}, func(key, val string) (bool, error) {
		if ok, err := ad.Opt("i40e", key, val); ok || err != nil {
			return ok, err
		}
		switch key {
		case "up2tc":
			parts := strings.Split(val, ",")
			if len(parts) != maxUserPriority {
				return true, fmt.Errorf("i40e: up2tc needs %d comma-separated TCs, got %q", maxUserPriority, val)
			}
			for up, p := range parts {
				tc, err := strconv.Atoi(p)
				if err != nil || tc < 0 || tc >= maxTrafficClass {
					return true, fmt.Errorf("i40e: up2tc entry %q must be a TC in [0, %d)", p, maxTrafficClass)
				}
				d.up2tc[up] = tc
			}
		case "dcb-tc":
			v, err := driver.OptInt("i40e", key, val)
			if err != nil {
				return true, err
			}
			if v < 1 || v > maxTrafficClass {
				return true, fmt.Errorf("i40e: dcb-tc must be in [1, %d], got %d", maxTrafficClass, v)
			}
			d.numTC = v
		default:
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return driver.Info{}, err
	}
	ring := o.Ring
	d.work, d.costs = o.Work, s.Costs
	// __i40e_set_coalesce: RX's checks, then TX's.
	if err := ad.Check("i40e", o, driver.Coalesce{DfltTx: DfltTxITR, DfltRx: DfltRxITR, Max: MaxITR, Macro: "I40E_MAX_ITR", RxFirst: true,
		Msg: func(side string) string {
			return strings.ToUpper(side) + " interrupt moderation cannot be changed if adaptive-" + side + " is enabled."
		}}); err != nil {
		return driver.Info{}, err
	}
	// i40e_set_ringparam: the range, then ALIGN to
	// I40E_REQ_DESCRIPTOR_MULTIPLE.
	if ring, err = driver.RingParam("i40e", "ring size", ring, MinNumDescriptors, MaxNumDescriptors, ReqDescMultiple); err != nil {
		return driver.Info{}, err
	}
	if o.Rx, err = driver.RingParam("i40e", "rx ring size", o.Rx, MinNumDescriptors, MaxNumDescriptors, ReqDescMultiple); err != nil {
		return driver.Info{}, err
	}
	if d.numTC > s.NumTxQ {
		return driver.Info{}, fmt.Errorf("i40e: dcb-tc %d needs at least as many queues, have %d", d.numTC, s.NumTxQ)
	}
	rate := s.RateBps
	if rate == 0 {
		rate = DefaultRate
	}
	d.wire.RateBps = rate
	d.divisor = itrDivisor(rate)
	d.numQ = s.NumTxQ
	// Queue pairs: TX and RX queue i on q_vector i.
	nvec := max(s.NumTxQ, s.NumRxQ)
	d.rings = make([]*txRing, s.NumTxQ)
	d.vecs = make([]driver.Vector, nvec)
	qv := make([]int, s.NumTxQ)
	for i := range d.rings {
		d.rings[i] = &txRing{Ring: driver.NewRing(ring), rs: make([]bool, ring), stats: driver.QueueStats{Queue: i}}
		qv[i] = i // one TX/RX queue pair per q_vector
	}
	// i40e_vsi_configure_msix: every vector starts at the configured
	// ITRs; a queue pair always has both rings, so a vector whose RX
	// ring the model leaves out (no RX queues, or fewer than TX) has an
	// idle RX container.
	d.mod = make([]itrVector, nvec)
	for i := range d.vecs {
		d.mod[i] = newITRVector(o.ITR, o.RxITR, ad.Tx(), ad.Rx())
		d.vecs[i].ITR = usecs(d.mod[i].tx.current)
	}
	d.hostRx = s.NumRxQ
	info := driver.Info{RateBps: rate, RingSize: ring, BQL: true, Vectors: nvec, QueueVec: qv, Wire: true}
	if s.NumRxQ > 0 {
		rv := make([]int, s.NumRxQ)
		for i := range rv {
			rv[i] = i
		}
		info.Rx = &driver.RxInfo{RingSize: o.Rx, MaxQueues: MaxRSSQueues, QueueVec: rv, ITR: usecs(d.mod[0].rx.current), OwnITR: true,
			// i40e_clean_rx_irq's clean_threshold, rx_ring->count / 2
			// since v6.4 (it was I40E_RX_BUFFER_WRITE, 32): buffers go
			// back to the hardware when half the ring waits for them.
			BufSize: RxBufSize, RefillBatch: o.Rx / 2, LUTSize: LUTSize,
			// i40e_add_queue_stats: "rx-%u.packets"; the port's drops
			// (GLPRT_RDPC) are "port.rx_dropped".
			QueuePackets: "rx-%d.packets", QueueBytes: "rx-%d.bytes", PortDropped: "port.rx_dropped"}
	}
	return info, nil
}

// maybeStopTx is i40e_maybe_stop_tx / __i40e_maybe_stop_tx: stop, then
// re-check after smp_mb() and restart (tx_restart) if a clean made room.
func (d *I40E) maybeStopTx(ctx driver.Ctx, q int, r *txRing, size int) bool {
	if r.Unused() >= size {
		return true
	}
	ctx.StopQueue(q)
	r.stats.Stopped++
	if r.Unused() < size {
		return false
	}
	ctx.StartQueue(q) // netif_start_subqueue: "A reprieve!", no schedule
	r.stats.Restart++
	return true
}

// Xmit implements driver.Driver: i40e_lan_xmit_frame ->
// i40e_xmit_frame_ring -> i40e_tx_map for each packet.
func (d *I40E) Xmit(ctx driver.Ctx, q int, batch []skb.Packet) (int, driver.TxCode) {
	r := d.rings[q]
	for i, p := range batch {
		count := driver.TxDataDescs(p) // i40e_xmit_descriptor_count
		// count + 4 + 1: a cache line of descriptors and the context one.
		if !d.maybeStopTx(ctx, q, r, count+4+1) {
			r.stats.Busy++ // tx_busy
			return i, driver.TxBusy
		}
		ctx.Spend(d.costs.DriverXmit)
		idx := r.NTU
		r.PutTSO(p.Handle, p.Len, p.GSOSegs, driver.TxSlots(p)) // TSO: the hardware segments a GSO skb
		// i40e_tx_map: netdev_tx_sent_queue (not the xmit_more variant),
		// then i40e_maybe_stop_tx(DESC_NEEDED).
		ctx.SentQueue(q, int(p.Len))
		d.maybeStopTx(ctx, q, r, d.descNeeded)
		// desc_count |= ++packet_stride; RS when >= WB_STRIDE.
		r.stride++
		r.rs[idx] = count|r.stride >= WBStride
		if r.rs[idx] {
			r.stride = 0
			r.rsSet++
		}
		more := i < len(batch)-1
		if ctx.XmitStopped(q) || !more {
			// writel(i, tx_ring->tail)
			ctx.Spend(d.costs.Doorbell)
			r.stats.Doorbells++
			idle := r.NTC == r.Tail // nothing in flight: no clean will follow
			r.Post(&d.wire, ctx.Now(), sim.Time(d.costs.DMALatency))
			d.vecs[q].Notify(ctx, q, d.nextWriteBack(r, idle))
		}
		if more && ctx.QueueStopped(q) {
			return i + 1, driver.TxOK // dev_hard_start_xmit stops here
		}
	}
	return len(batch), driver.TxOK
}

// nextWriteBack is when the hardware next writes back descriptors of r
// (and so raises the queue's interrupt cause), or -1: the completion of
// the first posted, uncleaned RS packet, whose write-back also covers
// the packets before it. With force, and no RS packet behind the
// uncleaned ones (fewer than WB_STRIDE since the last RS), the last of
// them is written back anyway when it completes: at the end of a clean
// that is i40e_arm_wb (j < WB_STRIDE pending) -> i40e_force_wb /
// WB_ON_ITR; after a doorbell on an idle ring it stands in for the
// service task's i40e_detect_recover_hung, which on parts without
// WB_ON_ITR does it later than modelled here.
func (d *I40E) nextWriteBack(r *txRing, force bool) sim.Time {
	last := sim.Time(-1)
	for i := r.NTC; i != r.Tail; i = (i + 1) % len(r.Desc) {
		if !r.Desc[i].Last {
			continue
		}
		if r.rs[i] {
			return r.Desc[i].DoneAt
		}
		last = r.Desc[i].DoneAt
	}
	if !force {
		return -1
	}
	if last >= 0 && last > r.wbAt {
		r.wbAt = last
		r.forceWB++ // tx_force_wb
	}
	return last
}

// visible counts the packets from next_to_clean whose descriptor done
// bit the hardware has written back by now: all packets up to a
// completed RS packet, and those covered by a forced write-back.
func (d *I40E) visible(r *txRing, now sim.Time) int {
	n, vis := 0, 0
	for i := r.NTC; i != r.Tail; i = (i + 1) % len(r.Desc) {
		desc := &r.Desc[i]
		if !desc.Last {
			continue
		}
		if desc.DoneAt > now {
			break
		}
		n++
		if r.rs[i] || desc.DoneAt <= r.wbAt {
			vis = n
		}
	}
	return vis
}

// Poll implements driver.Driver: i40e_napi_poll -> i40e_clean_tx_irq.
// The RX half (i40e_clean_rx_irq) runs in the host, which calls
// RxComplete when the whole poll completes; a vector with only an RX
// ring has nothing to clean here. On a vector without a host RX ring,
// napi_complete_done's i40e_update_enable_itr runs here.
func (d *I40E) Poll(ctx driver.Ctx, v int, budget int) (int, bool) {
	if v >= len(d.rings) {
		return 0, true
	}
	vec := &d.vecs[v]
	vec.BeginPoll()
	r := d.rings[v]
	r.stats.Polls++
	// The clean loop stops at the first eop_desc without
	// I40E_TX_DESC_DTYPE_DESC_DONE, or after vsi->work_limit packets.
	limit := min(d.visible(r, ctx.Now()), d.work)
	// total_packets counts a TSO packet's segments (tx_buf->gso_segs).
	pkts, segs, bytes := r.Clean(ctx.Now, limit, func(desc *driver.Desc) {
		ctx.Spend(d.costs.DescClean)
		ctx.Consume(desc.H)
	})
	// i40e_update_tx_stats: the ring's stats (ethtool's) and the TX
	// container's totals (unsigned int), in segments; the bytes already
	// carry every segment's headers.
	r.stats.Packets += uint64(segs)
	r.stats.Bytes += uint64(bytes)
	m := &d.mod[v]
	m.tx.totalPackets += uint32(segs)
	m.tx.totalBytes += uint32(bytes)
	ctx.CompletedQueue(v, pkts, bytes) // netdev_tx_completed_queue
	if pkts > 0 && r.Unused() >= d.wakeThresh && ctx.QueueStopped(v) {
		ctx.WakeQueue(v) // netif_wake_subqueue; restart_queue++
		r.stats.Restart++
	}
	complete := pkts < d.work // return !!budget
	if complete && v >= d.hostRx {
		// napi_complete_done on a vector without a host RX ring (the
		// model cannot see NAPI_STATE_MISSED here: it updates anyway).
		d.updateEnableITR(ctx.Now(), v)
	}
	return vec.PollDone(ctx, v, budget, complete, d.nextWriteBack(r, true), nil, &r.stats, nil)
}

// RxComplete implements driver.RxModerator: napi_complete_done on a
// vector with a host RX ring, given what its RX ring cleaned
// (i40e_update_rx_stats' totals). The new TX interval applies from the
// TX interrupt after the one the TX clean already armed (the kernel
// writes it with the re-enable), and a write fires no early interrupt
// (the hardware's, which itr_countdown is there to ignore).
func (d *I40E) RxComplete(now sim.Time, v int, pkts, bytes uint64) sim.Time {
	m := &d.mod[v]
	m.rx.totalPackets += uint32(pkts)
	m.rx.totalBytes += uint32(bytes)
	d.updateEnableITR(now, v)
	return usecs(m.rx.current)
}

// updateEnableITR is i40e_update_enable_itr's moderation on vector v at
// now (jiffies at CONFIG_HZ=1000).
func (d *I40E) updateEnableITR(now sim.Time, v int) {
	if d.mod[v].updateEnableITR(int64(now/sim.Jiffy), d.divisor) {
		d.vecs[v].ITR = usecs(d.mod[v].tx.current)
	}
}

// SelectQueue implements driver.QueueSelector: i40e_lan_select_queue.
// With one TC (the default: no DCB) it is netdev_pick_tx. With software
// DCB the skb's priority picks a TC through the ETS priority table and
// i40e_swdcb_skb_tx_hash spreads over that TC's queues.
func (d *I40E) SelectQueue(p skb.Packet, numTxQ int) (int, bool) {
	if d.numTC == 1 {
		return 0, false // vsi->tc_config.numtc == 1: netdev_pick_tx
	}
	tc := d.up2tc[p.Priority%maxUserPriority]
	if tc >= d.numTC {
		tc = 0 // TC not enabled on the VSI
	}
	// i40e_vsi_setup_queue_map: the queue pairs are split evenly over
	// the enabled TCs (the power-of-two qmap rounding is not modelled).
	qcount := numTxQ / d.numTC
	qoffset := tc * qcount
	// i40e_swdcb_skb_tx_hash: sk->sk_hash, else protocol ^ skb->hash.
	// The model has no sk_hash; a socket's stand-in is derived from its
	// id. ETH_P_IP read as a raw little-endian u16 is 0x0008.
	var h uint32
	if p.Sock >= 0 {
		h = uint32(p.Sock)*0x9e3779b1 | 1
	} else {
		h = 0x0008 ^ p.Hash
	}
	h = khash.Jhash1Word(h, swdcbHashSalt)
	return qoffset + int(uint64(h)*uint64(qcount)>>32), true
}

// Stats implements driver.Driver.
func (d *I40E) Stats() []driver.QueueStats {
	out := make([]driver.QueueStats, len(d.rings))
	for i, r := range d.rings {
		out[i] = r.stats
		out[i].Irqs = d.vecs[i].Irqs
		out[i].Extra = []driver.Counter{
			{Name: "ring_used", Value: uint64(r.Used())},
			{Name: "tx_itr_usecs", Value: uint64(d.vecs[i].ITR / sim.Microsecond)},
			{Name: "itr_changes", Value: d.mod[i].changes},
			{Name: "rs_set", Value: r.rsSet},
			{Name: "tx_force_wb", Value: r.forceWB},
		}
		out[i].Ethtool = ethtool(i, r.stats, r.forceWB)
	}
	return out
}

// ethtool is a ring's part of i40e's `ethtool -S` (i40e_ethtool.c,
// i40e_get_stat_strings): the netdev lines (tx_packets, tx_bytes), the
// misc VSI lines (tx_unicast, tx_force_wb, tx_busy, tx_stopped,
// tx_restart), summed over the rings, then the queue's tx-%u.packets and
// tx-%u.bytes. Only the lines the model counts; the port.* lines are not
// modelled.
func ethtool(q int, st driver.QueueStats, forceWB uint64) []driver.Counter {
	return []driver.Counter{
		{Name: "tx_packets", Value: st.Packets, Dev: true},
		{Name: "tx_bytes", Value: st.Bytes, Dev: true},
		{Name: "tx_unicast", Value: st.Packets, Dev: true},
		{Name: "tx_force_wb", Value: forceWB, Dev: true},
		{Name: "tx_busy", Value: st.Busy, Dev: true},
		{Name: "tx_stopped", Value: st.Stopped, Dev: true},
		{Name: "tx_restart", Value: st.Restart, Dev: true},
		{Name: fmt.Sprintf("tx-%d.packets", q), Value: st.Packets},
		{Name: fmt.Sprintf("tx-%d.bytes", q), Value: st.Bytes},
	}
}
