package netdev

import (
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// The local receive path: packets for this host's own sockets (TCP
// ACKs and data, ping replies, UDP_RR responses) arriving from the
// wire. A NIC steers each by RSS to an RX queue, raises the queue's
// vector (moderated by the driver's RX ITR) and NAPI delivers it in
// NET_RX_SOFTIRQ on the vector's CPU; on veth the peer's transmit
// (netif_rx) queues it on the CPU that sent it. Either way the host
// pays the per-packet receive cost and then the protocol's handler,
// Deliver's fn, runs in softirq. The RX ring itself is not modelled
// here (the forward workload's rx.go is): these packets are few (ACKs
// and probes) and never overflow it.

// localRx is one RX queue's (or, on veth, one CPU's) delivery state: the
// packets that arrived and wait for NAPI, and the interrupt moderation.
type localRx struct {
	cpu     int
	itr     sim.Time
	lastIRQ sim.Time
	armed   bool // an interrupt is raised or NAPI is scheduled
	pending []localPkt
	head    int
	napi    *napi
	nic     bool
}

type localPkt struct {
	fn func(c *sim.CPU)
}

// Delivered counts packets the local receive path handed to sockets.
func (n *Net) Delivered() uint64 { return n.localDelivered }

// RxCPU is the CPU a packet of flow hash arriving on d is received on:
// the IRQ CPU of the RX queue RSS picks (the queue pair's vector) on a
// NIC, or cpu (the sender's, where veth's netif_rx runs) on a device
// without RX rings.
func (d *Device) RxCPU(hash uint32, cpu int) int {
	if d.Info.Rx == nil || d.numRxQ == 0 {
		return cpu
	}
	q := RSSQueue(hash, d.Info.Rx.LUTSize, d.numRxQ)
	return d.vecCPU[d.Info.Rx.QueueVec[q]]
}

func (d *Device) localQueue(hash uint32, cpu int) *localRx {
	key := cpu
	nic := d.Info.Rx != nil && d.numRxQ > 0
	if nic {
		key = RSSQueue(hash, d.Info.Rx.LUTSize, d.numRxQ)
	}
	if d.local == nil {
		d.local = map[int]*localRx{}
	}
	lq := d.local[key]
	if lq == nil {
		lq = &localRx{cpu: d.RxCPU(hash, cpu), lastIRQ: -1 << 40, nic: nic}
		if nic {
			lq.itr = d.Info.Rx.ITR
		}
		lq.napi = &napi{dev: d, vec: -1, local: lq}
		d.local[key] = lq
	}
	return lq
}

// Deliver hands a packet that reaches d from the wire at time at (call
// from engine context, at that time) to the host: fn runs in
// NET_RX_SOFTIRQ on the CPU RxCPU gives, after the receive cost (the
// driver's RX clean, GRO, __netif_receive_skb, ip_rcv; on veth the
// peer's netif_rx and backlog). Packets of one queue are delivered in
// arrival order.
func (n *Net) Deliver(d *Device, at sim.Time, hash uint32, cpu int, fn func(c *sim.CPU)) {
	lq := d.localQueue(hash, cpu)
	lq.pending = append(lq.pending, localPkt{fn: fn})
	if lq.armed {
		return
	}
	lq.armed = true
	irqAt := max(at, lq.lastIRQ+lq.itr)
	lq.lastIRQ = irqAt
	n.E.RaiseIRQ(n.E.CPUs[lq.cpu], irqAt, func(c *sim.CPU) {
		n.napiSchedule(c, lq.napi) // the vector's MSI-X handler (or veth's __napi_schedule)
	})
}

// pollLocal is the NAPI poll of a local receive queue: up to budget
// packets, each priced and handed to its socket.
func (n *Net) pollLocal(c *sim.CPU, lq *localRx, budget int) (int, bool) {
	c.Sync() // every arrival up to now has been queued
	costs := n.E.Costs
	per := costs.PeerRx
	if lq.nic {
		per = costs.RxClean + costs.GROReceive + costs.NetifReceiveSkb + costs.IPRcv
	}
	done := 0
	for done < budget && lq.head < len(lq.pending) {
		p := lq.pending[lq.head]
		lq.pending[lq.head] = localPkt{}
		lq.head++
		done++
		c.Spend(per)
		n.softnet[c.ID].Processed++
		n.localDelivered++
		p.fn(c)
	}
	if lq.head == len(lq.pending) {
		lq.pending, lq.head = lq.pending[:0], 0
		lq.armed = false // napi_complete_done: the next arrival interrupts again
		return done, true
	}
	return budget, false
}

// TxOwner is an optional skb.Owner extension: Transmitted is called on
// the CPU that completes the skb's transmission (TX completion after the
// wire, or veth's peer receive), before its destructor: the packet left
// the host, and the owner hands it to the network beyond.
type TxOwner interface {
	Transmitted(c *sim.CPU, s *skb.SKB)
}
