package sim

import (
	"math"
	"testing"
)

// util_avg follows PELT's series: halves in 32 periods asleep, climbs to
// half of full in 32 periods running from 0, and a partial period sits
// between its neighbours.
func TestPELTSeries(t *testing.T) {
	full := int64(peltFull >> peltShift)
	for _, tc := range []struct {
		name    string
		start   uint64
		running bool
		d       Time
		lo, hi  int64
	}{
		{"asleep 32 periods halves", peltFull, false, 32 * peltPeriod, 511, 512},
		{"asleep 64 periods quarters", peltFull, false, 64 * peltPeriod, 255, 256},
		{"running 32 periods from 0", 0, true, 32 * peltPeriod, 511, 513},
		{"running 1 period from 0 (1 - y)", 0, true, peltPeriod, 21, 22},
		{"half a period between 0 and 1-y", 0, true, peltPeriod / 2, 10, 11},
		{"asleep for ever", peltFull, false, 100 * Second, 0, 0},
		{"running for ever", 0, true, 100 * Second, full - 1, full},
		{"no time", 300 << peltShift, true, 0, 300, 300},
	} {
		p := pelt{util: tc.start}
		p.update(tc.d, tc.running)
		if got := int64(p.util >> peltShift); got < tc.lo || got > tc.hi {
			t.Errorf("%s: util %d, want %d..%d", tc.name, got, tc.lo, tc.hi)
		}
	}
	// Accrued in steps or at once, the same (within rounding).
	a, b := pelt{}, pelt{}
	for i := Time(1); i <= 40; i++ {
		a.update(i*37*Microsecond, true)
	}
	b.update(40*37*Microsecond, true)
	if d := int64(a.util>>peltShift) - int64(b.util>>peltShift); d < -1 || d > 1 {
		t.Errorf("stepwise %d vs at once %d", a.util>>peltShift, b.util>>peltShift)
	}
}

// A task's util grows while it runs and decays, on the CPU it slept on,
// while it sleeps; fork balancing then prefers a core nobody used to
// the core of a task asleep for a moment, where before it took the
// first wholly idle core.
func TestForkSkipsACoreWithBlockedLoad(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 3, ThreadsPerCore: 1})
	var wq WaitQueue
	sleeper := e.NewTask("sleeper", []int{0, 1, 2}, func(t *Task) {
		busyUntil(t, t.CPU().Now()+20*Millisecond)
		wq.Add(t)
		t.Block()
	})
	sleeper.Start(0)
	if sleeper.CPU().ID != 0 {
		t.Fatalf("sleeper on CPU %d, want 0", sleeper.CPU().ID)
	}
	late := e.NewTask("late", nil, func(t *Task) { t.Block() })
	late.Fork(21 * Millisecond)
	if err := e.Run(22 * Millisecond); err != nil {
		t.Fatal(err)
	}
	if sleeper.State() != TaskSleeping {
		t.Fatalf("sleeper %v, want asleep", sleeper.State())
	}
	u := sleeper.Util(e.Now())
	if u < 300 || u > 400 { // 20 ms running: 1024 * (1 - 2^(-20/32.768))
		t.Errorf("sleeper's util after 20 ms running, 1 ms asleep: %d, want ~350", u)
	}
	if c := late.CPU(); c == nil || c.ID != 1 {
		t.Errorf("late task forked onto %v, want CPU 1 (CPU 0 holds the sleeper's util)", c)
	}
}

// A fork to another socket goes to the CPU there that went idle last
// (sched_balance_find_dst_group_cpu's latest idle_stamp), not to one
// idle since before the run, though the latter's core is no busier.
func TestForkToAnotherSocketTakesTheLatestIdle(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 2, CoresPerSocket: 3, ThreadsPerCore: 1})
	runThenSleep := func(d Time) func(*Task) {
		return func(t *Task) {
			busyUntil(t, d)
			t.Block()
		}
	}
	e.NewTask("busy0", []int{0}, spinTask).Start(0)
	e.NewTask("busy1", []int{1}, spinTask).Start(0)
	e.NewTask("early", []int{4}, runThenSleep(Millisecond)).Start(0)
	e.NewTask("late", []int{5}, runThenSleep(2*Millisecond)).Start(0)
	forked := e.NewTask("forked", nil, spinTask)
	forked.Fork(3 * Millisecond)
	if err := e.Run(3*Millisecond + 10*Microsecond); err != nil {
		t.Fatal(err)
	}
	if c := forked.CPU(); c == nil || c.ID != 5 {
		t.Errorf("forked onto %v, want CPU 5 (idle since 2 ms; 4 since 1 ms, 3 since before the run)", c)
	}
}

// spinTask runs for ever, a microsecond at a time.
func spinTask(t *Task) { busyUntil(t, math.MaxInt64) }

// busyUntil keeps t's CPU busy, a microsecond at a time, until end.
func busyUntil(t *Task, end Time) {
	for t.CPU().Now() < end {
		t.CPU().Spend(1000)
		t.CPU().Sync()
	}
}
