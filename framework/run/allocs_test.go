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

// The data path allocates nothing per packet once warm: a run three
// times as long (the same number of report intervals) sends far more
// packets for almost no more allocations. What is left is growth with
// the backlog (a queue's ring doubling while cake's flows fill up),
// logarithmic in it: well under one allocation per hundred packets.
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
	for _, tc := range []struct {
		name string
		s    Spec
	}{{"mq pfifo", small()}, {"mq pfifo_fast", nolock}, {"fq_codel", fq}, {"cake forward", cake}} {
		t.Run(tc.name, func(t *testing.T) {
			short, long := tc.s, tc.s
			short.Duration, long.Duration = short.Warmup+5*sim.Millisecond, short.Warmup+15*sim.Millisecond
			short.Interval, long.Interval = short.Duration/10, long.Duration/10
			runAllocs(t, short) // warm what is process-wide (plugin registries, pools)
			a0, p0 := runAllocs(t, short)
			a1, p1 := runAllocs(t, long)
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
