// Package driver is the NIC driver plugin interface and the pieces every
// descriptor-ring driver model shares: the ring, the wire, interrupt
// moderation.
//
// A driver sees packets as values with handles and talks to the host only
// through Ctx, so the same interface can later cross a process boundary.
package driver

import (
	reg "github.com/txlab/txlab/framework/internal/registry"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// TxCode is a netdev_tx_t.
type TxCode uint8

// NETDEV_TX_* values.
const (
	TxOK   TxCode = 0x00 // NETDEV_TX_OK
	TxBusy TxCode = 0x10 // NETDEV_TX_BUSY: the host requeues the packet
	// TxDrop is NET_XMIT_DROP from ndo_start_xmit: the driver took the
	// bulk's last packet and dropped it (veth_xmit when __netif_rx or
	// its ring refused it). dev_xmit_complete counts it complete; under
	// noqueue __dev_queue_xmit returns it to the sender.
	TxDrop TxCode = 0x01
)

// Ctx is what a driver may do to the host during one call.
type Ctx interface {
	Now() sim.Time
	Spend(ns int64)
	// SentQueue is netdev_tx_sent_queue (BQL; may set STACK_XOFF).
	SentQueue(txq int, bytes int)
	// SentQueueMore is __netdev_tx_sent_queue: with more set only BQL
	// accounting; it returns whether to ring the doorbell.
	SentQueueMore(txq int, bytes int, more bool) bool
	// CompletedQueue is netdev_tx_completed_queue (BQL; may restart the
	// queue and __netif_schedule its qdisc).
	CompletedQueue(txq int, pkts, bytes int)
	// StopQueue / WakeQueue are netif_tx_stop_queue / netif_tx_wake_queue
	// (the wake reschedules the qdisc: __netif_schedule).
	StopQueue(txq int)
	WakeQueue(txq int)
	// StartQueue is netif_tx_start_queue: the driver's XOFF cleared
	// without rescheduling, what a driver's maybe-stop does when its
	// re-check finds room after all (ice's "A reprieve! - use
	// start_queue because it doesn't call schedule").
	StartQueue(txq int)
	// QueueStopped is netif_tx_queue_stopped (driver XOFF only).
	QueueStopped(txq int) bool
	// XmitStopped is netif_xmit_stopped (driver or BQL XOFF).
	XmitStopped(txq int) bool
	// Consume frees a transmitted packet (napi_consume_skb): the packet
	// counts as transmitted, its socket is uncharged.
	Consume(h skb.Handle)
	// Drop frees a packet the driver could not send.
	Drop(h skb.Handle, reason skb.DropReason)
	// RaiseIRQ fires MSI-X vector v at time at on its affinity CPU; the
	// host runs the hard interrupt and schedules the vector's NAPI.
	RaiseIRQ(v int, at sim.Time)
	// NapiScheduleLocal schedules vector v's NAPI on the current CPU
	// (for software devices whose "interrupt" is the sender itself).
	NapiScheduleLocal(v int)
	// CPU is the id of the CPU running this call.
	CPU() int
	// HasQdisc is !qdisc_txq_has_no_queue(txq): the txq has a real
	// qdisc (not noqueue), so the driver may return NETDEV_TX_BUSY and
	// the host requeues (veth backpressure, dc82a33297fc / 34dd0fecaa02).
	HasQdisc(txq int) bool
	// NetifRx is __netif_rx of a packet the driver holds, for a
	// software device that hands its transmitted skbs to the receive
	// path (veth_forward_skb): enqueue_to_backlog on this CPU's
	// softnet backlog (RPS off), which the host owns and shares with
	// every other netif_rx on the CPU (its local receive path). The
	// host takes the packet either way: true is NET_RX_SUCCESS (the
	// backlog NAPI delivers it and completes it as transmitted), false
	// NET_RX_DROP (input_pkt_queue held more than netdev_max_backlog:
	// freed with SKB_DROP_REASON_CPU_BACKLOG, softnet_stat's dropped).
	NetifRx(h skb.Handle) bool
}

// Setup describes the device the host builds around a driver.
type Setup struct {
	Name    string
	NumTxQ  int
	RateBps int64 // line rate in bits/s (0: the driver's default)
	NumCPUs int
	Costs   *sim.Costs

	// NumRxQ is the RX queues the host receives on (0: none, a
	// transmit-only run). A driver with a receive side (RxInfo) sizes
	// its vectors for max(NumTxQ, NumRxQ) queue pairs.
	NumRxQ int

	// MaxSkbFrags is the host kernel's CONFIG_MAX_SKB_FRAGS (0: the
	// default, 17): drivers size their worst-case descriptor budget
	// by it (ice's DESC_NEEDED, i40e's, idpf's IDPF_MIN_TX_DESC_NEEDED).
	// SkbFrags returns it with the default filled in.
	MaxSkbFrags int

	// MaxBacklog is the host's net.core.netdev_max_backlog (0: the
	// default, 1000): enqueue_to_backlog's limit on a CPU's
	// input_pkt_queue. The host applies it itself in Ctx.NetifRx; a
	// driver only reads it.
	MaxBacklog int
}

// DefaultMaxSkbFrags is CONFIG_MAX_SKB_FRAGS's default.
const DefaultMaxSkbFrags = 17

// SkbFrags is s.MaxSkbFrags, or the default when unset.
func (s Setup) SkbFrags() int {
	if s.MaxSkbFrags <= 0 {
		return DefaultMaxSkbFrags
	}
	return s.MaxSkbFrags
}

// Info is what a driver tells the host after init.
type Info struct {
	RateBps  int64
	RingSize int
	LLTX     bool  // no HARD_TX_LOCK (dev->lltx)
	NoQueue  bool  // IFF_NO_QUEUE: default qdisc is noqueue
	BQL      bool  // the driver calls the BQL hooks
	Vectors  int   // MSI-X vectors
	QueueVec []int // vector serving each txq
	Wire     bool  // serialises at line rate (false for veth)
	// NoXPS: the driver never calls netif_set_xps_queue, so the
	// device's own XPS map ("irq") is empty and every socket's queue
	// is skb_tx_hash's (veth).
	NoXPS bool
	// Rx is the receive side, for drivers of NICs that have one (nil
	// for veth and for a setup without RX queues).
	Rx *RxInfo
}

// QueueStats are one TX queue's ethtool -S counters.
type QueueStats struct {
	Queue     int
	Packets   uint64 // tx-N.packets (cleaned)
	Bytes     uint64
	Busy      uint64 // tx_busy: NETDEV_TX_BUSY returned
	Restart   uint64 // tx_restart: queue woken by clean
	Stopped   uint64 // queue stopped by the driver
	Doorbells uint64
	Irqs      uint64 // interrupts of this queue's vector
	Polls     uint64
	Extra     []Counter // the model's own counters (ring_used, ...)
	// Ethtool are the queue's lines of the driver's `ethtool -S`, named
	// and ordered as the real driver's get_strings does: per-queue lines
	// carry the queue's number (ice tx_queue_0_packets); a line with Dev
	// set is device-wide (ice's tx_restart, the sum of its rings), this
	// queue's part of it. EthtoolLines lays them out for the device.
	Ethtool []Counter
}

// Counter is one named driver statistic.
type Counter struct {
	Name  string
	Value uint64
	Dev   bool // an ethtool line of the whole device (QueueStats.Ethtool)
}

// EthtoolLines is the device's `ethtool -S` from its queues' lines, in
// the driver's order: queue 0's list is the template. Its device-wide
// lines before its first per-queue line come first, summed over the
// queues (ice's VSI lines, i40e's netdev and misc lines, idpf's port
// lines); then every queue's per-queue lines, queue by queue; then the
// device-wide lines after them, summed (ice's .nic port lines).
func EthtoolLines(qs []QueueStats) []Counter {
	if len(qs) == 0 {
		return nil
	}
	sums := map[string]uint64{}
	for _, q := range qs {
		for _, c := range q.Ethtool {
			if c.Dev {
				sums[c.Name] += c.Value
			}
		}
	}
	var head, tail []Counter
	seenQueue := false
	for _, c := range qs[0].Ethtool {
		switch {
		case !c.Dev:
			seenQueue = true
		case seenQueue:
			tail = append(tail, Counter{Name: c.Name, Value: sums[c.Name], Dev: true})
		default:
			head = append(head, Counter{Name: c.Name, Value: sums[c.Name], Dev: true})
		}
	}
	out := head
	for _, q := range qs {
		for _, c := range q.Ethtool {
			if !c.Dev {
				out = append(out, c)
			}
		}
	}
	return append(out, tail...)
}

// Driver is a NIC driver model.
type Driver interface {
	// Init builds the rings; args are driver options in ethtool words.
	Init(s Setup, args []string) (Info, error)
	// Xmit is ndo_start_xmit over a bulk, in order, packet i with
	// xmit_more = i < len-1. It returns how many it took and, when it
	// took fewer than all, TxBusy if batch[sent] was refused; when it
	// took all, TxDrop if it dropped the last (dev_hard_start_xmit's
	// code is the last packet's). Like
	// dev_hard_start_xmit it stops after a packet that stopped the queue.
	Xmit(ctx Ctx, txq int, batch []skb.Packet) (sent int, rc TxCode)
	// Poll is the NAPI poll of vector v: clean completed descriptors.
	// work counts against net_rx_action's budget; done means
	// napi_complete (no repoll).
	Poll(ctx Ctx, v int, budget int) (work int, done bool)
	// Stats is ethtool -S, per queue.
	Stats() []QueueStats
}

// QueueSelector is an optional Driver extension: ndo_select_queue. The
// host calls it from netdev_core_pick_tx on multiqueue devices; ok=false
// means "return netdev_pick_tx(dev, skb, NULL)", the socket cache / XPS /
// hash fallback. A q outside [0, numTxQ) is clamped to 0 as
// netdev_cap_txqueue does.
type QueueSelector interface {
	SelectQueue(p skb.Packet, numTxQ int) (q int, ok bool)
}

// RxModerator is an optional Driver extension, for a driver whose
// RxInfo says OwnITR: RxComplete is its part of napi_complete_done on
// vector v at now, given the packets and bytes the vector's RX rings
// cleaned since the last call (the RX container's totals); it updates
// the vector's TX interval itself and returns the RX interval the host
// arms with from now on.
type RxModerator interface {
	RxComplete(now sim.Time, v int, pkts, bytes uint64) sim.Time
}

// SyncPoint is an optional Ctx extension. SyncPoint makes the driver's
// next step happen in global virtual-time order (sim.CPU.Sync): a driver
// that shares state between CPUs without a host lock or a host cache
// line in between (veth's ptr_ring, produced by senders and consumed by
// the peer's NAPI) calls it before touching that state. The host's dctx
// implements it.
type SyncPoint interface {
	SyncPoint()
}

// Factory makes a driver.
type Factory func() Driver

var registry = reg.New[Driver]("driver")

// Register adds a driver model by name.
func Register(name, help string, f Factory) { registry.Register(name, help, f) }

// New makes a driver by name, or says which exist.
func New(name string) (Driver, error) { return registry.New(name) }

// Names lists the registered drivers.
func Names() []string { return registry.Names() }

// Help is a driver's one-line description.
func Help(name string) string { return registry.Help(name) }
