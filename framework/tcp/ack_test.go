package tcp

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// lossAfterRTO is a sender whose ten segments (sent at 0) all went
// unacked: at the 1 s RTO it enters Loss (ssthresh 5, cwnd 1) and
// retransmits segment 0.
func lossAfterRTO(t *testing.T) *Sock {
	t.Helper()
	tp := NewSock(Reno{}, false, 0)
	tp.WriteSeq = 20
	tp.WriteXmit(nopOut{})
	if !tp.OnRTO(TimeoutInit) || tp.Ssthresh != 5 {
		t.Fatalf("first RTO: ssthresh %d", tp.Ssthresh)
	}
	tp.XmitRetransmitQueue(nopOut{})
	return tp
}

func TestRTOInLossReducesAfterSndUnaAdvances(t *testing.T) {
	// tcp_enter_loss reduces ssthresh again in Loss only when
	// icsk_retransmits is 0, which tcp_ack clears when snd_una advances,
	// RTT sample or not (icsk_backoff, which tcp_ack_update_rtt clears
	// on a sample, is not what it tests).
	for _, c := range []struct {
		name string
		ack  *Ack
		want uint32 // ssthresh after the second RTO
	}{
		{"no ACK", nil, 5},
		// The retransmitted segment 0 acked, no timestamp: Karn, no
		// RTT sample, but snd_una advanced. Reno: max(cwnd 2 / 2, 2).
		{"snd_una advances without a sample", &Ack{Seq: 1}, 2},
		// Originals 5 and 6 SACKed: an RTT sample, snd_una unmoved.
		{"a sample without snd_una advancing", &Ack{Seq: 0, NSACK: 1, SACK: [3]Range{{5, 7}}}, 5},
	} {
		tp := lossAfterRTO(t)
		if c.ack != nil {
			tp.SetNow(TimeoutInit + 10*sim.Millisecond)
			tp.OnAck(*c.ack)
		}
		if !tp.OnRTO(tp.RTOAt()) {
			t.Fatalf("%s: the second RTO did not fire", c.name)
		}
		if tp.Ssthresh != c.want {
			t.Errorf("%s: ssthresh %d after the second RTO, want %d", c.name, tp.Ssthresh, c.want)
		}
	}
}

func TestRTOSparesRecentSends(t *testing.T) {
	// tcp_timeout_mark_lost with RACK on: a segment other than the head
	// sent within rack.rtt (tcp_rack_skb_timeout(tp, skb, 0) > 0) is not
	// marked lost. Segments 0-9 leave at 1 ms, 0-4 are acked at 11 ms
	// (rack.rtt 10 ms), the RTO fires at 221 ms (11 ms + 210 ms); more
	// leave at `late` before it.
	for _, c := range []struct {
		name     string
		late     sim.Time // when segments 10-12 leave
		rackRTT  int64    // us, if set: rack.rtt forced
		wantLost uint32
	}{
		{"sent 5 ms before the RTO: spared", 216 * sim.Millisecond, 0, 5},
		{"sent 15 ms before the RTO: lost", 206 * sim.Millisecond, 0, 8},
		// rack.rtt 1 s: all were sent within it, but the head is
		// always marked.
		{"the head is always lost", 216 * sim.Millisecond, 1000000, 1},
	} {
		tp := NewSock(Reno{}, false, sim.Millisecond)
		// No loss probe: its PTO (at 33 ms) would come first, and
		// this is about the RTO's marks.
		tp.EarlyRetrans = 0
		tp.WriteSeq = 10
		tp.WriteXmit(nopOut{})
		tp.SetNow(11 * sim.Millisecond)
		tp.OnAck(Ack{Seq: 5})
		tp.SetNow(c.late)
		tp.WriteSeq = 13
		tp.WriteXmit(nopOut{})
		if c.rackRTT != 0 {
			tp.rackRTTUs = c.rackRTT
		}
		if at := tp.RTOAt(); at != 221*sim.Millisecond || !tp.OnRTO(at) {
			t.Fatalf("%s: RTO at %v", c.name, at)
		}
		if tp.LostOut != c.wantLost || tp.Cwnd != tp.InFlight()+1 {
			t.Errorf("%s: lost_out %d cwnd %d (in flight %d), want lost_out %d", c.name, tp.LostOut, tp.Cwnd, tp.InFlight(), c.wantLost)
		}
	}
	// A retransmission lost again counts in tp->lost (tcp_mark_skb_lost
	// -> tcp_notify_skb_loss_event): the RTO after the first one's
	// retransmission marks segment 0 again.
	tp := lossAfterRTO(t)
	lost := tp.LostSegs
	tp.OnRTO(tp.RTOAt())
	if tp.LostSegs != lost+1 || tp.RetransOut != 0 {
		t.Errorf("lost %d retrans_out %d after the second RTO, want %d and 0", tp.LostSegs, tp.RetransOut, lost+1)
	}
}

func TestDisorderSetsHighSeq(t *testing.T) {
	// tcp_try_keep_open sets high_seq = snd_nxt when it changes the
	// state (Open <-> Disorder), and only then. Ten segments leave at
	// 1 ms; the ACKs come at 11 ms, each after the step's sends.
	tp := NewSock(Reno{}, false, sim.Millisecond)
	tp.WriteSeq = 10
	tp.WriteXmit(nopOut{})
	tp.SetNow(11 * sim.Millisecond)
	for _, c := range []struct {
		name      string
		writeSeq  int64 // more data sent first
		ack       Ack
		wantState CAState
		wantHigh  int64
	}{
		{"Open -> Disorder", 10, Ack{Seq: 0, NSACK: 1, SACK: [3]Range{{2, 3}}}, CADisorder, 10},
		{"Disorder kept", 11, Ack{Seq: 0, NSACK: 1, SACK: [3]Range{{2, 4}}}, CADisorder, 10},
		{"Disorder -> Open", 12, Ack{Seq: 12}, CAOpen, 12},
	} {
		tp.WriteSeq = c.writeSeq
		tp.WriteXmit(nopOut{})
		tp.OnAck(c.ack)
		if tp.CAState != c.wantState || tp.HighSeq != c.wantHigh {
			t.Errorf("%s: state %v high_seq %d, want %v %d", c.name, tp.CAState, tp.HighSeq, c.wantState, c.wantHigh)
		}
	}
}

// recoveryDropOut is a pipe that also drops the first new segment the
// sender sends in Recovery (above high_seq), when dropInRecovery.
type recoveryDropOut struct {
	*pipe
	dropInRecovery bool
	droppedAt      int64 // the segment it dropped, -1 before
}

func (o *recoveryDropOut) Transmit(tp *Sock, seq int64, segs int, ts sim.Time, cwr, retrans bool) bool {
	if o.dropInRecovery && o.droppedAt < 0 && !retrans && tp.CAState == CARecovery && seq >= tp.HighSeq {
		o.droppedAt = seq
		o.drop[seq]++
	}
	return o.pipe.Transmit(tp, seq, segs, ts, cwr, retrans)
}

func TestLossAboveHighSeqIsANewRecovery(t *testing.T) {
	// tcp_fastretrans_alert (tcp_input.c): once snd_una reaches
	// high_seq, Recovery ends (tcp_try_undo_recovery sets Open, no undo
	// with a retransmission not DSACKed; tcp_end_cwnd_reduction sets
	// cwnd to ssthresh), and the same ACK goes on to the Open state's
	// processing: tcp_time_to_recover is true while lost_out is, so a
	// segment sent during the recovery (above high_seq), lost and
	// retransmitted, starts a new one at once: tcp_enter_recovery, not
	// in a cwnd reduction any more, runs tcp_init_cwnd_reduction, and
	// cubic's ssthresh is beta of the first's (bictcp_recalc_ssthresh
	// from cwnd = the first ssthresh). Losses within the window that
	// was in flight when the recovery began (below high_seq) make no
	// second reduction. Segment 40 is lost in slow start; the sender
	// runs ACK-clocked over a 10 ms RTT.
	for _, c := range []struct {
		name           string
		drop           []int64 // lost before the recovery
		dropInRecovery bool    // and the first new segment sent in it
		recoveries     uint64
	}{
		{"one loss", []int64{40}, false, 1},
		{"two losses in the window", []int64{40, 45}, false, 1},
		{"a loss in the window and one sent in the recovery", []int64{40}, true, 2},
	} {
		tp := NewSock(&Cubic{}, false, 0)
		tp.WriteSeq = 1 << 30
		p := &pipe{t: t, tp: tp, r: NewReceiver(false), drop: map[int64]int{}, rtt: 10 * sim.Millisecond}
		for _, s := range c.drop {
			p.drop[s] = 1
		}
		o := &recoveryDropOut{pipe: p, dropInRecovery: c.dropInRecovery, droppedAt: -1}
		tp.WriteXmit(o)
		var ssthresh, priorCwnd []uint32 // at each tcp_enter_recovery
		var high []int64
		now := sim.Time(0)
		for i := 0; i < 10; i++ {
			segs := p.inflight
			p.inflight = nil
			now += p.rtt
			tp.SetNow(now)
			for _, s := range segs {
				p.r.OnSeg(s)
				n := tp.Recoveries
				tp.OnAck(p.r.Ack())
				if tp.Recoveries != n {
					ssthresh = append(ssthresh, tp.Ssthresh)
					priorCwnd = append(priorCwnd, tp.PriorCwnd)
					high = append(high, tp.HighSeq)
				}
				tp.XmitRetransmitQueue(o)
				tp.WriteXmit(o)
			}
		}
		if tp.Recoveries != c.recoveries || tp.RTOs != 0 || tp.CAState != CAOpen {
			t.Errorf("%s: %d recoveries %d RTOs, state %v; want %d, 0, Open", c.name, tp.Recoveries, tp.RTOs, tp.CAState, c.recoveries)
			continue
		}
		if c.recoveries < 2 {
			continue
		}
		// The lost segment was the first sent in the first recovery (at
		// its high_seq); the second began as the first ended, from cwnd
		// = the first's ssthresh (50 -> 35 -> 24 here).
		if o.droppedAt != high[0] {
			t.Errorf("%s: dropped segment %d, first high_seq %d", c.name, o.droppedAt, high[0])
		}
		if priorCwnd[1] != ssthresh[0] || ssthresh[1] != ssthresh[0]*717/1024 {
			t.Errorf("%s: second recovery from cwnd %d to ssthresh %d; want from %d to %d", c.name, priorCwnd[1], ssthresh[1],
				ssthresh[0], ssthresh[0]*717/1024)
		}
	}
}
