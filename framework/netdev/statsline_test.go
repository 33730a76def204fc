package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// qdisc_stats_line (the struct Qdisc layout before 4d202a0d1): an
// enqueue after another CPU's enqueue, and a dequeue after another CPU's
// enqueue, each pull one line more, qstats' own; the same CPU again
// finds it hot. 4.7 has it, 4.8 and later do not.
func TestQdiscStatsLine(t *testing.T) {
	costs := sim.DefaultCosts()
	type spent struct{ enq, deq, again int64 }
	measure := func(on string) spent {
		h := newHarness(t, profile(t, "4.8", "qdisc_stats_line", on), 2, "test", 1, "pfifo")
		q := h.dev.Queues[0].qdisc
		var got spent
		var toFree skb.List
		enqueue := func(c *sim.CPU, i int) int64 {
			s := h.skb(c, i)
			h.n.unoffered--
			h.n.Offered++
			q.lock.Lock(c, h.n.site.rootEnq)
			t0 := c.Now()
			h.n.qdiscEnqueue(c, q, []*skb.SKB{s}, &toFree)
			d := int64(c.Now() - t0)
			q.lock.Unlock(c)
			return d
		}
		dequeue := func(c *sim.CPU) int64 {
			q.lock.Lock(c, h.n.site.rootRun)
			t0 := c.Now()
			got := h.n.qdiscDequeue(c, q, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40})
			d := int64(c.Now() - t0)
			q.lock.Unlock(c)
			for _, s := range got {
				h.n.kfreeSkb(c, s, skb.DropQdiscDrop)
			}
			return d
		}
		h.on(0, 0, func(c *sim.CPU) {
			enqueue(c, 0)
			enqueue(c, 1)
			c.SleepUntil(20 * sim.Microsecond)
			got.deq = dequeue(c)
			got.again = dequeue(c)
		})
		h.on(1, 10*sim.Microsecond, func(c *sim.CPU) { got.enq = enqueue(c, 2) })
		h.run(sim.Millisecond)
		return got
	}
	off, on := measure("off"), measure("on")
	if d := on.enq - off.enq; d != costs.LineSocket {
		t.Errorf("enqueue after another CPU's: %d ns more with qstats on their own line, want one line transfer %d", d, costs.LineSocket)
	}
	if d := on.deq - off.deq; d != costs.LineSocket {
		t.Errorf("dequeue after another CPU's enqueue: %d ns more, want %d", d, costs.LineSocket)
	}
	if d := on.again - off.again; d != costs.LineHit {
		t.Errorf("a second dequeue on the same CPU: %d ns more, want a hit (%d)", d, costs.LineHit)
	}
}
