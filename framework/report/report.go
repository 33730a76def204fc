// Package report is what a run gives back: one Report value with stable
// JSON keys (documented in docs/report.md) and text renderings in the
// layouts kernel developers read every day (perf lock contention,
// bpftrace hist, tc -s -d qdisc show, ethtool -S).
//
// Counts (offered_packets, tx_packets, drops, ...) cover the whole run, so
// the accounting identity holds exactly; rates (tx_pps, tx_bps, cpu_*)
// cover the measurement window after warmup.
package report

import "encoding/json"

// Report is one run's result.
type Report struct {
	Name string `json:"name,omitempty"` // variant name
	// Script is the script the run came from, as txlab run names it
	// ("scripts/e2.tengo"); empty for a run from flags.
	Script  string            `json:"script,omitempty"`
	Profile string            `json:"profile"`
	Seed    uint64            `json:"seed"`
	Setup   Setup             `json:"setup"`
	Config  map[string]string `json:"config"` // every TX-path toggle
	Costs   map[string]int64  `json:"costs"`  // the cost table used

	DurationNs int64 `json:"duration_ns"` // simulated, warmup included
	WarmupNs   int64 `json:"warmup_ns"`
	WindowNs   int64 `json:"window_ns"` // measurement window

	OfferedPackets  uint64            `json:"offered_packets"`
	TxPackets       uint64            `json:"tx_packets"`
	TxBytes         uint64            `json:"tx_bytes"`
	DroppedPackets  uint64            `json:"dropped_packets"`
	InFlightPackets int64             `json:"in_flight_packets"`
	Drops           map[string]uint64 `json:"drops"` // reason -> count
	InFlightWhere   map[string]int64  `json:"in_flight_where"`
	AccountingOK    bool              `json:"accounting_ok"`
	AccountingError string            `json:"accounting_error,omitempty"`

	Window Window `json:"window"`

	TxPps          float64 `json:"tx_pps"` // simulated packets per simulated second
	TxBps          float64 `json:"tx_bps"` // bits per simulated second (frame bytes * 8)
	CPUNsPerPacket float64 `json:"cpu_ns_per_packet"`
	CPUBusyPct     float64 `json:"cpu_busy_pct"` // over all CPUs ("sy" in vmstat)

	// vmstat and mpstat over the window, as the kernel counts them: sy
	// (system + irq + softirq time; the model has no user time, so it
	// equals cpu_busy_pct), mpstat's %irq and %soft, id, r (the time
	// average of runnable tasks, running ones included), cs and in per
	// second.
	CPUSysPct           float64 `json:"cpu_sys_pct"`
	CPUIrqPct           float64 `json:"cpu_irq_pct"`
	CPUSoftPct          float64 `json:"cpu_soft_pct"`
	CPUIdlePct          float64 `json:"cpu_idle_pct"`
	RunnableAvg         float64 `json:"runnable_avg"`
	ContextSwitchesPerS float64 `json:"context_switches_per_s"`
	InterruptsPerS      float64 `json:"interrupts_per_s"`
	// LockCPUs is the CPU list the lock table was recorded on (perf
	// lock record -C), empty for every CPU.
	LockCPUs string `json:"lock_cpus,omitempty"`

	Counters map[string]uint64 `json:"counters"`
	Locks    []Lock            `json:"locks"`
	Queues   []Queue           `json:"queues"`
	// Ethtool is the device's `ethtool -S` as its driver names and
	// orders the lines (the ones the model counts), with each line's
	// rate over the window.
	Ethtool []EthtoolStat `json:"ethtool"`
	Qdisc   []Qdisc       `json:"qdisc"`
	Classes []Class       `json:"classes,omitempty"`
	Filters []Filters     `json:"filters,omitempty"`
	// Warnings are what tc printed as "Warning: ..." for the tc
	// commands of the run (the kernel's extack warnings).
	Warnings []string `json:"warnings,omitempty"`
	XmitNs   Hist     `json:"xmit_latency_ns"` // __dev_queue_xmit
	// DeferBatch is the llist's batches: the skbs each drainer took off
	// a defer_list with llist_del_all, over the window (llist kernels
	// only; "mean" is skbs).
	DeferBatch *Hist      `json:"defer_batch,omitempty"`
	Series     []Interval `json:"series"`
	CPUs       []CPU      `json:"cpus,omitempty"` // busy CPUs only
	Rx         *Rx        `json:"rx,omitempty"`   // the forward workload's receive side
	// Devices are a stacked host's devices (a bond, then its slaves),
	// each with its own queues, ethtool, qdiscs and classes; the
	// top-level ones are the bond's, the device the senders use.
	Devices []DeviceSection `json:"devices,omitempty"`
	// Links are ip -s link's drop columns of every device, in creation
	// order.
	Links []Link `json:"links,omitempty"`
	// Softnet is /proc/net/softnet_stat's row of each CPU that used its
	// softnet backlog or ran a NAPI poll (omitted when none did).
	Softnet []Softnet `json:"softnet,omitempty"`
	// Slabs are the SLUB caches senders' skb heads came from (omitted
	// when none did): their shape and CONFIG_SLUB_STATS counters.
	Slabs []SlabCache `json:"slabs,omitempty"`

	// NetifSchedule is __netif_schedule by caller (callers with calls
	// only), and NetTxAction what net_tx_action found, whole run.
	NetifSchedule []SchedCaller `json:"netif_schedule_callers"`
	NetTxAction   TxAction      `json:"net_tx_action"`

	// CPUProfile is where every CPU's busy time went over the window,
	// by what it was executing (perf record -a's overhead, folded into
	// the TX path's functions), most first.
	CPUProfile []ProfileRow `json:"cpu_profile,omitempty"`

	// tcp_stream: goodput over the window (all flows), the flows and the
	// path, and what the latency probes measured.
	GoodputBps *float64 `json:"goodput_bps,omitempty"`
	TCP        *TCP     `json:"tcp,omitempty"`
	Latency    *Latency `json:"latency,omitempty"`

	Events    uint64 `json:"events"`
	SimWallNs int64  `json:"sim_wall_ns"` // wall time spent simulating
	// PluginOverrides are the built-ins a plugin replaced in this run
	// ("qdisc fq_codel: /path/txlab-qdisc-fq_codel").
	PluginOverrides []string `json:"plugin_overrides,omitempty"`
	Error           string   `json:"error,omitempty"`
}

// Setup echoes what was simulated.
type Setup struct {
	Sockets        int     `json:"sockets"`
	CoresPerSocket int     `json:"cores_per_socket"`
	ThreadsPerCore int     `json:"threads_per_core"`
	CPUs           int     `json:"cpus"`
	CPU            string  `json:"cpu,omitempty"` // the processor's latencies when not the model's own (sim.CPUModels)
	Driver         string  `json:"driver"`
	Queues         int     `json:"queues"`
	RateBps        int64   `json:"rate_bps"`
	XPS            string  `json:"xps,omitempty"`      // the XPS_CPUS map when not the driver's (irq): cores, none
	IRQCPUs        string  `json:"irq_cpus,omitempty"` // --irq-cpus: where the queues' interrupts go, when not the driver's spread
	RingSize       int     `json:"ring_size"`
	Qdisc          string  `json:"qdisc"`
	Workload       string  `json:"workload"`
	Senders        int     `json:"senders"`
	Placement      string  `json:"placement"`
	LaunchNs       int64   `json:"launch_ns,omitempty"` // udp_stream: time between two senders' launches (0: together)
	PacketSize     int     `json:"packet_size"`         // UDP payload bytes
	Flows          int     `json:"flows"`
	OfferedPps     float64 `json:"offered_pps,omitempty"` // udp_rate and forward
	RxQueues       int     `json:"rx_queues,omitempty"`   // forward only
	RxPort         string  `json:"rx_port,omitempty"`     // forward: same or other
	Arrival        string  `json:"arrival,omitempty"`     // forward: constant or poisson
	// Bond is --bond's text: the senders transmit on its first bond,
	// over slaves of Driver.
	Bond string `json:"bond,omitempty"`
	// Ifb is --ifb's text: ifb devices mirred redirects to.
	Ifb string `json:"ifb,omitempty"`
	// Also are the sender groups beside the first (a script's
	// txlab.senders([...])): UDP senders under TCP flows, say.
	Also []SetupGroup `json:"also,omitempty"`
}

// SetupGroup is one more sender group on the host.
type SetupGroup struct {
	Workload   string  `json:"workload"` // udp_stream or udp_rate
	Senders    int     `json:"senders"`
	Placement  string  `json:"placement"`
	LaunchNs   int64   `json:"launch_ns,omitempty"`
	PacketSize int     `json:"packet_size"` // UDP payload bytes
	Flows      int     `json:"flows"`
	OfferedPps float64 `json:"offered_pps,omitempty"` // udp_rate
}

// Window are the counts within the measurement window.
type Window struct {
	OfferedPackets uint64            `json:"offered_packets"`
	TxPackets      uint64            `json:"tx_packets"`
	TxBytes        uint64            `json:"tx_bytes"`
	Drops          map[string]uint64 `json:"drops"`
	CPUBusyNs      int64             `json:"cpu_busy_ns"`
}

// SchedCaller is one caller of __netif_schedule and what its calls did:
// calls = skipped + already_sched + raised.
type SchedCaller struct {
	Caller       string `json:"caller"` // bql_wake, drv_wake, quota, requeue, missed, watchdog
	Calls        uint64 `json:"calls"`
	Skipped      uint64 `json:"skipped"`       // the fast path returned (defer_list not empty)
	AlreadySched uint64 `json:"already_sched"` // __QDISC_STATE_SCHED already set
	Raised       uint64 `json:"raised"`        // queued on this CPU's output_queue, NET_TX_SOFTIRQ raised
	// TxActionTakes are net_tx_action's root-lock takes, over the
	// window, of the qdiscs these calls queued, on the lock CPUs (the
	// perf lock record -C set, all CPUs without one); TxActionWaitNs
	// their wait from spin_lock to the grant: the net_tx_action row of
	// the perf lock table, split by what scheduled the qdisc.
	TxActionTakes  uint64 `json:"tx_action_takes"`
	TxActionWaitNs int64  `json:"tx_action_wait_ns"`
}

// TxAction is what net_tx_action found on the qdiscs it took off
// output_queue (each one under its root lock).
type TxAction struct {
	Qdiscs       uint64 `json:"qdiscs"`
	FoundRunning uint64 `json:"found_running"` // qdisc_run_begin failed: another CPU runs the qdisc
	Empty        uint64 `json:"empty"`         // ran it and found nothing to send
	Packets      uint64 `json:"packets"`       // packets its __qdisc_run dequeued
}

// ProfileRow is one activity of the CPU profile: WorkNs executing,
// SpinNs spinning on a lock it waited for, summed over every CPU.
type ProfileRow struct {
	Activity string `json:"activity"`
	WorkNs   int64  `json:"work_ns"`
	SpinNs   int64  `json:"spin_ns"`
}

// Lock is one perf-lock-contention row (one call site).
type Lock struct {
	Name        string `json:"name"`
	Acquired    uint64 `json:"acquired"`
	Contended   uint64 `json:"contended"`
	TotalWaitNs int64  `json:"total_wait_ns"`
	MaxWaitNs   int64  `json:"max_wait_ns"`
	AvgWaitNs   int64  `json:"avg_wait_ns"`
	HoldNs      int64  `json:"hold_ns"`
	// The waits perf lock records (qspinlock's contention_begin fires
	// only on the MCS path: a lone waiter on the pending bit is not
	// seen), a subset of the ones above.
	MCSContended   uint64 `json:"mcs_contended"`
	MCSTotalWaitNs int64  `json:"mcs_total_wait_ns"`
	MCSMaxWaitNs   int64  `json:"mcs_max_wait_ns"`
	MCSAvgWaitNs   int64  `json:"mcs_avg_wait_ns"`
}

// Queue is one TX queue: the stack's view plus the driver's ethtool -S.
type Queue struct {
	Txq       int     `json:"txq"`
	TxPackets uint64  `json:"tx_packets"`
	TxBytes   uint64  `json:"tx_bytes"`
	Stops     uint64  `json:"stops"`
	Wakes     uint64  `json:"wakes"`
	Requeues  uint64  `json:"requeues"`
	TxPps     float64 `json:"tx_pps"` // in the window
	TxBps     float64 `json:"tx_bps"` // in the window
	BQLLimit  uint32  `json:"bql_limit"`
	Inflight  uint32  `json:"bql_inflight"`
	// Sockets is how many udp_stream sockets have this queue cached
	// (sk_tx_queue_mapping) at the end: who sends where.
	Sockets int `json:"sockets"`
	// IRQCPU is the CPU the queue's interrupt vector is affine to
	// (/proc/irq/N/smp_affinity_list), where its TX completions run;
	// -1 for a queue without one (veth).
	IRQCPU  int  `json:"irq_cpu"`
	Ethtool []KV `json:"ethtool"`
}

// Qdisc is one qdisc as tc -s -d qdisc show prints it.
type Qdisc struct {
	Handle  string `json:"handle"`
	Parent  string `json:"parent"`
	Kind    string `json:"kind"`
	Options string `json:"options"`
	// Stab is the qdisc's size table as tc -d prints it
	// (print_size_table), "" without one.
	Stab           string  `json:"stab,omitempty"`
	SentPackets    uint64  `json:"sent_packets"`
	SentBytes      uint64  `json:"sent_bytes"`
	Dropped        uint64  `json:"dropped"`
	Overlimits     uint64  `json:"overlimits"`
	Requeues       uint64  `json:"requeues"`
	BacklogPackets int     `json:"backlog_packets"`
	BacklogBytes   int64   `json:"backlog_bytes"`
	DeferMax       int64   `json:"defer_max"` // largest defer_count seen
	XStats         []XStat `json:"xstats,omitempty"`
	// Invisible marks a leaf the kernel made by default under a class
	// (qdisc_create_dflt's pfifo, TCQ_F_INVISIBLE): `tc qdisc show`
	// leaves it out (the text report does), `tc qdisc show invisible`
	// lists it.
	Invisible bool `json:"invisible,omitempty"`
	// UnderClass marks a qdisc that is a class's leaf (not an mq
	// child): tc's refcnt of a root is per TX queue then.
	UnderClass bool `json:"-"`
}

// Class is one class as tc -s -d class show prints it.
type Class struct {
	ClassID string `json:"classid"`
	Parent  string `json:"parent"` // "root" or a classid
	Kind    string `json:"kind"`
	// Leaf is the handle of the class's leaf qdisc when it is not the
	// default's 0: (tcm_info: "leaf 10:").
	Leaf        string `json:"leaf,omitempty"`
	Options     string `json:"options"`
	SentPackets uint64 `json:"sent_packets"`
	SentBytes   uint64 `json:"sent_bytes"`
	// SentBps is the class's rate over the measurement window, in bits
	// per second of skb->len (what htb's rate and ceil count).
	SentBps    float64 `json:"sent_bps"`
	Dropped    uint64  `json:"dropped"`
	Overlimits uint64  `json:"overlimits"`
	// Requeues are the leaf's, for an mq class (mq_dump_class_stats);
	// 0 for other kinds, as their dumps leave them.
	Requeues       uint64 `json:"requeues"`
	BacklogPackets int    `json:"backlog_packets"`
	BacklogBytes   int64  `json:"backlog_bytes"`
	// Borrowed and Lended are htb's xstats borrows and lends (0 for other
	// kinds).
	Borrowed uint64  `json:"borrowed"`
	Lended   uint64  `json:"lended"`
	XStats   []XStat `json:"xstats,omitempty"`
}

// Filters are the tc filters attached at one qdisc or class, as `tc
// filter show dev eth0 parent PARENT` prints them.
type Filters struct {
	Parent string `json:"parent"`
	Text   string `json:"text"`
	// Stats says Text is `tc -s filter show`'s, with each action's
	// counters and times: clsact's and the ingress qdisc's blocks.
	Stats bool `json:"stats,omitempty"`
}

// Command is the tc command whose output Text is.
func (f Filters) Command() string {
	if f.Stats {
		return "tc -s filter show"
	}
	return "tc filter show"
}

// XStat is one qdisc-specific statistic: the number in JSON, and the
// value as tc -s prints it (with its unit, "64Kb", "5ms") in text.
// XStatInt is the integer xstat key of the qdisc, and whether it has it.
func (q Qdisc) XStatInt(key string) (int64, bool) {
	for _, x := range q.XStats {
		if x.Key == key {
			v, err := x.Value.Int64()
			return v, err == nil
		}
	}
	return 0, false
}

type XStat struct {
	Key   string      `json:"key"`
	Value json.Number `json:"value"`
	Text  string      `json:"-"`
}

// EthtoolStat is one line of `ethtool -S`: its value at the end, and
// its change per simulated second over the window (ethtool_stats.pl).
type EthtoolStat struct {
	Key   string  `json:"key"`
	Value uint64  `json:"value"`
	PerS  float64 `json:"per_s"`
}

// KV is one named value.
type KV struct {
	Key   string `json:"key"`
	Value int64  `json:"value"`
}

// Hist is a log2 histogram: bucket [Lo, Hi) holds Count values.
type Hist struct {
	Count   uint64   `json:"count"`
	MeanNs  float64  `json:"mean"`
	Buckets []Bucket `json:"buckets"`
}

// Bucket is one histogram bucket.
type Bucket struct {
	Lo    int64  `json:"lo"`
	Hi    int64  `json:"hi"`
	Count uint64 `json:"count"`
}

// Interval is one point of the time series.
type Interval struct {
	StartNs   int64   `json:"start_ns"`
	EndNs     int64   `json:"end_ns"`
	TxPackets uint64  `json:"tx_packets"`
	TxPps     float64 `json:"tx_pps"`
	TxBytes   uint64  `json:"tx_bytes"` // frame bytes the NIC completed in the interval
	TxBps     float64 `json:"tx_bps"`   // TxBytes * 8 per simulated second
	Offered   uint64  `json:"offered_packets"`
	Drops     uint64  `json:"dropped_packets"`
	Backlog   int64   `json:"backlog_packets"` // all qdiscs, at the end of the interval
	// DropsBy are the interval's drops by reason (none: omitted).
	DropsBy map[string]uint64 `json:"drops,omitempty"`
	// BlueP is cake's largest BLUE drop probability at the interval's
	// end, over every cake qdisc and tin (its blue_p_max_ppm xstats, in
	// [0, 1]); omitted without cake or while BLUE is quiet.
	BlueP float64 `json:"blue_p_max,omitempty"`
	// CoDelDropping is how many flows are in CoDel's dropping state at
	// the interval's end (codel_vars.dropping, cobalt_vars.dropping),
	// over every fq_codel and cake qdisc (their codel_dropping xstats);
	// omitted when none is.
	CoDelDropping int64 `json:"codel_dropping,omitempty"`
	// GoodputBps is tcp_stream's goodput in the interval, all flows.
	GoodputBps float64 `json:"goodput_bps,omitempty"`
	VMStat
}

// VMStat are vmstat's and mpstat's CPU columns over an interval.
type VMStat struct {
	SysPct   float64 `json:"cpu_sys_pct"`            // vmstat sy: system + irq + softirq
	IrqPct   float64 `json:"cpu_irq_pct"`            // mpstat %irq
	SoftPct  float64 `json:"cpu_soft_pct"`           // mpstat %soft
	IdlePct  float64 `json:"cpu_idle_pct"`           // vmstat id
	Runnable float64 `json:"runnable_avg"`           // vmstat r, averaged over the interval
	CSPerS   float64 `json:"context_switches_per_s"` // vmstat cs
	InPerS   float64 `json:"interrupts_per_s"`       // vmstat in
}

// CPU is one CPU's busy time in the window.
type CPU struct {
	CPU     int     `json:"cpu"`
	Socket  int     `json:"socket"`
	Core    int     `json:"core"` // the core's index within its socket (sysfs topology/core_id's role)
	BusyPct float64 `json:"busy_pct"`
	// mpstat -P's columns for this CPU over the window: %sys (busy
	// time outside interrupts: the tasks' system time and their
	// spinning), %irq (hard interrupts, the local timer's included),
	// %soft (softirqs, ksoftirqd's included) and %idle; the first three
	// add up to busy_pct.
	SysPct  float64 `json:"sys_pct"`
	IrqPct  float64 `json:"irq_pct"`
	SoftPct float64 `json:"soft_pct"`
	IdlePct float64 `json:"idle_pct"`
	// Tasks is how many of the workload's threads (not per-CPU kernel
	// threads) had this CPU as theirs at the window's end, running,
	// waiting or asleep: ps -eLo psr's count.
	Tasks int `json:"tasks,omitempty"`
}

// Rx is the forward workload's receive side: the RX port's queues as
// ethtool -S counts them and the model sees them, the port's drops, and
// softnet_stat per CPU.
type Rx struct {
	Device      string `json:"device"`
	Truesize    uint32 `json:"skb_truesize"` // of every received skb (napi_build_skb on the RX buffer)
	PortDropped KV     `json:"port_dropped"` // the driver's ethtool -S key for frames no RX buffer took
	// MissedErrors is the netdev's rx_missed_errors (ip -s link): the
	// same frames.
	MissedErrors uint64    `json:"rx_missed_errors"`
	Queues       []RxQueue `json:"queues"`
}

// RxQueue is one RX queue.
type RxQueue struct {
	Rxq       int     `json:"rxq"`
	CPU       int     `json:"cpu"` // its vector's IRQ affinity
	Packets   uint64  `json:"rx_packets"`
	Bytes     uint64  `json:"rx_bytes"`
	Missed    uint64  `json:"rx_missed"` // frames the NIC had no buffer for
	Pps       float64 `json:"rx_pps"`    // cleaned, in the window
	NapiPolls uint64  `json:"napi_polls"`
	Irqs      uint64  `json:"irqs"`
	// ItrUsecs is the vector's RX interval at the end (the RX DIM's
	// profile, the driver's own moderation's, or the static rx-usecs);
	// DimChanges the RX DIM's profile changes, or the driver's own RX
	// ITR changes (i40e).
	ItrUsecs   int64   `json:"rx_itr_usecs"`
	DimChanges uint64  `json:"rx_dim_changes"`
	Refills    uint64  `json:"refills"`
	RingSize   int     `json:"ring_size"`
	RingUsed   int     `json:"ring_used"`     // frames in the ring at the end
	RingMax    uint64  `json:"ring_max_used"` // the most at once
	RingAvg    float64 `json:"ring_avg_used"` // time-averaged over the run
	Ethtool    []KV    `json:"ethtool"`       // the driver's per-queue keys
}

// SlabCache is one SLUB cache as /sys/kernel/slab/NAME shows it: its
// shape (object_size, order, objs_per_slab, cpu_partial in objects and
// the slabs put_cpu_partial allows for it, min_partial), how many slabs
// it holds and how many sit on the nodes' partial lists at the end, and
// its CONFIG_SLUB_STATS counters over the whole run (alloc_fastpath,
// alloc_slowpath, alloc_refill, cpu_partial_alloc, alloc_from_partial,
// cpu_partial_node, alloc_slab, free_fastpath, free_slowpath,
// free_frozen, cpu_partial_free, cpu_partial_drain, free_add_partial,
// free_slab).
type SlabCache struct {
	Name            string            `json:"name"`
	ObjectSize      int               `json:"object_size"`
	Order           int               `json:"order"`
	ObjsPerSlab     int               `json:"objs_per_slab"`
	CPUPartial      int               `json:"cpu_partial"`
	CPUPartialSlabs int               `json:"cpu_partial_slabs"`
	MinPartial      int               `json:"min_partial"`
	Slabs           int               `json:"slabs"`
	Partial         int               `json:"partial"`
	Stats           map[string]uint64 `json:"stats"`
}

// Softnet is one CPU's /proc/net/softnet_stat row (softnet_seq_show,
// net/core/net-procfs.c), the columns the model has, in its order:
// processed, dropped, time_squeeze, received_rps and flow_limit_count
// (0: no RPS, no flow limit), backlog_len (input_pkt_queue plus
// process_queue, at the end), the CPU index, input_qlen and
// process_qlen; then the NAPI polls the CPU ran (whole run).
type Softnet struct {
	Processed      uint64 `json:"processed"`
	Dropped        uint64 `json:"dropped"`
	TimeSqueeze    uint64 `json:"time_squeeze"`
	ReceivedRPS    uint64 `json:"received_rps"`
	FlowLimitCount uint64 `json:"flow_limit_count"`
	BacklogLen     uint64 `json:"backlog_len"`
	CPU            int    `json:"cpu"`
	InputQlen      uint64 `json:"input_qlen"`
	ProcessQlen    uint64 `json:"process_qlen"`
	NapiPolls      uint64 `json:"napi_polls"`
}

// Link is one device's drop columns of ip -s link (dev_get_stats: the
// driver's ndo_get_stats64 plus the stack's dev->core_stats), whole run.
type Link struct {
	Name      string `json:"name"`
	RxDropped uint64 `json:"rx_dropped"`
	TxDropped uint64 `json:"tx_dropped"`
	// Peer is a veth's peer's columns: it received what the veth sent
	// and sent what it received.
	Peer *LinkPeer `json:"peer,omitempty"`
}

// LinkPeer is a veth peer's ip -s link drop columns.
type LinkPeer struct {
	RxDropped uint64 `json:"rx_dropped"`
	TxDropped uint64 `json:"tx_dropped"`
}
