package run

import (
	"math"
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// With a small send buffer the senders sleep in sock_wait_for_wmem and
// are woken by TX completion: vmstat shows fewer runnable tasks, idle
// time and context switches, and cpu_sys_pct is cpu_busy_pct (no user
// time in the model).
func TestSendersBlockAndVMStat(t *testing.T) {
	for _, placement := range []string{workload.Spread, workload.Unpinned} {
		full := small()
		full.Workload.Placement = placement
		tight := full
		tight.Set = []string{"sndbuf=4608"}
		a, b := mustRun(t, full), mustRun(t, tight)
		t.Logf("%s: sndbuf default: r %.2f cs %.0f/s sy %.1f id %.1f; sndbuf 4608: r %.2f cs %.0f/s sy %.1f id %.1f sleeps %d wakeups %d migrations %d",
			placement, a.RunnableAvg, a.ContextSwitchesPerS, a.CPUSysPct, a.CPUIdlePct,
			b.RunnableAvg, b.ContextSwitchesPerS, b.CPUSysPct, b.CPUIdlePct,
			b.Counters["sender_sndbuf_sleeps"], b.Counters["sender_sndbuf_wakeups"], b.Counters["sender_migrations"])
		if a.Counters["sender_sndbuf_sleeps"] != 0 || math.Abs(a.RunnableAvg-8) > 0.01 {
			t.Errorf("%s, default sndbuf: %d sleeps, r %.2f; want none and 8", placement, a.Counters["sender_sndbuf_sleeps"], a.RunnableAvg)
		}
		if b.Counters["sender_sndbuf_sleeps"] == 0 || b.Counters["sender_sndbuf_wakeups"] == 0 {
			t.Errorf("%s, sndbuf 4608: sleeps %d wakeups %d, want both", placement, b.Counters["sender_sndbuf_sleeps"], b.Counters["sender_sndbuf_wakeups"])
		}
		if b.RunnableAvg >= 7.9 || b.ContextSwitchesPerS == 0 || b.CPUIdlePct <= a.CPUIdlePct {
			t.Errorf("%s, sndbuf 4608: r %.2f cs %.0f/s id %.1f, want fewer runnable, switches, more idle than %.1f",
				placement, b.RunnableAvg, b.ContextSwitchesPerS, b.CPUIdlePct, a.CPUIdlePct)
		}
		for _, r := range []*struct {
			name      string
			sys, busy float64
		}{{"default", a.CPUSysPct, a.CPUBusyPct}, {"4608", b.CPUSysPct, b.CPUBusyPct}} {
			if math.Abs(r.sys-r.busy) > 1e-6 {
				t.Errorf("%s: cpu_sys_pct %.4f != cpu_busy_pct %.4f", r.name, r.sys, r.busy)
			}
		}
		if !b.AccountingOK {
			t.Error(b.AccountingError)
		}
	}
}

// E1's mechanism on a small host: with a socket-by-socket XPS map,
// netperf processes started one by one are pulled to the NIC's socket
// by their control reply (a sync wake-up from a busy IRQ CPU), keep
// the queue XPS gave them there, and crowd the first socket's queues;
// pinned ones, and unpinned ones started together, use every queue.
func TestLaunchCrowdsTheNICSocketsQueues(t *testing.T) {
	base := Default()
	base.Sockets, base.Cores, base.Threads = 2, 8, 2
	base.Queues, base.XPS, base.Qdisc = 8, "cores", "mq fq"
	// The static 50 us ITR the pull was measured with: under ice's TX DIM
	// (8 us at the start, 40 us three steps later) the IRQ CPUs' load
	// during the launches differs and 0.61, not most, crowd socket 0.
	base.DriverArgs = []string{"adaptive-tx", "off"}
	base.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 16, PacketSize: 120, Launch: 20 * sim.Microsecond}
	base.Duration, base.Warmup = 3*sim.Millisecond, sim.Millisecond
	socket0 := func(s Spec) float64 { // share of packets sent on queues 0-3
		rep := mustRun(t, s)
		var on0, all uint64
		for _, q := range rep.Queues {
			all += q.TxPackets
			if q.Txq < 4 {
				on0 += q.TxPackets
			}
		}
		if all == 0 {
			t.Fatalf("%s: nothing sent", s.Workload.PlacementWord())
		}
		return float64(on0) / float64(all)
	}
	unpinned := base
	unpinned.Workload.Placement = workload.Unpinned
	pinned := base
	pinned.Workload.Placement = workload.Spread
	together := unpinned
	together.Workload.Launch = 0
	u, p, g := socket0(unpinned), socket0(pinned), socket0(together)
	t.Logf("share of packets on socket 0's queues: unpinned launched %.2f, pinned %.2f, unpinned together %.2f", u, p, g)
	// Fork balancing spreads the launches over both sockets (0.46 started
	// together); the wake-ups pull most of them to socket 0. (0.70 since
	// forks skip cores whose netperf only sleeps, by PELT; 0.78 before.)
	if u < 0.62 {
		t.Errorf("unpinned, launched one by one: %.2f of packets on socket 0's queues, want most", u)
	}
	for name, v := range map[string]float64{"pinned": p, "unpinned together": g} {
		if v < 0.35 || v > 0.65 {
			t.Errorf("%s: %.2f of packets on socket 0's queues, want about half", name, v)
		}
	}
}

// TestUnpinnedOnCPUSet: "unpinned:LIST" keeps every sender on LIST's
// CPUs, as taskset -c LIST does, while the scheduler places them there
// (at fork, at each wake-up): the report's tasks sit on those CPUs only
// and spread over them, and only the queues XPS gives those CPUs send.
// The set is the socket the NIC is not on, where the control replies'
// wake-ups would not leave unconfined senders.
func TestUnpinnedOnCPUSet(t *testing.T) {
	s := Default()
	s.Sockets, s.Cores, s.Threads = 2, 4, 2 // CPUs 4-7 and 12-15 are socket 1's
	s.Queues, s.Qdisc = 8, "mq fq"
	s.XPS = "cores" // a queue per core: queues 4-7 socket 1's
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 6, PacketSize: 120, Launch: 20 * sim.Microsecond,
		Placement: "unpinned:4-7,12-15"}
	s.Duration, s.Warmup = 2*sim.Millisecond, 0
	rep := mustRun(t, s)
	onSet, cpus := 0, 0
	for _, c := range rep.CPUs {
		if c.Tasks == 0 {
			continue
		}
		cpus++
		if c.Socket != 1 {
			t.Errorf("CPU %d (socket %d) holds %d senders; the set is socket 1's", c.CPU, c.Socket, c.Tasks)
		}
		onSet += c.Tasks
	}
	if onSet != 6 || cpus < 4 {
		t.Errorf("%d senders on %d CPUs of the set, want all 6 spread over at least 4", onSet, cpus)
	}
	for _, q := range rep.Queues {
		if q.Txq < 4 && q.TxPackets > 0 {
			t.Errorf("queue %d (socket 0's) sent %d packets", q.Txq, q.TxPackets)
		}
	}
	if rep.Setup.Placement != "unpinned:4-7,12-15" {
		t.Errorf("setup placement %q", rep.Setup.Placement)
	}
}

// threadsByCPU counts what ps -eLo psr would: a thread on each CPU it
// was placed on, asleep or not, and no per-CPU kernel thread (ksoftirqd,
// woken here by softirq work past MAX_SOFTIRQ_RESTART).
func TestThreadsByCPULeavesKthreadsOut(t *testing.T) {
	e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1}, sim.DefaultCosts(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := e.CPUs[0]
	runs := 0
	c.SetSoftirqHandler(sim.NetRxSoftirq, func(c *sim.CPU) {
		runs++
		c.Spend(100)
		if runs < 25 {
			c.RaiseSoftirq(sim.NetRxSoftirq) // more work left: past the restarts, ksoftirqd
		}
	})
	e.RaiseIRQ(c, 10*sim.Microsecond, func(c *sim.CPU) { c.RaiseSoftirq(sim.NetRxSoftirq) })
	sender := e.NewTask("netperf/0", []int{1}, func(t *sim.Task) { t.CPU().Spend(1000) })
	sleeper := e.NewTask("netperf/1", []int{1}, func(t *sim.Task) { t.Block() })
	sender.Start(0)
	sleeper.Start(0)
	if err := e.Run(sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	kthreads := 0
	for _, t := range e.Tasks() {
		if t.Kthread() {
			kthreads++
		}
	}
	if kthreads == 0 {
		t.Fatal("no ksoftirqd was made: the test does not test")
	}
	// netperf/0 has exited; netperf/1 sleeps on CPU 1.
	if got := threadsByCPU(e); got[0] != 0 || got[1] != 1 {
		t.Errorf("threads by CPU %v, want [0 1]: the sleeper, not ksoftirqd/0 nor the exited sender", got)
	}
}
