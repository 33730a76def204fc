package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// pfifo_fast (NOLOCK) clears __QDISC_STATE_MISSED and DRAINING when a
// dequeue finds it empty (pfifo_fast_dequeue's retry): a qdisc_run that
// quota cut short, or that lost a race and found MISSED set, leaves a
// few net_tx_action rounds behind, not a NET_TX softirq that runs
// forever on an empty qdisc; and an empty qdisc is bypassed again.
func TestNolockEmptyClearsMissed(t *testing.T) {
	for _, c := range []struct {
		name  string
		state uint32
		pkts  int
	}{{"MISSED, empty", stateMissed, 0}, {"MISSED and DRAINING, quota", stateMissed | stateDraining, 100}} {
		h := newHarness(t, profile(t, "6.18"), 2, "ice", 1, "pfifo_fast")
		q := h.dev.Root
		h.on(0, 0, func(cpu *sim.CPU) {
			cpu.LocalBhDisable()
			x := h.n.getScratch(cpu)
			for i := 0; i < c.pkts; i++ {
				s := h.skb(cpu, i)
				h.n.unoffered--
				h.n.Offered++
				h.n.nolockEnqueue(cpu, q, x, s)
			}
			h.n.kfreeSkbList(cpu, &x.toFree)
			h.n.putScratch(cpu, x)
			q.state |= c.state
			h.n.qdiscRun(cpu, q)
			cpu.LocalBhEnable()
		})
		h.run(2 * sim.Millisecond)
		t.Logf("%s: state %b empty %d qdiscs %d", c.name, q.state, h.n.TxAction.Empty, h.n.TxAction.Qdiscs)
		if q.state&(stateMissed|stateDraining) != 0 {
			t.Errorf("%s: state %b at the end: MISSED or DRAINING never cleared", c.name, q.state)
		}
		if h.n.TxAction.Empty > 4 {
			t.Errorf("%s: net_tx_action found the qdisc empty %d times in 2 ms: rescheduled without end", c.name, h.n.TxAction.Empty)
		}
		if q.Qlen() != 0 {
			t.Errorf("%s: %d packets left queued", c.name, q.Qlen())
		}
	}
}
