package workload

import (
	"fmt"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tcp"
)

// downSock is a download's socket on the host: it receives in softirq
// and sends pure ACKs through the host's TX path (__tcp_send_ack from
// the RX CPU). The reading application is not modelled: it reads
// everything at once, so the window stays open.
type downSock struct {
	netdev.TxqMapping // sk_tx_queue_mapping: netdev_pick_tx caches its queue

	f         *TCPFlow
	tr        *Traffic
	slock     sim.SpinLock
	delack    sim.HrTimer
	delackFn  func(c *sim.CPU)
	wmemAlloc int64
	Acks      uint64
	acks      map[skb.Handle]tcp.Ack // the ACKs in the TX path, by skb
	owner     skb.OwnerID            // ds in the host's skb pool
}

// farOut is the far end's transmit: segments straight onto the down
// link (its NIC and TSO leave them back to back; the path's bottleneck
// spaces them). It has no TSQ.
type farOut struct{ f *TCPFlow }

func (tr *Traffic) startDown(f *TCPFlow, at sim.Time) error {
	cc, err := tcp.NewCC(tr.CC)
	if err != nil {
		return err
	}
	ds := &downSock{f: f, tr: tr, acks: map[skb.Handle]tcp.Ack{}}
	ds.slock.Name = fmt.Sprintf("tcp/%d sk_lock.slock", f.ID)
	ds.owner = tr.net.Pool.AddOwner(ds)
	f.Snd, f.Rcv, f.down = tcp.NewSock(cc, tr.ECN, at), tcp.NewReceiver(cc.NeedsECN()), ds
	tr.e.At(at, func() {
		f.Snd.SetNow(at)
		f.Snd.WriteSeq = 1 << 50 // the far end always has data
		f.farXmit()
	})
	return nil
}

// farXmit is the far end's tcp_write_xmit (and retransmissions).
func (f *TCPFlow) farXmit() {
	out := farOut{f}
	f.Snd.SetNow(f.tr.e.Now())
	f.Snd.XmitRetransmitQueue(out)
	f.Snd.WriteXmit(out)
	f.farArmRTO()
}

// SmallQueueCheck implements tcp.Output: the far end has no TSQ.
func (farOut) SmallQueueCheck(*tcp.Sock, int, uint) bool { return false }

// Transmit implements tcp.Output: each segment goes down the path.
func (o farOut) Transmit(tp *tcp.Sock, seq int64, segs int, _ sim.Time, cwr, retrans bool) bool {
	f := o.f
	tr := f.tr
	for i := 0; i < segs; i++ {
		seg := tcp.Seg{Flow: int32(f.ID), Seq: seq + int64(i), Retrans: retrans, Sent: tp.Now(), CWR: cwr && i == 0}
		if tp.ECN {
			seg.ECN = tcp.ECT0
		}
		tr.Path.Down.Send(tr.e.Now(), path.Pkt{Len: tcp.FrameLen, Keys: reverse(f.keys), Hash: f.hash, DSCP: f.DSCP, ECN: seg.ECN,
			To: f.host(), Seg: seg})
	}
	return true
}

// farArmRTO arms the far end's write timer, the RTO or the loss probe
// (lazily: an earlier expiry re-arms itself).
func (f *TCPFlow) farArmRTO() {
	at := f.Snd.RTOAt()
	if at == 0 || (f.rtoArmedAt != 0 && f.rtoArmedAt <= at) {
		return
	}
	f.rtoArmedAt = at
	f.rtoGen++
	gen := f.rtoGen
	f.tr.e.At(at, func() {
		if f.rtoGen != gen {
			return
		}
		f.rtoArmedAt = 0
		f.Snd.OnWriteTimer(f.tr.e.Now(), farOut{f})
		f.farArmRTO()
	})
}

// farRcvAck is the far end receiving an ACK of a download.
func (f *TCPFlow) farRcvAck(a tcp.Ack) {
	f.Snd.SetNow(f.tr.e.Now())
	f.Snd.OnAck(a)
	f.farXmit()
}

// rcvData is tcp_v4_rcv -> tcp_rcv_established for a download's data
// segment in softirq on c: queued, and acked at once or after the
// delayed-ACK timeout.
func (ds *downSock) rcvData(c *sim.CPU, seg tcp.Seg) {
	c.Spend(ds.tr.costs.TCPRcv)
	ds.slock.Lock(c, ds.tr.site.bhLockSock)
	now, pre := ds.f.Rcv.OnSeg(seg)
	ds.tr.net.DeferFreeRx(c) // read at once; its free comes back here
	if pre != nil {
		ds.sendAck(c, *pre)
	}
	if now {
		ds.sendAck(c, ds.f.Rcv.Ack())
	} else if _, ok := ds.delack.Queued(); !ok {
		if ds.delackFn == nil {
			ds.delackFn = func(c *sim.CPU) { ds.tr.queueTasklet(c, tasklet{kind: tkDelack, down: ds}) }
		}
		ds.delack.Start(c, c.Now()+tcp.DelackMin, ds.delackFn)
	}
	ds.slock.Unlock(c)
}

// delackTimer is tcp_delack_timer_handler.
func (ds *downSock) delackTimer(c *sim.CPU) {
	ds.slock.Lock(c, ds.tr.site.bhLockSock)
	if ds.f.Rcv.Pending() {
		ds.sendAck(c, ds.f.Rcv.Ack())
	}
	ds.slock.Unlock(c)
}

// sendAck is __tcp_send_ack: a pure ACK skb through the host's TX path.
func (ds *downSock) sendAck(c *sim.CPU, a tcp.Ack) {
	tr := ds.tr
	f := ds.f
	ds.delack.Cancel()
	a.Flow = int32(f.ID)
	c.Spend(tr.costs.TCPXmit)
	s := tr.net.AllocSkb(c)
	s.Len, s.TrueSize = a.Len(), tcp.AckTruesize()
	s.Keys, s.Hash, s.DSCP = f.keys, f.hash, f.DSCP
	s.Priority, s.Mark = f.Priority, f.Mark
	s.Sock = int32(f.ID)
	s.Owner = ds.owner
	// The host sends no data on a download: its sequence stays after
	// its SYN; the header acks a.Seq.
	s.Cb = skb.CB{Ack: a.Seq}
	s.TCPFlags = skb.TCPHdrACK
	if a.ECE {
		s.TCPFlags |= skb.TCPHdrECE
	}
	ds.acks[s.Handle] = a
	// A download's socket sends no data: nothing awaits an ACK, so
	// every ACK may take the queue XPS (or the hash) gives it now.
	s.OooOkay = tcpOooOkay(ds.wmemAlloc, 0)
	ds.wmemAlloc += int64(s.TrueSize)
	ds.Acks++
	tr.net.DevQueueXmit(c, tr.dev, s)
}

// Release is __sock_wfree for a pure ACK.
func (ds *downSock) Release(_ *sim.CPU, s *skb.SKB) {
	ds.wmemAlloc -= int64(s.TrueSize)
	delete(ds.acks, s.Handle)
}

// TCPHeader implements skb.HeaderOwner: the pure ACK's header, its
// cumulative ACK, echoed timestamp and SACK blocks.
func (ds *downSock) TCPHeader(s *skb.SKB) (skb.TCPHeader, bool) {
	a, ok := ds.acks[s.Handle]
	if !ok {
		return skb.TCPHeader{}, false
	}
	return tcpHeader(s, tcp.TSClock(sim.Ktime(a.TSecr)), a.Blocks()), true
}

// Transmitted implements netdev.TxOwner: the ACK goes up the path.
func (ds *downSock) Transmitted(c *sim.CPU, s *skb.SKB) {
	f := ds.f
	a := ds.acks[s.Handle]
	ds.tr.Path.Up.Send(c.Now(), path.Pkt{Len: s.Len, Keys: f.keys, Hash: f.hash, DSCP: f.DSCP,
		To: f.far(), Ack: a})
}
