package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// rootOverQueues runs 8 closed-loop senders (CPUs 8-15, the TX IRQs on
// CPUs 0-7) into one ice device with 8 queues under qdisc qd for 4 ms,
// then lets the device drain for 2 ms. It returns the packets sent in the
// 4 ms, each queue's BQL limit at 1 ms and at 4 ms, and the packets still
// in flight after the drain.
func rootOverQueues(t *testing.T, prof string, qd ...string) (tx uint64, early, late []uint32, left int64) {
	t.Helper()
	h := newHarness(t, profile(t, prof), 16, "ice", 8, qd...)
	for cpu := 8; cpu < 16; cpu++ {
		h.on(cpu, sim.Time(cpu), func(c *sim.CPU) {
			for i := cpu; c.Now() < 4*sim.Millisecond; i += 16 {
				c.Spend(2000) // the UDP stack before __dev_queue_xmit
				h.n.DevQueueXmit(c, h.dev, h.skb(c, i))
			}
		})
	}
	h.run(sim.Millisecond)
	for _, q := range h.dev.Queues {
		early = append(early, q.DQL.Limit)
	}
	h.run(4 * sim.Millisecond)
	for _, q := range h.dev.Queues {
		late = append(late, q.DQL.Limit)
	}
	tx = h.n.TxPkts
	h.run(6 * sim.Millisecond)
	return tx, early, late, h.n.InFlightPackets()
}

// A root qdisc over many TX queues (not mq) feeds every queue through
// skb_bad_txq and try_bulk_dequeue_skb_slow; each queue's BQL completion
// wakes the root (netif_schedule_queue). Every queue must learn a BQL
// limit beyond its first packets, and the one root lock must cost a
// factor of mq, not orders of magnitude. Once the senders stop, the
// completions alone must drain the root: a queue woken by BQL or the
// driver reschedules it.
func TestRootQdiscOverManyQueues(t *testing.T) {
	for _, prof := range []string{"6.18", "6.19-rc1"} {
		t.Run(prof, func(t *testing.T) {
			mq, _, _, _ := rootOverQueues(t, prof, "mq", "pfifo")
			root, early, late, left := rootOverQueues(t, prof, "pfifo")
			t.Logf("tx: root pfifo %d, mq pfifo %d; BQL limits at 1 ms %v, at 4 ms %v", root, mq, early, late)
			for i := range late {
				if late[i] <= 2*162 || late[i] < early[i] {
					t.Errorf("txq %d: BQL limit %d at 1 ms, %d at 4 ms: want it grown past two packets and not shrunk", i, early[i], late[i])
				}
			}
			if left != 0 {
				t.Errorf("%d packets still in flight 2 ms after the senders stopped: the root was not rescheduled", left)
			}
			if root*10 < mq {
				t.Errorf("root pfifo sent %d packets, mq pfifo %d: more than 10x apart", root, mq)
			}
		})
	}
}
