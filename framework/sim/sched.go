package sim

import (
	"iter"
	"math/bits"
)

// The scheduler: tasks (task_struct) on per-CPU runqueues, woken and
// placed the way CFS/EEVDF (kernel/sched/fair.c) does it in the simple
// cases. What it keeps from the kernel:
//
//   - a task blocks (set_current_state + schedule()) and leaves its
//     runqueue; its CPU switches to the next runnable task or to its
//     idle task, paying cost.context_switch;
//   - try_to_wake_up: the waker pays cost.wake_up; pinned tasks go to
//     their CPU; unpinned ones through select_task_rq_fair's fast path:
//     wake_affine (wake_affine_idle, then wake_affine_weight on run
//     counts) between the waker's CPU and the task's previous one, then
//     select_idle_sibling (target if idle, previous CPU if idle and in
//     the same LLC, the CPU used before that (recent_used_cpu) if idle
//     and in the target's LLC, an idle SMT sibling of the previous CPU
//     when no core is idle, an idle core then an idle CPU of the
//     target's LLC, else the target). An idle target is woken after
//     cost.wake_idle_latency (C-state exit; the idle loop polls
//     need_resched, so no IPI is sent); a busy one queues the task,
//     with a call-function IPI when it is outside the waker's LLC
//     (ttwu_queue_wakelist);
//   - EEVDF's pick on equal weights: vruntime is run time, a task
//     joins a runqueue at its average vruntime less the lag it left its
//     last one with (PLACE_LAG: avg less vruntime when it slept, clamped
//     to two slices, scaled by (n+1)/n for the n tasks it joins) and the
//     eligible task with the earliest deadline runs; a task that blocks
//     while not eligible stays queued, asleep and counted in nr_running,
//     until picked (it leaves, its lag dropped) or woken (it runs there,
//     no CPU chosen: DELAY_DEQUEUE, 6.12 on); a task keeps its deadline
//     while preempted. The running task keeps the CPU while it is
//     eligible and its slice, from its pick until its deadline is
//     renewed, lasts (RUN_TO_PARITY); past that, a wake-up preempts it
//     when the woken task is the EEVDF pick (check_preempt_wakeup_fair:
//     a reschedule IPI to another CPU), and the tick (CONFIG_HZ=1000)
//     reschedules it when it renews its deadline or finds it not
//     eligible (PREEMPT_SHORT's did_preempt_short). The base slice is
//     sysctl_sched_base_slice, 0.75 ms x (1 + ilog2(min(CPUs, 8)));
//   - newidle balance: a CPU going idle pulls a waiting task from an
//     SMT sibling (where no task is cache-hot), then from the busiest
//     runqueue of its LLC (socket), then of the other sockets; the
//     tick of a CPU with waiting tasks kicks an idle CPU to pull one
//     (nohz idle balance); a moved task keeps its lag and relative
//     deadline (PLACE_REL_DEADLINE); new tasks, half a slice to their
//     first deadline (PLACE_DEADLINE_INITIAL), are placed as fork balancing does
//     (the socket with most idle CPUs; on another socket than the
//     shell's, its most recently idled CPU; on the shell's, the core
//     with the most idle CPUs and the least PELT utilisation, blocked
//     load included: update_pick_idlest's group_util), at the run's
//     start (Start) or when forked while it runs (Fork), on the load of
//     that moment;
//   - ksoftirqd/N, woken when __do_softirq gives up, competes with the
//     CPU's other tasks;
//   - a task that runs on a CPU of another core than last time finds
//     its own hot lines (cost.task_lines of them: stack, task_struct,
//     its buffers) in the old CPU's cache and pays their transfer.
//
// What it leaves out: weights and nice levels (so PREEMPT_SHORT's
// shorter-slice rule never applies), cgroups, the exec-time balance
// (sched_exec), PELT load, runnable and util_est (loads are run
// counts; util_avg only breaks fork ties, pelt.go), the cpuidle
// governor's choice of C-state (an idle CPU is in C1E: a task woken
// there and an interrupt delivered there wait for its exit; fork
// balancing's shallowest idle state: the most recently idled CPU
// stands in) and its keeping the tick of a CPU that idles briefly,
// sched_balance_newidle's
// avg_idle gate, SIS_UTIL's scan bound (the whole LLC is scanned: the kernel's bound is a hint that
// the periodic balance refreshes from PELT utilisation, which lags a
// launch of tens of milliseconds), periodic balancing of running tasks
// (active balance: at most one task per balance interval, sd_weight ms
// for an idle CPU, 480 ms at the NUMA level of a 480-CPU host, and only
// after several failed attempts: nothing within a run's length), NUMA
// balancing, util-clamp, EAS,
// sched domains beyond SMT / LLC=socket / machine, RT classes and
// deadline tasks, and the tick on CPUs running a single task (it
// changes nothing there; vmstat's interrupt count still counts it).

// Jiffy is one tick at CONFIG_HZ=1000.
const Jiffy = Millisecond

// hz is HZ: jiffies a second.
const hz = int64(Second / Jiffy)

// baseSlice is sysctl_sched_base_slice (0.75 ms) scaled as
// sched_update_scaling does with SCHED_TUNABLESCALING_LOG:
// 1 + ilog2(min(online CPUs, 8)).
func baseSlice(ncpu int) Time {
	n := min(ncpu, 8)
	return 750 * Microsecond * Time(1+bits.Len(uint(n))-1)
}

// TaskState is a task's scheduling state.
type TaskState uint8

// Task states.
const (
	TaskRunnable TaskState = iota // on a runqueue, waiting for its CPU
	TaskRunning                   // current on its CPU
	TaskSleeping                  // blocked, off every runqueue
	TaskDead                      // its main returned
)

// Task is a schedulable thread (task_struct): a sender, ksoftirqd/N,
// a CPU's idle task. Its code is a coroutine that runs on whichever CPU
// the scheduler gives it; after anything that can block (Block,
// PreemptPoint, WaitQueue waits) it must read its CPU again (CPU).
type Task struct {
	Name string
	e    *Engine
	cpu  *CPU
	main func(*Task)

	state   TaskState
	idle    bool   // a CPU's idle task
	kthread bool   // a per-CPU kthread: never migrated
	allowed []bool // nil: every CPU
	single  int    // the one allowed CPU, or -1

	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool
	done  bool

	vruntime Time // run time (equal weights)
	sliceEnd Time // run time at which the current slice ends
	// protect is RUN_TO_PARITY's slice protection (set_protect_slice:
	// the deadline stashed in vlag at the pick): set when the task is
	// picked, lost when its deadline is renewed (update_deadline), so a
	// task running alone past a slice keeps the CPU only while it is
	// eligible and has the earliest deadline.
	protect bool
	started bool // placed on a CPU
	// vlag is se->vlag, the lag kept while asleep (PLACE_LAG): the
	// queue's average vruntime less the task's when it left, clamped
	// to two slices; it places the task on its next enqueue.
	vlag Time
	// delayed is se->sched_delayed (DELAY_DEQUEUE): the task blocked
	// while not eligible and stays queued on its CPU, asleep, until it
	// is picked (then it leaves) or woken (then it runs there).
	delayed bool

	// recentUsed is p->recent_used_cpu: the previous CPU of the last
	// wake-up that got as far as select_idle_sibling's check of it
	// (-1: none; the kernel starts it at the forking parent's CPU).
	recentUsed int
	ranOn      int       // CPU it last ran on
	lastRan    Time      // when it last stopped running
	lines      CacheLine // its own hot lines (stack, task_struct, buffers)
	// wakeeFlips, flipDecay and lastWakee are p->wakee_flips,
	// wakee_flip_decay_ts (in jiffies) and last_wakee: how often the
	// task, as current, has woken a task other than the one it woke
	// last (record_wakee), halved at most once a second; wake_wide reads
	// them. A forked task starts with its parent's, the shell's: none.
	wakeeFlips uint32
	flipDecay  int64
	lastWakee  *Task
	act        Act  // its CPU's activity while switched out (ActProfile)
	util       pelt // util_avg (pelt.go)

	// Counters.
	Nvcsw, Nivcsw uint64 // voluntary / involuntary context switches
	Migrations    uint64 // wake-ups or balancing onto another CPU
	Wakeups       uint64
}

// NewTask makes a task that runs main, allowed on the given CPUs (nil
// or empty: every CPU). Start places it.
func (e *Engine) NewTask(name string, cpus []int, main func(*Task)) *Task {
	t := &Task{Name: name, e: e, main: main, single: -1, ranOn: -1, recentUsed: -1, state: TaskSleeping, lastRan: -migrationCost}
	if len(cpus) > 0 {
		t.allowed = make([]bool, len(e.CPUs))
		for _, id := range cpus {
			if id < 0 || id >= len(e.CPUs) {
				Panicf("task %s: CPU %d out of range", name, id)
			}
			t.allowed[id] = true
		}
		if len(cpus) == 1 {
			t.single = cpus[0]
		}
	}
	e.tasks = append(e.tasks, t)
	return t
}

// CPU is the CPU the task runs on now (or last ran on).
func (t *Task) CPU() *CPU { return t.cpu }

// State is the task's scheduling state.
func (t *Task) State() TaskState { return t.state }

// Pinned reports whether the task may run on one CPU only.
func (t *Task) Pinned() bool { return t.single >= 0 }

// Kthread reports whether t is a per-CPU kernel thread (ksoftirqd/N).
func (t *Task) Kthread() bool { return t.kthread }

func (t *Task) allows(cpu int) bool { return t.allowed == nil || t.allowed[cpu] }

func (t *Task) startCoroutine() {
	t.next, t.stop = iter.Pull(t.body)
}

func (t *Task) body(yield func(struct{}) bool) {
	t.yield = yield
	defer func() {
		if r := recover(); r != nil {
			if r == errUnwind { //nolint:errorlint // sentinel identity
				return
			}
			if me, ok := r.(*ModelError); ok {
				t.e.Fail(me)
				return
			}
			panic(r)
		}
	}()
	if t.idle {
		t.cpu.idleLoop()
		return
	}
	t.arrive()
	t.main(t)
	t.exit()
}

func (t *Task) park() {
	if !t.yield(struct{}{}) {
		panic(errUnwind)
	}
}

// arrive prices the task's own lines on the CPU it now runs on: cold
// if it last ran on another core.
func (t *Task) arrive() {
	c := t.cpu
	if t.ranOn != c.ID {
		if t.ranOn >= 0 {
			t.lines.WriteMany(c, c.e.Costs.TaskLines)
		}
		t.ranOn = c.ID
	}
}

func (t *Task) exit() {
	c := t.cpu
	t.state = TaskDead
	c.addRunning(-1)
	c.schedule(t)
}

// Start places a new task (wake_up_new_task) to run from time at:
// pinned ones on their CPU, others where fork balancing puts them.
// Before Engine.Run the first task placed on a CPU becomes its current
// task at once, as a thread already running when the run starts.
func (t *Task) Start(at Time) {
	e := t.e
	if t.started {
		Panicf("task %s started twice", t.Name)
	}
	t.started = true
	if e.running {
		e.At(at, func() { t.state = TaskSleeping; e.wakeUp(t, nil, false, true) })
		return
	}
	c := e.CPUs[e.forkCPU(t)]
	t.cpu, t.ranOn = c, c.ID
	t.lines.owner = int32(c.ID + 1)
	if c.curr == nil {
		t.state = TaskRunning
		t.util.at = at
		c.curr = t
		c.now = at
		c.stat.runLast = at
		c.addRunning(1)
		t.sliceEnd = t.vruntime + e.slice/2 // PLACE_DEADLINE_INITIAL
		c.sliceStart(t)
		c.e.resumeAt(c, at)
		return
	}
	t.state = TaskRunnable
	c.enqueue(t, at, true)
}

// Fork starts a new task at time at as wake_up_new_task does for a
// process another one forks while the machine runs (a shell starting
// programs one by one): placed then by fork balancing, on the load it
// finds at that moment. Unlike Start before Engine.Run, the CPU is
// not held for it until then.
func (t *Task) Fork(at Time) {
	e := t.e
	if t.started {
		Panicf("task %s started twice", t.Name)
	}
	t.started = true
	e.At(at, func() { t.state = TaskSleeping; e.wakeUp(t, nil, false, true) })
}

// Block puts the running task to sleep (schedule() after
// set_current_state(TASK_INTERRUPTIBLE)) until a wake-up; it returns on
// the CPU the scheduler then gives it.
func (t *Task) Block() {
	c := t.cpu
	if c.curr != t {
		Panicf("task %s blocks but is not running", t.Name)
	}
	c.updateCurr()
	avg, _ := c.avgVruntime() // t still running: counted, as cfs_rq->curr is
	t.state = TaskSleeping
	t.Nvcsw++
	if len(c.rq.tasks) > 0 && t.vruntime > avg {
		// dequeue_entity with DEQUEUE_SLEEP under DELAY_DEQUEUE (6.12
		// on): a task that ran past its share (negative lag) is not
		// eligible, so it stays on the queue, counted in nr_running,
		// until picked (it leaves then) or woken (it runs here).
		t.delayed = true
		c.queue(t)
	} else {
		t.vlag = c.clampLag(avg - t.vruntime) // update_entity_lag
		c.addRunning(-1)
	}
	c.schedule(t)
}

// clampLag is update_entity_lag's clamp: at most two slices (or a tick)
// either way.
func (c *CPU) clampLag(lag Time) Time {
	limit := max(2*c.e.slice, Jiffy)
	return min(max(lag, -limit), limit)
}

// dequeueDelayed finishes the dequeue of a delayed task the pick chose
// (dequeue_entities with DEQUEUE_DELAYED): it leaves the queue and
// nr_running, asleep; picked, it was eligible, and DELAY_ZERO drops the
// positive lag it would keep.
func (c *CPU) dequeueDelayed(i int) {
	t := c.dequeueAt(i)
	t.delayed = false
	t.vlag = 0
	c.addRunning(-1)
}

// wakeDelayed is ttwu_runnable for a delayed task: still queued on its
// CPU, it becomes runnable there with no CPU chosen (requeue_delayed_
// entity: a negative lag kept, a positive one dropped, DELAY_ZERO).
func (c *CPU) wakeDelayed(t *Task) {
	t.delayed = false
	if v, ok := c.avgVruntime(); ok && t.vruntime < v {
		// Positive lag: taken off the tree (__dequeue_entity) and
		// placed with none (place_entity), at the average of the
		// others.
		sum, n := c.vruntimeSum()
		t.vruntime = (sum - t.vruntime) / Time(n-1)
		t.sliceEnd = t.vruntime + c.e.slice
	}
	t.state = TaskRunnable
	t.Wakeups++
}

// NeedResched is need_resched(): TIF_NEED_RESCHED is set on this CPU
// (its task's slice ran out with others waiting, or a wake-up of an
// idle CPU), and the task will give way at its next preemption point.
func (c *CPU) NeedResched() bool { return c.rq.needResched }

// ReschedCurr is resched_curr: set need_resched on this CPU.
func (c *CPU) ReschedCurr() { c.rq.needResched = true }

// PreemptPoint is where a running task may be preempted
// (exit_to_user_mode_loop, cond_resched): if its CPU's need_resched is
// set, the next task runs and this one waits its turn.
func (t *Task) PreemptPoint() {
	c := t.cpu
	if !c.rq.needResched {
		return
	}
	c.rq.needResched = false
	if len(c.rq.tasks) == 0 {
		return
	}
	t.Nivcsw++
	c.schedule(t)
}

// runq is a CPU's runqueue (struct rq / cfs_rq): the tasks waiting for
// it, and what the scheduler keeps per CPU.
type runq struct {
	tasks       []*Task // runnable, not running, in arrival order
	nrRunning   int     // tasks + the running one (not the idle task)
	switchTo    *Task   // set by schedule(): the task to run next
	needResched bool
	tickArmed   bool
	ksoftirqd   *Task
	sliceStart  Time // when curr's current slice started (wall time)
}

// cpuStat are the counters vmstat and mpstat read.
type cpuStat struct {
	switches uint64 // context switches (nr_switches)
	irqs     uint64 // hard interrupts taken
	softNs   Time   // time in softirq (mpstat %soft), runs that ended
	softFrom Time   // when the softirq run in progress began
	hardNs   Time   // time in hardirq (mpstat %irq)
	runInt   int64  // integral of nr_running over time (task-ns)
	runLast  Time
	ticks    uint64 // local timer ticks while not idle (CONFIG_NO_HZ_IDLE)
	active   Time   // since when the CPU runs a task (valid while it does)
}

func (c *CPU) addRunning(d int) {
	c.integrate(c.now)
	c.rq.nrRunning += d
}

func (c *CPU) integrate(now Time) {
	if now > c.stat.runLast {
		c.stat.runInt += int64(c.rq.nrRunning) * int64(now-c.stat.runLast)
		c.stat.runLast = now
	}
}

// NrRunning is the CPU's runnable tasks, the running one included.
func (c *CPU) NrRunning() int { return c.rq.nrRunning }

// sliceStart is set_next_entity for t, picked to run: its run time
// counts from now, its deadline stays the one it was queued with (or
// last renewed), and that slice is protected (set_protect_slice).
func (c *CPU) sliceStart(t *Task) {
	c.rq.sliceStart = c.now
	t.protect = true
}

// updateCurr is update_curr: the running task's vruntime advances by
// its run time since it last did.
func (c *CPU) updateCurr() {
	t := c.curr
	if t == nil || t.idle {
		return
	}
	if d := c.now - c.rq.sliceStart; d > 0 {
		t.vruntime += d
		c.rq.sliceStart = c.now
	}
}

// avgVruntime is avg_vruntime: the mean vruntime of the runnable tasks
// (the running one included).
func (c *CPU) avgVruntime() (Time, bool) {
	sum, n := c.vruntimeSum()
	if n == 0 {
		return 0, false
	}
	return sum / Time(n), true
}

// vruntimeSum is the sum of the runnable tasks' vruntimes (the running
// one included) and their number.
func (c *CPU) vruntimeSum() (Time, int) {
	var sum Time
	n := 0
	if t := c.curr; t != nil && !t.idle && t.state == TaskRunning {
		sum += t.vruntime
		n++
	}
	for _, t := range c.rq.tasks {
		sum += t.vruntime
		n++
	}
	return sum, n
}

// enqueue is enqueue_task for a runnable task t at time at, placed by
// place_entity: at the queue's average vruntime less its lag, with a
// deadline a slice later, half a slice for a new task (initial:
// ENQUEUE_INITIAL from wake_up_new_task, PLACE_DEADLINE_INITIAL).
func (c *CPU) enqueue(t *Task, at Time, initial bool) {
	c.updateCurr()
	if cur := c.curr; cur != nil && !cur.idle && len(c.rq.tasks) == 0 && cur.vruntime >= cur.sliceEnd {
		// Running alone, its deadline was renewed at every slice
		// (update_deadline at the tick): the current slice ends at the
		// next renewal point.
		cur.sliceEnd += ((cur.vruntime-cur.sliceEnd)/c.e.slice + 1) * c.e.slice
		cur.protect = false
	}
	if v, ok := c.avgVruntime(); ok {
		// place_entity with PLACE_LAG: the lag the task left with,
		// scaled by (n+1)/n for the n tasks it joins so that adding it
		// does not shift the average away from it.
		t.vruntime = v
		if n := Time(c.rq.nrRunning); n > 0 && t.vlag != 0 {
			t.vruntime = v - t.vlag*(n+1)/n
		}
	}
	t.vlag = 0
	vslice := c.e.slice
	if initial {
		vslice /= 2 // PLACE_DEADLINE_INITIAL
	}
	t.sliceEnd = t.vruntime + vslice // place_entity: vd_i = ve_i + r_i/w_i
	c.integrate(at)
	c.rq.nrRunning++
	c.queue(t)
	c.armTick(at, c.curr)
}

// queue puts t at the end of the waiting tasks and counts the CPU as
// overloaded (rd->overload) once something waits. t keeps its deadline
// (put_prev_entity and a delayed dequeue leave se->deadline as it is).
func (c *CPU) queue(t *Task) {
	c.rq.tasks = append(c.rq.tasks, t)
	if len(c.rq.tasks) == 1 {
		c.e.overloaded++
	}
}

// dequeueAt removes the waiting task at index i.
func (c *CPU) dequeueAt(i int) *Task {
	t := c.rq.tasks[i]
	copy(c.rq.tasks[i:], c.rq.tasks[i+1:])
	c.rq.tasks[len(c.rq.tasks)-1] = nil
	c.rq.tasks = c.rq.tasks[:len(c.rq.tasks)-1]
	if len(c.rq.tasks) == 0 {
		c.e.overloaded--
	}
	return t
}

// pickEEVDF is pick_eevdf on equal weights: among the waiting tasks
// whose vruntime is at most the average (eligible), the earliest
// deadline; the first waiting one if none is.
func (c *CPU) pickEEVDF() int {
	v, _ := c.avgVruntime()
	best := -1
	for i, t := range c.rq.tasks {
		if t.vruntime > v {
			continue
		}
		if best < 0 || t.sliceEnd < c.rq.tasks[best].sliceEnd {
			best = i
		}
	}
	if best < 0 {
		best = 0
	}
	return best
}

// pickNext is pick_next_task_fair: the EEVDF pick, finishing the
// dequeue of a delayed task it picks, and sched_balance_newidle when
// nothing is left; the idle task if nothing is.
func (c *CPU) pickNext() *Task {
	balanced := false
	for {
		if len(c.rq.tasks) == 0 {
			if balanced {
				return c.idle
			}
			balanced = true
			c.newidleBalance()
			continue
		}
		i := c.pickEEVDF()
		if c.rq.tasks[i].delayed {
			c.dequeueDelayed(i)
			continue
		}
		return c.dequeueAt(i)
	}
}

// schedule is __schedule on CPU c for prev, its current task: prev
// stays runnable (queued) when still TaskRunning, else it has blocked
// or exited. The next task runs at once on this CPU; prev's coroutine
// resumes, on whatever CPU it is given, when it is picked again.
func (c *CPU) schedule(prev *Task) {
	c.rq.needResched = false
	c.updateCurr()
	if !prev.idle && prev.state == TaskRunning {
		prev.state = TaskRunnable
		c.queue(prev)
	}
	next := c.pickNext()
	if next == prev {
		prev.state = TaskRunning
		return
	}
	prevAct := c.SetAct(ActSched)
	c.Spend(c.e.Costs.ContextSwitch)
	c.act = prevAct
	c.stat.switches++
	prev.lastRan = c.now
	if !prev.idle {
		prev.util.update(c.now, true)
	}
	if prev.idle {
		c.stat.active = c.now
	} else if next.idle {
		c.stat.ticks += uint64(jiffies(c.now) - jiffies(c.stat.active))
		c.idleStamp, c.idled = c.now, true // sched_balance_newidle: rq->idle_stamp
	}
	if !next.idle {
		next.util.update(c.now, false)
		next.state = TaskRunning
		next.cpu = c
		c.sliceStart(next)
	}
	c.rq.switchTo = next
	if !next.idle {
		c.armTick(c.now, next) // tasks still waiting: the tick ends next's slice
	}
	prev.park()
	// prev runs again here, on prev.cpu.
	if !prev.idle {
		prev.arrive()
	}
}

// idleLoop is do_idle: wait for an interrupt (or a wake-up that queued
// a task here), run it and the softirqs it raised, and switch to any
// task that became runnable.
func (c *CPU) idleLoop() {
	for {
		if len(c.rq.tasks) > 0 || c.rq.needResched {
			c.schedule(c.idle)
			continue
		}
		c.Sleep()
	}
}

// armTick starts the tick on a CPU running task running with tasks
// waiting (nothing to do on one running a single task; see the package
// comment).
func (c *CPU) armTick(at Time, running *Task) {
	if c.rq.tickArmed || running == nil || running.idle || len(c.rq.tasks) == 0 {
		return
	}
	c.rq.tickArmed = true
	next := (at/Jiffy + 1) * Jiffy
	c.e.scheduleAt(next, payload{kind: evTick, cpu: c})
}

func (c *CPU) tickEvent() {
	if c.curr.idle || len(c.rq.tasks) == 0 {
		c.rq.tickArmed = false
		return
	}
	c.irqs = append(c.irqs, nil) // nil: the tick (takeInterrupts)
	c.expireSlack()              // tick_sched_timer is an hrtimer: the same interrupt
	c.Wake(c.e.now)
	next := c.e.now + Jiffy
	c.e.scheduleAt(next, payload{kind: evTick, cpu: c})
}

// schedTick is sched_tick in hardirq context: the running task's slice
// (update_deadline: resched once it has run a slice), and
// nohz_balancer_kick when tasks wait here while another CPU idles.
func (c *CPU) schedTick() {
	t := c.curr
	if t.idle {
		return
	}
	c.updateCurr()
	if c.updateDeadline(t) || c.didPreemptShort(t) {
		if len(c.rq.tasks) > 0 {
			c.rq.needResched = true
		}
	}
	c.nohzBalancerKick()
}

// updateDeadline is update_deadline: once the running task t has used
// its slice, its deadline moves a slice past its vruntime (losing the
// slice's protection) and it is to be rescheduled.
func (c *CPU) updateDeadline(t *Task) bool {
	if t.vruntime < t.sliceEnd {
		return false
	}
	t.sliceEnd = t.vruntime + c.e.slice
	t.protect = false
	return true
}

// didPreemptShort is update_curr's did_preempt_short (PREEMPT_SHORT, on
// in 6.12): a running task whose slice is no longer protected is
// rescheduled as soon as it is not eligible.
func (c *CPU) didPreemptShort(t *Task) bool {
	if t.protect {
		return false
	}
	v, ok := c.avgVruntime()
	return ok && t.vruntime > v
}

// pickEEVDFCurr is pick_eevdf with the running task cur still
// cfs_rq->curr: cur keeps the CPU while eligible with its slice
// protected (RUN_TO_PARITY); else the eligible waiting task with the
// earliest deadline, unless cur is eligible with an earlier one. It
// returns nil for cur, else the waiting task.
func (c *CPU) pickEEVDFCurr(cur *Task) *Task {
	if len(c.rq.tasks) == 0 {
		return nil
	}
	v, _ := c.avgVruntime()
	eligible := cur.vruntime <= v
	if eligible && cur.protect {
		return nil
	}
	var best *Task
	for _, t := range c.rq.tasks {
		if t.vruntime <= v && (best == nil || t.sliceEnd < best.sliceEnd) {
			best = t
		}
	}
	if best == nil || eligible && cur.sliceEnd < best.sliceEnd {
		return nil
	}
	return best
}

// wakeupPreempt is wakeup_preempt -> check_preempt_wakeup_fair for p,
// just enqueued on c (woken, woken in place from a delayed dequeue, or
// forked) while c runs a task: update_curr (whose update_deadline may
// already ask for a reschedule), then a reschedule if the EEVDF pick
// is p now. The flag is set at once on the waker's own CPU; another
// CPU gets a reschedule IPI (resched_curr -> smp_send_reschedule: a
// running task is not polling), and its task switches at its next
// preemption point.
func (c *CPU) wakeupPreempt(p *Task, waker *CPU, at Time) {
	cur := c.curr
	if cur == nil || cur.idle || c.rq.needResched || cur == p {
		return
	}
	c.updateCurr()
	resched := c.updateDeadline(cur) // update_curr; nr_running > 1 here
	if !resched && c.pickEEVDFCurr(cur) != p {
		return
	}
	c.rq.needResched = true
	if c != waker {
		c.e.RaiseIRQ(c, max(at, c.e.now), reschedIPI)
	}
}

// reschedIPI is the reschedule IPI's handler (sysvec_reschedule_ipi:
// scheduler_ipi, counted in /proc/stat's intr as RES): need_resched is
// already set; the interrupted task switches at its next preemption
// point.
func reschedIPI(*CPU) {}
