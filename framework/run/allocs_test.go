package run

import (
	"runtime"
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// runAllocs is the heap allocations and packets of one run of s.
func runAllocs(t *testing.T, s Spec) (allocs, pkts uint64) {
	t.Helper()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	rep, err := Run(s, nil)
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	return m1.Mallocs - m0.Mallocs, rep.TxPackets
}

// leastAllocs is runAllocs's count at its least over two runs of s: a
// run's own allocations are the same each time (the same spec sends the
// same packets), while the runtime's and other goroutines' in the
// window come and go and only ever add.
func leastAllocs(t *testing.T, s Spec) (allocs, pkts uint64) {
	t.Helper()
	a, p := runAllocs(t, s)
	b, q := runAllocs(t, s)
	if p != q {
		t.Fatalf("the same run sent %d packets, then %d", p, q)
	}
	return min(a, b), p
}

// The data path allocates nothing per packet once warm: a run three
// times as long (the same number of report intervals) sends far more
// packets for almost no more allocations. What is left is growth with
// the backlog (a queue's ring doubling while cake's flows fill up),
// logarithmic in it: well under one allocation per hundred packets.
// TCP too: segments and ACKs travel the path and the local receive path
// as values, with no closure per packet.
func TestSteadyStateAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("several runs")
	}
	fq := small()
	fq.Queues, fq.RateBps, fq.Qdisc = 1, 1_000_000_000, "fq_codel"
	fq.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 8, PacketSize: 120, Flows: 64, Rate: 650e3}
	nolock := small()
	nolock.Qdisc = "mq pfifo_fast"
	cake := e2bHost("6.19-rc1")
	// TCP: tcp_nup's 32 uploads through cake_mq on veth (the TCP
	// benchmark's), and rrul's 4 up and 4 down with ping and UDP_RR
	// probes, from 60 ms on: past slow start and a first delayed-ACK
	// timeout (40 ms), when the far end's pending timeouts stop
	// growing. Their runs are longer: a TCP packet is a 1514-byte
	// segment at 2 Gbit.
	nup := e5Host()
	nup.Workload.Flows = 32
	nup.Warmup = 60 * sim.Millisecond
	rrul := e5Host()
	rrul.Workload.Flows, rrul.Workload.Down = 4, 4
	rrul.Workload.Marks = []uint8{0, 8, 40, 46}
	rrul.Workload.Probes = []workload.Probe{{Kind: workload.ProbeUDPRR}, {Kind: workload.ProbeUDPRR, DSCP: 8}}
	rrul.Warmup = 60 * sim.Millisecond
	// Ingress shaping through an ifb: mirred, ifb_xmit, the tasklet and
	// the forwarding path after it, every frame (BenchmarkSimIfb's).
	ifb := fwd("6.18", "mq pfifo", 250e3)
	ifb.Workload.PacketSize = 1000
	ifb.Warmup = 5 * sim.Millisecond
	ifb.Ifb = "ifb0"
	ifb.TC = []TCBatch{{Name: "ifb.tc", Text: "qdisc add dev eth0 handle ffff: ingress\n" +
		"filter add dev eth0 parent ffff: protocol ip prio 1 matchall action mirred egress redirect dev ifb0\n" +
		"qdisc replace dev ifb0 root handle 1: htb default 1\nclass add dev ifb0 parent 1: classid 1:1 htb rate 5gbit\n" +
		"qdisc add dev ifb0 parent 1:1 fq_codel\n"}}
	for _, tc := range []struct {
		name string
		s    Spec
		span sim.Time // the short run's measured time; the long one's is three times as long
	}{{"mq pfifo", small(), 5 * sim.Millisecond}, {"mq pfifo_fast", nolock, 5 * sim.Millisecond}, {"fq_codel", fq, 5 * sim.Millisecond},
		{"cake forward", cake, 5 * sim.Millisecond}, {"tcp_nup", nup, 20 * sim.Millisecond}, {"rrul", rrul, 20 * sim.Millisecond},
		{"ifb", ifb, 5 * sim.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			short, long := tc.s, tc.s
			short.Duration, long.Duration = short.Warmup+tc.span, short.Warmup+3*tc.span
			// As many report intervals after the warm-up in each.
			short.Interval, long.Interval = tc.span/5, 3*tc.span/5
			runAllocs(t, short) // warm what is process-wide (plugin registries, pools)
			a0, p0 := leastAllocs(t, short)
			a1, p1 := leastAllocs(t, long)
			if p1 < p0+1000 {
				t.Fatalf("the long run sent %d packets, the short one %d", p1, p0)
			}
			per := (float64(a1) - float64(a0)) / float64(p1-p0)
			t.Logf("%d -> %d allocations for %d -> %d packets: %.4f per packet", a0, a1, p0, p1, per)
			if per > 0.01 {
				t.Errorf("%.4f heap allocations per packet in steady state, want 0", per)
			}
		})
	}
}
