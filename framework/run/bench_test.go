package run

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// benchRun reports the simulator's speed in simulated packets per wall
// second ("simpkts/s"), the figure the README quotes.
func benchRun(b *testing.B, s Spec) {
	var pkts uint64
	for i := 0; i < b.N; i++ {
		rep, err := Run(s, nil)
		if err != nil {
			b.Fatal(err)
		}
		pkts += rep.TxPackets
	}
	b.ReportMetric(float64(pkts)/b.Elapsed().Seconds(), "simpkts/s")
}

// BenchmarkSimSmall: 8 CPUs, 8 senders, 4-queue ice, mq pfifo, 10 ms.
func BenchmarkSimSmall(b *testing.B) {
	s := small()
	s.Duration, s.Warmup = 10*sim.Millisecond, 0
	benchRun(b, s)
}

// BenchmarkSimLarge: the E1 host, 480 CPUs, 240 senders, 30 queues, 5 ms.
func BenchmarkSimLarge(b *testing.B) {
	for _, prof := range []string{"6.18", "6.19-rc1"} {
		b.Run(prof, func(b *testing.B) {
			s := e1Host(prof, 240)
			s.Duration, s.Warmup = 5*sim.Millisecond, 0
			benchRun(b, s)
		})
	}
}

// BenchmarkSimRate: open-loop udp_rate at 5 Mpps over 16 flows on veth.
func BenchmarkSimVeth(b *testing.B) {
	s := small()
	s.Driver, s.Qdisc, s.Queues = "veth", "", 1
	s.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 4, PacketSize: 64, Flows: 16, Rate: 5e6}
	s.Duration, s.Warmup = 10*sim.Millisecond, 0
	benchRun(b, s)
}

// e5Host is E5's host: 16 CPUs, veth with 8 queues and the peer's NAPI,
// cake_mq bandwidth 2Gbit besteffort, a 50 us path with a 2 Gbit down
// link.
func e5Host() Spec {
	s := Default()
	s.Profile = "net-next"
	s.Sockets, s.Cores, s.Threads = 1, 8, 2
	s.Driver, s.DriverArgs, s.Queues = "veth", []string{"gro", "on"}, 8
	s.Qdisc = "cake_mq bandwidth 2Gbit besteffort"
	s.Workload.Kind = workload.TCPStream
	s.Workload.Path.RTT = 50 * sim.Microsecond
	s.PathRateDown = "2Gbit"
	s.Duration, s.Warmup = 500*sim.Millisecond, 0
	return s
}

// benchTCP is benchRun for TCP runs: host packets (tx_packets, cake's
// split segments each one) and packets the path carried (segments and
// ACKs, both ways) per wall second.
func benchTCP(b *testing.B, s Spec) {
	var pkts, wire uint64
	for i := 0; i < b.N; i++ {
		rep, err := Run(s, nil)
		if err != nil {
			b.Fatal(err)
		}
		pkts += rep.TxPackets
		wire += rep.TCP.Path.Up.Delivered + rep.TCP.Path.Down.Delivered
	}
	b.ReportMetric(float64(pkts)/b.Elapsed().Seconds(), "simpkts/s")
	b.ReportMetric(float64(wire)/b.Elapsed().Seconds(), "pathpkts/s")
}

// BenchmarkSimTCPNup: flent tcp_nup, 32 TCP uploads through cake_mq at
// 2 Gbit on veth (E5's nup cell), 500 ms.
func BenchmarkSimTCPNup(b *testing.B) {
	s := e5Host()
	s.Workload.Flows = 32
	s.Ping = 10 * sim.Millisecond
	benchTCP(b, s)
}

// BenchmarkSimRRUL: flent rrul, 4 up, 4 down (2 Gbit back), ping and
// three UDP_RR probes, on E5's host, 500 ms.
func BenchmarkSimRRUL(b *testing.B) {
	s := e5Host()
	s.Workload.Flows, s.Workload.Down = 4, 4
	s.Workload.Marks = []uint8{0, 8, 40, 46}
	s.Workload.Probes = []workload.Probe{{Kind: workload.ProbeUDPRR}, {Kind: workload.ProbeUDPRR, DSCP: 8}, {Kind: workload.ProbeUDPRR, DSCP: 46}}
	s.Ping = 10 * sim.Millisecond
	benchTCP(b, s)
}
