package sim

import (
	"errors"
	"math/bits"
)

// Softirq vectors, in the kernel's order (include/linux/interrupt.h): a
// lower number runs first in __do_softirq.
const (
	TimerSoftirq = 1 // TIMER_SOFTIRQ
	NetTxSoftirq = 2 // NET_TX_SOFTIRQ
	NetRxSoftirq = 3 // NET_RX_SOFTIRQ
	// TaskletSoftirq is TASKLET_SOFTIRQ: TCP's TSQ tasklet runs there
	// (and, in the model, the TCP timers' work).
	TaskletSoftirq = 6
	numSoftirqs    = 10
)

// __do_softirq's bounds (kernel/softirq.c): restart at most
// MAX_SOFTIRQ_RESTART times and for at most MAX_SOFTIRQ_TIME (2 ms in
// jiffies), and stop early when need_resched() is set; what is still
// pending then goes to ksoftirqd.
const (
	maxSoftirqRestart = 10 // MAX_SOFTIRQ_RESTART
	maxSoftirqJiffies = 2  // MAX_SOFTIRQ_TIME = msecs_to_jiffies(2) at HZ=1000
)

type blockKind uint8

const (
	notBlocked  blockKind = iota
	blockedSpin           // spinning on a lock: burns CPU
	blockedIdle           // idle, or a task waiting on its CPU: no CPU
)

var errUnwind = errors.New("sim: cpu unwound")

// CPU is one simulated hardware thread. It runs its current task's code
// (a coroutine); the task advances the CPU's clock with Spend and
// synchronises with the rest of the machine at every primitive that
// touches shared state. Interrupts and softirqs run nested inside
// whatever task is current, at those sync points, as on real hardware.
type CPU struct {
	ID                   int
	Socket, Core, Thread int

	e    *Engine
	now  Time
	curr *Task // the task running here (its idle task when nothing else)
	idle *Task

	block      blockKind
	blockStart Time

	busy    Time // ns spent working or spinning ("sys" time)
	hardirq int
	softirq int
	bh      int // local_bh_disable depth
	irqOff  int // local_irq_save depth: interrupts wait
	// expNeedQS: an expedited RCU grace period waits for this CPU to
	// leave its BH-disabled section or softirq (rcu.go).
	expNeedQS bool
	pending   uint32
	handlers  [numSoftirqs]func(*CPU)
	irqs      []func(*CPU)
	irqsSpare []func(*CPU)
	// slackTimers are the hrtimers armed here with slack, for an
	// earlier interrupt to run (expireSlack); slackDue is its scratch.
	slackTimers []slackTimer
	slackDue    []*HrTimer

	rq       runq   // the runqueue (sched.go)
	sib      *CPU   // the first SMT sibling (nil without SMT), checked first
	siblings []*CPU // every SMT sibling
	core     []*CPU // this CPU, then its siblings: its core
	exec     bool   // executing instructions now (see updExec), for SMT siblings
	lockRec  bool   // lock statistics recorded for this CPU (perf lock record -C)
	act      Act    // the current activity (ActProfile)
	stat     cpuStat
	// idleStamp is rq->idle_stamp: when the CPU last went idle, if it
	// has (idled); fork balancing prefers the most recently idled.
	idleStamp Time
	idled     bool
}

func newCPU(e *Engine, id int) *CPU {
	s, c, t := e.Topo.Place(id)
	return &CPU{ID: id, Socket: s, Core: c, Thread: t, e: e, lockRec: true}
}

// Engine is the engine this CPU belongs to.
func (c *CPU) Engine() *Engine { return c.e }

// Now is this CPU's local virtual time.
func (c *CPU) Now() Time { return c.now }

// Busy is the CPU time spent so far (work plus spinning), in ns.
func (c *CPU) Busy() Time { return c.busy }

// InSoftirq reports whether the CPU runs softirq code now.
func (c *CPU) InSoftirq() bool { return c.softirq > 0 }

// InHardirq reports whether the CPU runs an interrupt handler now.
func (c *CPU) InHardirq() bool { return c.hardirq > 0 }

// Costs is a shortcut to the engine's cost table.
func (c *CPU) Costs() *Costs { return c.e.Costs }

// Current is the task running on the CPU (its idle task when none).
func (c *CPU) Current() *Task { return c.curr }

// Start gives the CPU a task pinned to it that runs main, from time at
// (a sender thread bound to this CPU). A CPU without one runs the idle
// loop, waking for interrupts. Call it before Engine.Run.
func (c *CPU) Start(at Time, main func(*CPU)) {
	t := c.e.NewTask("", []int{c.ID}, func(t *Task) { main(t.CPU()) })
	t.Start(at)
}

func (c *CPU) resume(t Time) {
	if t > c.now {
		if c.block == blockedSpin {
			c.busy += t - c.now
			if p := c.e.actProf; p != nil {
				p.Spin[c.act] += int64(t - c.now)
			}
		}
		c.now = t
	}
	for {
		cur := c.curr
		if cur.next == nil {
			if cur.done {
				return
			}
			cur.startCoroutine()
			c.updExec()
		}
		if _, ok := cur.next(); !ok {
			cur.done = true
		}
		next := c.rq.switchTo
		if next == nil {
			return
		}
		// The task that just parked called schedule(): run the next one
		// on this CPU at the same instant.
		c.rq.switchTo = nil
		cur.act, c.act = c.act, next.act
		c.curr = next
		c.updExec()
	}
}

func (c *CPU) park() { c.curr.park() }

// Spend burns ns of CPU time in the current context. While an SMT
// sibling executes too, the core's execution resources are shared and
// the same work takes smt_share_pct percent longer.
func (c *CPU) Spend(ns int64) {
	if ns <= 0 {
		return
	}
	if c.sib != nil && (c.sib.exec || len(c.siblings) > 1 && c.siblingExecutes()) {
		ns += ns * c.e.Costs.SMTSharePct / 100
	}
	c.burn(ns)
}

// Stall burns ns of CPU time waiting on the memory system: a cache
// line's transfer from another core, the LLC or the other socket. The
// line takes as long to come whatever the SMT sibling does (the
// interconnect serves the miss; the sibling uses the stalled thread's
// issue slots meanwhile, which is what SMT is for), so it is not
// lengthened by smt_share_pct.
func (c *CPU) Stall(ns int64) {
	if ns > 0 {
		c.burn(ns)
	}
}

// burn moves c's clock on by ns of busy time.
func (c *CPU) burn(ns int64) {
	c.now += Time(ns)
	c.busy += Time(ns)
	if p := c.e.actProf; p != nil {
		p.Work[c.act] += ns
	}
}

// siblingExecutes reports whether another hardware thread of this core
// executes instructions now.
func (c *CPU) siblingExecutes() bool {
	for _, s := range c.siblings[1:] {
		if s.exec {
			return true
		}
	}
	return false
}

// updExec recomputes whether the CPU executes instructions: a started
// task, or interrupt work on its idle task, not parked idle and not
// spinning (a spinning thread mostly sits in PAUSE). It is kept at each
// change rather than computed in Spend, the hottest path.
func (c *CPU) updExec() {
	c.exec = c.block == notBlocked && c.curr != nil && c.curr.next != nil && (!c.curr.idle || c.hardirq > 0 || c.softirq > 0)
}

// Sync makes this CPU's next action happen in global time order: if any
// event is due before the CPU's clock, the CPU waits for it. It then takes
// pending interrupts, as real hardware would at this instruction boundary.
func (c *CPU) Sync() {
	if c.e.nextAt() < c.now || c.now > c.e.until || c.e.pollInterrupt() {
		c.e.resumeAt(c, c.now)
		c.park()
	}
	c.takeInterrupts()
}

// spinUntilWoken parks a spinning CPU; the waker resumes it. Spinning time
// counts as busy.
func (c *CPU) spinUntilWoken() {
	c.block = blockedSpin
	c.blockStart = c.now
	c.exec = false
	c.park()
	c.block = notBlocked
	c.updExec()
}

// Sleep parks the CPU with no work until Wake or an interrupt, its
// current task staying current (the idle loop's wait, or a task that
// waits on its CPU without giving it up, as pktgen's spin() does); it
// then runs pending interrupts and the softirqs they raise, as irq exit
// does (softirqs left pending wait for ksoftirqd). A task
// that blocks and lets others run uses Task.Block instead.
func (c *CPU) Sleep() {
	if len(c.irqs) == 0 { // an interrupt already pending is taken at once
		c.block = blockedIdle
		c.blockStart = c.now
		c.exec = false
		c.park()
		c.block = notBlocked
		c.updExec()
	}
	c.takeInterrupts() // and, on irq exit, the softirqs they raised
}

// Wake resumes a sleeping CPU at time t (no earlier than its own clock).
// It is a no-op for a CPU that is not sleeping.
func (c *CPU) Wake(t Time) {
	if c.block != blockedIdle || c.curr == nil || c.curr.done {
		return
	}
	if t < c.now {
		t = c.now
	}
	c.block = notBlocked // one wake is enough; avoid double resume
	c.updExec()
	c.e.resumeAt(c, t)
}

// wakeForIRQ is Wake for an interrupt delivered at t: a CPU in its
// idle task's idle loop leaves its C-state first (cost.wake_idle_latency,
// as for a task woken there), then takes the interrupt.
func (c *CPU) wakeForIRQ(t Time) {
	if c.block == blockedIdle && c.curr != nil && c.curr.idle {
		t += Time(c.e.Costs.WakeIdleLatency)
	}
	c.Wake(t)
}

// Sleeping reports whether the CPU is idle or its task waits on it.
func (c *CPU) Sleeping() bool { return c.block == blockedIdle }

// RaiseIRQ delivers a hard interrupt to CPU c at time t: handler runs in
// hardirq context at c's next instruction boundary (sync point), or at once
// if c is idle, and the softirqs it raises run on irq exit.
func (e *Engine) RaiseIRQ(c *CPU, t Time, handler func(*CPU)) {
	e.scheduleAt(t, payload{kind: evIRQ, cpu: c, h: handler})
}

func (c *CPU) takeInterrupts() {
	if len(c.irqs) == 0 || c.hardirq > 0 || c.irqOff > 0 {
		return
	}
	start := c.now
	prevAct := c.SetAct(ActHardirq)
	for len(c.irqs) > 0 {
		list := c.irqs
		c.irqs = c.irqsSpare[:0]
		c.hardirq++
		c.updExec()
		for _, h := range list {
			if h == nil { // the local timer (counted in stat.ticks)
				c.Spend(c.e.Costs.Tick)
				c.schedTick()
				continue
			}
			c.stat.irqs++
			c.Spend(c.e.Costs.HardIRQ)
			h(c)
		}
		c.hardirq--
		c.updExec()
		c.irqsSpare = list[:0]
	}
	c.stat.hardNs += c.now - start
	c.act = prevAct
	// irq_exit(): run softirqs unless we interrupted softirq or bh-off code.
	if c.pending != 0 && c.bh == 0 && c.softirq == 0 {
		c.doSoftirq()
	}
}

// LocalIrqSave is local_irq_save (spin_lock_irqsave's, local_lock_irqsave's):
// interrupts delivered meanwhile wait for LocalIrqRestore.
func (c *CPU) LocalIrqSave() { c.irqOff++ }

// LocalIrqRestore is local_irq_restore: the outermost one takes the
// interrupts that waited, and the softirqs they raise.
func (c *CPU) LocalIrqRestore() {
	if c.irqOff--; c.irqOff == 0 && len(c.irqs) > 0 {
		c.Sync() // an instruction boundary: in time order, then the interrupts
	}
}

// SetSoftirqHandler installs the handler of a softirq vector on this CPU.
func (c *CPU) SetSoftirqHandler(nr int, h func(*CPU)) { c.handlers[nr] = h }

// RaiseSoftirq marks vector nr pending (raise_softirq_irqoff). It runs at
// the next local_bh_enable, irq exit, or idle.
func (c *CPU) RaiseSoftirq(nr int) { c.pending |= 1 << nr }

// SoftirqPending reports whether vector nr is pending.
func (c *CPU) SoftirqPending(nr int) bool { return c.pending&(1<<nr) != 0 }

// LocalBhDisable is local_bh_disable().
func (c *CPU) LocalBhDisable() { c.bh++ }

// LocalBhEnable is local_bh_enable(): pending softirqs run here.
func (c *CPU) LocalBhEnable() {
	c.bh--
	if c.bh < 0 {
		Panicf("cpu%d: local_bh_enable without disable", c.ID)
	}
	if c.bh == 0 && c.softirq == 0 && c.hardirq == 0 && c.pending != 0 {
		c.doSoftirq()
	}
	c.expQSIfDue()
}

// jiffies is the jiffy count at t (HZ=1000, jiffies 0 at time 0).
func jiffies(t Time) int64 { return int64(t / Jiffy) }

// doSoftirq is __do_softirq (handle_softirqs): run pending vectors in
// order, restarting while new ones are raised, at most
// MAX_SOFTIRQ_RESTART times, while the jiffy count is below the start's
// plus MAX_SOFTIRQ_TIME, and while need_resched() is clear; what is
// still pending then wakes ksoftirqd/N. Since 6.5 (d15121be7485, the
// revert of "softirq: Let ksoftirqd do its job") the next irq exit or
// local_bh_enable runs pending softirqs again even while ksoftirqd is
// runnable, so a busy task keeps serving them inline.
func (c *CPU) doSoftirq() {
	c.softirq++
	c.updExec()
	start := c.now
	c.stat.softFrom = start
	// The entry is the first pending vector's in the CPU profile, not
	// the interrupted activity's.
	entryAct := c.SetAct(ActSoftirq0 + Act(bits.TrailingZeros(uint(c.pending))))
	c.Spend(c.e.Costs.SoftirqEntry)
	c.act = entryAct
	end := jiffies(c.now) + maxSoftirqJiffies
	for restart := maxSoftirqRestart; ; {
		p := c.pending
		c.pending = 0
		for nr := 0; nr < numSoftirqs; nr++ {
			if p&(1<<nr) == 0 {
				continue
			}
			if h := c.handlers[nr]; h != nil {
				prev := c.SetAct(ActSoftirq0 + Act(nr))
				h(c)
				c.act = prev
			}
		}
		if c.pending == 0 {
			break
		}
		restart--
		if jiffies(c.now) < end && !c.rq.needResched && restart > 0 {
			continue
		}
		c.wakeupSoftirqd()
		break
	}
	c.softirq--
	c.updExec()
	c.stat.softNs += c.now - start
	c.expQSIfDue()
}

// SleepUntil waits on this CPU (Sleep) until time t, taking interrupts
// meanwhile.
func (c *CPU) SleepUntil(t Time) {
	if c.now >= t {
		return
	}
	e := c.e
	if len(c.irqs) == 0 && c.hardirq == 0 && e.nextAt() > t && t <= e.until && !e.halted {
		// Nothing else is due up to t: the timeout event would fire
		// next and resume this CPU at once, with no other event in
		// between. Fast-forward instead of switching away and back,
		// and count the two events (its timeout and its resume) the
		// engine would have run, so Events and every tie-break stay
		// as they were.
		e.seq += 2
		e.count += 2
		e.now = t
		c.now = t
		return
	}
	c.e.scheduleAt(t, payload{kind: evWake, cpu: c}) // t > c.now >= the engine's now
	for c.now < t {
		c.Sleep()
	}
}
