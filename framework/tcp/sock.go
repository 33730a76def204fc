package tcp

import (
	"math"
	"sort"

	"github.com/txlab/txlab/framework/sim"
)

// Segment states on the scoreboard (TCP_SKB_CB(skb)->sacked).
const (
	segSacked  = 1 << 0 // TCPCB_SACKED_ACKED
	segRetrans = 1 << 1 // TCPCB_SACKED_RETRANS: a retransmission is in flight
	segLost    = 1 << 2 // TCPCB_LOST
	segEverRtx = 1 << 3 // TCPCB_EVER_RETRANS: no RTT sample from it (Karn)
)

type segState struct {
	flags uint8
	xmit  sim.Time // the last (re)transmission: skb->skb_mstamp_ns
}

// tsEntry is one send on the time-ordered list (tsorted_sent_queue):
// the segment and when it left; stale once the segment is acked,
// SACKed or sent again.
type tsEntry struct {
	seq  int64
	xmit sim.Time
}

// Sock is the sending half of a TCP connection (struct tcp_sock's
// sender fields), in segments.
type Sock struct {
	CC Congestion

	Cwnd      uint32 // snd_cwnd
	Ssthresh  uint32 // snd_ssthresh
	CwndCnt   uint32 // snd_cwnd_cnt
	CwndClamp uint32 // snd_cwnd_clamp

	SndUna   int64 // snd_una: first unacknowledged segment
	SndNxt   int64 // snd_nxt: next new segment
	WriteSeq int64 // write_seq: segments the application has queued

	SackedOut  uint32 // sacked_out
	LostOut    uint32 // lost_out
	RetransOut uint32 // retrans_out

	maxPacketsOut uint32 // max_packets_out
	isCwndLimited bool   // is_cwnd_limited
	cwndUsageSeq  int64  // cwnd_usage_seq

	SrttUs    uint32 // srtt_us: smoothed RTT << 3
	mdevUs    uint32 // mdev_us: mean deviation << 2
	mdevMaxUs uint32
	RttvarUs  uint32
	rttSeq    int64
	RTO       sim.Time // icsk_rto
	// retransmits is icsk_retransmits: RTOs since snd_una last
	// advanced, which tcp_enter_loss tests. icsk_backoff (cleared on an
	// RTT sample) is read only by probe0, the ICMP RTO revert,
	// tcp_metrics and tcp_info: not modelled.
	retransmits int
	MinRTTUs    uint32 // tcp_min_rtt (the window is 300 s: the run's minimum)

	// PacingRate is sk_pacing_rate in bytes/s (math.MaxUint64: none
	// yet, ~0UL); PacingFQ is sk_pacing_status == SK_PACING_FQ, set
	// once sch_fq has seen the socket (fq_classify).
	PacingRate  uint64
	PacingFQ    bool
	WstampNs    sim.Time // tcp_wstamp_ns: the next EDT departure
	dataSegsOut uint64

	CAState      CAState
	HighSeq      int64 // high_seq
	PriorCwnd    uint32
	PrrDelivered uint32
	PrrOut       uint32
	undoMarker   bool

	Delivered   uint32 // delivered: segments acked or SACKed
	DeliveredCE uint32 // delivered_ce: of them, on ACKs with ECE

	// ECN is whether the connection negotiated ECN (ECT(0) on data);
	// queueCWR is TCP_ECN_QUEUE_CWR: the next data segment says CWR.
	ECN      bool
	queueCWR bool

	LsndTime uint32 // lsndtime, jiffies of the last data sent

	now sim.Time

	// The scoreboard: one state per segment from SndUna to SndNxt.
	board    []segState
	boardOff int
	tsorted  []tsEntry
	tsHead   int
	rtxHint  int64 // no lost, unretransmitted segment before it
	// rtxSkbs holds the first segment of each skb in the rtx queue
	// (tcp_rtx_queue), oldest first from rtxSkbsOff; the oldest may
	// start below SndUna (partly acked: tcp_trim_head keeps it one skb).
	rtxSkbs    []int64
	rtxSkbsOff int

	// RACK (tcp_recovery.c): the newest transmit time among delivered
	// segments and that segment's RTT.
	rackMstamp sim.Time
	rackRTTUs  int64
	sackCache  []Range // recv_sack_cache: the blocks of the last ACK
	// rtoAt is when the write timer expires (icsk_timeout) and pending
	// what for (icsk_pending: timeRetrans, timeLossProbe; 0 cleared).
	rtoAt   sim.Time
	pending uint8

	// EarlyRetrans is net.ipv4.tcp_early_retrans: 3 (the default) or
	// 4 turns tail loss probes on.
	EarlyRetrans int
	// tlpHighSeq is tlp_high_seq: snd_nxt when the outstanding loss
	// probe went (0: none); tlpRetrans is tlp_retrans: it was a
	// retransmission, not new data.
	tlpHighSeq int64
	tlpRetrans bool

	// Counters.
	RetransSegs uint64 // segments retransmitted (total_retrans)
	LostSegs    uint64 // segments marked lost (tp->lost)
	RTOs        uint64
	Recoveries  uint64
	CWRs        uint64
	// LossProbes is LINUX_MIB_TCPLOSSPROBES (nstat's
	// TcpExtTCPLossProbes): probes sent; LossProbeRecoveries is
	// LINUX_MIB_TCPLOSSPROBERECOVERY: episodes a retransmission probe
	// ended by repairing a loss.
	LossProbes          uint64
	LossProbeRecoveries uint64
}

// NewSock makes a connection's sender at time now, its handshake done:
// cwnd TCP_INIT_CWND, ssthresh infinite, RTO 1 s, no pacing rate yet.
func NewSock(cc Congestion, ecn bool, now sim.Time) *Sock {
	tp := &Sock{CC: cc, Cwnd: InitCwnd, Ssthresh: InfiniteSsthresh, CwndClamp: math.MaxUint32,
		RTO: TimeoutInit, MinRTTUs: math.MaxUint32, PacingRate: math.MaxUint64, ECN: ecn || cc.NeedsECN(), now: now,
		EarlyRetrans: 3}
	cc.Init(tp)
	return tp
}

// SetNow sets the connection's clock (tcp_mstamp_refresh).
func (tp *Sock) SetNow(t sim.Time) {
	if t > tp.now {
		tp.now = t
	}
}

// Now is the connection's clock.
func (tp *Sock) Now() sim.Time { return tp.now }

// Jiffies is tcp_jiffies32 (HZ=1000), starting at 1 so that 0 keeps
// its meaning of "never" for the modules.
func (tp *Sock) Jiffies() uint32 { return uint32(tp.now/sim.Millisecond) + 1 }

// ClockUs is tcp_mstamp in microseconds (bictcp_clock_us).
func (tp *Sock) ClockUs() uint32 { return uint32(tp.now / sim.Microsecond) }

// InSlowStart is tcp_in_slow_start.
func (tp *Sock) InSlowStart() bool { return tp.Cwnd < tp.Ssthresh }

// PacketsOut is packets_out: segments sent and not cumulatively acked.
func (tp *Sock) PacketsOut() uint32 { return uint32(tp.SndNxt - tp.SndUna) }

// RtxQueueEmptyOrSingleSkb is tcp_rtx_queue_empty_or_single_skb
// (f921a4a5bffa, 6.6): the retransmit queue holds at most one skb
// (tcp_clean_rtx_queue trims a partly acked head skb, tcp_trim_head;
// tcp_sacktag_walk splits a partly SACKed one).
func (tp *Sock) RtxQueueEmptyOrSingleSkb() bool { return tp.RtxSkbs() <= 1 }

// RtxSkbs is the number of skbs in the retransmit queue, each with its
// head charged to sk_wmem_queued: one per skb tcp_write_xmit sent
// (tso_fragment cut it from the write queue at tcp_tso_segs or cwnd),
// one more per piece tcp_fragment split off (for a retransmission,
// __tcp_retransmit_skb; at a SACK block's edge, tcp_match_skb_to_sack),
// one fewer per skb SACK processing emptied into the one before it
// (tcp_shift_skb_data), each freed once the cumulative ACK covers it
// (tcp_clean_rtx_queue). A partial ACK trims the oldest
// (tcp_trim_head): its head stays. tcp_collapse_retrans merges only
// skbs shorter than one MSS (tcp_retrans_try_collapse), which a bulk
// sender's never are.
func (tp *Sock) RtxSkbs() int { return len(tp.rtxSkbs) - tp.rtxSkbsOff }

// rtxSkbEnd is the end of the rtx queue's i-th skb (from the oldest).
func (tp *Sock) rtxSkbEnd(i int) int64 {
	if j := tp.rtxSkbsOff + i + 1; j < len(tp.rtxSkbs) {
		return tp.rtxSkbs[j]
	}
	return tp.SndNxt
}

// rtxSkbIndex is the index (from the oldest) of the rtx queue's skb
// holding segment seq (SndUna <= seq < SndNxt).
func (tp *Sock) rtxSkbIndex(seq int64) int {
	live := tp.rtxSkbs[tp.rtxSkbsOff:]
	return sort.Search(len(live), func(i int) bool { return live[i] > seq }) - 1
}

// rtxSkbStartsAt reports whether an skb of the rtx queue starts at
// segment seq.
func (tp *Sock) rtxSkbStartsAt(seq int64) bool {
	i := tp.rtxSkbIndex(seq)
	return i >= 0 && tp.rtxSkbs[tp.rtxSkbsOff+i] == seq
}

// rtxSkbEndAt is the end of the rtx queue's skb holding segment seq.
func (tp *Sock) rtxSkbEndAt(seq int64) int64 { return tp.rtxSkbEnd(tp.rtxSkbIndex(seq)) }

// cleanRtxSkbs is tcp_clean_rtx_queue's unlinking of the skbs the
// cumulative ACK covers wholly (tcp_rtx_queue_unlink_and_free).
func (tp *Sock) cleanRtxSkbs() {
	for tp.RtxSkbs() > 0 && tp.rtxSkbEnd(0) <= tp.SndUna {
		tp.rtxSkbsOff++
	}
	if tp.rtxSkbsOff >= 32 && tp.rtxSkbsOff >= len(tp.rtxSkbs)/2 { // amortised O(1), as the scoreboard
		tp.rtxSkbs = append(tp.rtxSkbs[:0], tp.rtxSkbs[tp.rtxSkbsOff:]...)
		tp.rtxSkbsOff = 0
	}
}

// fragment is tcp_fragment in the rtx queue (TCP_FRAG_IN_RTX_QUEUE):
// the skb holding segment seq is split so that an skb starts there,
// with a head of its own. Nothing to split at an skb's start, at
// SndUna (the oldest skb is trimmed, tcp_trim_head) or beyond SndNxt.
func (tp *Sock) fragment(seq int64) {
	if seq <= tp.SndUna || seq >= tp.SndNxt {
		return
	}
	live := tp.rtxSkbs[tp.rtxSkbsOff:]
	i := sort.Search(len(live), func(i int) bool { return live[i] >= seq })
	if i < len(live) && live[i] == seq {
		return
	}
	j := tp.rtxSkbsOff + i
	tp.rtxSkbs = append(tp.rtxSkbs, 0)
	copy(tp.rtxSkbs[j+1:], tp.rtxSkbs[j:])
	tp.rtxSkbs[j] = seq
}

// InFlight is tcp_packets_in_flight: packets_out - (sacked_out +
// lost_out) + retrans_out.
func (tp *Sock) InFlight() uint32 {
	return tp.PacketsOut() - (tp.SackedOut + tp.LostOut) + tp.RetransOut
}

// IsCwndLimited is tcp_is_cwnd_limited: cwnd was the limit in the
// current window, or, in slow start, cwnd is below twice what was out.
func (tp *Sock) IsCwndLimited() bool {
	if tp.isCwndLimited {
		return true
	}
	if tp.InSlowStart() {
		return tp.Cwnd < 2*tp.maxPacketsOut
	}
	return false
}

// InCwndReduction is tcp_in_cwnd_reduction: CWR or Recovery.
func (tp *Sock) InCwndReduction() bool { return tp.CAState == CACWR || tp.CAState == CARecovery }

func (tp *Sock) setState(s CAState) {
	tp.CC.SetState(tp, s)
	tp.CAState = s
}

// seg is the scoreboard entry of segment seq (SndUna <= seq < SndNxt).
func (tp *Sock) seg(seq int64) *segState { return &tp.board[tp.boardOff+int(seq-tp.SndUna)] }

// RTTUs is the smoothed RTT in microseconds (srtt_us >> 3).
func (tp *Sock) RTTUs() uint32 { return tp.SrttUs >> 3 }

// rttEstimator is tcp_rtt_estimator (Van Jacobson's, with the kernel's
// mdev_max/rttvar refinements); mrtt in microseconds.
func (tp *Sock) rttEstimator(mrtt int64) {
	m := mrtt
	srtt := tp.SrttUs
	rtoMinUs := uint32(RTOMin / sim.Microsecond)
	if srtt != 0 {
		m -= int64(srtt >> 3)
		srtt = uint32(int64(srtt) + m)
		if m < 0 {
			m = -m
			m -= int64(tp.mdevUs >> 2)
			if m > 0 {
				m >>= 3
			}
		} else {
			m -= int64(tp.mdevUs >> 2)
		}
		tp.mdevUs = uint32(int64(tp.mdevUs) + m)
		if tp.mdevUs > tp.mdevMaxUs {
			tp.mdevMaxUs = tp.mdevUs
			if tp.mdevMaxUs > tp.RttvarUs {
				tp.RttvarUs = tp.mdevMaxUs
			}
		}
		if tp.SndUna > tp.rttSeq {
			if tp.mdevMaxUs < tp.RttvarUs {
				tp.RttvarUs -= (tp.RttvarUs - tp.mdevMaxUs) >> 2
			}
			tp.rttSeq = tp.SndNxt
			tp.mdevMaxUs = rtoMinUs
		}
	} else {
		srtt = uint32(m << 3)
		tp.mdevUs = uint32(m << 1)
		tp.RttvarUs = max(tp.mdevUs, rtoMinUs)
		tp.mdevMaxUs = tp.RttvarUs
		tp.rttSeq = tp.SndNxt
	}
	tp.SrttUs = max(1, srtt)
}

// setRTO is tcp_set_rto: srtt + rttvar, at most TCP_RTO_MAX.
func (tp *Sock) setRTO() {
	tp.RTO = min(tp.tcpSetRTO(), RTOMax)
}

// tcpSetRTO is __tcp_set_rto: icsk_rto is in jiffies, so srtt + rttvar
// rounds up to the next one (usecs_to_jiffies, HZ=1000).
func (tp *Sock) tcpSetRTO() sim.Time {
	us := uint64(tp.SrttUs>>3) + uint64(tp.RttvarUs)
	return sim.Time((us+999)/1000) * sim.Millisecond
}

// UpdatePacingRate is tcp_update_pacing_rate: 200% of cwnd * mss /
// srtt in slow start (below half of ssthresh), 120% after.
func (tp *Sock) UpdatePacingRate() {
	rate := uint64(MSS) * ((1000000 / 100) << 3)
	if tp.Cwnd < tp.Ssthresh/2 {
		rate *= PacingSSRatio
	} else {
		rate *= PacingCARatio
	}
	rate *= uint64(max(tp.Cwnd, tp.PacketsOut()))
	if tp.SrttUs != 0 {
		rate /= uint64(tp.SrttUs)
	}
	tp.PacingRate = rate
}

// TSOSegs is tcp_tso_segs -> tcp_tso_autosize: about 1 ms of data at
// the pacing rate per skb, more for close peers (the min_rtt allowance
// halves every 512 us of RTT), at most sk_gso_max_size and at least
// tcp_min_tso_segs.
func (tp *Sock) TSOSegs() int {
	bytes := tp.PacingRate >> PacingShift
	if r := tp.MinRTTUs >> TSORTTLog; r < 32 {
		bytes += GSOMaxSize >> r
	}
	bytes = min(bytes, GSOMaxSize)
	return max(int(bytes/MSS), MinTSOSegs)
}

// SmallQueueLimit is tcp_small_queue_check's limit on sk_wmem_alloc
// (TSQ) for an skb of truesize bytes: two such skbs or ~1 ms at the
// pacing rate, capped by tcp_limit_output_bytes unless sch_fq paces the
// socket; factor 1 (retransmissions) doubles it.
func (tp *Sock) SmallQueueLimit(truesize uint32, factor uint) uint64 {
	limit := max(2*uint64(truesize), tp.PacingRate>>PacingShift)
	if !tp.PacingFQ {
		limit = min(limit, LimitOutputBytes)
	}
	return limit << factor
}

// SndbufExpand is tcp_sndbuf_expand: a send buffer for twice the
// larger of cwnd and TCP_INIT_CWND segments at per_mss each, at most
// tcp_wmem[2].
func (tp *Sock) SndbufExpand(sndbuf int) int {
	segs := max(InitCwnd, int(tp.Cwnd), Reordering+1)
	want := 2 * segs * PerMSS()
	if sndbuf < want {
		return min(want, WmemMax)
	}
	return sndbuf
}
