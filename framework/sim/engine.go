// Package sim is txlab's deterministic discrete-event engine: a virtual
// clock in int64 nanoseconds, an event queue, simulated CPUs that run
// straight-line Go as coroutines, spinlocks and cache lines whose costs
// follow the topology, and per-component random streams.
//
// Nothing here reads the wall clock. Events at equal times run in the order
// they were scheduled, so a run is a pure function of its inputs and seed.
package sim

import (
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/txlab/txlab/framework/units"
)

// Time is simulated time in nanoseconds. It prints itself as tc does
// (String); in JSON and with %d it is the integer of nanoseconds.
type Time int64

// String prints t as iproute2's sprint_time64 (lib/utils.c,
// print_time64) does, with framework/units' printer: "%.3g" of the
// largest unit it reaches, so 5ms, 100us, 1.5s, 1.23ms; below a
// microsecond, whole nanoseconds.
func (t Time) String() string { return units.SprintTime64(int64(t)) }

// Common durations in simulated nanoseconds.
const (
	Nanosecond  Time = 1
	Microsecond Time = 1000
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond
)

// An event is a heap entry: when it is due, and a key holding its
// tie-break (the sequence number it was scheduled with) above the slot
// of what it does. Sequence numbers are unique, so keys order as they
// do. Sixteen bytes: a node's four children fill one cache line, and
// the heap's moves are cheap; the payload stays put in the engine's
// slot table.
type event struct {
	at  Time
	key uint64 // seq<<slotBits | slot
}

// slotBits is the low bits of an event's key that hold its slot; the
// sequence number has the other 40 (10^12 events: days of wall time).
const (
	slotBits = 24
	slotMask = 1<<slotBits - 1
	maxSeq   = 1<<(64-slotBits) - 1
)

func (ev *event) slot() uint32 { return uint32(ev.key & slotMask) }

// Event kinds: what a payload does when its event is due. Each is a
// closure the engine would otherwise allocate per event.
const (
	evFn      uint8 = iota // run fn in engine context
	evGenFn                // run fg(gen) in engine context
	evWake                 // cpu.Wake(now): SleepUntil's timeout
	evIRQ                  // deliver interrupt h to cpu (RaiseIRQ)
	evHrTimer              // hr expires on cpu with h, unless re-armed (gen)
	evTick                 // cpu's scheduler tick
)

type payload struct {
	kind uint8
	cpu  *CPU
	fn   func()
	fg   func(uint64)
	h    func(*CPU)
	hr   *HrTimer
	gen  uint64
}

// eventHeap is a 4-ary min-heap on (at, seq): half the depth of a
// binary heap, and a node's four children share a cache line or two.
// Equal times pop in scheduling order (seq), so runs are deterministic.
type eventHeap []event

func (a *event) before(b *event) bool {
	return a.at < b.at || a.at == b.at && a.key < b.key
}

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	q := *h
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) >> 2
		if !e.before(&q[p]) {
			break
		}
		q[i] = q[p]
		i = p
	}
	q[i] = e
}

func (h *eventHeap) pop() event {
	q := *h
	top := q[0]
	n := len(q) - 1
	last := q[n]
	q = q[:n]
	*h = q
	if n == 0 {
		return top
	}
	// Floyd's pop: walk the hole at the root down to a leaf along the
	// smaller children (3 comparisons a level, none against last, which
	// came from the bottom and mostly belongs there), then sift last up
	// from that leaf, usually not at all.
	i := 0
	for {
		c := i<<2 + 1
		if c >= n {
			break
		}
		var m int
		if c+3 < n { // four children: two pairs, then their winners
			m = q.earlier(q.earlier(c, c+1), q.earlier(c+2, c+3))
		} else {
			m = c
			for k := c + 1; k < n; k++ {
				m = q.earlier(m, k)
			}
		}
		q[i] = q[m]
		i = m
	}
	for i > 0 {
		p := (i - 1) >> 2
		if !last.before(&q[p]) {
			break
		}
		q[i] = q[p]
		i = p
	}
	q[i] = last
	return top
}

// earlier is whichever of i and j holds the earlier event, chosen
// without a branch: the heap's comparisons go either way about as
// often, and mispredicted branches were most of a pop's time. (at, key)
// is compared as one 128-bit number (at's sign bit flipped, so that it
// orders as unsigned): q[j] is before q[i] when q[j] - q[i] borrows.
func (q eventHeap) earlier(i, j int) int {
	_, borrow := bits.Sub64(q[j].key, q[i].key, 0)
	_, borrow = bits.Sub64(uint64(q[j].at)^1<<63, uint64(q[i].at)^1<<63, borrow)
	return i ^ (i^j)&-int(borrow)
}

// Engine owns the clock, the event queue and the CPUs.
type Engine struct {
	now   Time
	seq   uint64
	hrSeq uint64 // hrtimers armed with slack, in order (HrTimer.seq)
	// The pending events are split at farFrom: events holds those due
	// before it, far the rest (see push).
	events    eventHeap
	far       eventHeap
	farFrom   Time
	slots     []payload // event payloads, by event.slot
	freeSlots []uint32  // unused entries of slots
	count     uint64    // events processed
	CPUs      []*CPU
	Topo      Topology
	Costs     *Costs
	rng       *Streams
	lockSites map[string]*LockStat
	actNames  []string    // ActName's labels
	actProf   *ActProfile // nil unless EnableActProfile
	halted    bool
	err       error
	intr      atomic.Pointer[error] // set by Interrupt, from any goroutine
	until     Time                  // horizon of the current Run: CPUs may not run past it
	intrCheck uint64                // the event count at which Run next looks at intr
	intrPoll  uint32                // Sync fast paths since the last look at intr (pollInterrupt)

	tasks      []*Task // every task but the idle ones
	running    bool    // Run has started
	overloaded int     // CPUs with tasks waiting (rd->overload)
	slice      Time    // the scheduler's base slice
	llc        [][]int // CPU ids per socket (the LLC), ascending
	utilBuf    []uint64

	expGP   *expGP   // the expedited RCU grace period in progress (rcu.go)
	expNext []func() // the calls waiting for the next one

	// OnLockWait observes every contended spinlock wait (tracing).
	OnLockWait func(c *CPU, site *LockStat, start, end Time)

	// PvSpinlocks runs the spinlocks as a KVM guest's paravirt
	// qspinlock (SpinLock.Lock, SpinLock.Unlock).
	PvSpinlocks bool
}

// NewEngine builds an engine with one CPU per hardware thread of topo.
func NewEngine(topo Topology, costs *Costs, seed uint64) (*Engine, error) {
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	if costs == nil {
		return nil, fmt.Errorf("engine: no cost table")
	}
	e := &Engine{Topo: topo, Costs: costs, rng: NewStreams(seed)}
	n := topo.NumCPUs()
	e.CPUs = make([]*CPU, n)
	e.llc = make([][]int, topo.Sockets)
	for i := 0; i < n; i++ {
		c := newCPU(e, i)
		c.idle = &Task{Name: fmt.Sprintf("swapper/%d", i), e: e, cpu: c, idle: true, kthread: true, single: i,
			ranOn: i, state: TaskRunning, started: true}
		e.CPUs[i] = c
		e.llc[c.Socket] = append(e.llc[c.Socket], i)
	}
	if topo.ThreadsPerCore > 1 {
		perThread := topo.Sockets * topo.CoresPerSocket
		for _, c := range e.CPUs {
			for th := 0; th < topo.ThreadsPerCore; th++ {
				if id := th*perThread + c.Socket*topo.CoresPerSocket + c.Core; id != c.ID {
					c.siblings = append(c.siblings, e.CPUs[id])
				}
			}
			c.sib = c.siblings[0]
		}
	}
	for _, c := range e.CPUs {
		c.core = append([]*CPU{c}, c.siblings...)
	}
	e.slice = baseSlice(n)
	return e, nil
}

// Distance is Topo.Distance(a, b) from the CPUs' recorded places,
// without the divisions.
func (e *Engine) Distance(a, b int) int {
	if a == b {
		return DistSelf
	}
	ca, cb := e.CPUs[a], e.CPUs[b]
	switch {
	case ca.Socket != cb.Socket:
		return DistRemote
	case ca.Core == cb.Core:
		return DistSMT
	default:
		return DistSocket
	}
}

// Now is the time of the event being processed. Code on a CPU should use
// cpu.Now(), which may run ahead of the engine between sync points.
func (e *Engine) Now() Time { return e.now }

// Events is the number of events processed so far.
func (e *Engine) Events() uint64 { return e.count }

// Rand returns the named component's random stream.
func (e *Engine) Rand(name string) *Rand { return e.rng.Stream(name) }

// RandSeed is the seed of name's stream, for a component that rebuilds
// the stream itself (a plugin, in or out of process).
func (e *Engine) RandSeed(name string) Seed { return e.rng.Seed(name) }

// At schedules fn to run in engine context at time t (never in the past).
func (e *Engine) At(t Time, fn func()) {
	e.scheduleAt(t, payload{kind: evFn, fn: fn})
}

// AtGen schedules fn(gen) to run in engine context at time t, as At
// does: a caller that keeps one fn and tells its events apart by gen
// (a generation that makes a superseded event a no-op) schedules with
// no allocation.
func (e *Engine) AtGen(t Time, fn func(gen uint64), gen uint64) {
	e.scheduleAt(t, payload{kind: evGenFn, fg: fn, gen: gen})
}

// scheduleAt queues p at t, or now if t is past, as At does.
func (e *Engine) scheduleAt(t Time, p payload) {
	if t < e.now {
		t = e.now
	}
	e.schedule(t, p)
}

// resumeSlot marks a resume event: slot resumeSlot+id resumes CPU id,
// with no payload to write, copy and free (nearly every event is one).
const resumeSlot = 1 << (slotBits - 1)

func (e *Engine) resumeAt(c *CPU, t Time) {
	e.push(event{at: t, key: e.nextKey(resumeSlot + uint32(c.ID))})
}

// farWindow is how far ahead of the earliest far event refill moves
// events into the near heap.
const farWindow = Millisecond

// push queues ev: in events if it is due before farFrom, else in far.
// A host's CPUs resume within microseconds, over and over; timers are
// armed milliseconds ahead and mostly re-armed before they are due
// (TCP's RTO at each ACK, the far end's delayed ACKs), each re-arming
// leaving its stale event queued until its time. Kept apart, those
// do not deepen the heap that nearly every event goes through. Both
// are ordered on (at, key) and every event in events is before every
// one in far, so events are taken in the same order as from one heap.
func (e *Engine) push(ev event) {
	if ev.at < e.farFrom {
		e.events.push(ev)
	} else {
		e.far.push(ev)
	}
}

// refill, once events is empty, moves the far events due within
// farWindow of the earliest into it; it reports false if none is left.
func (e *Engine) refill() bool {
	if len(e.far) == 0 {
		return false
	}
	e.farFrom = e.far[0].at + min(farWindow, maxTime-e.far[0].at)
	for len(e.far) > 0 && e.far[0].at < e.farFrom {
		e.events.push(e.far.pop())
	}
	return true
}

// nextKey takes the next sequence number for an event of slot.
func (e *Engine) nextKey(slot uint32) uint64 {
	e.seq++
	if e.seq > maxSeq {
		Panicf("engine: more than %d events scheduled", uint64(maxSeq))
	}
	return e.seq<<slotBits | uint64(slot)
}

// schedule queues p at t, reusing a free payload slot.
func (e *Engine) schedule(t Time, p payload) {
	var slot uint32
	if n := len(e.freeSlots); n > 0 {
		slot = e.freeSlots[n-1]
		e.freeSlots = e.freeSlots[:n-1]
		e.slots[slot] = p
	} else {
		slot = uint32(len(e.slots))
		if slot >= resumeSlot {
			Panicf("engine: more than %d events pending", resumeSlot)
		}
		e.slots = append(e.slots, p)
	}
	e.push(event{at: t, key: e.nextKey(slot)})
}

// fire runs the payload of a due event (not a resume: Run does those)
// and frees its slot.
func (e *Engine) fire(ev event) {
	slot := ev.slot()
	p := e.slots[slot]
	e.slots[slot] = payload{}
	e.freeSlots = append(e.freeSlots, slot)
	switch p.kind {
	case evFn:
		p.fn()
	case evGenFn:
		p.fg(p.gen)
	case evWake:
		p.cpu.Wake(ev.at)
	case evIRQ:
		p.cpu.irqs = append(p.cpu.irqs, p.h)
		p.cpu.wakeForIRQ(ev.at)
	case evHrTimer:
		p.hr.fire(p.cpu, p.gen, p.h)
	case evTick:
		p.cpu.tickEvent()
	}
}

// maxTime is the latest time an event can be due.
const maxTime Time = 1<<63 - 1

// nextAt is the time of the earliest pending event, or a huge value.
func (e *Engine) nextAt() Time {
	if len(e.events) == 0 && !e.refill() {
		return 1<<62 - 1
	}
	return e.events[0].at
}

// Fail stops the run with err; Run returns it.
func (e *Engine) Fail(err error) {
	if e.err == nil {
		e.err = err
	}
	e.halted = true
}

// Run processes events until the clock passes until, the queue empties, or
// Fail is called. The CPUs are left parked; call Close to release them.
func (e *Engine) Run(until Time) error {
	e.until = until
	e.running = true
	for _, c := range e.CPUs {
		if c.curr == nil { // nothing to run: the idle loop, waiting for IRQs
			c.curr = c.idle
			c.now = e.now
			e.resumeAt(c, e.now)
		}
	}
	for !e.halted {
		if len(e.events) == 0 && !e.refill() || e.events[0].at > until {
			break
		}
		if e.count >= e.intrCheck { // every 1024 events (SleepUntil may skip counts)
			e.intrCheck = e.count + 1024
			if p := e.intr.Load(); p != nil {
				e.Fail(*p)
				break
			}
		}
		ev := e.events.pop()
		e.now = ev.at
		e.count++
		if slot := ev.slot(); slot >= resumeSlot { // nearly every event
			e.CPUs[slot-resumeSlot].resume(ev.at)
			continue
		}
		e.fire(ev)
	}
	if e.now < until && !e.halted {
		e.now = until
	}
	return e.err
}

// Close unwinds every CPU coroutine. The engine cannot run afterwards.
func (e *Engine) Close() {
	for _, c := range e.CPUs {
		c.idle.close()
	}
	for _, t := range e.tasks {
		t.close()
	}
	e.halted = true
}

func (t *Task) close() {
	if t.stop != nil {
		t.stop()
	}
	t.done = true
}

// Interrupt makes Run stop with err within the next 1024 events. Unlike
// Fail and Stop it may be called from any goroutine (a signal handler).
func (e *Engine) Interrupt(err error) { e.intr.Store(&err) }

// pollInterrupt is how a CPU that runs alone in Sync's fast path (no
// event due before its clock, so it never parks) notices Interrupt: every
// 1024 fast paths it looks at intr, and if set makes Run look at once.
// Without it such a CPU ran to the horizon deaf to Interrupt.
func (e *Engine) pollInterrupt() bool {
	e.intrPoll++
	if e.intrPoll&1023 != 0 || e.intr.Load() == nil {
		return false
	}
	e.intrCheck = e.count
	return true
}

// Stop halts Run after the current event without an error.
func (e *Engine) Stop() { e.halted = true }

// ModelError is a violated invariant of the model itself (a bug, or a
// plugin breaking its contract), raised from code running on a CPU.
// Err, if set, is the error behind Msg (a plugin's, say), for errors.As.
type ModelError struct {
	Msg string
	Err error
}

func (m *ModelError) Error() string { return m.Msg }
func (m *ModelError) Unwrap() error { return m.Err }

// Panicf aborts the current CPU's code with a ModelError; the engine stops
// and Run returns the error.
func Panicf(format string, args ...any) {
	panic(&ModelError{Msg: fmt.Sprintf(format, args...)})
}
