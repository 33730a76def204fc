package tcp

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// probeOut records what the sender transmits; busy makes every rtx
// skb's clone still in the host (HostQueue).
type probeOut struct {
	sent  []Seg
	busy  bool
	busyN int
}

func (*probeOut) SmallQueueCheck(*Sock, int, uint) bool { return false }

func (o *probeOut) Transmit(tp *Sock, seq int64, segs int, _ sim.Time, _, retrans bool) bool {
	for s := seq; s < seq+int64(segs); s++ {
		o.sent = append(o.sent, Seg{Seq: s, Retrans: retrans, Sent: tp.Now()})
	}
	return true
}

func (o *probeOut) StillInHostQueue(*Sock, int64) bool {
	if o.busy {
		o.busyN++
	}
	return o.busy
}

// deliver hands segments to the receiver at now, the sender processing
// each ACK at once (its transmissions follow, as tcp_ack's callers'
// do).
func deliver(tp *Sock, r *Receiver, out *probeOut, now sim.Time, segs ...Seg) {
	tp.SetNow(now)
	for _, s := range segs {
		r.OnSeg(s)
		tp.OnAck(r.Ack())
		tp.XmitRetransmitQueue(out)
		tp.WriteXmit(out)
	}
}

func seqs(segs []Seg, want ...int64) []Seg {
	var out []Seg
	for _, s := range segs {
		for _, w := range want {
			if s.Seq == w {
				out = append(out, s)
			}
		}
	}
	return out
}

func TestTailLossProbe(t *testing.T) {
	// tcp_schedule_loss_probe / tcp_send_loss_probe /
	// tcp_process_tlp_ack. Ten segments leave at 0 (cwnd 10), the RTT
	// is 10 ms; an ACK at 10 ms gives srtt 10 ms and an RTO of 210 ms.
	ms := sim.Millisecond
	type result struct {
		probeAt     sim.Time // the PTO armed after the last ACK at 10 ms
		probeSeq    int64    // what the probe sent (-1: none)
		probes      uint64
		rtos        uint64
		recoveries  uint64 // LossProbeRecoveries
		done        sim.Time
		cwnd        uint32
		tlpHighSeq  int64
		hostRefused int
	}
	for _, c := range []struct {
		name string
		run  func(t *testing.T, tp *Sock, r *Receiver, o *probeOut) result
	}{
		{"tail drop: the probe retransmits the last segment at 2 srtt + 2 ms", func(t *testing.T, tp *Sock, r *Receiver, o *probeOut) result {
			tp.WriteSeq = 10
			tp.WriteXmit(o)
			deliver(tp, r, o, 10*ms, seqs(o.sent, 0, 1, 2, 3, 4, 5, 6, 7)...) // 8 and 9 lost
			res := result{probeAt: tp.RTOAt(), probeSeq: -1}
			n := len(o.sent)
			if !tp.OnWriteTimer(res.probeAt, o) {
				t.Fatal("the write timer did nothing")
			}
			if len(o.sent) == n+1 {
				res.probeSeq = o.sent[n].Seq
			}
			// The probe (9) arrives: SACKed, RACK marks 8 lost, fast
			// recovery retransmits it, which arrives an RTT later.
			deliver(tp, r, o, res.probeAt+10*ms, o.sent[n:]...)
			deliver(tp, r, o, res.probeAt+20*ms, o.sent[n+1:]...)
			res.done = tp.Now()
			return res
		}},
		{"one packet out: 2 srtt + the minimum RTO, no later than the RTO", func(t *testing.T, tp *Sock, r *Receiver, o *probeOut) result {
			tp.WriteSeq = 10
			tp.WriteXmit(o)
			deliver(tp, r, o, 10*ms, seqs(o.sent, 0, 1, 2, 3, 4, 5, 6, 7, 8)...)
			return result{probeAt: tp.RTOAt(), probeSeq: -1}
		}},
		{"new data the cwnd holds back is the probe", func(t *testing.T, tp *Sock, r *Receiver, o *probeOut) result {
			tp.WriteSeq = 12 // two more than cwnd lets go; all ten lost
			tp.WriteXmit(o)
			res := result{probeAt: tp.RTOAt(), probeSeq: -1}
			n := len(o.sent)
			tp.OnWriteTimer(res.probeAt, o)
			if len(o.sent) == n+1 && !o.sent[n].Retrans {
				res.probeSeq = o.sent[n].Seq
			}
			res.tlpHighSeq = tp.tlpHighSeq
			return res
		}},
		{"the last skb's clone still in the host: no probe, the RTO from the head", func(t *testing.T, tp *Sock, r *Receiver, o *probeOut) result {
			tp.WriteSeq = 10
			tp.WriteXmit(o)
			deliver(tp, r, o, 10*ms, seqs(o.sent, 0, 1, 2, 3, 4, 5, 6, 7)...)
			res := result{probeAt: tp.RTOAt(), probeSeq: -1}
			o.busy = true
			n := len(o.sent)
			tp.OnWriteTimer(res.probeAt, o)
			if len(o.sent) > n {
				res.probeSeq = o.sent[n].Seq
			}
			res.hostRefused = o.busyN
			// tcp_rearm_rto with the probe pending: icsk_rto after the
			// head (8) left, at 0.
			if at := tp.RTOAt(); at != 210*ms {
				t.Errorf("RTO re-armed at %v, want 210ms", at)
			}
			o.busy = false
			tp.OnWriteTimer(tp.RTOAt(), o)
			return res
		}},
		{"the probe repaired a loss: ACK above tlp_high_seq reduces cwnd", func(t *testing.T, tp *Sock, r *Receiver, o *probeOut) result {
			tp.WriteSeq = 10
			tp.WriteXmit(o)
			deliver(tp, r, o, 10*ms, seqs(o.sent, 0, 1, 2, 3, 4, 5, 6, 7, 8)...) // 9 lost
			// packets_out 1: the PTO is 2 srtt + 200 ms, capped by the RTO.
			res := result{probeAt: tp.RTOAt(), probeSeq: -1}
			n := len(o.sent)
			tp.OnWriteTimer(res.probeAt, o)
			if len(o.sent) == n+1 {
				res.probeSeq = o.sent[n].Seq
			}
			deliver(tp, r, o, res.probeAt+10*ms, o.sent[n:]...) // ACK 10 = tlp_high_seq: the episode goes on
			res.tlpHighSeq = tp.tlpHighSeq
			tp.WriteSeq = 12
			m := len(o.sent)
			tp.WriteXmit(o)
			deliver(tp, r, o, res.probeAt+20*ms, o.sent[m:]...)
			res.done = tp.Now()
			return res
		}},
		{"original and probe both arrive: the duplicate ACK ends the episode", func(t *testing.T, tp *Sock, r *Receiver, o *probeOut) result {
			tp.WriteSeq = 10
			tp.WriteXmit(o)
			late := seqs(o.sent, 8, 9) // delayed, not lost
			deliver(tp, r, o, 10*ms, seqs(o.sent, 0, 1, 2, 3, 4, 5, 6, 7)...)
			res := result{probeAt: tp.RTOAt(), probeSeq: -1}
			n := len(o.sent)
			tp.OnWriteTimer(res.probeAt, o)
			if len(o.sent) == n+1 {
				res.probeSeq = o.sent[n].Seq
			}
			deliver(tp, r, o, res.probeAt+3*ms, late...)
			res.tlpHighSeq = tp.tlpHighSeq // ACK 10 advanced snd_una: not yet
			deliver(tp, r, o, res.probeAt+10*ms, o.sent[n:]...)
			res.done = tp.Now()
			return res
		}},
	} {
		tp := NewSock(Reno{}, false, 0)
		r := NewReceiver(false)
		o := &probeOut{}
		got := c.run(t, tp, r, o)
		got.probes, got.rtos, got.recoveries, got.cwnd = tp.LossProbes, tp.RTOs, tp.LossProbeRecoveries, tp.Cwnd
		if got.tlpHighSeq == 0 {
			got.tlpHighSeq = tp.tlpHighSeq
		}
		var want result
		switch c.name[:8] {
		case "tail dro":
			// PTO 2 x 10 ms + TCP_TIMEOUT_MIN after the ACK at 10 ms;
			// all acked one RTT after the fast retransmission, no RTO.
			// Recovery ends at ssthresh (Reno: 18 / 2).
			want = result{probeAt: 32 * ms, probeSeq: 9, probes: 1, done: 52 * ms, cwnd: 9}
			if tp.SndUna != 10 {
				t.Errorf("%s: snd_una %d, want 10", c.name, tp.SndUna)
			}
			if tp.Recoveries != 1 {
				t.Errorf("%s: %d recoveries, want the probe's SACK to start one", c.name, tp.Recoveries)
			}
		case "one pack":
			// 2 x 10 + 200 = 220 ms, the RTO (210 ms) earlier: at 220 ms.
			want = result{probeAt: 220 * ms, probeSeq: -1, cwnd: 19}
			if tp.pending != timeLossProbe {
				t.Errorf("%s: the timer is %d, want the loss probe", c.name, tp.pending)
			}
		case "new data":
			// No RTT sample: TCP_TIMEOUT_INIT, the RTO (1 s) no earlier.
			want = result{probeAt: TimeoutInit, probeSeq: 10, probes: 1, cwnd: 10, tlpHighSeq: 11}
			if at := tp.RTOAt(); at != 2*TimeoutInit {
				t.Errorf("%s: RTO at %v after the probe, want its full 1 s from now", c.name, at)
			}
		case "the last":
			want = result{probeAt: 32 * ms, probeSeq: -1, rtos: 1, cwnd: 1, hostRefused: 1}
		case "the prob":
			want = result{probeAt: 220 * ms, probeSeq: 9, probes: 1, recoveries: 1, done: 240 * ms, tlpHighSeq: 10, cwnd: 10}
		case "original":
			want = result{probeAt: 32 * ms, probeSeq: 9, probes: 1, done: 42 * ms, tlpHighSeq: 10, cwnd: 20}
			if tp.tlpHighSeq != 0 {
				t.Errorf("%s: tlp_high_seq %d after the duplicate ACK, want the episode over", c.name, tp.tlpHighSeq)
			}
		}
		if got != want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, want)
		}
	}
}

// tcp_clean_rtx_queue sets FLAG_SET_XMIT_TIMER on a SACK-only ACK whose
// SACK RTT is longer than the time since the head's last transmission:
// in recovery, after the head's retransmission, SACKs of originals sent
// before it re-arm the RTO from now; SACKs of data sent after it do not.
func TestSackOnlyAckRearmsRTO(t *testing.T) {
	ms := sim.Millisecond
	for _, c := range []struct {
		name  string
		sack  Range // SACKed at 15 ms
		moved bool
	}{
		{"an original sent before the head's retransmission", Range{9, 10}, true},
		{"data sent after it", Range{10, 12}, false},
	} {
		tp := NewSock(Reno{}, false, 0)
		tp.WriteSeq = 5
		tp.WriteXmit(nopOut{}) // 0-4 at 0
		tp.SetNow(ms)
		tp.WriteSeq = 10
		tp.WriteXmit(nopOut{}) // 5-9 at 1 ms
		tp.SetNow(10 * ms)
		tp.OnAck(Ack{Seq: 0, NSACK: 1, SACK: [3]Range{{1, 5}}}) // 0 missing
		tp.SetNow(11 * ms)
		tp.OnAck(Ack{Seq: 0, NSACK: 1, SACK: [3]Range{{1, 9}}}) // 5-8, sent later: 0 lost
		if tp.CAState != CARecovery || tp.XmitRetransmitQueue(nopOut{}) == 0 {
			t.Fatalf("%s: state %v: want recovery and the head retransmitted", c.name, tp.CAState)
		}
		tp.SetNow(12 * ms)
		tp.WriteSeq = 12
		tp.WriteXmit(nopOut{}) // 10-11 at 12 ms
		rtoAt := tp.RTOAt()    // the head's retransmission's
		tp.SetNow(15 * ms)
		tp.OnAck(Ack{Seq: 0, NSACK: 2, SACK: [3]Range{c.sack, {1, 9}}})
		want := rtoAt
		if c.moved {
			want = 15*ms + tp.RTO
		}
		if at := tp.RTOAt(); at != want {
			t.Errorf("%s: RTO at %v, want %v (it was at %v)", c.name, at, want, rtoAt)
		}
	}
}
