package tcp

import (
	"math"

	"github.com/txlab/txlab/framework/sim"
)

// Output is what the sender's transmit loop needs from the host it runs
// on: the TSQ check and the transmit itself. A remote sender (the far
// end of a download) has no TSQ.
type Output interface {
	// SmallQueueCheck is tcp_small_queue_check for the next skb of
	// segs segments: true stops the loop (TSQ throttled, the TX
	// completion of an earlier skb restarts it).
	SmallQueueCheck(tp *Sock, segs int, factor uint) bool
	// Transmit is __tcp_transmit_skb of one skb carrying segments
	// [seq, seq+segs): tstamp is its EDT departure time (0: none),
	// cwr whether it carries CWR, retrans whether it is a
	// retransmission. It returns false if the skb could not be sent
	// (the loop stops).
	Transmit(tp *Sock, seq int64, segs int, tstamp sim.Time, cwr, retrans bool) bool
}

// HostQueue is an Output whose host can tell that an skb's clone is
// still in it: skb_still_in_host_queue (tcp_output.c) for the rtx-queue
// skb whose first segment is seq. The skb_fclone_busy test: the clone
// tcp_transmit_skb sent of it is in a qdisc or the driver, neither
// freed nor consumed by GSO segmentation. True sets TSQ_THROTTLED (the
// clone's TX completion runs the TSQ handler, which retransmits then)
// and counts LINUX_MIB_TCPSPURIOUS_RTX_HOSTQUEUES. A sender without it
// (the far end) never finds one.
type HostQueue interface {
	StillInHostQueue(tp *Sock, seq int64) bool
}

// transmit is the bookkeeping of __tcp_transmit_skb and
// tcp_update_skb_after_send for segs segments from seq: the EDT stamp
// advances by the skb's length at the pacing rate when sch_fq paces
// (once 10 segments have been sent, this skb's included, as the
// original sch_fq did), the CWR flag goes out once.
func (tp *Sock) transmit(out Output, seq int64, segs int, retrans bool) bool {
	prior := tp.WstampNs
	tp.eventDataSent()
	// __tcp_transmit_skb counts data_segs_out before queue_xmit, so a
	// dropped skb counts and this one is paced once the count reaches 10.
	tp.dataSegsOut += uint64(segs)
	tp.WstampNs = max(tp.WstampNs, tp.now)
	tstamp := sim.Time(0)
	if tp.PacingFQ {
		tstamp = tp.WstampNs
	}
	cwr := false
	if tp.queueCWR && !retrans {
		cwr = true
	}
	if !out.Transmit(tp, seq, segs, tstamp, cwr, retrans) {
		tp.WstampNs = prior
		return false
	}
	if cwr {
		tp.queueCWR = false // tcp_ecn_send: CWR on the first new data after entering CWR
	}
	if tp.PacingFQ && tp.PacingRate != math.MaxUint64 && tp.PacingRate != 0 && tp.dataSegsOut >= 10 {
		lenNs := uint64(segs*MSS) * uint64(sim.Second) / tp.PacingRate
		credit := uint64(tp.WstampNs - prior)
		lenNs -= min(lenNs/2, credit)
		tp.WstampNs += sim.Time(lenNs)
	}
	for s := seq; s < seq+int64(segs); s++ {
		tp.tsorted = append(tp.tsorted, tsEntry{seq: s, xmit: tp.now})
	}
	return true
}

// eventDataSent is tcp_event_data_sent, from __tcp_transmit_skb for
// every data skb, retransmissions included: CA_EVENT_TX_START when
// nothing is in flight, and lsndtime, from which cubic measures idle.
func (tp *Sock) eventDataSent() {
	if tp.InFlight() == 0 {
		tp.CC.CwndEvent(tp, EventTxStart)
	}
	tp.LsndTime = tp.Jiffies()
}

// cwndTest is tcp_cwnd_test: the segments cwnd allows now, at most half
// of cwnd per skb so that two skbs are in flight.
func (tp *Sock) cwndTest() int {
	inFlight := tp.InFlight()
	if inFlight >= tp.Cwnd {
		return 0
	}
	half := max(tp.Cwnd>>1, 1)
	return int(min(half, tp.Cwnd-inFlight))
}

// WriteXmit is tcp_write_xmit for a bulk sender: new segments in skbs
// of up to tcp_tso_segs segments while cwnd, the receive window and TSQ
// allow. It returns the segments sent.
func (tp *Sock) WriteXmit(out Output) int { return tp.writeXmit(out, 0) }

// PushOne is tcp_push_one: tcp_write_xmit with push_one, which stops
// after the first skb sent (tcp_sendmsg_locked's push of a full skb at
// the send head). It returns the segments sent.
func (tp *Sock) PushOne(out Output) int { return tp.writeXmit(out, 1) }

// writeXmit is tcp_write_xmit with its push_one: 0 sends while it may,
// 1 one skb at most, 2 one skb at most even with cwnd full (a loss
// probe's new data, tcp_send_loss_probe), and then schedules no probe.
func (tp *Sock) writeXmit(out Output, pushOne int) int {
	sent := 0
	cwndLimited := false
	for tp.SndNxt < tp.WriteSeq {
		quota := tp.cwndTest()
		if quota == 0 {
			if pushOne != 2 {
				cwndLimited = true
				break
			}
			quota = 1 // force out a loss probe
		}
		// tcp_snd_wnd_test: the first segment must fit the window.
		room := tp.SndUna + RcvWndSegs - tp.SndNxt
		if room <= 0 {
			break
		}
		segs := min(quota, tp.TSOSegs(), int(tp.WriteSeq-tp.SndNxt), int(room))
		if out.SmallQueueCheck(tp, segs, 0) {
			break
		}
		if !tp.transmit(out, tp.SndNxt, segs, false) {
			break
		}
		// tcp_event_new_data_sent: the RTO starts with the first
		// packet out, or replaces a pending probe (tcp_rearm_rto
		// then keeps the head's deadline).
		for i := 0; i < segs; i++ {
			tp.board = append(tp.board, segState{xmit: tp.now})
		}
		prior := tp.PacketsOut()
		tp.rtxSkbs = append(tp.rtxSkbs, tp.SndNxt) // the skb joins the rtx queue's tail
		tp.SndNxt += int64(segs)
		if prior == 0 || tp.pending == timeLossProbe {
			tp.rearmRTO()
		}
		sent += segs
		if pushOne != 0 {
			break
		}
	}
	cwndLimited = cwndLimited || tp.InFlight() >= tp.Cwnd
	if sent > 0 || cwndLimited {
		tp.cwndValidate(cwndLimited)
	}
	if sent > 0 {
		if tp.InCwndReduction() {
			tp.PrrOut += uint32(sent)
		}
		// One loss probe per tail loss episode.
		if pushOne != 2 {
			tp.scheduleLossProbe(false)
		}
	}
	return sent
}

// cwndValidate is tcp_cwnd_validate's record of whether cwnd was the
// limit in the current window; tcp_write_xmit calls it when it sent
// something or cwnd was the limit. Its application-limited decay
// (tcp_cwnd_application_limited, with tcp_slow_start_after_idle: cwnd
// halved toward what was used after an RTO's time not cwnd-limited) is
// not modelled: it spares a writer waiting for send buffer
// (SOCK_NOSPACE), which a bulk sender mostly is.
func (tp *Sock) cwndValidate(limited bool) {
	po := tp.PacketsOut()
	if tp.SndUna >= tp.cwndUsageSeq || limited || (!tp.isCwndLimited && po > tp.maxPacketsOut) {
		tp.isCwndLimited = limited
		tp.maxPacketsOut = po
		tp.cwndUsageSeq = tp.SndNxt
	}
}

// XmitRetransmitQueue is tcp_xmit_retransmit_queue: segments marked
// lost and not yet retransmitted, in order, while cwnd allows, an
// rtx-queue skb at a time (tcp_retransmit_skb): a run of lost segments
// goes out as one skb up to tcp_tso_segs and the end of the skb it is
// in (tcp_retrans_try_collapse merges only skbs shorter than one MSS,
// which a bulk sender's are not). __tcp_retransmit_skb refuses an skb
// whose clone is still in the host (skb_still_in_host_queue, -EBUSY:
// HostQueue), which ends the walk. It returns the segments sent.
func (tp *Sock) XmitRetransmitQueue(out Output) int {
	if tp.LostOut <= tp.RetransOut {
		return 0
	}
	hq, _ := out.(HostQueue)
	sent := 0
	seq := max(tp.rtxHint, tp.SndUna)
	for seq < tp.SndNxt {
		st := tp.seg(seq)
		if st.flags&(segLost|segRetrans|segSacked) != segLost {
			seq++
			tp.rtxHint = seq
			continue
		}
		inFlight := tp.InFlight()
		if inFlight >= tp.Cwnd {
			break
		}
		n := 1
		most := min(int(tp.Cwnd-inFlight), tp.TSOSegs(), int(tp.rtxSkbEndAt(seq)-seq))
		for n < most && tp.seg(seq+int64(n)).flags&(segLost|segRetrans|segSacked) == segLost {
			n++
		}
		if out.SmallQueueCheck(tp, n, 1) {
			break
		}
		// skb_still_in_host_queue, before __tcp_retransmit_skb
		// splits anything: only an skb that starts at seq can have
		// a clone in the host; one starting below was split at seq
		// by the SACK processing that left [seq, ...) lost, and the
		// piece from seq is a new skb (tcp_fragment's).
		if hq != nil && tp.rtxSkbStartsAt(seq) && hq.StillInHostQueue(tp, seq) {
			break
		}
		// The skb sent is [seq, seq+n): tcp_fragment splits off
		// what lies beyond (__tcp_retransmit_skb, an skb longer than
		// cwnd or tcp_tso_segs allow); what lies before a run that
		// starts inside an skb was not lost (RTO marks the head
		// segment whatever its skb, timeoutMarkLost) and is split off
		// too, as the kernel's per-skb marks would have it.
		tp.fragment(seq)
		tp.fragment(seq + int64(n))
		if !tp.transmit(out, seq, n, true) {
			break
		}
		for i := 0; i < n; i++ {
			s := tp.seg(seq + int64(i))
			s.flags |= segRetrans | segEverRtx
			s.xmit = tp.now
		}
		tp.RetransOut += uint32(n)
		tp.RetransSegs += uint64(n)
		if tp.InCwndReduction() {
			tp.PrrOut += uint32(n)
		}
		if seq == tp.SndUna {
			tp.rearmRTO()
		}
		sent += n
		seq += int64(n)
		tp.rtxHint = seq
	}
	return sent
}

// Write timer events (icsk_pending): the one timer a connection has
// for its RTO and its loss probe (the RACK reordering timer,
// ICSK_TIME_REO_TIMEOUT, is not modelled; nor is the zero window
// probe).
const (
	timeRetrans   = 1 // ICSK_TIME_RETRANS
	timeLossProbe = 3 // ICSK_TIME_LOSS_PROBE
)

// TimeoutMin is TCP_TIMEOUT_MIN (2 jiffies): the PTO's allowance with
// more than one packet out.
const TimeoutMin = 2 * sim.Millisecond

// usecsToTime is usecs_to_jiffies (HZ=1000) as a time: rounded up
// to the jiffy.
func usecsToTime(us int64) sim.Time {
	return sim.Time((us+999)/1000) * sim.Millisecond
}

// rtoDeltaUs is tcp_rto_delta_us: how far in the future the RTO of the
// rtx queue's head lies, icsk_rto after its last (re)transmission.
func (tp *Sock) rtoDeltaUs() int64 {
	if tp.SndNxt == tp.SndUna {
		return int64(tp.RTO / sim.Microsecond)
	}
	return int64(tp.seg(tp.SndUna).xmit+tp.RTO-tp.now) / int64(sim.Microsecond)
}

// rearmRTO is tcp_rearm_rto: the RTO runs from now while anything is
// out; a pending loss probe (or reordering timeout) being replaced, it
// runs from the head's last transmission instead, at least a jiffy
// ahead. Nothing out: the timer is cleared. (tcp_reset_xmit_timer's
// tcp_pacing_delay, the EDT head start of the next skb under sch_fq, is
// not added: the model's RTO never had it.)
func (tp *Sock) rearmRTO() {
	if tp.SndNxt == tp.SndUna {
		tp.pending = 0 // inet_csk_clear_xmit_timer
		return
	}
	rto := tp.RTO
	if tp.pending == timeLossProbe {
		rto = usecsToTime(max(tp.rtoDeltaUs(), 1))
	}
	tp.pending = timeRetrans
	tp.rtoAt = tp.now + rto
}

// setXmitTimer is tcp_set_xmit_timer: a loss probe if one may be
// scheduled, else the RTO.
func (tp *Sock) setXmitTimer() {
	if !tp.scheduleLossProbe(true) {
		tp.rearmRTO()
	}
}

// scheduleLossProbe is tcp_schedule_loss_probe (tcp_early_retrans 3,
// the default; the connection uses SACK): in Open or CWR with packets
// out, the probe timeout (PTO) is two smoothed RTTs, plus the minimum
// RTO with a single packet out (its ACK may be delayed) or
// TCP_TIMEOUT_MIN with more (TCP_TIMEOUT_INIT without an RTT sample),
// and no later than the RTO would fire: icsk_rto from now when the
// caller is about to advance it (an ACK), else the head's deadline.
func (tp *Sock) scheduleLossProbe(advancingRTO bool) bool {
	if (tp.EarlyRetrans != 3 && tp.EarlyRetrans != 4) || tp.SndNxt == tp.SndUna ||
		(tp.CAState != CAOpen && tp.CAState != CACWR) {
		return false
	}
	timeout := TimeoutInit
	if tp.SrttUs != 0 {
		us := int64(tp.SrttUs >> 2)
		if tp.PacketsOut() == 1 {
			us += int64(RTOMin / sim.Microsecond) // tcp_rto_min_us
		} else {
			us += int64(TimeoutMin / sim.Microsecond)
		}
		timeout = usecsToTime(us)
	}
	delta := int64(tp.RTO / sim.Microsecond)
	if !advancingRTO {
		delta = tp.rtoDeltaUs()
	}
	// The kernel holds the delta in a u32: an RTO already overdue
	// (negative) caps nothing.
	if delta > 0 {
		timeout = min(timeout, usecsToTime(delta))
	}
	tp.pending = timeLossProbe
	tp.rtoAt = tp.now + timeout
	return true
}

// sendLossProbe is tcp_send_loss_probe, when the PTO fires: new data if
// the receive window allows it (one skb, cwnd or not), else the last
// segment sent again, cut from its skb (tcp_fragment) unless the skb's
// clone is still in the host (skb_still_in_host_queue: the probe is
// put off, the RTO re-armed). A probe sent records snd_nxt in
// tlp_high_seq (at most one outstanding) and restarts the RTO from now.
// The retransmission is __tcp_retransmit_skb's: counted in
// total_retrans (before the transmit, as the kernel does), marked
// EVER_RETRANS even if the transmit fails, neither SACKED_RETRANS nor
// in retrans_out; no cwnd or TSQ test. It returns the segments sent.
func (tp *Sock) sendLossProbe(out Output) int {
	if tp.tlpHighSeq != 0 {
		tp.rearmRTO()
		return 0
	}
	tp.tlpRetrans = false
	sent := 0
	if tp.SndNxt < tp.WriteSeq && tp.SndUna+RcvWndSegs-tp.SndNxt > 0 { // tcp_send_head, tcp_snd_wnd_test
		if sent = tp.writeXmit(out, 2); sent == 0 {
			tp.rearmRTO()
			return 0
		}
	} else {
		if tp.RtxSkbs() == 0 {
			tp.pending = 0
			return 0
		}
		if hq, ok := out.(HostQueue); ok && hq.StillInHostQueue(tp, tp.rtxSkbs[len(tp.rtxSkbs)-1]) {
			tp.rearmRTO()
			return 0
		}
		last := tp.SndNxt - 1
		tp.fragment(last) // (pcount - 1) * mss: the last segment its own skb
		tp.RetransSegs++
		ok := tp.transmit(out, last, 1, true)
		st := tp.seg(last)
		st.flags |= segEverRtx
		if !ok {
			tp.rearmRTO()
			return 0
		}
		st.xmit = tp.now
		tp.tlpRetrans = true
		sent = 1
	}
	tp.tlpHighSeq = tp.SndNxt
	tp.LossProbes++
	tp.pending = 0 // so that tcp_rearm_rto runs the RTO from now
	tp.rearmRTO()
	return sent
}

// processTLPAck is tcp_process_tlp_ack, from tcp_ack during a probe's
// episode: an ACK at or above tlp_high_seq ends it. A probe of new data
// acked: nothing was lost. A retransmission probe and an ACK above
// tlp_high_seq: the probe repaired a loss, cwnd is reduced once
// (tcp_init_cwnd_reduction, CWR, tcp_end_cwnd_reduction,
// tcp_try_keep_open; TCPLossProbeRecovery). A pure duplicate ACK: the
// original and the probe both arrived. The kernel's third ending, a
// DSACK of the probe (FLAG_DSACK_TLP), is not modelled (the receiver
// sends no DSACK): the duplicate ACK that would carry it ends the
// episode the same way. FLAG_NOT_DUP is FLAG_SND_UNA_ADVANCED here:
// the peer sends no data and its window is fixed.
func (tp *Sock) processTLPAck(ack int64, flag int) {
	if ack < tp.tlpHighSeq {
		return
	}
	switch {
	case !tp.tlpRetrans:
		tp.tlpHighSeq = 0
	case ack > tp.tlpHighSeq:
		tp.initCwndReduction()
		tp.setState(CACWR)
		tp.endCwndReduction()
		tp.tryKeepOpen()
		tp.LossProbeRecoveries++
	case flag&(FlagSndUnaAdvanced|FlagDataAcked|FlagDataSacked) == 0:
		tp.tlpHighSeq = 0
	}
}

// RTOAt is when the write timer expires, for the RTO or the loss probe
// (0: not armed).
func (tp *Sock) RTOAt() sim.Time {
	if tp.SndNxt == tp.SndUna || tp.pending == 0 {
		return 0
	}
	return tp.rtoAt
}

// OnWriteTimer is tcp_write_timer_handler at now: nothing before the
// deadline (the timer was re-armed since), else the pending event, a
// loss probe (sendLossProbe) or the RTO (OnRTO, then the
// retransmission). The caller re-arms the timer (RTOAt). It reports
// false when the timer found nothing to do.
func (tp *Sock) OnWriteTimer(now sim.Time, out Output) bool {
	tp.SetNow(now)
	if tp.SndNxt == tp.SndUna || tp.pending == 0 || now < tp.rtoAt {
		return false
	}
	if tp.pending == timeLossProbe {
		tp.sendLossProbe(out)
		return true
	}
	if !tp.OnRTO(now) {
		return false
	}
	tp.XmitRetransmitQueue(out)
	return true
}
