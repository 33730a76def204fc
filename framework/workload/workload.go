// Package workload runs sender threads as tasks on the simulated CPUs:
// udp_stream (a closed loop like `netperf -t UDP_STREAM -- -m 120 -n`,
// blocking on the socket's sndbuf) and udp_rate (an open loop at a set
// rate over N flows, like pktgen).
//
// udp_stream's sockets are connected, as -n makes them (the llist
// series' "netperf -t UDP_STREAM -- -m 120 -n"). Not modelled: netperf
// without -n, whose unconnected socket (TCP_CLOSE, no sk_dst_cache, no
// sk_txhash) has netdev_pick_tx pick every packet's queue afresh (XPS by
// the sending CPU, else skb_tx_hash of a flow-dissected hash; no
// sk_tx_queue_set, so no ooo_okay question) and fq_classify file its
// packets by skb_get_hash & orphan_mask rather than by the socket.
package workload

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Kinds of workload.
const (
	UDPStream = "udp_stream"
	UDPRate   = "udp_rate"
)

// Bounds of a workload (the run's knob table documents them).
const (
	MaxSenders    = 8192       // one sender per CPU: sim.MaxCPUs
	MaxPacketSize = 65507      // the largest UDP payload over IPv4
	MaxFlows      = 1 << 20    // udp_rate flows
	MaxRate       = 1e10       // udp_rate packets/s in all (a link also bounds it: see run)
	MaxLaunch     = sim.Second // between two udp_stream launches
)

// Kinds lists the workload kinds.
func Kinds() []string { return []string{Forward, TCPStream, UDPRate, UDPStream} }

// Spec describes the senders.
type Spec struct {
	Kind       string
	Senders    int
	Placement  string  // "unpinned", "spread", a CPU list "0-7,16" (pinned), "unpinned:LIST" (within LIST); "": the kind's default (DefaultPlacement)
	PacketSize int     // UDP payload bytes
	Flows      int     // udp_rate: flows shared by the senders; udp_stream: one per sender
	Rate       float64 // udp_rate: total offered packets per second
	DSCP       uint8
	Priority   uint32
	Arrival    string // forward: the generator's arrival process (ArrivalConstant, ArrivalPoisson)
	Mark       uint32 // skb->mark of every packet (SO_MARK)
	// Groups split the flows, for classifiers to tell them apart: flow
	// i (udp_stream: sender i; tcp_stream: connection i of each
	// direction, as Marks) takes Groups[i % len(Groups)]'s fields, where
	// they are not zero.
	Groups []Group

	// Launch, if set, is the time between two udp_stream senders'
	// starts, as a shell starts netperf processes one after another
	// (super_netperf's loop of `netperf ... &`): sender i is forked at
	// i x Launch, placed by fork balancing on the load it finds then,
	// and does netperf's control exchange before its first packet.
	// Zero: all start within the first 10 us, straight into the send
	// loop.
	Launch sim.Time

	// Group numbers a sender group beside a run's first one (0): a
	// host may run more UDP sender groups along with its first, as 240
	// netperf UDP_STREAMs under 8 TCP flows and a ping. Base is the
	// group's first socket and flow number on the host: its sockets
	// (what sch_fq tells flows apart by), flows, tasks and netperf
	// control connections are numbered from it, apart from the other
	// groups'. Group 0 (Base 0) is a run's first group, as before.
	Group, Base int

	// tcp_stream (traffic.go): Flows uploads and Down downloads, the
	// congestion control, ECN (net.ipv4.tcp_ecn=1), the DSCP marks the
	// flows take in turn (each direction from the first), when they
	// start (the probes run from 0, so the RTT before it is the idle
	// one), the latency probes and the path.
	CC    string
	ECN   bool
	Down  int
	Marks []uint8
	// Hosts, if set, spreads the connections over source addresses:
	// Hosts[k] connections (of each direction) from address k, as from
	// containers or VMs on the host (cake's dual-srchost and friends
	// tell them apart). Empty: one address.
	Hosts  []int
	Start  sim.Time
	Probes []Probe
	Path   path.Config
}

// stream is the name of one of the group's random streams: a run's
// first group keeps the names it always had.
func (s *Spec) stream(name string) string {
	if s.Group == 0 {
		return "workload/" + name
	}
	return fmt.Sprintf("workload/group%d/%s", s.Group, name)
}

// Sockets is how many sockets (skb->sk) the group's senders own: one per
// udp_stream sender, one per tcp_stream connection; pktgen-like udp_rate
// and forward have none.
func (s *Spec) Sockets() int {
	switch s.Kind {
	case UDPStream:
		return s.Senders
	case TCPStream:
		return s.Flows + s.Down
	}
	return 0
}

// FlowCount is how many UDP flows the group's senders use (their flow
// keys; tcp_stream's connections have their own).
func (s *Spec) FlowCount() int {
	switch s.Kind {
	case UDPStream:
		return s.Senders
	case UDPRate:
		return s.Flows
	}
	return 0
}

// Validate checks a spec with clear messages.
func (s *Spec) Validate() error {
	switch s.Kind {
	case UDPStream, UDPRate:
	case Forward:
		return s.validateForward()
	case TCPStream:
		return s.validateTCP()
	default:
		return fmt.Errorf("workload: unknown kind %q (known: %s)", s.Kind, strings.Join(Kinds(), ", "))
	}
	switch {
	case s.Senders < 1 || s.Senders > MaxSenders:
		return fmt.Errorf("workload: senders must be 1..%d, got %d", MaxSenders, s.Senders)
	case s.PacketSize < 1 || s.PacketSize > MaxPacketSize:
		return fmt.Errorf("workload: packet size must be 1..%d bytes, got %d", MaxPacketSize, s.PacketSize)
	case s.Kind == UDPRate && !(s.Rate > 0 && s.Rate <= MaxRate):
		return fmt.Errorf("workload: udp_rate needs a rate in (0, %g] packets/s, got %v", MaxRate, s.Rate)
	case s.Kind == UDPRate && (s.Flows < 1 || s.Flows > MaxFlows):
		return fmt.Errorf("workload: udp_rate needs flows 1..%d, got %d", MaxFlows, s.Flows)
	case s.DSCP > 63:
		return fmt.Errorf("workload: dscp must be 0..63, got %d", s.DSCP)
	case s.Launch < 0 || s.Launch > MaxLaunch:
		return fmt.Errorf("workload: launch must be in [0, %v], got %v", MaxLaunch, s.Launch)
	case s.Launch > 0 && s.Kind != UDPStream:
		return fmt.Errorf("workload: launch is for udp_stream's netperf processes; %s senders all start at once", s.Kind)
	}
	return s.checkTxtime()
}

// Placement words.
const (
	// Unpinned senders may run on any CPU: placed as fork balancing
	// places them and moved by the scheduler (wake-ups, balancing), as
	// netperf threads started without taskset are.
	Unpinned = "unpinned"
	// Spread pins one sender per CPU, spread over the topology the way
	// the scheduler spreads busy threads (one per core, alternating
	// sockets, then the SMT siblings).
	Spread = "spread"
	// UnpinnedOn prefixes a CPU list every sender may run on, placed and
	// moved by the scheduler within it, as netperf runs under taskset -c
	// LIST or numactl --cpunodebind: "unpinned:0-119,240-359".
	UnpinnedOn = "unpinned:"
)

// DefaultPlacement is the placement of a kind when none is given:
// udp_stream threads are netperf processes the scheduler places
// (unpinned, as in the seed's main row); udp_rate threads are pktgen's
// per-CPU kthreads (spread).
func DefaultPlacement(kind string) string {
	if kind == UDPStream || kind == TCPStream {
		return Unpinned
	}
	return Spread
}

// Placement is the spec's placement word, the kind's default when empty.
func (s *Spec) PlacementWord() string {
	if s.Placement == "" {
		return DefaultPlacement(s.Kind)
	}
	return s.Placement
}

// Place resolves the placement of udp_stream and udp_rate senders: one
// pinned CPU per sender (pin), or, for unpinned senders, the CPUs each
// may run on (set: an "unpinned:LIST" placement's, nil for any CPU).
func Place(s *Spec, topo sim.Topology) (pin, set []int, err error) {
	n := topo.NumCPUs()
	w := s.PlacementWord()
	if set, ok, err := unpinnedSet(w, n); ok {
		return nil, set, err
	}
	if w == Spread {
		if s.Senders > n {
			return nil, nil, fmt.Errorf("workload: %d senders but only %d CPUs (spread pins one sender per CPU; unpinned senders may share)", s.Senders, n)
		}
		return topo.Spread(s.Senders), nil, nil
	}
	cpus, err := ParseCPUList(s.Placement, n)
	if err != nil {
		return nil, nil, err
	}
	if len(cpus) < s.Senders {
		return nil, nil, fmt.Errorf("workload: placement %q has %d CPUs for %d senders (a CPU list pins one sender per CPU)", s.Placement, len(cpus), s.Senders)
	}
	return cpus[:s.Senders], nil, nil
}

// IsUnpinned reports whether a placement leaves the senders to the
// scheduler: "unpinned", or "unpinned:LIST" within LIST.
func IsUnpinned(placement string) bool {
	return placement == Unpinned || strings.HasPrefix(placement, UnpinnedOn)
}

// unpinnedSet reads an unpinned placement word: ok, with the CPUs each
// sender may run on (nil for "unpinned": any; LIST's for
// "unpinned:LIST"); not ok for a pinned one.
func unpinnedSet(word string, ncpu int) (set []int, ok bool, err error) {
	list, on := strings.CutPrefix(word, UnpinnedOn)
	switch {
	case word == Unpinned:
		return nil, true, nil
	case on:
		set, err = ParseCPUList(list, ncpu)
		return set, true, err
	}
	return nil, false, nil
}

// ParseCPUList parses "0-7,16,18-19" (the kernel's cpulist format).
func ParseCPUList(list string, ncpu int) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("workload: bad CPU list %q: %q is not a CPU number", list, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("workload: bad CPU list %q: %q is not a CPU number", list, hi)
			}
		}
		if a < 0 || b < a {
			return nil, fmt.Errorf("workload: bad CPU list %q: %q is not a CPU range", list, strings.TrimSpace(part))
		}
		if b >= ncpu {
			return nil, fmt.Errorf("workload: bad CPU list %q: CPU %d does not exist (this host has CPUs 0-%d)", list, b, ncpu-1)
		}
		for i := a; i <= b; i++ {
			if seen[i] {
				return nil, fmt.Errorf("workload: CPU %d listed twice in %q", i, list)
			}
			seen[i] = true
			out = append(out, i)
		}
	}
	return out, nil
}

// Socket is a connected UDP socket: its send buffer accounting
// (sk_wmem_alloc against sk_sndbuf), the task sleeping on it, and its
// cached txq (sk_tx_queue_mapping).
type Socket struct {
	netdev.TxqMapping // sk_tx_queue_mapping: netdev_pick_tx caches its queue

	ID     int
	Sndbuf int // sk_sndbuf
	// Wmem is sk_wmem_alloc_get: the truesize of every skb of this
	// socket not yet freed (refcount_read(&sk->sk_wmem_alloc) - 1).
	Wmem  int
	owner skb.OwnerID   // s in the host's skb pool
	wq    sim.WaitQueue // sk_sleep(sk)
	// wmemLine is the socket's sock_write_tx group (sk_wmem_alloc):
	// the sender adds each skb's truesize, the CPU that frees it
	// subtracts it, atomically.
	wmemLine sim.CacheLine

	Sleeps  uint64 // times the sender blocked in sock_wait_for_wmem
	Wakeups uint64 // wake-ups from sock_def_write_space_wfree
	Sent    uint64
	Dropped uint64 // sendmsg calls that got -ENOBUFS (NET_XMIT_DROP), ignored as netperf -n does
}

// writeable is sock_writeable: refcount_read(&sk->sk_wmem_alloc) <
// sk_sndbuf / 2 (the refcount carries SK_WMEM_ALLOC_BIAS, 1).
func (s *Socket) writeable() bool { return s.Wmem+1 < s.Sndbuf>>1 }

// Release is sock_wfree for a UDP socket (SOCK_RCU_FREE with the
// default write_space): refcount_sub on sk_wmem_alloc, then
// sock_def_write_space_wfree, which wakes the writer
// (wake_up_interruptible_sync_poll) once the socket is writeable again:
// below half of sndbuf.
// An skb orphaned before (skb_orphan_partial) frees with sock_efree:
// its charge went back then.
func (s *Socket) Release(c *sim.CPU, b *skb.SKB) {
	if !b.Orphaned() {
		s.Orphan(c, b)
	}
}

// Orphan implements skb.Orphaner: sock_wfree run by skb_orphan_partial
// (netem delaying the packet) instead of at the skb's free.
func (s *Socket) Orphan(c *sim.CPU, b *skb.SKB) {
	s.wmemLine.AtomicNoSync(c) // freeing an skb has no sync point: the accounting walks it
	s.Wmem -= int(b.TrueSize)
	if s.wq.Len() > 0 && s.writeable() {
		s.Wakeups += uint64(s.wq.WakeUp(c, true))
	}
}

// charge is skb_set_owner_w's accounting: sk_wmem_alloc grows by the
// skb's truesize, and since d365c9bca35c (oooOkay) the skb carries
// ooo_okay when nothing else of the socket is in a host queue, so
// netdev_pick_tx may move the flow without reordering it.
func (s *Socket) charge(b *skb.SKB, oooOkay bool) {
	b.OooOkay = oooOkay && s.Wmem == 0
	s.Wmem += int(b.TrueSize)
}

// waitForWmem is sock_alloc_send_pskb's loop for a blocking socket:
// allocate while sk_wmem_alloc_get < sk_sndbuf (so the last skb may
// overshoot), else sleep in sock_wait_for_wmem until woken with room.
// It returns the CPU the task runs on afterwards.
func (s *Socket) waitForWmem(t *sim.Task) *sim.CPU {
	if s.Wmem < s.Sndbuf {
		return t.CPU()
	}
	s.Sleeps++
	for {
		s.wq.Add(t) // prepare_to_wait
		if s.Wmem < s.Sndbuf {
			break
		}
		t.Block() // schedule_timeout(MAX_SCHEDULE_TIMEOUT)
	}
	s.wq.Remove(t) // finish_wait
	return t.CPU()
}

// Flow is one 5-tuple, with the marks its packets carry.
type Flow struct {
	Keys     skb.FlowKeys
	Hash     uint32
	DSCP     uint8
	ECN      uint8 // the socket's IP_TOS & 3
	Priority uint32
	Mark     uint32
	// Txtime is the socket's SO_TXTIME offset (CLOCK_TAI): each packet's
	// transmit time is the clock's time at the send plus it; 0, none.
	Txtime sim.Time
}

// Workload is a started set of senders.
type Workload struct {
	Spec    Spec
	CPUs    []int       // the CPU each sender was placed on first (-1: forked later, at launch)
	Tasks   []*sim.Task // the sender threads
	Sockets []*Socket   // udp_stream: one per sender
	flows   []Flow
	e       *sim.Engine
	// truesize is Config.TruesizeUDP: the kernel's skb heads.
	truesize func(l3len int) uint32
	// Traffic is the tcp_stream workload's flows, probes and path.
	Traffic *Traffic

	// Run-time control (timed actions): the current udp_rate total rate,
	// and per sender whether it is paused and whether it sleeps for it.
	rate   float64
	paused []bool
	parked []bool
}

// Rate is the current total offered rate of a udp_rate workload.
func (w *Workload) Rate() float64 { return w.rate }

// SetRate changes a udp_rate workload's total rate (packets/s) from the
// next packet of each sender on.
func (w *Workload) SetRate(pps float64) error {
	if w.Spec.Kind != UDPRate {
		return fmt.Errorf("workload: only udp_rate has a rate (this one is %s)", w.Spec.Kind)
	}
	if !(pps > 0) {
		return fmt.Errorf("workload: rate must be > 0 packets/s, got %v (stop the senders instead)", pps)
	}
	if pps > MaxRate {
		return fmt.Errorf("workload: rate %g packets/s is above the %g maximum", pps, MaxRate)
	}
	w.rate = pps
	return nil
}

// Paused reports whether sender i is paused (tcp_stream's never are).
func (w *Workload) Paused(i int) bool { return i < len(w.paused) && w.paused[i] }

// Pause stops sender i before its next packet; it sleeps until Resume.
func (w *Workload) Pause(i int) { w.paused[i] = true }

// Resume restarts sender i (call from engine context, at the engine's
// time): a sleeping sender is woken.
func (w *Workload) Resume(i int, _ sim.Time) {
	w.paused[i] = false
	if w.parked[i] {
		w.parked[i] = false
		w.e.WakeUp(w.Tasks[i], nil)
	}
}

// waitWhilePaused blocks sender i's task while it is paused (as a
// stopped process sleeps); it reports whether it slept.
func (w *Workload) waitWhilePaused(t *sim.Task, i int) bool {
	if !w.paused[i] {
		return false
	}
	for w.paused[i] {
		w.parked[i] = true
		t.Block()
	}
	return true
}

// mix is a 64-bit finaliser (splitmix64), standing in for the kernel's
// seeded flow hash (__flow_hash_from_keys with hashrnd).
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func makeFlow(i int, hashrnd uint64, s *Spec) Flow {
	f := Flow{DSCP: s.DSCP, Priority: s.Priority, Mark: s.Mark}
	k := skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a010000 | uint32(i&0xffff), SrcPort: uint16(32768 + i%28000), DstPort: 12866, Proto: 17}
	if len(s.Groups) > 0 {
		s.Groups[i%len(s.Groups)].apply(&f.DSCP, &f.ECN, &f.Priority, &f.Mark, &k.DstPort, &f.Txtime)
	}
	h := mix(uint64(k.Src)<<32 ^ uint64(k.Dst) ^ uint64(k.SrcPort)<<16 ^ uint64(k.DstPort) ^ uint64(k.Proto)<<56 ^ hashrnd)
	if h == 0 {
		h = 1
	}
	f.Keys, f.Hash = k, uint32(h)
	return f
}

// Start makes the senders' tasks, places them (pinned, or as fork
// balancing places unpinned ones) and starts them within the first 10 us.
func Start(net *netdev.Net, dev *netdev.Device, spec Spec) (*Workload, error) {
	if spec.Kind == Forward {
		return StartForward(net, dev, dev, spec)
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.Kind == TCPStream {
		w := &Workload{Spec: spec, e: net.E, truesize: net.Cfg.TruesizeUDP}
		tr, err := StartTraffic(net, dev, spec, w)
		if err != nil {
			return nil, err
		}
		w.Traffic = tr
		return w, nil
	}
	cpus, set, err := Place(&spec, net.E.Topo)
	if err != nil {
		return nil, err
	}
	n := spec.Senders
	w := &Workload{Spec: spec, rate: spec.Rate, paused: make([]bool, n), parked: make([]bool, n), e: net.E, truesize: net.Cfg.TruesizeUDP}
	hashrnd := net.E.Rand(spec.stream("hashrnd")).Uint64()
	nflows := spec.Senders
	if spec.Kind == UDPRate {
		nflows = spec.Flows
	}
	for i := 0; i < nflows; i++ {
		w.flows = append(w.flows, makeFlow(spec.Base+i, hashrnd, &spec))
	}
	jitter := net.E.Rand(spec.stream("start"))
	for i := 0; i < n; i++ {
		allowed := set
		if cpus != nil {
			allowed = cpus[i : i+1]
		}
		start := sim.Time(jitter.Int64N(int64(10 * sim.Microsecond)))
		if spec.Launch > 0 && spec.Kind == UDPStream {
			start = sim.Time(i) * spec.Launch
		}
		idx := i
		var t *sim.Task
		switch spec.Kind {
		case UDPStream:
			sock := &Socket{ID: spec.Base + i, Sndbuf: net.Cfg.SndbufBytes()}
			sock.owner = net.Pool.AddOwner(sock)
			w.Sockets = append(w.Sockets, sock)
			flow := w.flows[i]
			t = net.E.NewTask(fmt.Sprintf("netperf/%d", spec.Base+i), allowed, func(t *sim.Task) { w.udpStream(t, net, dev, idx, sock, flow) })
		case UDPRate:
			t = net.E.NewTask(fmt.Sprintf("pktgen/%d", spec.Base+i), allowed, func(t *sim.Task) { w.udpRate(t, net, dev, idx) })
		}
		if spec.Launch > 0 && spec.Kind == UDPStream {
			t.Fork(start) // placed when the shell starts it
		} else {
			t.Start(start)
		}
		w.Tasks = append(w.Tasks, t)
		cpu := -1 // forked later: placed then
		if t.CPU() != nil {
			cpu = t.CPU().ID
		}
		w.CPUs = append(w.CPUs, cpu)
	}
	return w, nil
}

// lens returns skb->len (L2) and truesize for the payload size.
func (w *Workload) lens() (uint32, uint32) {
	l3 := w.Spec.PacketSize + 8 + 20
	return uint32(l3 + 14), w.truesize(l3)
}

func (w *Workload) fill(s *skb.SKB, f Flow, l2, truesize uint32) {
	s.Len, s.TrueSize = l2, truesize
	s.Keys, s.Hash = f.Keys, f.Hash
	s.DSCP, s.ECN, s.Priority, s.Mark = f.DSCP, f.ECN, f.Priority, f.Mark
}

// stampTxtime is what a sender on a socket with SO_TXTIME (CLOCK_TAI)
// does: clock_gettime(CLOCK_TAI) at the send plus its offset, handed to
// sendmsg as SCM_TXTIME, which ip_make_skb puts in skb->tstamp.
func stampTxtime(s *skb.SKB, f Flow, now sim.Time) {
	if f.Txtime == 0 {
		return
	}
	tai, _ := sim.ClockOffset(sim.ClockTAI)
	s.Flags |= skb.PacketTxtimeTAI
	s.Tstamp = sim.Ktime(now) + tai + f.Txtime
}

// ActSend is the CPU profile's activity of a udp_stream sender's
// sendmsg up to __dev_queue_xmit (the report's cpu_profile).
const ActSend = "udp_sendmsg stack + skb alloc"

// udpStream is one netperf UDP_STREAM thread: sendmsg in a loop on a
// connected socket (-n), blocking in sock_alloc_send_pskb while the
// send buffer is full. A drop in the qdisc makes sendmsg return
// -ENOBUFS: netperf sets IP_RECVERR on a UDP_STREAM's data socket
// (enable_enobufs in nettest_omni.c), so udp_send_skb returns it, and
// send_data counts a failed send and netperf sends again at once.
//
// Without -n, netperf does not connect (send_omni_inner: need_to_connect
// is (protocol != IPPROTO_UDP) || local_connected) and sends with
// sendto(); the model has no such socket (see the package comment).
// With or without -n, a UDP_STREAM without -R gets SO_DONTROUTE
// (scan_omni_args clears routing_allowed; create_data_socket sets it),
// so udp_sendmsg's ip_sendmsg_scope is RT_SCOPE_LINK and its connected
// fast path is off: ip_route_output_flow on every send (a per-CPU
// cached rtable, held and put). The route connect() cached stays in
// sk_dst_cache, so netdev_pick_tx still caches the queue, and
// sk_txhash and fq's per-socket flow are unchanged: only the lookup's
// cost differs, and it is inside stack_per_packet, measured on a
// netperf UDP_STREAM sender (costs.go).
func (w *Workload) udpStream(t *sim.Task, net *netdev.Net, dev *netdev.Device, idx int, sock *Socket, f Flow) {
	costs := t.CPU().Costs()
	l2, truesize := w.lens()
	sendAct := net.E.ActName(ActSend)
	if w.Spec.Launch > 0 {
		netperfControl(t, net, dev, controlReply(w.Spec.Base+idx))
	}
	for {
		w.waitWhilePaused(t, idx)
		t.PreemptPoint() // return to user space: the scheduler may switch
		c := t.CPU()
		c.Sync() // syscall entry: an instruction boundary
		c = sock.waitForWmem(t)
		c.SetAct(sendAct)
		c.Spend(costs.StackPerPacket + costs.SkbAlloc)
		sock.wmemLine.Atomic(c) // skb_set_owner_w: refcount_add(truesize, &sk->sk_wmem_alloc)
		s := net.AllocSkb(c)
		w.fill(s, f, l2, truesize)
		net.AllocSkbSlabs(c, s)
		stampTxtime(s, f, c.Now())
		s.Sock = int32(sock.ID)
		s.Owner = sock.owner
		sock.charge(s, net.Cfg.OooOkay)
		sock.Sent++
		if net.DevQueueXmit(c, dev, s) == qdisc.XmitDrop {
			sock.Dropped++ // -ENOBUFS: netperf's failed_sends++, and the next send
		}
	}
}

// udpRate is one open-loop sender (pktgen-like: no socket, no UDP stack
// cost): packet k leaves at start + k/rate, or late if the CPU is behind.
// It waits for the next departure on its CPU, as pktgen's spin() does.
func (w *Workload) udpRate(t *sim.Task, net *netdev.Net, dev *netdev.Device, idx int) {
	c := t.CPU()
	costs := c.Costs()
	l2, truesize := w.lens()
	next := float64(c.Now())
	nflows := len(w.flows)
	k := 0
	for {
		if w.waitWhilePaused(t, idx) {
			next = float64(t.CPU().Now()) // no catch-up burst after a pause
		}
		t.PreemptPoint()
		c = t.CPU()
		per := w.rate / float64(w.Spec.Senders)
		interval := float64(sim.Second) / per
		if at := sim.Time(next); c.Now() < at {
			c.SleepUntil(at)
		}
		c.Sync()
		next += interval
		// flows idx, idx+S, idx+2S, ... belong to this sender
		fi := (idx + k*w.Spec.Senders) % nflows
		if nflows < w.Spec.Senders {
			fi = idx % nflows
		}
		k++
		c.Spend(costs.SkbAlloc)
		s := net.AllocSkb(c)
		w.fill(s, w.flows[fi], l2, truesize)
		net.AllocSkbSlabs(c, s)
		net.DevQueueXmit(c, dev, s)
	}
}

// controlRTT is the time from netperf's test request on its control
// connection to netserver's response: a data-centre round trip and
// netserver (its child for this control connection) setting up the
// data socket. The order in which the senders start sending is what
// matters (each one's exchange ends before the next one's launch), not
// this figure; it is the remote host's time, not CPU time here.
const controlRTT = 50 * sim.Microsecond

// controlReply is the frames netserver sends back on sender i's control
// connection: TCP from its port 12865 to the sender's ephemeral port,
// the address the data flow goes to.
func controlReply(i int) skb.FlowKeys {
	k := makeFlow(i, 0, &Spec{}).Keys
	return skb.FlowKeys{Src: k.Dst, Dst: k.Src, SrcPort: 12865, DstPort: uint16(32768 + (i+28000/2)%28000), Proto: 6}
}

// netperfControl is netperf's exchange on its control connection before
// the test (send_udp_stream: send_request, then recv_response sleeping
// in tcp_recvmsg). The response arrives on the RX queue RSS gives the
// control flow; on that queue's IRQ CPU, tcp_v4_rcv's sk_data_ready
// (sock_def_readable) wakes the task with WF_SYNC, so select_task_rq_fair
// runs wake_affine against that CPU: when it runs a task already
// (another netperf sending), wake_affine_idle's sync rule picks it and
// select_idle_sibling then an idle core, else an idle CPU, of its LLC.
// The model wakes from the interrupt handler, the kernel from the
// NET_RX softirq on its exit: the same CPU with the same tasks. TCP's
// own work on both sides is priced as one UDP send (stack_per_packet).
func netperfControl(t *sim.Task, net *netdev.Net, dev *netdev.Device, reply skb.FlowKeys) {
	c := t.CPU()
	c.Sync()
	c.Spend(c.Costs().StackPerPacket) // send_request
	var wq sim.WaitQueue              // sk_sleep of the control socket
	ready := false
	net.E.RaiseIRQ(net.E.CPUs[net.RxCPU(dev, reply)], c.Now()+controlRTT, func(irq *sim.CPU) {
		irq.Spend(irq.Costs().StackPerPacket) // the response's receive
		ready = true
		wq.WakeUp(irq, true)
	})
	for {
		wq.Add(t)
		if ready {
			break
		}
		t.Block()
	}
	wq.Remove(t)
}

// checkTxtime refuses a group's txtime where no socket sends: SO_TXTIME
// is a socket's (udp_rate is pktgen-like, socketless; a TCP connection
// stamps its own departure times).
func (s *Spec) checkTxtime() error {
	if s.Kind == UDPStream {
		return nil
	}
	for i, g := range s.Groups {
		if g.Txtime != 0 {
			return fmt.Errorf("workload: group %d: txtime is SO_TXTIME on a udp_stream sender's socket; %s has none", i+1, s.Kind)
		}
	}
	return nil
}
