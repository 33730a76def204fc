package netdev

import (
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// The per-CPU softnet backlog (struct softnet_data's input_pkt_queue,
// process_queue and backlog NAPI, net/core/dev.c): what netif_rx queues
// on, with RPS off always on the CPU that calls it. One per CPU, shared
// by every caller: a software device's transmit handing its skbs to the
// peer (veth_forward_skb's __netif_rx, driver.Ctx.NetifRx) and the
// packets for this host's sockets arriving on such a device (the local
// receive path, local.go). enqueue_to_backlog appends to
// input_pkt_queue while it holds at most netdev_max_backlog skbs, and
// drops (SKB_DROP_REASON_CPU_BACKLOG, softnet_stat's dropped) beyond;
// process_backlog delivers from process_queue, splicing input_pkt_queue
// onto it when it runs dry, up to the quota (dev_weight, 64) a poll.

// backlogHolder marks an skb on a CPU's softnet backlog.
const backlogHolder = -2

// softnetBacklog is one CPU's backlog.
type softnetBacklog struct {
	input   []backlogSkb // input_pkt_queue
	process []backlogSkb // process_queue, from head
	head    int
	napi    napi             // sd->backlog; scheduled is its NAPI_STATE_SCHED
	irq     func(c *sim.CPU) // the arrival's napi_schedule_rps, from engine context
}

// backlogSkb is one skb on a backlog: a driver's (s, handed to NetifRx
// by dev's driver) or one for a local socket (local).
type backlogSkb struct {
	s     *skb.SKB
	dev   *Device
	local localPkt
}

// maxBacklog is net.core.netdev_max_backlog.
func (n *Net) maxBacklog() int {
	if n.Cfg.MaxBacklog > 0 {
		return n.Cfg.MaxBacklog
	}
	return 1000
}

// backlogOf is CPU cpu's backlog, made on first use.
func (n *Net) backlogOf(cpu int) *softnetBacklog {
	sd := &n.sd[cpu]
	if sd.backlog == nil {
		b := &softnetBacklog{}
		b.napi = napi{vec: -1, backlog: b}
		b.irq = func(c *sim.CPU) { n.napiListAdd(c, &b.napi) }
		sd.backlog = b
	}
	return sd.backlog
}

// enqueueToBacklog is enqueue_to_backlog on CPU cpu: false is the drop
// (the caller frees the skb). c is the CPU running the caller (the
// enqueue runs on cpu itself, RPS off), or nil for an arrival from
// engine context at time at, which gets onto cpu with an
// interrupt to raise the softirq.
func (n *Net) enqueueToBacklog(c *sim.CPU, at sim.Time, cpu int, e backlogSkb) bool {
	b := n.backlogOf(cpu)
	qlen := len(b.input)
	if qlen > n.maxBacklog() {
		n.softnet[cpu].Dropped++ // sd->dropped
		return false
	}
	if qlen == 0 && !b.napi.scheduled { // !__test_and_set_bit(NAPI_STATE_SCHED)
		b.napi.scheduled = true
		if c != nil {
			n.napiListAdd(c, &b.napi) // napi_schedule_rps: this CPU's
		} else {
			n.E.RaiseIRQ(n.E.CPUs[cpu], at, b.irq)
		}
	}
	b.input = append(b.input, e)
	if e.s != nil {
		e.s.Holder = backlogHolder
		n.backlogHeld++
	}
	return true
}

// napiListAdd is ____napi_schedule for a NAPI already marked scheduled:
// onto this CPU's poll_list, NET_RX_SOFTIRQ raised unless net_rx_action
// runs here (sd->in_net_rx_action): it takes poll_list again itself.
func (n *Net) napiListAdd(c *sim.CPU, x *napi) {
	sd := &n.sd[c.ID]
	sd.pollList = append(sd.pollList, x)
	if !sd.inNetRxAction {
		c.RaiseSoftirq(sim.NetRxSoftirq)
	}
}

// processBacklog is process_backlog with quota: deliver from
// process_queue; when it runs dry, splice input_pkt_queue onto it, or
// complete (clear NAPI_STATE_SCHED) if that is empty too. The skb that
// reaches the quota returns at once, without looking at the queues, so
// the NAPI stays scheduled and net_rx_action polls it again.
func (n *Net) processBacklog(c *sim.CPU, b *softnetBacklog, quota int) (int, bool) {
	work := 0
	for {
		for b.head < len(b.process) {
			e := b.process[b.head]
			b.process[b.head] = backlogSkb{}
			b.head++
			n.backlogDeliver(c, e)
			if work++; work >= quota {
				return work, false
			}
		}
		b.process, b.head = b.process[:0], 0
		c.Sync() // every arrival up to now has been queued
		if len(b.input) == 0 {
			b.napi.scheduled = false
			return work, true
		}
		// skb_queue_splice_tail_init: the two arrays swap roles.
		b.process, b.input = b.input, b.process
	}
}

// backlogDeliver is __netif_receive_skb of one backlog skb on c: a
// driver's completes as transmitted (the peer received it), a local
// socket's goes through the receiving device's ingress block, if it has
// one, to its handler.
func (n *Net) backlogDeliver(c *sim.CPU, e backlogSkb) {
	c.Spend(n.E.Costs.PeerRx)
	n.softnet[c.ID].Processed++
	if s := e.s; s != nil {
		s.Holder = 0
		n.backlogHeld--
		q := e.dev.Queues[s.Queue]
		q.TxPackets++
		q.TxBytes += uint64(s.Len)
		n.consumeSkb(c, s)
		return
	}
	if d := e.dev; d != nil && d.clsact != nil && d.filters.Filtered(ingressAt) && !n.localIngress(c, d, e.local) {
		return // dropped, or taken by mirred
	}
	n.localDelivered++
	e.local.deliver(c)
}

// NetifRx implements driver.Ctx: __netif_rx on this CPU's backlog.
func (x *dctx) NetifRx(h skb.Handle) bool {
	s := x.skb(h, "netif_rx")
	if x.net.localReceive {
		// The backlog is shared with arrivals from engine context
		// (Deliver): queue in virtual-time order with them. Without
		// them only this CPU queues here, and its own order is time's.
		x.cpu.Sync()
	}
	if x.net.enqueueToBacklog(x.cpu, 0, x.cpu.ID, backlogSkb{s: s, dev: x.dev}) {
		return true
	}
	// enqueue_to_backlog's dev_core_stats_rx_dropped_inc(skb->dev): the
	// peer, the receiving device; veth_xmit's NET_RX_DROP: the sender's
	// priv->dropped.
	x.dev.link.peerRxDropped++
	x.dev.link.drvTxDropped++
	x.net.kfreeSkb(x.cpu, s, skb.DropCPUBacklog)
	return false
}
