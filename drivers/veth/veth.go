// Package veth models a veth pair's transmit side. On the default path
// (no XDP, no GRO on the peer) veth_xmit forwards each skb to the peer
// with __netif_rx (driver.Ctx.NetifRx), which queues it on this CPU's
// softnet backlog, the host's, shared with every other netif_rx on the
// CPU (enqueue_to_backlog: input_pkt_queue takes up to
// net.core.netdev_max_backlog + 1) and the backlog NAPI delivers it in
// NET_RX_SOFTIRQ (process_backlog). When the peer has NAPI (GRO on,
// or an XDP program: "napi on") and the skb is eligible for it
// (veth_skb_is_eligible_for_gro), veth_xdp_rx produces into the peer rx
// queue's ptr_ring (VETH_RING_SIZE) and __veth_xdp_flush schedules the
// peer's veth_poll on this CPU; a full ring is backpressure when the txq
// has a qdisc (dc82a33297fc, with the race fix 5442a9da6978) and a drop
// under noqueue. With GRO alone and veth's default TSO, only a socket's
// UDP or ICMP skb (destructor sock_wfree) is eligible, and only with
// rx-udp-gro-forwarding (or rx-gro-list) on the peer: TCP's skbs
// (tcp_wfree) and forwarded ones take the backlog path whatever GRO
// says. veth is lltx, IFF_NO_QUEUE and has no BQL (drivers/net/veth.c,
// KERNEL-FACTS 5.4).
package veth

import (
	"fmt"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Defaults.
const (
	RingSize = 256 // VETH_RING_SIZE: the peer rx queue's xdp_ring
	// NapiWeight is the peer NAPI's weight (netif_napi_add's default
	// NAPI_POLL_WEIGHT); the host passes it to Poll as the budget.
	NapiWeight = 64
	// ringBatch is the xdp_ring's r->batch, SMP_CACHE_BYTES * 2 /
	// sizeof(void *) on x86-64: how many consumed slots the consumer
	// gives back to the producer at once.
	ringBatch = 16
)

// syncPoint orders an access to the ptr_ring, which the senders and the
// peer's NAPI share, in global virtual time.
func syncPoint(ctx driver.Ctx) {
	if s, ok := ctx.(driver.SyncPoint); ok {
		s.SyncPoint()
	}
}

func init() {
	driver.Register("veth", "virtual ethernet pair, no wire (no line rate), default (backlog) receive path (drivers/net/veth.c)", func() driver.Driver { return &Veth{} })
}

// Veth is the driver model.
type Veth struct {
	// backlogDropped counts, per txq, the skbs enqueue_to_backlog
	// dropped; veth counts them with the ring's in one priv->dropped.
	backlogDropped []uint64
	stats          []driver.QueueStats
	costs          *sim.Costs

	// NAPI path: one ptr_ring per peer rx queue (rq i serves txq i);
	// vector i is rq i's NAPI.
	napi   bool // the peer rqs have NAPI (GRO on or an XDP program)
	xdp    bool // an XDP program: every skb is eligible
	udpFwd bool // rx-udp-gro-forwarding or rx-gro-list on the peer
	rings  []ptrRing
}

// ptrRing is one peer rx queue's xdp_ring and its counters.
type ptrRing struct {
	q                          []skb.Handle // produced skbs, the consumer's next at head
	head                       int
	full, dropped, woken, maxQ uint64
	// masked is the rq's rx_notify_masked: set by __veth_xdp_flush when
	// it schedules the NAPI, cleared by veth_poll's napi_complete_done;
	// while it is set, __veth_xdp_flush does nothing.
	masked bool
	// stale is consumer_head - consumer_tail: slots consumed but not
	// yet zeroed for the producer.
	stale int
}

// room is how many slots ptr_ring_produce can fill: the ring's size less
// the skbs in it and the slots consumed but not yet given back.
func (r *ptrRing) room() int { return RingSize - r.len() - r.stale }

// len is how many skbs the ring holds.
func (r *ptrRing) len() int { return len(r.q) - r.head }

// consume is __ptr_ring_consume: the skb at the consumer's head. The
// slice is compacted once a ring's worth has been consumed, so a
// consume costs O(1) amortized.
func (r *ptrRing) consume() skb.Handle {
	h := r.q[r.head]
	r.head++
	if r.head >= RingSize || r.head == len(r.q) {
		r.q, r.head = r.q[:copy(r.q, r.q[r.head:])], 0
	}
	r.consumed()
	return h
}

// consumed is __ptr_ring_discard_one: the consumer gives the slots it
// took back to the producer (NULLs them) only every ringBatch
// consumptions, or at the ring's end, a multiple of ringBatch; until
// then ptr_ring_produce still finds them taken.
func (r *ptrRing) consumed() {
	if r.stale++; r.stale >= ringBatch {
		r.stale = 0
	}
}

// flush is __veth_xdp_flush: schedule rq q's NAPI on this CPU unless it
// is already scheduled (rx_notify_masked), so a producer never marks it
// NAPI_STATE_MISSED.
func (v *Veth) flush(ctx driver.Ctx, q int) {
	r := &v.rings[q]
	if r.masked {
		return
	}
	r.masked = true
	ctx.NapiScheduleLocal(q)
}

// Init implements driver.Driver. Options: "gro on|off" (the peer's GRO, so its rqs' NAPI
// and ptr_rings, for the skbs eligible), "rx-udp-gro-forwarding on|off"
// and "rx-gro-list on|off" (the peer's features that make a socket's
// UDP skbs eligible), "napi on|off" (the lab's word for an XDP program
// on the peer: NAPI for every skb). Default: all off, the backlog path.
// TSO stays on, as veth's features have it (the model does not segment
// for a device without it).
func (v *Veth) Init(s driver.Setup, args []string) (driver.Info, error) {
	v.costs = s.Costs
	var gro bool
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return driver.Info{}, fmt.Errorf("veth: option %q needs a value", args[i])
		}
		switch args[i] {
		case "backlog":
			// The backlog is the host's, one per CPU, and so its limit.
			return driver.Info{}, fmt.Errorf("veth: backlog is the host's net.core.netdev_max_backlog (set netdev_max_backlog=%s)", args[i+1])
		case "gro", "napi", "rx-udp-gro-forwarding", "rx-gro-list":
			on, err := onOff(args[i], args[i+1])
			if err != nil {
				return driver.Info{}, err
			}
			switch args[i] {
			case "gro":
				gro = on
			case "napi":
				v.xdp = on
			default:
				v.udpFwd = on
			}
		default:
			return driver.Info{}, fmt.Errorf("veth: unknown option %q (known: gro, napi, rx-udp-gro-forwarding, rx-gro-list)", args[i])
		}
	}
	v.napi = gro || v.xdp
	v.stats = make([]driver.QueueStats, s.NumTxQ)
	v.backlogDropped = make([]uint64, s.NumTxQ)
	for i := range v.stats {
		v.stats[i].Queue = i
	}
	if v.napi {
		// One peer rx queue (and its napi_struct) per txq: veth_xmit
		// uses rq[skb_get_queue_mapping(skb)]; the skbs not eligible
		// still go to the host's per-CPU backlogs.
		v.rings = make([]ptrRing, s.NumTxQ)
		qv := make([]int, s.NumTxQ)
		for i := range qv {
			qv[i] = i
		}
		return driver.Info{LLTX: true, NoQueue: true, NoXPS: true, Vectors: s.NumTxQ, QueueVec: qv}, nil
	}
	// No NAPI of its own; one vector, never scheduled, so that every
	// txq names one (as the per-CPU backlog vectors did).
	return driver.Info{LLTX: true, NoQueue: true, NoXPS: true, Vectors: 1, QueueVec: make([]int, s.NumTxQ)}, nil
}

func onOff(word, val string) (bool, error) {
	switch val {
	case "on", "off":
		return val == "on", nil
	}
	return false, fmt.Errorf("veth: %s %q must be on or off", word, val)
}

// eligible is veth_skb_is_eligible_for_gro with the sender's TSO on: an
// XDP program takes every skb; else only a socket's skb freed by
// sock_wfree (UDP, ICMP: not TCP's tcp_wfree, not an orphan such as a
// forwarded skb or udp_rate's, Sock -1) when the peer has GRO_FRAGLIST
// or GRO_UDP_FWD.
func (v *Veth) eligible(p skb.Packet) bool {
	return v.xdp || (v.udpFwd && p.Sock != -1 && p.Keys.Proto != protoTCP)
}

const protoTCP = 6

// Xmit implements driver.Driver: veth_xmit -> veth_forward_skb, or on
// the NAPI path veth_xdp_rx.
func (v *Veth) Xmit(ctx driver.Ctx, q int, batch []skb.Packet) (int, driver.TxCode) {
	rc := driver.TxOK
	for i, p := range batch {
		var dropped bool
		if v.napi && v.eligible(p) {
			var busy bool
			if busy, dropped = v.xmitNapi(ctx, q, p); busy {
				return i, driver.TxBusy
			}
		} else {
			dropped = v.xmitBacklog(ctx, q, p)
		}
		// NET_XMIT_DROP (priv->dropped) or NETDEV_TX_OK: the bulk's
		// code is its last packet's (dev_hard_start_xmit).
		rc = driver.TxOK
		if dropped {
			rc = driver.TxDrop
		}
	}
	return len(batch), rc
}

// xmitBacklog is veth_forward_skb's __netif_rx: enqueue_to_backlog on
// this CPU's softnet backlog (RPS off), which the host owns (its limit,
// its NAPI, its drop with SKB_DROP_REASON_CPU_BACKLOG); NET_RX_DROP
// counts in priv->dropped and answers NET_XMIT_DROP.
func (v *Veth) xmitBacklog(ctx driver.Ctx, q int, p skb.Packet) (dropped bool) {
	ctx.Spend(v.costs.DriverXmit)
	if !ctx.NetifRx(p.Handle) {
		v.backlogDropped[q]++
		return true
	}
	v.stats[q].Packets++
	v.stats[q].Bytes += uint64(p.Len)
	return false
}

// xmitNapi is veth_xmit with the peer's NAPI: ptr_ring_produce into
// the rq's xdp_ring, then __veth_xdp_flush (napi_schedule of the peer's
// NAPI on this CPU). A full ring returns NETDEV_TX_BUSY from
// veth_xdp_rx: with a qdisc on the txq, netif_tx_stop_queue + BUSY (the
// qdisc requeues) and, since 5442a9da6978, always __veth_xdp_flush so
// the consumer runs and wakes the queue; with noqueue, drop
// (NET_XMIT_DROP).
func (v *Veth) xmitNapi(ctx driver.Ctx, q int, p skb.Packet) (busy, dropped bool) {
	r := &v.rings[q]
	st := &v.stats[q]
	ctx.Spend(v.costs.DriverXmit)
	syncPoint(ctx) // ptr_ring_produce takes the producer lock; -ENOSPC when no room
	if r.room() == 0 {
		r.full++
		if ctx.HasQdisc(q) { // !qdisc_txq_has_no_queue(txq)
			ctx.StopQueue(q)
			st.Stopped++
			st.Busy++
			v.flush(ctx, q)
			return true, false
		}
		ctx.Drop(p.Handle, skb.DropTxDevice) // priv->dropped
		r.dropped++
		return false, true
	}
	r.q = append(r.q, p.Handle)
	r.maxQ = max(r.maxQ, uint64(r.len()))
	st.Packets++
	st.Bytes += uint64(p.Len)
	v.flush(ctx, q)
	return false, false
}

// pollNapi is veth_poll: veth_xdp_rcv consumes up to the budget from the
// ring one skb at a time (__ptr_ring_consume) and hands each to GRO /
// the stack; then, once per poll and with no free-space threshold, the
// peer txq is woken if it is stopped (5442a9da6978).
func (v *Veth) pollNapi(ctx driver.Ctx, vec int, budget int) (int, bool) {
	r := &v.rings[vec]
	st := &v.stats[vec]
	st.Polls++
	n := 0
	for n < budget {
		syncPoint(ctx) // the producers' slots, in global time
		if r.len() == 0 {
			break
		}
		h := r.consume()
		ctx.Spend(v.costs.PeerRx)
		ctx.Consume(h)
		n++
	}
	// done < budget: napi_complete_done; a non-empty ring after that is
	// rescheduled, which here is the same as not completing.
	done := n < budget && r.len() == 0
	if done {
		r.masked = false // smp_store_mb(rq->rx_notify_masked, false)
	}
	syncPoint(ctx)
	if ctx.QueueStopped(vec) { // smp_rmb(); netif_tx_queue_stopped(peer_txq)
		ctx.WakeQueue(vec) // netif_tx_wake_queue -> __netif_schedule
		st.Restart++
		r.woken++
	}
	return n, done
}

// Poll implements driver.Driver: veth_poll on the NAPI path (the
// backlog's process_backlog is the host's).
func (v *Veth) Poll(ctx driver.Ctx, vec int, budget int) (int, bool) {
	if vec < len(v.rings) {
		return v.pollNapi(ctx, vec, budget)
	}
	return 0, true
}

// Stats implements driver.Driver.
func (v *Veth) Stats() []driver.QueueStats {
	out := append([]driver.QueueStats(nil), v.stats...)
	for i := range out {
		if !v.napi {
			if n := v.backlogDropped[i]; n > 0 {
				out[i].Extra = []driver.Counter{{Name: "peer_dropped", Value: n}}
			}
			continue
		}
		r := &v.rings[i]
		out[i].Extra = []driver.Counter{
			{Name: "ring_used", Value: uint64(r.len())},
			{Name: "ring_max", Value: r.maxQ},
			{Name: "ring_full", Value: r.full},
			{Name: "peer_dropped", Value: r.dropped + v.backlogDropped[i]}, // one priv->dropped
			{Name: "peer_wake", Value: r.woken}}
	}
	return out
}
