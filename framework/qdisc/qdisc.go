// Package qdisc is the queueing-discipline plugin interface: what a qdisc
// implements, the context it gets on every call, and the registry of kinds.
// The built-ins (pfifo, pfifo_fast, noqueue; mq is expanded by the host)
// implement the same interface the plugins/* qdiscs do.
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
)

func (c Code) String() string {
	switch c {
	case XmitSuccess:
		return "NET_XMIT_SUCCESS"
	case XmitDrop:
		return "NET_XMIT_DROP"
	case XmitCN:
		return "NET_XMIT_CN"
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
)

// Work is a unit of CPU work a qdisc reports; the host prices it from the
// cost table, so a costly algorithm is costly in the model.
type Work uint8

// Kinds of work.
const (
	WorkEnqueue  Work = iota // base per-packet enqueue
	WorkDequeue              // base per-packet dequeue
	WorkHash                 // one flow hash / classification
	WorkFlowScan             // one flow or slot visited while scanning
	WorkTstamp               // one ktime_get()
	WorkRand                 // one get_random_u32()
	NumWork                  // how many kinds there are
)

// Prices is what each kind of Work costs in ns.
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
	}
}

// Ctx is what a qdisc may do to the host during one call.
type Ctx interface {
	// Now is the current virtual time (ktime_get_ns()).
	Now() sim.Time
	// Spend burns ns of CPU time in this call.
	Spend(ns int64)
	// Work reports n units of a kind of work, priced by the host.
	Work(kind Work, n int)
	// Rand is get_random_u32() from the qdisc's own stream.
	Rand() uint32
	// Drop drops a packet the qdisc holds or was just handed, on the
	// enqueue side: it goes to the caller's to_free list (qdisc_drop).
	Drop(h skb.Handle, reason skb.DropReason)
	// DequeueDrop drops a held packet during dequeue: with
	// TCQ_F_DEQUEUE_DROPS it joins q->to_free and is freed after the
	// root lock is released; otherwise it is freed now, under the lock.
	DequeueDrop(h skb.Handle, reason skb.DropReason)
	// Watchdog asks to be run again at time at (qdisc_watchdog_schedule_ns).
	Watchdog(at sim.Time)
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
	Handle     string // e.g. "8001:" or "8001:3"
	Parent     string // "root" or a handle
	MTU        int    // psched_mtu(dev): MTU + hard header (1514 for Ethernet)
	TxQueueLen int    // dev->tx_queue_len
	NumTxQ     int    // txqs the qdisc may feed
	Rand       *sim.Rand
	// Group names the children of one multiqueue root (e.g. cake_mq)
	// that share configuration; GroupSize is how many there are.
	// Empty for a qdisc that stands alone.
	Group     string
	GroupSize int
	// RandSeed is Rand's seed and CtxSeed the seed of the stream behind
	// Ctx.Rand, so a plugin in another process draws the same numbers;
	// Prices price Ctx.Work. The host fills them; a qdisc ignores them.
	RandSeed, CtxSeed sim.Seed
	Prices            Prices
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

// Info is what a qdisc tells the host after init.
type Info struct {
	Flags Flags
	Limit int // sch->limit, read by the llist defer bound (0 if none)
}

// Stats are a qdisc's counters, in tc's terms.
type Stats struct {
	Qlen       int   // packets held
	Backlog    int64 // bytes held
	Drops      uint64
	Overlimits uint64
	// XStats are qdisc-specific counters, printed after the standard
	// ones in the order given.
	XStats []KV
}

// KV is one named statistic.
type KV struct {
	Key   string
	Value int64
}

// Qdisc is a queueing discipline.
type Qdisc interface {
	// Init parses tc-style options (e.g. ["limit", "100"]) and prepares
	// the qdisc. An unknown option or a bad value is an error naming it.
	Init(s Setup, args []string) (Info, error)
	// Enqueue takes a batch in arrival order; rc[i] is batch[i]'s result.
	Enqueue(ctx Ctx, batch []skb.Packet, rc []Code)
	// Dequeue appends up to req.Max packets to out and returns it.
	Dequeue(ctx Ctx, req DequeueReq, out []skb.Packet) []skb.Packet
	// Peek returns the packet the next Dequeue would return first.
	Peek(ctx Ctx) (skb.Packet, bool)
	// Reset drops everything held (reason QUEUE_PURGE via ctx.Drop).
	Reset(ctx Ctx)
	// Stats returns the counters.
	Stats() Stats
	// Dump is the option part of `tc -d qdisc show` (e.g. "limit 1000p").
	Dump() string
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
var hostKinds = []string{"mq", "noqueue"}

// Register adds a kind. Registering a kind twice is a programming error.
func Register(kind, help string, f Factory) { registry.Register(kind, help, f) }

// New makes a qdisc of kind, or says which kinds exist.
func New(kind string) (Qdisc, error) { return registry.New(kind, hostKinds...) }

// Kinds lists the registered kinds, plus the host-expanded ones.
func Kinds() []string { return registry.Names(hostKinds...) }

// Help is a kind's one-line description.
func Help(kind string) string { return registry.Help(kind) }

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
