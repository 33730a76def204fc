package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// A TX completion that restarts a stopped queue calls __netif_schedule:
// netif_tx_wake_queue for the driver's own stop, netif_schedule_queue when
// BQL clears STACK_XOFF; a second call while the qdisc is on an
// output_queue finds __QDISC_STATE_SCHED set.
func TestCompletionWakeCallers(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 2, "test", 1, "pfifo")
	txq := h.dev.Queues[0]
	h.on(0, 0, func(c *sim.CPU) {
		x := h.dev.ctxFor(c)
		c.LocalBhDisable() // in NAPI: NET_TX runs when the poll is done
		x.StopQueue(0)
		x.WakeQueue(0) // netif_tx_wake_queue
		x.WakeQueue(0) // not stopped any more: no call
		txq.DQL.Queued(1000)
		txq.state |= queueStackXoff
		x.CompletedQueue(0, 1, 1000) // BQL: STACK_XOFF cleared, netif_schedule_queue
		c.LocalBhEnable()
	})
	h.run(sim.Millisecond)
	drv, bql := h.n.Sched[SchedDrvWake], h.n.Sched[SchedBQLWake]
	if drv.Calls != 1 || drv.Raised != 1 {
		t.Errorf("drv_wake %+v: want one call that raised NET_TX", drv)
	}
	if bql.Calls != 1 || bql.AlreadySched != 1 {
		t.Errorf("bql_wake %+v: want one call finding SCHED set (the wake had queued the qdisc)", bql)
	}
	if h.n.TxSoftirqRaised != 1 || h.n.TxAction.Qdiscs != 1 || h.n.TxAction.Empty != 1 {
		t.Errorf("raised %d, net_tx_action %+v: want one raise and one run of an empty qdisc", h.n.TxSoftirqRaised, h.n.TxAction)
	}
}

// What a NET_TX_SOFTIRQ raised by a TX completion costs the completing
// CPU (f8a55d5e71e6's commit message): net_tx_action spins on the root
// lock while a CPU on the defer path holds it, then finds the qdisc run
// by someone else. With the fast path the wake sees the defer list
// non-empty and returns: no raise, no spin.
func TestCompletionWakeSpinsOnRootLock(t *testing.T) {
	const hold = 20 * sim.Microsecond
	for _, fast := range []string{"off", "on"} {
		h := newHarness(t, profile(t, "6.19-rc1", "fast_path", fast), 2, "test", 1, "pfifo")
		q := h.dev.Root
		h.on(1, 0, func(c *sim.CPU) {
			// A sender on the defer path: its skb is on the list and it
			// holds the root lock (enqueueing the batch before it).
			c.LocalBhDisable()
			s := h.skb(c, 0)
			h.n.unoffered--
			h.n.Offered++
			q.deferHead = s
			q.lock.Lock(c, h.n.site.rootEnq)
			c.Spend(int64(hold))
			c.Sync() // llist_del_all happens at its time, not before
			q.deferHead = nil
			q.lock.Unlock(c)
			h.n.kfreeSkb(c, s, skb.DropQdiscDrop)
			c.LocalBhEnable()
		})
		var spent sim.Time
		h.on(0, sim.Microsecond, func(c *sim.CPU) {
			x := h.dev.ctxFor(c)
			start := c.Now()
			c.LocalBhDisable()
			x.StopQueue(0)
			x.WakeQueue(0) // the TX clean restarts the queue
			c.LocalBhEnable()
			spent = c.Now() - start
		})
		h.run(sim.Millisecond)
		st := h.n.Sched[SchedDrvWake]
		switch fast {
		case "off":
			if st.Raised != 1 || h.n.site.txAction.Contended != 1 || spent < hold-2*sim.Microsecond {
				t.Errorf("fast path off: %+v, net_tx_action contended %d, completion CPU busy %v: want it to spin about %v",
					st, h.n.site.txAction.Contended, spent, hold)
			}
			// The spin is counted to the caller that queued the qdisc.
			if st.TxActionTakes != 1 || st.TxActionWait < hold-2*sim.Microsecond || st.TxActionWait > hold {
				t.Errorf("fast path off: drv_wake's net_tx_action takes %d, wait %v: want one, about %v",
					st.TxActionTakes, st.TxActionWait, hold)
			}
		case "on":
			if st.Skipped != 1 || h.n.TxSoftirqRaised != 0 || spent > sim.Microsecond {
				t.Errorf("fast path on: %+v, raised %d, completion CPU busy %v: want a skip and no spin",
					st, h.n.TxSoftirqRaised, spent)
			}
		}
	}
}

// BQL end to end: netdev_tx_sent_queue past the limit sets STACK_XOFF,
// the TX completion (netdev_tx_completed_queue) grows the limit of the
// starved queue, clears STACK_XOFF and restarts the qdisc through
// netif_schedule_queue -> __netif_schedule, which raises NET_TX on the
// completing CPU. A completion that finds STACK_XOFF clear calls nothing.
func TestBQLStopThenCompletionWakes(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 2, "test", 1, "pfifo")
	txq := h.dev.Queues[0]
	var stopped, afterWake bool
	var limit uint32
	h.on(0, 0, func(c *sim.CPU) {
		x := h.dev.ctxFor(c)
		c.LocalBhDisable()
		x.SentQueue(0, 1000) // limit 0: over it at once
		stopped = txq.state&queueStackXoff != 0
		x.CompletedQueue(0, 1, 1000)
		afterWake = txq.state&queueStackXoff != 0
		limit = txq.DQL.Limit
		x.CompletedQueue(0, 1, 0) // nothing completed: no call
		c.LocalBhEnable()
	})
	h.run(sim.Millisecond)
	if !stopped || afterWake || limit == 0 {
		t.Fatalf("STACK_XOFF after sent %v, after completion %v, limit %d: want set, cleared, grown", stopped, afterWake, limit)
	}
	st := h.n.Sched[SchedBQLWake]
	if st.Calls != 1 || st.Raised != 1 || h.n.TxSoftirqRaised != 1 || h.n.TxAction.Qdiscs != 1 {
		t.Errorf("bql_wake %+v, raised %d, net_tx_action %+v: want one call that raised NET_TX and one run", st, h.n.TxSoftirqRaised, h.n.TxAction)
	}
}

// The fast path returns only while defer_list is non-empty: with it on
// and the list empty, __netif_schedule raises NET_TX as without it.
func TestFastPathOnlyWithDeferList(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1", "fast_path", "on"), 2, "test", 1, "pfifo")
	q := h.dev.Root
	h.on(0, 0, func(c *sim.CPU) {
		c.LocalBhDisable()
		h.n.netifSchedule(c, q, SchedDrvWake) // defer_list empty
		c.LocalBhEnable()
	})
	h.run(sim.Millisecond)
	if st := h.n.Sched[SchedDrvWake]; st.Calls != 1 || st.Skipped != 0 || st.Raised != 1 || h.n.TxSoftirqRaised != 1 {
		t.Errorf("fast path on, empty defer_list: %+v, raised %d; want a raise", st, h.n.TxSoftirqRaised)
	}
}

// __qdisc_run stops at its quota and, in kernels before b60fa1c5d01a
// (5.5), as soon as need_resched() is set: "if (quota <= 0 ||
// need_resched())", then __netif_schedule. A CPU whose task must give
// way runs one qdisc_restart and leaves the rest to NET_TX_SOFTIRQ.
func TestQdiscRunNeedResched(t *testing.T) {
	for _, tc := range []struct {
		prof, resched string
		yields        bool
	}{
		{"4.7", "", true},
		{"4.8", "", true},
		{"4.8", "off", false},
		{"6.18", "", false},
		{"6.19-rc1", "", false},
	} {
		set := []string{"bql", "off"} // no BQL stop: only the quota or need_resched ends the run
		if tc.resched != "" {
			set = append(set, "qdisc_run_resched", tc.resched)
		}
		h := newHarness(t, profile(t, tc.prof, set...), 2, "test", 1, "pfifo", "limit", "1000")
		q := h.dev.Root
		var sent, restarts int
		var calls uint64 // __qdisc_run's __netif_schedule calls in this run
		var ran bool
		h.on(0, 0, func(c *sim.CPU) {
			h.fill(c, q, 200)
			c.LocalBhDisable()
			c.ReschedCurr() // another task waits for this CPU
			q.lock.Lock(c, h.n.site.rootEnq)
			before := q.Restarts
			var runFree skb.List
			runFree, ran, sent = h.n.qdiscRun(c, q)
			restarts = int(q.Restarts - before)
			calls = h.n.Sched[SchedQuota].Calls
			q.lock.Unlock(c)
			h.n.kfreeSkbList(c, &runFree)
			c.LocalBhEnable()
		})
		h.run(sim.Millisecond)
		name := tc.prof + " qdisc_run_resched=" + tc.resched
		if !ran {
			t.Fatalf("%s: qdisc_run did not run", name)
		}
		switch {
		case tc.yields && (restarts != 1 || calls != 1):
			t.Errorf("%s: %d restarts (%d packets), %d __netif_schedule from __qdisc_run: want one restart, then one call", name, restarts, sent, calls)
		case !tc.yields && sent < h.n.Cfg.DevTxWeight:
			t.Errorf("%s: %d packets in %d restarts: want the quota (%d) sent despite need_resched", name, sent, restarts, h.n.Cfg.DevTxWeight)
		}
	}
}
