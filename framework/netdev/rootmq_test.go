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
	return rootOverQueuesFrom(t, prof, 8, qd...)
}

// rootOverQueuesFrom is rootOverQueues with senders on CPUs first-15:
// first 0 puts senders on the TX IRQ CPUs too, as E1's senders pinned to
// CPUs 0-239 are, so those CPUs' TX completions (NAPI) wait for the end
// of a __dev_queue_xmit that spins on busylock with BH disabled.
func rootOverQueuesFrom(t *testing.T, prof string, first int, qd ...string) (tx uint64, early, late []uint32, left int64) {
	t.Helper()
	h := newHarness(t, profile(t, prof), 16, "ice", 8, qd...)
	for cpu := first; cpu < 16; cpu++ {
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

// E1's root pfifo case in small: senders on the TX IRQ CPUs as well, twice
// as many senders as queues. Completions there run only at the BH-enable
// ending a sender's __dev_queue_xmit (its busylock spin runs with BH off,
// the hard IRQ only raises NET_RX), and the root waits on skb_bad_txq for
// a stopped queue meanwhile: BQL warms up slowly, but every queue's limit
// must still grow, never shrink, and the rate must not fall as the run
// goes on (the bug this guards against starved the queues' limits and
// sent 0.1% of mq's packets). With a spin_unlock's handoff priced as a
// line transfer the one root lock, not BQL, bounds the rate from the
// first millisecond: about 0.9 Mpps throughout.
func TestRootQdiscSendersOnIRQCPUs(t *testing.T) {
	h := newHarness(t, profile(t, "6.18"), 16, "ice", 8, "pfifo")
	for cpu := 0; cpu < 16; cpu++ {
		h.on(cpu, sim.Time(cpu), func(c *sim.CPU) {
			for i := cpu; c.Now() < 6*sim.Millisecond; i += 16 {
				c.Spend(2000)
				h.n.DevQueueXmit(c, h.dev, h.skb(c, i))
			}
		})
	}
	var limits [3][]uint32
	var tx [3]uint64
	for k, at := range []sim.Time{2 * sim.Millisecond, 4 * sim.Millisecond, 6 * sim.Millisecond} {
		h.run(at)
		tx[k] = h.n.TxPkts
		for _, q := range h.dev.Queues {
			limits[k] = append(limits[k], q.DQL.Limit)
		}
	}
	t.Logf("BQL limits at 2, 4, 6 ms: %v %v %v; tx %v", limits[0], limits[1], limits[2], tx)
	for i := range limits[2] {
		if limits[2][i] <= 2*162 || limits[1][i] < limits[0][i] || limits[2][i] < limits[1][i] {
			t.Errorf("txq %d: BQL limit %d, %d, %d at 2, 4, 6 ms: want it past two packets and never shrinking", i, limits[0][i], limits[1][i], limits[2][i])
		}
	}
	if first, last := tx[0], tx[2]-tx[1]; last*10 < first*9 {
		t.Errorf("root pfifo sent %d packets in 0-2 ms and %d in 4-6 ms: want the rate held as BQL warms up", first, last)
	}
}
