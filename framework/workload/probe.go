package workload

import (
	"fmt"

	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tcp"
)

// Sizes of the probes' packets (L2, no FCS).
const (
	pingLen  = 56 + 8 + 20 + 14 // ping's default 56 bytes of ICMP data
	udpRRLen = 1 + 8 + 20 + 14  // netperf UDP_RR's 1-byte request and response
)

// Sample is one RTT measurement: when the request left the probe and
// how long the answer took.
type Sample struct {
	At  sim.Time
	RTT sim.Time
}

// ProbeSock is a latency probe: a task on the host sending requests
// through the TX path, the far end echoing them, the RTT taken when the
// answer is stamped (ping's SO_TIMESTAMP: skb->tstamp, taken as the
// stack receives it) or, for udp_rr, when the waiting netperf task runs
// again (it measures in user space). ping keeps no table of its
// requests: the send time rides in the echo's data (iputils ping writes
// a timeval there and gather_statistics subtracts it from the reply's
// stamp), so a request or reply lost anywhere takes it along, and ping
// counts it lost only as a sequence it never saw (Samples less the
// requests sent).
//
// Its socket is unconnected, as ping's ICMP socket (iputils ping
// sendto()s; it connects only with -C) and flent's netperf UDP_RR (no
// -n) are: ping_v4_sendmsg and udp_sendmsg route each send and never
// sk_dst_set, so with sk_dst_cache NULL netdev_pick_tx never caches a
// queue (sk_tx_queue_set) and picks each packet's afresh: XPS by the
// sending CPU, else skb_tx_hash. Hence no TxqMapping here. Its state is
// TCP_CLOSE, which fq_classify hashes like an orphan: Sock < 0.
type ProbeSock struct {
	Probe
	ID      int
	Samples []Sample
	Lost    uint64 // udp_rr requests given up after udpRRTimeout

	tr    *Traffic
	task  *sim.Task
	keys  skb.FlowKeys
	hash  uint32
	owner skb.OwnerID // ps in the host's skb pool
	// sent are the requests' send times by sequence: udp_rr's until its
	// transaction ends; ping's while the request's skb is in the host
	// (the time then rides in the packet, Seg.Sent).
	sent    map[int64]sim.Time
	seq     int64
	got     bool // udp_rr: the answer to the current request arrived
	gotAt   sim.Time
	waiting bool
	txCPU   int
}

func (tr *Traffic) startProbe(i int, p Probe, jitter sim.Time) *ProbeSock {
	ps := &ProbeSock{Probe: p, ID: i, tr: tr, sent: map[int64]sim.Time{}, txCPU: -1}
	ps.owner = tr.net.Pool.AddOwner(ps)
	proto := uint8(1) // ICMP
	if p.Kind == ProbeUDPRR {
		proto = 17
	}
	ps.keys = skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a010001, SrcPort: uint16(20000 + i), DstPort: 7, Proto: proto}
	h := mix(uint64(ps.keys.Src)<<32 ^ uint64(ps.keys.Dst) ^ uint64(ps.keys.SrcPort)<<16 ^ uint64(proto)<<56 ^ tr.hashrnd)
	ps.hash = uint32(h) | 1
	ps.task = tr.e.NewTask(fmt.Sprintf("%s/%d", p.Kind, i), nil, ps.run)
	ps.task.Start(jitter)
	return ps
}

// sleepUntil blocks the task until at (nanosleep: an hrtimer wakes it).
func (ps *ProbeSock) sleepUntil(t *sim.Task, at sim.Time) {
	if t.CPU().Now() >= at {
		return
	}
	e := ps.tr.e
	e.At(at, func() { e.WakeUp(t, nil) })
	t.Block()
}

func (ps *ProbeSock) run(t *sim.Task) {
	next := t.CPU().Now()
	for {
		if ps.Kind == ProbePing {
			ps.sleepUntil(t, next)
			next += ps.Interval
			ps.send(t.CPU())
			continue
		}
		// udp_rr: request, wait for the response (or give up), repeat.
		c := t.CPU()
		c.Sync()
		start := c.Now()
		ps.got = false
		seq := ps.send(c)
		e := ps.tr.e
		e.At(start+udpRRTimeout, func() {
			if ps.seq == seq && !ps.got && ps.waiting {
				e.WakeUp(t, nil)
			}
		})
		for !ps.got && t.CPU().Now() < start+udpRRTimeout {
			ps.waiting = true
			t.Block()
			ps.waiting = false
		}
		c = t.CPU()
		c.Sync()
		if ps.got {
			// recvfrom; skb_consume_udp's __consume_stateless_skb frees
			// the reply here, on the reader's CPU (6.12's UDP does not
			// defer it to its RX CPU)
			c.Spend(ps.tr.costs.SockRcv + ps.tr.costs.KfreeSkb)
			ps.Samples = append(ps.Samples, Sample{At: start, RTT: c.Now() - start})
		} else {
			ps.Lost++
		}
		delete(ps.sent, seq)
		if ps.Interval > 0 {
			ps.sleepUntil(t, start+ps.Interval)
		}
	}
}

// send is sendto on the probe's socket: one small skb into
// __dev_queue_xmit.
func (ps *ProbeSock) send(c *sim.CPU) int64 {
	tr := ps.tr
	c.Sync()
	// ping writes gettimeofday into the echo before sendmsg: the RTT
	// includes the syscall's send path.
	at := c.Now()
	c.Spend(tr.costs.StackPerPacket + tr.costs.SkbAlloc)
	ps.seq++
	s := tr.net.AllocSkb(c)
	s.Len = pingLen
	if ps.Kind == ProbeUDPRR {
		s.Len = udpRRLen
	}
	s.TrueSize = tr.net.Cfg.TruesizeUDP(int(s.Len) - 14)
	s.Keys, s.Hash, s.DSCP = ps.keys, ps.hash, ps.DSCP
	s.Priority, s.Mark = ps.tr.priority, ps.tr.mark
	s.Sock = int32(-2 - ps.ID)
	s.Owner = ps.owner
	s.Cb = skb.CB{Seq: ps.seq}
	ps.sent[ps.seq] = at
	tr.net.DevQueueXmit(c, tr.dev, s)
	return ps.seq
}

// Release is sock_wfree (nothing waits on a probe's send buffer). A ping
// request freed in the host without being sent (a drop) takes its send
// time with it; one sent took it along already (Transmitted).
func (ps *ProbeSock) Release(_ *sim.CPU, s *skb.SKB) {
	if ps.Kind == ProbePing {
		delete(ps.sent, s.Cb.Seq)
	}
}

// Transmitted implements netdev.TxOwner: the request goes up the path,
// the far end answers at once, the answer comes down and is received
// by the host. A ping's send time goes with it, in the echo's data.
func (ps *ProbeSock) Transmitted(c *sim.CPU, s *skb.SKB) {
	ps.txCPU = c.ID
	seg := tcp.Seg{Seq: s.Cb.Seq}
	if ps.Kind == ProbePing {
		seg.Sent = ps.sent[seg.Seq]
		delete(ps.sent, seg.Seq)
	}
	ps.tr.Path.Up.Send(c.Now(), path.Pkt{Len: s.Len, Keys: ps.keys, Hash: ps.hash, DSCP: ps.DSCP,
		To: (*probeFar)(ps), Seg: seg})
}

// probeFar is a probe at the far end, which answers at once.
type probeFar ProbeSock

// Arrive implements path.Arriver: the answer goes down the path.
func (pf *probeFar) Arrive(p path.Pkt) {
	ps := (*ProbeSock)(pf)
	ps.tr.Path.Down.Send(ps.tr.e.Now(), path.Pkt{Len: p.Len, Keys: reverse(ps.keys), Hash: ps.hash, DSCP: ps.DSCP,
		To: (*probeHost)(ps), Seg: p.Seg})
}

// probeHost is a probe's socket at the host's end of the path.
type probeHost ProbeSock

// Arrive implements path.Arriver: the answer goes up the local receive
// path (veth's: on the CPU the request left from).
func (ph *probeHost) Arrive(p path.Pkt) {
	ps := (*ProbeSock)(ph)
	tr := ps.tr
	ps.arrived(tr.e.Now(), &p)
	tr.net.DeliverTo(tr.dev, tr.e.Now(), reverse(ps.keys), tr.rxCPU(ps.hash, ps.txCPU), ph, p)
}

// arrived is the reply p reaching the host at now: veth's netif_rx
// stamps it (netdev_tstamp_prequeue), in the packet, which a drop on
// the backlog takes along; a NIC's is stamped in the NAPI poll.
func (ps *ProbeSock) arrived(now sim.Time, p *path.Pkt) {
	if ps.Kind != ProbePing || !ps.prequeueStamp() {
		return
	}
	p.RxStamp = now
}

// prequeueStamp is whether the host's receive is veth's netif_rx (a
// device without a wire; a bond receives through its slaves).
func (ps *ProbeSock) prequeueStamp() bool {
	d := ps.tr.dev
	for d.Bond != nil && len(d.Bond.Slaves) > 0 {
		d = d.Bond.Slaves[0]
	}
	return !d.Info.Wire
}

// RcvLocal implements netdev.LocalReceiver.
func (ph *probeHost) RcvLocal(c *sim.CPU, p path.Pkt) { (*ProbeSock)(ph).answer(c, &p) }

// answer is the reply p reaching the probe's socket in softirq on c.
func (ps *ProbeSock) answer(c *sim.CPU, p *path.Pkt) {
	// A NIC's reply is stamped in this poll, before ping_rcv queues it.
	stamp := c.Now()
	if p.RxStamp != 0 {
		stamp = p.RxStamp
	}
	c.Spend(ps.tr.costs.SockRcv)
	seq := p.Seg.Seq
	if ps.Kind == ProbePing {
		sent := p.Seg.Sent // the echo's timeval
		ps.Samples = append(ps.Samples, Sample{At: sent, RTT: stamp - sent})
		return
	}
	if _, ok := ps.sent[seq]; !ok {
		return // udp_rr gave it up already
	}
	if seq == ps.seq && !ps.got {
		ps.got, ps.gotAt = true, c.Now()
		if ps.waiting {
			ps.tr.e.WakeUp(ps.task, c)
		}
	}
}
