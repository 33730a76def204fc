// Package skb is the model's sk_buff: a packet value that crosses the
// plugin boundary (Packet), the host-side buffer that carries it through
// the stack (SKB), singly linked lists of them, and a pool so that steady
// state allocates nothing.
package skb

import (
	"fmt"

	"github.com/txlab/txlab/framework/sim"
)

// Handle names one live packet. It is an index into the pool plus a
// generation, so a stale or forged handle is detected.
type Handle uint64

// FlowKeys are the dissected flow keys (IPv4/IPv6 folded to 32-bit ids).
type FlowKeys struct {
	Src, Dst         uint32
	SrcPort, DstPort uint16
	Proto            uint8
}

// Packet is what a qdisc or driver plugin sees: a value, never a pointer
// into the host. Everything a kernel qdisc may read from an skb is here.
type Packet struct {
	Handle     Handle
	Len        uint32 // skb->len (qdisc_pkt_len for non-GSO)
	TrueSize   uint32 // skb->truesize, charged to the socket and to cake's memory
	Hash       uint32 // skb_get_hash()
	Keys       FlowKeys
	Priority   uint32      // skb->priority
	Mark       uint32      // skb->mark (SO_MARK): what fw and flower's mark match
	DSCP       uint8       // IP dsfield >> 2
	ECN        uint8       // IP dsfield & 3 (ECT(0)=2, ECT(1)=1, CE=3)
	Flags      PacketFlags // PacketDup, PacketTxtimeTAI
	TCPFlags   uint8       // TCP (Keys.Proto 6): the header's flags (TCPHDR_*), what u32 reads at the TCP header's byte 13; 0 otherwise
	Sock       int32       // socket id, or -1 for an orphan (no sk)
	Queue      uint16      // skb->queue_mapping (the txq picked)
	GSOSegs    uint16      // 1 for non-GSO
	Tstamp     sim.Time    // skb->tstamp: EDT departure time in ktime (sim.Ktime, a qdisc's Ctx.Now), 0 = now
	PacingRate uint64      // sk_pacing_rate in bytes/s, 0 = unlimited
}

// PacketFlags are a packet's one-bit facts, in one byte (a Packet is
// 72 bytes, no padding to spare).
type PacketFlags uint8

// Packet flags.
const (
	// PacketDup: a clone back at the qdisc that asked for it
	// (Ctx.Duplicate): netem_enqueue's q->duplicate is 0 for it.
	PacketDup PacketFlags = 1 << 0
	// PacketTxtimeTAI: the sending socket set SO_TXTIME on CLOCK_TAI
	// (sock_flag(sk, SOCK_TXTIME), sk->sk_clockid, what etf checks), and
	// Tstamp is the packet's transmit time on that clock. The model's
	// senders use no other clock.
	PacketTxtimeTAI PacketFlags = 1 << 1
)

// IsDup reports PacketDup.
func (p *Packet) IsDup() bool { return p.Flags&PacketDup != 0 }

// SockTxtime is the sending socket's SO_TXTIME clock id (CLOCK_TAI, 11);
// ok is false when it set none.
func (p *Packet) SockTxtime() (clockid int, ok bool) {
	if p.Flags&PacketTxtimeTAI == 0 {
		return 0, false
	}
	return 11, true // CLOCK_TAI
}

// SetCE is INET_ECN_set_ce on the packet's IP header: ECT(0) and ECT(1)
// become CE, an already-CE packet counts as marked, a not-ECT one
// cannot be (false: the caller drops instead).
func (p *Packet) SetCE() bool {
	if p.ECN&3 == 0 {
		return false
	}
	p.ECN = 3
	return true
}

// DropReason is the kernel's skb_drop_reason, by name.
type DropReason string

// Drop reasons used by the model (include/net/dropreason-core.h names).
const (
	DropNone             DropReason = ""
	DropQdiscDrop        DropReason = "QDISC_DROP"
	DropQdiscBurst       DropReason = "QDISC_BURST_DROP"
	DropQdiscOverlimit   DropReason = "QDISC_OVERLIMIT"
	DropQdiscCongested   DropReason = "QDISC_CONGESTED"
	DropCakeFlood        DropReason = "CAKE_FLOOD"
	DropFQBandLimit      DropReason = "FQ_BAND_LIMIT"
	DropFQHorizonLimit   DropReason = "FQ_HORIZON_LIMIT"
	DropFQFlowLimit      DropReason = "FQ_FLOW_LIMIT"
	DropQueuePurge       DropReason = "QUEUE_PURGE"
	DropTCEgress         DropReason = "TC_EGRESS"          // a filter's drop on clsact's egress block
	DropTCIngress        DropReason = "TC_INGRESS"         // a filter's drop on the ingress block (sch_handle_ingress)
	DropTCReclassifyLoop DropReason = "TC_RECLASSIFY_LOOP" // tcf_classify gave up after 16 reclassifications
	DropNotSpecified     DropReason = "NOT_SPECIFIED"      // plain kfree_skb (e.g. rtnl_kfree_skbs after a qdisc change)
	DropDevReady         DropReason = "DEV_READY"
	DropCPUBacklog       DropReason = "CPU_BACKLOG"
	DropTxDevice         DropReason = "TX_DEVICE" // driver dropped (e.g. veth peer ring full)
	DropLostToPlugin     DropReason = "LOST_TO_PLUGIN"

	// DropRxMissed is a frame the NIC dropped because the RX queue's
	// ring had no free descriptor. No skb exists for it, so the kernel
	// has no skb_drop_reason: it is counted in the device's
	// rx_missed_errors (rtnl_link_stats64) and the driver's ethtool -S
	// port counter (ice rx_dropped.nic, i40e port.rx_dropped). The name
	// is the model's, after rx_missed_errors.
	DropRxMissed DropReason = "RX_MISSED"
)

// SKB is the host's buffer. Only the host touches it; plugins get Packet.
// Its fields go by size, largest first, so that none pads: every packet
// in flight holds one, beside its qdisc's copy of the Packet.
type SKB struct {
	Packet
	Next *SKB     // list link (skb->next, ll_node)
	Born sim.Time // when the sender built it
	// HotSeq is HotCPU's count of skbs handled when it took the lines
	// (the host's per-CPU count, modulo 2^32: differences stay exact
	// while under 4G skbs): once that CPU has handled more than the
	// cost table's l2_skbs since, the lines are in the LLC.
	HotSeq uint32
	// PktLen is qdisc_skb_cb(skb)->pkt_len once a qdisc's size table
	// set it (__qdisc_calculate_pkt_len, at each enqueue into a qdisc
	// with a stab: the last one's stays), 0 before: qdisc_pkt_len is
	// then skb->len.
	PktLen uint32

	// Cb is the protocol's control block (skb->cb, TCP_SKB_CB): opaque
	// to the TX path and to qdiscs (it never crosses the plugin
	// boundary), read by the owner at TX completion and by a packet
	// capture for the TCP header.
	Cb CB

	Owner  OwnerID // socket to uncharge on free (Pool.Owner), or 0
	Holder int32   // id of the qdisc whose plugin holds it (-1: the driver), 0 if none
	// DupOf is the qdisc whose Duplicate made this clone (0: not a
	// clone), until the clone reaches it (Packet.Dup); DupDepth counts
	// clones of clones.
	DupOf int32
	// Head is what the host recorded of where the skb's head came from
	// (its slab cache and slab), 0 for none: netdev's slab model.
	Head uint32
	// Skbuff is the slab of skbuff_head_cache its struct sk_buff came
	// from, plus one (0: none recorded): netdev's slab model.
	Skbuff uint32

	SenderCPU int16 // CPU that built it (its lines are hot there; sim.MaxCPUs fits)
	// XmitCPU is skb->sender_cpu: the CPU + 1 of the first
	// __dev_queue_xmit (netdev_core_pick_tx records it once), 0 before.
	// XPS picks by it, so a stacked device's lower queue follows the
	// sender, not the CPU that dequeued the upper qdisc (2bd82484bb4c).
	XmitCPU int16 // sim.MaxCPUs + 1 fits
	HotCPU  int16 // CPU whose cache holds the skb lines (sim.MaxCPUs fits)
	// TailCPU holds the skb's lines past its first when a reader waited
	// for only one transfer (a dequeue under the root lock with pkt_segs,
	// which no longer reaches skb_shinfo): the rest are still where they
	// were, and the driver, a moment later, pays them from there. TailSplit says so;
	// TailLLC that they had already left TailCPU's L2 for the LLC.
	TailCPU int16

	// Redir is what mirred wrote into the skb for a device that takes
	// redirected packets (ifb): skb_iif, redirected, from_ingress and
	// tc_skip_classify.
	Redir Redirect
	// RxQueue is skb_record_rx_queue's value: the RX queue + 1 for an
	// skb a NIC received (to forward), 0 for one a local sender built.
	RxQueue  uint16
	DupDepth uint8
	reason   uint8 // index into the pool's drop reasons (Pool.SetReason)
	// OooOkay is skb->ooo_okay: its socket had no other skb in a host
	// queue when it was charged, so netdev_pick_tx may choose a queue
	// afresh without reordering the flow (d365c9bca35c for non-TCP
	// sockets).
	OooOkay bool
	flags   uint8 // flagLive, flagTailSplit, flagTailLLC
}

// SKB.flags' bits.
const (
	flagLive      uint8 = 1 << iota // a pool slot in use
	flagTailSplit                   // see TailCPU
	flagTailLLC
)

func (s *SKB) live() bool { return s.flags&flagLive != 0 }

// TailSplit says a reader took only the skb's first line (TailCPU).
func (s *SKB) TailSplit() bool { return s.flags&flagTailSplit != 0 }

// TailLLC says the lines TailCPU holds had left its L2 for the LLC.
func (s *SKB) TailLLC() bool { return s.flags&flagTailLLC != 0 }

// SplitTail records that a reader took only the first line: the rest
// stay with cpu, in its L2 or (llc) already in the LLC.
func (s *SKB) SplitTail(cpu int16, llc bool) {
	s.TailCPU = cpu
	s.flags = s.flags&^flagTailLLC | flagTailSplit
	if llc {
		s.flags |= flagTailLLC
	}
}

// JoinTail says the skb's lines are together again.
func (s *SKB) JoinTail() { s.flags &^= flagTailSplit }

// Redirect is an skb's redirect state, packed in 16 bits: the device
// index + 1 mirred sent it from (skb_iif; 13 bits), and the flags below.
type Redirect uint16

// Redirect's flags.
const (
	Redirected   Redirect = 1 << 13 // skb->redirected (skb_set_redirected)
	FromIngress  Redirect = 1 << 14 // skb->from_ingress: redirected from a receive path
	SkipClassify Redirect = 1 << 15 // skb->tc_skip_classify: ifb passed it back, tc leaves it be once
	iifMask      Redirect = Redirected - 1
)

// MaxIif is the largest device index + 1 a Redirect holds.
const MaxIif = int(iifMask)

// Iif is the device index + 1 the skb was redirected from, 0 if none.
func (r Redirect) Iif() int { return int(r & iifMask) }

// WithIif is r naming device index + 1 iif instead.
func (r Redirect) WithIif(iif int) Redirect { return r&^iifMask | Redirect(iif)&iifMask }

// QdiscPktLen is qdisc_pkt_len(skb): the size table's length if one set
// it, else skb->len.
func (s *SKB) QdiscPktLen() uint32 {
	if s.PktLen != 0 {
		return s.PktLen
	}
	return s.Len
}

// CB is a protocol's per-skb data. For TCP (Keys.Proto 6) Seq and Ack
// are TCP_SKB_CB's seq and ack_seq in the model's units (segments of
// tcp.MSS), Flags the owner's own (TCPCB_RETRANS and such); the
// header's flags are the packet's (Packet.TCPFlags). A GSO skb split
// into segments (skb_gso_segment) numbers them Seq, Seq+1, ...; every
// segment keeps Ack and Flags, and the header's flags but CWR, which
// only the first keeps (tcp_gso_segment clears th->cwr after the
// first).
type CB struct {
	Seq   int64
	Ack   int64
	Flags uint32
	// TSecr is the timestamps option's echo as __tcp_transmit_skb
	// wrote it (tp->rx_opt.ts_recent on the option's millisecond
	// clock), 0 when the socket had none to echo.
	TSecr uint32
}

// TCP header flags (include/net/tcp.h TCPHDR_*): Packet.TCPFlags.
const (
	TCPHdrFIN = 0x01
	TCPHdrSYN = 0x02
	TCPHdrRST = 0x04
	TCPHdrPSH = 0x08
	TCPHdrACK = 0x10
	TCPHdrURG = 0x20
	TCPHdrECE = 0x40
	TCPHdrCWR = 0x80
)

// Owner is what an skb is charged to (a socket): sock_wfree calls Release.
// Release runs when the skb is freed, whether or not it was orphaned
// before (SKB.Orphaned: then its charge was returned already, by
// Orphaner.Orphan, and only what the owner keeps per skb is left).
type Owner interface {
	Release(c *sim.CPU, s *SKB)
}

// Orphaner is an Owner whose destructor skb_orphan_partial may run
// before the skb is freed: netem, holding a packet for a link's transit
// time, calls skb_orphan_partial at enqueue (skb_set_owner_sk_safe:
// skb_orphan runs sock_wfree or tcp_wfree now, and the skb keeps its
// socket with sock_efree, a reference and no charge). Orphan returns
// the skb's truesize to the socket as the destructor would (and wakes
// what the destructor wakes); the skb's Release still comes at its
// free. An owner of pure ACKs implements none of it
// (skb_orphan_partial leaves a pure ACK alone).
type Orphaner interface {
	Owner
	Orphan(c *sim.CPU, s *SKB)
}

// Charger is an Owner whose socket takes more truesize after its skb
// was built: tcp_gso_segment adds the segments' truesize over the GSO
// skb's to sk_wmem_alloc (refcount_add of delta), since tcp_wfree
// moves to every segment. s is the GSO skb, as it was before the
// split: skb_gso_segment's caller consumes it (its segments are new
// skbs), so a socket that looks for it in the host (TCP's
// skb_fclone_busy: it is the clone of an rtx-queue skb) no longer
// finds it, though the model's first segment keeps its handle.
type Charger interface {
	Charge(c *sim.CPU, s *SKB, bytes int64)
}

// OwnerID is an skb's Owner as its pool knows it (Pool.AddOwner), 0 for
// none: 4 bytes in every skb in flight where the interface takes 16. A
// negative ID is the same owner after skb_orphan_partial (Pool.Orphan):
// the skb keeps its socket but no charge, so the sign costs no byte.
type OwnerID int32

// Orphaned says the skb's destructor already ran (skb_orphan_partial):
// it still names its socket, and is charged nothing to it.
func (s *SKB) Orphaned() bool { return s.Owner < 0 }

// List is a singly linked list of skbs with a tail (sk_buff_head-like).
type List struct {
	Head, Tail *SKB
	Len        int
	Bytes      int64
}

// Push appends s.
func (l *List) Push(s *SKB) {
	if !s.live() {
		panic(fmt.Sprintf("skb: list push of freed skb %#x", uint64(s.Handle)))
	}
	s.Next = nil
	if l.Tail == nil {
		l.Head = s
	} else {
		l.Tail.Next = s
	}
	l.Tail = s
	l.Len++
	l.Bytes += int64(s.Len)
}

// PushList appends every skb of o and empties o.
func (l *List) PushList(o *List) {
	if o.Head == nil {
		return
	}
	if l.Tail == nil {
		l.Head = o.Head
	} else {
		l.Tail.Next = o.Head
	}
	l.Tail = o.Tail
	l.Len += o.Len
	l.Bytes += o.Bytes
	*o = List{}
}

// Pop removes the head, or returns nil.
func (l *List) Pop() *SKB {
	s := l.Head
	if s == nil {
		return nil
	}
	if !s.live() {
		// Whoever linked it gave it away (to a driver, a qdisc) and
		// kept walking a list it no longer owns: a model bug.
		panic(fmt.Sprintf("skb: list pop of freed skb %#x", uint64(s.Handle)))
	}
	l.Head = s.Next
	if l.Head == nil {
		l.Tail = nil
	}
	s.Next = nil
	l.Len--
	l.Bytes -= int64(s.Len)
	return s
}

// Empty reports whether the list holds nothing.
func (l *List) Empty() bool { return l.Head == nil }
