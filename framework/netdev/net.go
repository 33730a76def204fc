// Package netdev models the Linux transmit path: net_device and
// netdev_queue with BQL, __dev_queue_xmit and __dev_xmit_skb in both
// generations (net/core/dev.c), the qdisc run loop and bulk dequeue
// (net/sched/sch_generic.c), __netif_schedule and net_tx_action, and the
// NAPI plumbing drivers complete through.
package netdev

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/txlab/txlab/framework/cls"
	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/slab"
	"github.com/txlab/txlab/framework/tc"
)

// HZ is the jiffy rate used for BQL's slack hold time.
const HZ = 1000

// ErrNoRxSide is a device asked for RX queues whose driver has no
// receive side (veth: no NIC rings).
var ErrNoRxSide = errors.New("no receive side")

// MaxQueues is the most TX queues a device may have: the kernel's bound
// in netif_alloc_netdev_queues (count > 0xffff is -EINVAL).
const MaxQueues = 0xffff

// Net is one simulated host's networking state: what the kernel keeps in
// globals and per-CPU softnet_data.
type Net struct {
	E    *sim.Engine
	Cfg  Config
	Pool skb.Pool
	Devs []*Device

	sd []softnetData

	// Accounting: offered = tx + dropped + in flight, always. Offered
	// counts the packets senders hand __dev_queue_xmit and the clones
	// qdiscs make (Clones, netem's duplicates).
	Offered  uint64
	Clones   uint64
	TxPkts   uint64
	TxBytes  uint64
	Drops    map[skb.DropReason]uint64
	XmitHist Log2Hist // __dev_queue_xmit latency, ns
	// DeferBatch is the size of each defer_list a drainer took with
	// llist_del_all (the llist's batches, skbs), as a bpftrace hist().
	DeferBatch Log2Hist

	// slabs are the SLUB caches senders' skbs come from (slab.go), the
	// heads' and skbuff_head_cache (skbuff, nil until a sender's first
	// skb); headTruesize and headIdx remember the last lookup.
	slabs        []*slab.Cache
	skbuff       *slab.Cache
	headTruesize uint32
	headIdx      int

	// GSOSegments are the skbs made by segmenting GSO skbs for a qdisc
	// that wants segments (qdisc.SplitGSO): offered too.
	GSOSegments uint64

	// Counters the experiments ask about.
	NetifSchedule        uint64                     // __netif_schedule calls
	NetifScheduleSkipped uint64                     // ... returned early by the fast path
	TxSoftirqRaised      uint64                     // __netif_reschedule raised NET_TX_SOFTIRQ
	Sched                [NumSchedCallers]SchedStat // __netif_schedule by caller
	TxAction             TxActionStat               // what net_tx_action found
	DeferDrops           uint64                     // dropped at the defer_list bound
	// Deferred, DeferIPIs and DeferFull count skb_attempt_defer_free's
	// hand-backs (Cfg.TxDeferFree), the IPIs they sent, and the skbs a
	// full defer list made the completing CPU free itself.
	Deferred, DeferIPIs, DeferFull uint64
	Bypass                         uint64 // TCQ_F_CAN_BYPASS direct transmits

	// Prof, if set, splits the qdisc owners' time by phase (drainprof.go).
	Prof *DrainProfile
	// OnTxAction, if set, sees each qdisc net_tx_action takes from its
	// output_queue on c once it holds the root lock: who scheduled it
	// and how long c waited for the lock (a measurement's hook, as a
	// bpftrace probe on net_tx_action would be).
	OnTxAction func(c *sim.CPU, q *Qdisc, from SchedCaller, wait sim.Time)

	act struct { // ActProfile labels
		xmit, pusher, drain, enqueue, run, dequeue, driver, free, requeue sim.Act
	}
	site struct {
		busylock, rootEnq, rootRun, txAction, hardTx, nolockEnq, seqlock, timer *sim.LockStat
		ifbTasklet                                                              *sim.LockStat // made with the first ifb
		deferLock, deferFlush                                                   *sim.LockStat // a defer_list's lock, by its two sides
	}
	deferKick func(*sim.CPU) // deferKickIRQ, made once
	// Warnings are what tc printed as "Warning: ..." for the tc
	// commands run (the kernel's extack warnings).
	Warnings []string

	// Hooks observe the TX path (tests, tracing); nil hooks cost nothing.
	Hooks Hooks
	// Maker makes the host's qdiscs and drivers.
	Maker Maker

	// The receive side (rx.go): devices with a traffic generator, the
	// frames in their rings, the RSS key, softnet_stat per CPU.
	rxDevs      []*Device
	rxHeld      int64
	rssKeyBytes []byte
	softnet     []SoftnetStat

	nextQdiscID int32
	autoHandle  tc.Handle // qdisc_alloc_handle's static autohandle
	qdiscs      []*Qdisc
	unoffered   int64    // allocated by senders, not yet handed to __dev_queue_xmit
	rtnlFree    skb.List // dropped by a qdisc change, not yet freed (rtnl_kfree_skbs)
	up          bool     // the devices are up (Up): root grafts deactivate them

	// RootGrafts and MQGrafts count the grafts on a device that was up
	// (activate.go): of a root, and of an mq child (mq_graft deactivates
	// the device too); DeactivatedNs the time their devices spent
	// deactivated in all, and NoopDrops the packets noop_qdisc dropped
	// (meanwhile, or on a queue whose mq child was deleted).
	RootGrafts, MQGrafts, DeactivatedNs, NoopDrops uint64
	stack                                          stackState

	// The local receive path's own balance (checked by
	// CheckAccounting): its packets are not offered (no sender hands
	// them to __dev_queue_xmit), so they stay out of the TX identity.
	// localArrived = localDelivered + localDropped + localWaiting().
	localArrived   uint64 // packets for the host's sockets that reached it
	localDelivered uint64 // packets the local receive path handed to sockets
	backlogHeld    int64  // skbs on the CPUs' softnet backlogs
	localDropped   uint64 // packets for local sockets the backlog dropped
	// localReceive says a workload delivers packets to the host's
	// sockets (Deliver, from engine context): only then can an arrival
	// on a softnet backlog come from outside the CPU that owns it.
	localReceive bool
	// localSkbs are the received packets for the host's sockets that
	// the ingress block handed to mirred (an ifb's path), by the skb
	// that carries them (made at the hook, not offered); localOut
	// counts those mirred sent out of a device (offered from then on).
	localSkbs      map[skb.Handle]localPkt
	localOut       uint64
	localInHand    uint64 // taken off a local receive queue, not yet delivered (pollLocal)
	localTCDropped uint64 // their drops (and the ingress block's): LocalTCDropped

	// gsoSplit are the GSO skbs leaves segmented during the root's
	// enqueue, by handle (splitGSO), for their ancestors' counts.
	gsoSplit map[skb.Handle]gsoSplit

	// tasklets are the host's tasklets per CPU (tasklet.go), made with
	// the first; taskletFunc a workload's, run after them.
	tasklets    []taskletVec
	taskletFunc func(c *sim.CPU)
}

// groupSeq numbers the multiqueue roots' groups across the process: a
// group's name must be unique among every run the process holds (runs
// go in parallel, -j), or a plugin keeping groups by name (cake_mq's
// shared config) would join one run's children to another's. The name
// never reaches a report.
var groupSeq atomic.Uint64

// Hooks are optional observers of TX-path events.
type Hooks struct {
	DeferPush    func(c *sim.CPU, q *Qdisc, s *skb.SKB)         // skb joined q->defer_list
	EnqueueBatch func(c *sim.CPU, q *Qdisc, batch []*skb.SKB)   // batch handed to the qdisc
	RunBegin     func(c *sim.CPU, q *Qdisc)                     // qdisc_run_begin succeeded
	RunEnd       func(c *sim.CPU, q *Qdisc)                     // qdisc_run_end
	Drop         func(c *sim.CPU, s *skb.SKB, r skb.DropReason) // an skb was freed as dropped
	XmitStart    func(c *sim.CPU, s *skb.SKB)                   // __dev_queue_xmit entry
	XmitDone     func(c *sim.CPU, h skb.Handle, start sim.Time) // __dev_queue_xmit return (the skb may be gone)
	Bypass       func(c *sim.CPU, s *skb.SKB)                   // TCQ_F_CAN_BYPASS direct transmit
	Dequeue      func(c *sim.CPU, q *Qdisc, bulk []*skb.SKB)    // a bulk left the qdisc
	DriverXmit   func(c *sim.CPU, txq *TxQueue, l *skb.List)    // a bulk was handed to ndo_start_xmit (l: a copy, valid during the call)
	Complete     func(c *sim.CPU, s *skb.SKB)                   // TX completion freed a transmitted skb
	// Tap is dev_queue_xmit_nit: the skbs ndo_start_xmit was called
	// with, as a packet socket (tcpdump) on the device sees them: all
	// the driver took, and the one it refused with NETDEV_TX_BUSY (it
	// comes again when the qdisc retries). The skbs (their Packet and
	// control block) are the hook's to read during the call only; s is
	// reused after it.
	Tap func(c *sim.CPU, txq *TxQueue, s []*skb.SKB)
}

// TxActionStat is what net_tx_action found on the qdiscs it took off
// output_queue: Qdiscs = FoundRunning + Empty + the ones it ran.
type TxActionStat struct {
	Qdiscs       uint64 // qdiscs taken off an output_queue (each under its root lock)
	FoundRunning uint64 // qdisc_run_begin failed: another CPU runs it
	Empty        uint64 // it ran, and found nothing to send
	Packets      uint64 // packets its __qdisc_run dequeued
}

type softnetData struct {
	outputQueue []*Qdisc // output_queue (FIFO via next_sched)
	outputSpare []*Qdisc // the array net_tx_action handed back, reused
	hookList    skb.List // what Hooks.DriverXmit reads (driverXmitHook)
	tapOne      [1]*skb.SKB
	scratch     []*xmitScratch
	pollList    []*napi // poll_list
	// inNetRxAction is sd->in_net_rx_action: net_rx_action runs here,
	// or left work on poll_list with NET_RX_SOFTIRQ raised.
	inNetRxAction bool
	backlog       *softnetBacklog
	pollSpare     []*napi // net_rx_action's arrays, reused
	pollRest      []*napi
	repoll        []*napi
	timers        []*Qdisc // qdisc timers expired on this CPU, for TIMER_SOFTIRQ
	skbSeq        uint64   // skbs whose lines this CPU took (ownSkb)
	// skbCache is napi_alloc_cache's skb_cache: the sk_buffs it holds,
	// each by its skbuff_head_cache slab record (skb.SKB.Skbuff; 0 for
	// one the slab model does not follow).
	skbCache []uint32
	// bulkRefs is kfree_skb_list_reason's array (KFREE_SKB_BULK_SIZE),
	// bulkIDs kmem_cache_free_bulk's: the CPU's own, since a slab's slow
	// path is a sync point where another CPU may free too.
	bulkRefs     []uint32
	bulkIDs      []int32
	skbCacheStat SkbCacheStat
	rxOne        [1]*skb.SKB // netifReceiveSkb's list of one
	mirred       mirredStack // softnet_data.xmit's sched_mirred_dev and _nest
	deferred     deferList   // defer_list: skbs other CPUs completed (Cfg.TxDeferFree)
}

// The TX path's activities in the CPU profile (sim.ActProfile, the
// report's cpu_profile): what a CPU was executing inside
// __dev_queue_xmit, as perf's call graph splits it. A lock's spin is
// charged to the activity that waits: ActPusher's is the enqueue side's
// busylock and root lock, ActRun's is sch_direct_xmit's relock.
const (
	ActXmit    = "__dev_queue_xmit (pick_tx, push)"
	ActPusher  = "__dev_xmit_skb root lock (pusher)"
	ActDrain   = "defer drain (del_all, reverse)"
	ActEnqueue = "dev_qdisc_enqueue"
	ActRun     = "__qdisc_run (run_begin/end, relock)"
	ActDequeue = "dequeue_skb"
	ActDriver  = "sch_direct_xmit: validate+driver"
	ActFree    = "kfree_skb (drops, to_free)"
	ActRequeue = "dev_requeue_skb"
)

// XmitActs are the activities inside __dev_queue_xmit.
var XmitActs = []string{ActXmit, ActPusher, ActDrain, ActEnqueue, ActRun, ActDequeue, ActDriver, ActFree, ActRequeue}

// NewNet builds the host on engine e; m makes its qdiscs and drivers.
func NewNet(e *sim.Engine, cfg Config, m Maker) *Net {
	n := &Net{E: e, Cfg: cfg, Maker: m, Drops: map[skb.DropReason]uint64{}}
	n.sd = make([]softnetData, len(e.CPUs))
	n.softnet = make([]SoftnetStat, len(e.CPUs))
	n.act.xmit = e.ActName(ActXmit)
	n.act.pusher = e.ActName(ActPusher)
	n.act.drain = e.ActName(ActDrain)
	n.act.enqueue = e.ActName(ActEnqueue)
	n.act.run = e.ActName(ActRun)
	n.act.dequeue = e.ActName(ActDequeue)
	n.act.driver = e.ActName(ActDriver)
	n.act.free = e.ActName(ActFree)
	n.act.requeue = e.ActName(ActRequeue)
	n.site.busylock = e.LockSite("__dev_xmit_skb (busylock)")
	n.site.rootEnq = e.LockSite("__dev_xmit_skb (root_lock)")
	n.site.rootRun = e.LockSite("sch_direct_xmit (root_lock)")
	n.site.txAction = e.LockSite("net_tx_action (root_lock)")
	n.site.hardTx = e.LockSite("sch_direct_xmit (HARD_TX_LOCK)")
	n.site.nolockEnq = e.LockSite("pfifo_fast_enqueue (producer_lock)")
	n.site.seqlock = e.LockSite("qdisc_run_begin (seqlock)")
	n.site.timer = e.LockSite("qdisc timer (root_lock)")
	n.site.deferLock = e.LockSite("skb_attempt_defer_free (defer_lock)")
	n.site.deferFlush = e.LockSite("skb_defer_free_flush (defer_lock)")
	n.deferKick = n.deferKickIRQ
	for _, c := range e.CPUs {
		c.SetSoftirqHandler(sim.TimerSoftirq, n.runQdiscTimers)
		c.SetSoftirqHandler(sim.NetTxSoftirq, n.netTxAction)
		c.SetSoftirqHandler(sim.NetRxSoftirq, n.netRxAction)
		c.SetSoftirqHandler(sim.TaskletSoftirq, n.taskletAction)
	}
	return n
}

// Device is a net_device.
type Device struct {
	Name     string
	MTU      int
	Queues   []*TxQueue
	Drv      driver.Driver
	selector driver.QueueSelector // ndo_select_queue, if the driver has one
	Info     driver.Info
	RootKind string   // "mq", "mqprio", "noqueue" or the kind of a single root
	Root     *Qdisc   // a single root qdisc over all queues, or nil (mq/noqueue)
	Children []*Qdisc // mq's (mqprio's, cake_mq's) children, one per queue
	// RootHandle is the root qdisc's handle, whatever its kind (mq and
	// noqueue have no Qdisc): 0: for the kernel's defaults.
	RootHandle tc.Handle
	// RootStab is the root's size table as tc gave it (stab.go): an mq,
	// mqprio or cake_mq root shows it and never applies it.
	RootStab *tc.SizeSpec
	// Tree is every qdisc under a class (a classful qdisc's leaves, the
	// host's default pfifos and those `tc qdisc add parent` made), in
	// creation order.
	Tree []*Qdisc
	// filters are the device's tc filters (framework/cls).
	filters *cls.Set
	// clsact is the device's clsact qdisc, nil without one (clsact.go).
	clsact *clsact
	// rootByTC says a tc command made the root (a second "add" of one
	// needs "replace").
	rootByTC   bool
	xps        []int    // CPU -> txq (-1: none), XPS_CPUS map
	tc         tcConfig // the traffic classes mqprio sets (mqprio.go)
	napis      []*napi
	vecCPU     []int
	net        *Net
	ctxs       []dctx // per CPU: driver calls may yield inside
	driverName string
	numRxQ     int
	rx         *rxPort // the receive side, once a traffic generator is attached
	// Bond is a bonding device's slaves and policy (nil for a NIC);
	// Master is the bond a slave is enslaved to (bond.go).
	Bond   *Bond
	Master *Device
	// Ifb is an ifb device's queues (ifb.go), nil for any other.
	Ifb *Ifb
	// ifindex is the device's place in Net.Devs + 1 (register).
	ifindex int
	// txQueueLen is dev->tx_queue_len when it is the device's own (an
	// ifb's), 0: Config.TxQueueLen.
	txQueueLen int

	local map[int]*localRx // the local receive path (local.go), by RX queue or CPU

	// swap is a root graft in progress while the device is up
	// (activate.go); noopQ its noop_qdisc.
	swap  *rootSwap
	noopQ *Qdisc

	link linkCounters // ip -s link's drop counters (linkstats.go)
}

// TX queue state bits (include/linux/netdevice.h).
const (
	queueDrvXoff   = 1 << 0 // __QUEUE_STATE_DRV_XOFF
	queueStackXoff = 1 << 1 // __QUEUE_STATE_STACK_XOFF (BQL)
	queueFrozen    = 1 << 2 // __QUEUE_STATE_FROZEN
)

// TxQueue is a netdev_queue.
type TxQueue struct {
	Index int
	dev   *Device
	state uint32
	DQL   DQL
	// xmitLock is _xmit_lock; state (DRV_XOFF, STACK_XOFF) shares its
	// line (struct netdev_queue's write-mostly part: _xmit_lock,
	// xmit_lock_owner, trans_start, state), so the completion CPU's
	// test_and_clear_bit on state takes the line the next HARD_TX_LOCK
	// needs (stateLine).
	xmitLock sim.SpinLock
	qdisc    *Qdisc
	// line is dql's enqueue-side line (num_queued, adj_limit,
	// last_obj_cnt): dql_queued writes it at xmit and dql_completed
	// writes adj_limit at completion.
	line sim.CacheLine

	TxPackets, TxBytes uint64 // completed
	Stops, Wakes       uint64
	Requeues           uint64
}

// Qdisc is the qdisc attached to the queue.
func (t *TxQueue) Qdisc() *Qdisc { return t.qdisc }

// Device is the device the queue belongs to.
func (t *TxQueue) Device() *Device { return t.dev }

// Stopped is netif_xmit_stopped.
func (t *TxQueue) Stopped() bool { return t.state&(queueDrvXoff|queueStackXoff) != 0 }

func (t *TxQueue) frozenOrStopped() bool { return t.state != 0 }

// DeviceSpec describes a device to build.
type DeviceSpec struct {
	Name    string
	Driver  string
	Args    []string
	Queues  int
	RateBps int64
	// Qdisc is the root in tc words: "mq pfifo", "pfifo limit 100",
	// "noqueue", "" for the kernel's default.
	Qdisc []string
	// IRQCPUs maps vector i to CPU IRQCPUs[i % len]; empty: CPU i.
	IRQCPUs []int
	// XPS is the XPS_CPUS map set up (XPSIRQ, XPSCores, or none).
	XPS XPSMode
	// RxQueues is the RX queues to set up (0: none, transmit only);
	// the driver must have a receive side (driver.Info.Rx).
	RxQueues int
}

// Maker makes qdiscs by kind and drivers by name, each already behind
// the plugin boundary (in process or in another process): the host only
// ever calls through that boundary, so a run gives the same result
// either way. framework/plugin provides the makers.
type Maker interface {
	Qdisc(kind string) (qdisc.Qdisc, error)
	Driver(name string) (driver.Driver, error)
}

// selectable is a driver behind the boundary that can say whether the
// driver inside has an ndo_select_queue (nil if not).
type selectable interface {
	Selector() driver.QueueSelector
}

func (n *Net) newDriver(name string) (driver.Driver, error) {
	if n.Maker == nil {
		return nil, fmt.Errorf("netdev: no Maker to make driver %q", name)
	}
	return n.Maker.Driver(name)
}

func (n *Net) newQdiscOps(kind string) (qdisc.Qdisc, error) {
	if n.Maker == nil {
		return nil, fmt.Errorf("netdev: no Maker to make qdisc %q", kind)
	}
	return n.Maker.Qdisc(kind)
}

// AddDevice builds a device, its driver, and its qdiscs.
func (n *Net) AddDevice(spec DeviceSpec) (*Device, error) {
	drv, err := n.newDriver(spec.Driver)
	if err != nil {
		return nil, err
	}
	if spec.Queues < 1 || spec.Queues > MaxQueues {
		return nil, fmt.Errorf("device %s: queues must be in [1, %d], got %d", spec.Name, MaxQueues, spec.Queues)
	}
	if spec.RateBps < 0 {
		return nil, fmt.Errorf("device %s: negative link rate %d", spec.Name, spec.RateBps)
	}
	if spec.RxQueues < 0 || spec.RxQueues > MaxQueues {
		return nil, fmt.Errorf("device %s: RX queues must be in [0, %d], got %d", spec.Name, MaxQueues, spec.RxQueues)
	}
	info, err := drv.Init(driver.Setup{Name: spec.Name, NumTxQ: spec.Queues, RateBps: spec.RateBps,
		NumCPUs: len(n.E.CPUs), Costs: n.E.Costs, NumRxQ: spec.RxQueues, MaxSkbFrags: n.Cfg.MaxSkbFrags,
		MaxBacklog: n.Cfg.MaxBacklog}, spec.Args)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", spec.Name, err)
	}
	if spec.RxQueues > 0 {
		switch {
		case info.Rx == nil:
			return nil, fmt.Errorf("device %s: driver %s: %w", spec.Name, spec.Driver, ErrNoRxSide)
		case info.Vectors < spec.RxQueues:
			return nil, fmt.Errorf("device %s: driver %s gave %d vectors for %d RX queues", spec.Name, spec.Driver, info.Vectors, spec.RxQueues)
		}
	}
	d := &Device{Name: spec.Name, MTU: 1500, Drv: drv, Info: info, net: n, driverName: spec.Driver, numRxQ: spec.RxQueues, filters: cls.NewSet()}
	if s, ok := drv.(selectable); ok {
		d.selector = s.Selector()
	}
	d.ctxs = make([]dctx, len(n.E.CPUs))
	for i := range d.ctxs {
		d.ctxs[i] = dctx{net: n, dev: d, cpu: n.E.CPUs[i]}
	}
	for i := 0; i < spec.Queues; i++ {
		q := &TxQueue{Index: i, dev: d}
		q.xmitLock.Name = fmt.Sprintf("%s-tx-%d _xmit_lock", spec.Name, i)
		q.DQL.Init(HZ, 0) // netdev_init_one_queue: dql_init(&queue->dql, HZ)
		// Writing limit_min before traffic: dql_completed clamps the
		// limit up to it at the first completion.
		q.DQL.MinLimit = uint32(n.Cfg.BQLLimitMin)
		d.Queues = append(d.Queues, q)
	}
	d.napis = make([]*napi, info.Vectors)
	d.vecCPU = make([]int, info.Vectors)
	for v := range d.napis {
		nx := &napi{dev: d, vec: v}
		nx.irq = func(c *sim.CPU) { n.napiSchedule(c, nx) }
		d.napis[v] = nx
		cpu := v % len(n.E.CPUs)
		if len(spec.IRQCPUs) > 0 {
			cpu = spec.IRQCPUs[v%len(spec.IRQCPUs)]
		}
		if cpu < 0 || cpu >= len(n.E.CPUs) {
			return nil, fmt.Errorf("device %s: IRQ CPU %d out of range", spec.Name, cpu)
		}
		d.vecCPU[v] = cpu
	}
	d.xps = make([]int, len(n.E.CPUs))
	for i := range d.xps {
		d.xps[i] = -1
	}
	if err := d.setXPS(spec.XPS, n.E.Topo); err != nil {
		return nil, fmt.Errorf("device %s: %w", spec.Name, err)
	}
	if err := n.attachQdiscs(d, spec.Qdisc); err != nil {
		return nil, fmt.Errorf("device %s: %w", spec.Name, err)
	}
	if err := n.register(d); err != nil {
		return nil, err
	}
	return d, nil
}

// TxQueueLen is dev->tx_queue_len: an ifb's own, the host's
// (net.Config.TxQueueLen) for any other device.
func (d *Device) TxQueueLen() int {
	if d.txQueueLen > 0 {
		return d.txQueueLen
	}
	return d.net.Cfg.TxQueueLen
}

// register is register_netdevice's part the model keeps: the device's
// ifindex (its place in n.Devs, + 1).
func (n *Net) register(d *Device) error {
	if len(n.Devs) >= skb.MaxIif {
		return fmt.Errorf("%s: more than %d devices", d.Name, skb.MaxIif)
	}
	n.Devs = append(n.Devs, d)
	d.ifindex = len(n.Devs)
	// mirred's "dev NAME" (ll_name_to_index), on the blocks the host runs
	d.filters.SetDevices(func(name string) bool { return n.DeviceByName(name) != nil }, egressAt, ingressAt)
	return nil
}

// attachQdiscs is attach_default_qdiscs when words is empty, else
// `tc qdisc replace dev D root <words>`: the words are tc's (handle,
// root, dev, then the kind and its options; see ParseRootQdisc).
func (n *Net) attachQdiscs(d *Device, words []string) error {
	if len(words) > 0 {
		return n.attachRoot(d, words, false)
	}
	err := n.attachRoot(d, defaultQdisc(d), true)
	if err == nil || !errors.Is(err, qdisc.ErrKernel) {
		return err
	}
	// attach_default_qdiscs: a default whose init fails (pfifo_fast_init
	// refuses tx_queue_len 0, and mq_init fails with its child) leaves
	// dev->qdisc the noop_qdisc, so the kernel marks the device
	// IFF_NO_QUEUE and gives every queue noqueue rather than no qdisc.
	n.detachQdiscs(d)
	d.Info.NoQueue = true
	return n.attachRoot(d, defaultQdisc(d), true)
}

// defaultQdisc is the root attach_default_qdiscs picks, in tc words:
// noqueue for IFF_NO_QUEUE, mq over the default qdisc for a multiqueue
// device, the default qdisc itself otherwise.
func defaultQdisc(d *Device) []string {
	switch {
	case d.Info.NoQueue:
		return []string{"noqueue"}
	case len(d.Queues) > 1:
		return []string{"mq", "pfifo_fast"}
	}
	return []string{"pfifo_fast"}
}

// detachQdiscs drops every qdisc of d: the host's side of qdisc_put on
// the root, its children and the qdiscs under its classes.
func (n *Net) detachQdiscs(d *Device) { n.takeQdiscs(d).put() }

// devQdiscs is a device's qdiscs as takeQdiscs took them off it.
type devQdiscs struct {
	all                    []*Qdisc // the host's qdiscs before, in order
	qdiscs, children, tree []*Qdisc
	root                   *Qdisc
	kind                   string
	handle                 tc.Handle
	txq                    []*Qdisc // each TX queue's qdisc
	rootStab               *tc.SizeSpec
	// destroy is the root's ops->destroy that reaches beyond its qdiscs
	// (mqprio_destroy: netdev_set_num_tc(dev, 0)), run by put.
	destroy func()
}

// takeQdiscs takes every qdisc of d off the host and the device, alive:
// put them back (restoreQdiscs) or drop them (put).
func (n *Net) takeQdiscs(d *Device) devQdiscs {
	old := devQdiscs{all: slices.Clone(n.qdiscs), children: d.Children, tree: d.Tree, root: d.Root, kind: d.RootKind, handle: d.RootHandle, rootStab: d.RootStab}
	n.qdiscs = slices.DeleteFunc(n.qdiscs, func(q *Qdisc) bool {
		mine := q.dev == d && !q.retiring // a deactivated tree is the graft's
		if mine {
			old.qdiscs = append(old.qdiscs, q)
		}
		return mine
	})
	if d.RootKind == "mqprio" || d.Root != nil && d.Root.setsTC {
		old.destroy = func() { d.setNumTC(0) } // mqprio_destroy, taprio_destroy's netdev_reset_tc
	}
	d.Root, d.Children, d.Tree, d.RootKind, d.RootHandle = nil, nil, nil, "", tc.Unspec
	for _, txq := range d.Queues {
		old.txq = append(old.txq, txq.qdisc)
		txq.qdisc = nil
	}
	return old
}

// put is qdisc_put on qdiscs taken off their device.
func (old devQdiscs) put() {
	for _, q := range old.qdiscs {
		q.watchdog.Cancel()
		q.timer.Cancel()
		q.dead = true
	}
	if old.destroy != nil {
		old.destroy()
	}
}

// restoreQdiscs puts d's taken qdiscs back, as they were (any qdisc
// made for d since must have gone: detachQdiscs).
func (n *Net) restoreQdiscs(d *Device, old devQdiscs) {
	n.qdiscs = old.all
	d.Root, d.Children, d.Tree, d.RootKind, d.RootHandle, d.RootStab = old.root, old.children, old.tree, old.kind, old.handle, old.rootStab
	for i, txq := range d.Queues {
		txq.qdisc = old.txq[i]
	}
}

// attachRoot builds the root words name: the kernel's default (dflt,
// qdisc_create_dflt's handle 0:) or tc's.
func (n *Net) attachRoot(d *Device, words []string, dflt bool) error {
	cmd, err := ParseRootQdisc(d.Name, words)
	if err != nil {
		return fmt.Errorf("qdisc %q: %w", strings.Join(words, " "), err)
	}
	// qdisc_create: a qdisc made by tc gets the handle given or the next
	// free automatic one; the defaults (qdisc_create_dflt) keep 0:.
	handle := cmd.Handle
	if !dflt && handle == tc.Unspec {
		if handle, err = n.allocHandle(d); err != nil {
			return err
		}
	}
	d.RootHandle = handle
	if err := checkStab(cmd.Stab); err != nil {
		return err
	}
	d.RootStab = cmd.Stab // shown; applied only by a root that is a Qdisc
	kind, opts := cmd.Kind, cmd.Options
	switch kind {
	case "noqueue":
		if len(opts) > 0 {
			return fmt.Errorf("noqueue takes no options, got %q", opts[0])
		}
		d.RootKind = "noqueue"
		return nil
	case "mq":
		if len(d.Queues) < 2 {
			return fmt.Errorf("mq needs a multiqueue device (this one has %d queue)", len(d.Queues))
		}
		child := opts
		if len(child) == 0 {
			child = []string{"pfifo_fast"}
		}
		return n.attachPerQueue(d, "mq", child, "", 0)
	case "mqprio":
		o, err := parseMQPrio(opts)
		if err != nil {
			return err
		}
		if err := d.mqprioInit(o); err != nil {
			return err
		}
		// get_default_qdisc_ops: the default qdisc on every queue.
		if err := n.attachPerQueue(d, "mqprio", []string{"pfifo_fast"}, "", 0); err != nil {
			return err
		}
		d.mqprioApply(o)
		return nil
	}
	if child, ok := qdisc.MultiQueueChild(kind); ok {
		// An mq-style root (cake_mq): one child per queue, sharing the
		// root's options through a group. mq_init_common refuses a
		// device that is not multiqueue, as mq_init does (EOPNOTSUPP).
		if len(d.Queues) < 2 {
			return qdisc.Refusef(kind, "needs a multiqueue device, this one has %d queue (mq_init_common: Operation not supported)", len(d.Queues))
		}
		group := fmt.Sprintf("%s/%d", d.Name, groupSeq.Add(1))
		return n.attachPerQueue(d, kind, append([]string{child}, opts...), group, len(d.Queues))
	}
	var one *TxQueue
	if len(d.Queues) == 1 {
		one = d.Queues[0]
	}
	q, err := n.newQdisc(d, append([]string{kind}, opts...), qdiscPlace{handle: handle, parent: tc.Root, slot: "8001:", one: one})
	if err != nil {
		return err
	}
	q.stab = cmd.Stab
	d.RootKind, d.Root = q.Kind, q
	for _, txq := range d.Queues {
		txq.qdisc = q
	}
	return nil
}

// attachPerQueue is mq_init + mq_attach: a child per TX queue, each
// TCQ_F_ONETXQUEUE on its own queue. The children are qdisc_create_dflt's:
// handle 0:, parent the root's class for the queue (MAJ:queue+1).
func (n *Net) attachPerQueue(d *Device, root string, child []string, group string, groupSize int) error {
	d.RootKind = root
	for i, txq := range d.Queues {
		q, err := n.newQdisc(d, child, qdiscPlace{handle: tc.Unspec, parent: tc.MakeHandle(d.RootHandle.Major(), uint16(i+1)),
			slot: fmt.Sprintf("8001:%x", i+1), one: txq, group: group, groupSize: groupSize})
		if err != nil {
			return err
		}
		txq.qdisc = q
		d.Children = append(d.Children, q)
	}
	return nil
}

// Qdiscs returns every qdisc of the host in creation order.
func (n *Net) Qdiscs() []*Qdisc { return n.qdiscs }

// countDrop accounts a dropped packet by reason.
func (n *Net) countDrop(r skb.DropReason) {
	if r == skb.DropNone {
		r = skb.DropQdiscDrop
	}
	n.Drops[r]++
}

// kfreeSkb is kfree_skb_reason: count the drop, uncharge, free.
func (n *Net) kfreeSkb(c *sim.CPU, s *skb.SKB, reason skb.DropReason) {
	n.Pool.SetReason(s, reason)
	if n.localDrop(s) {
		n.freeSkb(c, s)
		return
	}
	n.countDrop(reason)
	if n.Hooks.Drop != nil {
		n.Hooks.Drop(c, s, reason)
	}
	n.freeSkb(c, s)
}

// kfreeSkbList frees a to_free list after the locks are dropped. With
// Cfg.BulkFreeList it is kfree_skb_list_reason (net/core/skbuff.c,
// eedade12f4cb, 6.3): skb_release_all of each and its sk_buff into an
// array of KFREE_SKB_BULK_SIZE given back with one kmem_cache_free_bulk
// when full and once at the end (kfree_skb_add_bulk; an fclone is freed
// alone, __kfree_skb). Its callers (6.12 net/core/dev.c __dev_xmit_skb,
// and net_tx_action with the thread's dequeue-drop patch) pass one
// reason for the whole list, tcf_get_drop_reason(to_free): the list's
// head, which __qdisc_drop and qdisc_dequeue_drop push in front, i.e.
// the skb dropped last (the model's list appends: its tail), and every
// skb is traced and counted with it. Without BulkFreeList each is a
// kfree_skb of its own with its own reason: tcf_kfree_skb_list
// (net-next's dequeue-drops series, "each skb might have a different
// drop reason") and kfree_skb_list before 6.3.
func (n *Net) kfreeSkbList(c *sim.CPU, l *skb.List) {
	if !n.Cfg.BulkFreeList {
		n.kfreeSkbEach(c, l)
		return
	}
	if l.Tail == nil {
		return
	}
	reason := n.Pool.Reason(l.Tail) // tcf_get_drop_reason(to_free)
	sd := &n.sd[c.ID]
	bulk := sd.bulkRefs[:0]
	for s := l.Pop(); s != nil; s = l.Pop() {
		n.Pool.SetReason(s, reason)
		n.countFreed(c, s)
		ref, ok := n.releaseAllButSkbuff(c, s)
		if !ok { // kfree_skb_add_bulk: "if SKB is a clone, don't handle this case"
			continue
		}
		if bulk = append(bulk, ref); len(bulk) == kfreeSkbBulkSize {
			n.kmemCacheFreeBulk(c, bulk)
			bulk = bulk[:0]
		}
	}
	if len(bulk) > 0 {
		n.kmemCacheFreeBulk(c, bulk)
	}
	sd.bulkRefs = bulk[:0]
}

// kfreeSkbEach frees every skb of l with a kfree_skb_reason of its own.
func (n *Net) kfreeSkbEach(c *sim.CPU, l *skb.List) {
	for s := l.Pop(); s != nil; s = l.Pop() {
		n.countFreed(c, s)
		n.freeSkb(c, s)
	}
}

// countFreed counts a to_free skb's drop by its reason (the trace hook).
func (n *Net) countFreed(c *sim.CPU, s *skb.SKB) {
	if n.localDrop(s) {
		return
	}
	r := n.Pool.Reason(s)
	n.countDrop(r)
	if n.Hooks.Drop != nil {
		n.Hooks.Drop(c, s, r)
	}
}

// consumeSkb frees a transmitted skb that leaves the model's view as a
// plain consume_skb (veth's peer receive, whose stack the model stops
// at).
func (n *Net) consumeSkb(c *sim.CPU, s *skb.SKB) {
	n.transmitted(c, s)
	n.freeSkb(c, s)
}

// transmitted counts s as sent and tells its owner.
func (n *Net) transmitted(c *sim.CPU, s *skb.SKB) {
	if n.Hooks.Complete != nil {
		n.Hooks.Complete(c, s)
	}
	n.TxPkts++
	n.TxBytes += uint64(s.Len)
	if o, ok := n.Pool.Owner(s).(TxOwner); ok {
		o.Transmitted(c, s)
	}
}

// napiConsumeSkb is napi_consume_skb with a NAPI budget (a NIC's TX
// completion in its poll): skb_release_all, then napi_skb_cache_put of
// the sk_buff on this CPU; an fclone (TCP's clone) goes to __kfree_skb.
// The budget-0 fallback (dev_consume_skb_any, netpoll) does not occur:
// every driver's Poll runs in NAPI.
func (n *Net) napiConsumeSkb(c *sim.CPU, s *skb.SKB) {
	n.transmitted(c, s)
	if n.Cfg.TxDeferFree && int(s.SenderCPU) != c.ID && !n.fclone(s) {
		// "if (skb->alloc_cpu != smp_processor_id() && !skb_shared(skb))"
		n.skbReleaseHeadState(c, s)
		n.skbAttemptDeferFree(c, s)
		return
	}
	if ref, ok := n.releaseAllButSkbuff(c, s); ok { // "if SKB is a clone, don't handle this case": __kfree_skb
		n.napiSkbCachePut(c, ref)
	}
}

// FCloneOwner is an optional skb.Owner extension: FClones says the
// owner's skbs are fclones (skb->fclone != SKB_FCLONE_UNAVAILABLE): TCP's
// data, made by tcp_stream_alloc_skb's alloc_skb_fclone and sent as
// __tcp_transmit_skb's clone. napi_consume_skb and kfree_skb_add_bulk
// free those with __kfree_skb, outside their sk_buff caches.
type FCloneOwner interface {
	FClones() bool
}

// fclone is whether s is an fclone.
func (n *Net) fclone(s *skb.SKB) bool {
	o, ok := n.Pool.Owner(s).(FCloneOwner)
	return ok && o.FClones()
}

// freeSkb is __kfree_skb: skb_release_all, then kfree_skbmem (the
// sk_buff back to its slab on its own). An fclone is kfreeFClone.
func (n *Net) freeSkb(c *sim.CPU, s *skb.SKB) {
	if ref, ok := n.releaseAllButSkbuff(c, s); ok {
		c.Spend(min(n.E.Costs.KfreeSkbmem, n.E.Costs.KfreeSkb))
		n.freeSkbuff(c, ref)
	}
}

// releaseAllButSkbuff is the part every free path shares: an fclone is
// freed whole (kfreeFClone) and false returned; any other skb gets
// skb_release_all and goes back to the pool, and true says its sk_buff,
// whose slab record it returns (skb.SKB.Skbuff), is the caller's to
// dispose of (kfree_skbmem, napi_skb_cache_put, or a
// kmem_cache_free_bulk array).
func (n *Net) releaseAllButSkbuff(c *sim.CPU, s *skb.SKB) (uint32, bool) {
	if n.fclone(s) {
		n.kfreeFClone(c, s)
		return 0, false
	}
	head, ref := s.Head, s.Skbuff
	n.skbReleaseAll(c, s)
	n.Pool.Put(s)
	n.freeHead(c, head) // after the pool's Put: a wait on a list_lock finds the skb gone
	return ref, true
}

// kfreeFClone is __kfree_skb of TCP's clone while its original waits in
// the retransmit queue for its ACK: skb_release_head_state runs the
// destructor (tcp_wfree); skb_release_data's atomic_sub_return on the
// shared info's dataref leaves the head to the original, and
// kfree_skbmem's refcount_dec_and_test on fclone_ref leaves the
// sk_buff pair to it (net/core/skbuff.c). The original's free, when
// tcp_clean_rtx_queue takes it, is the whole kfree_skb (the workload's
// ACK processing). An ACK processed before the clone's completion would
// make the clone's free the whole one; the model does not track that
// order.
func (n *Net) kfreeFClone(c *sim.CPU, s *skb.SKB) {
	n.skbReleaseHeadState(c, s)
	c.Spend(2 * n.E.Costs.AtomicOp)
	n.Pool.Put(s)
}

// skbReleaseAll is skb_release_all: skb_release_head_state, then
// skb_release_data: all of kfree_skb but the sk_buff's own slab free.
func (n *Net) skbReleaseAll(c *sim.CPU, s *skb.SKB) {
	n.skbReleaseHeadState(c, s)
	c.Spend(n.releaseDataCost())
}

// releaseDataCost is what kfree_skb costs beyond the destructor but the
// sk_buff's own slab free (kfree_skbmem): skb_release_data and the rest
// of skb_release_head_state.
func (n *Net) releaseDataCost() int64 {
	return max(n.E.Costs.KfreeSkb-n.E.Costs.KfreeSkbmem, 0)
}

// skbReleaseHeadState is skb_release_head_state's destructor call
// (sock_wfree, tcp_wfree): an indirect call; under retpoline it is
// expensive unless INDIRECT_CALL_3 hits. Its other work is priced in
// kfree_skb.
func (n *Net) skbReleaseHeadState(c *sim.CPU, s *skb.SKB) {
	o := n.Pool.Owner(s)
	if o == nil {
		return
	}
	c.Spend(n.destructorCost())
	o.Release(c, s)
}

// destructorCost is one call of an skb's destructor: an indirect call,
// expensive under retpoline unless INDIRECT_CALL_3 hits.
func (n *Net) destructorCost() int64 {
	if n.Cfg.SockWfree == CallRetpoline {
		return n.E.Costs.DestructorRetpoline
	}
	return n.E.Costs.Destructor
}

// The sk_buff caches of net/core/skbuff.c.
const (
	napiSkbCacheSize = 64                   // NAPI_SKB_CACHE_SIZE: a CPU's napi_alloc_cache skb_cache
	napiSkbCacheBulk = 16                   // NAPI_SKB_CACHE_BULK: napi_skb_cache_get's refill
	napiSkbCacheHalf = napiSkbCacheSize / 2 // NAPI_SKB_CACHE_HALF: what a full cache flushes
	kfreeSkbBulkSize = 16                   // KFREE_SKB_BULK_SIZE: kfree_skb_list_reason's array
)

// SkbCacheStat is one CPU's napi_alloc_cache traffic: sk_buffs put by
// napi_consume_skb and taken by napi_build_skb, and the slab calls
// behind them (kmem_cache_free_bulk of a full cache's half, or with
// Cfg.KfreeSkbDefer of all of it and __kfree_skb_flush's rest;
// kmem_cache_alloc_bulk of an empty one's refill).
type SkbCacheStat struct {
	Puts, Gets, Flushes, Refills uint64
}

// SkbCache is CPU cpu's napi_alloc_cache counters.
func (n *Net) SkbCache(cpu int) SkbCacheStat { return n.sd[cpu].skbCacheStat }

// napiSkbCachePut is napi_skb_cache_put on c: the sk_buff (its slab
// record, ref) into the CPU's cache; a full cache gives its upper half
// back to the slab in one kmem_cache_free_bulk. With Cfg.KfreeSkbDefer
// it is 4.5-5.11's _kfree_skb_defer: a full cache gives all of it back.
func (n *Net) napiSkbCachePut(c *sim.CPU, ref uint32) {
	sd := &n.sd[c.ID]
	c.Spend(n.E.Costs.SkbCachePut)
	sd.skbCache = append(sd.napiSkbCache(), ref)
	sd.skbCacheStat.Puts++
	if len(sd.skbCache) == napiSkbCacheSize {
		keep := napiSkbCacheHalf
		if n.Cfg.KfreeSkbDefer {
			keep = 0
		}
		n.skbCacheFreeBulk(c, keep)
	}
}

// napiSkbCache is the CPU's skb_cache, made at its full size on first
// use (a CPU that never completes a packet keeps none).
func (sd *softnetData) napiSkbCache() []uint32 {
	if sd.skbCache == nil {
		sd.skbCache = make([]uint32, 0, napiSkbCacheSize)
	}
	return sd.skbCache
}

// kfreeSkbFlush is __kfree_skb_flush (4.5-5.11, net/core/skbuff.c): what
// the CPU's cache holds back to the slab in one kmem_cache_free_bulk.
func (n *Net) kfreeSkbFlush(c *sim.CPU) {
	if len(n.sd[c.ID].skbCache) > 0 {
		n.skbCacheFreeBulk(c, 0)
	}
}

// skbCacheFreeBulk gives the sk_buffs of c's napi_alloc_cache above keep
// back to the slab in one kmem_cache_free_bulk.
func (n *Net) skbCacheFreeBulk(c *sim.CPU, keep int) {
	sd := &n.sd[c.ID]
	sd.skbCacheStat.Flushes++
	flush := sd.skbCache[keep:]
	sd.skbCache = sd.skbCache[:keep]
	n.kmemCacheFreeBulk(c, flush)
}

// napiSkbCacheGet is napi_skb_cache_get on c, napi_build_skb's sk_buff,
// by its slab record: from the CPU's cache (its cost is the caller's),
// refilled by one kmem_cache_alloc_bulk of NAPI_SKB_CACHE_BULK when
// empty. With Cfg.KfreeSkbDefer it is build_skb's kmem_cache_alloc of
// one sk_buff (before 5.12 no allocation took from the cache).
func (n *Net) napiSkbCacheGet(c *sim.CPU) uint32 {
	if n.Cfg.KfreeSkbDefer {
		c.Spend(n.E.Costs.KfreeSkbmem) // priced as the single free: see costs.go
		return n.allocSkbuff(c)
	}
	sd := &n.sd[c.ID]
	if len(sd.skbCache) == 0 {
		c.Spend(n.E.Costs.SlabBulk * napiSkbCacheBulk)
		sd.skbCache = sd.napiSkbCache()
		for range napiSkbCacheBulk {
			sd.skbCache = append(sd.skbCache, n.allocSkbuff(c))
		}
		sd.skbCacheStat.Refills++
	}
	ref := sd.skbCache[len(sd.skbCache)-1]
	sd.skbCache = sd.skbCache[:len(sd.skbCache)-1]
	sd.skbCacheStat.Gets++
	return ref
}

// kmemCacheFreeBulk is kmem_cache_free_bulk of sk_buffs, by their slab
// records: the per-object work priced flat, the slab's slow paths by
// skbuff_head_cache when the model follows it.
func (n *Net) kmemCacheFreeBulk(c *sim.CPU, refs []uint32) {
	c.Spend(n.E.Costs.SlabBulk * int64(len(refs)))
	if n.skbuff == nil {
		return
	}
	sd := &n.sd[c.ID]
	ids := sd.bulkIDs[:0]
	for _, r := range refs {
		if r != 0 {
			ids = append(ids, int32(r-1))
		}
	}
	sd.bulkIDs = ids // kept before the frees' sync points
	if len(ids) > 0 {
		n.skbuff.FreeBulk(c, ids)
	}
}

// AllocSkb takes a fresh skb for a sender on CPU c.
func (n *Net) AllocSkb(c *sim.CPU) *skb.SKB {
	s := n.Pool.Get()
	s.SenderCPU = int16(c.ID)
	n.ownSkb(c, s)
	s.Born = c.Now()
	s.Sock = -1
	s.GSOSegs = 1
	n.unoffered++
	return s
}

// InFlight is the number of packets offered and not yet transmitted or
// dropped, by where they are: the host's places, the drivers' rings
// (driver: taken by a driver's xmit, not yet completed), and cpu, the
// rest: on a CPU between two places when the run stopped (a sender's skb
// before __dev_queue_xmit, a drained batch, a dequeued bulk, a to_free
// list not yet freed). The places sum to InFlightPackets; a cpu count
// that grows with the run's length is a leak.
func (n *Net) InFlight() (where map[string]int64) {
	where = map[string]int64{}
	if n.rxDevs != nil {
		where["rx_ring"] = n.rxHeld
	}
	for _, q := range n.qdiscs {
		where["qdisc"] += int64(q.held)
		where["requeued"] += int64(q.gsoSkb.Len)
		if q.skbBadTxq != nil {
			where["requeued"]++
		}
		where["defer_list"] += int64(q.deferLen())
		where["to_free"] += int64(q.toFree.Len)
	}
	if n.rtnlFree.Len > 0 {
		where["rtnl_kfree_skbs"] = int64(n.rtnlFree.Len)
	}
	if n.backlogHeld > 0 {
		where["backlog"] = n.backlogHeld
	}
	if h := n.ifbHeld(); h > 0 {
		where["ifb"] = h
	}
	n.Pool.Each(func(s *skb.SKB) {
		if s.Holder == driverHolder {
			where["driver"]++
		}
	})
	// The places hold the skbs of received packets an ifb's path
	// carries for the host's sockets too (local.go), which are not
	// offered: "cpu" is what is left of both.
	rest := n.InFlightPackets() + int64(len(n.localSkbs))
	for _, v := range where {
		rest -= v
	}
	where["cpu"] = rest
	return where
}

// InFlightPackets is every skb offered and not yet transmitted or
// dropped: the pool's live count, which no counter of the TX path feeds.
// Frames a NIC wrote into an RX ring are offered and in flight before
// they become skbs.
func (n *Net) InFlightPackets() int64 { return int64(n.Pool.Live()) - n.unoffered + n.rxHeld }

// DroppedPackets is the sum of drops over all reasons.
func (n *Net) DroppedPackets() uint64 {
	var t uint64
	for _, v := range n.Drops {
		t += v
	}
	return t
}

// CheckAccounting verifies offered = tx + dropped + in flight and that
// every qdisc's own counters agree with what the host handed it.
func (n *Net) CheckAccounting() error {
	inflight := n.InFlightPackets()
	if inflight < 0 || n.Offered != n.TxPkts+n.DroppedPackets()+uint64(inflight) {
		return fmt.Errorf("accounting: offered %d != tx %d + dropped %d + in flight %d",
			n.Offered, n.TxPkts, n.DroppedPackets(), inflight)
	}
	located := int64(n.rtnlFree.Len) + n.rxHeld + n.ifbHeld()
	for _, q := range n.qdiscs {
		st := q.Ops.Stats()
		held, bytes := q.held, q.heldBytes
		what := "holds"
		if q.Classful() {
			held, bytes = q.treeHeld()
			what = "with its leaves holds"
		}
		// A dequeue the run's end caught midway may hold fewer: what it
		// took off its queues is still the host's to take back.
		short := q.treeDequeuing() && st.Qlen <= held && st.Backlog <= bytes
		if (st.Qlen != held || st.Backlog != bytes) && !short {
			return fmt.Errorf("accounting: qdisc %s reports qlen %d backlog %d, but %s %d packets / %d bytes the host handed it",
				q.Name(), st.Qlen, st.Backlog, what, held, bytes)
		}
		located += int64(q.held + q.gsoSkb.Len + q.deferLen() + q.toFree.Len)
		if q.skbBadTxq != nil {
			located++
		}
	}
	if located > inflight+int64(len(n.localSkbs)) {
		return fmt.Errorf("accounting: %d packets sit in qdiscs but only %d are in flight", located, inflight)
	}
	if w := n.localWaiting(); n.localArrived != n.localDelivered+n.localDropped+n.localTCDropped+n.localOut+w {
		return fmt.Errorf("accounting: local receive: arrived %d != delivered %d + dropped %d (backlog) + %d (tc) + sent out %d + waiting %d",
			n.localArrived, n.localDelivered, n.localDropped, n.localTCDropped, n.localOut, w)
	}
	return nil
}

// touchSkb prices reading an skb's lines on CPU c: they were last written
// on another CPU (the sender's, usually).
func (n *Net) touchSkb(c *sim.CPU, s *skb.SKB) { n.touchSkbPrefetched(c, s, false) }

// touchSkbPrefetched is touchSkb for an skb of a drained defer list after
// the first: the llist walk prefetched its first line (prefetch(next))
// while the previous skb was enqueued, and its second half too
// (prefetch(&next->priority)) with Config.PrefetchPriority. The lines
// not prefetched stall c now; the prefetched ones are still on their
// way, and it returns their transfer's latency for stallPrefetched to
// set against the previous skb's enqueue (both lines travel at once).
func (n *Net) touchSkbPrefetched(c *sim.CPU, s *skb.SKB, prefetched bool) (inFlight int64) {
	costs := n.E.Costs
	if s.TailSplit() {
		// The first line is here already (a dequeue read the cb); the
		// rest come from where they stayed.
		var d int64
		if int(s.TailCPU) != c.ID {
			d = (costs.SkbLines - 1) * n.tailLine(c, s)
		}
		if int(s.HotCPU) != c.ID {
			d += n.skbLine(c, s)
		}
		n.stallSkbLines(c, d)
		if int(s.HotCPU) == c.ID {
			s.JoinTail() // counted once, when the dequeue took it
		} else {
			n.ownSkb(c, s)
		}
		return 0
	}
	if int(s.HotCPU) == c.ID {
		return 0
	}
	line := n.skbLine(c, s)
	ahead := int64(0)
	if prefetched {
		ahead = min(costs.SkbLines, 1)
		if n.Cfg.PrefetchPriority {
			ahead = costs.SkbLines
		}
	}
	n.stallSkbLines(c, (costs.SkbLines-ahead)*line)
	n.ownSkb(c, s)
	if ahead > 0 {
		return line
	}
	return 0
}

// stallPrefetched stalls c for what the prefetches of a drained defer
// list did not hide. The kernel's loop prefetches skb i+1 and then
// enqueues skb i, so skb i+1's lines have that enqueue's time to arrive:
// each stalls only for the part of its transfer that outlasts one
// enqueue. since is when the batch's enqueue began; inFlight holds the
// latencies touchSkbPrefetched returned, one a prefetched skb.
func (n *Net) stallPrefetched(c *sim.CPU, since sim.Time, skbs int, inFlight []int64) {
	if len(inFlight) == 0 { // a prefetched skb is never the batch's only one
		return
	}
	per := int64(c.Now()-since) / int64(skbs) // one skb's enqueue
	var d int64
	for _, l := range inFlight {
		d += max(0, l-per)
	}
	n.stallSkbLines(c, d)
}

// stallSkbLines stalls c for d ns of skb line transfers, counted apart in
// the drain profile.
func (n *Net) stallSkbLines(c *sim.CPU, d int64) {
	if pr := n.Prof; pr != nil {
		pr.SkbLineNs[pr.Cur] += d
	}
	c.Stall(d)
}

// ownSkb records that CPU c now holds s's lines (it built or read
// them): c's count of skbs handled moves on, so skbLine can tell later
// whether c has evicted them since.
func (n *Net) ownSkb(c *sim.CPU, s *skb.SKB) {
	sd := &n.sd[c.ID]
	sd.skbSeq++
	s.HotCPU, s.HotSeq = int16(c.ID), uint32(sd.skbSeq)
	s.JoinTail()
}

// skbLine is the price of one of s's lines read on CPU c. A line the
// holder still has in its L2 is a cross-core transfer by distance; one
// it has evicted since (it handled more than l2_skbs skbs after taking
// s: an skb that waited at the head of a deep queue) comes from the
// socket's LLC (line_llc). Across sockets it stays a remote transfer.
func (n *Net) skbLine(c *sim.CPU, s *skb.SKB) int64 {
	return n.lineFrom(c, int(s.HotCPU), n.evicted(s))
}

// tailLine is skbLine for the lines a split skb left with TailCPU.
// Whether they had left its L2 is as it was at the split: the driver
// reads them a moment later, in the same qdisc_restart, unless the skb
// was requeued (gso_skb, skb_bad_txq), which the model lets pass.
func (n *Net) tailLine(c *sim.CPU, s *skb.SKB) int64 {
	return n.lineFrom(c, int(s.TailCPU), s.TailLLC())
}

// lineFrom is skbLine for lines CPU holder took, evicted since from its
// L2 or not.
func (n *Net) lineFrom(c *sim.CPU, holder int, evicted bool) int64 {
	costs := n.E.Costs
	dist := n.E.Distance(holder, c.ID)
	if evicted && (dist == sim.DistSMT || dist == sim.DistSocket) {
		return costs.LineLLC
	}
	return costs.Line(dist)
}

// evicted says whether the CPU holding s's lines has handled more than
// l2_skbs skbs since it took them.
func (n *Net) evicted(s *skb.SKB) bool {
	return uint32(n.sd[s.HotCPU].skbSeq)-s.HotSeq > uint32(n.E.Costs.L2Skbs)
}

// touchSkbQdisc prices a qdisc reading an skb it dequeues or drops,
// under the root lock. The skb was last written by the CPU that enqueued
// it (flow_queue_add's skb->next), so on a root qdisc fed by other CPUs
// these are transfers: dequeue_head reads skb->next and qdisc_pkt_len
// the cb (line 0), cake_dequeue_one and cake_drop skb->truesize, and
// qdisc_bstats_update skb_is_gso through skb->head/end (line 3): the
// skb_lines the model gives an skb. The driver then finds them hot.
func (n *Net) touchSkbQdisc(c *sim.CPU, s *skb.SKB) { n.touchSkb(c, s) }

// touchSkbDequeue prices a qdisc reading an skb it dequeues, under the
// root lock. Its loads of the skb's lines overlap where their addresses
// come from the skb pointer alone: skb->next and the cb (line 0) with
// skb->truesize (cake_dequeue_one) or fq's and codel's prefetch of
// skb->end (line 3). What serialises a dequeue is qdisc_bstats_update
// reaching skb_shinfo through skb->head/end, a load that waits for line
// 3: skb_lines' transfers (touchSkbQdisc), and the driver finds it all
// hot. With pkt_segs (the segment count cached in the cb, 2773cb0b3120:
// "Avoid up to two cache line misses") the dequeue waits one transfer
// and the driver's own read of skb_shinfo pays the rest (the skb's tail
// is left where it was, SplitTail), whatever the qdisc reads.
func (n *Net) touchSkbDequeue(c *sim.CPU, s *skb.SKB) {
	costs := n.E.Costs
	if !n.Cfg.PktSegs || int(s.HotCPU) == c.ID || s.TailSplit() || costs.SkbLines < 2 {
		n.touchSkbQdisc(c, s)
		return
	}
	n.stallSkbLines(c, n.skbLine(c, s))
	holder, llc := s.HotCPU, n.evicted(s)
	n.ownSkb(c, s)
	s.SplitTail(holder, llc)
}

// touchSkbDrop prices a qdisc reading an skb it drops, under the root
// lock: one transfer. A drop reads skb->next and the cb (dequeue_head,
// qdisc_pkt_len, the drop reason) and at most skb->truesize
// (cake_drop's and cake_dequeue_one's memory accounting), loads whose
// addresses all come from the skb pointer, so the core has them in
// flight together; no drop reaches skb_shinfo.
func (n *Net) touchSkbDrop(c *sim.CPU, s *skb.SKB) {
	if int(s.HotCPU) == c.ID || s.TailSplit() {
		n.touchSkbQdisc(c, s)
		return
	}
	n.stallSkbLines(c, min(n.E.Costs.SkbLines, 1)*n.skbLine(c, s))
	n.ownSkb(c, s)
}

// LoseToDeadPlugins frees every packet a dead plugin held (a qdisc's, or
// a device's ring when its driver died) as LOST_TO_PLUGIN, so the
// accounting still balances after a plugin crash.
func (n *Net) LoseToDeadPlugins() {
	type deader interface{ PluginDead() error }
	isDead := func(v any) bool {
		d, ok := v.(deader)
		return ok && d.PluginDead() != nil
	}
	dead := map[int32]*Qdisc{}
	for _, q := range n.qdiscs {
		if isDead(q.Ops) {
			dead[q.ID] = q
		}
	}
	deadDrv := false
	for _, d := range n.Devs {
		deadDrv = deadDrv || isDead(d.Drv)
	}
	if len(dead) == 0 && !deadDrv {
		return
	}
	var lost []*skb.SKB
	n.Pool.Each(func(s *skb.SKB) {
		if q := dead[s.Holder]; q != nil {
			q.held--
			q.heldBytes -= int64(s.QdiscPktLen())
			lost = append(lost, s)
		} else if s.Holder == driverHolder && deadDrv {
			lost = append(lost, s)
		}
	})
	for _, s := range lost {
		s.Holder = 0
		n.Pool.SetReason(s, skb.DropLostToPlugin)
		n.countDrop(skb.DropLostToPlugin)
		n.Pool.Put(s)
	}
}
