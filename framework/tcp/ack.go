package tcp

import (
	"github.com/txlab/txlab/framework/sim"
)

// AckResult says what an ACK did, for the caller's counters.
type AckResult struct {
	NewlyAcked  int // segments cumulatively acked that were not SACKed before
	NewlySacked int
	Flags       int
}

// OnAck is tcp_ack for a sender whose data is all full segments: SACK
// tagging, the cumulative ACK (tcp_clean_rtx_queue), RTT and RTO, the
// ECN echo, RACK loss detection and the CA state machine
// (tcp_fastretrans_alert), then cwnd (tcp_cong_control: PRR while
// reducing, the module's cong_avoid otherwise) and the pacing rate. The
// caller transmits afterwards (XmitRetransmitQueue, then WriteXmit), as
// tcp_xmit_recovery and tcp_data_snd_check do.
func (tp *Sock) OnAck(a Ack) AckResult {
	var res AckResult
	if a.Seq > tp.SndNxt {
		return res // acks what was never sent: ignored
	}
	flag := 0
	ece := a.ECE && tp.ECN
	if ece {
		flag |= FlagECE
	}
	priorUna := tp.SndUna
	priorInFlight := tp.InFlight()
	lostBefore := tp.LostSegs

	// tcp_sacktag_write_queue
	var firstSackt, lastSackt sim.Time = -1, -1
	if a.NSACK > 0 {
		newly := tp.sacktag(a.Blocks(), &firstSackt, &lastSackt)
		if newly > 0 {
			flag |= FlagDataSacked
			res.NewlySacked = newly
		}
	}

	// tcp_clean_rtx_queue
	var firstAckt, lastAckt sim.Time = -1, -1
	pktsAcked := 0
	if a.Seq > tp.SndUna {
		for seq := tp.SndUna; seq < a.Seq; seq++ {
			st := tp.seg(seq)
			if st.flags&segEverRtx != 0 {
				flag |= FlagRetransDataAcked // SACKed or not (TCPCB_RETRANS)
			}
			if st.flags&segSacked != 0 {
				tp.SackedOut--
			} else {
				res.NewlyAcked++
				tp.rackAdvance(st)
				if st.flags&segEverRtx == 0 {
					if firstAckt < 0 {
						firstAckt = st.xmit
					}
					lastAckt = st.xmit
				}
			}
			if st.flags&segLost != 0 {
				tp.LostOut--
			}
			if st.flags&segRetrans != 0 {
				tp.RetransOut--
			}
			pktsAcked++
		}
		tp.boardOff += int(a.Seq - tp.SndUna)
		tp.SndUna = a.Seq
		tp.cleanRtxSkbs()
		if tp.boardOff >= 32 && tp.boardOff >= len(tp.board)/2 { // amortised O(1); the array stays within twice the flight
			tp.board = append(tp.board[:0], tp.board[tp.boardOff:]...)
			tp.boardOff = 0
		}
		flag |= FlagDataAcked | FlagSndUnaAdvanced
		tp.retransmits = 0 // tcp_ack clears icsk_retransmits when snd_una advances
	}
	delivered := res.NewlyAcked + res.NewlySacked
	tp.Delivered += uint32(delivered)
	if ece {
		tp.DeliveredCE += uint32(delivered)
	}

	// tcp_clean_rtx_queue -> tcp_ack_update_rtt: the oldest newly acked
	// segment for srtt (seq_rtt), the newest for the module (ca_rtt),
	// none if the ACK covers any retransmitted data (Karn); newly SACKed
	// segments give ca_rtt whenever there are any, and seq_rtt if the
	// cumulative part gave none; else the echoed timestamp.
	seqRTT, caRTT := int64(-1), int64(-1)
	if firstAckt >= 0 && flag&FlagRetransDataAcked == 0 {
		seqRTT = int64(tp.now-firstAckt) / 1000
		caRTT = int64(tp.now-lastAckt) / 1000
	}
	if firstSackt >= 0 {
		if seqRTT < 0 {
			seqRTT = int64(tp.now-firstSackt) / 1000
		}
		caRTT = int64(tp.now-lastSackt) / 1000
	}
	if seqRTT < 0 && a.TSecr > 0 && flag&FlagDataAcked != 0 {
		seqRTT = int64(tp.now-a.TSecr) / 1000
		caRTT = seqRTT
	}
	if seqRTT >= 0 {
		tp.rttEstimator(max(seqRTT, 1))
		tp.setRTO()
		if uint32(max(caRTT, 1)) < tp.MinRTTUs {
			tp.MinRTTUs = uint32(max(caRTT, 1))
		}
	}
	// pkts_acked runs on every ACK, SACK-only ones too.
	tp.CC.PktsAcked(tp, AckSample{PktsAcked: uint32(pktsAcked), RTTUs: caRTT, InFlight: priorInFlight})
	tp.CC.InAckEvent(tp, flag)

	if tp.tlpHighSeq != 0 {
		tp.processTLPAck(a.Seq, flag)
	}

	// tcp_ack_is_dubious -> tcp_fastretrans_alert
	if flag&FlagDataAcked == 0 || flag&(FlagDataSacked|FlagECE) != 0 || tp.CAState != CAOpen {
		tp.fastretransAlert(flag, priorUna, ece)
	}

	// FLAG_SET_XMIT_TIMER (tcp_clean_rtx_queue): data acked, or a
	// SACK-only ACK whose RTT sample (from the oldest newly SACKed
	// original) is longer than the time since the head last left:
	// what it SACKed was sent before the head's retransmission, so the
	// RTO does not move on SACKs of data sent after it.
	// tcp_set_xmit_timer then arms a loss probe or the RTO. Not
	// modelled: its clearing when RACK arms the reordering timer
	// (tcp_identify_packet_loss), which the model has not.
	setTimer := flag&FlagDataAcked != 0
	if !setTimer && seqRTT >= 0 && firstSackt >= 0 && tp.SndUna < tp.SndNxt {
		// sack_rtt_us > now - head's skb_mstamp: sent before the head
		setTimer = firstSackt < tp.seg(tp.SndUna).xmit
	}
	if setTimer {
		tp.setXmitTimer()
	}

	// tcp_cong_control
	newlyLost := int(tp.LostSegs - lostBefore)
	if tp.InCwndReduction() {
		tp.cwndReduction(delivered, newlyLost, flag)
	} else if flag&FlagDataAcked != 0 {
		tp.CC.CongAvoid(tp, a.Seq, uint32(delivered))
	}
	tp.UpdatePacingRate()
	tp.pruneTsorted()
	res.Flags = flag
	return res
}

// pruneTsorted drops acked sends from the head of the time-ordered list
// (tcp_clean_rtx_queue unlinks acked skbs from tsorted_sent_queue).
func (tp *Sock) pruneTsorted() {
	for tp.tsHead < len(tp.tsorted) && tp.tsorted[tp.tsHead].seq < tp.SndUna {
		tp.tsHead++
	}
	if tp.tsHead >= 32 && tp.tsHead >= len(tp.tsorted)/2 {
		tp.tsorted = append(tp.tsorted[:0], tp.tsorted[tp.tsHead:]...)
		tp.tsHead = 0
	}
}

// sacktag marks the blocks' segments SACKed (RFC 2018), skipping what
// the previous ACK's blocks already covered (recv_sack_cache); it
// returns the segments newly SACKed. The rtx queue's skbs follow
// (sacktagWalk).
func (tp *Sock) sacktag(blocks []Range, firstSackt, lastSackt *sim.Time) int {
	newly := 0
	for _, b := range blocks {
		start, end := max(b.Start, tp.SndUna), min(b.End, tp.SndNxt)
		for _, c := range tp.sackCache {
			if c.Start <= start && c.End > start {
				start = min(c.End, end)
			}
		}
		if start < end {
			newly += tp.sacktagWalk(start, end, firstSackt, lastSackt)
		}
	}
	tp.sackCache = append(tp.sackCache[:0], blocks...)
	return newly
}

// shiftMaxSegs is tcp_skb_shift's limit on the skb SACKed data moves
// into: under 65535 * TCP_MIN_GSO_SIZE bytes (tcp_skb_pcount's 16 bits
// at the least gso_size). skb_shift's own limit, MAX_SKB_FRAGS page
// fragments, is not modelled: a bulk sender's payload lies in
// contiguous 32 KB page_frag pages, which skb_shift merges, so 17
// fragments hold about as much.
const shiftMaxSegs = (65535*8 - 1) / MSS

// sacktagWalk is tcp_sacktag_walk over the new SACK range [start, end)
// of the rtx queue, an skb at a time. An skb the range covers only in
// part is split at the range's edge (tcp_match_skb_to_sack ->
// tcp_fragment: a new skb from the edge), unless the skb before it is
// all SACKed: then what the range covers from the skb's front moves
// into that one (tcp_shift_skb_data, skb_shift), the skb freed if that
// was all of it (tcp_shifted_skb), after which the next skb, if all
// SACKed, joins too (the hole filled). The SACKed segments are tagged
// as they go (tcp_sacktag_one): the skbs stay uniformly SACKed or not,
// so an skb's SACK state is its first segment's. It returns the
// segments newly SACKed.
func (tp *Sock) sacktagWalk(start, end int64, firstSackt, lastSackt *sim.Time) int {
	newly := 0
	for seq := start; seq < end; {
		i := tp.rtxSkbIndex(seq)
		xs, xe := max(tp.rtxSkbs[tp.rtxSkbsOff+i], tp.SndUna), tp.rtxSkbEnd(i)
		if xs < seq {
			// The range starts inside the skb: tcp_shift_skb_data
			// falls back, tcp_match_skb_to_sack splits at seq.
			tp.fragment(seq)
			continue
		}
		to := min(xe, end) // what the range covers of the skb, from its front
		if i > 0 && tp.canShift(i, to-xs) {
			// tcp_shift_skb_data: [xs, to) joins the skb before.
			newly += tp.tagSacked(xs, to, firstSackt, lastSackt)
			if to < xe {
				tp.rtxSkbs[tp.rtxSkbsOff+i] = to // skb->seq advances; it keeps the rest
				seq = to
				continue
			}
			tp.unlinkRtxSkb(i) // emptied: tcp_rtx_queue_unlink_and_free
			// The hole filled: the next skb, all SACKed, joins as well.
			if i < tp.RtxSkbs() && tp.seg(tp.rtxSkbs[tp.rtxSkbsOff+i]).flags&segSacked != 0 &&
				tp.canShiftSegs(i-1, tp.rtxSkbEnd(i)-tp.rtxSkbs[tp.rtxSkbsOff+i]) {
				tp.unlinkRtxSkb(i)
			}
			seq = tp.rtxSkbEnd(i - 1) // the walk goes on after the skb it grew
			continue
		}
		if to < xe {
			tp.fragment(to) // tcp_match_skb_to_sack: the SACKed front is the skb
		}
		newly += tp.tagSacked(xs, to, firstSackt, lastSackt)
		seq = to
	}
	return newly
}

// canShift is tcp_shift_skb_data's test for moving segs segments from
// the front of the rtx queue's i-th skb into the (i-1)-th: that one all
// SACKed (its tag bits SACKED_ACKED alone), the i-th not retransmitted
// without being lost (TCPCB_SACKED_RETRANS alone: not S from R), and
// room (tcp_skb_shift). The skbs' MSS agree (every segment is full)
// and nothing stops a collapse (tcp_skb_can_collapse: no EOR, TLS or
// MPTCP here).
func (tp *Sock) canShift(i int, segs int64) bool {
	if tp.seg(tp.rtxSkbs[tp.rtxSkbsOff+i]).flags&(segLost|segRetrans) == segRetrans {
		return false
	}
	return tp.canShiftSegs(i-1, segs)
}

// canShiftSegs reports whether the rtx queue's i-th skb is all SACKed
// and can take segs segments more (tcp_skb_shift).
func (tp *Sock) canShiftSegs(i int, segs int64) bool {
	ps := max(tp.rtxSkbs[tp.rtxSkbsOff+i], tp.SndUna)
	pe := tp.rtxSkbEnd(i)
	if ps >= pe || tp.seg(ps).flags&(segSacked|segLost|segRetrans) != segSacked {
		return false
	}
	return pe-ps+segs <= shiftMaxSegs
}

// unlinkRtxSkb removes the rtx queue's i-th skb (its data moved into
// the one before).
func (tp *Sock) unlinkRtxSkb(i int) {
	j := tp.rtxSkbsOff + i
	tp.rtxSkbs = append(tp.rtxSkbs[:j], tp.rtxSkbs[j+1:]...)
}

// tagSacked is tcp_sacktag_one for segments [from, to): each not yet
// SACKed is, leaving the lost and retransmitted counts; it returns how
// many.
func (tp *Sock) tagSacked(from, to int64, firstSackt, lastSackt *sim.Time) int {
	newly := 0
	for seq := from; seq < to; seq++ {
		st := tp.seg(seq)
		if st.flags&segSacked != 0 {
			continue
		}
		if st.flags&segLost != 0 {
			tp.LostOut--
		}
		if st.flags&segRetrans != 0 {
			tp.RetransOut--
		}
		st.flags = st.flags&segEverRtx | segSacked
		tp.SackedOut++
		newly++
		tp.rackAdvance(st)
		if st.flags&segEverRtx == 0 {
			if *firstSackt < 0 || st.xmit < *firstSackt {
				*firstSackt = st.xmit
			}
			if st.xmit > *lastSackt {
				*lastSackt = st.xmit
			}
		}
	}
	return newly
}

// rackAdvance is tcp_rack_advance: remember the newest transmit time
// among delivered segments and its RTT. A retransmitted segment
// delivered sooner than min_rtt after its retransmission may be the
// original arriving late, and is ignored.
func (tp *Sock) rackAdvance(st *segState) {
	rtt := int64(tp.now-st.xmit) / 1000
	if st.flags&segEverRtx != 0 && rtt < int64(tp.MinRTTUs) {
		return
	}
	if st.xmit > tp.rackMstamp {
		tp.rackMstamp = st.xmit
		tp.rackRTTUs = rtt
	}
}

// markLost is tcp_mark_skb_lost for one segment.
func (tp *Sock) markLost(seq int64) {
	st := tp.seg(seq)
	if st.flags&segSacked != 0 {
		return
	}
	if st.flags&segLost != 0 {
		if st.flags&segRetrans != 0 {
			// A retransmission lost again.
			st.flags &^= segRetrans
			tp.RetransOut--
			tp.LostSegs++
		}
	} else {
		st.flags |= segLost
		tp.LostOut++
		tp.LostSegs++
	}
	if seq < tp.rtxHint {
		tp.rtxHint = seq
	}
}

// rackDetectLoss is tcp_rack_detect_loss: every segment sent before the
// newest delivered one, by more than the reordering window, is lost.
// The window is 0 once three segments are SACKed or in recovery (no
// reordering was ever seen: the model's paths are FIFO), else a quarter
// of min_rtt, whose expiry the RACK timer would catch; the next ACK
// does here.
func (tp *Sock) rackDetectLoss() {
	if tp.rackMstamp == 0 {
		return
	}
	reoWnd := int64(0)
	if tp.CAState < CARecovery && tp.SackedOut < Reordering {
		reoWnd = int64(tp.MinRTTUs) / 4
	}
	for tp.tsHead < len(tp.tsorted) {
		e := tp.tsorted[tp.tsHead]
		if e.seq < tp.SndUna || e.seq >= tp.SndNxt {
			tp.tsHead++
			continue
		}
		st := tp.seg(e.seq)
		if st.flags&segSacked != 0 || st.xmit != e.xmit {
			tp.tsHead++ // delivered, or sent again since: a later entry holds it
			continue
		}
		if e.xmit >= tp.rackMstamp {
			break
		}
		if tp.rackSkbTimeout(e.xmit, reoWnd) > 0 {
			break
		}
		tp.markLost(e.seq)
		tp.tsHead++
	}
}

// rackSkbTimeout is tcp_rack_skb_timeout: microseconds until a segment
// sent at xmit is overdue, rack.rtt + reo_wnd after it left.
func (tp *Sock) rackSkbTimeout(xmit sim.Time, reoWnd int64) int64 {
	return tp.rackRTTUs + reoWnd - int64(tp.now-xmit)/1000
}

// initCwndReduction is tcp_init_cwnd_reduction.
func (tp *Sock) initCwndReduction() {
	tp.HighSeq = tp.SndNxt
	tp.tlpHighSeq = 0
	tp.CwndCnt = 0
	tp.PriorCwnd = tp.Cwnd
	tp.PrrDelivered = 0
	tp.PrrOut = 0
	tp.Ssthresh = tp.CC.Ssthresh(tp)
	if tp.ECN {
		tp.queueCWR = true // tcp_ecn_queue_cwr
	}
}

// EnterCWR is tcp_enter_cwr: an ECN echo (or local congestion) reduces
// cwnd once per window.
func (tp *Sock) EnterCWR() {
	if tp.CAState < CACWR {
		tp.undoMarker = false
		tp.initCwndReduction()
		tp.setState(CACWR)
		tp.CWRs++
	}
}

// enterRecovery is tcp_enter_recovery.
func (tp *Sock) enterRecovery() {
	tp.undoMarker = true
	if !tp.InCwndReduction() {
		tp.initCwndReduction()
	}
	tp.setState(CARecovery)
	tp.Recoveries++
}

// endCwndReduction is tcp_end_cwnd_reduction: cwnd = ssthresh.
func (tp *Sock) endCwndReduction() {
	if tp.Ssthresh < InfiniteSsthresh && (tp.CAState == CACWR || tp.undoMarker) {
		tp.Cwnd = tp.Ssthresh
	}
	tp.CC.CwndEvent(tp, EventCompleteCWR)
}

// fastretransAlert is tcp_fastretrans_alert with RACK and without
// undo: leave CWR, Recovery or Loss once high_seq is acked, detect
// losses, and enter Recovery when anything is lost (or CWR on an ECN
// echo).
func (tp *Sock) fastretransAlert(flag int, priorUna int64, ece bool) {
	if tp.CAState != CAOpen && tp.SndUna >= tp.HighSeq {
		switch tp.CAState {
		case CACWR:
			// CWR is held until something above high_seq is acked,
			// so that the CWR bit reached the receiver.
			if tp.SndUna != tp.HighSeq {
				tp.endCwndReduction()
				tp.setState(CAOpen)
			}
		case CARecovery:
			tp.setState(CAOpen)
			tp.endCwndReduction()
			tp.undoMarker = false
		case CALoss:
			tp.setState(CAOpen)
			tp.undoMarker = false
		}
	}
	switch tp.CAState {
	case CARecovery:
		tp.rackDetectLoss()
	case CALoss:
		tp.rackDetectLoss()
	default:
		tp.rackDetectLoss()
		if tp.LostOut == 0 {
			// tcp_try_to_open
			if flag&FlagECE != 0 {
				tp.EnterCWR()
			}
			if tp.CAState != CACWR {
				tp.tryKeepOpen()
			}
			return
		}
		tp.enterRecovery()
	}
}

// tryKeepOpen is tcp_try_keep_open: Disorder while anything is SACKed,
// lost or retransmitted, else Open; a change of state starts a new
// high_seq, as F-RTO and undo (not modelled) measure from it.
func (tp *Sock) tryKeepOpen() {
	state := CAOpen
	if tp.SackedOut+tp.LostOut > 0 || tp.anyRetransDone() {
		state = CADisorder
	}
	if tp.CAState != state {
		tp.setState(state)
		tp.HighSeq = tp.SndNxt
	}
}

// anyRetransDone is tcp_any_retrans_done: a retransmission in flight, or
// the head was ever retransmitted.
func (tp *Sock) anyRetransDone() bool {
	return tp.RetransOut > 0 || tp.SndUna < tp.SndNxt && tp.seg(tp.SndUna).flags&segEverRtx != 0
}

// cwndReduction is tcp_cwnd_reduction (PRR, RFC 6937): spread the
// reduction to ssthresh over a round trip while more is in flight,
// else send as much as was delivered (one more when snd_una advanced
// without new losses), and at least one segment when nothing was sent
// in the reduction yet (the fast retransmit).
func (tp *Sock) cwndReduction(newlyAckedSacked, newlyLost, flag int) {
	if newlyAckedSacked <= 0 || tp.PriorCwnd == 0 {
		return
	}
	inFlight := int64(tp.InFlight())
	delta := int64(tp.Ssthresh) - inFlight
	tp.PrrDelivered += uint32(newlyAckedSacked)
	var sndcnt int64
	if delta < 0 {
		dividend := uint64(tp.Ssthresh)*uint64(tp.PrrDelivered) + uint64(tp.PriorCwnd) - 1
		sndcnt = int64(dividend/uint64(tp.PriorCwnd)) - int64(tp.PrrOut)
	} else {
		sndcnt = max(int64(tp.PrrDelivered)-int64(tp.PrrOut), int64(newlyAckedSacked))
		if flag&FlagSndUnaAdvanced != 0 && newlyLost == 0 {
			sndcnt++
		}
		sndcnt = min(delta, sndcnt)
	}
	if tp.PrrOut == 0 {
		sndcnt = max(sndcnt, 1)
	} else {
		sndcnt = max(sndcnt, 0)
	}
	tp.Cwnd = uint32(inFlight + sndcnt)
}

// timeoutMarkLost is tcp_timeout_mark_lost: every segment not SACKed is
// lost, except, RACK being on, one sent within rack.rtt of now (other
// than the head, the model's first segment): its ACK may yet come, and
// RACK marks it later if it does not.
func (tp *Sock) timeoutMarkLost() {
	for seq := tp.SndUna; seq < tp.SndNxt; seq++ {
		if seq != tp.SndUna && tp.rackSkbTimeout(tp.seg(seq).xmit, 0) > 0 {
			continue
		}
		tp.markLost(seq)
	}
	tp.rtxHint = tp.SndUna // tcp_clear_all_retrans_hints
}

// OnRTO is tcp_retransmit_timer -> tcp_enter_loss at now: segments
// lost (timeoutMarkLost), ssthresh from the module (once per window),
// cwnd one more than what is still in flight, the RTO doubles. The caller
// retransmits (XmitRetransmitQueue) and re-arms the timer (RTOAt). It
// reports false when the timer found nothing to do.
func (tp *Sock) OnRTO(now sim.Time) bool {
	tp.SetNow(now)
	if tp.SndNxt == tp.SndUna {
		return false
	}
	if now < tp.rtoAt {
		return false // re-armed since: not expired yet
	}
	tp.RTOs++
	tp.timeoutMarkLost()
	if tp.CAState <= CADisorder || tp.HighSeq <= tp.SndUna || tp.CAState == CALoss && tp.retransmits == 0 {
		tp.PriorCwnd = tp.Cwnd
		tp.Ssthresh = tp.CC.Ssthresh(tp)
		tp.CC.CwndEvent(tp, EventLoss)
		tp.undoMarker = true
	}
	tp.Cwnd = tp.InFlight() + 1
	tp.CwndCnt = 0
	tp.setState(CALoss)
	tp.HighSeq = tp.SndNxt
	tp.tlpHighSeq = 0
	if tp.ECN {
		tp.queueCWR = true
	}
	tp.retransmits++ // tcp_update_rto_stats
	tp.RTO = min(tp.RTO<<1, RTOMax)
	tp.rtoAt = now + tp.RTO
	tp.pending = timeRetrans
	return true
}
