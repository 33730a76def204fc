package sim

import (
	"iter"
	"testing"

	"github.com/txlab/txlab/framework/internal/cputime"
)

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

// syncRing runs a pinned task on every CPU that spends a pseudo-random
// few hundred ns and then Syncs, for ever: nearly every Sync parks
// behind another CPU's resume, the event mix of a busy host. It reports
// wall and CPU ns per engine event (a park, the heap, two coroutine
// switches); CPU ns move less on a shared machine.
func syncRing(b *testing.B, topo Topology) {
	e, err := NewEngine(topo, DefaultCosts(), 1)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for i := range e.CPUs {
		r := e.Rand(string(rune('a' + i%26)))
		e.CPUs[i].Start(0, func(c *CPU) {
			for {
				c.Spend(200 + r.Int64N(400))
				c.Sync()
			}
		})
	}
	b.ResetTimer()
	cpu0 := cputime.Process()
	var end Time
	for e.Events() < uint64(b.N) {
		end += 100 * Microsecond
		if err := e.Run(end); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := cputime.Process() - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(e.Events()), "ns/event")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(e.Events()), "cpu-ns/event")
}

// BenchmarkSyncRing8 is syncRing on 8 CPUs (the small host).
func BenchmarkSyncRing8(b *testing.B) {
	syncRing(b, Topology{Sockets: 1, CoresPerSocket: 8, ThreadsPerCore: 1})
}

// BenchmarkSyncRing480 is syncRing on E1's 480 CPUs.
func BenchmarkSyncRing480(b *testing.B) {
	syncRing(b, Topology{Sockets: 2, CoresPerSocket: 120, ThreadsPerCore: 2})
}

// heapSteady keeps n events in the heap and replaces the earliest with
// one a little later, as a host's CPUs do: one pop and one push per op.
func heapSteady(b *testing.B, n int) {
	r := NewStreams(1).Stream("heap")
	var h eventHeap
	var seq uint64
	for i := 0; i < n; i++ {
		seq++
		h.push(event{at: Time(r.Int64N(1000)), key: seq << slotBits})
	}
	b.ResetTimer()
	cpu0 := cputime.Process()
	for i := 0; i < b.N; i++ {
		ev := h.pop()
		seq++
		h.push(event{at: ev.at + Time(r.Int64N(1000)), key: seq << slotBits})
	}
	b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkHeap8: the event heap of the small host (8 pending events).
func BenchmarkHeap8(b *testing.B) { heapSteady(b, 8) }

// BenchmarkHeap480: the event heap of E1's host (a resume per CPU).
func BenchmarkHeap480(b *testing.B) { heapSteady(b, 480) }

// BenchmarkCoroutineRoundTrip is the floor under every engine event
// that resumes a CPU: one switch into an iter.Pull coroutine and one
// back, with nothing else done.
func BenchmarkCoroutineRoundTrip(b *testing.B) {
	next, stop := iter.Pull(func(yield func(struct{}) bool) {
		for yield(struct{}{}) {
		}
	})
	defer stop()
	b.ResetTimer()
	cpu0 := cputime.Process()
	for i := 0; i < b.N; i++ {
		next()
	}
	b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
