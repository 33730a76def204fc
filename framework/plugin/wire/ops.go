// Package wire is what crosses the plugin boundary: the host operations a
// qdisc or driver posts during a call, the contexts that post them, the
// in-process wrappers, and the binary frames the out-of-process data path
// carries.
//
// A plugin never touches host state directly. Its context keeps the
// plugin's own clock (the call's start time plus what it spent) and
// posts every host operation (a drop, a completion, a queue wake) with
// the CPU time spent before it. The host applies the posted operations,
// in order and at their virtual times, when the plugin next needs an
// answer from the host or returns. In process and out of process run
// the same contexts, so both give the same result by construction; out
// of process, one call with its posted operations is one round trip.
package wire

import (
	"fmt"
	"slices"

	"github.com/txlab/txlab/framework/cls"
	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// OpKind is a posted host operation.
type OpKind uint8

// Posted operations: the qdisc.Ctx and driver.Ctx methods that change
// host state and return nothing. The numbers are in the frames.
const (
	OpQdiscDrop           OpKind = iota + 1 // qdisc Ctx.Drop(H, Reason)
	OpQdiscDequeueDrop                      // qdisc Ctx.DequeueDrop(H, Reason)
	OpQdiscWatchdog                         // qdisc Ctx.WatchdogRange(A, B); Watchdog(A) is B 0
	OpSentQueue                             // driver Ctx.SentQueue(A, B)
	OpSentQueueMore                         // driver Ctx.SentQueueMore(A, B, C != 0)
	OpCompletedQueue                        // driver Ctx.CompletedQueue(A, B, C)
	OpWakeQueue                             // driver Ctx.WakeQueue(A)
	OpConsume                               // driver Ctx.Consume(H)
	OpDriverDrop                            // driver Ctx.Drop(H, Reason)
	OpRaiseIRQ                              // driver Ctx.RaiseIRQ(A, B)
	OpNapiScheduleLocal                     // driver Ctx.NapiScheduleLocal(A)
	OpQdiscCancelWatchdog                   // qdisc Ctx.CancelWatchdog()
	OpQdiscModTimer                         // qdisc Ctx.ModTimer(A)
	OpQdiscDelTimer                         // qdisc Ctx.DelTimer()
	OpQdiscDuplicate                        // qdisc Ctx.Duplicate(H)
	OpStartQueue                            // driver Ctx.StartQueue(A)
	OpQdiscLines                            // qdisc Ctx.Lines(A, B)
	OpQdiscReadSibling                      // qdisc Ctx.ReadSibling(A)
	numOps
)

var opNames = [numOps]string{"", "drop", "dequeue drop", "watchdog", "sent_queue", "sent_queue_more",
	"completed_queue", "wake_queue", "consume", "drop", "raise_irq", "napi_schedule", "cancel watchdog",
	"mod_timer", "del_timer", "duplicate", "start_queue", "lines", "read sibling"}

func (k OpKind) String() string {
	if k < numOps && k > 0 {
		return opNames[k]
	}
	return "op?"
}

// Op is one posted operation. Spend is the CPU time the plugin spent
// since the operation before it (or since the call or the last answer).
type Op struct {
	Kind    OpKind
	Spend   int64
	H       skb.Handle
	Reason  skb.DropReason
	A, B, C int64
}

// Query is a driver.Ctx method that needs the host's answer: the posted
// operations before it are applied first.
type Query uint8

// Queries.
const (
	QueryXmitStopped Query = iota + 1 // netif_xmit_stopped(A)
	QueryHasQdisc                     // !qdisc_txq_has_no_queue(A)
	QuerySyncPoint                    // driver.SyncPoint
	QueryStopQueue                    // netif_tx_stop_queue(A), then re-read the ring
	QueryNetifRx                      // __netif_rx(skb.Handle(A)): NET_RX_SUCCESS?
	numQueries
)

// outbox is the plugin-side clock and the operations posted since the
// last sync with the host.
type outbox struct {
	base    sim.Time // host time at the call or the last answer
	spent   int64    // spent since base
	pending int64    // spent since the last posted op
	ops     []Op
}

func (o *outbox) begin(now sim.Time) {
	o.base, o.spent, o.pending, o.ops = now, 0, 0, o.ops[:0]
}

func (o *outbox) now() sim.Time { return o.base + sim.Time(o.spent) }

func (o *outbox) spend(ns int64) {
	if ns < 0 {
		sim.Panicf("plugin spent a negative time %d ns", ns)
	}
	o.spent += ns
	o.pending += ns
}

func (o *outbox) post(op Op) {
	op.Spend, o.pending = o.pending, 0
	o.ops = append(o.ops, op)
}

// synced restarts the clock from the host's answer.
func (o *outbox) synced(now sim.Time) { o.begin(now) }

// QdiscHost is what a posted qdisc operation is applied to: the host's
// per-call qdisc context. It is also the qdisc.Ctx the host hands the
// boundary (whose Rand and Work the boundary never calls), and at Init
// it gives the qdisc's random seed and work prices, which stay inside
// the boundary's context.
type QdiscHost interface {
	Now() sim.Time
	Spend(ns int64)
	Drop(h skb.Handle, reason skb.DropReason)
	DequeueDrop(h skb.Handle, reason skb.DropReason)
	WatchdogRange(at, slack sim.Time)
	CancelWatchdog()
	ModTimer(at sim.Time)
	DelTimer()
	Duplicate(h skb.Handle)
	Lines(key uint64, n int)
	ReadSibling(txq int)
	// TxqStates appends to buf a bit for each TX queue the qdisc feeds
	// (bit i of byte i/8: netif_xmit_stopped of queue i), nothing for a
	// qdisc over one queue; Dequeue and Peek send it (qdisc.TxqCtx).
	TxqStates(buf []byte) []byte
	// RandSeed is the seed of the qdisc's stream behind Ctx.Rand.
	RandSeed() sim.Seed
	// WorkPrices price Ctx.Work, from the host's cost table.
	WorkPrices() qdisc.Prices
}

// ApplyQdisc applies ops and then the trailing spend to host.
func ApplyQdisc(host QdiscHost, ops []Op, trailing int64) {
	for i := range ops {
		op := &ops[i]
		host.Spend(op.Spend)
		switch op.Kind {
		case OpQdiscDrop:
			host.Drop(op.H, op.Reason)
		case OpQdiscDequeueDrop:
			host.DequeueDrop(op.H, op.Reason)
		case OpQdiscWatchdog:
			host.WatchdogRange(sim.Time(op.A), sim.Time(op.B))
		case OpQdiscCancelWatchdog:
			host.CancelWatchdog()
		case OpQdiscModTimer:
			host.ModTimer(sim.Time(op.A))
		case OpQdiscDelTimer:
			host.DelTimer()
		case OpQdiscDuplicate:
			host.Duplicate(op.H)
		case OpQdiscLines:
			host.Lines(uint64(op.A), int(op.B))
		case OpQdiscReadSibling:
			host.ReadSibling(int(op.A))
		default:
			sim.Panicf("qdisc posted %s, which is not a qdisc operation", op.Kind)
		}
	}
	host.Spend(trailing)
}

// ApplyDriver applies ops and then the trailing spend to host.
func ApplyDriver(host driver.Ctx, ops []Op, trailing int64) {
	for i := range ops {
		op := &ops[i]
		host.Spend(op.Spend)
		a, b := int(op.A), int(op.B)
		switch op.Kind {
		case OpSentQueue:
			host.SentQueue(a, b)
		case OpSentQueueMore:
			host.SentQueueMore(a, b, op.C != 0)
		case OpCompletedQueue:
			host.CompletedQueue(a, b, int(op.C))
		case OpWakeQueue:
			host.WakeQueue(a)
		case OpStartQueue:
			host.StartQueue(a)
		case OpConsume:
			host.Consume(op.H)
		case OpDriverDrop:
			host.Drop(op.H, op.Reason)
		case OpRaiseIRQ:
			host.RaiseIRQ(a, sim.Time(op.B))
		case OpNapiScheduleLocal:
			host.NapiScheduleLocal(a)
		default:
			sim.Panicf("driver posted %s, which is not a driver operation", op.Kind)
		}
	}
	host.Spend(trailing)
}

// Answer is the host's answer to a query, after the posted ops.
func Answer(host driver.Ctx, q Query, arg int64) bool {
	switch q {
	case QueryXmitStopped:
		return host.XmitStopped(int(arg))
	case QueryHasQdisc:
		return host.HasQdisc(int(arg))
	case QueryStopQueue:
		host.StopQueue(int(arg))
		return false
	case QueryNetifRx:
		return host.NetifRx(skb.Handle(arg))
	case QuerySyncPoint:
		if sp, ok := host.(driver.SyncPoint); ok {
			sp.SyncPoint()
		}
		return false
	}
	sim.Panicf("driver asked query %d, which does not exist", q)
	return false
}

// QdiscCtx is the qdisc.Ctx a qdisc gets, in process or out: its clock,
// its random stream and its work prices are local; drops, watchdog and
// timer operations are posted.
type QdiscCtx struct {
	outbox
	rand     *sim.Rand
	seed     sim.Seed
	prices   qdisc.Prices
	hasTimer bool

	// The filters attached to the qdisc or its classes (a copy of the
	// host's, qdisc.FilterCtx), and a classful qdisc's way to its
	// leaves and buffer for one leaf enqueue.
	filters *cls.Set
	up      LeafUpcaller
	leaves  []qdisc.LeafPacket

	// segs is the current Enqueue call's segment places (qdisc.SegCtx).
	segs []uint16
	// tcp is the current Enqueue call's TCP headers (qdisc.TCPCtx).
	tcp []skb.TCPHeader
	// devTxQ is dev->real_num_tx_queues (qdisc.Setup.DevTxQ, SetDevTxQ):
	// skbedit's queue_mapping in the qdisc's filters sets a queue below
	// it.
	devTxQ int
	// txqStopped is the device's TX queues' netif_xmit_stopped at the
	// current Dequeue or Peek call, a bit each (qdisc.TxqCtx); empty
	// for a qdisc over one queue.
	txqStopped []byte
}

// SetDevTxQ gives the context the device's real_num_tx_queues (at
// Init).
func (x *QdiscCtx) SetDevTxQ(n int) { x.devTxQ = n }

// RealNumTxQueues implements cls.EgressCtx: skbedit's queue_mapping in
// the qdisc's filters (tcf_skbedit_act: skb_set_queue_mapping when the
// device has the queue).
func (x *QdiscCtx) RealNumTxQueues() int { return x.devTxQ }

// SkipTxQueue implements cls.EgressCtx: netdev_xmit_skip_txqueue, which
// matters only before the queue pick, long past in a qdisc.
func (x *QdiscCtx) SkipTxQueue() {}

// SetTxqStopped gives the current call's TX queue states (a bit a
// queue, as QdiscHost.TxqStates makes them); copied.
func (x *QdiscCtx) SetTxqStopped(bits []byte) { x.txqStopped = append(x.txqStopped[:0], bits...) }

// TxqStopped implements qdisc.TxqCtx.
func (x *QdiscCtx) TxqStopped(i int) bool {
	return i >= 0 && i/8 < len(x.txqStopped) && x.txqStopped[i/8]&(1<<(i%8)) != 0
}

// NewQdiscCtx makes the context for a qdisc whose stream has seed and
// whose work costs prices; hasTimer says it implements
// qdisc.TimerQdisc (ModTimer is refused otherwise).
func NewQdiscCtx(seed sim.Seed, prices qdisc.Prices, hasTimer bool) *QdiscCtx {
	return &QdiscCtx{rand: sim.NewRand(seed), seed: seed, prices: prices, hasTimer: hasTimer}
}

// Begin starts a call at host time now.
func (x *QdiscCtx) Begin(now sim.Time) { x.begin(now) }

// Posted returns the operations posted since Begin and the time spent
// after the last one.
func (x *QdiscCtx) Posted() ([]Op, int64) { return x.ops, x.pending }

func (x *QdiscCtx) Now() sim.Time { return x.now() }

// SetSegs gives the next Enqueue call's segment places (Dec.Segs).
func (x *QdiscCtx) SetSegs(segs []uint16) { x.segs = segs }

// GSOSegs implements qdisc.SegCtx.
func (x *QdiscCtx) GSOSegs() []uint16 { return x.segs }

// SetTCPHeaders gives the next Enqueue call's TCP headers
// (Dec.TCPHeaders).
func (x *QdiscCtx) SetTCPHeaders(hs []skb.TCPHeader) { x.tcp = hs }

// TCPHeaders implements qdisc.TCPCtx.
func (x *QdiscCtx) TCPHeaders() []skb.TCPHeader { return x.tcp }

func (x *QdiscCtx) Work(kind qdisc.Work, n int) {
	if kind >= qdisc.NumWork {
		sim.Panicf("qdisc reported unknown work kind %d", kind)
	}
	if n < 0 {
		sim.Panicf("qdisc reported %d units of work kind %d", n, kind)
	}
	x.spend(x.prices[kind] * int64(n))
}

func (x *QdiscCtx) Rand() uint32 {
	x.spend(x.prices[qdisc.WorkRand])
	return x.rand.Uint32()
}

func (x *QdiscCtx) Drop(h skb.Handle, reason skb.DropReason) {
	x.post(Op{Kind: OpQdiscDrop, H: h, Reason: reason})
}

func (x *QdiscCtx) DequeueDrop(h skb.Handle, reason skb.DropReason) {
	x.post(Op{Kind: OpQdiscDequeueDrop, H: h, Reason: reason})
}

func (x *QdiscCtx) Watchdog(at sim.Time) { x.WatchdogRange(at, 0) }
func (x *QdiscCtx) WatchdogRange(at, slack sim.Time) {
	x.post(Op{Kind: OpQdiscWatchdog, A: int64(at), B: int64(slack)})
}
func (x *QdiscCtx) CancelWatchdog() { x.post(Op{Kind: OpQdiscCancelWatchdog}) }

func (x *QdiscCtx) ModTimer(at sim.Time) {
	if !x.hasTimer {
		sim.Panicf("qdisc armed its own timer (Ctx.ModTimer) but has no Timer(ctx) method to run")
	}
	x.post(Op{Kind: OpQdiscModTimer, A: int64(at)})
}

func (x *QdiscCtx) DelTimer() { x.post(Op{Kind: OpQdiscDelTimer}) }

func (x *QdiscCtx) Duplicate(h skb.Handle) { x.post(Op{Kind: OpQdiscDuplicate, H: h}) }

func (x *QdiscCtx) Lines(key uint64, n int) {
	if err := qdisc.CheckLines(key, int64(n)); err != nil {
		sim.Panicf("qdisc %v", err)
	}
	x.post(Op{Kind: OpQdiscLines, A: int64(key), B: int64(n)})
}

func (x *QdiscCtx) ReadSibling(txq int) {
	if err := qdisc.CheckSibling(int64(txq)); err != nil {
		sim.Panicf("qdisc %v", err)
	}
	x.post(Op{Kind: OpQdiscReadSibling, A: int64(txq)})
}

// CheckQdiscOps checks a qdisc's posted operations: qdisc kinds only,
// and drop reasons that are the kernel's or declared (in declared).
func CheckQdiscOps(ops []Op, declared []skb.DropReason) error {
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case OpQdiscDrop, OpQdiscDequeueDrop:
			if err := CheckReason(op.Reason, declared); err != nil {
				return err
			}
		case OpQdiscWatchdog, OpQdiscCancelWatchdog, OpQdiscModTimer, OpQdiscDelTimer, OpQdiscDuplicate:
		case OpQdiscLines:
			if err := qdisc.CheckLines(uint64(op.A), op.B); err != nil {
				return err
			}
		case OpQdiscReadSibling:
			if err := qdisc.CheckSibling(op.A); err != nil {
				return err
			}
		default:
			return fmt.Errorf("posted %s, which is not a qdisc operation", op.Kind)
		}
	}
	return nil
}

// CheckReason refuses a drop reason that is neither a kernel
// SKB_DROP_REASON_* name nor one the qdisc declared.
func CheckReason(r skb.DropReason, declared []skb.DropReason) error {
	if skb.IsKernelReason(r) || slices.Contains(declared, r) {
		return nil
	}
	return fmt.Errorf("drop reason %q is not a kernel SKB_DROP_REASON_* name nor one the qdisc declared in Info.DropReasons", r)
}

// Upcaller sends a driver's posted ops (x.Posted) and a query to the
// host and returns the host's time after it and the answer.
type Upcaller interface {
	Upcall(x *DriverCtx, q Query, arg int64) (sim.Time, bool)
}

// DriverState hands out a driver's per-call contexts. Calls nest (a
// query lets other CPUs run, and they may call the same driver), so each
// call has its own.
type DriverState struct {
	numTxQ int
	free   []*DriverCtx
}

// NewDriverState is the state of a driver with numTxQ queues.
func NewDriverState(numTxQ int) *DriverState { return &DriverState{numTxQ: numTxQ} }

// Get returns a context for one call on cpu starting at now; view says
// which queues the host has stopped (netif_tx_queue_stopped) at now.
func (st *DriverState) Get(cpu int, now sim.Time, up Upcaller, view XoffView) *DriverCtx {
	var x *DriverCtx
	if n := len(st.free); n > 0 {
		x, st.free = st.free[n-1], st.free[:n-1]
	} else {
		x = &DriverCtx{st: st}
	}
	x.cpu, x.up, x.view = cpu, up, view
	x.begin(now)
	x.woken = x.woken[:0]
	return x
}

// Put returns a context Get gave out.
func (st *DriverState) Put(x *DriverCtx) {
	x.up, x.Host, x.view = nil, nil, nil
	st.free = append(st.free, x)
}

// XoffView answers netif_tx_queue_stopped as of the last sync with the
// host: nothing else changes host state while a plugin runs between two
// syncs.
type XoffView interface{ QueueStopped(txq int) bool }

// XoffBits is an XoffView carried in a frame: bit i of word i/64.
type XoffBits []uint64

func (b XoffBits) QueueStopped(i int) bool {
	return i >= 0 && i/64 < len(b) && b[i/64]&(1<<(i%64)) != 0
}

// DriverCtx is the driver.Ctx a driver gets, in process or out.
//
// netif_tx_stop_queue is a query, not a posted op: ice_maybe_stop_tx
// and its kin stop the queue, then re-check the ring in case a clean on
// another CPU freed room meanwhile; the host must have stopped the queue
// (and let that CPU run) before the re-check, or both sides miss the
// wake. netif_tx_wake_queue and netif_tx_start_queue are posted; the
// driver's later netif_tx_queue_stopped sees its own wake or start.
type DriverCtx struct {
	outbox
	st    *DriverState
	cpu   int
	up    Upcaller
	view  XoffView
	woken []int // queues this call woke or started since the last sync
	// Host is the host's context, for a driver in process; Call is the
	// call's id, for one out of process.
	Host driver.Ctx
	Call uint32
}

// Posted returns the operations posted since the call began or the last
// query, and the time spent after the last one.
func (x *DriverCtx) Posted() ([]Op, int64) { return x.ops, x.pending }

func (x *DriverCtx) query(q Query, arg int64) bool {
	now, ans := x.up.Upcall(x, q, arg)
	x.synced(now)
	x.woken = x.woken[:0]
	return ans
}

// Synced sets the view after an answer (a remote upcaller's).
func (x *DriverCtx) Synced(view XoffView) { x.view = view }

func (x *DriverCtx) txq(i int) int {
	if i < 0 || i >= x.st.numTxQ {
		sim.Panicf("driver: txq %d out of range", i)
	}
	return i
}

func (x *DriverCtx) Now() sim.Time  { return x.now() }
func (x *DriverCtx) Spend(ns int64) { x.spend(ns) }
func (x *DriverCtx) CPU() int       { return x.cpu }

func (x *DriverCtx) SentQueue(txq int, bytes int) {
	x.post(Op{Kind: OpSentQueue, A: int64(x.txq(txq)), B: int64(bytes)})
}

// SentQueueMore is __netdev_tx_sent_queue: with more it answers
// netif_tx_queue_stopped (the driver's own bit), without it true.
func (x *DriverCtx) SentQueueMore(txq int, bytes int, more bool) bool {
	c := int64(0)
	if more {
		c = 1
	}
	x.post(Op{Kind: OpSentQueueMore, A: int64(x.txq(txq)), B: int64(bytes), C: c})
	if more {
		return x.QueueStopped(txq)
	}
	return true
}

func (x *DriverCtx) CompletedQueue(txq int, pkts, bytes int) {
	x.post(Op{Kind: OpCompletedQueue, A: int64(x.txq(txq)), B: int64(pkts), C: int64(bytes)})
}

func (x *DriverCtx) StopQueue(txq int) { x.query(QueryStopQueue, int64(x.txq(txq))) }

func (x *DriverCtx) WakeQueue(txq int) {
	x.woken = append(x.woken, x.txq(txq))
	x.post(Op{Kind: OpWakeQueue, A: int64(txq)})
}

func (x *DriverCtx) StartQueue(txq int) {
	x.woken = append(x.woken, x.txq(txq))
	x.post(Op{Kind: OpStartQueue, A: int64(txq)})
}

func (x *DriverCtx) QueueStopped(txq int) bool {
	for _, w := range x.woken {
		if w == txq {
			return false
		}
	}
	return x.view.QueueStopped(x.txq(txq))
}

func (x *DriverCtx) XmitStopped(txq int) bool {
	return x.query(QueryXmitStopped, int64(x.txq(txq)))
}

func (x *DriverCtx) HasQdisc(txq int) bool { return x.query(QueryHasQdisc, int64(x.txq(txq))) }

// SyncPoint implements driver.SyncPoint.
func (x *DriverCtx) SyncPoint() { x.query(QuerySyncPoint, 0) }

func (x *DriverCtx) Consume(h skb.Handle) { x.post(Op{Kind: OpConsume, H: h}) }

// NetifRx is a query: the host's answer says whether the backlog took
// the packet, which it holds from then on either way.
func (x *DriverCtx) NetifRx(h skb.Handle) bool { return x.query(QueryNetifRx, int64(h)) }

func (x *DriverCtx) Drop(h skb.Handle, reason skb.DropReason) {
	x.post(Op{Kind: OpDriverDrop, H: h, Reason: reason})
}

func (x *DriverCtx) RaiseIRQ(v int, at sim.Time) {
	x.post(Op{Kind: OpRaiseIRQ, A: int64(v), B: int64(at)})
}

func (x *DriverCtx) NapiScheduleLocal(v int) { x.post(Op{Kind: OpNapiScheduleLocal, A: int64(v)}) }
