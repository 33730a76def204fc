package sim

import (
	"errors"
	"iter"
)

// Softirq vectors, in the kernel's order (include/linux/interrupt.h): a
// lower number runs first in __do_softirq.
const (
	TimerSoftirq = 1 // TIMER_SOFTIRQ
	NetTxSoftirq = 2 // NET_TX_SOFTIRQ
	NetRxSoftirq = 3 // NET_RX_SOFTIRQ
	numSoftirqs  = 10
)

// maxSoftirqRestart bounds the __do_softirq loop (MAX_SOFTIRQ_RESTART).
const maxSoftirqRestart = 10

type blockKind uint8

const (
	notBlocked  blockKind = iota
	blockedSpin           // spinning on a lock: burns CPU
	blockedIdle           // idle or sleeping: no CPU
)

var errUnwind = errors.New("sim: cpu unwound")

// CPU is one simulated hardware thread. Its code is ordinary Go running in
// a coroutine; it advances its own clock with Spend and synchronises with
// the rest of the machine at every primitive that touches shared state.
type CPU struct {
	ID                   int
	Socket, Core, Thread int

	e     *Engine
	now   Time
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool
	main  func(*CPU)
	done  bool

	block      blockKind
	blockStart Time

	busy      Time // ns spent working or spinning ("sys" time)
	hardirq   int
	softirq   int
	bh        int // local_bh_disable depth
	pending   uint32
	handlers  [numSoftirqs]func(*CPU)
	irqs      []func(*CPU)
	irqsSpare []func(*CPU)
}

func newCPU(e *Engine, id int) *CPU {
	s, c, t := e.Topo.Place(id)
	return &CPU{ID: id, Socket: s, Core: c, Thread: t, e: e}
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

// Start gives the CPU its process-context code (a sender thread) and
// schedules it at time at. A CPU without one runs the idle loop, waking for
// interrupts. Call Start (or nothing) for each CPU before Engine.Run.
func (c *CPU) Start(at Time, main func(*CPU)) {
	c.main = main
	c.now = at
	c.next, c.stop = iter.Pull(c.body)
	c.e.resumeAt(c, at)
}

func (c *CPU) body(yield func(struct{}) bool) {
	c.yield = yield
	defer func() {
		if r := recover(); r != nil {
			if r == errUnwind { //nolint:errorlint // sentinel identity
				return
			}
			if me, ok := r.(*ModelError); ok {
				c.e.Fail(me)
				return
			}
			panic(r)
		}
	}()
	if c.main != nil {
		c.main(c)
	}
	c.IdleLoop()
}

// IdleLoop is what a CPU runs when it has nothing else: wait for an
// interrupt, run it and the softirqs it raised, forever.
func (c *CPU) IdleLoop() {
	for {
		c.Sleep()
	}
}

func (c *CPU) resume(t Time) {
	if c.done {
		return
	}
	if t > c.now {
		if c.block == blockedSpin {
			c.busy += t - c.now
		}
		c.now = t
	}
	if _, ok := c.next(); !ok {
		c.done = true
	}
}

func (c *CPU) close() {
	if c.stop != nil {
		c.stop()
	}
	c.done = true
}

func (c *CPU) park() {
	if !c.yield(struct{}{}) {
		panic(errUnwind)
	}
}

// Spend burns ns of CPU time in the current context.
func (c *CPU) Spend(ns int64) {
	if ns <= 0 {
		return
	}
	c.now += Time(ns)
	c.busy += Time(ns)
}

// Sync makes this CPU's next action happen in global time order: if any
// event is due before the CPU's clock, the CPU waits for it. It then takes
// pending interrupts, as real hardware would at this instruction boundary.
func (c *CPU) Sync() {
	if c.e.nextAt() < c.now || c.now > c.e.until {
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
	c.park()
	c.block = notBlocked
}

// Sleep parks the CPU with no work (idle, or a thread blocked in the
// kernel) until Wake or an interrupt; it then runs pending interrupts and
// softirqs, as the idle task or irq exit would.
func (c *CPU) Sleep() {
	c.block = blockedIdle
	c.blockStart = c.now
	c.park()
	c.block = notBlocked
	c.takeInterrupts()
	if c.pending != 0 && c.bh == 0 && c.softirq == 0 {
		c.doSoftirq()
	}
}

// Wake resumes a sleeping CPU at time t (no earlier than its own clock).
// It is a no-op for a CPU that is not sleeping.
func (c *CPU) Wake(t Time) {
	if c.block != blockedIdle || c.done {
		return
	}
	if t < c.now {
		t = c.now
	}
	c.block = notBlocked // one wake is enough; avoid double resume
	c.e.resumeAt(c, t)
}

// Sleeping reports whether the CPU is idle or its thread is blocked.
func (c *CPU) Sleeping() bool { return c.block == blockedIdle }

// RaiseIRQ delivers a hard interrupt to CPU c at time t: handler runs in
// hardirq context at c's next instruction boundary (sync point), or at once
// if c is idle, and the softirqs it raises run on irq exit.
func (e *Engine) RaiseIRQ(c *CPU, t Time, handler func(*CPU)) {
	e.At(t, func() {
		c.irqs = append(c.irqs, handler)
		c.Wake(e.now)
	})
}

func (c *CPU) takeInterrupts() {
	if len(c.irqs) == 0 || c.hardirq > 0 {
		return
	}
	for len(c.irqs) > 0 {
		list := c.irqs
		c.irqs = c.irqsSpare[:0]
		c.hardirq++
		for _, h := range list {
			c.Spend(c.e.Costs.HardIRQ)
			h(c)
		}
		c.hardirq--
		c.irqsSpare = list[:0]
	}
	// irq_exit(): run softirqs unless we interrupted softirq or bh-off code.
	if c.pending != 0 && c.bh == 0 && c.softirq == 0 {
		c.doSoftirq()
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
}

// doSoftirq is __do_softirq: run pending vectors in order, restarting while
// new ones are raised, at most maxSoftirqRestart times (the rest waits for
// the next opportunity, as it would for ksoftirqd).
func (c *CPU) doSoftirq() {
	c.softirq++
	c.Spend(c.e.Costs.SoftirqEntry)
	for restart := 0; c.pending != 0 && restart < maxSoftirqRestart; restart++ {
		p := c.pending
		c.pending = 0
		for nr := 0; nr < numSoftirqs; nr++ {
			if p&(1<<nr) == 0 {
				continue
			}
			if h := c.handlers[nr]; h != nil {
				h(c)
			}
		}
	}
	c.softirq--
	if c.pending != 0 {
		// ksoftirqd: let the rest run once this CPU is next idle or at
		// its next irq exit.
		c.e.RaiseIRQ(c, c.now+Microsecond, func(*CPU) {})
	}
}

// WaitQueue is a list of sleeping threads (wait_queue_head_t).
type WaitQueue struct{ sleepers []*CPU }

// Add registers c to be woken; call before Sleep.
func (w *WaitQueue) Add(c *CPU) { w.sleepers = append(w.sleepers, c) }

// Len is the number of registered sleepers.
func (w *WaitQueue) Len() int { return len(w.sleepers) }

// WakeAll wakes every sleeper (wake_up_interruptible_all). The waker pays
// try_to_wake_up per sleeper; each sleeper resumes after that.
func (w *WaitQueue) WakeAll(waker *CPU) {
	for _, s := range w.sleepers {
		waker.Spend(waker.e.Costs.WakeUp)
		s.Wake(waker.now)
	}
	w.sleepers = w.sleepers[:0]
}

// SleepUntil sleeps (idle) until time t, taking interrupts meanwhile.
func (c *CPU) SleepUntil(t Time) {
	if c.now >= t {
		return
	}
	c.e.At(t, func() { c.Wake(t) })
	for c.now < t {
		c.Sleep()
	}
}
