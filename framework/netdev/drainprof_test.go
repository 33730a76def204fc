package netdev

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
)

// The profile splits a defer-list drain as __dev_xmit_skb does it: one
// root-lock take, one del_all+reverse and one enqueue for the batch,
// then qdisc_run's restarts, each a dequeue_skb and a driver call, and
// the empty dequeue_skb that ends __qdisc_run; the phases add up to no
// more than the time the drainer spent, and every packet the driver
// took is counted.
func TestDrainProfilePhases(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 4, "test", 1, "pfifo", "limit", "1000")
	q := h.dev.Root
	prof := &DrainProfile{}
	h.n.Prof = prof
	var spent sim.Time
	h.on(0, 0, func(c *sim.CPU) {
		h.fill(c, q, 2) // a backlog: no bypass, the batch is enqueued
		*prof = DrainProfile{}
		t0 := c.Now()
		if rc := h.n.DevQueueXmit(c, h.dev, h.skb(c, 0)); rc != qdisc.XmitSuccess {
			t.Errorf("xmit: %v", rc)
		}
		spent = c.Now() - t0
	})
	h.run(sim.Millisecond)
	if prof.Calls[PhEnqLock] != 1 || prof.Calls[PhReverse] != 1 || prof.Calls[PhEnqueue] != 1 {
		t.Errorf("drain phases called %d, %d, %d times; want once each", prof.Calls[PhEnqLock], prof.Calls[PhReverse], prof.Calls[PhEnqueue])
	}
	// BQL's limit starts at 0: the first packet stops the queue.
	if prof.Pkts != 1 || prof.Restarts != 1 || q.SentPkts != 1 {
		t.Errorf("profile counts %d packets in %d restarts, the qdisc sent %d; want 1, 1, 1", prof.Pkts, prof.Restarts, q.SentPkts)
	}
	if prof.Calls[PhDequeue] != prof.Restarts+1 || prof.Calls[PhDriver] != prof.Restarts {
		t.Errorf("%d dequeue_skb and %d driver calls for %d restarts; want one dequeue more (the empty one)", prof.Calls[PhDequeue], prof.Calls[PhDriver], prof.Restarts)
	}
	if tot := sim.Time(prof.Total()); tot <= 0 || tot > spent {
		t.Errorf("phases add up to %v of the drainer's %v", tot, spent)
	}
	if s := prof.String(); !strings.Contains(s, "dev_hard_start_xmit") || !strings.Contains(s, "1 packets, 1 restarts") {
		t.Errorf("breakdown text:\n%s", s)
	}
}
