package sim

import "testing"

// An expedited grace period started at 10us waits for every CPU that is
// not idle: CPU 0's task runs outside any BH-disabled section and
// reports at the IPI; CPU 1 is inside one until 50us and reports when it
// leaves it; CPU 2 is idle, gets no IPI, and stays in its C-state. The
// continuation runs at the last report.
func TestSynchronizeRCUExpedited(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 3, ThreadsPerCore: 1})
	busy := func(until Time, bh bool) func(c *CPU) {
		return func(c *CPU) {
			if bh {
				c.LocalBhDisable()
			}
			for c.Now() < until {
				c.Spend(100)
				c.Sync()
			}
			if bh {
				c.LocalBhEnable()
			}
		}
	}
	e.CPUs[0].Start(0, busy(100*Microsecond, false))
	e.CPUs[1].Start(0, busy(50*Microsecond, true))
	var doneAt, secondAt Time = -1, -1
	e.At(10*Microsecond, func() { e.SynchronizeRCUExpedited(func() { doneAt = e.Now() }) })
	// A call during that grace period waits for the next full one.
	e.At(20*Microsecond, func() { e.SynchronizeRCUExpedited(func() { secondAt = e.Now() }) })
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	if doneAt < 50*Microsecond || doneAt > 50*Microsecond+200 {
		t.Errorf("grace period ended at %v, want when CPU 1 left its BH-disabled section at 50us", doneAt)
	}
	if secondAt <= doneAt || secondAt > doneAt+5*Microsecond {
		t.Errorf("the call made during it ended at %v, want in the next grace period after %v", secondAt, doneAt)
	}
	if n := e.CPUs[2].stat.irqs; n != 0 {
		t.Errorf("the idle CPU took %d interrupts, want none (an extended quiescent state)", n)
	}
	if n := e.CPUs[0].stat.irqs; n != 2 {
		t.Errorf("CPU 0 took %d interrupts, want one IPI a grace period", n)
	}
	// With every CPU idle the grace period ends at once.
	e2 := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1})
	doneAt = -1
	e2.At(10*Microsecond, func() { e2.SynchronizeRCUExpedited(func() { doneAt = e2.Now() }) })
	if err := e2.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	if doneAt != 10*Microsecond {
		t.Errorf("with every CPU idle the grace period ended at %v, want 10us", doneAt)
	}
}
