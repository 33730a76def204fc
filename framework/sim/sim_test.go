package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func testEngine(t *testing.T, topo Topology) *Engine {
	t.Helper()
	e, err := NewEngine(topo, DefaultCosts(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func TestTopologyPlaceAndDistance(t *testing.T) {
	topo := Topology{Sockets: 2, CoresPerSocket: 4, ThreadsPerCore: 2}
	cases := []struct{ a, b, want int }{
		{0, 0, DistSelf},
		{0, 8, DistSMT},    // CPU i and i+sockets*cores are siblings
		{0, 1, DistSocket}, // same socket, other core
		{0, 4, DistRemote}, // first core of socket 1
		{3, 12, DistRemote},
	}
	for _, c := range cases {
		if got := topo.Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%d,%d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	spread := topo.Spread(4)
	want := []int{0, 4, 1, 5} // one per core, alternating sockets
	for i := range want {
		if spread[i] != want[i] {
			t.Fatalf("Spread(4) = %v, want %v", spread, want)
		}
	}
	if err := (Topology{Sockets: 0, CoresPerSocket: 1, ThreadsPerCore: 1}).Validate(); err == nil {
		t.Error("zero sockets accepted")
	}
}

// Events at equal times run in scheduling order; CPU actions interleave
// in global time order at sync points.
func TestGlobalTimeOrder(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 3, ThreadsPerCore: 1})
	var log []int
	var line CacheLine
	for i := 0; i < 3; i++ {
		id := i
		e.CPUs[i].Start(Time(id), func(c *CPU) {
			for k := 0; k < 3; k++ {
				c.Spend(int64(10 * (id + 1)))
				c.Sync() // a sync point: runs in global time order
				log = append(log, int(c.Now()))
				line.Read(c)
			}
		})
	}
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(log); i++ {
		if log[i] < log[i-1] {
			t.Fatalf("actions out of time order: %v", log)
		}
	}
	if len(log) != 9 {
		t.Fatalf("got %d actions, want 9", len(log))
	}
}

// A contended spinlock is granted in FIFO order, waiters burn CPU, and
// the per-site stats count contention and wait.
func TestSpinLockFIFOAndStats(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 2, CoresPerSocket: 2, ThreadsPerCore: 1})
	var l SpinLock
	site := e.LockSite("test")
	var order []int
	for i := 0; i < 4; i++ {
		id := i
		e.CPUs[i].Start(Time(id), func(c *CPU) {
			l.Lock(c, site)
			order = append(order, id)
			c.Spend(1000)
			l.Unlock(c)
		})
	}
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	for i, id := range order {
		if id != i {
			t.Fatalf("grant order %v, want FIFO 0 1 2 3", order)
		}
	}
	if site.Acquired != 4 || site.Contended != 3 {
		t.Errorf("acquired %d contended %d, want 4 and 3", site.Acquired, site.Contended)
	}
	if site.MaxWait < 2000 || site.TotalWait < 3000 {
		t.Errorf("waits too small: total %d max %d", site.TotalWait, site.MaxWait)
	}
	// The last waiter spun for its whole wait: busy >= its wait.
	if b := e.CPUs[3].Busy(); b < site.MaxWait {
		t.Errorf("spinning CPU busy %d < its wait %d", b, site.MaxWait)
	}
	if st := e.LockStats(); len(st) != 1 || st[0].AvgWait() != site.TotalWait/3 {
		t.Errorf("LockStats = %+v", st)
	}
}

// Cache-line transfers cost by distance; a line the CPU owns is cheap.
func TestCacheLineCosts(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 2, CoresPerSocket: 2, ThreadsPerCore: 2})
	costs := e.Costs
	var line CacheLine
	var got [4]Time
	seq := []int{0, 0, 4, 1, 2} // write by 0, again by 0, SMT sibling, same socket, other socket
	e.CPUs[0].Start(0, func(c *CPU) {
		line.Write(c)
		t0 := c.Now()
		line.Write(c)
		got[0] = c.Now() - t0
	})
	for i, cpu := range seq[2:] {
		idx, id := i+1, cpu
		e.CPUs[id].Start(Time(1000*(idx+1)), func(c *CPU) {
			t0 := c.Now()
			line.Write(c)
			got[idx] = c.Now() - t0
		})
	}
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	want := [4]Time{Time(costs.LineHit), Time(costs.LineSMT), Time(costs.LineSocket), Time(costs.LineRemote)}
	if got != want {
		t.Errorf("write costs %v, want %v (hit, smt, socket, remote)", got, want)
	}
}

// A structure's lines written in one pass move lines_overlapped at a
// time for one transfer; WriteMany moves them one by one; lines the CPU
// holds already are a hit however many.
func TestWriteGroupOverlapsPairs(t *testing.T) {
	cases := []struct {
		overlapped, n int64
		transfers     int64
	}{
		{2, 1, 1}, {2, 2, 1}, {2, 3, 2}, {2, 5, 3},
		{1, 2, 2}, {1, 3, 3},
		{4, 3, 1}, {4, 5, 2},
		{0, 2, 2}, // 0 reads as 1: no line is free
	}
	for _, tc := range cases {
		e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1})
		e.Costs.LinesOverlapped = tc.overlapped
		var group, many CacheLine
		var moved, again, serial Time
		e.CPUs[0].Start(0, func(c *CPU) {
			group.Write(c)
			many.Write(c)
		})
		e.CPUs[1].Start(1000, func(c *CPU) {
			t0 := c.Now()
			group.WriteGroup(c, tc.n)
			moved = c.Now() - t0
			t0 = c.Now()
			group.WriteGroup(c, tc.n)
			again = c.Now() - t0
			t0 = c.Now()
			many.WriteMany(c, tc.n)
			serial = c.Now() - t0
		})
		if err := e.Run(Millisecond); err != nil {
			t.Fatal(err)
		}
		if want := Time(tc.transfers * e.Costs.LineSocket); moved != want {
			t.Errorf("overlapped %d, %d lines moved: %v, want %v (%d transfers)", tc.overlapped, tc.n, moved, want, tc.transfers)
		}
		if again != Time(e.Costs.LineHit) {
			t.Errorf("overlapped %d, %d lines held: %v, want a hit", tc.overlapped, tc.n, again)
		}
		if want := Time(tc.n * e.Costs.LineSocket); serial != want {
			t.Errorf("WriteMany of %d lines: %v, want %v", tc.n, serial, want)
		}
	}
}

// A writer that finds a group's transfers in flight waits for all of
// them, once, then pays its own: the wait is not multiplied by its own
// group's size, and the next writer queues behind every line it moves.
func TestWriteGroupQueuesBehindWholeGroup(t *testing.T) {
	for _, tc := range []struct{ first, second, want1, want2 int64 }{
		{3, 2, 2, 3}, // 2 transfers, then 1 behind them
		{2, 3, 1, 3}, // 1, then 2 behind it
	} {
		e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 3, ThreadsPerCore: 1})
		var line CacheLine
		var got1, got2 Time
		e.CPUs[0].Start(0, func(c *CPU) { line.Write(c) })
		e.CPUs[1].Start(1000, func(c *CPU) {
			t0 := c.Now()
			line.WriteGroup(c, tc.first)
			got1 = c.Now() - t0
		})
		e.CPUs[2].Start(1000, func(c *CPU) {
			t0 := c.Now()
			line.WriteGroup(c, tc.second)
			got2 = c.Now() - t0
		})
		if err := e.Run(Millisecond); err != nil {
			t.Fatal(err)
		}
		l := Time(e.Costs.LineSocket)
		if got1 != Time(tc.want1)*l || got2 != Time(tc.want2)*l {
			t.Errorf("%d lines then %d at once: %v and %v, want %v and %v", tc.first, tc.second, got1, got2, Time(tc.want1)*l, Time(tc.want2)*l)
		}
	}
}

// Atomics on one line serialise: N CPUs hitting it at once take N
// transfers in total.
func TestAtomicsSerialise(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 8, ThreadsPerCore: 1})
	var line CacheLine
	var last Time
	for i := 0; i < 8; i++ {
		e.CPUs[i].Start(0, func(c *CPU) {
			line.Atomic(c)
			if c.Now() > last {
				last = c.Now()
			}
		})
	}
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	min := Time(7 * (e.Costs.LineSocket + e.Costs.AtomicOp))
	if last < min {
		t.Errorf("8 simultaneous atomics done by %d ns, want >= %d (serialised)", last, min)
	}
}

// A CPU whose clock ran ahead between sync points (freeing a long
// to_free list, each free an atomic on its socket's line) books the
// line in its future; a CPU that reaches the line earlier in time pays
// its own transfer, not a wait for that future one. Without this, the
// bookings ran ahead of the engine and dragged CPUs' clocks with them
// (CPUs "busy" many times the window).
func TestCacheLineFutureBookingDoesNotBlockEarlier(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 4, ThreadsPerCore: 1})
	var line CacheLine
	var cost, readCost Time
	e.CPUs[0].Start(0, func(c *CPU) {
		c.Spend(int64(50 * Microsecond)) // no sync point: the clock runs ahead
		line.AtomicNoSync(c)
	})
	e.CPUs[1].Start(Microsecond, func(c *CPU) {
		t0 := c.Now()
		line.Atomic(c)
		cost = c.Now() - t0
	})
	e.CPUs[2].Start(2*Microsecond, func(c *CPU) {
		t0 := c.Now()
		line.Read(c)
		readCost = c.Now() - t0
	})
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	if want := Time(e.Costs.LineSocket + e.Costs.AtomicOp); cost != want {
		t.Errorf("atomic at 1us behind a transfer booked at 50us took %v, want %v", cost, want)
	}
	if want := Time(e.Costs.LineSocket); readCost != want {
		t.Errorf("read at 2us took %v, want %v", readCost, want)
	}
}

// Softirqs raised with BH disabled run at local_bh_enable; an interrupt
// wakes an idle CPU and its softirq runs on irq exit.
func TestSoftirqAndIRQ(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1})
	var ranAt, irqSoftAt Time = -1, -1
	var duringBH bool
	e.CPUs[0].SetSoftirqHandler(NetTxSoftirq, func(c *CPU) {
		ranAt = c.Now()
		duringBH = c.bh > 0 && c.softirq == 0
	})
	e.CPUs[0].Start(0, func(c *CPU) {
		c.LocalBhDisable()
		c.RaiseSoftirq(NetTxSoftirq)
		c.Spend(500)
		c.Sync()
		if ranAt >= 0 {
			t.Error("softirq ran while BH was disabled")
		}
		c.LocalBhEnable()
	})
	e.CPUs[1].SetSoftirqHandler(NetRxSoftirq, func(c *CPU) { irqSoftAt = c.Now() })
	e.RaiseIRQ(e.CPUs[1], 10*Microsecond, func(c *CPU) { c.RaiseSoftirq(NetRxSoftirq) })
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	if ranAt < 500 || duringBH {
		t.Errorf("softirq ran at %d (duringBH %v), want at local_bh_enable after 500", ranAt, duringBH)
	}
	if irqSoftAt < 10*Microsecond {
		t.Errorf("idle CPU's softirq ran at %d, want after the IRQ at 10us", irqSoftAt)
	}
}

func TestRandStreamsReproducible(t *testing.T) {
	a, b := NewStreams(42), NewStreams(42)
	if a.Stream("x").Uint64() != b.Stream("x").Uint64() {
		t.Error("same seed and name gave different streams")
	}
	if NewStreams(42).Stream("x").Uint64() == NewStreams(42).Stream("y").Uint64() {
		t.Error("different names gave the same stream")
	}
	if NewStreams(1).Stream("x").Uint64() == NewStreams(2).Stream("x").Uint64() {
		t.Error("different seeds gave the same stream")
	}
}

func TestCostsSet(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        string // error substring; "" accepted
	}{
		{"line_remote", "250", ""},
		{"line_remote", "0", ""},
		{"line_remote", "1000000000", ""},
		{"line_remote", "1000000001", "out of range: must be >= 0 and <= 1000000000"},
		{"line_remote", "-5", "out of range"},
		{"line_remote", "abc", "not a whole number"},
		{"line_remote", "99999999999999999999", "not a whole number"},
		{"smt_share_pct", "400", ""},
		{"smt_share_pct", "401", "<= 400"},
		{"skb_lines", "65", "<= 64"},
		{"nope", "1", `unknown cost "nope"`},
	} {
		c := DefaultCosts()
		err := c.Set(tc.name, tc.value)
		if tc.want == "" {
			if err != nil {
				t.Errorf("Set(%s, %s): %v", tc.name, tc.value, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Set(%s, %s) = %v, want %q", tc.name, tc.value, err, tc.want)
		}
	}
	c := DefaultCosts()
	if err := c.Set("line_remote", "250"); err != nil || c.LineRemote != 250 {
		t.Fatalf("Set line_remote: %v, %d", err, c.LineRemote)
	}
	for _, ci := range c.List() {
		if ci.Value < 0 || ci.Value > ci.Max {
			t.Errorf("default cost %s = %d is outside 0..%d", ci.Name, ci.Value, ci.Max)
		}
	}
}

// TestInterrupt: Interrupt, from another goroutine after Run has
// started, stops Run with its error before the horizon, even while the
// only busy CPU runs alone in Sync's fast path and never parks
// (pollInterrupt; without it Run ran on to the horizon and returned nil).
func TestInterrupt(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1})
	started := make(chan struct{})
	e.CPUs[0].Start(0, func(c *CPU) {
		close(started)
		for {
			c.Spend(100)
			c.Sync()
		}
	})
	stop := errors.New("stop")
	done := make(chan error)
	const horizon = 10 * Second
	go func() { done <- e.Run(horizon) }()
	<-started
	e.Interrupt(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("Run = %v, want the interrupt's error", err)
	}
	if e.Now() >= horizon {
		t.Errorf("ran to %v despite the interrupt", e.Now())
	}
}

// TestTimeString: sim.Time prints as tc's sprint_time64 ("%.3g" and the
// unit): what `tc -s qdisc show` prints for these values.
func TestTimeString(t *testing.T) {
	for _, tc := range []struct {
		t    Time
		want string
	}{
		{0, "0ns"},
		{1, "1ns"},
		{999, "999ns"},
		{1000, "1us"},
		{1500, "1.5us"},
		{100 * Microsecond, "100us"},
		{999999, "1e+03us"},
		{5 * Millisecond, "5ms"},
		{1234567, "1.23ms"},
		{Second, "1s"},
		{1500 * Millisecond, "1.5s"},
		{1000 * Second, "1e+03s"},
		{-5 * Millisecond, "-5000000ns"},
	} {
		if got := tc.t.String(); got != tc.want {
			t.Errorf("Time(%d).String() = %q, want %q", int64(tc.t), got, tc.want)
		}
		if got := fmt.Sprintf("%d", tc.t); got != strconv.FormatInt(int64(tc.t), 10) {
			t.Errorf("%%d of Time(%d) = %q: the integer must stay", int64(tc.t), got)
		}
	}
	b, err := json.Marshal(struct{ T Time }{1500 * Millisecond})
	if err != nil || string(b) != `{"T":1500000000}` {
		t.Errorf("JSON of a Time: %s %v, want the integer of ns", b, err)
	}
}

// The event heap pops in (at, seq) order whatever the pushes, with
// pops interleaved.
func TestEventHeapOrder(t *testing.T) {
	r := NewStreams(7).Stream("heap")
	var h eventHeap
	var seq uint64
	var last event
	popped := 0
	for round := 0; round < 20000; round++ {
		if len(h) == 0 || r.Int64N(3) > 0 {
			seq++
			h.push(event{at: last.at + Time(r.Int64N(50)), key: seq<<slotBits | uint64(r.Int64N(slotMask+1))})
			continue
		}
		ev := h.pop()
		if popped > 0 && ev.before(&last) {
			t.Fatalf("pop %d: (%d, %d) after (%d, %d)", popped, ev.at, ev.key>>slotBits, last.at, last.key>>slotBits)
		}
		last = ev
		popped++
	}
	if popped < 1000 {
		t.Fatalf("only %d pops", popped)
	}
}

// The engine's two heaps (events before farFrom, far the rest) give
// the events in the order one heap does, with pushes near and far
// ahead of the clock interleaved with pops.
func TestEventQueueFarOrder(t *testing.T) {
	r := NewStreams(11).Stream("far")
	e := &Engine{}
	var ref eventHeap
	var now Time
	popped, edge := 0, 0
	for round := 0; round < 400000; round++ {
		// About 300 events pending: resumes within 2 us, a timer in
		// 20 up to 50 ms ahead, one in 5 at the split itself.
		if len(ref) < 300 && r.Int64N(4) > 0 {
			at := now + Time(r.Int64N(2000))
			switch k := r.Int64N(20); {
			case k == 0:
				at = now + Time(r.Int64N(int64(50*Millisecond)))
			case k < 5:
				at = max(now, e.farFrom-1+Time(r.Int64N(3)))
				if at == e.farFrom {
					edge++
				}
			}
			ev := event{at: at, key: e.nextKey(uint32(r.Int64N(1 << 10)))}
			e.push(ev)
			ref.push(ev)
			continue
		}
		if len(ref) == 0 {
			continue
		}
		if e.nextAt() != ref[0].at {
			t.Fatalf("pop %d: nextAt %d, want %d", popped, e.nextAt(), ref[0].at)
		}
		got, want := e.events.pop(), ref.pop()
		if got != want {
			t.Fatalf("pop %d: (%d, %d), want (%d, %d)", popped, got.at, got.key, want.at, want.key)
		}
		now = got.at
		popped++
	}
	if popped < 100000 || len(e.far) == 0 || edge < 1000 {
		t.Fatalf("%d pops, %d far events left, %d at the split: the test does not reach both heaps", popped, len(e.far), edge)
	}
}

// An interrupt to a CPU in its idle loop waits for the CPU to leave its
// C-state (wake_idle_latency); one to a CPU running a task is taken at
// its next sync point.
func TestIRQOnIdleCPULeavesCState(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1})
	e.CPUs[0].Start(0, func(c *CPU) {
		for c.Now() < 50*Microsecond {
			c.Spend(100)
			c.Sync()
		}
	})
	ran := map[int]Time{}
	for _, c := range e.CPUs {
		e.RaiseIRQ(c, 10*Microsecond, func(c *CPU) { ran[c.ID] = c.Now() })
	}
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	irq, lat := Time(e.Costs.HardIRQ), Time(e.Costs.WakeIdleLatency)
	if got := ran[0]; got < 10*Microsecond || got > 10*Microsecond+100+irq {
		t.Errorf("busy CPU took the interrupt at %v, want at its next sync point after 10us", got)
	}
	if got, want := ran[1], 10*Microsecond+lat+irq; got != want {
		t.Errorf("idle CPU took the interrupt at %v, want %v (C-state exit, then the hard irq)", got, want)
	}
}

// An interrupt delivered while a CPU runs with interrupts off
// (spin_lock_irqsave's section) waits for local_irq_restore and runs
// then, at an instruction boundary, not inside the section.
func TestLocalIrqSaveDefersInterrupts(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1})
	var ranAt Time
	inSection := false
	var ranInSection bool
	e.CPUs[0].Start(0, func(c *CPU) {
		c.LocalIrqSave()
		inSection = true
		for range 10 {
			c.Spend(100)
			c.Sync() // boundaries inside the section take no interrupt
		}
		inSection = false
		c.LocalIrqRestore()
		c.Spend(100)
		c.Sync()
	})
	e.RaiseIRQ(e.CPUs[0], 250, func(c *CPU) {
		ranAt = c.Now()
		ranInSection = inSection
	})
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	if ranAt == 0 || ranInSection {
		t.Fatalf("the interrupt ran at %d, inside the section: %v; want after the restore at 1000", ranAt, ranInSection)
	}
	if ranAt < 1000 {
		t.Errorf("the interrupt ran at %d, before the restore at 1000", ranAt)
	}
}

// A spin_unlock hands the lock to a spinning waiter one line transfer
// after the release, whether or not the waiter touched the lock word
// last (its cmpxchg on arrival): the release store takes the line back
// before the waiter can read it. Before, a lone waiter that had last
// touched the line saw the release for a cache hit.
func TestHandoffIsOneTransferFromTheHolder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		waiter int // CPU of the waiter (holder: CPU 0)
		want   func(c *Costs) Time
	}{
		{"same socket", 1, func(c *Costs) Time { return Time(c.LineSocket) }},
		{"other socket", 2, func(c *Costs) Time { return Time(c.LineRemote) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := testEngine(t, Topology{Sockets: 2, CoresPerSocket: 2, ThreadsPerCore: 1})
			var l SpinLock
			site := e.LockSite("test")
			var released, granted Time
			e.CPUs[0].Start(0, func(c *CPU) {
				l.Lock(c, site)
				c.Spend(5000)
				l.Unlock(c)
				released = c.Now()
			})
			e.CPUs[tc.waiter].Start(100, func(c *CPU) {
				l.Lock(c, site)
				granted = c.Now()
				l.Unlock(c)
			})
			if err := e.Run(Millisecond); err != nil {
				t.Fatal(err)
			}
			if got, want := granted-released, tc.want(e.Costs); got != want {
				t.Errorf("waiter granted %d ns after the release, want %d (one transfer from the holder)", got, want)
			}
		})
	}
}

// A lock word on its structure's line (ShareLine, struct Qdisc's q.lock
// beside q.qlen): a waiter's atomics on arrival take the line from the
// holder, whose next store to the structure takes it back; the waiter
// that is handed the lock then finds the structure's line with it.
func TestSharedLineLock(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 2, CoresPerSocket: 2, ThreadsPerCore: 1})
	var data CacheLine
	var l SpinLock
	l.ShareLine(&data)
	site := e.LockSite("test")
	var before, after, waiterStore Time
	e.CPUs[0].Start(0, func(c *CPU) {
		l.Lock(c, site)
		t0 := c.Now()
		data.WriteNoSync(c) // its own line: a hit
		before = c.Now() - t0
		c.Spend(5000) // CPU 2 arrives at 100 ns
		c.Sync()
		t0 = c.Now()
		data.WriteNoSync(c)
		after = c.Now() - t0
		l.Unlock(c)
	})
	e.CPUs[2].Start(100, func(c *CPU) {
		l.Lock(c, site)
		t0 := c.Now()
		data.WriteNoSync(c)
		waiterStore = c.Now() - t0
		l.Unlock(c)
	})
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	if want := Time(e.Costs.LineHit); before != want {
		t.Errorf("holder's store before any waiter took %d ns, want a hit (%d)", before, want)
	}
	if want := Time(e.Costs.LineRemote); after != want {
		t.Errorf("holder's store after a remote waiter's atomic took %d ns, want the transfer back (%d)", after, want)
	}
	if want := Time(e.Costs.LineHit); waiterStore != want {
		t.Errorf("new holder's store took %d ns, want a hit (%d): the handoff brought the line", waiterStore, want)
	}
	if l.Line() != &data {
		t.Error("Line() is not the shared line")
	}
}

// A store to a line and to a group of lines of the same allocation in
// one pass (struct Qdisc's write group and its private data) waits for
// the slower of the two, the group moving lines_overlapped at a time;
// a load issued with a store likewise.
func TestWriteWithGroupAndReadWithWrite(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 2, CoresPerSocket: 2, ThreadsPerCore: 1})
	var near, far, far4, own, r CacheLine
	var both, group4, readWrite Time
	e.CPUs[1].Start(0, func(c *CPU) { near.Write(c); r.Write(c) })
	e.CPUs[2].Start(0, func(c *CPU) { far.Write(c); far4.Write(c) })
	e.CPUs[0].Start(1000, func(c *CPU) {
		own.Write(c)
		t0 := c.Now()
		WriteWithGroup(c, &near, &far, 2)
		both = c.Now() - t0
		t0 = c.Now()
		WriteWithGroup(c, &own, &far4, 4) // own: a hit beside the group
		group4 = c.Now() - t0
		near.Write(c) // c owns near again; r is CPU 1's
	})
	e.CPUs[3].Start(2000, func(c *CPU) {
		t0 := c.Now()
		ReadWithWrite(c, &r, &near)
		readWrite = c.Now() - t0
	})
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	costs := e.Costs
	if want := Time(costs.LineRemote); both != want {
		t.Errorf("a line 110 ns away with a pair 300 ns away took %d ns, want the slower, %d", both, want)
	}
	if want := Time(2 * costs.LineRemote); group4 != want {
		t.Errorf("four lines of a group took %d ns, want two transfers, %d", group4, want)
	}
	// CPU 3 is on socket 1: r from CPU 1 and near from CPU 0, both remote
	if want := Time(costs.LineRemote); readWrite != want {
		t.Errorf("a load with a store took %d ns, want the slower alone, %d", readWrite, want)
	}
}

// Stores to lines of different structures issued together wait for the
// slowest transfer, not the sum; lines this CPU holds cost nothing more.
func TestWriteOverlapped(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 2, CoresPerSocket: 2, ThreadsPerCore: 1})
	var near, far, own CacheLine
	var took Time
	e.CPUs[1].Start(0, func(c *CPU) { near.Write(c) })
	e.CPUs[2].Start(0, func(c *CPU) { far.Write(c) })
	e.CPUs[0].Start(0, func(c *CPU) { own.Write(c) })
	e.CPUs[0].Start(1000, func(c *CPU) {
		t0 := c.Now()
		WriteOverlapped(c, &near, nil, &far, &own)
		took = c.Now() - t0
	})
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	if want := Time(e.Costs.LineRemote); took != want {
		t.Errorf("overlapped stores took %d ns, want the slowest transfer, %d", took, want)
	}
	if near.Owner() != 0 || far.Owner() != 0 || own.Owner() != 0 {
		t.Errorf("owners %d %d %d, want every line on CPU 0", near.Owner(), far.Owner(), own.Owner())
	}
}

// A KVM guest's paravirt qspinlock: an unlock is a locked cmpxchg, so a
// holder whose lock word a waiter spins on stalls for the line before
// its release, and the waiter still reads it from the holder; every
// contended locker queues (no pending bit), so perf lock records the
// first waiter too. Uncontended, an unlock costs the cmpxchg on a line
// the holder has.
func TestPvSpinlockUnlock(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pv, waiter  bool
		stall       func(c *Costs) Time // the holder's time in Unlock
		wantQueued  uint64
		wantGranted func(c *Costs) Time // the waiter's grant after the release
	}{
		{"native, contended", false, true, func(c *Costs) Time { return Time(c.SpinRelease) }, 0, func(c *Costs) Time { return Time(c.LineSocket) }},
		{"paravirt, contended", true, true, func(c *Costs) Time { return Time(c.SpinRelease + c.LineSocket + c.AtomicOp) }, 1, func(c *Costs) Time { return Time(c.LineSocket) }},
		{"paravirt, alone", true, false, func(c *Costs) Time { return Time(c.SpinRelease + c.LineHit + c.AtomicOp) }, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1})
			e.PvSpinlocks = tc.pv
			var l SpinLock
			site := e.LockSite("test")
			var stall, released, granted Time
			e.CPUs[0].Start(0, func(c *CPU) {
				l.Lock(c, site)
				c.Spend(5000)
				t0 := c.Now()
				l.Unlock(c)
				released = c.Now()
				stall = released - t0
			})
			if tc.waiter {
				e.CPUs[1].Start(100, func(c *CPU) {
					l.Lock(c, site)
					granted = c.Now()
					l.Unlock(c)
				})
			}
			if err := e.Run(Millisecond); err != nil {
				t.Fatal(err)
			}
			if want := tc.stall(e.Costs); stall != want {
				t.Errorf("unlock took the holder %d ns, want %d", stall, want)
			}
			if site.Queued != tc.wantQueued {
				t.Errorf("perf lock recorded %d waiters, want %d", site.Queued, tc.wantQueued)
			}
			if tc.wantGranted != nil {
				if got, want := granted-released, tc.wantGranted(e.Costs); got != want {
					t.Errorf("waiter granted %d ns after the release, want %d", got, want)
				}
			}
		})
	}
}

// A store to a line this CPU wrote last costs a hit only while nobody
// else holds a copy: once others have read it, the store's
// read-for-ownership invalidates them, as far as the farthest.
func TestWriteAfterOthersReadInvalidates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		readers []int
		want    func(c *Costs) Time
	}{
		{"nobody read it", nil, func(c *Costs) Time { return Time(c.LineHit) }},
		{"a reader on the socket", []int{1}, func(c *Costs) Time { return Time(c.LineSocket) }},
		{"readers on both sockets", []int{1, 2}, func(c *Costs) Time { return Time(c.LineRemote) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := testEngine(t, Topology{Sockets: 2, CoresPerSocket: 2, ThreadsPerCore: 1})
			var line CacheLine
			var took Time
			e.CPUs[0].Start(0, func(c *CPU) {
				line.Write(c)
				c.Spend(5000)
				t0 := c.Now()
				line.Write(c)
				took = c.Now() - t0
			})
			for _, r := range tc.readers {
				e.CPUs[r].Start(1000, func(c *CPU) { line.Read(c) })
			}
			if err := e.Run(Millisecond); err != nil {
				t.Fatal(err)
			}
			if want := tc.want(e.Costs); took != want {
				t.Errorf("the owner's second store took %d ns, want %d", took, want)
			}
		})
	}
}

// A failed spin_trylock reads the lock word (queued_spin_trylock's
// atomic_read of a held lock): CPUs failing at once share the line and
// do not queue behind one another, and the holder keeps it.
func TestFailedTryLockIsARead(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 4, ThreadsPerCore: 1})
	var l SpinLock
	site := e.LockSite("test")
	var took [4]Time
	var got [4]bool
	e.CPUs[0].Start(0, func(c *CPU) {
		l.Lock(c, site)
		c.Spend(10000)
		l.Unlock(c)
	})
	for i := 1; i < 4; i++ {
		e.CPUs[i].Start(1000, func(c *CPU) {
			t0 := c.Now()
			got[i] = l.TryLock(c, site)
			took[i] = c.Now() - t0
		})
	}
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 4; i++ {
		if got[i] {
			t.Fatalf("cpu%d took a held lock", i)
		}
		if want := Time(e.Costs.LineSocket); took[i] != want {
			t.Errorf("cpu%d's failed trylock took %d ns, want one transfer (%d), not a queue behind the others", i, took[i], want)
		}
	}
	if l.line.Owner() != 0 {
		t.Errorf("the lock word's line went to cpu%d, want the holder's (0)", l.line.Owner())
	}
}
