package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// A qdisc whose enqueue only reads its private data
// (qdisc.EnqueueReadsPrivate, htb_enqueue) pulls one line from the CPU
// that dequeued last, as a read, while its tree holds packets; into an
// empty tree (htb_activate writes the rows) it writes them as any other
// qdisc does. The dequeuer then keeps its lines, and its next store only
// invalidates the reader's copy: one transfer's wait for all of them,
// where lines written elsewhere come back one by one.
func TestEnqueueReadsPrivate(t *testing.T) {
	costs := sim.DefaultCosts()
	// Four private lines, so that a write (lines_overlapped at a time:
	// writePrivate) costs more than the one line a reader pulls.
	costs.QdiscDataLines = 4
	group := (costs.QdiscDataLines + costs.LinesOverlapped - 1) / costs.LinesOverlapped * costs.LineSocket
	if group == costs.LineSocket {
		t.Fatalf("writing %d lines costs one transfer: the cases cannot tell a read from a write", costs.QdiscDataLines)
	}
	cases := []struct {
		name    string
		flag    bool
		backlog int   // skbs the tree holds when CPU 1 enqueues
		wantEnq int64 // CPU 1's price of the private lines
		wantDeq int64 // CPU 0's next dequeue's price of them
	}{
		{"writes, backlogged", false, 2, group, group},
		{"reads, backlogged", true, 2, costs.LineSocket, costs.LineSocket},
		{"reads, empty tree: activates", true, 0, group, group},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, profile(t, "4.8"), 2, "test", 1, "pfifo")
			*h.e.Costs = *costs
			q := h.dev.Queues[0].qdisc
			if tc.flag {
				q.Flags |= qdisc.EnqueueReadsPrivate
			}
			var toFree skb.List
			enqueue := func(c *sim.CPU, i int) {
				s := h.skb(c, i)
				h.n.unoffered--
				h.n.Offered++
				h.n.qdiscEnqueue(c, q, []*skb.SKB{s}, &toFree)
			}
			var enq, deq int64
			h.on(0, 0, func(c *sim.CPU) {
				for i := 0; i < tc.backlog+1; i++ {
					enqueue(c, i)
				}
				for _, s := range h.n.qdiscDequeue(c, q, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}) {
					h.n.kfreeSkb(c, s, skb.DropQdiscDrop)
				}
				c.SleepUntil(20 * sim.Microsecond)
				t0 := c.Now()
				h.n.writePrivate(c, q) // the next dequeue's private lines
				deq = int64(c.Now() - t0)
			})
			h.on(1, 10*sim.Microsecond, func(c *sim.CPU) {
				t0 := c.Now()
				h.n.enqueueLines(c, q)
				enq = int64(c.Now() - t0)
				enqueue(c, 100)
			})
			h.run(sim.Millisecond)
			if enq != tc.wantEnq {
				t.Errorf("enqueue's private lines cost %d ns, want %d", enq, tc.wantEnq)
			}
			if deq != tc.wantDeq {
				t.Errorf("dequeuer's next write cost %d ns, want %d", deq, tc.wantDeq)
			}
		})
	}
}

// A qdisc's per-flow lines (Ctx.Lines) are priced per flow: written again
// by the same CPU they are hot; written by another CPU they move,
// lines_overlapped at a time; another flow's lines are apart.
func TestFlowLinesMove(t *testing.T) {
	costs := sim.DefaultCosts()
	h := newHarness(t, profile(t, "6.19-rc1"), 2, "test", 1, "pfifo")
	q := h.dev.Queues[0].qdisc
	cost := func(c *sim.CPU, key uint64, n int) int64 {
		t0 := c.Now()
		q.bind(c, nil).Lines(key, n)
		return int64(c.Now() - t0)
	}
	var again, other, moved, fresh int64
	h.on(0, 0, func(c *sim.CPU) {
		cost(c, 7, 2)
		again = cost(c, 7, 2)
	})
	h.on(1, 10*sim.Microsecond, func(c *sim.CPU) {
		moved = cost(c, 7, 2)
		other = cost(c, 8, 3)
		fresh = cost(c, 8, 3)
	})
	h.run(sim.Millisecond)
	// flow 7's two lines are a pair (lines_overlapped): one transfer
	if again != costs.LineHit || moved != costs.LineSocket || fresh != costs.LineHit {
		t.Errorf("flow 7 again on CPU 0: %d ns, moved to CPU 1: %d ns; flow 8 again: %d; want %d, %d, %d",
			again, moved, fresh, costs.LineHit, costs.LineSocket, costs.LineHit)
	}
	if other == costs.LineHit {
		t.Errorf("flow 8's first lines on CPU 1 cost %d ns: priced as flow 7's", other)
	}
	if len(q.flowLines) != 2 {
		t.Errorf("%d flows' lines kept, want 2", len(q.flowLines))
	}
}

// q.lock sits in struct Qdisc's write group, beside q.qlen: a CPU that
// arrives at the root lock while an enqueuer holds it takes that line
// with its atomics, and the holder's next enqueue (sch->q.qlen++) pays
// the transfer back; without a waiter the line stays the holder's.
func TestRootLockSharesTheWriteGroup(t *testing.T) {
	h := newHarness(t, profile(t, "6.18"), 2, "test", 1, "pfifo")
	q := h.dev.Queues[0].qdisc
	if q.lock.Line() != &q.lineWrite {
		t.Fatal("the root lock's word is not on the write group's line")
	}
	var toFree skb.List
	enqueue := func(c *sim.CPU, i int) sim.Time {
		s := h.skb(c, i)
		h.n.unoffered--
		h.n.Offered++
		t0 := c.Now()
		h.n.qdiscEnqueue(c, q, []*skb.SKB{s}, &toFree)
		return c.Now() - t0
	}
	var alone, stolen sim.Time
	h.on(0, 0, func(c *sim.CPU) {
		q.lock.Lock(c, h.n.site.rootEnq)
		enqueue(c, 0)
		alone = enqueue(c, 1)
		c.Spend(int64(2 * sim.Microsecond)) // CPU 1 arrives meanwhile
		stolen = enqueue(c, 2)
		q.lock.Unlock(c)
	})
	h.on(1, sim.Microsecond, func(c *sim.CPU) {
		q.lock.Lock(c, h.n.site.rootEnq)
		q.lock.Unlock(c)
	})
	h.run(sim.Millisecond)
	want := sim.Time(h.n.E.Costs.Line(h.n.E.Distance(1, 0)) - h.n.E.Costs.LineHit)
	if got := stolen - alone; got != want {
		t.Errorf("the enqueue after a waiter's arrival took %d ns more than one before, want %d (the write group's line back)", got, want)
	}
}

// txq->state shares _xmit_lock's line: a TX completion with room in
// BQL does test_and_clear_bit on it (netdev_tx_completed_queue), a
// locked op that takes the line from the CPU that transmitted last, so
// that CPU's next HARD_TX_LOCK pays the transfer back; without a
// completion in between it is a hit.
func TestCompletionTakesXmitLockLine(t *testing.T) {
	h := newHarness(t, profile(t, "6.18"), 2, "test", 1, "pfifo")
	txq := h.dev.Queues[0]
	lock := func(c *sim.CPU) sim.Time {
		t0 := c.Now()
		h.n.hardTxLock(c, h.dev, txq)
		took := c.Now() - t0
		h.n.hardTxUnlock(c, h.dev, txq)
		return took
	}
	var again, afterCompletion sim.Time
	h.on(0, 0, func(c *sim.CPU) {
		h.dev.ctxFor(c).SentQueue(0, 1000) // BQL has room: no stop
		lock(c)
		again = lock(c)
		c.SleepUntil(20 * sim.Microsecond)
		afterCompletion = lock(c)
	})
	h.on(1, 10*sim.Microsecond, func(c *sim.CPU) {
		h.dev.ctxFor(c).CompletedQueue(0, 1, 1000)
	})
	h.run(sim.Millisecond)
	costs := h.n.E.Costs
	if got, want := afterCompletion-again, sim.Time(costs.Line(h.n.E.Distance(1, 0))-costs.LineHit); got != want {
		t.Errorf("HARD_TX_LOCK after a completion took %d ns more than before it, want %d (_xmit_lock's line back)", got, want)
	}
}
