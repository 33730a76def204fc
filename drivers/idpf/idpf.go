// Package idpf models the Intel IPU / E2100 (idpf) TX path in the split
// queue model with flow scheduling: per TX queue a descriptor queue and a
// separate completion queue. The device writes two kinds of completions:
// a per-packet RS completion when the packet is done (the buffer and its
// skb are freed, BQL is credited) and a "descriptor fetch" completion for
// descriptors carrying the RE bit (set at most every
// IDPF_TX_SPLITQ_RE_MIN_GAP descriptors), which returns descriptor ring
// space. The queue stops when either the descriptor ring or the
// completion queue (pending completions above half its size) is short.
//
// Sources: drivers/net/ethernet/intel/idpf/idpf_txrx.[ch] and idpf_lib.c
// (idpf_vport_calc_num_q_desc); see KERNEL-FACTS 5.3.
package idpf

import (
	"fmt"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Constants from idpf_txrx.h / idpf.h.
const (
	DfltTxQDescCount      = 512  // IDPF_DFLT_TX_Q_DESC_COUNT
	DfltTxComplQDescCount = 512  // IDPF_DFLT_TX_COMPLQ_DESC_COUNT
	MinTxQDesc            = 64   // IDPF_MIN_TXQ_DESC
	MinTxComplQDesc       = 256  // IDPF_MIN_TXQ_COMPLQ_DESC
	MaxDescs              = 8160 // IDPF_MAX_DESCS
	ReqDescMultiple       = 32   // IDPF_REQ_DESC_MULTIPLE
	maxSkbFrags           = 17   // MAX_SKB_FRAGS
	// IDPF_MIN_TX_DESC_NEEDED = MAX_SKB_FRAGS + 6.
	MinTxDescNeeded = maxSkbFrags + 6
	// IDPF_TX_WAKE_THRESH = 2 * IDPF_MIN_TX_DESC_NEEDED (46).
	TxWakeThresh = 2 * MinTxDescNeeded
	// IDPF_TX_DESCS_PER_CACHE_LINE = L1_CACHE_BYTES / 16-byte descriptor;
	// idpf_tx_splitq_frame adds it to the data descriptor count.
	TxDescsPerCacheLine = 4
	// IDPF_TX_SPLITQ_RE_MIN_GAP: descriptors between two RE bits.
	ReMinGap = 64
	// IDPF_TX_COMPLQ_CLEAN_BUDGET: completion descriptors per clean.
	ComplQCleanBudget = 256
	// IDPF_ITR_TX_DEF = IDPF_ITR_20K: 50 us, the static ITR once
	// adaptive moderation is turned off (ethtool -C adaptive-tx off).
	DfltTxITR = 50 * sim.Microsecond
	// DimDefaultProfileIx is IDPF_DIM_DEFAULT_PROFILE_IX: where the TX
	// and RX DIMs start in TxITRProfile and RxITRProfile.
	DimDefaultProfileIx = 1
	DefaultRate         = 200_000_000_000 // 200 Gbit/s
)

// Receive side (idpf_txrx.h, idpf_ethtool.c, libeth).
const (
	DfltRxQDescCount = 512 // IDPF_DFLT_RX_Q_DESC_COUNT
	// ReqRxqDescMultiple is IDPF_REQ_RXQ_DESC_MULTIPLE: IDPF_RX_BUF_STRIDE
	// (32) times the two buffer queues of a group.
	ReqRxqDescMultiple = 64
	// LargeMaxQ is IDPF_LARGE_MAX_Q: the most queues a vport may ask for
	// (the device may offer fewer).
	LargeMaxQ = 256
	// LUTSize is the RSS table size the control plane reports
	// (vport rss_lut_size); 2048 is assumed here.
	LUTSize = 2048
	// RxBufSize is libeth's fq->truesize for a 1500-byte MTU:
	// roundup_pow_of_two(SKB_HEAD_ALIGN(headroom + buf_len)) = 2048.
	RxBufSize = 2048
	// DfltRxITR is IDPF_ITR_RX_DEF = IDPF_ITR_20K, 50 us: the static
	// RX ITR once adaptive-rx is off.
	DfltRxITR = 50 * sim.Microsecond
	// MaxITR is IDPF_ITR_MAX (0x1FE0 us).
	MaxITR = 8160 * sim.Microsecond
	// SWITR is IDPF_ITR_20K, 50 us: the rate limit of the software
	// interrupt idpf_vport_intr_buildreg_itr triggers leaving wb_on_itr
	// ("idpf: trigger SW interrupt when exiting wb_on_itr mode").
	SWITR = 50 * sim.Microsecond
)

// DimProfileSlots is IDPF_DIM_PROFILE_SLOTS.
const DimProfileSlots = 5

// txITR is idpf_vport_init's tx_itr[] in us (idpf_virtchnl.c).
var txITR = [DimProfileSlots]uint16{2, 8, 64, 128, 256}

// vportInitProfile is what idpf_vport_init leaves in the vport's
// tx_itr_profile (rx_itr_profile) from src: memcpy(vport->tx_itr_profile,
// tx_itr, IDPF_DIM_PROFILE_SLOTS) (and rx's) copies IDPF_DIM_PROFILE_SLOTS bytes, not
// entries, of the u16 array into the kzalloc'ed vport. Little-endian
// (x86), that is the first two entries and the low byte of the third;
// the rest stay 0, and idpf_tx_dim_work writes an ITR of 0 (no
// throttling) for those profiles. Mainline has it so from idpf's first
// version to Oct 2025's net-next (idpf_virtchnl.c, idpf_vport_init),
// and 6.12's backport the same.
func vportInitProfile(src [DimProfileSlots]uint16) (out [DimProfileSlots]sim.Time) {
	var from, to [2 * DimProfileSlots]byte // the arrays' bytes
	for i, v := range src {
		from[2*i], from[2*i+1] = byte(v), byte(v>>8)
	}
	copy(to[:DimProfileSlots], from[:DimProfileSlots])
	for i := range out {
		out[i] = sim.Time(uint16(to[2*i])|uint16(to[2*i+1])<<8) * sim.Microsecond
	}
	return out
}

// TxITRProfile is the vport's tx_itr_profile, the TX DIM's table
// (q_vector->tx_intr_mode = IDPF_ITR_DYNAMIC by default,
// idpf_vport_intr_alloc): tx_itr[] as idpf_vport_init copies it, 2, 8
// and 64 us, then 0 and 0.
var TxITRProfile = vportInitProfile(txITR)

// rxITR is idpf_vport_init's rx_itr[] in us (idpf_virtchnl.c).
var rxITR = [DimProfileSlots]uint16{2, 8, 32, 96, 128}

// RxITRProfile is the vport's rx_itr_profile, the RX DIM's table
// (rx_intr_mode = IDPF_ITR_DYNAMIC by default): rx_itr[] as
// idpf_vport_init copies it (vportInitProfile), 2, 8 and 32 us, then 0
// and 0. It starts at DimDefaultProfileIx as well. The host runs this
// DIM (RxInfo.ITRProfile), since the RX clean is the host's.
var RxITRProfile = vportInitProfile(rxITR)

func init() {
	driver.Register("idpf", "Intel idpf 200G, split queue model with flow scheduling (drivers/net/ethernet/intel/idpf)",
		func() driver.Driver { return &IDPF{} })
}

// compl is one completion the device will write to the completion queue.
type compl struct {
	at    sim.Time
	h     skb.Handle // RS: the packet whose buffer is freed
	bytes uint32
	segs  uint16 // RS: the packet's segments (tx_buf->packets, gso_segs)
	head  int    // RE (descriptor fetch): TX head after the RE descriptor
}

// txQueue is one idpf_tx_queue with its idpf_compl_queue (one TX queue
// per queue group here, so the group's counters are the queue's).
type txQueue struct {
	*driver.Ring
	re        []bool // RE bit on the descriptor at this index
	lastRE    int    // tx_q->last_re: the data descriptor the last RE was asked at
	complSize int    // complq->desc_count
	// The completions the device writes, per kind, each in time order.
	// Merged by time they are the completion queue.
	rs, fetch []compl
	// txq_grp->num_completions_pending and complq->num_completions:
	// their difference is IDPF_TX_COMPLQ_PENDING.
	numPending, numCompletions uint64

	dim *driver.DIM // the vector's tx_dim; nil with adaptive-tx off

	stats                       driver.QueueStats
	reSet, rsCompl, reCompl     uint64
	busyDescs, busyCompl        uint64
	maxPending, complqWakeBlock uint64
}

// complqPending is IDPF_TX_COMPLQ_PENDING.
func (q *txQueue) complqPending() uint64 { return q.numPending - q.numCompletions }

// hasRoom is idpf_txq_has_room: enough descriptors and the completion
// queue below IDPF_TX_COMPLQ_OVERFLOW_THRESH (half its size). The buffer
// checks (IDPF_TX_BUF_RSV_LOW / refill queue) are not modelled: every
// packet here is one buffer and one descriptor.
func (q *txQueue) hasRoom(descs int) bool {
	return q.Unused() >= descs && q.complqPending() <= uint64(q.complSize>>1)
}

// nextCompl is the time of the oldest completion not yet cleaned, or -1.
func (q *txQueue) nextCompl() sim.Time {
	switch {
	case len(q.rs) == 0 && len(q.fetch) == 0:
		return -1
	case len(q.rs) == 0:
		return q.fetch[0].at
	case len(q.fetch) == 0:
		return q.rs[0].at
	}
	return min(q.rs[0].at, q.fetch[0].at)
}

// IDPF is the driver model.
type IDPF struct {
	qs    []*txQueue
	vecs  []driver.Vector
	wire  driver.Wire
	itr   sim.Time
	work  int
	costs *sim.Costs
	// wakeThresh is IDPF_TX_WAKE_THRESH for the host's MAX_SKB_FRAGS.
	wakeThresh int
}

// Init implements driver.Driver. Options (ethtool words): "tx N" TX
// descriptor ring size (rounded up to a multiple of 32), "tx-compl N"
// completion queue size (default: as idpf_vport_calc_num_q_desc, 512,
// or the tx size when "tx" is given, at least 256), "adaptive-tx
// on|off" TX DIM (default on, as idpf sets it), "tx-usecs N" the static
// ITR (with adaptive-tx on only the current 50 is taken, as
// __idpf_set_q_coalesce refuses a change), "work N" completion clean
// budget, "rx N" RX ring size (rounded up to a multiple of 64),
// "adaptive-rx on|off" RX DIM (default on), "rx-usecs N" the static RX
// ITR (the same rule).
func (d *IDPF) Init(s driver.Setup, args []string) (driver.Info, error) {
	o := driver.RingOpts{Ring: DfltTxQDescCount, ITR: DfltTxITR, Work: ComplQCleanBudget, Rx: DfltRxQDescCount, RxITR: DfltRxITR}
	compl := 0
	var ad driver.Adaptive
	err := driver.ParseRingOpts("idpf", args, &o, []string{"tx", "tx-compl", "tx-usecs", "adaptive-tx", "work", "rx", "rx-usecs", "adaptive-rx"}, func(key, val string) (bool, error) {
		switch key {
		case "tx-compl":
			v, err := driver.OptInt("idpf", key, val)
			compl = v
			return true, err
		}
		return ad.Opt("idpf", key, val)
	})
	if err != nil {
		return driver.Info{}, err
	}
	// idpf_set_q_coalesce: __idpf_set_q_coalesce for the TX queue,
	// then the RX one.
	if err := ad.Check("idpf", o, driver.Coalesce{DfltTx: DfltTxITR, DfltRx: DfltRxITR, Max: MaxITR, Macro: "IDPF_ITR_MAX",
		Msg: func(string) string { return "Cannot set coalesce usecs if adaptive enabled" }}); err != nil {
		return driver.Info{}, err
	}
	// __idpf_set_q_coalesce: "HW only supports even ITR values, ITR
	// rounded to" the even value below.
	o.ITR, o.RxITR = driver.ITRRegAlign(o.ITR), driver.ITRRegAlign(o.RxITR)
	ring, txSet := o.Ring, o.RingSet
	d.itr, d.work, d.costs = o.ITR, o.Work, s.Costs
	// idpf_set_ringparam: the range (IDPF_MIN_TXQ_DESC; ethtool's core
	// checks the maximum), then ALIGN to IDPF_REQ_DESC_MULTIPLE.
	if ring, err = driver.RingParam("idpf", "tx ring size", ring, MinTxQDesc, MaxDescs, ReqDescMultiple); err != nil {
		return driver.Info{}, err
	}
	if compl == 0 {
		// idpf_vport_calc_num_q_desc: a requested TX count sizes the
		// completion queue too, at least IDPF_MIN_TXQ_COMPLQ_DESC.
		compl = DfltTxComplQDescCount
		if txSet {
			compl = max(ring, MinTxComplQDesc)
		}
	}
	d.wakeThresh = 2 * (s.SkbFrags() + 6)
	if ring-ReMinGap < d.wakeThresh {
		// Model guard: in flow scheduling only RE (descriptor fetch)
		// completions return ring space, at most every ReMinGap
		// descriptors, so up to ReMinGap-1 descriptors stay unreturned
		// after the last fetch. The clean wakes a stopped queue only with
		// IDPF_TX_WAKE_THRESH free, so a smaller ring can stay stopped
		// with nothing left to complete.
		return driver.Info{}, fmt.Errorf("idpf: tx ring size %d too small for flow scheduling: needs at least RE gap %d + wake threshold %d descriptors", ring, ReMinGap, d.wakeThresh)
	}
	if compl < MinTxComplQDesc || compl > MaxDescs || compl%ReqDescMultiple != 0 {
		return driver.Info{}, fmt.Errorf("idpf: completion queue size %d must be in [%d, %d] and a multiple of %d", compl, MinTxComplQDesc, MaxDescs, ReqDescMultiple)
	}
	// IDPF_MAX_RXQ_DESC is 8160 aligned down to the RX multiple.
	if o.Rx, err = driver.RingParam("idpf", "rx ring size", o.Rx, ReqRxqDescMultiple, MaxDescs/ReqRxqDescMultiple*ReqRxqDescMultiple, ReqRxqDescMultiple); err != nil {
		return driver.Info{}, err
	}
	rate := s.RateBps
	if rate == 0 {
		rate = DefaultRate
	}
	d.wire.RateBps = rate
	// One q_vector per TX queue and its completion queue, RX queue i on
	// vector i too (idpf_vport_intr_map_vector_to_qs).
	nvec := max(s.NumTxQ, s.NumRxQ)
	d.qs = make([]*txQueue, s.NumTxQ)
	d.vecs = make([]driver.Vector, nvec)
	qv := make([]int, s.NumTxQ)
	for i := range d.qs {
		d.qs[i] = &txQueue{Ring: driver.NewRing(ring), re: make([]bool, ring), lastRE: ring - ReMinGap, complSize: compl, stats: driver.QueueStats{Queue: i}}
		qv[i] = i
	}
	for i := range d.vecs {
		d.vecs[i].ITR = d.itr
		if i >= s.NumRxQ {
			d.vecs[i].SWITR = SWITR // the host runs a vector with RX rings
		}
	}
	if ad.Tx() {
		// idpf_init_dim + idpf_vport_intr_ena_irq_all: the vector starts
		// at the default profile's ITR.
		for i, q := range d.qs {
			q.dim = driver.NewDIM(DimDefaultProfileIx, len(TxITRProfile))
			d.vecs[i].ITR = TxITRProfile[DimDefaultProfileIx]
		}
	}
	// NoXPS: idpf never calls netif_set_xps_queue (its vectors get only
	// an IRQ affinity, idpf_vport_intr_napi_add_all), so the device has
	// no XPS map of its own and sockets hash (skb_tx_hash).
	info := driver.Info{RateBps: rate, RingSize: ring, BQL: true, Vectors: nvec, QueueVec: qv, Wire: true, NoXPS: true}
	if s.NumRxQ > 0 {
		rv := make([]int, s.NumRxQ)
		for i := range rv {
			rv[i] = i
		}
		// The split queue RX (a completion-style RX queue fed by buffer
		// queues) is modelled as one ring of rx descriptors whose
		// buffers go back at the end of each clean
		// (idpf_rx_splitq_clean, then the refill queues).
		info.Rx = &driver.RxInfo{RingSize: o.Rx, MaxQueues: LargeMaxQ, QueueVec: rv, ITR: o.RxITR,
			BufSize: RxBufSize, RefillBatch: 0, LUTSize: LUTSize,
			// idpf_add_qstat_strings: "rx_q-%u_pkts"; the vport's
			// rx_discards reach the netdev's rx_dropped.
			QueuePackets: "rx_q-%d_pkts", QueueBytes: "rx_q-%d_bytes", PortDropped: "rx_dropped"}
		if ad.Rx() {
			// idpf_init_dim + idpf_vport_intr_ena_irq_all: the RX DIM
			// starts at the default profile, whose ITR is written; the
			// host runs idpf_net_dim's RX half at napi_complete_done.
			info.Rx.ITRProfile, info.Rx.DIMStart = append([]sim.Time(nil), RxITRProfile[:]...), DimDefaultProfileIx
		}
	}
	return info, nil
}

// maybeStop is idpf_tx_maybe_stop_splitq: netif_subqueue_maybe_stop with
// idpf_txq_has_room as a boolean (stop and start thresholds both 1): stop,
// re-check after the barrier, restart if room appeared.
func (d *IDPF) maybeStop(ctx driver.Ctx, qi int, q *txQueue, descs int) bool {
	if q.hasRoom(descs) {
		return true
	}
	ctx.StopQueue(qi)
	q.stats.Stopped++
	if q.hasRoom(descs) { // smp_mb(); a clean raced
		ctx.StartQueue(qi) // netif_txq_try_stop: netif_tx_start_queue, "it does not reschedule Tx"
		q.stats.Restart++
		return true
	}
	// q_busy, and the CONFIG_TX_TIMEOUT_VERBOSE reasons.
	if q.Unused() < descs {
		q.busyDescs++
	}
	if q.complqPending() > uint64(q.complSize>>1) {
		q.busyCompl++
	}
	return false
}

// doorbell is the writel in idpf_tx_buf_hw_update: the device fetches the
// new descriptors (RE ones report the fetch) and sends the packets, each
// completing with an RS completion when its last bit leaves.
func (d *IDPF) doorbell(ctx driver.Ctx, qi int, q *txQueue) {
	if q.Tail == q.NTU {
		return
	}
	ctx.Spend(d.costs.Doorbell)
	q.stats.Doorbells++
	now := ctx.Now()
	fetchAt := now + sim.Time(d.costs.DMALatency)
	for q.Tail != q.NTU {
		i := q.Tail
		desc := &q.Desc[i]
		q.Tail = (i + 1) % len(q.Desc)
		if desc.Last {
			done := d.wire.SendTSO(fetchAt, desc.Bytes, desc.Segs)
			q.rs = append(q.rs, compl{at: done, h: desc.H, bytes: desc.Bytes, segs: uint16(desc.Frames())})
		}
		if q.re[i] {
			q.fetch = append(q.fetch, compl{at: fetchAt, head: q.Tail})
		}
	}
	d.vecs[qi].Notify(ctx, qi, q.nextCompl())
}

// Xmit implements driver.Driver: idpf_tx_start -> idpf_tx_splitq_frame
// -> idpf_tx_splitq_map for each packet.
func (d *IDPF) Xmit(ctx driver.Ctx, qi int, batch []skb.Packet) (int, driver.TxCode) {
	q := d.qs[qi]
	for i, p := range batch {
		// idpf_tx_res_count_required (one data descriptor for a linear
		// skb, the head and the frags' for a TSO one, split at
		// IDPF_TX_MAX_DESC_DATA_ALIGNED) + IDPF_TX_DESCS_PER_CACHE_LINE
		// + tso (idpf_tso: 1, its context descriptor).
		slots := driver.TxSlots(p)
		tso := slots - driver.TxDataDescs(p)
		count := slots + TxDescsPerCacheLine
		if !d.maybeStop(ctx, qi, q, count) {
			// idpf_tx_buf_hw_update(tx_q, next_to_use, false): hand over
			// what xmit_more held back, then NETDEV_TX_BUSY. With
			// xmit_more false the tail is written even when nothing
			// was held back (a bulk's first packet refused): the MMIO
			// write is paid, the device finds no news.
			if q.Tail == q.NTU {
				ctx.Spend(d.costs.Doorbell)
				q.stats.Doorbells++
			} else {
				d.doorbell(ctx, qi, q)
			}
			q.stats.Busy++
			return i, driver.TxBusy
		}
		ctx.Spend(d.costs.DriverXmit)
		// Flow scheduling (idpf_tx_splitq_frame): after the TSO context
		// descriptor, idpf_tx_splitq_need_re asks for RE when next_to_use
		// is IDPF_TX_SPLITQ_RE_MIN_GAP or more past last_re; the bit goes
		// on the packet's EOP descriptor (eop_cmd), whose fetch the
		// device then reports. Each RE adds a pending completion.
		n := len(q.Desc)
		first := (q.NTU + tso) % n
		needRE := (first-q.lastRE+n)%n >= ReMinGap
		if needRE {
			q.lastRE = first
			q.numPending++
			q.reSet++
		}
		for k := 0; k < slots; k++ {
			q.re[(q.NTU+k)%n] = false
		}
		// TSO: the hardware segments a GSO skb.
		q.PutTSO(p.Handle, p.Len, p.GSOSegs, slots)
		q.re[(q.NTU-1+n)%n] = needRE
		q.numPending++ // the packet's RS completion
		q.maxPending = max(q.maxPending, q.complqPending())
		// idpf_tx_splitq_map: netdev_tx_sent_queue (the full BQL call,
		// which may set STACK_XOFF), then idpf_tx_buf_hw_update with
		// netdev_xmit_more(): the tail is written when the queue is
		// stopped (driver or BQL) or no more packets follow.
		more := i < len(batch)-1
		ctx.SentQueue(qi, int(p.Len))
		if ctx.XmitStopped(qi) || !more {
			d.doorbell(ctx, qi, q)
		}
		if more && ctx.QueueStopped(qi) {
			return i + 1, driver.TxOK
		}
	}
	return len(batch), driver.TxOK
}

// Poll implements driver.Driver: idpf_vport_splitq_napi_poll ->
// idpf_tx_splitq_clean_all -> idpf_tx_clean_complq on the vector's
// completion queue, at most IDPF_TX_COMPLQ_CLEAN_BUDGET descriptors.
func (d *IDPF) Poll(ctx driver.Ctx, v int, budget int) (int, bool) {
	if v >= len(d.qs) {
		return 0, true // an RX-only vector: the host cleans its RX ring
	}
	vec := &d.vecs[v]
	vec.BeginPoll()
	q := d.qs[v]
	q.stats.Polls++
	left := d.work
	var pkts, segs, bytes int // segs: the stats' packets, a TSO skb's segments
	for left > 0 {
		// The generation bit of the next completion, read live: one the
		// device writes while this clean runs is taken in it.
		now := ctx.Now()
		useFetch := len(q.fetch) > 0 && q.fetch[0].at <= now &&
			(len(q.rs) == 0 || q.fetch[0].at <= q.rs[0].at)
		if useFetch {
			// IDPF_TXD_COMPLT_RE: idpf_tx_splitq_clean up to the reported
			// head frees descriptor ring space.
			q.NTC = q.fetch[0].head
			q.fetch = q.fetch[1:]
			q.reCompl++
		} else if len(q.rs) > 0 && q.rs[0].at <= now {
			// IDPF_TXD_COMPLT_RS: idpf_tx_clean_bufs by completion tag.
			c := q.rs[0]
			q.rs = q.rs[1:]
			ctx.Spend(d.costs.DescClean)
			ctx.Consume(c.h)
			pkts++
			segs += int(c.segs)
			bytes += int(c.bytes)
			q.rsCompl++
		} else {
			break // no more completions written (generation bit check)
		}
		q.numCompletions++ // complq->num_completions
		left--
	}
	q.stats.Packets += uint64(segs) // cleaned_stats.packets: segments, as ethtool and the TX DIM count
	q.stats.Bytes += uint64(bytes)
	// End of idpf_tx_clean_complq: complq_ok, then per TX queue that
	// cleaned bytes, __netif_txq_completed_wake (BQL completion, then a
	// wake when IDPF_DESC_UNUSED >= IDPF_TX_WAKE_THRESH, unless dont_wake).
	complqOK := q.complqPending() <= uint64(q.complSize>>1)
	if bytes > 0 {
		ctx.CompletedQueue(v, pkts, bytes)
		if q.Unused() >= d.wakeThresh && ctx.QueueStopped(v) {
			if complqOK {
				ctx.WakeQueue(v)
				q.stats.Restart++
			} else {
				q.complqWakeBlock++
			}
		}
	}
	complete := left > 0
	// napi_complete_done -> idpf_vport_intr_update_itr_ena_irq ->
	// idpf_net_dim; idpf_tx_dim_work writes the ITR.
	return vec.PollDone(ctx, v, budget, complete, q.nextCompl(), q.dim, &q.stats, func(ix int) sim.Time { return TxITRProfile[ix] })
}

// Stats implements driver.Driver.
func (d *IDPF) Stats() []driver.QueueStats {
	out := make([]driver.QueueStats, len(d.qs))
	for i, q := range d.qs {
		out[i] = q.stats
		out[i].Irqs = d.vecs[i].Irqs
		out[i].Extra = []driver.Counter{
			{Name: "ring_used", Value: uint64(q.Used())},
			{Name: "complq_pending", Value: q.complqPending()},
			{Name: "complq_max_pending", Value: q.maxPending},
			{Name: "re_set", Value: q.reSet},
			{Name: "re_completions", Value: q.reCompl},
			{Name: "rs_completions", Value: q.rsCompl},
			{Name: "busy_low_txq_descs", Value: q.busyDescs},
			{Name: "busy_too_many_pend_compl", Value: q.busyCompl},
			{Name: "wake_blocked_complq", Value: q.complqWakeBlock},
		}
		if q.dim != nil {
			out[i].Extra = append(out[i].Extra, q.dim.Counters(d.vecs[i].ITR)...)
		}
		out[i].Ethtool = ethtool(i, q.stats)
	}
	return out
}

// ethtool is a queue's part of idpf's `ethtool -S` (idpf_ethtool.c,
// idpf_get_stat_strings): the port lines (tx-busy_events, the queues'
// q_busy summed; tx-unicast_pkts), then tx_q-%u_pkts and tx_q-%u_bytes
// ("%s_q-%u_%s"). Only the lines the model counts.
func ethtool(q int, st driver.QueueStats) []driver.Counter {
	return []driver.Counter{
		{Name: "tx-busy_events", Value: st.Busy, Dev: true},
		{Name: "tx-unicast_pkts", Value: st.Packets, Dev: true},
		{Name: fmt.Sprintf("tx_q-%d_pkts", q), Value: st.Packets},
		{Name: fmt.Sprintf("tx_q-%d_bytes", q), Value: st.Bytes},
	}
}
