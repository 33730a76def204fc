package sim

import "testing"

// pingPong runs two tasks that wake each other b.N times each, as perf
// bench sched pipe does, and reports wall ns per wake-up (a block, a
// try_to_wake_up, and the switches on both sides).
func pingPong(b *testing.B, topo Topology, pin bool) {
	e, err := NewEngine(topo, DefaultCosts(), 1)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	var wq [2]WaitQueue
	var turn int
	n := b.N
	for i := 0; i < 2; i++ {
		me := i
		var cpus []int
		if pin {
			cpus = []int{i}
		}
		e.NewTask("pp", cpus, func(t *Task) {
			for k := 0; k < n; k++ {
				for turn != me {
					wq[me].Add(t)
					if turn == me {
						break
					}
					t.Block()
				}
				wq[me].Remove(t)
				c := t.CPU()
				c.Spend(500)
				c.Sync()
				turn = 1 - me
				wq[1-me].WakeUp(c, true)
			}
		}).Start(0)
	}
	b.ResetTimer()
	if err := e.Run(Time(1) << 60); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	var wakes uint64
	for _, t := range e.Tasks() {
		wakes += t.Wakeups
	}
	if wakes < uint64(n) {
		b.Fatalf("%d wake-ups for %d round trips", wakes, n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(wakes), "ns/wakeup")
}

// BenchmarkWakeUpPinned: two pinned tasks on two CPUs.
func BenchmarkWakeUpPinned(b *testing.B) {
	pingPong(b, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1}, true)
}

// BenchmarkWakeUpUnpinned480: two unpinned tasks on the E1 host, each
// wake-up through wake_affine and select_idle_sibling over a 240-CPU LLC.
func BenchmarkWakeUpUnpinned480(b *testing.B) {
	pingPong(b, Topology{Sockets: 2, CoresPerSocket: 120, ThreadsPerCore: 2}, false)
}
