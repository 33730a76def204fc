package run

import (
	"math"
	"testing"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// --irq-cpus moves the queues' interrupts, and with them TX completion
// work: a sender pinned to CPU 0 on a one-queue NIC gets its own
// completions by default (the vector's CPU is 0), and leaves them to
// CPU 3 with --irq-cpus 3; the report says where they went (setup, the
// queue's irq_cpu) and mpstat -P's columns say what each CPU did: CPU
// 3, running no task, spends its busy time in interrupts only.
func TestIRQCPUsPlaceCompletions(t *testing.T) {
	run := func(irq string) (map[int]report.CPU, *report.Report) {
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
		out := map[int]report.CPU{}
		for _, c := range rep.CPUs {
			out[c.CPU] = c
		}
		return out, rep
	}
	def, rep := run("")
	if def[3].BusyPct != 0 || rep.Setup.IRQCPUs != "" || rep.Queues[0].IRQCPU != 0 {
		t.Errorf("driver's spread: CPU 3 %.2f%% busy, setup %q, queue 0's irq_cpu %d; want it idle, nothing shown, 0",
			def[3].BusyPct, rep.Setup.IRQCPUs, rep.Queues[0].IRQCPU)
	}
	moved, rep := run("3")
	if moved[3].BusyPct == 0 || moved[0].BusyPct >= def[0].BusyPct || rep.Setup.IRQCPUs != "3" || rep.Queues[0].IRQCPU != 3 {
		t.Errorf("--irq-cpus 3: CPU 0 %.2f%% (%.2f%% before), CPU 3 %.2f%% busy, setup %q, queue 0's irq_cpu %d; want CPU 3 busy, CPU 0 less, \"3\" shown, 3",
			moved[0].BusyPct, def[0].BusyPct, moved[3].BusyPct, rep.Setup.IRQCPUs, rep.Queues[0].IRQCPU)
	}
	if c := moved[3]; c.SysPct != 0 || c.SoftPct == 0 || c.IrqPct == 0 || math.Abs(c.IrqPct+c.SoftPct-c.BusyPct) > 1e-9 {
		t.Errorf("CPU 3 (interrupts only): %%sys %.2f, %%irq %.2f, %%soft %.2f, busy %.2f; want no %%sys, the rest its busy time",
			c.SysPct, c.IrqPct, c.SoftPct, c.BusyPct)
	}
	if c := moved[0]; c.SysPct == 0 || c.SoftPct >= def[0].SoftPct {
		t.Errorf("CPU 0 (the sender): %%sys %.2f, %%soft %.2f (%.2f with the interrupts); want system time, less softirq",
			c.SysPct, c.SoftPct, def[0].SoftPct)
	}
}
