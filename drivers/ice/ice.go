// Package ice models the Intel E810 (ice) TX path: descriptor rings,
// ice_maybe_stop_tx flow control, BQL with doorbell batching on
// xmit_more, a 100 Gbit wire, ITR interrupt moderation and
// ice_clean_tx_irq in NAPI. Defaults come from
// drivers/net/ethernet/intel/ice/ice_txrx.[ch] and ice.h.
package ice

import (
	"fmt"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Constants from ice_txrx.h / ice.h.
const (
	DefaultNumTxDesc = 256 // ICE_DFLT_NUM_TX_DESC
	MinNumDesc       = 64  // ICE_MIN_NUM_DESC
	MaxNumDesc       = 8160
	ReqDescMultiple  = 32                      // ICE_REQ_DESC_MULTIPLE
	DescsPerCacheLn  = 4                       // ICE_DESCS_PER_CACHE_LINE (64 B / 16 B)
	DescsForCtxDesc  = 1                       // ICE_DESCS_FOR_CTX_DESC
	maxSkbFrags      = 17                      // MAX_SKB_FRAGS
	DescNeeded       = maxSkbFrags + 1 + 4 + 1 // DESC_NEEDED = 23
	TxWakeThreshold  = 2 * DescNeeded          // TX_WAKE_THRESHOLD = 46
	DfltIRQWork      = 256                     // ICE_DFLT_IRQ_WORK
	DfltTxITR        = 50 * sim.Microsecond    // ICE_DFLT_TX_ITR = ICE_ITR_20K (the static ITR once adaptive-tx is off)
	MaxITR           = 8160 * sim.Microsecond  // ICE_ITR_MAX
	DefaultRate      = 100_000_000_000         // E810: 100 Gbit/s
)

// Receive side (ice.h, ice_txrx.[ch], ice_lib.c).
const (
	DefaultNumRxDesc = 2048 // ICE_DFLT_NUM_RX_DESC
	// MaxRSSQueues is ICE_MAX_LG_RSS_QS: the PF VSI's RSS spreads over
	// at most 256 queues (ethtool -L is further capped by the CPUs).
	MaxRSSQueues = 256
	// LUTPFSize is ICE_LUT_PF_SIZE: the PF VSI's RSS indirection table.
	LUTPFSize = 2048
	// RxBufSize is ice_rx_frame_truesize with 4 KiB pages: half a page
	// (ICE_RXBUF_2048 on a split page, napi_build_skb's frag_size);
	// libeth's page_pool buffers (93f53db9f9dc) are 2048 too at a
	// 1500-byte MTU.
	RxBufSize = 2048
	// DfltRxITR is ICE_DFLT_RX_ITR = ICE_ITR_20K, 50 us: the static RX
	// ITR once adaptive-rx is off (and the local receive path's, which
	// runs no DIM).
	DfltRxITR = 50 * sim.Microsecond
)

// TxProfile is ice_main.c's tx_profile[] in us: the TX DIM profiles
// (ice_vsi_alloc_q_vector sets tx.itr_mode = ITR_DYNAMIC, so adaptive-tx
// is on by default). DimDefaultProfileIx is ICE_DIM_DEFAULT_PROFILE_IX,
// where ice_init_moderation starts both DIMs and writes the first ITRs.
var TxProfile = [...]sim.Time{2 * sim.Microsecond, 8 * sim.Microsecond, 40 * sim.Microsecond, 128 * sim.Microsecond, 256 * sim.Microsecond}

// RxProfile is ice_main.c's rx_profile[] in us: the RX DIM profiles,
// capped lower than TX's ("maxes out at 126us or about 8k interrupts a
// second"); rx.itr_mode is ITR_DYNAMIC by default too. The host runs
// this DIM (RxInfo.ITRProfile), since the RX clean is the host's.
var RxProfile = [...]sim.Time{2 * sim.Microsecond, 8 * sim.Microsecond, 16 * sim.Microsecond, 62 * sim.Microsecond, 126 * sim.Microsecond}

const (
	DimDefaultProfileIx = 1
	// DynamicINTRL is the rate limit ice_set_q_vector_intrl writes when
	// either ring container is dynamic: 4 us, 250,000 interrupts/s a
	// vector. It caps profile 0's 2 us ITR.
	DynamicINTRL = 4 * sim.Microsecond
	// SWITR is ICE_ITR_20K, 50 us: the rate limit of the software
	// interrupt ice_enable_interrupt triggers when NAPI leaves
	// wb_on_itr (a run of polls that went over budget).
	SWITR = 50 * sim.Microsecond
)

func init() {
	driver.Register("ice", "Intel E810 100G (drivers/net/ethernet/intel/ice)", func() driver.Driver { return &ICE{} })
}

type txRing struct {
	*driver.Ring
	dim   *driver.DIM // the vector's tx.dim; nil with adaptive-tx off
	stats driver.QueueStats
}

// ICE is the driver model.
type ICE struct {
	rings []*txRing
	vecs  []driver.Vector
	wire  driver.Wire
	itr   sim.Time
	work  int
	costs *sim.Costs
	// descNeeded and wakeThresh are DESC_NEEDED and TX_WAKE_THRESHOLD
	// for the host's MAX_SKB_FRAGS.
	descNeeded, wakeThresh int
}

// Init implements driver.Driver. Options (ethtool words): "tx N" ring
// size (rounded up to a multiple of 32), "adaptive-tx on|off" TX DIM
// (default on, as ice sets it), "tx-usecs N" the static TX ITR (with
// adaptive-tx on only the current 50 is taken, as ice_set_rc_coalesce
// refuses a change), "work N" clean budget per poll, "rx N" RX ring
// size, "adaptive-rx on|off" RX DIM (default on), "rx-usecs N" the
// static RX ITR (the same rule).
func (d *ICE) Init(s driver.Setup, args []string) (driver.Info, error) {
	o := driver.RingOpts{Ring: DefaultNumTxDesc, ITR: DfltTxITR, Work: DfltIRQWork, Rx: DefaultNumRxDesc, RxITR: DfltRxITR}
	var ad driver.Adaptive
	err := driver.ParseRingOpts("ice", args, &o, []string{"tx", "tx-usecs", "adaptive-tx", "work", "rx", "rx-usecs", "adaptive-rx"}, func(key, val string) (bool, error) {
		return ad.Opt("ice", key, val)
	})
	if err != nil {
		return driver.Info{}, err
	}
	// ice_set_q_coalesce: the RX container's ice_set_rc_coalesce, then
	// the TX one's.
	if err := ad.Check("ice", o, driver.Coalesce{DfltTx: DfltTxITR, DfltRx: DfltRxITR, Max: MaxITR, Macro: "ICE_ITR_MAX", RxFirst: true,
		Msg: func(side string) string {
			return side + " interrupt throttling cannot be changed if adaptive-" + side + " is enabled"
		}}); err != nil {
		return driver.Info{}, err
	}
	adaptive, adaptiveRx := ad.Tx(), ad.Rx()
	// ice_set_q_vector_intrl: the vector's rate limit is 4 us when
	// either container is dynamic, else the user's (0 here).
	var intrl sim.Time
	if adaptive || adaptiveRx {
		intrl = DynamicINTRL
	}
	// ice_set_ringparam: the range, then ALIGN to ICE_REQ_DESC_MULTIPLE.
	if o.Rx, err = driver.RingParam("ice", "rx ring size", o.Rx, MinNumDesc, MaxNumDesc, ReqDescMultiple); err != nil {
		return driver.Info{}, err
	}
	ring := o.Ring
	// ice_write_itr: the register takes ITR_REG_ALIGN(usecs), 2 us
	// units ("device only supports even values", ice_print_if_odd_usecs).
	o.ITR, o.RxITR = driver.ITRRegAlign(o.ITR), driver.ITRRegAlign(o.RxITR)
	d.itr, d.work, d.costs = o.ITR, o.Work, s.Costs
	d.descNeeded = s.SkbFrags() + 1 + DescsPerCacheLn + DescsForCtxDesc
	d.wakeThresh = 2 * d.descNeeded
	if ring, err = driver.RingParam("ice", "ring size", ring, MinNumDesc, MaxNumDesc, ReqDescMultiple); err != nil {
		return driver.Info{}, err
	}
	rate := s.RateBps
	if rate == 0 {
		rate = DefaultRate
	}
	d.wire.RateBps = rate
	// ice_vsi_alloc_q_vectors: max(alloc_txq, alloc_rxq) q_vectors, TX
	// and RX queue i on q_vector i.
	nvec := max(s.NumTxQ, s.NumRxQ)
	d.rings = make([]*txRing, s.NumTxQ)
	d.vecs = make([]driver.Vector, nvec)
	qv := make([]int, s.NumTxQ)
	for i := range d.rings {
		d.rings[i] = &txRing{Ring: driver.NewRing(ring), stats: driver.QueueStats{Queue: i}}
		qv[i] = i // one TX/RX queue pair per q_vector
	}
	for i := range d.vecs {
		d.vecs[i].ITR = max(d.itr, intrl)
		if i >= s.NumRxQ {
			d.vecs[i].SWITR = SWITR // the host runs a vector with RX rings
		}
	}
	if adaptive {
		// ice_init_moderation: the TX DIM starts at the default profile
		// and the vector's ITR is written from it.
		for i, r := range d.rings {
			r.dim = driver.NewDIM(DimDefaultProfileIx, len(TxProfile))
			d.vecs[i].ITR = dynamicITR(TxProfile[DimDefaultProfileIx])
		}
	}
	info := driver.Info{RateBps: rate, RingSize: ring, BQL: true, Vectors: nvec, QueueVec: qv, Wire: true}
	if s.NumRxQ > 0 {
		rv := make([]int, s.NumRxQ)
		for i := range rv {
			rv[i] = i
		}
		info.Rx = &driver.RxInfo{RingSize: o.Rx, MaxQueues: MaxRSSQueues, QueueVec: rv, ITR: o.RxITR,
			INTRL: intrl, BufSize: RxBufSize, RefillBatch: 0, LUTSize: LUTPFSize,
			// ice_get_strings: per ring "rx_queue_%u_packets"; the port's
			// drops (PRTRPB_RDPC, also rx_missed_errors) "rx_dropped.nic".
			QueuePackets: "rx_queue_%d_packets", QueueBytes: "rx_queue_%d_bytes", PortDropped: "rx_dropped.nic"}
		if adaptiveRx {
			// ice_init_moderation: the RX DIM starts at the default
			// profile and the RX ITR is written from it; the host runs
			// ice_net_dim's RX half at napi_complete_done.
			info.Rx.ITRProfile, info.Rx.DIMStart = append([]sim.Time(nil), RxProfile[:]...), DimDefaultProfileIx
		}
	}
	return info, nil
}

// maybeStopTx is ice_maybe_stop_tx: stop the queue, then re-check in case
// a clean freed room meanwhile (then restart it).
func (d *ICE) maybeStopTx(ctx driver.Ctx, q int, r *txRing, size int) bool {
	if r.Unused() >= size {
		return true
	}
	ctx.StopQueue(q)
	r.stats.Stopped++
	if r.Unused() < size { // smp_mb(); still no room
		return false
	}
	ctx.StartQueue(q) // "A reprieve! - use start_queue because it doesn't call schedule"
	r.stats.Restart++
	return true
}

// Xmit implements driver.Driver: ice_xmit_frame_ring for each packet.
func (d *ICE) Xmit(ctx driver.Ctx, q int, batch []skb.Packet) (int, driver.TxCode) {
	r := d.rings[q]
	for i, p := range batch {
		count := driver.TxDataDescs(p) // ice_xmit_desc_count
		if !d.maybeStopTx(ctx, q, r, count+DescsPerCacheLn+DescsForCtxDesc) {
			r.stats.Busy++
			return i, driver.TxBusy
		}
		ctx.Spend(d.costs.DriverXmit)
		r.PutTSO(p.Handle, p.Len, p.GSOSegs, driver.TxSlots(p)) // TSO: the hardware segments a GSO skb
		more := i < len(batch)-1
		d.maybeStopTx(ctx, q, r, d.descNeeded)
		if ctx.SentQueueMore(q, int(p.Len), more) {
			// writel(i, tx_ring->tail): the hardware sees the new slots.
			ctx.Spend(d.costs.Doorbell)
			r.stats.Doorbells++
			first := r.Post(&d.wire, ctx.Now(), sim.Time(d.costs.DMALatency))
			d.vecs[q].Notify(ctx, q, first)
		}
		if more && ctx.QueueStopped(q) {
			return i + 1, driver.TxOK // dev_hard_start_xmit stops here
		}
	}
	return len(batch), driver.TxOK
}

// Poll implements driver.Driver: ice_napi_poll -> ice_clean_tx_irq. The
// RX half of ice_napi_poll (ice_clean_rx_irq) runs in the host; a
// vector with an RX ring and no TX ring has nothing to clean here.
func (d *ICE) Poll(ctx driver.Ctx, v int, budget int) (int, bool) {
	if v >= len(d.rings) {
		return 0, true
	}
	vec := &d.vecs[v]
	vec.BeginPoll()
	r := d.rings[v]
	r.stats.Polls++
	// total_pkts counts a TSO packet's segments (tx_buf->gso_segs).
	pkts, segs, bytes := r.Clean(ctx.Now, d.work, func(desc *driver.Desc) {
		ctx.Spend(d.costs.DescClean)
		ctx.Consume(desc.H)
	})
	r.stats.Packets += uint64(segs) // the ring's stats, which ethtool and ice_net_dim read
	r.stats.Bytes += uint64(bytes)
	ctx.CompletedQueue(v, pkts, bytes)
	if pkts > 0 && r.Unused() >= d.wakeThresh && ctx.QueueStopped(v) {
		ctx.WakeQueue(v)
		r.stats.Restart++
	}
	complete := pkts < d.work
	// napi_complete_done -> ice_net_dim; ice_tx_dim_work writes the ITR.
	return vec.PollDone(ctx, v, budget, complete, r.NextDone(), r.dim, &r.stats, func(ix int) sim.Time { return dynamicITR(TxProfile[ix]) })
}

// Stats implements driver.Driver.
func (d *ICE) Stats() []driver.QueueStats {
	out := make([]driver.QueueStats, len(d.rings))
	for i, r := range d.rings {
		out[i] = r.stats
		out[i].Irqs = d.vecs[i].Irqs
		out[i].Extra = []driver.Counter{{Name: "ring_used", Value: uint64(r.Used())}}
		if r.dim != nil {
			out[i].Extra = append(out[i].Extra, r.dim.Counters(d.vecs[i].ITR)...)
		}
		out[i].Ethtool = ethtool(i, r.stats)
	}
	return out
}

// dynamicITR is the gap between two interrupts of a dynamic vector: the
// profile's ITR, but no shorter than the INTRL rate limit (the model
// folds the hardware's two limits into one interval).
func dynamicITR(itr sim.Time) sim.Time { return max(itr, DynamicINTRL) }

// ethtool is a ring's part of ice's `ethtool -S` (ice_ethtool.c,
// __ice_get_strings): the VSI lines ice_gstrings_vsi_stats lists, summed
// over the rings, then tx_queue_%u_packets and _bytes. Only the lines
// the model counts; the PF's .nic port lines are not modelled.
func ethtool(q int, st driver.QueueStats) []driver.Counter {
	return []driver.Counter{
		{Name: "tx_unicast", Value: st.Packets, Dev: true},
		{Name: "tx_bytes", Value: st.Bytes, Dev: true},
		{Name: "tx_busy", Value: st.Busy, Dev: true},
		{Name: "tx_restart", Value: st.Restart, Dev: true},
		{Name: fmt.Sprintf("tx_queue_%d_packets", q), Value: st.Packets},
		{Name: fmt.Sprintf("tx_queue_%d_bytes", q), Value: st.Bytes},
	}
}
