package tcp

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

func TestReceiverAcks(t *testing.T) {
	r := NewReceiver(false)
	r.quick = 0 // past the quick-ACK start
	seg := func(seq int64) Seg { return Seg{Seq: seq, ECN: NotECT} }
	// In order: every second segment is acked at once, the first waits.
	if now, _ := r.OnSeg(seg(0)); now {
		t.Fatal("one segment acked at once; want a delayed ACK")
	}
	if now, _ := r.OnSeg(seg(1)); !now {
		t.Fatal("two full segments not acked at once")
	}
	if a := r.Ack(); a.Seq != 2 || len(a.Blocks()) != 0 {
		t.Fatalf("ack %+v, want 2 and no SACK", a)
	}
	// A hole at 2: 3 and 4 are SACKed at once, each.
	r.OnSeg(seg(3))
	if now, _ := r.OnSeg(seg(4)); !now {
		t.Fatal("out-of-order data not acked at once")
	}
	a := r.Ack()
	if a.Seq != 2 || len(a.Blocks()) != 1 || a.Blocks()[0] != (Range{3, 5}) {
		t.Fatalf("ack %+v, want 2 SACK [3,5)", a)
	}
	// Another hole: the newest block first.
	r.OnSeg(seg(7))
	a = r.Ack()
	if len(a.Blocks()) != 2 || a.Blocks()[0] != (Range{7, 8}) || a.Blocks()[1] != (Range{3, 5}) {
		t.Fatalf("SACK %v, want [7,8) then [3,5)", a.Blocks())
	}
	// Filling the first hole moves rcv_nxt past the block, acked at once.
	if now, _ := r.OnSeg(seg(2)); !now {
		t.Fatal("a filled hole is acked at once")
	}
	a = r.Ack()
	if a.Seq != 5 || len(a.Blocks()) != 1 || a.Blocks()[0] != (Range{7, 8}) {
		t.Fatalf("ack %+v, want 5 SACK [7,8)", a)
	}
	// A duplicate is acked at once.
	if now, _ := r.OnSeg(seg(1)); !now || r.Dups != 1 {
		t.Fatal("a duplicate is acked at once")
	}
}

func TestReceiverECN(t *testing.T) {
	// RFC 3168: ECE from the first CE until the sender's CWR.
	r := NewReceiver(false)
	r.OnSeg(Seg{Seq: 0, ECN: ECT0})
	if r.Ack().ECE {
		t.Fatal("ECE without CE")
	}
	r.OnSeg(Seg{Seq: 1, ECN: CE})
	r.OnSeg(Seg{Seq: 2, ECN: ECT0})
	if !r.Ack().ECE {
		t.Fatal("no ECE after CE")
	}
	r.OnSeg(Seg{Seq: 3, ECN: ECT0})
	if !r.Ack().ECE {
		t.Fatal("ECE must persist until CWR")
	}
	r.OnSeg(Seg{Seq: 4, ECN: ECT0, CWR: true})
	if r.Ack().ECE {
		t.Fatal("ECE after CWR")
	}
	// DCTCP: ECE mirrors CE; a change acks the delayed data first with
	// the old state.
	d := NewReceiver(true)
	d.quick = 0
	d.OnSeg(Seg{Seq: 0, ECN: ECT0})
	now, pre := d.OnSeg(Seg{Seq: 1, ECN: CE})
	if pre == nil || pre.Seq != 1 || pre.ECE || !now {
		t.Fatalf("pre-ACK %+v now %v, want ACK of 1 without ECE, then an ACK now", pre, now)
	}
	if a := d.Ack(); a.Seq != 2 || !a.ECE {
		t.Fatalf("ack %+v, want 2 with ECE", a)
	}
	d.OnSeg(Seg{Seq: 2, ECN: CE})
	if now, pre := d.OnSeg(Seg{Seq: 3, ECN: CE}); pre != nil || !now {
		t.Fatal("no CE change: no pre-ACK, the usual every-second ACK")
	}
	if a := d.Ack(); !a.ECE {
		t.Fatal("ECE must mirror CE")
	}
}

// pipe is a test network: the sender's skbs become segments, some
// dropped, delivered to a receiver after half an RTT; its ACKs reach the
// sender after the other half.
type pipe struct {
	t        *testing.T
	tp       *Sock
	r        *Receiver
	drop     map[int64]int // segment -> times to drop it
	inflight []Seg
	sent     []int64
	rtt      sim.Time
}

func (p *pipe) SmallQueueCheck(*Sock, int, uint) bool { return false }

func (p *pipe) Transmit(tp *Sock, seq int64, segs int, _ sim.Time, _, retrans bool) bool {
	for s := seq; s < seq+int64(segs); s++ {
		p.sent = append(p.sent, s)
		if p.drop[s] > 0 {
			p.drop[s]--
			continue
		}
		p.inflight = append(p.inflight, Seg{Seq: s, Retrans: retrans, Sent: tp.Now()})
	}
	return true
}

// round delivers everything in flight and acks each segment at once.
func (p *pipe) round(now sim.Time) {
	segs := p.inflight
	p.inflight = nil
	p.tp.SetNow(now + p.rtt)
	for _, s := range segs {
		p.r.OnSeg(s)
		p.tp.OnAck(p.r.Ack())
		p.tp.XmitRetransmitQueue(p)
		p.tp.WriteXmit(p)
	}
}

func TestLossRecovery(t *testing.T) {
	tp := NewSock(Reno{}, false, 0)
	tp.WriteSeq = 1 << 30
	p := &pipe{t: t, tp: tp, r: NewReceiver(false), drop: map[int64]int{30: 1}, rtt: 10 * sim.Millisecond}
	tp.WriteXmit(p)
	now := sim.Time(0)
	var sawRecovery bool
	var cwndAtLoss uint32
	for i := 0; i < 12; i++ {
		if tp.CAState == CAOpen && !sawRecovery {
			cwndAtLoss = tp.Cwnd
		}
		p.round(now)
		now += p.rtt
		if tp.CAState == CARecovery {
			sawRecovery = true
		}
	}
	if !sawRecovery || tp.Recoveries != 1 {
		t.Fatalf("recoveries %d, want one fast recovery for one lost segment", tp.Recoveries)
	}
	if tp.RetransSegs != 1 {
		t.Errorf("retransmitted %d segments, want exactly the lost one", tp.RetransSegs)
	}
	if tp.RTOs != 0 {
		t.Errorf("%d RTOs: SACK recovery should not need one", tp.RTOs)
	}
	if tp.CAState != CAOpen || p.r.RcvNxt != tp.SndUna {
		t.Errorf("state %v rcv_nxt %d snd_una %d: recovery did not complete", tp.CAState, p.r.RcvNxt, tp.SndUna)
	}
	// Reno halves: ssthresh is half the cwnd at the loss (within the
	// slow-start growth of the round that detected it).
	if tp.Ssthresh > cwndAtLoss || tp.Ssthresh < cwndAtLoss/4 {
		t.Errorf("ssthresh %d after a loss at cwnd ~%d", tp.Ssthresh, cwndAtLoss)
	}
	if tp.LostOut != 0 || tp.RetransOut != 0 || tp.SackedOut != 0 {
		t.Errorf("scoreboard not clean: lost %d retrans %d sacked %d", tp.LostOut, tp.RetransOut, tp.SackedOut)
	}
}

func TestRTOAndLostRetransmission(t *testing.T) {
	// The retransmission is lost too: RACK finds it lost once a later
	// send is delivered, then it goes again.
	tp := NewSock(Reno{}, false, 0)
	tp.WriteSeq = 1 << 30
	p := &pipe{t: t, tp: tp, r: NewReceiver(false), drop: map[int64]int{12: 2}, rtt: 10 * sim.Millisecond}
	tp.WriteXmit(p)
	now := sim.Time(0)
	for i := 0; i < 12; i++ {
		p.round(now)
		now += p.rtt
	}
	if p.r.RcvNxt != tp.SndUna || tp.RetransSegs < 2 {
		t.Errorf("rcv_nxt %d snd_una %d retrans %d: the twice-lost segment was not repaired", p.r.RcvNxt, tp.SndUna, tp.RetransSegs)
	}
	// Everything in flight lost: only the RTO helps.
	tp2 := NewSock(Reno{}, false, 0)
	tp2.WriteSeq = 100
	p2 := &pipe{t: t, tp: tp2, r: NewReceiver(false), drop: map[int64]int{}, rtt: 10 * sim.Millisecond}
	for s := int64(0); s < 10; s++ {
		p2.drop[s] = 1
	}
	tp2.WriteXmit(p2)
	if at := tp2.RTOAt(); at != TimeoutInit {
		t.Fatalf("RTO armed at %v, want %v", at, TimeoutInit)
	}
	if tp2.OnRTO(at(tp2) - 1) {
		t.Fatal("RTO fired early")
	}
	if !tp2.OnRTO(TimeoutInit) {
		t.Fatal("RTO did not fire")
	}
	if tp2.Cwnd != 1 || tp2.CAState != CALoss || tp2.RTO != 2*TimeoutInit || tp2.Ssthresh != 5 {
		t.Errorf("after RTO: cwnd %d state %v rto %v ssthresh %d", tp2.Cwnd, tp2.CAState, tp2.RTO, tp2.Ssthresh)
	}
	if n := tp2.XmitRetransmitQueue(p2); n != 1 {
		t.Errorf("RTO retransmitted %d segments, want 1 (cwnd 1)", n)
	}
}

func at(tp *Sock) sim.Time { return tp.RTOAt() }

func TestECNCwr(t *testing.T) {
	tp := NewSock(Reno{}, true, 0)
	tp.WriteSeq = 1 << 30
	p := &pipe{t: t, tp: tp, r: NewReceiver(false), drop: map[int64]int{}, rtt: 10 * sim.Millisecond}
	tp.WriteXmit(p)
	p.round(0)
	cwnd := tp.Cwnd
	// An ECE: CWR, ssthresh halves, the next data carries CWR.
	tp.SetNow(30 * sim.Millisecond)
	tp.OnAck(Ack{Seq: tp.SndUna + 1, ECE: true})
	if tp.CAState != CACWR || tp.Ssthresh != cwnd/2 || !tp.queueCWR {
		t.Fatalf("state %v ssthresh %d (cwnd was %d) cwr queued %v", tp.CAState, tp.Ssthresh, cwnd, tp.queueCWR)
	}
	// A second ECE in the same window changes nothing.
	ss := tp.Ssthresh
	tp.OnAck(Ack{Seq: tp.SndUna + 1, ECE: true})
	if tp.Ssthresh != ss || tp.CWRs != 1 {
		t.Errorf("second ECE reduced again: ssthresh %d CWRs %d", tp.Ssthresh, tp.CWRs)
	}
	// Without ECN negotiated, ECE is ignored.
	tp2 := NewSock(Reno{}, false, 0)
	tp2.WriteSeq = 100
	tp2.WriteXmit(p)
	tp2.OnAck(Ack{Seq: 1, ECE: true})
	if tp2.CAState != CAOpen {
		t.Error("ECE honoured without ECN")
	}
}

// nopOut transmits everything at once (no TSQ, no path).
type nopOut struct{}

func (nopOut) SmallQueueCheck(*Sock, int, uint) bool                 { return false }
func (nopOut) Transmit(*Sock, int64, int, sim.Time, bool, bool) bool { return true }

func TestAckRTTSamples(t *testing.T) {
	// Four segments leave at 0; segment 0 is retransmitted at 50 ms.
	// tcp_clean_rtx_queue takes no seq_rtt from an ACK covering
	// retransmitted data (Karn): the echoed TSval (50 ms) gives 10 ms,
	// not the originals' 60 ms.
	for _, c := range []struct {
		name    string
		retrans bool
		wantUs  uint32
	}{{"originals only", false, 60000}, {"a retransmission acked", true, 10000}} {
		tp := NewSock(Reno{}, false, 0)
		tp.WriteSeq = 4
		tp.WriteXmit(nopOut{})
		if c.retrans {
			tp.markLost(0)
			tp.SetNow(50 * sim.Millisecond)
			tp.XmitRetransmitQueue(nopOut{})
		}
		tp.SetNow(60 * sim.Millisecond)
		tp.OnAck(Ack{Seq: 4, TSecr: 50 * sim.Millisecond})
		if got := tp.RTTUs(); got != c.wantUs {
			t.Errorf("%s: srtt %d us, want %d", c.name, got, c.wantUs)
		}
	}
	// A SACK-only ACK reaches the module's pkts_acked with ca_rtt.
	ca := &Cubic{}
	tp := NewSock(ca, false, 0)
	tp.WriteSeq = 4
	tp.WriteXmit(nopOut{})
	tp.SetNow(7 * sim.Millisecond)
	a := Ack{Seq: 0, NSACK: 1}
	a.SACK[0] = Range{2, 4}
	tp.OnAck(a)
	if ca.DelayMin != 7000 {
		t.Errorf("cubic delay_min %d after a SACK-only ACK 7 ms on, want 7000", ca.DelayMin)
	}
}
