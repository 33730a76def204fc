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
func (tp *Sock) WriteXmit(out Output) int { return tp.writeXmit(out, false) }

// PushOne is tcp_push_one: tcp_write_xmit with push_one, which stops
// after the first skb sent (tcp_sendmsg_locked's push of a full skb at
// the send head). It returns the segments sent.
func (tp *Sock) PushOne(out Output) int { return tp.writeXmit(out, true) }

// writeXmit is tcp_write_xmit, of one skb at most if pushOne.
func (tp *Sock) writeXmit(out Output, pushOne bool) int {
	sent := 0
	cwndLimited := false
	for tp.SndNxt < tp.WriteSeq {
		quota := tp.cwndTest()
		if quota == 0 {
			cwndLimited = true
			break
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
		// tcp_event_new_data_sent
		for i := 0; i < segs; i++ {
			tp.board = append(tp.board, segState{xmit: tp.now})
		}
		if tp.PacketsOut() == 0 {
			tp.rearmRTO()
		}
		tp.rtxSkbs = append(tp.rtxSkbs, tp.SndNxt) // the skb joins the rtx queue's tail
		tp.SndNxt += int64(segs)
		sent += segs
		if pushOne {
			break
		}
	}
	if sent > 0 && tp.InCwndReduction() {
		tp.PrrOut += uint32(sent)
	}
	cwndLimited = cwndLimited || tp.InFlight() >= tp.Cwnd
	if sent > 0 || cwndLimited {
		tp.cwndValidate(cwndLimited)
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

// rearmRTO is tcp_rearm_rto: the RTO runs from now while anything is
// out.
func (tp *Sock) rearmRTO() {
	tp.rtoAt = tp.now + tp.RTO
}

// RTOAt is when the retransmission timer expires (0: not armed).
func (tp *Sock) RTOAt() sim.Time {
	if tp.SndNxt == tp.SndUna {
		return 0
	}
	return tp.rtoAt
}
