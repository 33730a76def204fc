package run

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/txlab/txlab/framework/internal/cputime"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// benchRun reports the simulator's speed in simulated packets per wall
// second ("simpkts/s", the figure the README quotes), and per packet
// sent: wall ns, CPU ns, heap allocations, heap bytes and engine events. The
// allocation figures count the whole run, set-up included, so they
// approach the steady state's as the run gets longer.
func benchRun(b *testing.B, s Spec) time.Duration {
	var pkts, events uint64
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := cputime.Process()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := Run(s, nil)
		if err != nil {
			b.Fatal(err)
		}
		pkts += rep.TxPackets
		events += rep.Events
	}
	b.StopTimer()
	cpu := cputime.Process() - cpu0
	runtime.ReadMemStats(&m1)
	p := float64(pkts)
	b.ReportMetric(float64(cpu.Nanoseconds())/p, "cpu-ns/pkt")
	b.ReportMetric(p/b.Elapsed().Seconds(), "simpkts/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/p, "ns/pkt")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/p, "allocs/pkt")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/p, "B/pkt")
	b.ReportMetric(float64(events)/p, "events/pkt")
	return cpu
}

// BenchmarkSimSmall: 8 CPUs, 8 senders, 4-queue ice, mq pfifo, 10 ms.
func BenchmarkSimSmall(b *testing.B) {
	s := small()
	s.Duration, s.Warmup = 10*sim.Millisecond, 0
	benchRun(b, s)
}

// BenchmarkSimPfifoFast: SimSmall's host with the kernel's default
// qdisc for a multiqueue NIC, mq over pfifo_fast.
func BenchmarkSimPfifoFast(b *testing.B) {
	s := small()
	s.Qdisc = "mq pfifo_fast"
	s.Duration, s.Warmup = 10*sim.Millisecond, 0
	benchRun(b, s)
}

// BenchmarkSimFqCodel: 8 CPUs, one 1 Gbit queue under a root fq_codel,
// 8 udp_rate senders offering 650 kpps (97% of the link) over 64 flows:
// bursts queue in 64 flows.
func BenchmarkSimFqCodel(b *testing.B) {
	s := small()
	s.Queues, s.RateBps, s.Qdisc = 1, 1_000_000_000, "fq_codel"
	s.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 8, PacketSize: 120, Flows: 64, Rate: 650e3}
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

// BenchmarkSimIdleCPUs: 16 udp_stream senders on E1's NIC and hosts of
// 32 to 480 CPUs: what idle CPUs add to the cost of a packet.
func BenchmarkSimIdleCPUs(b *testing.B) {
	for _, cores := range []int{8, 30, 60, 120} {
		b.Run(fmt.Sprintf("cpus=%d", 4*cores), func(b *testing.B) {
			s := e1Host("6.19-rc1", 16)
			s.Cores = cores
			s.Duration, s.Warmup = 5*sim.Millisecond, 0
			benchRun(b, s)
		})
	}
}

// BenchmarkSimVeth: open-loop udp_rate at 5 Mpps over 16 flows on veth.
func BenchmarkSimVeth(b *testing.B) {
	s := small()
	s.Driver, s.Qdisc, s.Queues = "veth", "", 1
	s.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 4, PacketSize: 64, Flows: 16, Rate: 5e6}
	s.Duration, s.Warmup = 10*sim.Millisecond, 0
	benchRun(b, s)
}

// e2bHost is scripts/e2b.tengo's DUT: 20 cores x 2 threads, an XXV710
// (i40e) with 4 queues at 25 Gbit under a root cake, 21 Mpps of 64-byte
// frames forwarded back out.
func e2bHost(profile string) Spec {
	s := Default()
	s.Profile = profile
	s.Sockets, s.Cores, s.Threads = 1, 20, 2
	s.Driver, s.Queues, s.RateBps = "i40e", 4, 25_000_000_000
	s.Qdisc = "cake besteffort flows nonat nowash no-ack-filter split-gso rtt 100ms noatm overhead 18 mpu 64"
	s.Workload = workload.Spec{Kind: workload.Forward, PacketSize: 22, Flows: 16, Rate: 21e6}
	s.Warmup, s.Interval = 30*sim.Millisecond, 10*sim.Millisecond
	return s
}

// BenchmarkSimE2b: one variant of E2b for 100 ms of simulated time.
// "simsec/s" is simulated seconds per wall second; "2min-wall-s" the
// wall seconds the seeds' two-minute run of one variant would take at
// that speed, and "2min-cpu-s" the CPU seconds it would take (its wall
// time on a core of its own).
func BenchmarkSimE2b(b *testing.B) {
	for _, prof := range []string{"6.18", "6.19-rc1"} {
		b.Run(prof, func(b *testing.B) {
			s := e2bHost(prof)
			s.Duration = 100 * sim.Millisecond
			start := time.Now()
			cpu := benchRun(b, s)
			simSec := float64(sim.Time(b.N)*s.Duration) / 1e9
			wall := time.Since(start).Seconds()
			b.ReportMetric(simSec/wall, "simsec/s")
			b.ReportMetric(120*wall/simSec, "2min-wall-s")
			b.ReportMetric(120*cpu.Seconds()/simSec, "2min-cpu-s")
		})
	}
}

// e5Host is E5's host: 16 CPUs, veth with 8 queues and GRO on the peer,
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
// ACKs, both ways) per wall second, and per host packet: CPU ns, heap
// allocations and bytes (the whole run's, set-up included).
func benchTCP(b *testing.B, s Spec) {
	var pkts, wire uint64
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := cputime.Process()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := Run(s, nil)
		if err != nil {
			b.Fatal(err)
		}
		pkts += rep.TxPackets
		wire += rep.TCP.Path.Up.Delivered + rep.TCP.Path.Down.Delivered
	}
	b.StopTimer()
	cpu := cputime.Process() - cpu0
	runtime.ReadMemStats(&m1)
	p := float64(pkts)
	b.ReportMetric(float64(cpu.Nanoseconds())/p, "cpu-ns/pkt")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/p, "allocs/pkt")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/p, "B/pkt")
	b.ReportMetric(p/b.Elapsed().Seconds(), "simpkts/s")
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

// BenchmarkSimIfb: ingress shaping through an ifb on a forwarding DUT
// (8 CPUs, i40e 4 queues, 250 Kpps of 1000-byte frames, 2 Gbit/s): the
// ingress qdisc's mirred to ifb0, an htb at 5 Gbit/s with fq_codel
// there, ifb's tasklet back into the forwarding path; 20 ms. Every
// frame takes the path, none is dropped.
func BenchmarkSimIfb(b *testing.B) {
	s := fwd("6.18", "mq pfifo", 250e3)
	s.Workload.PacketSize = 1000
	s.Duration, s.Warmup = 20*sim.Millisecond, 0
	s.Ifb = "ifb0"
	s.TC = []TCBatch{{Name: "ifb.tc", Text: "qdisc add dev eth0 handle ffff: ingress\n" +
		"filter add dev eth0 parent ffff: protocol ip prio 1 matchall action mirred egress redirect dev ifb0\n" +
		"qdisc replace dev ifb0 root handle 1: htb default 1\nclass add dev ifb0 parent 1: classid 1:1 htb rate 5gbit\n" +
		"qdisc add dev ifb0 parent 1:1 fq_codel\n"}}
	benchRun(b, s)
}
