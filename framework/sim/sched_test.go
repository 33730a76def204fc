package sim

import (
	"slices"
	"testing"
)

// A blocked task leaves its CPU idle; the wake-up costs the waker
// wake_up, the idle CPU wakes after wake_idle_latency and switches in.
func TestBlockAndWake(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1})
	costs := e.Costs
	var wq WaitQueue
	ready := false
	var wokeAt Time = -1
	var wokeOn int
	sleeper := e.NewTask("sleeper", []int{0}, func(t *Task) {
		for !ready {
			wq.Add(t)
			if ready {
				break
			}
			t.Block()
		}
		wq.Remove(t)
		wokeAt, wokeOn = t.CPU().Now(), t.CPU().ID
	})
	sleeper.Start(0)
	var wakerBefore, wakerAfter Time
	e.NewTask("waker", []int{1}, func(t *Task) {
		c := t.CPU()
		c.Spend(10_000)
		c.Sync()
		ready = true
		wakerBefore = c.Now()
		if n := wq.WakeUp(c, false); n != 1 {
			t.e.Fail(&ModelError{Msg: "woke " + string(rune('0'+n)) + " tasks"})
		}
		wakerAfter = c.Now()
	}).Start(0)
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := wakerAfter - wakerBefore; got != Time(costs.WakeUp) {
		t.Errorf("waker paid %d ns, want wake_up %d", got, costs.WakeUp)
	}
	// Woken at 10us: CPU 0 leaves idle after wake_idle_latency, then switches in.
	want := Time(10_000+costs.WakeUp+costs.WakeIdleLatency) + Time(costs.ContextSwitch)
	if wokeAt != want || wokeOn != 0 {
		t.Errorf("sleeper resumed at %d on CPU %d, want %d on CPU 0", wokeAt, wokeOn, want)
	}
	// CPU 0 was busy only switching: out to idle, back in (and out again at exit).
	if b := e.CPUs[0].Busy(); b > 4*Time(costs.ContextSwitch) {
		t.Errorf("CPU 0 busy %d ns while its task slept", b)
	}
	if sleeper.Nvcsw != 1 || sleeper.Wakeups != 1 || sleeper.Migrations != 0 {
		t.Errorf("sleeper nvcsw %d wakeups %d migrations %d, want 1 1 0", sleeper.Nvcsw, sleeper.Wakeups, sleeper.Migrations)
	}
	if st := e.CPUs[0].SchedStat(); st.Switches < 2 {
		t.Errorf("CPU 0 counted %d context switches, want >= 2", st.Switches)
	}
}

// busy marks CPUs as running one task each (for placement tests).
func busy(e *Engine, ids ...int) {
	for _, id := range ids {
		c := e.CPUs[id]
		c.curr = &Task{Name: "busy", e: e, cpu: c, single: id, state: TaskRunning}
		c.rq.nrRunning = 1
	}
}

// select_task_rq_fair's fast path, case by case, on 2 sockets x 3
// cores x 2 threads: socket 0 has CPUs 0,1,2 with siblings 6,7,8;
// socket 1 has 3,4,5 with siblings 9,10,11.
func TestSelectTaskRq(t *testing.T) {
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	tests := []struct {
		name        string
		busy        []int
		prev, waker int
		sync        bool
		want        int
	}{
		{"prev idle, waker busy: prev", []int{1}, 0, 1, false, 0},
		{"sync wake from a CPU running one task: an idle core of its LLC", []int{0, 1}, 0, 1, true, 2},
		{"idle waker in prev's LLC, prev busy: the waker", []int{0}, 0, 1, false, 1},
		{"prev busy in the other LLC, sync waker: the waker's LLC", []int{3, 0}, 3, 0, true, 1},
		// An interrupt's sync wake-up (sock_def_readable from NET_RX on
		// a CPU running a task) pulls an idle task across sockets: what
		// moves E1's unpinned netperfs to the NIC's socket.
		{"prev idle in the other LLC, sync wake from a CPU running one task: the waker's LLC", []int{0}, 3, 0, true, 1},
		{"prev idle in the other LLC, sync wake from an idle CPU: prev", nil, 3, 0, true, 3},
		{"no idle core in the LLC: prev's idle SMT sibling", []int{0, 1, 2, 7}, 0, 1, false, 6},
		{"engine-context wake (no waker): prev's LLC", []int{0}, 0, -1, false, 1},
		{"everything busy: the wake_affine target", all, 3, 0, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := testEngine(t, Topology{Sockets: 2, CoresPerSocket: 3, ThreadsPerCore: 2})
			for _, c := range e.CPUs {
				c.curr = c.idle
			}
			busy(e, tt.busy...)
			p := &Task{Name: "p", e: e, single: -1, recentUsed: -1, cpu: e.CPUs[tt.prev], state: TaskSleeping}
			var waker *CPU
			if tt.waker >= 0 {
				waker = e.CPUs[tt.waker]
			}
			if got := e.selectTaskRq(p, waker, tt.sync); got != tt.want {
				t.Errorf("select_task_rq = CPU %d, want %d", got, tt.want)
			}
		})
	}
}

// Unpinned tasks placed before the run land where Topology.Spread
// puts pinned ones: one per core, alternating sockets, then siblings.
func TestForkPlacementSpreads(t *testing.T) {
	topo := Topology{Sockets: 2, CoresPerSocket: 3, ThreadsPerCore: 2}
	e := testEngine(t, topo)
	var got []int
	for i := 0; i < 10; i++ {
		tk := e.NewTask("t", nil, func(t *Task) { t.CPU().Sleep() })
		tk.Start(0)
		got = append(got, tk.CPU().ID)
	}
	if want := topo.Spread(10); !slices.Equal(got, want) {
		t.Errorf("fork placement %v, want %v", got, want)
	}
}

// A task forked while the machine runs is placed on the load of that
// moment, and holds no CPU before: here socket 0 fills meanwhile, so
// the late task goes to socket 1 though it is the lower socket.
func TestForkPlacesOnTheLoadThen(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 2, CoresPerSocket: 2, ThreadsPerCore: 1})
	for _, id := range []int{0, 1} {
		e.NewTask("busy", []int{id}, spinTask).Fork(Microsecond)
	}
	late := e.NewTask("late", nil, spinTask)
	late.Fork(10 * Microsecond)
	if late.CPU() != nil {
		t.Fatalf("forked task placed at once on CPU %d", late.CPU().ID)
	}
	if err := e.Run(20 * Microsecond); err != nil {
		t.Fatal(err)
	}
	if c := late.CPU(); c == nil || c.Socket != 1 || late.State() != TaskRunning {
		t.Fatalf("late task on %v (%v), want running on socket 1", c, late.State())
	}
	for _, id := range []int{0, 1} {
		if cur := e.CPUs[id].Current(); cur == nil || cur.Name != "busy" {
			t.Errorf("CPU %d runs %v, want its busy task", id, cur)
		}
	}
}

// Two CPU-bound tasks on one CPU share it slice by slice: the tick
// preempts the running one once it has used its slice.
func TestTickSharesCPU(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1})
	var work [2]Time
	var tasks [2]*Task
	for i := range tasks {
		idx := i
		tasks[i] = e.NewTask("spin", []int{0}, func(t *Task) {
			for {
				c := t.CPU()
				c.Spend(1000)
				work[idx] += 1000
				c.Sync()
				t.PreemptPoint()
			}
		})
		tasks[i].Start(0)
	}
	if err := e.Run(20 * Millisecond); err != nil {
		t.Fatal(err)
	}
	slice := baseSlice(1) // 0.75 ms on one CPU
	for i, w := range work {
		if w < 8*Millisecond || w > 12*Millisecond {
			t.Errorf("task %d ran %v of 20ms, want about half", i, w)
		}
	}
	if n := tasks[0].Nivcsw + tasks[1].Nivcsw; n < uint64(20*Millisecond/slice)/2 || n > uint64(20*Millisecond/Jiffy)+1 {
		t.Errorf("%d preemptions in 20ms with a %v slice and a 1ms tick", n, slice)
	}
	if r := float64(e.CPUs[0].SchedStat().RunnableNs) / float64(20*Millisecond); r < 1.99 || r > 2.01 {
		t.Errorf("runnable average %.3f, want 2", r)
	}
}

// spinOn is a task that works forever in 1 us steps, yielding where it
// may be preempted, and records in *ran the CPU of its latest step.
func spinOn(ran *int) func(*Task) {
	return func(t *Task) {
		for {
			c := t.CPU()
			*ran = c.ID
			c.Spend(1000)
			c.Sync()
			t.PreemptPoint()
		}
	}
}

// A CPU going idle pulls a waiting task (newidle balance) from the
// busiest runqueue.
func TestNewidleBalancePulls(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1})
	var ran [3]int
	spin := func(i int) func(*Task) { return spinOn(&ran[i]) }
	a := e.NewTask("a", nil, spin(0))
	a.Start(0) // CPU 0
	b := e.NewTask("b", nil, func(t *Task) {
		t.CPU().Spend(1000) // then exits: CPU 1 goes idle
	})
	b.Start(0) // CPU 1
	c := e.NewTask("c", []int{0, 1}, spin(2))
	c.Start(0) // waits on CPU 0 or 1
	waitOn := c.CPU().ID
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	if waitOn != 0 && waitOn != 1 {
		t.Fatalf("c placed on %d", waitOn)
	}
	if ran[2] != 1 || ran[0] != 0 {
		t.Errorf("after b exits, c runs on CPU %d and a on CPU %d, want c pulled to 1, a on 0", ran[2], ran[0])
	}
}

// __do_softirq gives up after MAX_SOFTIRQ_RESTART rounds and wakes
// ksoftirqd, which serves the rest as a task.
func TestSoftirqToKsoftirqd(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1})
	c := e.CPUs[0]
	runs := 0
	c.SetSoftirqHandler(NetRxSoftirq, func(c *CPU) {
		runs++
		c.Spend(100)
		if runs < 25 {
			c.RaiseSoftirq(NetRxSoftirq) // time_squeeze: more work left
		}
	})
	e.RaiseIRQ(c, 10*Microsecond, func(c *CPU) { c.RaiseSoftirq(NetRxSoftirq) })
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	if runs != 25 {
		t.Errorf("handler ran %d times, want 25", runs)
	}
	k := c.rq.ksoftirqd
	if k == nil || k.Wakeups == 0 {
		t.Fatal("ksoftirqd never woke")
	}
	if k.state != TaskSleeping {
		t.Errorf("ksoftirqd is %v after the work, want asleep", k.state)
	}
}

// __do_softirq also stops at the jiffy deadline (MAX_SOFTIRQ_TIME).
func TestSoftirqTimeLimit(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1})
	c := e.CPUs[0]
	var inline int
	c.SetSoftirqHandler(NetRxSoftirq, func(c *CPU) {
		if c.curr.idle {
			inline++
		}
		c.Spend(int64(700 * Microsecond))
		if c.Now() < 5*Millisecond {
			c.RaiseSoftirq(NetRxSoftirq)
		}
	})
	e.RaiseIRQ(c, 0, func(c *CPU) { c.RaiseSoftirq(NetRxSoftirq) })
	if err := e.Run(10 * Millisecond); err != nil {
		t.Fatal(err)
	}
	// Started in jiffy 0: rounds end at 0.7, 1.4, 2.1 ms; 2.1 ms is in
	// jiffy 2 = start + MAX_SOFTIRQ_TIME, so the third round was the last.
	if inline != 3 {
		t.Errorf("%d rounds ran inline from irq exit, want 3 before the 2 ms bound", inline)
	}
}

// While its SMT sibling executes, a thread's work takes smt_share_pct
// longer; a spinning or idle sibling does not count. A cache line's
// transfer is a stall the sibling does not lengthen: the line takes the
// interconnect's time either way.
func TestSMTShare(t *testing.T) {
	costs := DefaultCosts()
	tests := []struct {
		name   string
		access func(c *CPU, l *CacheLine)
		alone  int64 // what the access costs with the sibling idle
		shared int64 // with the sibling executing
	}{
		{"work", func(c *CPU, _ *CacheLine) { c.Spend(1000) },
			1000, 1000 + 1000*costs.SMTSharePct/100},
		{"line from another core", func(c *CPU, l *CacheLine) { l.Write(c) },
			costs.LineSocket, costs.LineSocket},
		{"locked op on a line from another core", func(c *CPU, l *CacheLine) { l.Atomic(c) },
			costs.LineSocket + costs.AtomicOp, costs.LineSocket + costs.AtomicOp + costs.AtomicOp*costs.SMTSharePct/100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// CPUs 0 and 2 are one core's threads; CPU 1 is the other core.
			e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 2})
			var l CacheLine
			var alone, shared Time
			e.CPUs[1].Start(0, func(c *CPU) {
				l.Write(c)
				c.SleepUntil(8 * Microsecond)
				c.Sync()
				l.Write(c)
			})
			e.CPUs[0].Start(Microsecond, func(c *CPU) {
				start := c.Now()
				tt.access(c, &l)
				alone = c.Now() - start
				c.SleepUntil(10 * Microsecond)
				c.Sync()
				start = c.Now()
				tt.access(c, &l)
				shared = c.Now() - start
			})
			e.CPUs[2].Start(5*Microsecond, func(c *CPU) {
				c.Spend(100_000)
				c.Sync()
			})
			if err := e.Run(Millisecond); err != nil {
				t.Fatal(err)
			}
			if alone != Time(tt.alone) {
				t.Errorf("alone: took %d ns, want %d", alone, tt.alone)
			}
			if shared != Time(tt.shared) {
				t.Errorf("beside a busy sibling: took %d ns, want %d", shared, tt.shared)
			}
		})
	}
}

// perf lock record -C: only acquisitions on the listed CPUs count.
func TestLockCPUs(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 4, ThreadsPerCore: 1})
	e.SetLockCPUs([]int{1, 2})
	var l SpinLock
	site := e.LockSite("x")
	for i := 0; i < 4; i++ {
		e.CPUs[i].Start(Time(i), func(c *CPU) {
			l.Lock(c, site)
			c.Spend(1000)
			l.Unlock(c)
		})
	}
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	if site.Acquired != 2 || site.Contended != 2 {
		t.Errorf("acquired %d contended %d, want 2 and 2 (CPUs 1 and 2 only)", site.Acquired, site.Contended)
	}
}

func TestBaseSlice(t *testing.T) {
	for _, tt := range []struct {
		cpus int
		want Time
	}{{1, 750 * Microsecond}, {2, 1500 * Microsecond}, {4, 2250 * Microsecond}, {8, 3 * Millisecond}, {480, 3 * Millisecond}} {
		if got := baseSlice(tt.cpus); got != tt.want {
			t.Errorf("baseSlice(%d) = %v, want %v", tt.cpus, got, tt.want)
		}
	}
}

// Two tasks woken together onto an idle CPU: the idle loop switches to
// one; the tick, armed at that switch, gives the other its turn.
func TestTickAfterWakeOntoIdle(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1})
	var work [2]Time
	var tasks [2]*Task
	for i := range tasks {
		idx := i
		tasks[i] = e.NewTask("t", []int{0}, func(t *Task) {
			t.Block() // until the engine wakes both
			for {
				c := t.CPU()
				c.Spend(1000)
				work[idx] += 1000
				c.Sync()
				t.PreemptPoint()
			}
		})
		tasks[i].Start(0)
	}
	e.At(1500*Microsecond, func() { // after the first tick found the CPU idle
		for _, tk := range tasks {
			if !e.WakeUp(tk, nil) {
				t.Error("task was not asleep")
			}
		}
	})
	if err := e.Run(20 * Millisecond); err != nil {
		t.Fatal(err)
	}
	for i, w := range work {
		if w < 7*Millisecond {
			t.Errorf("task %d ran %v of 20ms, want about half", i, w)
		}
	}
}

// A sample taken inside a long softirq run counts its soft time so far,
// as it counts its busy time: mpstat's %soft never exceeds the busy
// share of the same interval.
func TestSoftTimeInProgress(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1})
	c := e.CPUs[0]
	c.SetSoftirqHandler(NetRxSoftirq, func(c *CPU) {
		for range 100 {
			c.Spend(int64(10 * Microsecond))
			c.Sync()
		}
	})
	e.RaiseIRQ(c, 10*Microsecond, func(c *CPU) { c.RaiseSoftirq(NetRxSoftirq) })
	var mid, end SchedStat
	e.At(500*Microsecond, func() { mid = c.SchedStat() })
	e.At(2*Millisecond, func() { end = c.SchedStat() })
	if err := e.Run(3 * Millisecond); err != nil {
		t.Fatal(err)
	}
	if mid.Soft < 480*Microsecond || mid.Soft > mid.Busy {
		t.Errorf("at 0.5 ms, 0.49 ms into the softirq run: soft %v, busy %v; want soft about 0.49 ms and at most busy", mid.Soft, mid.Busy)
	}
	if end.Soft < Millisecond || end.Soft > end.Busy || end.Soft-mid.Soft > end.Busy-mid.Busy {
		t.Errorf("after the run: soft %v busy %v (mid %v %v); soft must not outgrow busy", end.Soft, end.Busy, mid.Soft, mid.Busy)
	}
}

// DELAY_DEQUEUE (6.12 on): a task that blocks while it has run past its
// share of a shared CPU (not eligible: here it kept running after a
// second task joined at its vruntime) stays queued there, counted in
// nr_running; woken before the scheduler picks it, it is runnable on
// that CPU again (ttwu_runnable, no select_task_rq), though another CPU
// is idle. Picked first, it leaves the queue, and a later wake-up places
// it anew, on the idle CPU.
func TestDelayedDequeue(t *testing.T) {
	for _, c := range []struct {
		name     string
		wakeIn   Time // after A blocks
		wantCPU  int  // where the wake-up puts it
		wantMigr uint64
	}{
		{"woken while delayed", 100 * Microsecond, 0, 0},
		{"woken after its dequeue", 8 * Millisecond, 1, 1},
	} {
		e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1})
		blocked := Time(-1)
		e.NewTask("c", []int{1}, func(t *Task) { // CPU 1 busy until A blocks
			for blocked < 0 {
				t.CPU().Spend(1000)
				t.CPU().Sync()
			}
		}).Start(0)
		var wq WaitQueue
		placed, queued := -1, -1
		var migr uint64
		a := e.NewTask("a", []int{0, 1}, func(t *Task) {
			for t.CPU().Now() < 1200*Microsecond { // b joins at 1 ms
				t.CPU().Spend(1000)
				t.CPU().Sync()
			}
			wq.Add(t)
			blocked = t.CPU().Now()
			t.e.At(blocked+c.wakeIn, func() {
				wq.WakeUp(nil, false)
				placed, migr = t.cpu.ID, t.Migrations
			})
			t.e.At(blocked+10*Microsecond, func() { queued = t.e.CPUs[0].NrRunning() })
			t.Block()
			wq.Remove(t)
		})
		a.Start(0)
		e.NewTask("b", []int{0}, func(t *Task) {
			for {
				t.CPU().Spend(1000)
				t.CPU().Sync()
				t.PreemptPoint()
			}
		}).Start(Millisecond)
		if err := e.Run(20 * Millisecond); err != nil {
			t.Fatal(err)
		}
		if placed != c.wantCPU || migr != c.wantMigr || queued != 2 {
			t.Errorf("%s: woken onto CPU %d with %d migrations, nr_running %d on CPU 0 while asleep; want CPU %d, %d migrations, 2 (b and delayed a)",
				c.name, placed, migr, queued, c.wantCPU, c.wantMigr)
		}
	}
}

// PLACE_LAG: a task that blocks with positive lag (it waited more than
// it ran) keeps it, and is placed that far, scaled by (n+1)/n, before
// the average when it wakes onto a busy CPU, so it runs first.
func TestLagKeptAcrossSleep(t *testing.T) {
	e, c := oneQueued(t)
	a := e.NewTask("a", nil, nil)
	a.vlag = Millisecond
	c.enqueue(a, 0, false)
	// avg 5 ms over one task: a placed at 5 - 1 x 2/1 = 3 ms.
	if a.vruntime != 3*Millisecond || c.pickEEVDF() != 1 {
		t.Errorf("a placed at %v, picked %d; want 3ms and a first", a.vruntime, c.pickEEVDF())
	}
	if lim := c.clampLag(100 * Millisecond); lim != 2*e.slice {
		t.Errorf("lag clamp %v, want two slices %v", lim, 2*e.slice)
	}
}

// The idle balance a busy CPU's tick kicks pulls a waiting task to a
// free CPU its affinity allows, past free CPUs it does not: two tasks
// allowed on CPUs 2-3 take turns on CPU 2 while a pinned task holds 3;
// when it exits, the waiting one may have run too recently for CPU 3's
// newidle balance (task_hot), and a later tick on CPU 2 must then find
// CPU 3, not stop at CPU 0, the first free CPU, which neither may use.
// Tried at forty exit times, as where the turns stand decides which
// balance moves the task.
func TestIdleBalanceFindsAnAllowedCPU(t *testing.T) {
	for k := 0; k < 40; k++ {
		exit := 2500*Microsecond + Time(k)*50*Microsecond
		e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 4, ThreadsPerCore: 1})
		var ran [2]int
		spin := func(i int) func(*Task) { return spinOn(&ran[i]) }
		block := e.NewTask("block", []int{3}, func(t *Task) {
			for t.CPU().Now() < exit {
				t.CPU().Spend(1000)
				t.CPU().Sync()
			}
		})
		block.Start(0)
		a := e.NewTask("a", []int{2, 3}, spin(0))
		b := e.NewTask("b", []int{2, 3}, spin(1))
		a.Start(0)
		b.Start(0)
		if a.CPU().ID != 2 || b.CPU().ID != 2 {
			t.Fatalf("placed on %d and %d, want both on 2", a.CPU().ID, b.CPU().ID)
		}
		if err := e.Run(exit + 25*Millisecond); err != nil {
			t.Fatal(err)
		}
		e.Close()
		got := []int{ran[0], ran[1]}
		slices.Sort(got)
		if got[0] != 2 || got[1] != 3 {
			t.Errorf("CPU 3 freed at %v: the two tasks last ran on CPUs %v, want 2 and 3", exit, got)
		}
	}
}

// check_preempt_wakeup_fair: a woken task preempts the running one when
// the EEVDF pick is then the woken task: the running task keeps the CPU
// only while eligible with its slice protected (RUN_TO_PARITY, from its
// pick until update_deadline renews its deadline) or with the earlier
// deadline; unprotected, it is rescheduled at the tick that finds it
// not eligible (did_preempt_short). A remote wake-up sends CPU 0 a
// reschedule IPI. CPU 0 runs a, alone from time 0 (slice 3 ms on 8
// CPUs, the first one half that: deadline renewed at 1.5, 4.5 and
// 7.5 ms); b, asleep with the lag given, is woken onto CPU 0 from the
// CPU given.
func TestWakeupPreempt(t *testing.T) {
	for _, c := range []struct {
		name           string
		lag            Time
		wakeAt         Time
		from           int
		runFrom, runBy Time // when b first runs
		irqs0          uint64
	}{
		{"positive lag: a not eligible", Millisecond, 5 * Millisecond, 0, 5 * Millisecond, 5*Millisecond + 20*Microsecond, 1},
		{"zero lag, a's first (half) slice: its end's tick", 0, Millisecond, 0, 2 * Millisecond, 2*Millisecond + 20*Microsecond, 1},
		{"zero lag, a renewed: next tick", 0, 6500 * Microsecond, 0, 7 * Millisecond, 7*Millisecond + 20*Microsecond, 1},
		{"positive lag, remote waker: IPI", Millisecond, 5 * Millisecond, 1, 5 * Millisecond, 5*Millisecond + 20*Microsecond, 1},
	} {
		e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 8, ThreadsPerCore: 1})
		var ran int
		e.NewTask("a", []int{0}, spinOn(&ran)).Start(0)
		ranAt := Time(-1)
		b := e.NewTask("b", []int{0}, func(t *Task) {
			ranAt = t.CPU().Now()
			spinOn(&ran)(t)
		})
		c0 := e.CPUs[0]
		b.started, b.cpu, b.ranOn, b.vlag = true, c0, 0, c.lag
		e.RaiseIRQ(e.CPUs[c.from], c.wakeAt, func(w *CPU) { e.WakeUp(b, w) })
		if err := e.Run(10 * Millisecond); err != nil {
			t.Fatal(err)
		}
		if ranAt < c.runFrom || ranAt > c.runBy {
			t.Errorf("%s: b first ran at %v, want in [%v, %v]", c.name, ranAt, c.runFrom, c.runBy)
		}
		if c0.stat.irqs != c.irqs0 {
			t.Errorf("%s: CPU 0 took %d interrupts, want %d", c.name, c0.stat.irqs, c.irqs0)
		}
	}
}

// task_hot: a task that ran within sysctl_sched_migration_cost is
// cache-hot and stays, except for a pull by an SMT sibling of its CPU
// (SD_SHARE_CPUCAPACITY: the core's caches are shared). On 1 socket x
// 2 cores x 2 threads, CPU 0's siblings is 2; 1 and 3 are the other
// core.
func TestTaskHotSMT(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 2})
	now := 10 * Millisecond
	for _, c := range []struct {
		name string
		dst  int
		ran  Time // how long before now the task last ran
		want bool
	}{
		{"hot, SMT sibling", 2, 100 * Microsecond, true},
		{"hot, other core", 1, 100 * Microsecond, false},
		{"cold, other core", 1, migrationCost, true},
	} {
		p := &Task{e: e, cpu: e.CPUs[0], single: -1, lastRan: now - c.ran}
		if got := p.migratable(e.CPUs[c.dst], now); got != c.want {
			t.Errorf("%s: migratable to CPU %d = %v, want %v", c.name, c.dst, got, c.want)
		}
	}
}

// sched_balance_newidle walks the domains from the lowest: a CPU going
// idle takes a waiting task of its SMT sibling (cache-hot or not)
// before looking at busier runqueues of its LLC.
func TestNewidleBalanceSMTFirst(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 2})
	now := 10 * Millisecond
	wait := func(cpu int, lastRan Time) *Task {
		c := e.CPUs[cpu]
		p := &Task{Name: "w", e: e, cpu: c, single: -1, lastRan: lastRan, state: TaskRunnable}
		c.queue(p)
		c.rq.nrRunning++
		return p
	}
	sib := wait(2, now-100*Microsecond) // hot, on CPU 0's sibling
	wait(1, 0)                          // cold, two waiting on the other core
	wait(1, 0)
	c0 := e.CPUs[0]
	c0.now = now
	c0.newidleBalance()
	if len(c0.rq.tasks) != 1 || c0.rq.tasks[0] != sib {
		t.Errorf("CPU 0 pulled %v, want the SMT sibling's task", c0.rq.tasks)
	}
}

// select_idle_sibling's recent_used_cpu: with target and prev busy, the
// CPU the task used before prev, idle in the target's LLC, is taken
// before the scan for an idle core; each wake-up that gets that far
// leaves prev as the next one's. Same topology as TestSelectTaskRq;
// here the waker is CPU 1, prev 0, no sync, so the target is prev.
func TestSelectIdleSiblingRecentUsed(t *testing.T) {
	for _, tt := range []struct {
		name       string
		busy       []int
		recent     int
		want       int
		wantRecent int // p.recentUsed after
	}{
		{"recent idle in the LLC: recent", []int{0, 1}, 7, 7, 0},
		{"recent in the other LLC: the idle core", []int{0, 1}, 4, 2, 0},
		{"recent busy: the idle core", []int{0, 1, 7}, 7, 2, 0},
		{"none yet: the idle core", []int{0, 1}, -1, 2, 0},
		{"target idle: taken before, recent kept", []int{1}, 7, 0, 7},
	} {
		e := testEngine(t, Topology{Sockets: 2, CoresPerSocket: 3, ThreadsPerCore: 2})
		for _, c := range e.CPUs {
			c.curr = c.idle
		}
		busy(e, tt.busy...)
		p := &Task{Name: "p", e: e, single: -1, recentUsed: tt.recent, cpu: e.CPUs[0], state: TaskSleeping}
		if got := e.selectTaskRq(p, e.CPUs[1], false); got != tt.want || p.recentUsed != tt.wantRecent {
			t.Errorf("%s: select_task_rq = CPU %d, recent_used_cpu %d; want %d, %d", tt.name, got, p.recentUsed, tt.want, tt.wantRecent)
		}
	}
}

// place_entity: a new task (wake_up_new_task's ENQUEUE_INITIAL) starts
// with half a slice to its deadline (PLACE_DEADLINE_INITIAL); a woken
// one with a whole slice.
func TestPlaceDeadlineInitial(t *testing.T) {
	for _, initial := range []bool{true, false} {
		e, c := oneQueued(t)
		a := e.NewTask("a", nil, nil)
		c.enqueue(a, 0, initial)
		want := 5*Millisecond + e.slice
		if initial {
			want = 5*Millisecond + e.slice/2
		}
		if a.sliceEnd != want {
			t.Errorf("initial %v: deadline %v, want %v", initial, a.sliceEnd, want)
		}
	}
}

// requeue_delayed_entity (ttwu_runnable of a delayed task): with
// positive lag it leaves the tree and place_entity puts it, lag zero,
// at the average of the others: a task delayed at 12 ms and woken
// while the only other one has run to 20 ms starts at 20 ms, not at
// the 16 ms average that counts itself.
func TestWakeDelayedPlacedAmongOthers(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1})
	c := e.CPUs[0]
	s := e.NewTask("s", nil, nil)
	s.vruntime, s.state, s.cpu = 20*Millisecond, TaskRunning, c
	c.curr = s
	k := e.NewTask("k", nil, nil)
	k.vruntime, k.state, k.delayed, k.cpu = 12*Millisecond, TaskSleeping, true, c
	c.rq.tasks = []*Task{k}
	c.rq.nrRunning = 2
	c.wakeDelayed(k)
	if k.vruntime != 20*Millisecond || k.sliceEnd != 20*Millisecond+e.slice {
		t.Errorf("woken at vruntime %v deadline %v, want 20ms and a slice later", k.vruntime, k.sliceEnd)
	}
}

// ttwu_queue_cond: a wake-up onto a CPU outside the waker's LLC goes
// through that CPU's wake list; one running a task is not polling and
// takes a call-function IPI, which also does the preemption check
// there (no reschedule IPI on top). In the waker's own LLC a busy CPU
// gets no IPI unless the woken task preempts. CPU 0 runs a; b, asleep
// on CPU 0 with the lag given, is woken from CPU 1 (other socket or
// same) at 5 ms.
func TestWakeListIPI(t *testing.T) {
	for _, c := range []struct {
		name    string
		sockets int
		lag     Time
		irqs0   uint64
	}{
		{"other LLC, no preemption: the wake-list IPI", 2, 0, 1},
		{"other LLC, preemption: still one IPI", 2, Millisecond, 1},
		{"same LLC, no preemption: none", 1, 0, 0},
		{"same LLC, preemption: the reschedule IPI", 1, Millisecond, 1},
	} {
		e := testEngine(t, Topology{Sockets: c.sockets, CoresPerSocket: 2 / c.sockets, ThreadsPerCore: 1})
		var ran int
		e.NewTask("a", []int{0}, spinOn(&ran)).Start(0)
		b := e.NewTask("b", []int{0}, spinOn(&ran))
		c0 := e.CPUs[0]
		b.started, b.cpu, b.ranOn, b.vlag = true, c0, 0, c.lag
		e.RaiseIRQ(e.CPUs[1], 5*Millisecond, func(w *CPU) { e.WakeUp(b, w) })
		if err := e.Run(6 * Millisecond); err != nil {
			t.Fatal(err)
		}
		if c0.stat.irqs != c.irqs0 {
			t.Errorf("%s: CPU 0 took %d interrupts, want %d", c.name, c0.stat.irqs, c.irqs0)
		}
	}
}

// A task the balancer moves keeps its lag and its deadline relative to
// its vruntime (dequeue_entity without DEQUEUE_SLEEP: update_entity_lag
// and PLACE_REL_DEADLINE; place_entity on the new CPU): waiting on
// CPU 0 at 6 ms beside a running task at 10 ms (lag 2 ms, 1 ms to its
// deadline), it joins CPU 1, whose one running task is at 100 ms, at
// 100 - 2 x 2/1 = 96 ms, deadline 97 ms.
func TestPullKeepsLagAndRelativeDeadline(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1})
	src, dst := e.CPUs[0], e.CPUs[1]
	running := func(c *CPU, v Time) {
		r := e.NewTask("r", []int{c.ID}, nil)
		r.vruntime, r.state, r.cpu = v, TaskRunning, c
		c.curr = r
		c.rq.nrRunning = 1
	}
	running(src, 10*Millisecond)
	running(dst, 100*Millisecond)
	p := e.NewTask("p", nil, nil)
	p.vruntime, p.sliceEnd, p.state, p.cpu = 6*Millisecond, 7*Millisecond, TaskRunnable, src
	src.queue(p)
	src.rq.nrRunning++
	now := 10 * Millisecond
	for _, c := range []*CPU{src, dst} {
		c.now, c.rq.sliceStart = now, now // the running tasks' vruntimes are current
	}
	if !dst.pullFrom(src, now) {
		t.Fatal("not pulled")
	}
	if p.vruntime != 96*Millisecond || p.sliceEnd != 97*Millisecond {
		t.Errorf("placed at %v, deadline %v; want 96ms, 97ms", p.vruntime, p.sliceEnd)
	}
}

// oneQueued is a one-CPU engine whose runqueue holds one runnable task,
// b, at vruntime 5 ms.
func oneQueued(t *testing.T) (*Engine, *CPU) {
	t.Helper()
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1})
	c := e.CPUs[0]
	b := e.NewTask("b", nil, nil)
	b.vruntime, b.state = 5*Millisecond, TaskRunnable
	c.rq.tasks = []*Task{b}
	c.rq.nrRunning = 1
	return e, c
}

// record_wakee counts a waker's switches between wakees, not its
// wake-ups, and halves the count at most once a second.
func TestRecordWakee(t *testing.T) {
	a, b, w := &Task{Name: "a"}, &Task{Name: "b"}, &Task{Name: "w"}
	for _, p := range []*Task{a, a, b, a, b, b} { // a, b, a, b: four switches
		w.recordWakee(p, 10)
	}
	if w.wakeeFlips != 4 || w.lastWakee != b {
		t.Fatalf("flips %d, last %s: want 4, b", w.wakeeFlips, w.lastWakee.Name)
	}
	w.recordWakee(b, 1000) // jiffy 1000 is not after decay_ts (0) + HZ
	if w.wakeeFlips != 4 {
		t.Fatalf("flips %d at jiffy 1000: want 4 (no decay, same wakee)", w.wakeeFlips)
	}
	w.recordWakee(a, 1001)
	if w.wakeeFlips != 3 || w.flipDecay != 1001 {
		t.Fatalf("flips %d, decay_ts %d at jiffy 1001: want 4/2+1 = 3, 1001", w.wakeeFlips, w.flipDecay)
	}
	w.recordWakee(b, 2001)
	if w.wakeeFlips != 4 {
		t.Fatalf("flips %d at jiffy 2001: want 4 (one decay a second)", w.wakeeFlips)
	}
}

// wake_wide on 2 sockets x 3 cores x 2 threads (sd_llc_size 6): a sync
// wake-up from busy CPU 0 of a task last on idle CPU 4 (socket 1) is
// affine (socket 0: idle CPU 1) unless both flip between wakees, the
// less at least 6 times and the more at least 6 times as often; then
// it stays on CPU 4. The waker's count includes this wake-up
// (record_wakee runs first).
func TestWakeWide(t *testing.T) {
	for _, tt := range []struct {
		name            string
		waker, wakee    uint32
		want, wantFlips int
	}{
		{"no flips: affine", 0, 0, 1, 1},
		{"36 and 6: wide", 35, 6, 4, 36},
		{"35 and 6: affine", 34, 6, 1, 35},
		{"wakee under the LLC size: affine", 100, 5, 1, 101},
		{"the wakee flips more: wide", 5, 36, 4, 6},
	} {
		e := testEngine(t, Topology{Sockets: 2, CoresPerSocket: 3, ThreadsPerCore: 2})
		for _, c := range e.CPUs {
			c.curr = c.idle
		}
		busy(e, 0)
		w := e.CPUs[0].curr
		w.wakeeFlips = tt.waker
		p := &Task{Name: "p", e: e, single: -1, recentUsed: -1, cpu: e.CPUs[4], state: TaskSleeping, wakeeFlips: tt.wakee}
		if got := e.selectTaskRq(p, e.CPUs[0], true); got != tt.want || int(w.wakeeFlips) != tt.wantFlips {
			t.Errorf("%s: select_task_rq = CPU %d, waker's flips %d; want %d, %d", tt.name, got, w.wakeeFlips, tt.want, tt.wantFlips)
		}
	}
}
