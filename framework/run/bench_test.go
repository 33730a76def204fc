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
