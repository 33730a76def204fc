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
