package run

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tcp"
	"github.com/txlab/txlab/framework/units"
	"github.com/txlab/txlab/framework/workload"
)

// Bounds of a run that no single knob carries.
const (
	// MaxSamples bounds the throughput time series: duration / interval.
	MaxSamples = 10000
	// MaxActionRuns bounds how often timed actions run in a run, one
	// action or all of them together: each run stops the engine (about a
	// microsecond for a plain action), so a million stays near a second.
	MaxActionRuns = 1_000_000
	// MaxLiveSKBs bounds the skbs alive at once in a run (in flight: in
	// qdiscs, rings, defer lists, on CPUs): past it the run stops with a
	// LiveSKBsError. In flight is what the queues hold, and their limits
	// (pfifo's txqueuelen of 1000 a queue, fq_codel's 10240, cake's
	// memlimit) keep every shipped script under 50,000 (E1's 240
	// sockets the most); two million take a limit in the millions, far
	// above what a link drains. A packet in flight costs a few hundred
	// bytes of heap (an skb is 160, a deep queue's ring entry about 100
	// more), so a run stops within one or two gigabytes.
	MaxLiveSKBs = 2_000_000
	// MaxVariants bounds a run's variants, a script's and --compare's
	// product alike: each variant is a whole run (txlab sweep runs grids).
	MaxVariants = 1024
	// MaxLinkRate is the fastest link a device may have: 1.6 Tbit/s
	// (1.6TbE, IEEE 802.3dj).
	MaxLinkRate = 1_600_000_000_000
	// MaxDuration bounds a run's simulated time.
	MaxDuration = sim.Time(time.Hour)
)

// KnobKind is how a knob's value is written.
type KnobKind int

// Knob kinds.
const (
	TextKnob  KnobKind = iota // words
	IntKnob                   // a whole number
	RateKnob                  // a link rate in bits/s, in tc's words (100Gbit)
	CountKnob                 // a count per second with an SI suffix (5M)
	TimeKnob                  // simulated time (20ms, 1.5s)
	SeedKnob                  // an unsigned 64-bit number
)

// Knob is one setting of a Spec that the front ends name: the CLI's
// --Flag and a script's Script key. Knobs is the one table of them: the
// CLI's flags and their help, `txlab list`, the README's table of
// defaults and Spec.Validate's range checks all read it, and a knob's
// default is its value in Default().
type Knob struct {
	Flag   string // the CLI flag, without "--"
	Script string // where a script sets it ("device.queues")
	Kind   KnobKind
	// Min and Max are the documented range (inclusive) of a numeric
	// knob; Zero, if set, says what 0 means when 0 is below Min.
	Min, Max float64
	Zero     string
	Help     string
	// Only, if set, says which workloads use the knob (the offered
	// rate: udp_rate and forward); its range is not checked otherwise,
	// and a front end that is given it for a run none of whose
	// workloads use it refuses it (Unused).
	Only *Use
	ptr  func(s *Spec) any
}

// Use is which workloads a knob is for: the test and its words.
type Use struct {
	used func(s *Spec) bool
	// ranged, if set, narrows where the range is checked (tcp_stream's
	// flows may be 0 with downloads).
	ranged func(s *Spec) bool
	For    string // "udp_rate and forward"
}

// The workloads knobs are for.
var (
	forForward    = &Use{used: forward, For: "forward"}
	forThreads    = &Use{used: threads, For: "udp_stream, udp_rate and tcp_stream (forward's traffic comes from the wire)"}
	forUDPThreads = &Use{used: udpThreads, For: "udp_stream and udp_rate"}
	forUDPStream  = &Use{used: udpStream, For: "udp_stream"}
	forUDP        = &Use{used: func(s *Spec) bool { return !tcpFlows(s) }, For: "udp_stream, udp_rate and forward"}
	forFlows      = &Use{used: func(s *Spec) bool { return offered(s) || tcpFlows(s) }, ranged: hasFlows, For: "udp_rate, forward and tcp_stream"}
	forOffered    = &Use{used: offered, For: "udp_rate and forward"}
	forTCP        = &Use{used: tcpFlows, For: "tcp_stream"}
)

// rangeChecked is whether s's value of the knob is range-checked: its
// workload uses it (and, for flows, has any).
func (k *Knob) rangeChecked(s *Spec) bool {
	switch {
	case k.Only == nil:
		return true
	case k.Only.ranged != nil:
		return k.Only.ranged(s)
	}
	return k.Only.used(s)
}

// usedByAny is whether s's workload or one of the groups beside it
// (Spec.Also) uses the knob.
func (k *Knob) usedByAny(s *Spec) bool {
	if k.Only == nil || k.Only.used(s) {
		return true
	}
	for _, w := range s.Also {
		g := *s
		g.Workload = w
		if k.Only.used(&g) {
			return true
		}
	}
	return false
}

// Unused is the error, naming the knob as name, for a knob given to
// specs none of which uses it; nil when one does, or when a spec's
// workload is unknown (its validation says so).
func (k *Knob) Unused(specs []Spec, name string) error {
	kinds := map[string]bool{}
	var names []string
	for i := range specs {
		if k.usedByAny(&specs[i]) {
			return nil
		}
		kind := specs[i].Workload.Kind
		if !slices.Contains(workload.Kinds(), kind) {
			return nil
		}
		if !kinds[kind] {
			kinds[kind] = true
			names = append(names, kind)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("%s does nothing for the %s workload: it is for %s", name, strings.Join(names, " and "), k.Only.For)
}

func udpRate(s *Spec) bool { return s.Workload.Kind == workload.UDPRate }

func udpStream(s *Spec) bool { return s.Workload.Kind == workload.UDPStream }

func forward(s *Spec) bool { return s.Workload.Kind == workload.Forward }

// threads is whether the workload has sender threads (forward's traffic
// comes from the wire).
func threads(s *Spec) bool { return !forward(s) }

// udpThreads is whether the workload has a count of UDP sender threads.
func udpThreads(s *Spec) bool { return threads(s) && !tcpFlows(s) }

// offered is whether the workload has an offered rate and flows.
func offered(s *Spec) bool { return udpRate(s) || forward(s) }

// tcpFlows is whether the workload is tcp_stream (flows, the path).
func tcpFlows(s *Spec) bool { return s.Workload.Kind == workload.TCPStream }

// hasFlows is whether the workload has a flow count: tcp_stream's may
// be 0 when it has downloads (a script's tcp_ndown).
func hasFlows(s *Spec) bool {
	return offered(s) || tcpFlows(s) && !(s.Workload.Flows == 0 && s.Workload.Down > 0)
}

// MaxRxQueues bounds --rx-queues before a driver is asked; each driver
// has its own maximum (ice 256, i40e 64, idpf 256), checked when the
// host is built.
const MaxRxQueues = 4096

var knobs = []*Knob{
	{Flag: "profile", Script: "profile", Kind: TextKnob, Help: "kernel profile: 4.7, 4.8 (E4's 2016 kernels), 6.18, 6.19-rc1, net-next",
		ptr: func(s *Spec) any { return &s.Profile }},
	{Flag: "sockets", Script: "host.sockets", Kind: IntKnob, Min: 1, Max: 64, Help: "CPU sockets",
		ptr: func(s *Spec) any { return &s.Sockets }},
	{Flag: "cores", Script: "host.cores", Kind: IntKnob, Min: 1, Max: 4096, Help: "cores per socket",
		ptr: func(s *Spec) any { return &s.Cores }},
	{Flag: "smt", Script: "host.smt", Kind: IntKnob, Min: 1, Max: 8,
		Help: fmt.Sprintf("threads per core (sockets x cores x smt CPUs, at most %d)", sim.MaxCPUs),
		ptr:  func(s *Spec) any { return &s.Threads }},
	{Flag: "cpu", Script: "host.cpu", Kind: TextKnob,
		Help: "the processor the host runs on, for its cache-to-cache and DRAM latencies: default (E1's 2025 host, the cost table's own), haswell-ep (MLC on 2 x Xeon E5-2699 v3), skylake-sp (MLC on 2 x Xeon 8180); txlab list: CPUS",
		ptr:  func(s *Spec) any { return &s.CPU }},
	{Flag: "driver", Script: "device.driver", Kind: TextKnob, Help: "NIC driver model (txlab list: DRIVERS)",
		ptr: func(s *Spec) any { return &s.Driver }},
	{Flag: "driver-opts", Script: "device.opts", Kind: TextKnob, Help: "driver options in ethtool words, e.g. \"tx 512 adaptive-tx off tx-usecs 50\" (tx, rx: ring sizes, ice, i40e and idpf round them up to their multiple; tx-usecs, rx-usecs: moderation; ice, idpf: adaptive-tx on|off and adaptive-rx on|off, their TX and RX DIM, i40e: its own adaptive ITR, on by default as the drivers set them; while a side stays adaptive the Intel drivers refuse a change of its usecs, as ethtool -C does; mlx5: tx in WQEBBs, rounded up to a power of two, adaptive-tx, tx-usecs and skb_tx_mpwqe on|off, no receive side)",
		ptr: func(s *Spec) any { return &s.DriverArgs }},
	{Flag: "queues", Script: "device.queues", Kind: IntKnob, Min: 1, Max: 4096, Help: "TX queues",
		ptr: func(s *Spec) any { return &s.Queues }},
	{Flag: "rate", Script: "device.rate", Kind: RateKnob, Min: units.MinRate, Max: MaxLinkRate, Zero: "the driver's line rate, txlab list: DRIVERS",
		Help: "link rate in tc's words (100Gbit, 25gbit, 2.5gbit; bps is bytes/s)",
		ptr:  func(s *Spec) any { return &s.RateBps }},
	{Flag: "xps", Script: "device.xps", Kind: TextKnob,
		Help: "the XPS_CPUS map: irq (each queue its IRQ CPU, as ice and gve set it; other CPUs hash), cores (each queue a group of cores with their SMT threads, an admin's xps_cpus), none",
		ptr:  func(s *Spec) any { return &s.XPS }},
	{Flag: "irq-cpus", Script: "device.irq_cpus", Kind: TextKnob,
		Help: "the CPUs the queues' interrupts go to, a CPU list in vector order (wrapping), as /proc/irq/N/smp_affinity_list set by an admin or irqbalance; empty: the driver's, vector i on CPU i of socket 0 (cpumask_local_spread)",
		ptr:  func(s *Spec) any { return &s.IRQCPUs }},
	{Flag: "rx-queues", Script: "device.rx_queues", Kind: IntKnob, Min: 1, Max: MaxRxQueues, Zero: "as many as --queues",
		Help: "forward: RX queues RSS spreads the frames over (ethtool -L rx), at most the driver's maximum",
		Only: forForward, ptr: func(s *Spec) any { return &s.RxQueues }},
	{Flag: "rx-port", Script: "device.rx_port", Kind: TextKnob,
		Help: "forward: the port frames arrive on: same (forwarded back out of it) or other (a second port, eth1)",
		Only: forForward, ptr: func(s *Spec) any { return &s.RxPort }},
	{Flag: "bond", Script: "device.bond", Kind: TextKnob,
		Help: "a bonding device the senders transmit on, in ip-link words: [NAME] mode balance-xor|balance-rr|active-backup xmit_hash_policy layer3+4 [packets_per_slave N] [numtxqueues N] slaves N (new NICs of --driver with --queues, --rate, --driver-opts, --qdisc) or slaves eth0,eth1,bond1; bonds separated by ';'",
		ptr:  func(s *Spec) any { return &s.Bond }},
	{Flag: "ifb", Script: "device.ifb", Kind: TextKnob,
		Help: "ifb devices for tc's mirred to redirect to (to shape what a device receives: an ingress filter's action mirred egress redirect dev ifb0, then a qdisc on ifb0), in ip-link words: NAME [numtxqueues N] [txqueuelen N] (1 queue and 32 by default, as the ifb driver makes them), several separated by ';'; tc commands name them (qdisc add dev ifb0 root ...)",
		ptr:  func(s *Spec) any { return &s.Ifb }},
	{Flag: "qdisc", Script: "qdisc", Kind: TextKnob, Help: "root qdisc in tc words, e.g. \"mq pfifo\", \"pfifo limit 100\", noqueue",
		ptr: func(s *Spec) any { return &s.Qdisc }},
	{Flag: "workload", Script: "senders.kind", Kind: TextKnob,
		Help: "udp_stream (closed loop), udp_rate (open loop) or forward (a traffic generator into the RX port, forwarded out)",
		ptr:  func(s *Spec) any { return &s.Workload.Kind }},
	{Flag: "senders", Script: "senders.count", Kind: IntKnob, Min: 1, Max: workload.MaxSenders, Help: "sender threads, one per CPU (tcp_stream: one per connection, --flows)",
		Only: forUDPThreads, ptr: func(s *Spec) any { return &s.Workload.Senders }},
	{Flag: "placement", Script: "senders.placement", Kind: TextKnob, Help: "sender threads: unpinned (placed and moved by the scheduler; udp_stream's default), spread (pinned one per CPU over the topology; udp_rate's default), a CPU list like 0-7,16 (pinned, one per CPU), or unpinned:LIST (every sender may run on LIST's CPUs, placed and moved there by the scheduler, as under taskset -c LIST or numactl --cpunodebind)",
		Only: forThreads, ptr: func(s *Spec) any { return &s.Workload.Placement }},
	{Flag: "launch", Script: "senders.launch", Kind: TimeKnob, Min: 1, Max: float64(workload.MaxLaunch), Zero: "all at once, no control exchange",
		Help: "udp_stream: time between two senders' starts, as a shell starts netperf processes one by one (each placed by fork balancing then, and doing netperf's control exchange, answered on the NIC's RX queue, before sending)",
		Only: forUDPStream, ptr: func(s *Spec) any { return &s.Workload.Launch }},
	{Flag: "size", Script: "senders.size", Kind: IntKnob, Min: 1, Max: workload.MaxPacketSize, Help: "UDP payload bytes (netperf -m)",
		Only: forUDP, ptr: func(s *Spec) any { return &s.Workload.PacketSize }},
	{Flag: "flows", Script: "senders.flows", Kind: IntKnob, Min: 1, Max: workload.MaxFlows,
		Help: "udp_rate and forward flows (udp_stream has one per sender); tcp_stream: upload connections, one netperf task each (at most the 28232 source ports of ip_local_port_range)",
		Only: forFlows, ptr: func(s *Spec) any { return &s.Workload.Flows }},
	{Flag: "offered-rate", Script: "senders.rate", Kind: CountKnob, Min: 1, Max: workload.MaxRate,
		Help: "udp_rate and forward total packets/s (5M, 630K), at most what the link carries",
		Only: forOffered, ptr: func(s *Spec) any { return &s.Workload.Rate }},
	{Flag: "arrival", Script: "senders.arrival", Kind: TextKnob,
		Help: "forward: the traffic generator's arrivals: constant (frame k at k/rate, flows in turn) or poisson",
		Only: forForward, ptr: func(s *Spec) any { return &s.Workload.Arrival }},
	{Flag: "mark", Script: "senders.mark", Kind: IntKnob, Min: 0, Max: 1<<32 - 1, Help: "skb->mark of every packet (SO_MARK; tc's fw filter matches it)",
		Only: forThreads, ptr: func(s *Spec) any { return &s.Workload.Mark }},
	{Flag: "groups", Script: "senders.groups", Kind: TextKnob,
		Help: "flow groups for tc filters: flow i (udp_stream: sender i; tcp_stream: connection i of each direction) takes group i mod n; groups are space-separated key=value lists with dscp, ecn (UDP senders: not-ect, ect1, ect0, ce), priority (a classid, 1:10), mark, dport, txtime (udp_stream: SO_TXTIME on CLOCK_TAI, each packet's time the send's plus it, e.g. 500us: etf's), e.g. \"dport=5001,prio=1:10 dport=5002\"",
		Only: forThreads, ptr: func(s *Spec) any { return &s.Workload.Groups }},
	{Flag: "down", Script: "senders.down", Kind: IntKnob, Min: 0, Max: tcp.MaxFlows,
		Help: "tcp_stream: download connections (the far end sends, the host receives and acks)",
		Only: forTCP, ptr: func(s *Spec) any { return &s.Workload.Down }},
	{Flag: "cc", Script: "senders.cc", Kind: TextKnob, Help: "tcp_stream: congestion control (net.ipv4.tcp_congestion_control): " + strings.Join(tcp.CCNames(), ", "),
		Only: forTCP, ptr: func(s *Spec) any { return &s.Workload.CC }},
	{Flag: "tcp-ecn", Script: "senders.ecn", Kind: TextKnob, Help: "tcp_stream: ECN on the connections (net.ipv4.tcp_ecn=1): on or off (dctcp is always on)",
		Only: forTCP, ptr: func(s *Spec) any { return &s.Workload.ECN }},
	{Flag: "start", Script: "senders.start", Kind: TimeKnob, Min: 0, Max: float64(MaxDuration),
		Help: "tcp_stream: when the connections start; probes run from 0, so the RTT before is the idle RTT",
		Only: forTCP, ptr: func(s *Spec) any { return &s.Workload.Start }},
	{Flag: "ping", Script: "senders.ping", Kind: TimeKnob, Min: 1, Max: float64(MaxDuration), Zero: "no ping",
		Help: "tcp_stream: an ICMP ping probe at this interval (flent's is 200ms); scripts add more probes",
		Only: forTCP, ptr: func(s *Spec) any { return &s.Ping }},
	{Flag: "rtt", Script: "path.rtt", Kind: TimeKnob, Min: 1, Max: float64(MaxDuration),
		Help: "tcp_stream: the path's base RTT (each direction delays RTT/2)",
		Only: forTCP, ptr: func(s *Spec) any { return &s.Workload.Path.RTT }},
	{Flag: "path-rate", Script: "path.rate", Kind: TextKnob,
		Help: "tcp_stream: the path's bottleneck rate in tc's words, each direction, with a FIFO of --path-limit packets before it; empty: none (the host's NIC is the bottleneck)",
		Only: forTCP, ptr: func(s *Spec) any { return &s.PathRate }},
	{Flag: "path-rate-down", Script: "path.rate_down", Kind: TextKnob,
		Help: "tcp_stream: the down link's bottleneck rate (an asymmetric path); empty: --path-rate's",
		Only: forTCP, ptr: func(s *Spec) any { return &s.PathRateDown }},
	{Flag: "path-limit", Script: "path.limit", Kind: IntKnob, Min: 1, Max: 10_000_000,
		Help: "tcp_stream: packets the path's bottleneck FIFO holds (a router's pfifo)",
		Only: forTCP, ptr: func(s *Spec) any { return &s.Workload.Path.Limit }},
	{Flag: "path-qdisc", Script: "path.qdisc", Kind: TextKnob,
		Help: "tcp_stream: a qdisc in tc words the path's bottleneck router runs in each direction instead of its FIFO (needs --path-rate), e.g. \"fq_codel\"",
		Only: forTCP, ptr: func(s *Spec) any { return &s.Workload.Path.Qdisc }},
	{Flag: "path-loss", Script: "path.loss", Kind: TextKnob,
		Help: "tcp_stream: random loss on the path, each direction, as a percentage (0.1%) or a fraction; empty: none",
		Only: forTCP, ptr: func(s *Spec) any { return &s.PathLoss }},
	{Flag: "duration", Script: "duration", Kind: TimeKnob, Min: 1, Max: float64(MaxDuration), Help: "simulated time, warmup included",
		ptr: func(s *Spec) any { return &s.Duration }},
	{Flag: "warmup", Script: "warmup", Kind: TimeKnob, Min: 0, Max: float64(MaxDuration), Help: "simulated time before measuring (below duration)",
		ptr: func(s *Spec) any { return &s.Warmup }},
	{Flag: "interval", Script: "interval", Kind: TimeKnob, Min: 1, Max: float64(MaxDuration), Zero: "duration/20",
		Help: fmt.Sprintf("time-series step (at most %d steps)", MaxSamples),
		ptr:  func(s *Spec) any { return &s.Interval }},
	{Flag: "seed", Script: "seed", Kind: SeedKnob, Help: "run seed: the same seed gives the same report",
		ptr: func(s *Spec) any { return &s.Seed }},
	{Flag: "lock-cpus", Script: "lock_cpus", Kind: TextKnob,
		Help: "record the lock table on these CPUs only, like perf lock record -C0-7 over the window (a CPU list; empty: every CPU)",
		ptr:  func(s *Spec) any { return &s.LockCPUs }},
}

// Knobs is the table of knobs, in the order the CLI shows them.
func Knobs() []*Knob { return knobs }

// KnobByFlag is the knob of a CLI flag, or nil.
func KnobByFlag(flag string) *Knob {
	for _, k := range knobs {
		if k.Flag == flag {
			return k
		}
	}
	return nil
}

// KnobByScript is the knob a script sets with key ("senders.rate"), or
// nil.
func KnobByScript(key string) *Knob {
	for _, k := range knobs {
		if k.Script == key {
			return k
		}
	}
	return nil
}

// Name is how errors name the knob: "--queues (device.queues)".
func (k *Knob) Name() string { return "--" + k.Flag + " (" + k.Script + ")" }

// Get is the knob's value in s as text that Set reads back exactly.
func (k *Knob) Get(s *Spec) string {
	switch p := k.ptr(s).(type) {
	case *string:
		return *p
	case *[]string:
		return strings.Join(*p, " ")
	case *int:
		return strconv.Itoa(*p)
	case *int64:
		if *p == 0 && k.Zero != "" {
			return "0" // the knob's zero word, as --help and txlab list explain it
		}
		return formatRate(*p)
	case *float64:
		return formatCount(*p)
	case *sim.Time:
		return formatTime(*p)
	case *uint64:
		return strconv.FormatUint(*p, 10)
	case *uint32:
		return strconv.FormatUint(uint64(*p), 10)
	case *[]workload.Group:
		return workload.FormatGroups(*p)
	case *bool:
		if *p {
			return "on"
		}
		return "off"
	}
	panic("run: knob " + k.Flag + " of an unknown type")
}

// Set parses text into the knob's field of s. It checks the syntax and
// the knob's own range; Spec.Validate checks the rest.
func (k *Knob) Set(s *Spec, text string) error {
	text = strings.TrimSpace(text)
	switch p := k.ptr(s).(type) {
	case *string:
		*p = text
		return nil
	case *[]string:
		*p = nil
		if f := strings.Fields(text); len(f) > 0 {
			*p = f
		}
		return nil
	case *int:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", text)
		}
		if err := k.InRange(float64(n)); err != nil {
			return err
		}
		*p = int(n)
	case *int64:
		r, err := units.ParseRate(text)
		if err != nil {
			return err
		}
		if err := k.InRange(float64(r)); err != nil {
			return fmt.Errorf("%s is out of range: %s", text, k.Range()) // as given: "2tbit", not "2Tbit"
		}
		*p = r
	case *float64:
		c, err := units.ParseCount(text)
		if err != nil {
			return err
		}
		if err := k.InRange(c); err != nil {
			return err
		}
		*p = c
	case *sim.Time:
		d, err := time.ParseDuration(text)
		if err != nil {
			return fmt.Errorf("%q is not a time (e.g. 20ms, 1.5s, 100us)", text)
		}
		if err := k.InRange(float64(d)); err != nil {
			return err
		}
		*p = sim.Time(d)
	case *uint64:
		n, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a whole number >= 0", text)
		}
		*p = n
	case *uint32:
		n, err := strconv.ParseUint(text, 0, 64)
		if err != nil {
			return fmt.Errorf("%q is not a whole number >= 0", text)
		}
		if err := k.InRange(float64(n)); err != nil {
			return err
		}
		*p = uint32(n)
	case *[]workload.Group:
		g, err := workload.ParseGroups(text)
		if err != nil {
			return err
		}
		*p = g
	case *bool:
		switch strings.ToLower(text) {
		case "on", "true", "1", "yes":
			*p = true
		case "off", "false", "0", "no":
			*p = false
		default:
			return fmt.Errorf("%q is not on or off", text)
		}
	}
	return nil
}

// InRange checks v against the knob's documented range; the error says
// the range.
func (k *Knob) InRange(v float64) error {
	if k.Min == 0 && k.Max == 0 {
		return nil
	}
	if v == 0 && k.Zero != "" {
		return nil
	}
	if math.IsNaN(v) || v < k.Min || v > k.Max {
		return fmt.Errorf("%s is out of range: %s", k.format(v), k.Range())
	}
	return nil
}

// Range is the documented range as text: "1..4096", "0 (the driver's
// default) or 1kbit..1.6Tbit".
func (k *Knob) Range() string {
	if k.Min == 0 && k.Max == 0 {
		return ""
	}
	r := k.format(k.Min) + ".." + k.format(k.Max)
	if k.Zero != "" {
		r = "0 (" + k.Zero + ") or " + r
	}
	return r
}

func (k *Knob) format(v float64) string {
	switch k.Kind {
	case RateKnob:
		if !(v >= math.MinInt64 && v < math.MaxInt64) { // past int64 (2^63 itself included), or NaN
			return strconv.FormatFloat(v, 'g', -1, 64) + "bit"
		}
		return formatRate(int64(v))
	case CountKnob:
		return formatCount(v)
	case TimeKnob:
		if !(v >= math.MinInt64 && v < math.MaxInt64) { // past int64 (2^63 itself included), or NaN
			return strconv.FormatFloat(v, 'g', -1, 64) + "ns"
		}
		return formatTime(sim.Time(v))
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// check is the knob's range check on a whole spec (a script sets fields
// directly).
func (k *Knob) check(s *Spec) error {
	if !k.rangeChecked(s) {
		return nil
	}
	var v float64
	switch p := k.ptr(s).(type) {
	case *int:
		v = float64(*p)
	case *uint32:
		v = float64(*p)
	case *int64:
		v = float64(*p)
	case *float64:
		v = *p
	case *sim.Time:
		v = float64(*p)
	default:
		return nil
	}
	if err := k.InRange(v); err != nil {
		return fmt.Errorf("%s: %w", k.Name(), err)
	}
	return nil
}

// formatRate writes bits/s exactly in tc's words: 100Gbit, 2500Mbit.
func formatRate(r int64) string {
	for _, u := range []struct {
		s string
		n int64
	}{{"Tbit", 1e12}, {"Gbit", 1e9}, {"Mbit", 1e6}, {"Kbit", 1e3}} {
		if r != 0 && r%u.n == 0 {
			return strconv.FormatInt(r/u.n, 10) + u.s
		}
	}
	return strconv.FormatInt(r, 10) + "bit"
}

// formatCount writes a count exactly with an SI suffix: 1M, 630K, 1.5M.
func formatCount(c float64) string {
	for _, u := range []struct {
		s string
		n float64
	}{{"G", 1e9}, {"M", 1e6}, {"K", 1e3}} {
		if c >= u.n && c <= 1e15 {
			if q := c / u.n; q*u.n == c {
				return strconv.FormatFloat(q, 'f', -1, 64) + u.s
			}
		}
	}
	return strconv.FormatFloat(c, 'g', -1, 64)
}

// formatTime writes a time exactly in the largest unit that divides it
// (sim.Time's String rounds to 3 digits, as tc does).
func formatTime(t sim.Time) string {
	if t == 0 {
		return "0"
	}
	for _, u := range []struct {
		s string
		n sim.Time
	}{{"h", sim.Time(time.Hour)}, {"s", sim.Second}, {"ms", sim.Millisecond}, {"us", sim.Microsecond}} {
		if t != 0 && t%u.n == 0 {
			return strconv.FormatInt(int64(t/u.n), 10) + u.s
		}
	}
	return strconv.FormatInt(int64(t), 10) + "ns"
}
