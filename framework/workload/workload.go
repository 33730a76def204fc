// Package workload runs sender threads on simulated CPUs: udp_stream (a
// closed loop like `netperf -t UDP_STREAM -- -m 120 -n`, blocking on the
// socket's sndbuf) and udp_rate (an open loop at a set rate over N flows,
// like pktgen).
package workload

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/netdev"
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
	MaxSenders    = 8192    // one sender per CPU: sim.MaxCPUs
	MaxPacketSize = 65507   // the largest UDP payload over IPv4
	MaxFlows      = 1 << 20 // udp_rate flows
	MaxRate       = 1e10    // udp_rate packets/s in all (a link also bounds it: see run)
)

// Kinds lists the workload kinds.
func Kinds() []string { return []string{UDPRate, UDPStream} }

// Spec describes the senders.
type Spec struct {
	Kind       string
	Senders    int
	Placement  string  // "spread" or a CPU list "0-7,16"
	PacketSize int     // UDP payload bytes
	Flows      int     // udp_rate: flows shared by the senders; udp_stream: one per sender
	Rate       float64 // udp_rate: total offered packets per second
	DSCP       uint8
	Priority   uint32
	Mark       uint32 // skb->mark of every packet (SO_MARK)
	// Groups split the flows, for classifiers to tell them apart: flow
	// i (udp_stream: sender i) takes Groups[i % len(Groups)]'s fields,
	// where they are not zero.
	Groups []Group
}

// Validate checks a spec with clear messages.
func (s *Spec) Validate() error {
	switch s.Kind {
	case UDPStream, UDPRate:
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
	}
	return nil
}

// Place resolves the placement to one CPU per sender.
func Place(s *Spec, topo sim.Topology) ([]int, error) {
	n := topo.NumCPUs()
	if s.Placement == "" || s.Placement == "spread" {
		if s.Senders > n {
			return nil, fmt.Errorf("workload: %d senders but only %d CPUs (one sender per CPU)", s.Senders, n)
		}
		return topo.Spread(s.Senders), nil
	}
	cpus, err := ParseCPUList(s.Placement, n)
	if err != nil {
		return nil, err
	}
	if len(cpus) < s.Senders {
		return nil, fmt.Errorf("workload: placement %q has %d CPUs for %d senders", s.Placement, len(cpus), s.Senders)
	}
	return cpus[:s.Senders], nil
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
		if a < 0 || b < a || b >= ncpu {
			return nil, fmt.Errorf("workload: bad CPU list %q: %d-%d outside 0-%d", list, a, b, ncpu-1)
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

// Socket is a UDP socket: sndbuf accounting (sk_wmem_alloc) and the
// cached txq (sk_tx_queue_mapping).
type Socket struct {
	ID      int
	Sndbuf  int
	Wmem    int
	txq     int
	waiting *sim.CPU
	Sleeps  uint64
	Sent    uint64
	Dropped uint64 // NET_XMIT_DROP seen by the sender
}

// Release is sock_wfree: uncharge, and wake the writer once the socket is
// writeable again (sock_def_write_space: below half of sndbuf).
func (s *Socket) Release(c *sim.CPU, b *skb.SKB) {
	s.Wmem -= int(b.TrueSize)
	if s.waiting != nil && 2*s.Wmem < s.Sndbuf {
		w := s.waiting
		s.waiting = nil
		c.Spend(c.Costs().WakeUp)
		w.Wake(c.Now())
	}
}

// TxQueue implements netdev.TxQueueCache.
func (s *Socket) TxQueue() int { return s.txq }

// SetTxQueue implements netdev.TxQueueCache.
func (s *Socket) SetTxQueue(q int) { s.txq = q }

// Flow is one 5-tuple, with the marks its packets carry.
type Flow struct {
	Keys     skb.FlowKeys
	Hash     uint32
	DSCP     uint8
	Priority uint32
	Mark     uint32
}

// Workload is a started set of senders.
type Workload struct {
	Spec    Spec
	CPUs    []int
	Sockets []*Socket
	flows   []Flow

	// Run-time control (timed actions): the current udp_rate total rate,
	// and per sender whether it is paused and, if so, its parked CPU.
	rate   float64
	paused []bool
	parked []*sim.CPU
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

// Paused reports whether sender i is paused.
func (w *Workload) Paused(i int) bool { return w.paused[i] }

// Pause stops sender i before its next packet; it sleeps until Resume.
func (w *Workload) Pause(i int) { w.paused[i] = true }

// Resume restarts sender i at time now (call from engine context).
func (w *Workload) Resume(i int, now sim.Time) {
	w.paused[i] = false
	if c := w.parked[i]; c != nil {
		w.parked[i] = nil
		c.Wake(now)
	}
}

// waitWhilePaused parks sender i's thread while it is paused; it reports
// whether it slept.
func (w *Workload) waitWhilePaused(c *sim.CPU, i int) bool {
	if !w.paused[i] {
		return false
	}
	for w.paused[i] {
		w.parked[i] = c
		c.Sleep()
	}
	w.parked[i] = nil
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
		g := s.Groups[i%len(s.Groups)]
		if g.DSCP != 0 {
			f.DSCP = g.DSCP
		}
		if g.Priority != 0 {
			f.Priority = g.Priority
		}
		if g.Mark != 0 {
			f.Mark = g.Mark
		}
		if g.DstPort != 0 {
			k.DstPort = g.DstPort
		}
	}
	h := mix(uint64(k.Src)<<32 ^ uint64(k.Dst) ^ uint64(k.SrcPort)<<16 ^ uint64(k.DstPort) ^ uint64(k.Proto)<<56 ^ hashrnd)
	if h == 0 {
		h = 1
	}
	f.Keys, f.Hash = k, uint32(h)
	return f
}

// Start places the senders and starts them at time 0.
func Start(net *netdev.Net, dev *netdev.Device, spec Spec) (*Workload, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	cpus, err := Place(&spec, net.E.Topo)
	if err != nil {
		return nil, err
	}
	w := &Workload{Spec: spec, CPUs: cpus, rate: spec.Rate, paused: make([]bool, len(cpus)), parked: make([]*sim.CPU, len(cpus))}
	hashrnd := net.E.Rand("workload/hashrnd").Uint64()
	nflows := spec.Senders
	if spec.Kind == UDPRate {
		nflows = spec.Flows
	}
	for i := 0; i < nflows; i++ {
		w.flows = append(w.flows, makeFlow(i, hashrnd, &spec))
	}
	jitter := net.E.Rand("workload/start")
	for i, cpu := range cpus {
		c := net.E.CPUs[cpu]
		start := sim.Time(jitter.Int64N(int64(10 * sim.Microsecond)))
		switch spec.Kind {
		case UDPStream:
			sock := &Socket{ID: i, Sndbuf: net.Cfg.Sndbuf, txq: -1}
			w.Sockets = append(w.Sockets, sock)
			flow := w.flows[i]
			idx := i
			c.Start(start, func(c *sim.CPU) { w.udpStream(c, net, dev, idx, sock, flow) })
		case UDPRate:
			idx := i
			c.Start(start, func(c *sim.CPU) { w.udpRate(c, net, dev, idx) })
		}
	}
	return w, nil
}

// lens returns skb->len (L2) and truesize for the payload size.
func (w *Workload) lens() (uint32, uint32) {
	l3 := w.Spec.PacketSize + 8 + 20
	return uint32(l3 + 14), skb.TrueSize(l3)
}

func (w *Workload) fill(s *skb.SKB, f Flow, l2, truesize uint32) {
	s.Len, s.TrueSize = l2, truesize
	s.Keys, s.Hash = f.Keys, f.Hash
	s.DSCP, s.Priority, s.Mark = f.DSCP, f.Priority, f.Mark
}

// udpStream is one netperf UDP_STREAM thread: sendmsg in a loop, blocking
// in sock_alloc_send_skb while the socket's sndbuf is full.
func (w *Workload) udpStream(c *sim.CPU, net *netdev.Net, dev *netdev.Device, idx int, sock *Socket, f Flow) {
	costs := c.Costs()
	l2, truesize := w.lens()
	for {
		w.waitWhilePaused(c, idx)
		c.Sync() // syscall entry: an instruction boundary
		if sock.Wmem+int(truesize) > sock.Sndbuf {
			sock.Sleeps++
			for sock.Wmem+int(truesize) > sock.Sndbuf {
				sock.waiting = c
				c.Sleep()
			}
			sock.waiting = nil
			c.Spend(costs.SleepWake)
		}
		c.Spend(costs.StackPerPacket + costs.SkbAlloc)
		s := net.AllocSkb(c)
		w.fill(s, f, l2, truesize)
		s.Sock = int32(sock.ID)
		s.Owner = sock
		sock.Wmem += int(truesize)
		sock.Sent++
		if net.DevQueueXmit(c, dev, s) == qdisc.XmitDrop {
			sock.Dropped++ // netperf -n: carry on
		}
	}
}

// udpRate is one open-loop sender (pktgen-like: no socket, no UDP stack
// cost): packet k leaves at start + k/rate, or late if the CPU is behind.
func (w *Workload) udpRate(c *sim.CPU, net *netdev.Net, dev *netdev.Device, idx int) {
	costs := c.Costs()
	l2, truesize := w.lens()
	next := float64(c.Now())
	nflows := len(w.flows)
	k := 0
	for {
		if w.waitWhilePaused(c, idx) {
			next = float64(c.Now()) // no catch-up burst after a pause
		}
		per := w.rate / float64(w.Spec.Senders)
		interval := float64(sim.Second) / per
		if t := sim.Time(next); c.Now() < t {
			c.SleepUntil(t)
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
		net.DevQueueXmit(c, dev, s)
	}
}
