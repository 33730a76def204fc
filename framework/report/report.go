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
	Name    string            `json:"name,omitempty"` // variant name
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

	Counters map[string]uint64 `json:"counters"`
	Locks    []Lock            `json:"locks"`
	Queues   []Queue           `json:"queues"`
	Qdisc    []Qdisc           `json:"qdisc"`
	Classes  []Class           `json:"classes,omitempty"`
	Filters  []Filters         `json:"filters,omitempty"`
	// Warnings are what tc printed as "Warning: ..." for the tc
	// commands of the run (the kernel's extack warnings).
	Warnings []string   `json:"warnings,omitempty"`
	XmitNs   Hist       `json:"xmit_latency_ns"` // __dev_queue_xmit
	Series   []Interval `json:"series"`
	CPUs     []CPU      `json:"cpus,omitempty"` // busy CPUs only

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
	Driver         string  `json:"driver"`
	Queues         int     `json:"queues"`
	RateBps        int64   `json:"rate_bps"`
	RingSize       int     `json:"ring_size"`
	Qdisc          string  `json:"qdisc"`
	Workload       string  `json:"workload"`
	Senders        int     `json:"senders"`
	Placement      string  `json:"placement"`
	PacketSize     int     `json:"packet_size"` // UDP payload bytes
	Flows          int     `json:"flows"`
	OfferedPps     float64 `json:"offered_pps,omitempty"` // udp_rate only
}

// Window are the counts within the measurement window.
type Window struct {
	OfferedPackets uint64            `json:"offered_packets"`
	TxPackets      uint64            `json:"tx_packets"`
	TxBytes        uint64            `json:"tx_bytes"`
	Drops          map[string]uint64 `json:"drops"`
	CPUBusyNs      int64             `json:"cpu_busy_ns"`
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
	Ethtool   []KV    `json:"ethtool"`
}

// Qdisc is one qdisc as tc -s -d qdisc show prints it.
type Qdisc struct {
	Handle         string  `json:"handle"`
	Parent         string  `json:"parent"`
	Kind           string  `json:"kind"`
	Options        string  `json:"options"`
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
	SentBps        float64 `json:"sent_bps"`
	Dropped        uint64  `json:"dropped"`
	Overlimits     uint64  `json:"overlimits"`
	BacklogPackets int     `json:"backlog_packets"`
	BacklogBytes   int64   `json:"backlog_bytes"`
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
}

// XStat is one qdisc-specific statistic: the number in JSON, and the
// value as tc -s prints it (with its unit, "64Kb", "5ms") in text.
type XStat struct {
	Key   string      `json:"key"`
	Value json.Number `json:"value"`
	Text  string      `json:"-"`
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
	Offered   uint64  `json:"offered_packets"`
	Drops     uint64  `json:"dropped_packets"`
	Backlog   int64   `json:"backlog_packets"` // all qdiscs, at the end of the interval
}

// CPU is one CPU's busy time in the window.
type CPU struct {
	CPU     int     `json:"cpu"`
	BusyPct float64 `json:"busy_pct"`
}
