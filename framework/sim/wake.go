package sim

import (
	"fmt"
	"sort"
)

// migrationCost is sysctl_sched_migration_cost (0.5 ms): a task that ran
// more recently is cache-hot and the balancer leaves it (task_hot).
const migrationCost = 500 * Microsecond

// WakeUp is try_to_wake_up(p) by code running on waker, or from engine
// context (a timer, an action) when waker is nil. It reports whether p
// was asleep.
func (e *Engine) WakeUp(p *Task, waker *CPU) bool { return e.wakeUp(p, waker, false, false) }

// wakeUp is try_to_wake_up; sync is WF_SYNC (the waker is about to
// sleep or, from a softirq, nothing says otherwise: the socket layer's
// wake_up_interruptible_sync_poll passes it), fork is wake_up_new_task.
func (e *Engine) wakeUp(p *Task, waker *CPU, sync, fork bool) bool {
	if p.state != TaskSleeping {
		return false
	}
	at := e.now
	if waker != nil {
		prev := waker.SetAct(ActWake)
		waker.Spend(e.Costs.WakeUp)
		waker.act = prev
		at = waker.now
	}
	if p.delayed {
		p.cpu.wakeDelayed(p) // ttwu_runnable: still queued there
		p.cpu.wakeupPreempt(p, waker, at)
		return true
	}
	var target *CPU
	if fork {
		target = e.CPUs[e.forkCPU(p)]
	} else {
		target = e.CPUs[e.selectTaskRq(p, waker, sync)]
	}
	if p.cpu != nil && target != p.cpu {
		p.Migrations++
	}
	p.cpu = target
	p.state = TaskRunnable
	p.Wakeups++
	target.enqueue(p, at, fork)
	if target.curr == nil || target.curr.idle {
		// The idle loop polls need_resched (TIF_POLLING_NRFLAG): no IPI,
		// but the CPU leaves its C-state first.
		target.rq.needResched = true
		if target != waker {
			target.Wake(at + Time(e.Costs.WakeIdleLatency))
		}
	} else if !fork && waker != nil && target != waker && !e.sameLLC(waker.ID, target.ID) {
		// ttwu_queue_wakelist: a CPU outside the waker's LLC gets the
		// task on its wake list and, running a task (not polling), a
		// call-function IPI, whose handler (sched_ttwu_pending)
		// activates it and checks preemption there: one interrupt,
		// no reschedule IPI on top. The model enqueues at the
		// waker's instant.
		e.RaiseIRQ(target, at, callFunctionIPI)
		target.wakeupPreempt(p, target, at)
	} else {
		target.wakeupPreempt(p, waker, at)
	}
	return true
}

// callFunctionIPI is the call-function-single IPI's handler
// (sysvec_call_function_single -> flush_smp_call_function_queue ->
// sched_ttwu_pending, counted in /proc/stat's intr as CAL): the model
// has already enqueued the task it carries.
func callFunctionIPI(*CPU) {}

// selectTaskRq is select_task_rq_fair's fast path for a wake-up. A
// task with one allowed CPU never gets here in the kernel
// (select_task_rq skips the class's method), so it records no wakee.
func (e *Engine) selectTaskRq(p *Task, waker *CPU, sync bool) int {
	if p.single >= 0 {
		return p.single
	}
	prev := p.cpu.ID
	target := prev
	wide := false
	if waker != nil && waker.curr != nil {
		cur := waker.curr // current: the task the waker's code runs in, or interrupts
		cur.recordWakee(p, jiffies(waker.now))
		wide = e.wakeWide(cur, p)
	}
	if waker != nil && !wide && p.allows(waker.ID) && waker.ID != prev { // want_affine
		target = e.wakeAffine(waker.ID, prev, sync)
	}
	return e.selectIdleSibling(p, prev, target)
}

// recordWakee is record_wakee: current (t) woke p at jiffy j.
func (t *Task) recordWakee(p *Task, j int64) {
	if j > t.flipDecay+hz { // time_after(jiffies, wakee_flip_decay_ts + HZ)
		t.wakeeFlips >>= 1
		t.flipDecay = j
	}
	if t.lastWakee != p {
		t.lastWakee = p
		t.wakeeFlips++
	}
}

// wakeWide is wake_wide: the waker (cur) and the wakee both switch
// between many partners, the one at least sd_llc_size times as often
// as the other (which itself flips at least sd_llc_size times): a
// 1:N relation that would pile the N onto the waker's LLC, so the
// wake-up is not affine and the wakee stays by its previous CPU.
func (e *Engine) wakeWide(cur, p *Task) bool {
	master, slave := uint64(cur.wakeeFlips), uint64(p.wakeeFlips)
	if master < slave {
		master, slave = slave, master
	}
	factor := uint64(e.llcSize())
	return slave >= factor && master >= slave*factor
}

// llcSize is sd_llc_size: the CPUs sharing a last-level cache (a
// socket's, the same on every CPU here).
func (e *Engine) llcSize() int { return e.Topo.CoresPerSocket * e.Topo.ThreadsPerCore }

func (e *Engine) sameLLC(a, b int) bool { return e.CPUs[a].Socket == e.CPUs[b].Socket }

// free is available_idle_cpu: no runnable task (running its idle
// task, or not started yet) and none about to be switched in.
func (c *CPU) free() bool {
	return c.rq.nrRunning == 0 && c.rq.switchTo == nil && (c.curr == nil || c.curr.idle)
}

// wakeAffine is wake_affine: wake_affine_idle, then wake_affine_weight
// with run counts for loads and the domain's imbalance_pct (117) halved
// in prev's favour, as the kernel weighs prev_eff_load.
func (e *Engine) wakeAffine(this, prev int, sync bool) int {
	tc, pc := e.CPUs[this], e.CPUs[prev]
	switch {
	case tc.free() && e.sameLLC(this, prev):
		if pc.free() {
			return prev
		}
		return this
	case sync && tc.rq.nrRunning == 1:
		return this
	case pc.free():
		return prev
	}
	thisLoad := tc.rq.nrRunning
	if sync && thisLoad > 0 {
		thisLoad-- // the waker's current task is about to sleep
	}
	thisLoad++ // the wakee
	if thisLoad*100 < pc.rq.nrRunning*(100+(117-100)/2) {
		return this
	}
	return prev
}

// selectIdleSibling is select_idle_sibling.
func (e *Engine) selectIdleSibling(p *Task, prev, target int) int {
	if e.CPUs[target].free() && p.allows(target) {
		return target
	}
	if prev != target && e.sameLLC(prev, target) && e.CPUs[prev].free() && p.allows(prev) {
		return prev
	}
	// p->recent_used_cpu: the CPU it ran on before prev, if idle in
	// the target's LLC, before any scan.
	recent := p.recentUsed
	p.recentUsed = prev
	if recent >= 0 && recent != prev && recent != target && e.sameLLC(recent, target) && e.CPUs[recent].free() && p.allows(recent) {
		return recent
	}
	idleCore := false
	if e.Topo.ThreadsPerCore > 1 {
		idleCore = e.hasIdleCore(e.CPUs[target].Socket, p)
		if !idleCore && e.sameLLC(prev, target) {
			for _, s := range e.CPUs[prev].siblings { // select_idle_smt
				if s.free() && p.allows(s.ID) {
					return s.ID
				}
			}
		}
	}
	if i := e.selectIdleCPU(p, target, idleCore); i >= 0 {
		return i
	}
	return target
}

// coreIdle reports whether every thread of c's core is free.
func (c *CPU) coreIdle() bool {
	if !c.free() {
		return false
	}
	for _, s := range c.siblings {
		if !s.free() {
			return false
		}
	}
	return true
}

func (e *Engine) hasIdleCore(socket int, p *Task) bool {
	for _, id := range e.llc[socket] {
		if p.allows(id) && e.CPUs[id].coreIdle() {
			return true
		}
	}
	return false
}

// selectIdleCPU is select_idle_cpu over the target's LLC, from
// target+1 round (for_each_cpu_wrap): the first CPU of an idle core
// when one exists (select_idle_core), else the first free CPU.
func (e *Engine) selectIdleCPU(p *Task, target int, idleCore bool) int {
	ids := e.llc[e.CPUs[target].Socket]
	start := sort.SearchInts(ids, target+1)
	fallback := -1
	for k := range ids {
		id := ids[(start+k)%len(ids)]
		if !p.allows(id) {
			continue
		}
		c := e.CPUs[id]
		if idleCore {
			if c.coreIdle() {
				return id
			}
			if fallback < 0 && c.free() {
				fallback = id
			}
			continue
		}
		if c.free() {
			return id
		}
	}
	return fallback
}

// forkCPU is sched_balance_find_dst_cpu for SD_BALANCE_FORK, level by
// level from the forking shell's CPU, taken to be on socket 0:
//   - NUMA: the socket with the most free CPUs, the shell's on a tie
//     (sched_balance_find_dst_group keeps the local group unless the
//     idlest has more idle CPUs);
//   - another socket: its most recently idled free CPU
//     (sched_balance_find_dst_group_cpu: the shallowest C-state, then
//     the latest rq->idle_stamp; the model has no C-states, and a CPU
//     idle since before the run comes last), kept unless its core has
//     fewer free CPUs than the best core below;
//   - the LLC's cores (update_pick_idlest): the most free CPUs, then the
//     lowest group_util, the blocked load of tasks asleep there
//     included (PELT, pelt.go), the first on a tie; there the most
//     recently idled free CPU;
//
// and with no CPU free, the least loaded one.
func (e *Engine) forkCPU(p *Task) int {
	if p.single >= 0 {
		return p.single
	}
	best, bestFree := -1, -1
	for s := range e.llc {
		n := 0
		for _, id := range e.llc[s] {
			if p.allows(id) && e.CPUs[id].free() {
				n++
			}
		}
		if n > bestFree {
			best, bestFree = s, n
		}
	}
	if bestFree > 0 {
		core, coreFree := e.idlestCore(p, best)
		if best != 0 {
			remote := -1
			for _, id := range e.llc[best] {
				remote = e.laterIdle(p, remote, e.CPUs[id])
			}
			if e.coreFree(p, e.CPUs[remote]) >= coreFree {
				return remote
			}
		}
		pick := -1
		for _, c := range core.core {
			pick = e.laterIdle(p, pick, c)
		}
		return pick
	}
	least := -1
	for _, c := range e.CPUs {
		if p.allows(c.ID) && (least < 0 || c.rq.nrRunning < e.CPUs[least].rq.nrRunning) {
			least = c.ID
		}
	}
	return least
}

// coreFree counts the free CPUs of c's core that p may use.
func (e *Engine) coreFree(p *Task, c *CPU) int {
	n := 0
	for _, m := range c.core {
		if p.allows(m.ID) && m.free() {
			n++
		}
	}
	return n
}

// idlestCore is update_pick_idlest over socket s's cores for p: the
// most free CPUs, then the lowest summed util_avg, the first on a tie.
// It returns the core's first CPU and how many of its CPUs are free.
func (e *Engine) idlestCore(p *Task, s int) (*CPU, int) {
	util := e.cpuUtils(e.now)
	var pick *CPU
	pickFree, pickUtil := 0, uint64(0)
	for _, id := range e.llc[s] {
		c := e.CPUs[id]
		if c.Thread != 0 {
			continue // each core once, by its first thread
		}
		n, u := e.coreFree(p, c), uint64(0)
		for _, m := range c.core {
			u += util[m.ID]
		}
		if n > pickFree || n == pickFree && n > 0 && u < pickUtil {
			pick, pickFree, pickUtil = c, n, u
		}
	}
	return pick, pickFree
}

// laterIdle is the pick, of the CPU pick (-1: none yet) and c, that
// sched_balance_find_dst_group_cpu prefers for p: a free CPU p may use,
// the one that went idle last (a CPU idle since before the run after
// every other; pick on a tie).
func (e *Engine) laterIdle(p *Task, pick int, c *CPU) int {
	if !p.allows(c.ID) || !c.free() {
		return pick
	}
	if pick < 0 {
		return c.ID
	}
	if b := e.CPUs[pick]; c.idled && (!b.idled || c.idleStamp > b.idleStamp) {
		return c.ID
	}
	return pick
}

// migratable is can_migrate_task plus task_hot: not a per-CPU kthread
// nor a delayed task (asleep, queued only to lose its lag),
// allowed on dst, and not run within sysctl_sched_migration_cost
// unless dst is an SMT sibling of the task's CPU (task_hot: a domain
// with SD_SHARE_CPUCAPACITY, whose CPUs share the core's caches, has
// no cache-hot task).
func (t *Task) migratable(dst *CPU, now Time) bool {
	return !t.kthread && !t.delayed && t.allows(dst.ID) && (now-t.lastRan >= migrationCost || t.cpu.sameCore(dst))
}

// sameCore reports whether o is c or an SMT sibling of c.
func (c *CPU) sameCore(o *CPU) bool { return c.Socket == o.Socket && c.Core == o.Core }

// pullFrom moves the first migratable waiting task of src to c's
// runqueue and reports whether it did: detach_task's dequeue (not a
// sleep) keeps the task's lag (update_entity_lag) and its deadline
// relative to its vruntime (PLACE_REL_DEADLINE), and attach_task's
// place_entity applies both on c.
func (c *CPU) pullFrom(src *CPU, now Time) bool {
	for i, t := range src.rq.tasks {
		if !t.migratable(c, now) {
			continue
		}
		src.updateCurr()
		avg, _ := src.avgVruntime() // t still queued there
		lag, rel := src.clampLag(avg-t.vruntime), t.sliceEnd-t.vruntime
		src.dequeueAt(i)
		src.integrate(now)
		src.rq.nrRunning--
		t.cpu = c
		t.Migrations++
		t.vlag = lag
		c.enqueue(t, now, false)
		t.sliceEnd = t.vruntime + rel
		return true
	}
	return false
}

// busiest is the CPU of socket s (or of every other socket when other)
// with the most tasks waiting that c could take, or nil.
func (c *CPU) busiest(s int, other bool) *CPU {
	var best *CPU
	for _, o := range c.e.CPUs {
		if (o.Socket == s) == other || o == c || len(o.rq.tasks) == 0 {
			continue
		}
		if best == nil || len(o.rq.tasks) > len(best.rq.tasks) {
			ok := false
			for _, t := range o.rq.tasks {
				if t.migratable(c, c.now) {
					ok = true
					break
				}
			}
			if ok {
				best = o
			}
		}
	}
	return best
}

// newidleBalance is sched_balance_newidle: a CPU about to idle pulls a
// waiting task from the busiest runqueue of its LLC, then of the rest,
// when some CPU has tasks waiting (rd->overload).
func (c *CPU) newidleBalance() {
	if c.e.overloaded == 0 {
		return
	}
	c.Spend(c.e.Costs.NewidleBalance)
	// The SMT domain first (for_each_domain from the lowest): a
	// sibling with tasks waiting gives one, cache-hot or not.
	for _, s := range c.siblings {
		if len(s.rq.tasks) > 0 && c.pullFrom(s, c.now) {
			return
		}
	}
	for _, other := range []bool{false, true} {
		if src := c.busiest(c.Socket, other); src != nil && c.pullFrom(src, c.now) {
			return
		}
	}
}

// nohzBalancerKick is the tick's nohz_balancer_kick and the idle load
// balance it triggers: with tasks waiting here, the first free CPU of
// this LLC (then of the rest) that a waiting task's affinity allows
// pulls one and wakes (_nohz_idle_balance balances for every idle CPU,
// so one the affinity excludes passes the work on).
func (c *CPU) nohzBalancerKick() {
	if len(c.rq.tasks) == 0 {
		return
	}
	for _, other := range []bool{false, true} {
		for _, o := range c.e.CPUs {
			if (o.Socket == c.Socket) == other || !o.free() || !c.waiterAllows(o) {
				continue
			}
			if !o.pullFrom(c, c.now) {
				break // cache-hot or delayed: try no further in this group
			}
			o.rq.needResched = true
			o.Wake(c.now + Time(c.e.Costs.WakeIdleLatency))
			return
		}
	}
}

// waiterAllows reports whether a task waiting on c may run on o at
// all (its affinity), cache-hot or not.
func (c *CPU) waiterAllows(o *CPU) bool {
	for _, t := range c.rq.tasks {
		if !t.kthread && t.allows(o.ID) {
			return true
		}
	}
	return false
}

// wakeupSoftirqd is wakeup_softirqd: ksoftirqd/N, made on first use.
func (c *CPU) wakeupSoftirqd() {
	k := c.rq.ksoftirqd
	if k == nil {
		k = c.e.NewTask(fmt.Sprintf("ksoftirqd/%d", c.ID), []int{c.ID}, runKsoftirqd)
		k.kthread, k.started = true, true
		k.cpu, k.ranOn = c, c.ID
		k.lines.owner = int32(c.ID + 1)
		c.rq.ksoftirqd = k
	}
	c.e.wakeUp(k, c, false, false)
}

// runKsoftirqd is smpboot_thread_fn running run_ksoftirqd: serve
// pending softirqs (handle_softirqs), cond_resched, sleep when none.
func runKsoftirqd(t *Task) {
	c := t.cpu // a per-CPU kthread never moves
	for {
		if c.pending == 0 {
			t.Block()
			continue
		}
		c.doSoftirq()
		t.PreemptPoint()
	}
}

// WaitQueue is a wait_queue_head_t of tasks (non-exclusive waiters,
// removed when woken: autoremove_wake_function).
type WaitQueue struct{ tasks []*Task }

// Add is prepare_to_wait: t is woken by the next WakeUp. Check the
// condition after Add and before Block.
func (w *WaitQueue) Add(t *Task) {
	for _, x := range w.tasks {
		if x == t {
			return
		}
	}
	w.tasks = append(w.tasks, t)
}

// Remove is finish_wait.
func (w *WaitQueue) Remove(t *Task) {
	for i, x := range w.tasks {
		if x == t {
			w.tasks = append(w.tasks[:i], w.tasks[i+1:]...)
			return
		}
	}
}

// Len is the number of waiters (waitqueue_active when > 0).
func (w *WaitQueue) Len() int { return len(w.tasks) }

// WakeUp is __wake_up(_sync): try_to_wake_up every waiter from waker's
// CPU (nil: engine context); the woken ones leave the queue. It returns
// how many woke.
func (w *WaitQueue) WakeUp(waker *CPU, sync bool) int {
	if len(w.tasks) == 0 {
		return 0
	}
	n := 0
	keep := w.tasks[:0]
	for _, t := range w.tasks {
		if t.e.wakeUp(t, waker, sync, false) {
			n++
			continue
		}
		keep = append(keep, t)
	}
	for i := len(keep); i < len(w.tasks); i++ {
		w.tasks[i] = nil
	}
	w.tasks = keep
	return n
}

// SchedStat are one CPU's cumulative scheduler and time counters at the
// engine's current time.
type SchedStat struct {
	Busy, Soft, Hard Time   // working or spinning; in softirq; in hardirq
	Switches         uint64 // context switches
	Interrupts       uint64 // hard interrupts, local timer ticks included
	RunnableNs       int64  // integral of nr_running over time
}

// SchedStat returns c's counters now.
func (c *CPU) SchedStat() SchedStat {
	now := c.e.now
	s := SchedStat{Busy: c.busy, Soft: c.stat.softNs, Hard: c.stat.hardNs, Switches: c.stat.switches,
		Interrupts: c.stat.irqs + c.stat.ticks, RunnableNs: c.stat.runInt}
	if now > c.stat.runLast {
		s.RunnableNs += int64(c.rq.nrRunning) * int64(now-c.stat.runLast)
	}
	if c.softirq > 0 {
		// A softirq run in progress counts up to the CPU's clock, as
		// busy does: a sample inside a long run would otherwise see
		// its busy time but none of its soft time.
		s.Soft += c.now - c.stat.softFrom
	}
	if c.curr != nil && !c.curr.idle && now > c.stat.active {
		s.Interrupts += uint64(jiffies(now) - jiffies(c.stat.active))
	}
	return s
}

// SetLockCPUs records lock statistics only for acquisitions made on the
// given CPUs (perf lock record -C); nil records every CPU.
func (e *Engine) SetLockCPUs(cpus []int) {
	for _, c := range e.CPUs {
		c.lockRec = cpus == nil
	}
	for _, id := range cpus {
		if id >= 0 && id < len(e.CPUs) {
			e.CPUs[id].lockRec = true
		}
	}
}

// LockRecorded reports whether c's lock acquisitions are recorded
// (SetLockCPUs).
func (c *CPU) LockRecorded() bool { return c.lockRec }

// Tasks returns every task made so far (idle tasks excluded).
func (e *Engine) Tasks() []*Task { return e.tasks }
