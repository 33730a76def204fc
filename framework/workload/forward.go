package workload

import (
	"fmt"
	"math"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Forward is the forwarding workload: a traffic generator on the other
// end of the wire (xdp-trafficgen, pktgen, a hardware tester) sends
// Flows UDP flows of PacketSize-byte payloads at Rate frames/s into the
// host's RX port; the host forwards every frame (framework/netdev/rx.go)
// out of the same port or another one. The seeds' E2 and E2b DUTs.
const Forward = "forward"

// Arrival processes of the forward workload's traffic generator.
const (
	// ArrivalConstant sends frame k at k/Rate, the flows in turn, as
	// xdp-trafficgen and pktgen do at a fixed rate.
	ArrivalConstant = "constant"
	// ArrivalPoisson sends at exponentially spaced times (mean 1/Rate),
	// each frame's flow chosen uniformly.
	ArrivalPoisson = "poisson"
)

// MaxFramePayload is the largest UDP payload a 1500-byte MTU frame
// carries (1500 - 20 - 8): the forward workload does not fragment.
const MaxFramePayload = 1472

// Arrivals lists the arrival processes.
func Arrivals() []string { return []string{ArrivalConstant, ArrivalPoisson} }

// validateForward checks a forward spec.
func (s *Spec) validateForward() error {
	switch {
	case !(s.Rate > 0 && s.Rate <= MaxRate):
		return fmt.Errorf("workload: forward needs an offered rate in (0, %g] frames/s, got %v", MaxRate, s.Rate)
	case s.Flows < 1 || s.Flows > MaxFlows:
		return fmt.Errorf("workload: forward needs flows 1..%d, got %d", MaxFlows, s.Flows)
	case s.PacketSize < 1 || s.PacketSize > MaxFramePayload:
		return fmt.Errorf("workload: forward frames carry 1..%d bytes of UDP payload (a 1500-byte MTU), got %d", MaxFramePayload, s.PacketSize)
	case s.DSCP > 63:
		return fmt.Errorf("workload: dscp must be 0..63, got %d", s.DSCP)
	case s.Mark != 0 || len(s.Groups) > 0:
		// SO_MARK and per-sender flow settings are the senders' socket
		// options: a forwarded skb carries no mark from the wire.
		return fmt.Errorf("workload: forward has no senders: mark and groups are for udp_stream and udp_rate")
	}
	switch s.Arrival {
	case "", ArrivalConstant, ArrivalPoisson:
	default:
		return fmt.Errorf("workload: unknown arrival %q (known: constant, poisson)", s.Arrival)
	}
	return nil
}

// FrameLen is skb->len of the frames a payload of size bytes makes:
// UDP, IPv4 and Ethernet headers, no FCS.
func FrameLen(size int) uint32 { return uint32(size + 8 + 20 + 14) }

// forwardFlow is the generator's flow i: one source and destination
// host, source ports counting up from 1024 (60,000 per destination
// address), to the discard port.
func forwardFlow(i int) skb.FlowKeys {
	return skb.FlowKeys{Src: 0x0a000002, Dst: 0x0a010002 + uint32(i/60000),
		SrcPort: uint16(1024 + i%60000), DstPort: 9, Proto: 17}
}

// StartForward attaches the traffic generator of spec (a forward spec)
// to in's RX port, forwarding out of out (in itself for the seeds' DUTs).
// in must have been built with RX queues.
func StartForward(net *netdev.Net, in, out *netdev.Device, spec Spec) (*Workload, error) {
	if spec.Kind != Forward {
		return nil, fmt.Errorf("workload: StartForward of a %s workload", spec.Kind)
	}
	if err := spec.validateForward(); err != nil {
		return nil, err
	}
	w := &Workload{Spec: spec, rate: spec.Rate, truesize: net.Cfg.TruesizeUDP}
	flows := make([]skb.FlowKeys, spec.Flows)
	for i := range flows {
		flows[i] = forwardFlow(i)
	}
	arrival := spec.Arrival
	if arrival == "" {
		arrival = ArrivalConstant
	}
	cfg := netdev.RxConfig{Flows: flows, FrameLen: FrameLen(spec.PacketSize), DSCP: spec.DSCP, Out: out,
		Streams: func(queueFlows [][]int32) ([]netdev.RxStream, error) {
			out := make([]netdev.RxStream, len(queueFlows))
			for q, fl := range queueFlows {
				if arrival == ArrivalPoisson {
					out[q] = newPoissonStream(fl, spec.Flows, spec.Rate, net.E.Rand(fmt.Sprintf("workload/forward/rxq%d", q)))
				} else {
					out[q] = &constStream{flows: fl, nflows: int64(spec.Flows), period: float64(sim.Second) / spec.Rate}
				}
			}
			return out, nil
		}}
	if err := net.AttachRx(in, cfg); err != nil {
		return nil, err
	}
	return w, nil
}

// constStream is one RX queue's share of a constant-rate generator:
// frame k of the whole stream leaves at k * period and belongs to flow
// k mod N, so the queue's j-th frame is frame (j / m) * N + flows[j % m]
// for the m flows RSS steers to it.
type constStream struct {
	flows  []int32
	nflows int64
	period float64 // ns between frames of the whole stream
	j      int64
}

func (s *constStream) Peek() (sim.Time, int32, bool) {
	m := int64(len(s.flows))
	if m == 0 {
		return 0, 0, false
	}
	f := s.flows[s.j%m]
	k := (s.j/m)*s.nflows + int64(f)
	return sim.Time(float64(k) * s.period), f, true
}

func (s *constStream) Pop() { s.j++ }

// poissonStream is one RX queue's share of a Poisson generator: the
// frames of the queue's m flows out of N form a Poisson process of rate
// Rate*m/N (a Poisson process thinned by an independent uniform flow
// choice), each frame's flow uniform among them.
type poissonStream struct {
	flows []int32
	rate  float64 // frames per ns
	rng   *sim.Rand
	t     float64
	at    sim.Time
	flow  int32
}

func newPoissonStream(flows []int32, nflows int, rate float64, rng *sim.Rand) *poissonStream {
	s := &poissonStream{flows: flows, rate: rate * float64(len(flows)) / float64(nflows) / float64(sim.Second), rng: rng}
	if len(flows) > 0 {
		s.Pop()
	}
	return s
}

func (s *poissonStream) Peek() (sim.Time, int32, bool) {
	if len(s.flows) == 0 {
		return 0, 0, false
	}
	return s.at, s.flow, true
}

func (s *poissonStream) Pop() {
	s.t += s.rng.ExpFloat64() / s.rate
	s.at = sim.Time(math.Floor(s.t))
	s.flow = s.flows[s.rng.IntN(len(s.flows))]
}
