package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// qdisc_run_begin on a qdisc another CPU runs: since "claim one cache
// line in Qdisc" (6.19) it is READ_ONCE(q->running), a load that leaves
// the owner's line shared; before (__test_and_set_bit on state2) it
// stored, pulling the line over. On an idle qdisc both store. Either
// way the running CPU's next store waits one transfer: for the line to
// come back, or for the reader's copy to be invalidated; what the load
// spares is the line's ownership, so that CPUs reading at once share
// it instead of queueing for it.
func TestRunBeginLoadsWhenRunning(t *testing.T) {
	for _, tc := range []struct {
		name        string
		reads       string
		running     bool
		wantOwner   int // the line's owner after the call
		wantBegun   bool
		wantCostFor func(*sim.Costs) int64
		// the running CPU's next store (qdisc_run_end, or the
		// dequeue's bstats): it invalidates the reader's copy, or pulls
		// the line back
		wantBack func(*sim.Costs) int64
	}{
		{"6.19 running: a load", "on", true, 1, false, socket, socket},
		{"6.18 running: a store", "off", true, 0, false, socket, socket},
		{"6.19 idle: one fetch for ownership", "on", false, 0, true, socket, socket},
		{"6.18 idle: a store", "off", false, 0, true, socket, socket},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, profile(t, "6.19-rc1", "run_begin_reads", tc.reads), 2, "test", 1, "pfifo")
			q := h.dev.Root
			var took, back sim.Time
			var begun bool
			var ownerAfter int
			h.on(1, 0, func(c *sim.CPU) {
				q.lineWrite.Write(c) // the running CPU wrote the flag
				q.running = tc.running
				c.SleepUntil(20 * sim.Microsecond)
				ownerAfter = q.lineWrite.Owner()
				t0 := c.Now()
				q.lineWrite.Write(c)
				back = c.Now() - t0
			})
			h.on(0, 10*sim.Microsecond, func(c *sim.CPU) {
				t0 := c.Now()
				begun = h.n.qdiscRunBegin(c, q)
				took = c.Now() - t0
				if begun {
					q.running = false
				}
			})
			h.run(sim.Millisecond)
			if want := sim.Time(tc.wantBack(h.e.Costs)); back != want {
				t.Errorf("the running CPU's next store took %v, want %v", back, want)
			}
			if begun != tc.wantBegun {
				t.Errorf("qdisc_run_begin = %v, want %v", begun, tc.wantBegun)
			}
			if o := ownerAfter; o != tc.wantOwner {
				t.Errorf("line owner cpu%d, want cpu%d", o, tc.wantOwner)
			}
			if want := sim.Time(tc.wantCostFor(h.e.Costs)); took != want {
				t.Errorf("took %v, want %v", took, want)
			}
		})
	}
}

func socket(c *sim.Costs) int64 { return c.LineSocket }
