package run

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// --irq-cpus moves the queues' interrupts, and with them TX completion
// work: a sender pinned to CPU 0 on a one-queue NIC gets its own
// completions by default (the vector's CPU is 0), and leaves them to
// CPU 3 with --irq-cpus 3; the report says where they went.
func TestIRQCPUsPlaceCompletions(t *testing.T) {
	busy := func(irq string) (map[int]float64, string) {
		s := Default()
		s.Sockets, s.Cores, s.Threads = 1, 4, 1
		s.Queues, s.Qdisc = 1, "pfifo"
		s.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 1, PacketSize: 120, Flows: 1, Rate: 400e3, Placement: "0"}
		s.Duration, s.Warmup = 4*sim.Millisecond, sim.Millisecond
		s.IRQCPUs = irq
		rep, err := Run(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int]float64{}
		for _, c := range rep.CPUs {
			out[c.CPU] = c.BusyPct
		}
		return out, rep.Setup.IRQCPUs
	}
	def, shown := busy("")
	if def[3] != 0 || shown != "" {
		t.Errorf("driver's spread: CPU 3 %.2f%% busy, setup %q; want it idle and nothing shown", def[3], shown)
	}
	moved, shown := busy("3")
	if moved[3] == 0 || moved[0] >= def[0] || shown != "3" {
		t.Errorf("--irq-cpus 3: CPU 0 %.2f%% (%.2f%% before), CPU 3 %.2f%% busy, setup %q; want CPU 3 busy, CPU 0 less, \"3\" shown",
			moved[0], def[0], moved[3], shown)
	}
}
