// Package mlx5 models the transmit path of NVIDIA ConnectX-5/6 NICs
// (mlx5e, drivers/net/ethernet/mellanox/mlx5/core/en_tx.c): a send queue
// (SQ) measured in 64-byte WQE basic blocks (WQEBBs), small linear skbs
// packed into enhanced multi-packet WQEs (MPWQE, the skb_tx_mpwqe private
// flag, on where the device supports it), the queue stopped while less
// than its stop room is free, BQL through __netdev_tx_sent_queue with
// xmit_more, and, what sets mlx5 apart from the Intel models here, a
// completion (CQE) only for the WQE the driver rings the doorbell for:
// mlx5e_notify_hw sets MLX5_WQE_CTRL_CQ_UPDATE on it, and
// mlx5e_poll_tx_cq completes every WQE up to a CQE's wqe_counter, up to
// MLX5E_TX_CQ_POLL_BUDGET CQEs a poll. One clean can so hand BQL
// thousands of packets, where ice's and idpf's per-packet completions
// stop at their 256-packet clean budgets. TX interrupts are moderated by
// lib/dim's TX profiles in EQE mode (tx_dim_enabled where the device has
// cq_moderation and, since 6.10, cq_period_mode_modify). The receive
// side is not modelled.
package mlx5

import (
	"fmt"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Constants from en.h, en/txrx.h, en/params.c and include/linux/mlx5/qp.h.
const (
	// MLX5E_PARAMS_{MINIMUM,DEFAULT,MAXIMUM}_LOG_SQ_SIZE: the SQ holds
	// 2^log WQEBBs; ethtool -G tx N rounds N up to a power of two
	// (mlx5e_ethtool_set_ringparam: order_base_2).
	MinLogSQSize     = 6
	DefaultLogSQSize = 10
	MaxLogSQSize     = 13
	// SendWQEBBNumDS is MLX5_SEND_WQEBB_NUM_DS: 16-byte data segments a
	// WQEBB holds.
	SendWQEBBNumDS = 4
	// EmptyDSCount is MLX5E_TX_WQE_EMPTY_DS_COUNT: the control and
	// Ethernet segments every WQE starts with.
	EmptyDSCount = 2
	// MaxWQEBBs is MLX5_SEND_WQE_MAX_WQEBBS, the largest WQE of a
	// ConnectX-5/6 (max_wqe_sz_sq 1024 bytes).
	MaxWQEBBs = 16
	// MaxMPWWQEBBs is a MPWQE session's largest size: the largest WQE
	// less one WQEBB, so that a full session is cache-aligned with 64-byte
	// lines (MLX5E_TX_MPW_MAX_WQEBBS, mlx5e_get_max_sq_aligned_wqebbs).
	MaxMPWWQEBBs = MaxWQEBBs - 1
	// maxMPWDS: a session that starts with a page's room for a full one
	// is full at this many data segments (mlx5e_tx_mpwqe_is_full): 58
	// packets after the two headers.
	maxMPWDS = MaxMPWWQEBBs * SendWQEBBNumDS
	// StopRoom is mlx5e_calc_sq_stop_room without kTLS: room for the
	// largest WQE across a wrap (mlx5e_stop_room_for_max_wqe: 2 x 16 - 1)
	// plus, with MPWQE, a full session's (2 x 15 - 1).
	StopRoom = (2*MaxWQEBBs - 1) + (2*MaxMPWWQEBBs - 1)
	// StopRoomNoMPWQE is the stop room with skb_tx_mpwqe off.
	StopRoomNoMPWQE = 2*MaxWQEBBs - 1
	// TxCQPollBudget is MLX5E_TX_CQ_POLL_BUDGET: CQEs one poll takes.
	TxCQPollBudget = 128
	// DfltTxCQModeration is MLX5E_PARAMS_DEFAULT_TX_CQ_MODERATION_USEC,
	// the static moderation once adaptive-tx is off.
	DfltTxCQModeration = 16 * sim.Microsecond
	// MaxCoalTime is MLX5E_MAX_COAL_TIME = MLX5_MAX_CQ_PERIOD, the 12-bit
	// cq_period field of the CQ context: 4095 us.
	MaxCoalTime = 4095 * sim.Microsecond
	DefaultRate = 100_000_000_000 // ConnectX-5/6 at 100 Gbit/s
	// fragBytes: the page fragments a TSO skb's payload sits in (TCP's
	// 32 KB sk_page_frag), one data segment each.
	fragBytes = 32 * 1024
	// PageWQEBBs: the SQ's buffer is 4 KB pages of 64 WQEBBs, and a WQE
	// never crosses one (mlx5_wq_cyc_get_contig_wqebbs): what is left of
	// a page too short for the next WQE is filled with NOPs, except
	// before a MPWQE session, which takes what is left (6.15 on).
	PageWQEBBs = 4096 / 64
	// maxLinearTCP: a TCP skb longer than its headers (Ethernet, IPv4
	// and the largest TCP header) carries data, which tcp_sendmsg puts in
	// page fragments: not linear, so never in a MPWQE session.
	maxLinearTCP = 14 + 20 + 60
	// inlineDS: the headers mlx5e_tx_get_gso_ihs inlines into a TSO
	// WQE's Ethernet segment (~66 bytes of Ethernet, IP and TCP with
	// options): four more data segments.
	inlineDS = 4
	// ethZLen is ETH_ZLEN: mlx5e_sq_xmit_prepare counts a non-GSO skb
	// as at least this many bytes (attr->num_bytes).
	ethZLen = 60
)

// TxProfile is lib/dim's NET_DIM_TX_EQE_PROFILES in us (mlx5e sets
// tx_cq_period_mode START_FROM_EQE); DimDefaultProfileIx is
// NET_DIM_DEF_PROFILE_EQE, where mlx5e_set_tx_cq_mode_params starts. The
// profiles' 128-CQE count (cq_max_count) is not modelled: at one CQE a
// doorbell E1's queues gather ~114 (unpinned) to ~138 (pinned, 6.18)
// in 128 us, so the count would cut the longest period by under a
// tenth; a review's stand-in (a 112 us top profile) moved E1's rates
// by under 0.3%.
var TxProfile = [...]sim.Time{1 * sim.Microsecond, 8 * sim.Microsecond, 32 * sim.Microsecond, 64 * sim.Microsecond, 128 * sim.Microsecond}

const DimDefaultProfileIx = 1

func init() {
	driver.Register("mlx5", "NVIDIA ConnectX-5/6 100G, transmit side (drivers/net/ethernet/mellanox/mlx5/core)", func() driver.Driver { return &MLX5{} })
}

// pkt is one skb the SQ holds (sq->db.skb_fifo, with what the clean
// reports to BQL).
type pkt struct {
	h     skb.Handle
	bytes uint32 // attr->num_bytes: what BQL was told
	segs  uint16
}

// wqe is one posted WQE: a single skb's, or a MPWQE session's packets.
type wqe struct {
	first, n int // packets [first, first+n) of the fifo
	wqebbs   int
	doneAt   sim.Time // its last packet left the wire (valid once rung)
}

// sq is one send queue with its completion queue.
type sq struct {
	size int // WQEBBs
	used int // sq->pc - sq->cc
	pc   int // sq->pc within the SQ: where the next WQE goes
	// Packets and WQEs in fixed rings (no allocation per packet).
	pkts                   []pkt
	pTail                  int
	wqes                   []wqe
	wHead, wTail, wN, wRun int // wRun: WQEs handed to the NIC so far (from wHead)
	// cqes are the WQEs a CQE was asked for, oldest first (indices into
	// wqes): the NIC writes one when that WQE's packets are out.
	cqes sim.Fifo[int]
	// The open MPWQE session (sq->mpwqe).
	open                 bool
	sFirst, sN, sDS      int
	sMax                 int // session->ds_count_max
	dim                  *driver.DIM
	stats                driver.QueueStats
	xmitMore, cqesPolled uint64
	mpwqeBlks, mpwqePkts uint64
	nops                 uint64
	// The kernel's tx_packets and tx_bytes count at transmit
	// (mlx5e_sq_xmit_prepare), GSO skbs by their segments.
	xmitPkts, xmitBytes uint64
	maxUsed             int
}

// MLX5 is the driver model.
type MLX5 struct {
	sqs   []*sq
	vecs  []driver.Vector
	wire  driver.Wire
	costs *sim.Costs
	mpwqe bool
	work  int // CQEs a poll
	stop  int // stop room in WQEBBs
}

// Init implements driver.Driver. Options (ethtool words): "tx N" the SQ
// size in WQEBBs (rounded up to a power of two, 64-8192), "adaptive-tx
// on|off" TX DIM (on by default), "tx-usecs N" the static CQ
// moderation period (kept for when adaptive-tx is off:
// mlx5e_ethtool_set_coalesce stores it and leaves tx_dim_enabled as
// ethtool sends it, on unless "adaptive-tx off"), "skb_tx_mpwqe on|off" the
// private flag (on), "work N" CQEs a poll (a lab knob; the driver's is
// 128).
func (d *MLX5) Init(s driver.Setup, args []string) (driver.Info, error) {
	o := driver.RingOpts{Ring: 1 << DefaultLogSQSize, ITR: DfltTxCQModeration, Work: TxCQPollBudget}
	var ad driver.Adaptive
	d.mpwqe = true
	err := driver.ParseRingOpts("mlx5", args, &o, []string{"tx", "tx-usecs", "adaptive-tx", "skb_tx_mpwqe", "work"}, func(key, val string) (bool, error) {
		if key == "skb_tx_mpwqe" {
			switch val {
			case "on", "off":
				d.mpwqe = val == "on"
				return true, nil
			}
			return true, fmt.Errorf("mlx5: skb_tx_mpwqe %q: want on or off", val)
		}
		return ad.Opt("mlx5", key, val)
	})
	if err != nil {
		return driver.Info{}, err
	}
	if o.Rx != 0 || o.RxITRSet {
		return driver.Info{}, fmt.Errorf("mlx5: the receive side is not modelled (no rx options)")
	}
	if err := o.MaxUsecs("mlx5", "MLX5E_MAX_COAL_TIME", MaxCoalTime); err != nil { // mlx5e_ethtool_set_coalesce: -ERANGE
		return driver.Info{}, err
	}
	if o.Ring < 1<<MinLogSQSize || o.Ring > 1<<MaxLogSQSize {
		return driver.Info{}, fmt.Errorf("mlx5: tx ring size %d must be in [%d, %d]", o.Ring, 1<<MinLogSQSize, 1<<MaxLogSQSize)
	}
	size := 1
	for size < o.Ring {
		size <<= 1
	}
	// mlx5e_validate_params wants the stop room under the SQ size: the
	// smallest SQ, 64 WQEBBs, already has it.
	d.stop = StopRoomNoMPWQE
	if d.mpwqe {
		d.stop = StopRoom
	}
	d.costs, d.work = s.Costs, o.Work
	rate := s.RateBps
	if rate == 0 {
		rate = DefaultRate
	}
	d.wire.RateBps = rate
	adaptive := ad.Tx()
	// One channel (SQ, CQ, vector) a queue; the receive side is not
	// modelled, so a setup with RX queues gets no Rx and the host says so.
	d.sqs = make([]*sq, s.NumTxQ)
	d.vecs = make([]driver.Vector, s.NumTxQ)
	qv := make([]int, s.NumTxQ)
	maxPkts := size*SendWQEBBNumDS + maxMPWDS
	for i := range d.sqs {
		q := &sq{size: size, pkts: make([]pkt, maxPkts), wqes: make([]wqe, size), stats: driver.QueueStats{Queue: i}}
		d.vecs[i].ITR = o.ITR
		if adaptive {
			// mlx5e_build_nic_params: tx_dim_enabled; the CQ is created
			// with the default EQE profile's period, while the zeroed
			// struct dim starts at profile 0 (its first step from
			// parking goes right).
			q.dim = driver.NewDIM(0, len(TxProfile))
			d.vecs[i].ITR = TxProfile[DimDefaultProfileIx]
		}
		d.sqs[i], qv[i] = q, i
	}
	return driver.Info{RateBps: rate, RingSize: size, BQL: true, Vectors: s.NumTxQ, QueueVec: qv, Wire: true}, nil
}

// hasRoom is mlx5e_wqc_has_room_for(wq, cc, pc, n).
func (q *sq) hasRoom(n int) bool { return q.size-q.used >= n }

// checkStop is mlx5e_tx_check_stop: stop the queue when less than the
// stop room is free.
func (d *MLX5) checkStop(ctx driver.Ctx, i int, q *sq) {
	if !q.hasRoom(d.stop) && !ctx.QueueStopped(i) {
		ctx.StopQueue(i)
		q.stats.Stopped++
	}
}

// pushWQE completes a WQE of n packets from first taking wqebbs.
func (q *sq) pushWQE(first, n, wqebbs int) {
	q.wqes[q.wTail] = wqe{first: first, n: n, wqebbs: wqebbs}
	q.wTail = (q.wTail + 1) % len(q.wqes)
	q.wN++
	q.used += wqebbs
	q.pc = (q.pc + wqebbs) % q.size
	q.maxUsed = max(q.maxUsed, q.used)
}

// nextPI is mlx5e_txqsq_get_next_pi(sq, size): a WQE of size WQEBBs
// must fit in what is left of the current page, or that rest is filled
// with NOP WQEs of one WQEBB each (sq->stats->nop), which take room like
// any WQE until a CQE past them frees it.
func (q *sq) nextPI(size int) {
	if contig := PageWQEBBs - q.pc%PageWQEBBs; contig < size {
		q.pushWQE(q.pTail, 0, contig)
		q.nops += uint64(contig)
	}
}

// numBytes is mlx5e_sq_xmit_prepare's attr->num_bytes: a GSO skb's
// length with every segment's headers (skb->len + (gso_segs - 1) * ihs,
// what the model's Len already is), any other skb's length but at least
// ETH_ZLEN. It is what tx_bytes counts, and what a WQE of its own tells
// BQL (mlx5e_txwqe_complete) and its completion reports; a MPWQE session
// tells BQL skb->len (txd.len) and its completion reports the same sum
// (session->bytes_count).
func numBytes(p skb.Packet) uint32 {
	if p.GSOSegs > 1 {
		return p.Len
	}
	return max(p.Len, ethZLen)
}

// pushPkt puts p on the skb fifo, counting bytes for BQL.
func (q *sq) pushPkt(p skb.Packet, bytes uint32) int {
	at := q.pTail
	q.pkts[at] = pkt{h: p.Handle, bytes: bytes, segs: max(p.GSOSegs, 1)}
	q.pTail = (q.pTail + 1) % len(q.pkts)
	return at
}

// sessionComplete is mlx5e_tx_mpwqe_session_complete: the session
// becomes a WQE of DIV_ROUND_UP(ds_count, 4) WQEBBs.
func (d *MLX5) sessionComplete(ctx driver.Ctx, i int, q *sq) {
	q.open = false
	q.pushWQE(q.sFirst, q.sN, (q.sDS+SendWQEBBNumDS-1)/SendWQEBBNumDS)
	d.checkStop(ctx, i, q)
}

// notifyHW is mlx5e_notify_hw: the doorbell. The last WQE asks for a
// CQE (MLX5_WQE_CTRL_CQ_UPDATE); the NIC sends every WQE rung so far.
func (d *MLX5) notifyHW(ctx driver.Ctx, i int, q *sq) {
	ctx.Spend(d.costs.Doorbell)
	q.stats.Doorbells++
	t := ctx.Now() + sim.Time(d.costs.DMALatency)
	last := -1
	for q.wRun < q.wN {
		w := &q.wqes[(q.wHead+q.wRun)%len(q.wqes)]
		for k := 0; k < w.n; k++ {
			p := &q.pkts[(w.first+k)%len(q.pkts)]
			w.doneAt = d.wire.SendTSO(t, p.bytes, p.segs)
		}
		last = (q.wHead + q.wRun) % len(q.wqes)
		q.wRun++
	}
	if last < 0 {
		return
	}
	q.cqes.Push(last)
	d.vecs[i].Notify(ctx, i, q.wqes[last].doneAt)
}

// Xmit implements driver.Driver: mlx5e_xmit for each packet of the bulk.
func (d *MLX5) Xmit(ctx driver.Ctx, i int, batch []skb.Packet) (int, driver.TxCode) {
	q := d.sqs[i]
	for k, p := range batch {
		more := k < len(batch)-1
		// mlx5e_tx_skb_supports_mpwqe: linear, no VLAN, no inline.
		linear := p.GSOSegs <= 1 && (p.Keys.Proto != 6 || p.Len <= maxLinearTCP)
		// The stop room guarantees the largest WQE (and a session) fits
		// while the queue runs; a full SQ here would be a model bug, so
		// it is refused as the kernel's would overwrite.
		need := MaxMPWWQEBBs // mlx5e_txqsq_get_next_pi for a session
		if !linear || !d.mpwqe {
			need = wqebbsFor(p)
		}
		if !q.open && !q.hasRoom(need) {
			q.stats.Busy++
			return k, driver.TxBusy
		}
		ctx.Spend(d.costs.DriverXmit)
		if more {
			q.xmitMore++
		}
		q.xmitPkts += uint64(max(p.GSOSegs, 1))
		q.xmitBytes += uint64(numBytes(p))
		if linear && d.mpwqe {
			// mlx5e_sq_xmit_mpwqe.
			if !q.open {
				// mlx5e_tx_mpwqe_session_start: since 9da10c2d69c3
				// (6.15), mlx5e_txqsq_get_next_pi_anysize: no NOPs, the
				// session may fill what is left of the page, up to a full
				// one (ds_count_max).
				contig := PageWQEBBs - q.pc%PageWQEBBs
				q.sMax = min(contig, MaxMPWWQEBBs) * SendWQEBBNumDS
				q.open, q.sFirst, q.sN, q.sDS = true, q.pTail, 0, EmptyDSCount
				q.mpwqeBlks++
			}
			q.pushPkt(p, p.Len)
			q.sN++
			q.sDS++
			q.mpwqePkts++
			if q.sDS == q.sMax {
				// Full: complete it (may stop the queue, and so affect
				// __netdev_tx_sent_queue's answer).
				d.sessionComplete(ctx, i, q)
				if ctx.SentQueueMore(i, int(p.Len), more) {
					d.notifyHW(ctx, i, q)
				}
			} else if ctx.SentQueueMore(i, int(p.Len), more) {
				// Asked to ring the doorbell: complete the session first.
				d.sessionComplete(ctx, i, q)
				d.notifyHW(ctx, i, q)
			}
		} else {
			// mlx5e_tx_mpwqe_ensure_complete, then mlx5e_sq_xmit_wqe.
			if q.open {
				d.sessionComplete(ctx, i, q)
			}
			q.nextPI(wqebbsFor(p))
			n := numBytes(p)
			first := q.pushPkt(p, n)
			q.pushWQE(first, 1, wqebbsFor(p))
			d.checkStop(ctx, i, q)
			if ctx.SentQueueMore(i, int(n), more) {
				d.notifyHW(ctx, i, q)
			}
		}
		if more && ctx.QueueStopped(i) {
			return k + 1, driver.TxOK // dev_hard_start_xmit stops here
		}
	}
	return len(batch), driver.TxOK
}

// wqebbsFor is mlx5e_sq_calc_wqe_attr's num_wqebbs for a WQE of its
// own: the control and Ethernet segments, then !!attr->headlen +
// nr_frags data segments and the inlined headers. A TSO skb's headers
// are inlined (attr->ihs) and its linear part is only those headers
// (tcp_sendmsg puts the payload in page fragments), so headlen = 0: no
// segment for the head, four of inlined headers, one a 32 KB fragment
// (the model's count of fragments: the kernel's depends on where the
// payload starts in the socket's page fragment). Any other skb has its
// head's segment and at most one fragment's: one WQEBB either way.
func wqebbsFor(p skb.Packet) int {
	ds := EmptyDSCount + 1
	if p.GSOSegs > 1 {
		ds = EmptyDSCount + inlineDS + (int(p.Len)+fragBytes-1)/fragBytes
	}
	return min((ds+SendWQEBBNumDS-1)/SendWQEBBNumDS, MaxWQEBBs)
}

// nextCQE is when the oldest outstanding CQE lands, or -1.
func (q *sq) nextCQE() sim.Time {
	if q.cqes.Len() == 0 {
		return -1
	}
	return q.wqes[q.cqes.Peek()].doneAt
}

// Poll implements driver.Driver: mlx5e_napi_poll -> mlx5e_poll_tx_cq.
// Each CQE read (its time checked afresh, as the loop reads each CQE's
// ownership bit) completes every WQE up to the one it names, and their
// skbs; busy when the budget's CQEs were all taken.
func (d *MLX5) Poll(ctx driver.Ctx, v int, budget int) (int, bool) {
	if v >= len(d.sqs) {
		return 0, true
	}
	vec := &d.vecs[v]
	vec.BeginPoll()
	q := d.sqs[v]
	q.stats.Polls++
	npkts, nbytes, ncqe := 0, 0, 0
	for ncqe < d.work && q.cqes.Len() > 0 && q.nextCQE() <= ctx.Now() {
		upTo := q.cqes.Pop()
		ncqe++
		for {
			wi := q.wHead
			w := q.wqes[wi]
			for k := 0; k < w.n; k++ {
				p := &q.pkts[(w.first+k)%len(q.pkts)]
				ctx.Spend(d.costs.DescClean)
				ctx.Consume(p.h)
				npkts++
				nbytes += int(p.bytes)
				*p = pkt{}
			}
			q.used -= w.wqebbs
			q.wqes[wi] = wqe{}
			q.wHead = (q.wHead + 1) % len(q.wqes)
			q.wN--
			q.wRun--
			if wi == upTo {
				break
			}
		}
	}
	if ncqe > 0 { // no CQE: mlx5e_poll_tx_cq returns before BQL and the wake
		q.cqesPolled += uint64(ncqe)
		q.stats.Packets += uint64(npkts)
		q.stats.Bytes += uint64(nbytes)
		ctx.CompletedQueue(v, npkts, nbytes)
		if ctx.QueueStopped(v) && q.hasRoom(d.stop) {
			ctx.WakeQueue(v) // netif_tx_wake_queue; sq->stats->wake++
			q.stats.Restart++
		}
	}
	complete := ncqe < d.work
	// napi_complete_done -> mlx5e_handle_tx_dim: the CQ's event_ctr and
	// sq->stats, counted at transmit; mlx5e_tx_dim_work writes the period.
	sample := driver.QueueStats{Packets: q.xmitPkts, Bytes: q.xmitBytes}
	return vec.PollDone(ctx, v, budget, complete, q.nextCQE(), q.dim, &sample, func(ix int) sim.Time { return TxProfile[ix] })
}

// Stats implements driver.Driver.
func (d *MLX5) Stats() []driver.QueueStats {
	out := make([]driver.QueueStats, len(d.sqs))
	for i, q := range d.sqs {
		out[i] = q.stats
		out[i].Irqs = d.vecs[i].Irqs
		out[i].Extra = []driver.Counter{
			{Name: "ring_used", Value: uint64(q.used)},
			{Name: "ring_used_max", Value: uint64(q.maxUsed)},
		}
		if q.dim != nil {
			out[i].Extra = append(out[i].Extra, q.dim.Counters(d.vecs[i].ITR)...)
		}
		out[i].Ethtool = ethtool(i, q)
	}
	return out
}

// ethtool is a queue's part of mlx5e's `ethtool -S` (en_stats.c): the
// software counters, the sums over the SQs (sw_stats_desc's order), then
// the SQ's tx%d_ lines (sq_stats_desc's). tx_packets and tx_bytes count
// at transmit, as mlx5e_sq_xmit_prepare does. Only the lines the model
// counts.
func ethtool(i int, q *sq) []driver.Counter {
	st := q.stats
	return []driver.Counter{
		{Name: "tx_packets", Value: q.xmitPkts, Dev: true},
		{Name: "tx_bytes", Value: q.xmitBytes, Dev: true},
		{Name: "tx_nop", Value: q.nops, Dev: true},
		{Name: "tx_mpwqe_blks", Value: q.mpwqeBlks, Dev: true},
		{Name: "tx_mpwqe_pkts", Value: q.mpwqePkts, Dev: true},
		{Name: "tx_queue_stopped", Value: st.Stopped, Dev: true},
		{Name: "tx_xmit_more", Value: q.xmitMore, Dev: true},
		{Name: "tx_cqes", Value: q.cqesPolled, Dev: true},
		{Name: "tx_queue_wake", Value: st.Restart, Dev: true},
		{Name: fmt.Sprintf("tx%d_packets", i), Value: q.xmitPkts},
		{Name: fmt.Sprintf("tx%d_bytes", i), Value: q.xmitBytes},
		{Name: fmt.Sprintf("tx%d_nop", i), Value: q.nops},
		{Name: fmt.Sprintf("tx%d_mpwqe_blks", i), Value: q.mpwqeBlks},
		{Name: fmt.Sprintf("tx%d_mpwqe_pkts", i), Value: q.mpwqePkts},
		{Name: fmt.Sprintf("tx%d_stopped", i), Value: st.Stopped},
		{Name: fmt.Sprintf("tx%d_xmit_more", i), Value: q.xmitMore},
		{Name: fmt.Sprintf("tx%d_cqes", i), Value: q.cqesPolled},
		{Name: fmt.Sprintf("tx%d_wake", i), Value: st.Restart},
	}
}
