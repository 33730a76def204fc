// Package qdisc is the queueing-discipline plugin interface: what a qdisc
// implements, the context it gets on every call, and the registry of kinds.
// The built-ins (sch_fifo.c's pfifo, bfifo and pfifo_head_drop,
// pfifo_fast, noqueue; mq is expanded by the host) implement the same
// interface the plugins/* qdiscs do.
//
// The interface is shaped to cross a process boundary unchanged: packets
// are values with handles, calls are batched where the kernel batches (an
// llist batch at enqueue, a bulk at dequeue), and everything a qdisc does
// to the host goes through Ctx.
package qdisc

import (
	"fmt"
	"strconv"
	"strings"

	reg "github.com/txlab/txlab/framework/internal/registry"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Code is an enqueue result (NET_XMIT_*).
type Code uint8

// NET_XMIT_* values (include/linux/netdevice.h).
const (
	XmitSuccess Code = 0x00 // NET_XMIT_SUCCESS
	XmitDrop    Code = 0x01 // NET_XMIT_DROP: this packet was dropped
	XmitCN      Code = 0x02 // NET_XMIT_CN: congestion, another packet may have been dropped

	// XmitBypass is __NET_XMIT_BYPASS (0x20000 in the kernel, above
	// NET_XMIT_MASK): XmitSuccess | XmitBypass says the qdisc dropped
	// the packet itself and counted it (netem's loss, a filter's
	// TC_ACT_SHOT). A classful parent is handed the code unmasked
	// (LeafResult.Code) and, as for any code but NET_XMIT_SUCCESS,
	// counts the drop in its own drops and its class's
	// (net_xmit_drop_count: 1 for all but __NET_XMIT_STOLEN), then
	// returns it to its own parent. The sender sees it masked
	// (dev_qdisc_enqueue's rc & NET_XMIT_MASK: Code.Masked).
	XmitBypass Code = 0x20
)

// Masked is c & NET_XMIT_MASK: the code without __NET_XMIT_BYPASS, as
// dev_qdisc_enqueue returns it to the sender.
func (c Code) Masked() Code { return c &^ XmitBypass }

// Valid says c is a code a qdisc may answer: a NET_XMIT code, or
// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS.
func (c Code) Valid() bool { return c <= XmitCN || c == XmitSuccess|XmitBypass }

func (c Code) String() string {
	switch c {
	case XmitSuccess:
		return "NET_XMIT_SUCCESS"
	case XmitDrop:
		return "NET_XMIT_DROP"
	case XmitCN:
		return "NET_XMIT_CN"
	case XmitSuccess | XmitBypass:
		return "NET_XMIT_SUCCESS|__NET_XMIT_BYPASS"
	}
	return fmt.Sprintf("NET_XMIT(%d)", uint8(c))
}

// Flags are the TCQ_F_* flags a qdisc declares (include/net/sch_generic.h).
type Flags uint32

// TCQ_F_* values that matter to the TX path.
const (
	CanBypass    Flags = 0x4   // TCQ_F_CAN_BYPASS: empty qdisc may be bypassed
	OneTxQueue   Flags = 0x10  // TCQ_F_ONETXQUEUE: set by the host for per-txq children
	NoLock       Flags = 0x100 // TCQ_F_NOLOCK
	DequeueDrops Flags = 0x400 // TCQ_F_DEQUEUE_DROPS: drops at dequeue freed after the root lock

	// EmptyNoop is the model's, not the kernel's: a Dequeue while the
	// qdisc holds nothing touches nothing (no work, no state) and returns
	// nothing, so the host may skip the call. It changes no result, and
	// saves a round trip per empty dequeue for a plugin out of process.
	EmptyNoop Flags = 1 << 30

	// SplitGSO is the model's too: the qdisc wants GSO skbs as
	// segments, as cake_enqueue with split-gso segments them
	// (skb_gso_segment) before queueing each. The host segments them
	// in the enqueue call, under the root lock, and hands the qdisc
	// the segments, one skb's together (GSOSkbLen); the extra skbs
	// count as offered.
	SplitGSO Flags = 1 << 29

	// 1 << 28 was DropReadsCb: every drop now costs one transfer (its
	// loads overlap; netdev's touchSkbDrop), so no qdisc declares it.

	// EnqueueReadsPrivate is the model's too: the qdisc's enqueue
	// writes none of its private data while its tree holds packets. It
	// classifies (reading tables the data path never writes) and hands
	// the skb to a class's leaf, reading one line its dequeue writes
	// (htb_enqueue: htb_classify, then cl->leaf.q beside the deficit
	// and tokens htb_dequeue_tree and htb_charge_class write;
	// htb_activate writes the rows only when a class turns active). The
	// host prices that one line as a read, and the private lines as
	// written only when the tree was empty.
	EnqueueReadsPrivate Flags = 1 << 27

	// PacesSockets is the model's too: the qdisc marks the sockets whose
	// packets it classifies as paced by it (fq_classify sets
	// sk_pacing_status to SK_PACING_FQ, only with q->rate_enable), so
	// from then on TCP stamps EDT departure times instead of pacing
	// itself.
	PacesSockets Flags = 1 << 26

	// 1 << 25 was DequeueReadsCb: with pkt_segs every qdisc's dequeue
	// now waits one transfer and leaves skb_shinfo to the driver (its
	// loads overlap; netdev's touchSkbDequeue), so no qdisc declares it.

	// HasBlock is the model's too: the qdisc has a filter block of its
	// own without being Classful, as fq_codel, sfq and cake do (their
	// Qdisc_class_ops give tcf_block, bind_tcf, find and walk, but hold
	// no leaf qdiscs): `tc filter add ... parent X:` attaches filters
	// to it, and its classify runs them through FilterCtx. A qdisc
	// without it (and not Classful) refuses filters as the kernel does
	// one without class ops: "Qdisc not classful".
	HasBlock Flags = 1 << 24

	// ReadsTCPHeaders is the model's too: the qdisc reads its packets'
	// TCP headers (cake's ACK filter: cake_get_tcphdr and the options),
	// which a Packet does not carry; the host hands each Enqueue call's
	// headers in its context (TCPCtx, TCPHeaderOf). Declare it only
	// while the qdisc needs them: every enqueue pays for them out of
	// process.
	ReadsTCPHeaders Flags = 1 << 23

	// NoBlock is the model's too: a Classful qdisc whose class
	// operations have no tcf_block (tbf_class_ops: a child qdisc, no
	// filters), so `tc filter add ... parent X:` on it is refused as
	// the kernel's __tcf_block_find refuses it, "Class doesn't support
	// blocks".
	NoBlock Flags = 1 << 22

	// OrphanPartial is the model's too: the qdisc's enqueue calls
	// skb_orphan_partial on every packet it takes or drops at its limit
	// (netem with a delay, jitter or rate: "orphaning usually takes
	// place at TX completion time, so _before_ the link transit
	// delay"). The host returns each such packet's socket charge at the
	// enqueue, so TCP small queues and a UDP sender's send buffer no
	// longer count the packets the qdisc holds. A packet the qdisc
	// dropped itself (NET_XMIT_SUCCESS | __NET_XMIT_BYPASS) is left as
	// it was: netem decides its loss first.
	OrphanPartial Flags = 1 << 21
)

// Work is a unit of CPU work a qdisc reports in kernel terms; the host
// prices each kind from the cost table (framework/sim/costs.go), so a
// costly algorithm is costly in the model and no plugin holds a
// nanosecond figure.
type Work uint8

// Kinds of work, each priced by the named cost.
const (
	WorkEnqueue  Work = iota // base per-packet enqueue (cost qdisc_enqueue)
	WorkDequeue              // base per-packet dequeue (cost qdisc_dequeue)
	WorkHash                 // one flow hash / classification (cost qdisc_hash)
	WorkFlowScan             // one flow, slot or tree node visited (cost qdisc_flow_scan)
	WorkTstamp               // one ktime_get() (cost qdisc_tstamp)
	WorkRand                 // one get_random_u32() (cost qdisc_rand); Ctx.Rand reports it itself
	WorkSiphash              // one more flow_hash_from_keys of keys already dissected (cost qdisc_siphash)
	NumWork                  // how many kinds there are
)

// Prices is what each kind of Work costs in ns. The host's, not the
// qdisc's: it travels to the qdisc's context, never to the qdisc.
type Prices [NumWork]int64

// WorkPrices reads the qdisc prices from the cost table.
func WorkPrices(c *sim.Costs) Prices {
	return Prices{
		WorkEnqueue:  c.QdiscEnqueue,
		WorkDequeue:  c.QdiscDequeue,
		WorkHash:     c.QdiscHash,
		WorkFlowScan: c.QdiscFlowScan,
		WorkTstamp:   c.QdiscTstamp,
		WorkRand:     c.QdiscRand,
		WorkSiphash:  c.QdiscSiphash,
	}
}

// Ctx is everything a qdisc may do to the host during one call (Init,
// Enqueue, Dequeue, Peek, Reset, Timer, Change). A qdisc keeps no Ctx between
// calls. The same context runs in process and out of process, so both
// give the same result.
type Ctx interface {
	// Now is the current virtual time, ktime_get_ns(): the call's start
	// plus the work reported so far in this call. Like a kernel's
	// monotonic clock it does not start at 0: the host adds its uptime
	// (sim.BootOffset), and Watchdog and ModTimer take times on the same
	// clock. Reading it is free; report WorkTstamp where the kernel qdisc
	// reads the clock.
	Now() sim.Time
	// Work reports n units of kind done now; the host adds their price
	// to this CPU's time (and so to Now).
	Work(kind Work, n int)
	// Rand is get_random_u32() from this qdisc's own stream: one stream
	// per qdisc, seeded from the run's seed and the qdisc's device and
	// handle, the same in and out of process. It reports one WorkRand.
	// Draw seeds (a hash key, a perturbation) from it in Init.
	Rand() uint32
	// Drop frees a packet the qdisc holds or was just handed, on the
	// enqueue side (qdisc_drop): it joins the caller's to_free list and
	// is freed after the root lock is released. reason is a kernel
	// SKB_DROP_REASON_* name without the prefix (skb.DropQdiscDrop, ...)
	// or one the qdisc declared in Info.DropReasons; any other string
	// ends the run with an error naming the qdisc and the reason.
	Drop(h skb.Handle, reason skb.DropReason)
	// DequeueDrop frees a held packet during dequeue (qdisc_dequeue_drop):
	// with TCQ_F_DEQUEUE_DROPS declared (and the profile honouring it)
	// it joins q->to_free and is freed after the root lock; otherwise it
	// is freed now, under the lock. Reasons as for Drop.
	DequeueDrop(h skb.Handle, reason skb.DropReason)
	// Watchdog arms the qdisc's watchdog to fire at at
	// (qdisc_watchdog_schedule_ns, an hrtimer): when it fires, the host
	// reschedules the root qdisc (__netif_schedule), so Dequeue runs
	// again. Calling it again re-arms it: the latest expiry wins, earlier
	// or later (hrtimer_start), and re-arming at the armed expiry does
	// nothing. A time in the past fires at once. It fires on the CPU
	// that armed it last. A qdisc that holds packets and returns none
	// from Dequeue must have armed it, or nothing ever dequeues them
	// (`txlab plugin test` checks).
	Watchdog(at sim.Time)
	// WatchdogRange is qdisc_watchdog_schedule_range_ns: the watchdog
	// armed with slack, to fire between at and at + slack
	// (hrtimer_start_range_ns: at its hard expiry, at + slack, unless
	// another hrtimer interrupt on that CPU after at runs it sooner). A
	// watchdog already armed with a soft expiry in [at, at + slack] is
	// left alone. Watchdog(at) is WatchdogRange(at, 0). fq arms it so,
	// with its timer_slack.
	WatchdogRange(at, slack sim.Time)
	// CancelWatchdog disarms the watchdog (qdisc_watchdog_cancel); a
	// disarmed watchdog costs nothing and never fires.
	CancelWatchdog()
	// ModTimer arms the qdisc's own timer (mod_timer on a timer_list,
	// sfq's perturb_timer): at at, the host calls the qdisc's Timer
	// method (the qdisc must implement TimerQdisc) in softirq context on
	// the CPU that armed it, holding the qdisc's root lock (as
	// sfq_perturbation takes qdisc_lock(qdisc_root_sleeping(sch))). Like
	// Watchdog, the latest call wins. A timer armed in Init fires on
	// CPU 0, where the model runs tc.
	ModTimer(at sim.Time)
	// DelTimer disarms the qdisc's own timer (timer_delete).
	DelTimer()
	// Duplicate clones a packet the qdisc holds (skb_clone) and hands
	// the clone to the Enqueue of the root of the qdisc's tree right
	// after the root's current call returns, before any other packet:
	// netem_enqueue's rootq->enqueue(skb2) with rootq =
	// qdisc_root_bh(sch). The root is the qdisc itself when it is the
	// device's root or an mq child, and the classful qdisc at the top
	// when it is a leaf (which classifies the clone like any packet).
	// When the clone reaches the qdisc that asked for it, it is marked
	// (skb.Packet.Dup), as netem_enqueue zeroes q->duplicate while the
	// root enqueues it: do not duplicate it again. The clone is a new
	// packet, a copy of the one the host handed in (a new handle, no
	// socket: skb_clone leaves sk NULL); the host counts it as offered,
	// so the accounting balances. Call it from Enqueue only.
	Duplicate(h skb.Handle)
	// Lines reports that this call wrote n cache lines (1..64) of one
	// structure of the qdisc's per-flow state named key (a struct
	// fq_flow; the tail skb it links to is another, under its own key):
	// the host prices their move to this CPU when another CPU wrote them
	// last (lines_overlapped of them for one transfer), as it prices the
	// qdisc's own private lines (qdisc_data_lines), but per flow. Like
	// the posted operations, the price lands after the call: Now does not
	// include it, in process or out.
	Lines(key uint64, n int)
	// ReadSibling reports that this call read, without its lock, what
	// the enqueue and dequeue of the qdisc on the device's TX queue txq
	// (netdev_get_tx_queue(dev, txq)->qdisc_sleeping) write: its q.qlen,
	// on struct Qdisc's hot line, and a field of its private data, as
	// cake_mq's sync reads each sibling's (READ_ONCE(other_sch->q.qlen),
	// READ_ONCE(other_priv->last_active) in cake_dequeue). The host
	// prices the two loads as line transfers from the CPUs that wrote
	// them last (a hit for lines this CPU holds). Posted, like Lines:
	// Now does not include it. txq of the qdisc itself is free.
	ReadSibling(txq int)
}

// MaxLines bounds one Ctx.Lines report (a struct's lines, not a table's).
const MaxLines = 64

// CheckLines checks one Ctx.Lines report against MaxLines.
func CheckLines(key uint64, n int64) error {
	if n < 1 || n > MaxLines {
		return fmt.Errorf("reported %d cache lines of flow %#x (1..%d)", n, key, MaxLines)
	}
	return nil
}

// PriorityClass is the first step of the flow-queue qdiscs' classify
// (fq_codel_classify, sfq_classify, fq_pie_classify, cake_select_tin):
// skb->priority names class minor-1 of the qdisc whose handle's major is
// major when TC_H_MAJ(skb->priority) == sch->handle (0 for a default
// qdisc, an mq child's 0:, too) and its minor is in 1..n.
func PriorityClass(priority, major, n uint32) (int, bool) {
	if m := priority & 0xffff; priority>>16 == major && m > 0 && m <= n {
		return int(m - 1), true
	}
	return 0, false
}

// CheckSibling checks the TX queue of one Ctx.ReadSibling report: a
// queue index, as skb->queue_mapping holds one (u16).
func CheckSibling(txq int64) error {
	if txq < 0 || txq > 0xffff {
		return fmt.Errorf("read the qdisc of TX queue %d (0..65535)", txq)
	}
	return nil
}

// TxqCtx is a context that knows the state of the device's TX queues:
// the host's, in Dequeue and Peek, for a qdisc over more than one (a
// root). multiq skips a band whose queue is stopped.
type TxqCtx interface {
	// TxqStopped is netif_xmit_stopped of the device's TX queue i
	// (the driver's XOFF or BQL's) as the host called Dequeue or Peek;
	// false for a queue the qdisc does not feed.
	TxqStopped(i int) bool
}

// DequeueReq bounds one bulk dequeue, the way dequeue_skb and
// try_bulk_dequeue_skb{,_slow} bound it.
type DequeueReq struct {
	// Max is the most packets to return (>= 1).
	Max int
	// Bytes: after the first packet, keep dequeuing only while the bytes
	// returned so far are below Bytes (BQL's available bytes).
	Bytes int64
	// SameQueue stops after the first packet whose Queue differs from the
	// first packet's; that packet is still returned, last.
	SameQueue bool
}

// Setup is what a qdisc learns about its device at init.
type Setup struct {
	Handle string // e.g. "8001:" or "8001:3"
	Parent string // "root" or a handle
	// MTU is psched_mtu(dev): dev->mtu + dev->hard_header_len, 1514 on
	// Ethernet, the size a qdisc's quantum and burst defaults use.
	MTU int
	// DevMTU is dev->mtu (1500 on Ethernet).
	DevMTU int
	// RateBps is the link speed in bits/s (ethtool's speed), what a
	// shaper without a configured rate would use; 0 if unknown.
	RateBps    int64
	TxQueueLen int // dev->tx_queue_len
	NumTxQ     int // txqs this qdisc may feed (1 for an mq child)
	DevTxQ     int // dev->real_num_tx_queues
	// Group names the children of one multiqueue root (e.g. cake_mq)
	// that share configuration; GroupSize is how many there are.
	// Empty for a qdisc that stands alone.
	Group     string
	GroupSize int
}

// Major is the major of the qdisc's handle ("8001:" is 0x8001, hex as
// tc writes it; TC_H_MAJ >> 16), 0 if the handle has none.
func (s Setup) Major() uint32 {
	maj, _, ok := strings.Cut(s.Handle, ":")
	if !ok || maj == "" {
		return 0
	}
	n, err := strconv.ParseUint(maj, 16, 16)
	if err != nil {
		return 0
	}
	return uint32(n)
}

// Queue is the TX queue of an mq-style root's child: its parent class's
// minor less one (mq_init makes queue ntx's child under
// TC_H_MAKE(TC_H_MAJ(sch->handle), TC_H_MIN(ntx + 1))); -1 for any
// other parent.
func (s Setup) Queue() int {
	_, min, ok := strings.Cut(s.Parent, ":")
	if !ok || min == "" {
		return -1
	}
	n, err := strconv.ParseUint(min, 16, 16)
	if err != nil || n == 0 {
		return -1
	}
	return int(n) - 1
}

// Info is what a qdisc tells the host after Init or Change.
type Info struct {
	Flags Flags
	// Limit is sch->limit, in the qdisc's own unit, as the kernel keeps
	// it: packets for a packet-limited qdisc, bytes for a byte-limited
	// one (bfifo sets sch->limit to its byte limit). The llist defer
	// bound of 6.19-rc1 reads it (defer_count > sch->limit drops), so a
	// byte-limited qdisc reports its byte limit, not 0: a qdisc whose
	// sch->limit is 0 (the kernel's tbf and htb leave it so) has every
	// packet deferred behind another dropped there, as HTB did until
	// net.core.qdisc_max_burst replaced the bound.
	Limit int
	// DropReasons are the qdisc's own drop reasons beyond the kernel's
	// SKB_DROP_REASON_* names: upper-case words ("MYQ_TOO_OLD"), read
	// from Init's Info. Ctx.Drop with any other non-kernel reason is an
	// error.
	DropReasons []skb.DropReason
	// SegmentOver is the model's too: a GSO skb longer than this many
	// bytes, each of whose segments fits in it, reaches the qdisc as
	// its segments, as tbf_enqueue hands one past its max_size to
	// tbf_segment (skb_gso_validate_mac_len, then skb_gso_segment):
	// the host segments it in the enqueue call, and the skb's code is
	// NET_XMIT_SUCCESS if any segment was queued, else NET_XMIT_DROP.
	// 0: never. SplitGSO, when set, splits every GSO skb instead.
	SegmentOver uint32
	// TCMap, when set, is the device's traffic classes the qdisc writes
	// (taprio_change's netdev_set_num_tc, netdev_set_tc_queue and
	// netdev_set_prio_tc_map): the host applies it after Init or Change,
	// so netdev_pick_tx picks within the packet's class, and takes it
	// away with the qdisc (taprio_destroy's netdev_reset_tc). A root
	// qdisc's only.
	TCMap *TCMap
}

// TCMap is struct tc_mqprio_qopt's mapping: num_tc, prio_tc_map and each
// class's queues (count@offset).
type TCMap struct {
	NumTC  int
	PrioTC [PrioMax + 1]uint8
	Count  [PrioMax + 1]uint16
	Offset [PrioMax + 1]uint16
}

// Invalid is mqprio_validate_qopt (sch_mqprio_lib.c) on a device of nq
// TX queues, with the queue counts checked and no two classes sharing a
// queue (mqprio's hw 0, taprio without txtime-assist): the kernel's
// extack text, "" when the map is valid.
func (m *TCMap) Invalid(nq int) string {
	if msg := m.InvalidMap(); msg != "" {
		return msg
	}
	return m.InvalidQueues(nq)
}

// InvalidMap is mqprio_validate_qopt's first checks: the number of
// classes, and every priority on one.
func (m *TCMap) InvalidMap() string {
	if m.NumTC < 0 || m.NumTC > len(m.PrioTC) {
		return "Error: Number of traffic classes is outside valid range."
	}
	for _, c := range m.PrioTC {
		if int(c) >= m.NumTC {
			return "Error: Invalid traffic class in priority to traffic class mapping."
		}
	}
	return ""
}

// InvalidQueues is mqprio_validate_qopt's queue checks (validate_queue_counts,
// no overlap allowed).
func (m *TCMap) InvalidQueues(nq int) string {
	for i := 0; i < m.NumTC; i++ {
		last := int(m.Offset[i]) + int(m.Count[i])
		if m.Count[i] == 0 {
			return fmt.Sprintf("Error: sch_mqprio_lib: No queues for TC %d.", i)
		}
		if int(m.Offset[i]) >= nq || last > nq {
			return fmt.Sprintf("Error: sch_mqprio_lib: Queues %d:%d for TC %d exceed the %d TX queues available.", m.Count[i], m.Offset[i], i, nq)
		}
		for j := i + 1; j < m.NumTC; j++ {
			if max(int(m.Offset[i]), int(m.Offset[j])) < min(last, int(m.Offset[j])+int(m.Count[j])) {
				return fmt.Sprintf("Error: sch_mqprio_lib: TC %d queues %d@%d overlap with TC %d queues %d@%d.",
					i, m.Count[i], m.Offset[i], j, m.Count[j], m.Offset[j])
			}
		}
	}
	return ""
}

// CheckDropReasons checks the reasons a qdisc declares are shaped like
// kernel names.
func (i Info) CheckDropReasons() error {
	for _, r := range i.DropReasons {
		if !skb.ValidReasonName(r) {
			return fmt.Errorf("declared drop reason %q is not an upper-case name like QDISC_DROP", r)
		}
	}
	return nil
}

// Stats are a qdisc's counters, in tc's terms.
type Stats struct {
	Qlen       int   // packets held
	Backlog    int64 // bytes held
	Drops      uint64
	Overlimits uint64
	// XStats are qdisc-specific statistics (tc_*_xstats), printed after
	// the standard ones in the order given.
	XStats []XStat
}

// Qdisc is a queueing discipline: what every qdisc implements. Peek,
// Reset, Change and a timer are optional (Peeker, Resetter, Changer,
// TimerQdisc), as the kernel's Qdisc_ops may leave them NULL.
type Qdisc interface {
	// Init parses tc-style options (e.g. ["limit", "100"]) and prepares
	// the qdisc (its ops->init). An unknown option or a bad value is an
	// error naming it, of tc's class (Parsef, Refusef, Lacksf). ctx draws seeds (Rand) and may arm the watchdog
	// or timer; there is nothing to drop yet, and work reported in Init
	// is not charged (tc's configuration is not on the data path).
	Init(ctx Ctx, s Setup, args []string) (Info, error)
	// Enqueue takes a batch in arrival order; rc[i] is batch[i]'s result
	// (the host fills it with XmitSuccess first). A packet given
	// XmitDrop must have been dropped through ctx.
	Enqueue(ctx Ctx, batch []skb.Packet, rc []Code)
	// Dequeue appends up to req.Max packets to out and returns it.
	Dequeue(ctx Ctx, req DequeueReq, out []skb.Packet) []skb.Packet
	// Stats returns the counters.
	Stats() Stats
	// Dump is the option part of `tc -d qdisc show` (e.g. "limit 1000p").
	Dump() string
}

// Peeker is a qdisc with its own peek op: the packet the next Dequeue
// would return first, without taking it. A qdisc without one gets the
// host's qdisc_peek_dequeued (see Defaults).
type Peeker interface {
	Peek(ctx Ctx) (skb.Packet, bool)
}

// Resetter is a qdisc with a reset op: drop everything held through
// ctx.Drop and zero its queues. The kernel's resets free their queues
// with rtnl_kfree_skbs, whose kfree_skb at rtnl_unlock gives reason
// NOT_SPECIFIED (cake's cake_clear_tin names QUEUE_PURGE since 6.14); a
// packet qdisc_peek_dequeued set aside sits in sch->gso_skb, which
// qdisc_reset frees with __skb_queue_purge: QUEUE_PURGE. A qdisc that
// holds packets must have one; the host refuses to reset one that does
// not.
type Resetter interface {
	Reset(ctx Ctx)
}

// TimerQdisc is a qdisc with a timer of its own (Ctx.ModTimer): Timer is
// its callback, run with the qdisc's root lock held.
type TimerQdisc interface {
	Timer(ctx Ctx)
}

// Changer is implemented by a qdisc with a change op (`tc qdisc change`,
// Qdisc_ops.change): args are tc option words, parsed and validated as
// Init does them, then applied to the running qdisc. A refused change
// changes nothing. Packets the change drops (a lowered limit, a tin no
// longer in use) go through ctx, as Reset's do; ctx.Now is the time of
// the change. The returned Info replaces the qdisc's flags and limit.
//
// A qdisc whose kernel twin has no change op need not implement it:
// Change then answers as the kernel does (ErrCannotChange).
type Changer interface {
	Change(ctx Ctx, args []string) (Info, error)
}

// ErrCannotChange is qdisc_change's answer for a qdisc without a change
// op: EINVAL, "Change operation not supported by specified qdisc".
var ErrCannotChange error = &OptionError{Class: ErrKernel, Msg: "Change operation not supported by specified qdisc"}

// Change is `tc qdisc change` on q: ErrCannotChange unless q (or what it
// wraps) is a Changer.
func Change(q Qdisc, ctx Ctx, args []string) (Info, error) {
	ch, ok := q.(Changer)
	if !ok {
		return Info{}, ErrCannotChange
	}
	return ch.Change(ctx, args)
}

// Factory makes a fresh qdisc of one kind.
type Factory func() Qdisc

var registry = reg.New[Qdisc]("qdisc")

// hostKinds are kinds the host expands itself rather than a plugin.
var hostKinds = []string{"mq", "mqprio", "noqueue"}

// Register adds a kind. Registering a kind twice is a programming error.
func Register(kind, help string, f Factory) { registry.Register(kind, help, f) }

// New makes a qdisc of kind, or says which kinds exist.
func New(kind string) (Qdisc, error) { return registry.New(kind, hostKinds...) }

// Kinds lists the registered kinds, plus the host-expanded ones.
func Kinds() []string { return registry.Names(hostKinds...) }

// Help is a kind's one-line description.
func Help(kind string) string { return registry.Help(kind) }

// LabOption is an option word a qdisc takes that tc's does not: the
// model's, for experiments. Word is how it is written (with its value,
// "limit N"), Help what it does.
type LabOption struct {
	Word, Help string
}

var labOptions = map[string][]LabOption{}

// RegisterLabOptions declares kind's lab-only option words (txlab list
// shows them apart from tc's).
func RegisterLabOptions(kind string, opts ...LabOption) {
	labOptions[kind] = append(labOptions[kind], opts...)
}

// LabOptions are kind's lab-only option words, as registered.
func LabOptions(kind string) []LabOption { return labOptions[kind] }

var multiQueue = map[string]string{}

// RegisterMultiQueue declares root as an mq-style root: the host gives
// each TX queue a child of kind child with the root's options and a
// shared Setup.Group (as cake_mq does with cake).
func RegisterMultiQueue(root, child string) { multiQueue[root] = child }

// MultiQueueChild returns the child kind of an mq-style root.
func MultiQueueChild(root string) (string, bool) {
	c, ok := multiQueue[root]
	return c, ok
}
