package workload

import (
	"fmt"
	"strings"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tcp"
)

// TCPStream is the TCP workload: netperf -t TCP_STREAM senders on the
// host (uploads), and optionally TCP_MAERTS-like downloads from the far
// end, over the path, with latency probes.
const TCPStream = "tcp_stream"

// Probe kinds.
const (
	ProbePing  = "ping"   // ICMP echo at an interval (ping -i, as flent runs it)
	ProbeUDPRR = "udp_rr" // netperf -t UDP_RR: one 1-byte request/response at a time
)

// Probe is one latency probe.
type Probe struct {
	Kind string
	// Interval is the time between pings, or, for udp_rr, the least
	// time between requests (0: back to back, as netperf UDP_RR).
	Interval sim.Time
	DSCP     uint8
}

// Directions of a flow.
const (
	Up   = "up"   // the host sends
	Down = "down" // the far end sends, the host receives and acks
)

// DefaultPingInterval is flent's ping step (0.2 s).
const DefaultPingInterval = 200 * sim.Millisecond

// netperfPort is netserver's port, the far end of every connection
// (a flow group may give its own).
const netperfPort = 12866

// SendSize is netperf TCP_STREAM's send size: the socket's send buffer
// size when it was created (tcp_wmem[1], 16384), as netperf reports it.
const SendSize = 16384

// udpRRTimeout is when a udp_rr probe gives a request up as lost and
// sends the next (netperf would wait for ever; irtt-like probes do not).
const udpRRTimeout = sim.Second

// ProbeKinds lists the probe kinds.
func ProbeKinds() []string { return []string{ProbePing, ProbeUDPRR} }

// validateTCP checks the TCP part of a spec.
func (s *Spec) validateTCP() error {
	if _, err := tcp.NewCC(s.CC); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	if err := s.checkTxtime(); err != nil {
		return err
	}
	for i, g := range s.Groups {
		if g.ECN != 0 {
			return fmt.Errorf("workload: group %d: ecn is a UDP sender's; a TCP connection sets its own (--tcp-ecn, --cc dctcp)", i+1)
		}
	}
	switch {
	case s.Flows < 0 || s.Down < 0:
		return fmt.Errorf("workload: flows must be >= 0, got %d up and %d down", s.Flows, s.Down)
	case s.Flows+s.Down > tcp.MaxFlows:
		return fmt.Errorf("workload: %d TCP flows need %d source ports, and ip_local_port_range (%d-%d) has %d",
			s.Flows+s.Down, s.Flows+s.Down, tcp.PortsLo, tcp.PortsHi, tcp.MaxFlows)
	case s.Flows+s.Down == 0 && len(s.Probes) == 0:
		return fmt.Errorf("workload: tcp_stream needs flows (up or down) or probes")
	case s.Start < 0:
		return fmt.Errorf("workload: start must be >= 0, got %v", s.Start)
	}
	sum := 0
	for _, n := range s.Hosts {
		if n < 0 {
			return fmt.Errorf("workload: hosts must be >= 0 connections each, got %d", n)
		}
		sum += n
	}
	if len(s.Hosts) > 0 && sum != max(s.Flows, s.Down) {
		return fmt.Errorf("workload: hosts %v add up to %d connections, want the %d of each direction", s.Hosts, sum, max(s.Flows, s.Down))
	}
	for _, m := range s.Marks {
		if m > 63 {
			return fmt.Errorf("workload: dscp marks must be 0..63, got %d", m)
		}
	}
	return s.ValidateProbes()
}

// ValidateProbes checks the probes of a spec.
func (s *Spec) ValidateProbes() error {
	for i, p := range s.Probes {
		switch p.Kind {
		case ProbePing:
			if p.Interval <= 0 {
				return fmt.Errorf("workload: probe %d (ping): interval must be > 0, got %v", i+1, p.Interval)
			}
		case ProbeUDPRR:
			if p.Interval < 0 {
				return fmt.Errorf("workload: probe %d (udp_rr): interval must be >= 0, got %v", i+1, p.Interval)
			}
		default:
			return fmt.Errorf("workload: probe %d: unknown kind %q (known: %s)", i+1, p.Kind, strings.Join(ProbeKinds(), ", "))
		}
		if p.DSCP > 63 {
			return fmt.Errorf("workload: probe %d: dscp must be 0..63, got %d", i+1, p.DSCP)
		}
	}
	return nil
}

// Traffic is a run's TCP flows and probes, the path they take and the
// far end that answers them.
type Traffic struct {
	net   *netdev.Net
	dev   *netdev.Device
	e     *sim.Engine
	costs *sim.Costs
	Path  *path.Path
	Flows []*TCPFlow
	Probe []*ProbeSock
	Start sim.Time
	CC    string
	ECN   bool

	// priority and mark are the workload's SO_PRIORITY and SO_MARK,
	// on the probes' packets too (flow groups set the connections').
	priority, mark uint32

	tasklets [][]tasklet // per CPU: TASKLET_SOFTIRQ work
	spareTl  [][]tasklet // per CPU: a run list's array, for the next
	site     struct{ lockSock, bhLockSock, release *sim.LockStat }
	hashrnd  uint64
}

// tasklet kinds.
const (
	tkTSQ    = iota // tcp_tasklet_func: a socket TSQ throttled, now drained
	tkRTO           // tcp_write_timer
	tkDelack        // tcp_delack_timer
)

type tasklet struct {
	kind int
	up   *hostSock
	down *downSock
}

// TCPFlow is one TCP connection.
type TCPFlow struct {
	ID   int
	Dir  string // Up or Down
	DSCP uint8
	// Priority and Mark are the socket's sk_priority (SO_PRIORITY) and
	// sk_mark (SO_MARK), on every skb the host sends for it.
	Priority uint32
	Mark     uint32
	keys     skb.FlowKeys
	hash     uint32

	// Snd is the sender (on the host for Up, at the far end for Down);
	// Rcv the receiver (at the far end for Up, on the host for Down).
	Snd *tcp.Sock
	Rcv *tcp.Receiver

	up   *hostSock
	down *downSock
	tr   *Traffic

	// the far end's delayed ACK (Up) and retransmission timer (Down)
	delackGen, rtoGen uint64
	delackArmed       bool
	delackGens        sim.Fifo[uint64] // the pending timeouts' generations, oldest first
	delackFn          func()
	rtoArmedAt        sim.Time
	txCPU             int // the CPU that completed the last data skb (veth: the peer's NAPI runs there)
}

// Delivered is the segments delivered in order to the receiving
// application so far.
func (f *TCPFlow) Delivered() int64 { return f.Rcv.RcvNxt }

// flowKeys are connection i's keys from source address host to the
// far end's port dport, and their hash.
func (tr *Traffic) flowKeys(i, host int, dport uint16) (skb.FlowKeys, uint32) {
	k := skb.FlowKeys{Src: 0x0a000001 + uint32(host), Dst: 0x0a010001, SrcPort: uint16(tcp.PortsLo + i), DstPort: dport, Proto: 6}
	h := mix(uint64(k.Src)<<32 ^ uint64(k.Dst) ^ uint64(k.SrcPort)<<16 ^ uint64(k.DstPort) ^ uint64(k.Proto)<<56 ^ tr.hashrnd)
	if h == 0 {
		h = 1
	}
	return k, uint32(h)
}

// StartTraffic starts spec's TCP flows and probes on dev's host over the
// path: uploads from netperf-like tasks placed as spec says, downloads
// and every answer from the far end.
func StartTraffic(n *netdev.Net, dev *netdev.Device, spec Spec, w *Workload) (*Traffic, error) {
	if err := spec.Path.Validate(); err != nil {
		return nil, err
	}
	e := n.E
	n.ExpectLocalReceive() // the far ends' packets come back to the host's sockets
	p, err := path.New(e, spec.Path)
	if err != nil {
		return nil, err
	}
	tr := &Traffic{net: n, dev: dev, e: e, costs: e.Costs, Path: p, Start: spec.Start,
		CC: spec.CC, ECN: spec.ECN, priority: spec.Priority, mark: spec.Mark, hashrnd: e.Rand("workload/tcp/hashrnd").Uint64()}
	tr.tasklets = make([][]tasklet, len(e.CPUs))
	tr.spareTl = make([][]tasklet, len(e.CPUs))
	n.SetTaskletFunc(tr.runTasklets) // TASKLET_SOFTIRQ's, after the host's own tasklets
	tr.site.lockSock = e.LockSite("lock_sock (sk_lock.slock)")
	tr.site.bhLockSock = e.LockSite("tcp_v4_rcv (bh_lock_sock)")
	tr.site.release = e.LockSite("release_sock (sk_lock.slock)")
	cpus, set, err := TCPPlace(&spec, e.Topo)
	if err != nil {
		return nil, err
	}
	jitter := e.Rand("workload/tcp/start")
	mark := func(i int) uint8 {
		if len(spec.Marks) == 0 {
			return spec.DSCP
		}
		return spec.Marks[i%len(spec.Marks)]
	}
	for i := 0; i < spec.Flows+spec.Down; i++ {
		f := &TCPFlow{ID: i, Dir: Up, tr: tr, txCPU: -1, Priority: spec.Priority, Mark: spec.Mark}
		j := i
		if i >= spec.Flows {
			f.Dir = Down
			j = i - spec.Flows
		}
		f.DSCP = mark(j)
		dport := uint16(netperfPort)
		if len(spec.Groups) > 0 {
			// Connection j of each direction takes group j mod n, as
			// the marks go.
			var ecn uint8 // the connection's own (validateTCP)
			spec.Groups[j%len(spec.Groups)].apply(&f.DSCP, &ecn, &f.Priority, &f.Mark, &dport, nil)
		}
		f.keys, f.hash = tr.flowKeys(i, hostOf(spec.Hosts, j), dport)
		tr.Flows = append(tr.Flows, f)
		at := spec.Start + sim.Time(jitter.Int64N(int64(10*sim.Microsecond)))
		if f.Dir == Up {
			allowed := set
			if cpus != nil {
				allowed = cpus[i%len(cpus) : i%len(cpus)+1]
			}
			t, err := tr.startUp(f, at, allowed)
			if err != nil {
				return nil, err
			}
			w.Tasks = append(w.Tasks, t)
			w.CPUs = append(w.CPUs, t.CPU().ID)
		} else if err := tr.startDown(f, at); err != nil {
			return nil, err
		}
	}
	for i, p := range spec.Probes {
		ps := tr.startProbe(i, p, sim.Time(jitter.Int64N(int64(10*sim.Microsecond))))
		tr.Probe = append(tr.Probe, ps)
		w.Tasks = append(w.Tasks, ps.task)
		w.CPUs = append(w.CPUs, ps.task.CPU().ID)
	}
	return tr, nil
}

// hostOf is the source address index of a direction's j-th connection.
func hostOf(hosts []int, j int) int {
	for k, n := range hosts {
		if j < n {
			return k
		}
		j -= n
	}
	return max(len(hosts)-1, 0)
}

// TCPPlace resolves the placement of tcp_stream's netperf tasks: a CPU
// list the flows are pinned to in turn (pin: several per CPU when there
// are more flows than CPUs; spread is every CPU in spread order), or,
// unpinned, the CPUs each may run on (set: an "unpinned:LIST"
// placement's, nil for any CPU).
func TCPPlace(s *Spec, topo sim.Topology) (pin, set []int, err error) {
	w := s.PlacementWord()
	if set, ok, err := unpinnedSet(w, topo.NumCPUs()); ok {
		return nil, set, err
	}
	if w == Spread {
		return topo.Spread(topo.NumCPUs()), nil, nil
	}
	pin, err = ParseCPUList(s.Placement, topo.NumCPUs())
	return pin, nil, err
}

// reverse is a flow's keys seen from the far end.
func reverse(k skb.FlowKeys) skb.FlowKeys {
	return skb.FlowKeys{Src: k.Dst, Dst: k.Src, SrcPort: k.DstPort, DstPort: k.SrcPort, Proto: k.Proto}
}

// rxCPU is the CPU a packet of a flow with this hash arriving from the
// down link reaches the host on when the device has no RSS (veth): cpu,
// the CPU the peer ran on, or for -1 (none known) one by the hash.
func (tr *Traffic) rxCPU(hash uint32, cpu int) int {
	if cpu < 0 {
		cpu = int(uint64(hash) * uint64(len(tr.e.CPUs)) >> 32)
	}
	return cpu
}

// queueTasklet is tasklet_schedule on c.
func (tr *Traffic) queueTasklet(c *sim.CPU, t tasklet) {
	if len(tr.tasklets[c.ID]) == 0 {
		c.RaiseSoftirq(sim.TaskletSoftirq)
	}
	tr.tasklets[c.ID] = append(tr.tasklets[c.ID], t)
}

// runTasklets is TASKLET_SOFTIRQ's handler: tcp_tasklet_func for the
// sockets TSQ queued here, and the TCP timers that expired here.
func (tr *Traffic) runTasklets(c *sim.CPU) {
	for len(tr.tasklets[c.ID]) > 0 {
		// Two arrays take turns: the one being run, and the one
		// tasklets scheduled meanwhile go to.
		list := tr.tasklets[c.ID]
		tr.tasklets[c.ID], tr.spareTl[c.ID] = tr.spareTl[c.ID][:0], nil
		for _, t := range list {
			switch t.kind {
			case tkTSQ:
				t.up.tsqHandler(c)
			case tkRTO:
				t.up.rtoTimer(c)
			case tkDelack:
				t.down.delackTimer(c)
			}
		}
		clear(list)
		tr.spareTl[c.ID] = list[:0]
	}
}

// farEnd is a flow at the far end of the path: an upload's segments and
// a download's ACKs arrive there.
type farEnd TCPFlow

func (f *TCPFlow) far() *farEnd { return (*farEnd)(f) }

// Arrive implements path.Arriver.
func (fe *farEnd) Arrive(p path.Pkt) {
	f := (*TCPFlow)(fe)
	if f.Dir == Up {
		seg := p.Seg
		seg.ECN = p.ECN
		f.farRcv(seg)
		return
	}
	f.farRcvAck(p.Ack)
}

// hostEnd is a flow at the host's end: an upload's ACKs and a download's
// segments arrive from the path and go up the local receive path.
type hostEnd TCPFlow

func (f *TCPFlow) host() *hostEnd { return (*hostEnd)(f) }

// Arrive implements path.Arriver: up the local receive path to RcvLocal
// (veth: an upload's ACK on the CPU its last data left from).
func (he *hostEnd) Arrive(p path.Pkt) {
	f := (*TCPFlow)(he)
	cpu := -1
	if f.Dir == Up {
		cpu = f.txCPU
	}
	tr := f.tr
	tr.net.DeliverTo(tr.dev, tr.e.Now(), reverse(f.keys), tr.rxCPU(f.hash, cpu), he, p)
}

// RcvLocal implements netdev.LocalReceiver: tcp_v4_rcv on c.
func (he *hostEnd) RcvLocal(c *sim.CPU, p path.Pkt) {
	f := (*TCPFlow)(he)
	if f.Dir == Up {
		f.up.rcvAck(c, p.Ack)
		return
	}
	seg := p.Seg
	seg.ECN = p.ECN
	f.down.rcvData(c, seg)
}

// Counters sums the flows' TCP counters.
func (tr *Traffic) Counters() map[string]uint64 {
	m := map[string]uint64{}
	for _, f := range tr.Flows {
		m["tcp_retrans_segs"] += f.Snd.RetransSegs
		m["tcp_lost_segs"] += f.Snd.LostSegs
		m["tcp_rtos"] += f.Snd.RTOs
		m["tcp_recoveries"] += f.Snd.Recoveries
		m["tcp_cwr"] += f.Snd.CWRs
		m["tcp_loss_probes"] += f.Snd.LossProbes
		m["tcp_loss_probe_recovery"] += f.Snd.LossProbeRecoveries
		m["tcp_ce_marked_segs"] += f.Rcv.CEMarked
		if f.up != nil {
			m["tcp_sndbuf_sleeps"] += f.up.Sleeps
			m["tcp_tsq_throttled"] += f.up.TSQThrottled
			m["tcp_autocorking"] += f.up.Autocorked
			m["tcp_backlog_coalesce"] += f.up.BacklogCoalesced
			m["tcp_backlog_drop"] += f.up.BacklogDropped
			m["tcp_spurious_rtx_hostqueues"] += f.up.SpuriousRtxHostQueues
		}
	}
	return m
}
