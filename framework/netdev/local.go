package netdev

import (
	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// The local receive path: packets for this host's own sockets (TCP
// ACKs and data, ping replies, UDP_RR responses) arriving from the
// wire. A NIC steers each by RSS to an RX queue, raises the queue's
// vector (moderated by the driver's RX ITR) and NAPI delivers it in
// NET_RX_SOFTIRQ on the vector's CPU; on veth the peer's transmit
// (netif_rx) queues it on the softnet backlog of the CPU that sent it,
// the one veth's own transmit uses too (backlog.go). Either way the host
// pays the per-packet receive cost and then the protocol's handler,
// Deliver's fn, runs in softirq. The RX ring itself is not modelled
// here (the forward workload's rx.go is): these packets are few (ACKs
// and probes) and never overflow it.

// localRx is one RX queue's delivery state: the packets that arrived
// and wait for NAPI, and the interrupt moderation.
type localRx struct {
	cpu     int
	itr     sim.Time
	lastIRQ sim.Time
	armed   bool // an interrupt is raised or NAPI is scheduled
	pending []localPkt
	head    int
	napi    *napi
	irq     func(c *sim.CPU) // raises napi (made once)
}

// localPkt is fn, or else to's RcvLocal with p: the packet (a TCP
// segment or ACK) kept by value, so that delivering it costs no closure.
type localPkt struct {
	fn func(c *sim.CPU)
	to LocalReceiver
	p  path.Pkt
}

// LocalReceiver is a protocol's receive handler (tcp_v4_rcv): RcvLocal
// runs in NET_RX_SOFTIRQ on c with the packet as it arrived.
type LocalReceiver interface {
	RcvLocal(c *sim.CPU, p path.Pkt)
}

// Delivered counts packets the local receive path handed to sockets.
func (n *Net) Delivered() uint64 { return n.localDelivered }

// LocalDropped counts packets for local sockets that a full softnet
// backlog dropped (enqueue_to_backlog, on veth).
func (n *Net) LocalDropped() uint64 { return n.localDropped }

// LocalTCDropped counts packets for local sockets that tc dropped on
// their way in: the ingress block's drops, and those of an ifb's qdisc
// mirred handed them to.
func (n *Net) LocalTCDropped() uint64 { return n.localTCDropped }

// LocalRxTruesize is skb->truesize of a frame of flow k (its keys as
// received) that reaches d from the wire for a local socket: the RX
// buffer napi_build_skb built it around (skb.TruesizeFrag of the
// driver's buffer, on the slave RSS picks for a bond), as the forward
// workload's frames have. 0 for a device without a wire (veth: the
// peer's own skb arrives, its truesize the sender's) or a driver
// without RX information.
func (n *Net) LocalRxTruesize(d *Device, k skb.FlowKeys) uint32 {
	dev, _, _ := n.rxSteer(d, k)
	if !dev.Info.Wire || dev.Info.Rx == nil {
		return 0
	}
	return skb.TruesizeFrag(dev.Info.Rx.BufSize)
}

// localWaiting counts the packets for local sockets that arrived and
// are neither delivered nor dropped: on a softnet backlog, or waiting
// for a local receive queue's NAPI.
func (n *Net) localWaiting() uint64 {
	var w uint64
	for i := range n.sd {
		if b := n.sd[i].backlog; b != nil {
			for _, q := range [][]backlogSkb{b.input, b.process[b.head:]} {
				for _, e := range q {
					if e.s == nil {
						w++
					}
				}
			}
		}
	}
	for _, d := range n.Devs {
		for _, lq := range d.local {
			w += uint64(len(lq.pending) - lq.head)
		}
	}
	return w + n.localInHand + uint64(len(n.localSkbs))
}

// ExpectLocalReceive says, before the run, that a workload will deliver
// packets to the host's sockets (Deliver, DeliverTo).
func (n *Net) ExpectLocalReceive() { n.localReceive = true }

// localQueue is the local receive queue of a NIC, dev, that RSS picked
// for a frame (rxSteer, as for every frame the host receives: Net.RxCPU):
// the RX queue key (or, on a NIC built transmit-only, the queue pair)
// and its vector's IRQ CPU, on a bond's slave.
func (n *Net) localQueue(dev *Device, key, rxCPU int) *localRx {
	if dev.local == nil {
		dev.local = map[int]*localRx{}
	}
	lq := dev.local[key]
	if lq == nil {
		lq = &localRx{cpu: rxCPU, lastIRQ: -1 << 40}
		if dev.Info.Rx != nil {
			lq.itr = dev.Info.Rx.ITR
		}
		lq.napi = &napi{dev: dev, vec: -1, local: lq}
		x := lq.napi
		lq.irq = func(c *sim.CPU) {
			n.napiSchedule(c, x) // the vector's MSI-X handler
		}
		dev.local[key] = lq
	}
	return lq
}

// Deliver hands a packet of flow k (its keys as received) that reaches
// d from the wire at time at (call from engine context, at that time)
// to the host: fn runs in NET_RX_SOFTIRQ on the CPU localQueue gives
// after the receive cost (the driver's RX clean, GRO,
// __netif_receive_skb, ip_rcv). A device without a wire (veth) has no
// RSS: the peer's transmit runs __netif_rx on the CPU it ran on, cpu,
// so the packet joins that CPU's softnet backlog behind the skbs already
// there (veth's own among them), or is dropped when it is full, and
// process_backlog delivers it (the peer_rx cost). Packets of one queue
// are delivered in arrival order.
func (n *Net) Deliver(d *Device, at sim.Time, k skb.FlowKeys, cpu int, fn func(c *sim.CPU)) {
	n.deliverLocal(d, at, k, cpu, localPkt{fn: fn})
}

// DeliverTo is Deliver of packet p to to's RcvLocal.
func (n *Net) DeliverTo(d *Device, at sim.Time, k skb.FlowKeys, cpu int, to LocalReceiver, p path.Pkt) {
	n.deliverLocal(d, at, k, cpu, localPkt{to: to, p: p})
}

func (n *Net) deliverLocal(d *Device, at sim.Time, k skb.FlowKeys, cpu int, p localPkt) {
	if !n.localReceive {
		sim.Panicf("a packet delivered to the host's sockets without ExpectLocalReceive")
	}
	n.localArrived++
	dev, q, rxCPU := n.rxSteer(d, k)
	if !dev.Info.Wire {
		// __netif_rx on the sending CPU from engine context: a drop
		// loses the packet (its protocol recovers, as from any loss).
		if !n.enqueueToBacklog(nil, at, cpu, backlogSkb{local: p, dev: dev}) {
			n.localDropped++
			// dev_core_stats_rx_dropped_inc(skb->dev): this veth
			// received it; the peer's veth_xmit saw NET_RX_DROP
			// (its priv->dropped).
			dev.link.coreRxDropped++
			dev.link.peerDrvDropped++
		}
		return
	}
	lq := n.localQueue(dev, q, rxCPU)
	lq.pending = append(lq.pending, p)
	if lq.armed {
		return
	}
	lq.armed = true
	irqAt := max(at, lq.lastIRQ+lq.itr)
	lq.lastIRQ = irqAt
	n.E.RaiseIRQ(n.E.CPUs[lq.cpu], irqAt, lq.irq)
}

// pollLocal is the NAPI poll of a local receive queue: up to budget
// packets, each priced, its sk_buff taken from the CPU's
// napi_alloc_cache, and handed to its socket. The socket's side frees
// it (the workload prices that free where the kernel makes it).
func (n *Net) pollLocal(c *sim.CPU, lq *localRx, budget int) (int, bool) {
	c.Sync() // every arrival up to now has been queued
	costs := n.E.Costs
	per := costs.RxClean + costs.GROReceive + costs.NetifReceiveSkb + costs.IPRcv
	done := 0
	dev := lq.napi.dev
	ingress := dev != nil && dev.clsact != nil && dev.filters.Filtered(ingressAt)
	if ingress {
		per -= costs.IPRcv // after the ingress block, for what goes on
	}
	for done < budget && lq.head < len(lq.pending) {
		p := lq.pending[lq.head]
		lq.pending[lq.head] = localPkt{}
		lq.head++
		done++
		// In this CPU's hands until delivered: the sk_buff's slab free
		// below is a sync point, where the run may end.
		n.localInHand++
		c.Spend(per)
		// The driver's napi_build_skb. The reader the model does not
		// follow, its sk_buff goes back to its slab at once.
		n.freeSkbuff(c, n.napiSkbCacheGet(c))
		n.softnet[c.ID].Processed++
		n.localInHand--
		if ingress {
			if !n.localIngress(c, dev, p) {
				continue // dropped, or taken by mirred
			}
			c.Spend(costs.IPRcv)
		}
		n.localDelivered++
		p.deliver(c)
	}
	if lq.head == len(lq.pending) {
		lq.pending, lq.head = lq.pending[:0], 0
		lq.armed = false // napi_complete_done: the next arrival interrupts again
		return done, true
	}
	return budget, false
}

// deliver hands the packet to its socket (or runs its handler).
func (p *localPkt) deliver(c *sim.CPU) {
	if p.to != nil {
		p.to.RcvLocal(c, p.p)
	} else {
		p.fn(c)
	}
}

// localIngress is sch_handle_ingress in __netif_receive_skb_core for a
// packet the host receives for its own sockets, on dev's RX CPU c (a
// NIC's RX queue's, or for veth the CPU whose backlog took it)
// (ingress police on downloads, or the sqm recipe's mirred to an ifb
// that shapes them): the packet runs the ingress block as the skb it
// would be (one from the pool, not offered: the local path keeps its
// own balance). It returns true for a packet that goes on up the stack;
// a drop (TC_INGRESS) ends it, counted with the local path's drops, and
// mirred takes it: to an ifb, whose tasklet gives it back to
// netifReceiveSkb (deliverLocalSkb), or out of another device, where it
// becomes a packet the host sends.
func (n *Net) localIngress(c *sim.CPU, dev *Device, p localPkt) bool {
	s := n.Pool.Get()
	h := s.Handle
	s.Packet = skb.Packet{Handle: h, Len: p.p.Len, Keys: p.p.Keys, Hash: p.p.Hash, DSCP: p.p.DSCP, ECN: p.p.ECN, GSOSegs: 1, Sock: -1}
	s.Born, s.SenderCPU = c.Now(), int16(c.ID)
	n.ownSkb(c, s)
	n.unoffered++
	if n.localSkbs == nil {
		n.localSkbs = map[skb.Handle]localPkt{}
	}
	n.localSkbs[h] = p
	if _, _, _, done := n.tcRun(c, dev, s, ingressAt, skb.DropTCIngress); done {
		return false
	}
	n.takeLocal(s) // not taken: the packet goes on as it was
	n.Pool.Put(s)
	return true
}

// takeLocal ends s's life as a local packet's skb (localIngress): its
// packet, and false for any other skb.
func (n *Net) takeLocal(s *skb.SKB) (localPkt, bool) {
	if n.localSkbs == nil {
		return localPkt{}, false
	}
	p, ok := n.localSkbs[s.Handle]
	if ok {
		delete(n.localSkbs, s.Handle)
		n.unoffered--
	}
	return p, ok
}

// localDrop ends a local packet's skb that is being freed as a drop: it
// counts with the local path's drops, not the transmit path's. False
// for any other skb.
func (n *Net) localDrop(s *skb.SKB) bool {
	if _, ok := n.takeLocal(s); !ok {
		return false
	}
	n.localTCDropped++
	return true
}

// deliverLocalSkb is the rest of __netif_receive_skb_core and ip_rcv for
// a local packet's skb an ifb gave back (netif_receive_skb from its
// tasklet, tc_skip_classify set): the packet goes to its socket on c,
// and its skb back to the pool. False for any other skb.
func (n *Net) deliverLocalSkb(c *sim.CPU, s *skb.SKB) bool {
	p, ok := n.takeLocal(s)
	if !ok {
		return false
	}
	c.Spend(n.E.Costs.NetifReceiveSkb + n.E.Costs.IPRcv)
	n.softnet[c.ID].Processed++
	n.Pool.Put(s)
	n.localDelivered++
	p.deliver(c)
	return true
}

// localSendOut makes a local packet's skb that mirred sends out of a
// device other than an ifb (an egress redirect from the ingress block)
// a packet the host sends: offered from now on, and counted out of the
// local path.
func (n *Net) localSendOut(s *skb.SKB) {
	if _, ok := n.takeLocal(s); ok {
		n.Offered++
		n.localOut++
	}
}

// TxOwner is an optional skb.Owner extension: Transmitted is called on
// the CPU that completes the skb's transmission (TX completion after the
// wire, or veth's peer receive), before its destructor: the packet left
// the host, and the owner hands it to the network beyond.
type TxOwner interface {
	Transmitted(c *sim.CPU, s *skb.SKB)
}

// DeferFreeRx ends a received skb that a socket's reader consumes when
// the reader is not modelled (it reads at once): tcp_recvmsg's
// skb_attempt_defer_free (net/core/skbuff.c) queues the skb to the
// CPU that allocated it, the RX CPU c, whose net_rx_action frees it with
// skb_defer_free_flush's napi_consume_skb: skb_release_all and
// napi_skb_cache_put there (kfree_skb_napi_cache, the same, if the
// reader runs on c). Priced on c as the segment arrives; the reader's
// share (defer_lock, the IPI past half of net.core.skb_defer_max) is
// not modelled. Its head is a page fragment, no slab object.
func (n *Net) DeferFreeRx(c *sim.CPU) { n.consumeDeferred(c, deferredSkb{}) }
